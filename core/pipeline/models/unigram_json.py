"""A Hugging Face ``tokenizer.json`` Unigram model section as a :class:`UnigramModel`.

``tokenizers`` reads the scores through serde_json, whose float parsing can differ from
Python's in the last bit (:func:`serde_number`); the scores are taken as it takes them,
from the file's own digits when the file is at hand, so that ties break the same way.

>>> unigram_from_json({"vocab": [["<unk>", 0.0], ["a", -1.0]], "unk_id": 0}, "t.json").kind
'Unigram'
"""

from __future__ import annotations

import functools
import json
import math
import operator
import re
from collections.abc import Sequence
from typing import TypeVar

from core.errors import FormatError
from core.pipeline.models.unigram import UnigramModel
from core.pipeline.models.unigram_lattice import serde_floats_in_c, vocab_columns_in_c

__all__ = ["serde_number", "unigram_from_columns", "unigram_from_json"]


def unigram_from_json(
    obj: dict[str, object], name: str, *, source: bytes | None = None
) -> UnigramModel:
    """The ``"model"`` section of a ``tokenizer.json`` whose type is ``Unigram``:
    ``vocab`` (a list of ``[piece, score]``), ``unk_id`` (or null), ``byte_fallback``.
    ``source``: the file ``obj`` was parsed from; its digits then give the scores (exactly
    as ``tokenizers`` reads that file), else the digits Python prints for each score.

    >>> m = unigram_from_json({"vocab": [["<unk>", 0.0], ["▁a", -1.5]], "unk_id": 0}, "t.json")
    >>> m.tokenize("▁a"), m.kind
    ([(1, 0, 2)], 'Unigram')
    >>> text = b'{"model": {"vocab": [["a", -1.8691413145620870]]}}'  # (17 digits: a 0 more)
    >>> unigram_from_json(json.loads(text)["model"], "t.json", source=text).score(0)
    -1.8691413145620872
    >>> unigram_from_json({"vocab": [["a", "x"]]}, "t.json")
    Traceback (most recent call last):
    ...
    core.errors.FormatError: t.json: model.vocab[0] is ['a', 'x']; expected [piece, score]
    """
    vocab = obj.get("vocab")
    if not isinstance(vocab, list):
        raise FormatError(f"{name}: a Unigram model.vocab must be a list of [piece, score]")
    columns = _file_columns(vocab, source) if source is not None else None
    if columns is None:
        columns = _plain_vocab(vocab)
    if columns is not None:
        tokens, scores = columns
    else:
        tokens, scores = _careful_vocab(vocab, name)
    return unigram_from_columns(obj, tokens, scores, name)


def unigram_from_columns(
    settings: dict[str, object], tokens: list[str], scores: list[float], name: str
) -> UnigramModel:
    """The model of a Unigram section whose pieces and scores were read already (the
    table cache keeps them): ``settings`` gives ``unk_id`` and ``byte_fallback``, checked.

    >>> unigram_from_columns({"unk_id": 0}, ["<unk>", "a"], [0.0, -1.0], "t.json").unk_id
    0
    >>> unigram_from_columns({"unk_id": 2}, ["a"], [-1.0], "t.json")
    Traceback (most recent call last):
    ...
    core.errors.FormatError: t.json: model.unk_id 2 is past the end of model.vocab (1 pieces)
    """
    obj = settings
    unk_id = obj.get("unk_id")
    if unk_id is not None and (
        isinstance(unk_id, bool) or not isinstance(unk_id, int) or unk_id < 0
    ):
        raise FormatError(f"{name}: model.unk_id is {unk_id!r}; expected an ID or null")
    if unk_id is not None and unk_id >= len(tokens):
        raise FormatError(
            f"{name}: model.unk_id {unk_id} is past the end of model.vocab "
            f"({len(tokens)} pieces)"
        )
    fallback = obj.get("byte_fallback", False)
    if not isinstance(fallback, bool):
        raise FormatError(f"{name}: model.byte_fallback is {fallback!r}; expected true/false")
    return UnigramModel.from_columns(tokens, scores, unk_id=unk_id, byte_fallback=fallback)


# ─── the scores from the file's digits ──────────────────────────────────────────────────


def _file_columns(
    vocab: list[object], source: bytes
) -> tuple[list[str], list[float]] | None:
    """The pieces of ``vocab`` (``model.vocab`` as parsed from ``source``) and their scores
    read from ``source``'s digits (:func:`serde_number`); None when ``vocab`` is not all
    ``[str, number]`` pairs, or ``source`` does not hold them (read the parsed values then).
    The C twin reads the text without parsing it; where it cannot (a key spelled with an
    escape) the pure reader decides.

    >>> _file_columns([["a", -1.5], ["b", 2]], b'{"model": {"vocab": [["a", -1.5], ["b", 2]]}}')
    (['a', 'b'], [-1.5, 2.0])
    >>> _file_columns([["a", -1.5]], b'{"model": {"vocab": [["a", -2.5]]}}') is None
    True
    """
    found = vocab_columns_in_c(vocab, source)
    return _vocab_columns(vocab, source) if found is None else found


class _Number(str):
    """A JSON number's text, as the pure reader keeps it (a ``str`` would pass for one)."""

    __slots__ = ()


def _vocab_columns(
    vocab: list[object], source: bytes
) -> tuple[list[str], list[float]] | None:
    """:func:`_file_columns` in pure Python: ``source`` parsed again keeping each number's
    text, its ``model.vocab`` (the last of each key, as :func:`json.loads` keeps) checked
    against ``vocab`` item for item."""
    try:
        doc = json.loads(source.decode("utf-8-sig"), parse_float=_Number, parse_int=_Number)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    found = model.get("vocab") if isinstance(model, dict) else None
    if not isinstance(found, list) or len(found) != len(vocab):
        return None
    columns = _plain_columns(vocab, (int, float))
    texts = _plain_columns(found, (_Number,))
    if columns is None or texts is None:
        return None
    scores = _serde_texts(texts[1])
    try:  # (not the file the vocab was parsed from: some number is another)
        if not all(map(_close, scores, columns[1])):
            return None
    except OverflowError:  # (an int too big for a float: no score is)
        return None
    return columns[0], scores


_N = TypeVar("_N")


def _plain_columns(
    vocab: list[object], number: tuple[type[_N], ...]
) -> tuple[list[str], list[_N]] | None:
    """The two columns of a list of ``[str, number]`` pairs (``number``: the types the
    second may have), checked a whole list at a time; None for anything else."""
    if not set(map(type, vocab)) <= {list} or not set(map(len, vocab)) <= {2}:  # type: ignore
        return None
    tokens = list(map(operator.itemgetter(0), vocab))  # type: ignore[arg-type]
    scores = list(map(operator.itemgetter(1), vocab))  # type: ignore[arg-type]
    if not set(map(type, tokens)) <= {str} or not set(map(type, scores)) <= set(number):
        return None
    return tokens, scores


def _serde_texts(texts: Sequence[str]) -> list[float]:
    """:func:`serde_number` of each text: plain decimals (``-11.602532386779785``: at most
    19 digits, so they fit a u64 and the power of ten is exact; not zero, whose sign this
    would lose) as one expression, the digits as an int, to a float, divided by
    10^(digits after the point)."""
    pow10 = _POW10
    return [
        float(int(t.replace(".", ""))) / pow10[len(t) - t.index(".") - 1]
        if len(t) <= 20 and "." in t and "e" not in t and "E" not in t and t.strip("-0.")
        else serde_number(t)
        for t in texts
    ]


_close = functools.partial(math.isclose, rel_tol=1e-9, abs_tol=1e-300)
"""Whether serde_json's reading of a number can be the one Python parsed: they differ by a
few units in the last place at most (subnormals: more)."""


def _plain_vocab(vocab: list[object]) -> tuple[list[str], list[float]] | None:
    """The pieces and scores (as ``tokenizers`` reads them) of a vocab of ``[str, float]``
    pairs, checked a whole list at a time; None for anything else (read carefully then).

    >>> _plain_vocab([["a", -1.5], ["b", -11.602532386779785]])
    (['a', 'b'], [-1.5, -11.602532386779783])
    >>> _plain_vocab([["a", 1]]) is None
    True
    """
    columns = _plain_columns(vocab, (float,))
    return None if columns is None else (columns[0], _serde_floats(columns[1]))


def _careful_vocab(vocab: list[object], name: str) -> tuple[list[str], list[float]]:
    """The vocab read item by item, naming the first bad one."""
    pieces: list[tuple[str, float]] = []
    for i, item in enumerate(vocab):
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or isinstance(item[1], bool)
            or not isinstance(item[1], (int, float))
        ):
            raise FormatError(f"{name}: model.vocab[{i}] is {item!r}; expected [piece, score]")
        score = item[1]
        pieces.append((item[0], _as_serde_reads(score) if isinstance(score, float) else score))
    return [str(p) for p, _ in pieces], [float(s) for _, s in pieces]


# ─── serde_json's reading of a number ───────────────────────────────────────────────────




_U64_MAX = (1 << 64) - 1
_I32_MAX = (1 << 31) - 1
#: 10^k as a float, as float(f"1e{k}") reads it (correctly rounded), as serde_json's POW10
_POW10 = [float(f"1e{k}") for k in range(309)]
_NUMBER = re.compile(r"(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?)(\d+))?")


def _serde_floats(values: list[float]) -> list[float]:
    """:func:`_as_serde_reads` of each value. A value that prints as plain digits
    (``-11.602532386779785``: no exponent, no nan/inf, at most 19 digits, so the digits fit
    a u64 and the power of ten is exact) and is not zero (whose sign this would lose) takes
    one expression: the digits as an int, to a float, divided by 10^(digits after the point).

    >>> _serde_floats([-11.602532386779785, 0.5, 1e-05, -0.0])
    [-11.602532386779783, 0.5, 1e-05, -0.0]
    """
    found = serde_floats_in_c(values, _as_serde_reads)  # (the same expression, in C)
    if found is not None:
        return found
    pow10 = _POW10
    return [
        float(int(t.replace(".", ""))) / pow10[len(t) - t.index(".") - 1]
        if v and len(t) <= 20 and "e" not in t and "n" not in t
        else _as_serde_reads(v)
        for v, t in zip(values, map(repr, values))
    ]


def _as_serde_reads(value: float) -> float:
    """``value`` as ``tokenizers`` reads it from a file that spells it as Python prints it
    (the shortest digits that round-trip: what ``tokenizers`` and :mod:`json` write), by
    :func:`serde_number`; nan and infinities as they are.

    >>> _as_serde_reads(-11.602532386779785), _as_serde_reads(-6.682016372680664)
    (-11.602532386779783, -6.682016372680664)
    """
    text = repr(value)
    return serde_number(text) if _NUMBER.fullmatch(text) else value


def serde_number(text: str) -> float:
    """The float serde_json (without its ``float_roundtrip`` feature, as ``tokenizers``
    builds it) reads from the JSON number ``text``: its digits as a u64 (digits past a
    full u64 are dropped, those before the point counted as powers of ten), converted to a
    float, then multiplied or divided by a power of ten (``1e308`` at a time past 308). A
    17-digit score (past 2^53) can so come out one unit in the last place off the
    correctly rounded value Python reads, and exact ties (``=`` + ``==`` against ``==`` +
    ``=``) then break the other way: the scores must be the same bits. A number serde_json
    refuses (too large) is infinite here.

    >>> serde_number("-11.602532386779785"), float("-11.602532386779785")
    (-11.602532386779783, -11.602532386779785)
    >>> serde_number("-0"), serde_number("1e-400"), serde_number("1e400")
    (-0.0, 0.0, inf)
    """
    found = _NUMBER.fullmatch(text)
    if found is None:
        raise ValueError(f"not a JSON number: {text!r}")
    sign, whole, frac, exp_sign, exp_digits = found.groups()
    significand = exponent = 0
    full = False
    for digit in map(int, whole):  # (a u64 that would overflow counts its digits as 10s)
        if full or significand * 10 + digit > _U64_MAX:
            full, exponent = True, exponent + 1
        else:
            significand = significand * 10 + digit
    if frac is None and exp_digits is None and not full:  # an integer: u64 or i64
        return -float(significand) if sign else float(significand)
    for digit in map(int, frac or ""):  # (the fraction's digits past a full u64: dropped)
        if significand * 10 + digit > _U64_MAX:
            break
        significand, exponent = significand * 10 + digit, exponent - 1
    if exp_digits is not None:
        power = 0
        for digit in map(int, exp_digits):
            if power * 10 + digit > _I32_MAX:  # (an i32 exponent: 0, or out of range)
                if significand and exp_sign != "-":
                    return -_INF if sign else _INF
                return -0.0 if sign else 0.0
            power = power * 10 + digit
        exponent += -power if exp_sign == "-" else power
        exponent = max(-_I32_MAX - 1, min(_I32_MAX, exponent))  # (an i32, saturated)
    return _from_parts(sign == "-", significand, exponent)


_INF = float("inf")


def _from_parts(negative: bool, significand: int, exponent: int) -> float:
    """serde_json's ``f64_from_parts``: ``significand`` (a u64) times ten to ``exponent``."""
    f = float(significand)
    while True:
        if abs(exponent) <= 308:
            f = f * _POW10[exponent] if exponent >= 0 else f / _POW10[-exponent]
            break
        if f == 0.0 or exponent >= 0:
            f = f if f == 0.0 else _INF
            break
        f, exponent = f / 1e308, exponent + 308
    return -f if negative else f

"""A Hugging Face ``tokenizer.json`` Unigram model section as a :class:`UnigramModel`.

``tokenizers`` reads the scores through serde_json, whose float parsing can differ from
Python's in the last bit (:func:`_as_serde_reads`); the scores are taken as it takes them,
so that ties break the same way.

>>> unigram_from_json({"vocab": [["<unk>", 0.0], ["a", -1.0]], "unk_id": 0}, "t.json").kind
'Unigram'
"""

from __future__ import annotations

import operator
import re

from core import native
from core.errors import FormatError
from core.pipeline.unigram import UnigramModel

__all__ = ["unigram_from_json"]


def unigram_from_json(obj: dict[str, object], name: str) -> UnigramModel:
    """The ``"model"`` section of a ``tokenizer.json`` whose type is ``Unigram``:
    ``vocab`` (a list of ``[piece, score]``), ``unk_id`` (or null), ``byte_fallback``.

    >>> m = unigram_from_json({"vocab": [["<unk>", 0.0], ["▁a", -1.5]], "unk_id": 0}, "t.json")
    >>> m.tokenize("▁a"), m.kind
    ([(1, 0, 2)], 'Unigram')
    >>> unigram_from_json({"vocab": [["a", "x"]]}, "t.json")
    Traceback (most recent call last):
    ...
    core.errors.FormatError: t.json: model.vocab[0] is ['a', 'x']; expected [piece, score]
    """
    vocab = obj.get("vocab")
    if not isinstance(vocab, list):
        raise FormatError(f"{name}: a Unigram model.vocab must be a list of [piece, score]")
    columns = _plain_vocab(vocab)
    if columns is not None:
        tokens, scores = columns
    else:
        tokens, scores = _careful_vocab(vocab, name)
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


def _plain_vocab(vocab: list[object]) -> tuple[list[str], list[float]] | None:
    """The pieces and scores (as ``tokenizers`` reads them) of a vocab of ``[str, float]``
    pairs, checked a whole list at a time; None for anything else (read carefully then).

    >>> _plain_vocab([["a", -1.5], ["b", -11.602532386779785]])
    (['a', 'b'], [-1.5, -11.602532386779783])
    >>> _plain_vocab([["a", 1]]) is None
    True
    """
    if set(map(type, vocab)) != {list} or set(map(len, vocab)) != {2}:  # type: ignore[arg-type]
        return None
    tokens = list(map(operator.itemgetter(0), vocab))  # type: ignore[arg-type]
    scores = list(map(operator.itemgetter(1), vocab))  # type: ignore[arg-type]
    if set(map(type, tokens)) != {str} or set(map(type, scores)) != {float}:
        return None
    return tokens, _serde_floats(scores)


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


_U64_MAX = (1 << 64) - 1
#: 10^k as a float, as float(f"1e{k}") reads it (correctly rounded)
_POW10 = [float(f"1e{k}") for k in range(21)]


def _serde_floats(values: list[float]) -> list[float]:
    """:func:`_as_serde_reads` of each value. A value that prints as plain digits
    (``-11.602532386779785``: no exponent, no nan/inf, at most 19 digits, so the digits fit
    a u64 and the power of ten is exact) and is not zero (whose sign this would lose) takes
    one expression: the digits as an int, to a float, divided by 10^(digits after the point).

    >>> _serde_floats([-11.602532386779785, 0.5, 1e-05, -0.0])
    [-11.602532386779783, 0.5, 1e-05, -0.0]
    """
    fast = native.unigram
    if fast is not None and type(values) is list:
        try:  # (the same expression in C: a T5 vocab's 32,000 scores cost a load 15 ms)
            return fast.serde_floats(values, _as_serde_reads)  # type: ignore[no-any-return]
        except TypeError:  # (an item that is no exact float: the loop below decides)
            pass
    pow10 = _POW10
    return [
        float(int(t.replace(".", ""))) / pow10[len(t) - t.index(".") - 1]
        if v and len(t) <= 20 and "e" not in t and "n" not in t
        else _as_serde_reads(v)
        for v, t in zip(values, map(repr, values))
    ]


def _as_serde_reads(value: float) -> float:
    """``value`` as ``tokenizers`` reads it from the file: serde_json (without its
    ``float_roundtrip`` feature) takes the digits as a u64, converts that to a float and
    divides by a power of ten, so a 17-digit score (past 2^53) can come out one unit in
    the last place off the correctly rounded value Python reads. Exact ties (``=`` + ``==``
    against ``==`` + ``=``) then break the other way, so the scores must be the same bits.
    The digits are those Python prints, which are the file's when ``tokenizers`` (or any
    shortest-round-trip writer) wrote it.

    >>> _as_serde_reads(-11.602532386779785), _as_serde_reads(-6.682016372680664)
    (-11.602532386779783, -6.682016372680664)
    """
    text = repr(value)
    if not _FINITE.fullmatch(text):
        return value
    negative = text.startswith("-")
    mantissa, _, exp = text.lstrip("-").lower().partition("e")
    whole, _, frac = mantissa.partition(".")
    significand, exponent, full = 0, int(exp or 0), False
    for digit in whole:  # (a u64 that would overflow keeps its digits as a power of ten)
        if full or significand * 10 + int(digit) > _U64_MAX:
            full, exponent = True, exponent + 1
        else:
            significand = significand * 10 + int(digit)
    for digit in frac:  # (digits past a full u64 are dropped)
        if full or significand * 10 + int(digit) > _U64_MAX:
            break
        significand, exponent = significand * 10 + int(digit), exponent - 1
    f = float(significand)
    while True:
        if abs(exponent) <= 308:
            f = f * float(f"1e{exponent}") if exponent >= 0 else f / float(f"1e{-exponent}")
            break
        if f == 0.0 or exponent >= 0:
            break
        f, exponent = f / 1e308, exponent + 308
    return -f if negative else f


_FINITE = re.compile(r"-?\d+(\.\d+)?(e[+-]?\d+)?")

"""The tables a Unigram search reads: the pure search's dict of pieces and prefixes, and the
optional compiled twin of the whole search (``tokplay_native.unigram``).

:class:`~core.pipeline.models.unigram.UnigramModel` searches with a dict that holds every piece
and every proper prefix of one (:func:`with_prefixes`): a look-up that finds nothing ends
the walk from a position, as a trie's missing edge does. Where the C helper was built
(:mod:`core.native`), the same search runs in C over a trie of code points built once per
model, on the first encode (:class:`NativeSlot`), with the same float rounding and the same
tie rule, so the same best path on every input (tests/test_native_unigram.py).
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from core import native

__all__ = ["NativeSlot", "merge_unknown_runs", "serde_floats_in_c", "two_best",
           "vocab_columns_in_c", "with_prefixes"]  # fmt: skip


def with_prefixes(candidates: dict[str, int], maxlen: int) -> dict[str, int]:
    """``candidates`` plus every proper prefix of one, mapped to -1, so that the search stops
    where no piece can go on (the trie's "no such path"). Built from the longest down: the
    prefixes of length k are the distinct strings of length k+1 (prefixes and pieces) cut
    by one character, so each distinct prefix is cut once, by one C loop per length.

    >>> sorted(with_prefixes({"abc": 0, "ab": 1, "x": 2}, 3).items())
    [('a', -1), ('ab', 1), ('abc', 0), ('x', 2)]
    """
    by_length = sorted(candidates, key=len)
    lengths = list(map(len, by_length))
    prefixes: dict[str, int] = {}
    level: set[str] = set()  # the distinct prefixes and pieces of length k + 1
    for k in range(maxlen - 1, 0, -1):
        level.update(by_length[bisect_left(lengths, k + 1) : bisect_right(lengths, k + 1)])
        level = set(map(operator.itemgetter(slice(0, k)), level))
        prefixes.update(dict.fromkeys(level, -1))
    prefixes.update(candidates)
    return prefixes


Node = tuple[int, int, int]  # (start, end, id): id -1 for an unknown character


def two_best(
    text: str, *, lookup: Mapping[str, int], scores: Sequence[float], unk_score: float,
    maxlen: int,
) -> list[list[Node]]:  # fmt: skip
    """The two best paths through ``text`` (a 2-best Viterbi in float64, for explaining a
    split): each position keeps its two best distinct paths, as ``(score, start, id, rank
    at start)``. ``lookup``: :func:`with_prefixes` of the pieces.

    >>> two_best("ab", lookup={"a": 1, "b": 2, "ab": 3}, scores=[0.0, -1.0, -2.0, -2.5],
    ...          unk_score=-12.0, maxlen=2)
    [[(0, 2, 3)], [(0, 1, 1), (1, 2, 2)]]
    """
    n = len(text)
    get = lookup.get
    kept: list[list[tuple[float, int, int, int]]] = [[] for _ in range(n + 1)]
    kept[0] = [(0.0, -1, 0, 0)]

    def offer(k: int, entry: tuple[float, int, int, int]) -> None:
        row = kept[k]
        row.append(entry)
        row.sort(key=lambda e: -e[0])  # stable: the earlier of equals stays first
        del row[2:]

    for s in range(n):
        single = False
        for k in range(s + 1, min(n, s + maxlen) + 1):
            v = get(text[s:k])
            if v is None:
                break
            if v >= 0:
                for r, (here, *_rest) in enumerate(kept[s]):
                    offer(k, (here + scores[v], s, v, r))
                single = single or k == s + 1
        if not single:
            for r, (here, *_rest) in enumerate(kept[s]):
                offer(s + 1, (here + unk_score, s, -1, r))
    out = []
    for rank in range(len(kept[n])):
        nodes = []
        end, r = n, rank
        while end > 0:
            _, start, token_id, r = kept[end][r]
            nodes.append((start, end, token_id))
            end = start
        nodes.reverse()
        out.append(nodes)
    return out


class NativeSlot:
    """A model's compiled search, built on the first :meth:`get` while
    ``core.native.unigram`` is there (read at each call, so a test can turn it off). A
    pickled or copied model gets an empty slot: the C object is rebuilt, never pickled.

    >>> slot = NativeSlot()
    >>> lattice = slot.get(lambda module: module.Lattice(
    ...     {"a": 1}, [0.0, -1.0], -11.0, True, 1e5, [-1] * 256))
    >>> lattice is None or lattice.best_path("ab") == ([(0, 1, 1), (1, 2, -1)], -12.0)
    True
    """

    __slots__ = ("_lattice",)

    def __init__(self) -> None:
        self._lattice: Any = None

    def __reduce__(self) -> tuple[type[NativeSlot], tuple[()]]:
        return (NativeSlot, ())

    def get(self, build: Callable[[ModuleType], Any]) -> Any:
        """The ``tokplay_native.unigram.Lattice`` that ``build(module)`` makes (once), or
        None when the helper is not built or turned off: the caller runs the pure search."""
        module = native.unigram
        if module is None:
            return None
        lattice = self._lattice
        if lattice is None:  # (two threads may both build it: the same table, one kept)
            lattice = self._lattice = build(module)
        return lattice


def merge_unknown_runs(ids: list[int], unk: int) -> list[int]:
    """Unknown characters (-1) as ``unk``, a run of them one ``unk`` (SentencePiece's
    finish without ``byte_fallback``).

    >>> merge_unknown_runs([-1, -1, 5, -1], 0)
    [0, 5, 0]
    """
    kept = [i for k, i in enumerate(ids) if i >= 0 or k == 0 or ids[k - 1] >= 0]
    return [unk if i < 0 else i for i in kept]


def vocab_columns_in_c(vocab: object, source: object) -> tuple[list[str], list[float]] | None:
    """A Unigram ``tokenizer.json``'s vocab as texts and scores read from the file's own
    digits (:func:`core.pipeline.models.unigram_json._file_columns`) in C, without parsing the
    text again; None without C, or where it cannot (a key spelled with an escape).
    """
    fast = native.unigram
    if fast is None or type(vocab) is not list or type(source) is not bytes:
        return None
    return fast.vocab_columns(vocab, source)


def serde_floats_in_c(values: list[float], each: Callable[[float], float]) -> list[float] | None:
    """:func:`core.pipeline.models.unigram_json._serde_floats` in C (``each`` for a value
    that is no plain digits; a T5 vocab's 32,000 scores cost a load 15 ms in Python); None
    without C or for an item that is no exact float."""
    fast = native.unigram
    if fast is None or type(values) is not list:
        return None
    try:
        return fast.serde_floats(values, each)
    except TypeError:
        return None

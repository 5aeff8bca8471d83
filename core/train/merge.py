"""Phases 2 and 3 of training: count adjacent pairs, then merge the most frequent one, over
and over, touching only the words that hold it.

A word (a distinct pre-token) is kept as a ``str`` with one character per token:
``chr(token_id)``, so bytes are ``chr(0)..chr(255)`` and merge ``k`` is ``chr(256 + k)``. A
pair is a two-character ``str``. That turns the inner loop into C string operations:
``word.replace(pair, new)`` merges every occurrence left to right without overlap (exactly
the BPE rule: ``aaaa -> [aa, aa]``), ``find`` locates it, and the new pair with its left or
right neighbour is a two-character slice.

>>> state = MergeState({"low": 5, "lower": 2, "widest": 3, "newest": 6}, target=2)
>>> state.merge_best(), state.merge_best()  # (e, s) and (s, t) tie at 9: b"s" > b"e" wins
((115, 116, 9), (101, 256, 9))
>>> state.tokens[256:]
[b'st', b'est']

:func:`merge_state` picks the loop training uses: the C twin (``tokplay_native.train``) when
it was built, with the same merges in the same order, else :class:`MergeState`.
"""

from __future__ import annotations

import heapq
import operator
from collections import defaultdict
from collections.abc import Mapping
from typing import Protocol

from core import native
from core.train.count_table import PretokenCounts, PureCounts

__all__ = ["MAX_TOKENS", "MergeLoop", "MergeState", "merge_state", "order_key"]

#: One character per token: ``chr`` stops at U+10FFFF.
MAX_TOKENS = 0x110000


def order_key(token: bytes) -> str:
    """A string whose *ascending* order is the *descending* byte order of ``token``.

    Heap entries carry ``order_key(left) + order_key(right)``, so a plain min-heap pops
    the lexicographically greatest pair first among equal counts, every comparison in C.
    subtle: each byte c maps to chr(256 - c) and a terminator chr(257) sorts a prefix after
    its extensions (b"ab" > b"a", so b"ab" must come first). The terminator appears only
    last, so two keys differ before either ends, and a concatenation of two keys compares
    as the pair (left first, then right).

    >>> sorted([b"a", b"ab", b"b", b"\\x00"], key=order_key)
    [b'b', b'ab', b'a', b'\\x00']
    """
    return "".join([chr(256 - c) for c in token]) + "\u0101"


class MergeLoop(Protocol):
    """What training reads from a merge loop (:class:`MergeState` or its C twin)."""

    @property
    def tokens(self) -> list[bytes]:
        """Token ID -> bytes: the 256 bytes, then one token per merge."""

    def merge_best(self) -> tuple[int, int, int] | None:
        """Merge the best pair everywhere: (left ID, right ID, count), or None when none is left."""


def merge_state(counts: Mapping[str, int] | PretokenCounts, *, target: int) -> MergeLoop:
    """The merge loop over ``counts`` (pre-token -> count, or a counting table): the C twin
    when it was built (read now, so a test can set ``core.native.train`` to None), else
    :class:`MergeState`.

    The C twin takes counts from 1 to 2**62 whose total fits 64 bits; on anything else
    (or on text it cannot encode) the pure loop runs, which gives the answer or the error.
    It reads the C counting table's packed bytes directly: on 1 GB of text a dict of
    millions of str in between cost more than building the loop itself.

    >>> state = merge_state({"low": 5, "lower": 2, "widest": 3, "newest": 6}, target=2)
    >>> state.merge_best(), state.merge_best(), state.tokens[256:]
    ((115, 116, 9), (101, 256, 9), [b'st', b'est'])
    """
    if isinstance(counts, PureCounts):
        counts = counts.counter()  # a Counter already: the dict is the quicker way in
    compiled = native.train
    if compiled is not None:
        try:
            if isinstance(counts, Mapping):
                return compiled.MergeState(counts if isinstance(counts, dict) else dict(counts))
            return compiled.MergeState(counts.packed())
        except (TypeError, ValueError, OverflowError):
            pass  # outside what the C twin takes: the pure loop decides
    return MergeState(counts if isinstance(counts, Mapping) else counts.counter(), target=target)


class MergeState:
    """Words, pair counts, an index from pair to the words that may hold it, and a lazy
    max-heap of pairs; :meth:`merge_best` does one merge.

    Why the lazy heap is exact: the count of an existing pair only ever goes *down* (pairs
    without the new token lose occurrences, never gain them); pairs with the new token are
    pushed once, at their full count, when it is made. So every heap entry is an upper
    bound, and a popped entry whose count is still current is the true maximum.

    The same fact bounds the work: the winning count never rises, and a pair never exceeds
    the count it was born with. After a tenth of the ``target`` merges, pairs born below a
    cautious guess of the last merge's count (``floor``) are counted but neither indexed nor
    pushed (most new pairs are rare: 88% on 41 MB of docs). Should the guess prove too
    high (the best indexed pair falls below it), the index and heap are rebuilt from the
    words, which are always exact, and the loop goes on: the merges are the same either way.
    """

    def __init__(self, counts: Mapping[str, int], *, target: int) -> None:
        """``counts``: pre-token -> count. ``target``: how many merges the caller means to
        ask for (sets when the floor is guessed; 0: never, every pair stays indexed)."""
        self.tokens: list[bytes] = [bytes([i]) for i in range(256)]
        self._keys: list[str] = [order_key(t) for t in self.tokens]
        words: list[str] = []
        freqs: list[int] = []
        for text, freq in counts.items():
            if text.isascii():  # nearly all of them: already one character per byte
                if len(text) > 1:  # a single byte has no pair to merge
                    words.append(text)
                    freqs.append(freq)
            else:  # two or more bytes
                words.append(text.encode("utf-8").decode("latin-1"))  # byte c -> chr(c)
                freqs.append(freq)
        self.words = words
        self.freqs = freqs
        self.target = target
        self.floor = 0  # pairs born with fewer occurrences are not indexed (0: all are)
        self.pair_counts: dict[str, int] = {}
        self.where: dict[str, list[int]] = {}
        self.heap: list[tuple[int, str, str]] = []
        self._index()

    def _index(self) -> None:
        """(Re)build pair counts, index and heap from the words, indexing every pair.

        A word appears once in a pair's list per occurrence: merging a word handles all
        its occurrences at once, and a later visit finds none and moves on.
        """
        where: defaultdict[str, list[int]] = defaultdict(list)
        add = operator.add
        for wi, w in enumerate(self.words):
            for p in map(add, w, w[1:]):  # every adjacent pair, as a 2-character str
                where[p].append(wi)
        freq = self.freqs.__getitem__
        self.pair_counts = {p: sum(map(freq, ws)) for p, ws in where.items()}
        self.where = dict(where)
        keys = self._keys
        self.heap = [(-c, keys[ord(p[0])] + keys[ord(p[1])], p) for p, c in self.pair_counts.items()]
        heapq.heapify(self.heap)
        self.floor = 0

    def _pop_best(self) -> tuple[str, int] | None:
        """The most frequent pair (greatest on a tie) and its count; None when none is left."""
        while True:
            heap = self.heap
            pair_counts = self.pair_counts
            floor = self.floor
            heappop = heapq.heappop
            while heap:
                neg, key, pair = heappop(heap)
                current = pair_counts.get(pair, 0)
                if current == -neg:
                    if current >= floor:
                        return pair, current
                    break  # below the floor: an unindexed pair may be the best now
                if current >= floor and current > 0:  # stale: back with its real, lower count
                    heapq.heappush(heap, (-current, key, pair))
            else:
                if not floor:
                    return None
            self._index()  # the floor was too high: index every pair and look again

    def merge_best(self) -> tuple[int, int, int] | None:
        """Merge the best pair everywhere; returns (left ID, right ID, count) or None when
        no pair is left."""
        best = self._pop_best()
        if best is None:
            return None
        pair, count = best
        a, b = ord(pair[0]), ord(pair[1])
        new = len(self.tokens)
        token = self.tokens[a] + self.tokens[b]
        self.tokens.append(token)
        self._keys.append(order_key(token))
        self._apply(pair, chr(new))
        merged = new - 255
        if merged == self.target // 10 and self.target >= 1000 and not self.floor:
            # A cautious guess of the last merge's count: the winning count fell ~k^-1.4
            # on real text; assume k^-2 from here. A wrong guess costs one rebuild.
            self.floor = count * merged * merged // (self.target * self.target)
        return a, b, count

    def _apply(self, ab: str, new: str) -> None:
        # The hot loop: nearly all the merge time is spent here.
        words = self.words
        freqs = self.freqs
        pair_counts = self.pair_counts
        born: defaultdict[str, list[int]] = defaultdict(list)  # new pair -> words, once per occurrence
        multi: defaultdict[str, list[int]] | None = None
        replace = str.replace
        find = str.find
        for wi in self.where.pop(ab):
            w = words[wi]
            if ab not in w:
                continue  # a stale entry: an earlier merge took the pair out of this word
            merged = replace(w, ab, new)
            n = len(merged)
            occurrences = len(w) - n
            if occurrences == 1:  # the common case: only the neighbours change
                i = find(merged, new)
                if i:
                    born[merged[i - 1 : i + 1]].append(wi)  # (x, new) replaces (x, a)
                if i + 1 < n:
                    born[merged[i : i + 2]].append(wi)  # (new, y) replaces (b, y)
                words[wi] = merged
            else:  # several (abab, aaaa): recount the word's pairs
                if multi is None:
                    multi = defaultdict(list)
                f = freqs[wi]
                for k in range(len(w) - 1):
                    pair_counts[w[k : k + 2]] -= f
                for k in range(n - 1):
                    p = merged[k : k + 2]
                    if new in p:
                        multi[p].append(wi)
                    else:
                        pair_counts[p] += f
                words[wi] = merged
        freq = freqs.__getitem__
        a, b = ab  # type: ignore[str-unpack]  # a pair is two symbols, each one character
        keys = self._keys
        new_key = keys[-1]
        floor = self.floor
        where = self.where
        heap = self.heap
        heappush = heapq.heappush
        for p, ws in born.items():
            c = sum(map(freq, ws))
            x, y = p  # type: ignore[str-unpack]
            pair_counts[p] = c
            if y == new:
                pair_counts[x + a] -= c
                if c >= floor:
                    where[p] = ws
                    heappush(heap, (-c, keys[ord(x)] + new_key, p))
            else:
                pair_counts[b + y] -= c
                if c >= floor:
                    where[p] = ws
                    heappush(heap, (-c, new_key + keys[ord(y)], p))
        if multi:  # their old pairs were subtracted above; add their new pairs
            for p, ws in multi.items():
                c = sum(map(freq, ws))
                if p in born:
                    c += pair_counts[p]
                    ws = born[p] + ws
                pair_counts[p] = c
                if c >= floor:
                    where[p] = ws
                    heappush(heap, (-c, keys[ord(p[0])] + keys[ord(p[1])], p))
        # every occurrence is gone (non-overlapping left-to-right leaves no (a, b) behind)
        del pair_counts[ab]

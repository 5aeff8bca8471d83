"""The BPE merge loop, written once: every tokenizer here calls :func:`merge`.

BPE encodes a word by starting from small parts (bytes, characters, token IDs) and
repeatedly joining the adjacent pair of lowest rank, the leftmost one on a tie, until no
adjacent pair has a rank. Tokenizers differ only in the table that ranks a pair and in what
a join makes, so those are the arguments:

======================  =========  ==========================================  ==============
who                     parts      ``ranks``: pair key -> rank                  a join makes
======================  =========  ==========================================  ==============
merge list (GPT-2, HF)  token IDs  ``(left, right)`` -> merge rank              ``made[rank]``
rank file (tiktoken)    ``bytes``  ``left + right`` -> token rank               ``left + right``
SentencePiece           ``str``    ``left + right`` -> place of its score       ``left + right``
======================  =========  ==========================================  ==============

>>> merge([97, 98, 99, 97, 98], {(98, 99): 0, (97, 98): 1}, made=[256, 257])  # b+c first
[97, 256, 257]
>>> merge([b"a", b"b", b"c"], {b"ab": 256, b"bc": 257, b"abc": 258}, key=operator.add)
[b'abc']

Callers: :class:`core.engine.tokenizer.Tokenizer` (merge lists and rank files, from bytes or from
whole characters: :mod:`core.engine.char_start`), :func:`core.engine.ranks.bpe_by_rank` (rank files),
:class:`core.pipeline.models.BPEModel` (Hugging Face's BPE over strings, its character
``spans`` kept in step), :class:`core.pipeline.sentencepiece.bpe.SentencePieceBPE`
(piece scores; a ``key`` that never joins user-defined pieces) and :mod:`core.explain.replay` (only
the merges allowed by step ``k``, through a ``ranks`` that hides the others). The two
models' "why this split" traces replay the same joins through :func:`merge_steps`.

Speed lives here too: :func:`merge` runs its two hot cases in C where ``tokplay_native.bpe``
was built, and the C tables that run whole words (:func:`kept_table`, :func:`encode_words`)
are built here. No caller asks whether C was built.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import islice, repeat
from typing import Any, Protocol

from core import native

__all__ = ["NO_MERGE", "Ranks", "bpe_table", "encode_words", "kept_table", "merge", "merge_steps", "pair_table",
           "rank_table", "spm_dict_words", "spm_words", "spm_words_raw"]  # fmt: skip

#: The rank of a pair that does not join (what ``ranks.get`` answers for a missing key):
#: above every real rank.
NO_MERGE = 1 << 62
#: Parts; more use the heap (n log n) instead of rescanning a list of ranks after each join
#: (n^2, but each rescan is ``min`` and ``index`` in C: faster for anything shorter).
LONG_WORD = 256


class Ranks(Protocol):
    """What :func:`merge` reads of a rank table: ``get(key, default)``, as a dict has."""

    def get(self, key: Any, default: Any, /) -> Any: ...


def merge(
    parts: list[Any],
    ranks: Ranks,
    made: Sequence[Any] | Mapping[Any, Any] | None = None,
    *,
    key: Callable[[Any, Any], Hashable] | None = None,
    log: list[tuple[int, int, Any]] | None = None,
    spans: list[tuple[int, int]] | None = None,
    heap: bool = False,
) -> list[Any]:
    """BPE: join the adjacent pair of lowest rank (the leftmost on a tie) until no pair has
    a rank; returns ``parts``, joined in place.

    ``ranks.get(key, NO_MERGE)`` is a pair's rank; a lower rank joins first. Ranks are
    numbers below :data:`NO_MERGE`, best ints (comparing a float with it is slow).
    ``key(left, right)`` is the pair's key in ``ranks``: by default the tuple ``(left,
    right)``; rank files and SentencePiece pass :func:`operator.add`. A join makes
    ``made[rank]`` (a merge list's new ID) or, with ``made=None``, ``left + right``.

    ``log``, if given, gets ``(left slot, right slot, rank)`` per join, in order; a slot is
    the index in the starting ``parts`` where a part begins (a joined part keeps its left
    slot). ``spans``, if given, holds one ``(start, end)`` per part and is kept in step: a
    joined part spans both. ``heap=True`` takes the heap path whatever the length; it also
    orders ranks at or above ``NO_MERGE`` (``inf``), where the list path would stop.

    >>> log, spans = [], [(0, 1), (1, 2), (2, 3), (3, 4)]
    >>> merge(list("abab"), {"ab": 0, "abab": 1}, key=operator.add, log=log, spans=spans)
    ['abab']
    >>> log, spans
    ([(0, 1, 0), (2, 3, 0), (0, 2, 1)], [(0, 4)])

    subtle: ``ranks`` is read only through ``get``, in a fixed order (the pairs left to
    right, then after each join the new left pair before the new right pair; both paths
    alike), so an adapter can hide pairs, note the ones it hid, or note each pair it was
    asked about (SentencePiece's ``rev_merge``).
    """
    get = ranks.get
    if heap or len(parts) > LONG_WORD:
        return _merge_heap(parts, get, made, key, log, spans)
    if log is not None or spans is not None:
        return _merge_list(parts, get, made, key, log, spans)
    # The two hot paths run in C where tokplay_native was built (tests/test_native_bpe.py:
    # the same loop); it takes int ranks only and leaves `parts` as it was on a TypeError.
    fast = native.bpe if type(ranks) is dict else None
    if key is operator.add and made is None:
        if fast is not None:
            try:
                return fast.merge_joined(parts, ranks)
            except TypeError:  # a float rank (inf), say: the pure loop orders any numbers
                pass
        return _merge_joined(parts, get)  # a rank file's BPE (core.engine.ranks): the other hot path
    if made is None or key is not None:
        return _merge_list(parts, get, made, key, log, spans)
    if fast is not None:
        try:
            return fast.merge_made(parts, ranks, made)
        except TypeError:
            pass
    # A merge list with nothing to note: the hot path (every new pre-token of a merge-list
    # Tokenizer), so _merge_list's loop without its tests and without one more call, which
    # cost ~1% of a cold GPT-2 encode. tests/test_bpe.py checks the two loops agree.
    # rank[k]: the rank of (parts[k], parts[k + 1]); a join at i changes only its two
    # neighbours, so the list is patched rather than rebuilt.
    rank = list(map(get, zip(parts, islice(parts, 1, None)), repeat(NO_MERGE)))
    while rank:
        best = min(rank)
        if best == NO_MERGE:
            break
        i = rank.index(best)  # the leftmost of the lowest
        joined = made[best]
        parts[i] = joined
        del parts[i + 1]
        del rank[i]
        if i:
            rank[i - 1] = get((parts[i - 1], joined), NO_MERGE)
        if i < len(rank):
            rank[i] = get((joined, parts[i + 1]), NO_MERGE)
    return parts


def _merge_joined(parts: list[Any], get: Callable[[Any, Any], Any]) -> list[Any]:
    """:func:`merge` with ``key=operator.add`` and ``made=None`` (a rank file's BPE over
    bytes), nothing noted: _merge_list's loop with ``+`` written out, ~20% faster than
    calling ``key``. tests/test_bpe.py checks it against the other paths (all_paths)."""
    rank = list(map(get, map(operator.add, parts, islice(parts, 1, None)), repeat(NO_MERGE)))
    rank.append(NO_MERGE)  # a sentinel: min() never sees an empty list
    while True:
        best = min(rank)
        if best == NO_MERGE:
            return parts
        i = rank.index(best)
        joined = parts[i] + parts[i + 1]
        parts[i] = joined
        del parts[i + 1]
        del rank[i]  # rank[i] is now the sentinel when `joined` is last
        if i:
            rank[i - 1] = get(parts[i - 1] + joined, NO_MERGE)
        if i + 1 < len(parts):
            rank[i] = get(joined + parts[i + 1], NO_MERGE)


def _merge_list(
    parts: list[Any],
    get: Callable[[Any, Any], Any],
    made: Sequence[Any] | Mapping[Any, Any] | None,
    key: Callable[[Any, Any], Hashable] | None,
    log: list[tuple[int, int, Any]] | None,
    spans: list[tuple[int, int]] | None,
) -> list[Any]:
    """:func:`merge` by rescanning a list of ranks (n^2, but ``min`` and ``index`` run in C),
    with every option: joining by ``+``, a ``key``, a ``log``, ``spans``."""
    right_of = islice(parts, 1, None)
    pairs = zip(parts, right_of) if key is None else map(key, parts, right_of)
    rank = list(map(get, pairs, repeat(NO_MERGE)))
    track = log is not None or spans is not None  # (one test per join when neither is)
    slots = list(range(len(parts))) if log is not None else []
    while rank:
        best = min(rank)
        if best == NO_MERGE:
            break
        i = rank.index(best)
        joined = parts[i] + parts[i + 1] if made is None else made[best]
        parts[i] = joined
        del parts[i + 1]
        del rank[i]
        if track:
            if log is not None:
                log.append((slots[i], slots.pop(i + 1), best))
            if spans is not None:
                spans[i] = (spans[i][0], spans.pop(i + 1)[1])
        if i:
            rank[i - 1] = get(
                (parts[i - 1], joined) if key is None else key(parts[i - 1], joined), NO_MERGE
            )
        if i < len(rank):
            rank[i] = get(
                (joined, parts[i + 1]) if key is None else key(joined, parts[i + 1]), NO_MERGE
            )
    return parts


def _merge_heap(
    parts: list[Any],
    get: Callable[[Any, Any], Any],
    made: Sequence[Any] | Mapping[Any, Any] | None,
    key: Callable[[Any, Any], Hashable] | None,
    log: list[tuple[int, int, Any]] | None,
    spans: list[tuple[int, int]] | None,
) -> list[Any]:
    """:func:`merge` in O(n log n), the same joins in the same order: a linked list of parts
    and a heap of ``(rank, slot, left, right)`` candidates (Hugging Face's and
    SentencePiece's own scheme; the slot breaks ties, leftmost first)."""
    n = len(parts)
    alive: list[Any] = list(parts)  # None: joined into the part on its left
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    ends = [end for _, end in spans] if spans is not None else []
    right_of = islice(parts, 1, None)
    pairs = zip(parts, right_of) if key is None else map(key, parts, right_of)
    heap: list[tuple[Any, int, Any, Any]] = []
    push = heapq.heappush
    for i, r in enumerate(map(get, pairs, repeat(NO_MERGE))):
        if r is not NO_MERGE:
            push(heap, (r, i, parts[i], parts[i + 1]))
    pop = heapq.heappop
    while heap:
        r, i, a, b = pop(heap)
        j = nxt[i]
        # subtle: an entry goes stale when a neighbour joins; it is still good exactly when
        # the same two parts are still adjacent at i (a part only ever grows or dies).
        if j >= n or alive[i] != a or alive[j] != b:
            continue
        joined = a + b if made is None else made[r]
        alive[i] = joined
        alive[j] = None
        k = nxt[i] = nxt[j]
        if k < n:
            prv[k] = i
        if log is not None:
            log.append((i, j, r))
        if spans is not None:
            ends[i] = ends[j]
        h = prv[i]
        if h >= 0:
            left = alive[h]
            r = get((left, joined) if key is None else key(left, joined), NO_MERGE)
            if r is not NO_MERGE:
                push(heap, (r, h, left, joined))
        if k < n:
            right = alive[k]
            r = get((joined, right) if key is None else key(joined, right), NO_MERGE)
            if r is not NO_MERGE:
                push(heap, (r, i, joined, right))
    kept = [k for k, p in enumerate(alive) if p is not None]
    parts[:] = [alive[k] for k in kept]
    if spans is not None:
        spans[:] = [(spans[k][0], ends[k]) for k in kept]
    return parts


def merge_steps(
    parts: list[Any],
    ranks: Ranks,
    made: Sequence[Any] | Mapping[Any, Any] | None = None,
    *,
    key: Callable[[Any, Any], Hashable] | None = None,
    heap: bool = False,
) -> list[tuple[int, Any, list[Any], list[Any]]]:
    """:func:`merge` one join at a time, for the views that explain it: ``(position, rank,
    before, after)`` per join, ``position`` being the left part's index in ``before``. The
    joins are :func:`merge`'s own (from its ``log``), so the two cannot disagree.

    >>> steps = merge_steps(list("abab"), {"ab": 0, "abab": 1}, key=operator.add)
    >>> [(position, after) for position, _, _, after in steps]
    [(0, ['ab', 'a', 'b']), (1, ['ab', 'ab']), (0, ['abab'])]
    """
    before = list(parts)
    log: list[tuple[int, int, Any]] = []
    merge(list(parts), ranks, made, key=key, log=log, heap=heap)
    slots = list(range(len(before)))  # the slot where each part of `before` begins
    steps = []
    for left, _, rank in log:
        i = slots.index(left)
        del slots[i + 1]
        joined = before[i] + before[i + 1] if made is None else made[rank]
        after = before[:i] + [joined] + before[i + 2 :]
        steps.append((i, rank, before, after))
        before = after
    return steps


# ----------------------------------------------------------------------------------------
# The C twin's tables (tokplay_native.bpe): built here, kept by their owners
# ----------------------------------------------------------------------------------------
# The merge loop's C twin holds a tokenizer's tables in C hash tables (built once per owner)
# and runs whole words, or a whole list of pre-tokens, on them. Callers ask for a table by
# :func:`kept_table` and run it; none of them asks whether C was built: a table is None where
# it was not (or a test turned ``core.native.bpe`` off), and the caller takes :func:`merge`.

#: What a C constructor raises for tables it cannot hold (a float rank, an ID past 2**32,
#: a rank with no merged token, a piece with a lone surrogate).
_CANNOT_HOLD = (TypeError, ValueError, OverflowError, KeyError, IndexError)


def kept_table(owner: Any, attr: str, build: Callable[..., Any], *args: Any) -> Any:
    """``owner``'s C table, kept at ``owner.attr``: ``build(*args)`` on the first call (a
    builder below; ``False`` is kept when the C twin cannot hold the tables), or None while
    the C twin is off (not built, or ``core.native.bpe`` set to None: read at each call).

    >>> class Owner: pass
    >>> table = kept_table(Owner(), "_table", rank_table, {b"a": 0, b"b": 1, b"ab": 2})
    >>> table is None or table.encode(b"ab") == (2,)
    True
    """
    if native.bpe is None:
        return None
    table = owner.__dict__.get(attr)
    if table is None:  # (two threads may both build it: the same table, one kept)
        try:
            table = build(*args)
        except _CANNOT_HOLD:
            table = False
        setattr(owner, attr, False if table is None else table)
    return table or None


def rank_table(encoder: dict[bytes, int], *, ignore_merges: bool = False) -> Any:
    """A rank file's BPE (``bytes -> rank``) as a C ``RankTable``, or None without C."""
    fast = native.bpe
    return None if fast is None else fast.RankTable(encoder, ignore_merges=ignore_merges)


def pair_table(
    ranks: dict[tuple[int, int], int], merged: Sequence[int] | Mapping[int, int],
    byte_ids: Sequence[int], *, whole: Any = None,
) -> Any:  # fmt: skip
    """A merge list's BPE (``(left, right) -> rank``, the merged ID by rank, each byte's
    ID; ``whole``: a :func:`rank_table` of whole pre-tokens) as a C ``PairTable`` with
    ``merge(ids)`` and ``encode(data)``, or None without C."""
    fast = native.bpe
    return None if fast is None else fast.PairTable(ranks, merged, byte_ids, whole=whole)


def bpe_table(
    encoder: dict[bytes, int], pair_ranks: dict[tuple[int, int], int], merged: Sequence[int],
    byte_ids: Sequence[int], by_rank: bool, ignore_merges: bool,
) -> Any:  # fmt: skip
    """A tokenizer's C table, or None without C: by rank (a rank file) a :func:`rank_table`,
    else a :func:`pair_table` of its merge list (holding the whole pre-tokens too when
    ``ignore_merges``: a whole pre-token in the vocab is one token).

    >>> table = bpe_table({b"a": 0, b"b": 1, b"ab": 2}, {}, (), (), True, False)
    >>> table is None or table.encode(b"ab") == (2,)
    True
    """
    if by_rank:
        return rank_table(encoder, ignore_merges=ignore_merges)
    whole = rank_table(encoder) if ignore_merges else None
    return pair_table(pair_ranks, merged, byte_ids, whole=whole)


def spm_words(texts: list[str], scores: list[float], types: list[int], **options: Any) -> Any:
    """SentencePiece BPE's C word table (``SpmWords``) from a model's piece columns
    (``unk``, ``byte_fallback``, ``user_first`` keywords), or None without C. Raises what
    the C twin raises (ValueError for an empty text or one spelled twice)."""
    fast = native.bpe
    return None if fast is None else fast.spm_words(texts, scores, types, **options)


def spm_words_raw(buf: bytes, spans: bytes, scores: bytes, types: bytes, **options: Any) -> Any:
    """:func:`spm_words` from packed columns (a file's bytes: no str made), or None."""
    fast = native.bpe
    return None if fast is None else fast.spm_words_raw(buf, spans, scores, types, **options)


def spm_dict_words(ranks: Any, vocab: dict[str, int], **options: Any) -> Any:
    """:func:`spm_words` from a model's dicts (``text -> rank``, ``text -> ID``; ``unk``,
    ``byte_ids``, ``user_first`` keywords), or None without C."""
    fast = native.bpe
    return None if fast is None else fast.SpmWords(ranks, vocab, **options)


def encode_words(
    words: list[str], cache: dict[str, tuple[int, ...]], table: Any,
    compute: Callable[[str], tuple[int, ...]], maxkey: int, maxsize: int, out: list[int],
) -> None:  # fmt: skip
    """``out += cache[w]`` for each word, a missing one ``compute(w)`` (kept when at most
    ``maxkey`` characters long; the cache cleared first when it holds ``maxsize``): one C
    call for the whole list with ``table`` (a :func:`kept_table`: the words it holds are
    looked up in C, the rest computed), else this loop.

    >>> cache, out = {}, [9]
    >>> encode_words(["ab", "c", "ab"], cache, None, lambda w: (len(w),), 3, 10, out)
    >>> out, cache
    ([9, 2, 1, 2], {'ab': (2,), 'c': (1,)})
    """
    fast = native.bpe
    if table and fast is not None:
        fast.encode_words(words, cache, table, compute, maxkey, maxsize, out)
        return
    get = cache.get
    for word in words:
        found = get(word)
        if found is None:
            found = compute(word)
            if len(word) <= maxkey:
                if len(cache) >= maxsize:
                    cache.clear()
                cache[word] = found
        out += found

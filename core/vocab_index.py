"""The byte-level Tokenizer's look-up tables, built a whole list at a time: the vocab
checked, bytes -> ID, and the merges as IDs.

Loading a big model (Llama 3: 128k tokens, 280k merges) spends most of its time here, so
each builder checks the usual case with a few C-level passes (``map``, ``set``, ``zip``)
and falls back to a plain loop only to find and name a problem, or for a rare shape (a
token listed twice).

>>> vocab = checked_vocab({0: b"a", 1: b"b", 2: b"ab"})
>>> index_merges([(b"a", b"b")], lowest_ids(vocab, ()))
({(0, 1): 0}, (2,), ((0, 1),))
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from core.errors import PlaygroundError

__all__ = ["check_dense", "checked_vocab", "copied_merges", "index_merges", "lowest_ids"]


def copied_merges(merges: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Our own copy of ``merges``, every part ``bytes`` (a bytearray is copied).

    >>> copied_merges([(bytearray(b"a"), b"b")])
    [(b'a', b'b')]
    """
    if set(map(len, merges)) <= {2} and set(
        map(type, itertools.chain.from_iterable(merges))
    ) <= {bytes}:
        return list(map(tuple, merges))  # type: ignore[arg-type]
    return [(bytes(a), bytes(b)) for a, b in merges]


def lowest_ids(vocab: dict[int, bytes], skip: Iterable[int]) -> dict[bytes, int]:
    """bytes -> ID over ``vocab`` without the IDs in ``skip``, in ID order; if bytes repeat,
    the lowest ID wins.

    >>> lowest_ids({3: b"a", 1: b"a", 2: b"b"}, {2})
    {b'a': 1}
    """
    skip = set(skip)
    # in ID order, as the loop below fills it (callers may iterate it)
    ids = sorted(i for i in vocab if i not in skip) if skip else sorted(vocab)
    tokens = list(map(vocab.__getitem__, ids))
    if len(set(tokens)) == len(tokens):  # the usual case: no repeats
        return dict(zip(tokens, ids))
    out: dict[bytes, int] = {}
    for i in ids:
        out.setdefault(vocab[i], i)
    return out


def index_merges(
    merges: Sequence[tuple[bytes, bytes]], encoder: Mapping[bytes, int]
) -> tuple[dict[tuple[int, int], int], tuple[int, ...], tuple[tuple[int, int], ...]]:
    """``(left ID, right ID) -> rank`` (the first rank of a pair listed twice), each rank's
    merged ID, and each rank's pair; a merge whose part or result is not in ``encoder`` is a
    :class:`PlaygroundError` naming it.

    >>> index_merges([(b"a", b"b")], {b"a": 0, b"b": 1})
    Traceback (most recent call last):
    ...
    core.errors.PlaygroundError: merge 0 (b'a', b'b') uses b'ab', which is not in the \
vocabulary; every merge's parts and result must be tokens.
    """
    # a whole list at a time (a 280k-merge file in a fraction of the loop's time); a
    # missing token sends us the loop below, which names it
    parts = list(itertools.chain.from_iterable(merges))
    lefts = list(map(encoder.get, parts[::2]))
    rights = list(map(encoder.get, parts[1::2]))
    made = list(map(encoder.get, map(bytes.__add__, parts[::2], parts[1::2])))
    if None not in lefts and None not in rights and None not in made:
        pairs = list(zip(lefts, rights))
        # the first rank of a pair listed twice wins: fill the map from the last rank
        ranks = dict(zip(reversed(pairs), range(len(pairs) - 1, -1, -1)))
        return ranks, tuple(made), tuple(pairs)  # type: ignore[arg-type]
    pair_ranks: dict[tuple[int, int], int] = {}
    merged: list[int] = []
    id_pairs: list[tuple[int, int]] = []
    for rank, (a, b) in enumerate(merges):
        ia, ib, im = encoder.get(a), encoder.get(b), encoder.get(a + b)
        if ia is None or ib is None or im is None:
            what = a if ia is None else b if ib is None else a + b
            raise PlaygroundError(
                f"merge {rank} ({a!r}, {b!r}) uses {what!r}, which is not in the "
                "vocabulary; every merge's parts and result must be tokens."
            )
        pair_ranks.setdefault((ia, ib), rank)
        merged.append(im)
        id_pairs.append((ia, ib))
    return pair_ranks, tuple(merged), tuple(id_pairs)


#: The largest token ID any vocab may use whatever its size: real ones stay under 300k (Gemma 3:
#: 262,144), and a replay keeps a preset's IDs for its first few tokens (GPT-2's 50,256 for 257).
MAX_SPARSE_ID = 2**22 - 1


def check_dense(vocab: Mapping[int, bytes]) -> None:
    """Refuse IDs far sparser than any real vocab: the tables are lists as long as the largest
    ID, so one stray ID of 10**12 in a file would ask for terabytes. An ID may go up to
    :data:`MAX_SPARSE_ID` (a few tens of MB of tables), or past it in a vocab dense enough.

    >>> check_dense({0: b"a", 50_256: b"b"})  # a replay of GPT-2's first merges
    >>> check_dense({0: b"a", 10**12: b"b"})
    Traceback (most recent call last):
    core.errors.PlaygroundError: the vocab's largest ID is 1,000,000,000,000 for 2 tokens; \
IDs must stay below 4,194,304 or run from 0 with few gaps
    """
    if vocab and (top := max(vocab)) > max(MAX_SPARSE_ID, 2 * len(vocab) + 1024):
        raise PlaygroundError(
            f"the vocab's largest ID is {top:,} for {len(vocab):,} tokens; IDs must stay below "
            f"{MAX_SPARSE_ID + 1:,} or run from 0 with few gaps"
        )


def checked_vocab(vocab: Mapping[int, bytes]) -> dict[int, bytes]:
    """A copy of ``vocab`` (IDs >= 0 -> non-empty bytes), or a :class:`PlaygroundError`
    naming the bad entry.

    >>> checked_vocab({0: bytearray(b"a")})
    {0: b'a'}
    """
    if not isinstance(vocab, Mapping):
        raise PlaygroundError(
            f"vocab must be a dict of token ID -> bytes, not {type(vocab).__name__}"
        )
    # the usual case, checked a whole list at a time
    if (
        vocab
        and set(map(type, vocab)) == {int}
        and set(map(type, vocab.values())) == {bytes}
        and min(vocab) >= 0
        and b"" not in vocab.values()
    ):
        check_dense(vocab)
        return dict(vocab)
    out: dict[int, bytes] = {}
    for i, token in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise PlaygroundError(f"vocab key {i!r} is not a token ID (an integer >= 0)")
        if not isinstance(token, (bytes, bytearray)) or not token:
            raise PlaygroundError(f"vocab[{i}] is {token!r}; every token must be non-empty bytes")
        out[i] = bytes(token)
    check_dense(out)
    return out


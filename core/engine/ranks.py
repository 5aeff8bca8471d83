"""BPE by rank, as tiktoken does it: no merge list, a token's rank is its merge priority.

A rank file (tiktoken's ``.tiktoken``, Meta's Llama 3/4 ``tokenizer.model``, Mistral's
Tekken) lists tokens with ranks. To encode a pre-token, start from its bytes and
repeatedly join the adjacent pair whose joined bytes form the token of lowest rank (the
leftmost such pair on a tie), until no adjacent pair forms a token:

>>> ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256, b"bc": 257, b"abc": 258}
>>> bpe_by_rank(b"abcd", ranks)      # ab (256) before bc (257), then ab+c (258)
[258, 100]

This equals BPE with a merge list only when every token can be built from two
lower-ranked tokens. Llama 3's ranks break that for 90 tokens (b'ektedir' and friends):
those are reached only when a whole pre-token equals them, which tiktoken checks first.
:func:`merges_from_ranks` recovers the merge list of the others, for the views that show
merges; :func:`split_by_rank` gives one token's pair.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping

from core.engine.bpe import NO_MERGE, merge

__all__ = ["bpe_by_rank", "merges_from_ranks", "split_by_rank"]

_BYTES = tuple(bytes([b]) for b in range(256))  # each byte as a part


def bpe_by_rank(data: bytes, ranks: Mapping[bytes, int], limit: int = NO_MERGE) -> list[int]:
    """The ranks (= IDs) of ``data``'s tokens, joining only pairs ranked below ``limit``
    (:func:`core.engine.bpe.merge` over the bytes, keyed by the joined bytes).

    >>> bpe_by_rank(b"abc", {b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"abc": 4}, limit=4)
    [0, 3]
    """
    table = ranks if limit >= NO_MERGE else _Below(ranks, limit)
    parts = merge(list(map(_BYTES.__getitem__, data)), table, key=operator.add)
    return list(map(ranks.__getitem__, parts))


class _Below:
    """The rank table without the tokens ranked ``limit`` or above (BPE may not make them)."""

    __slots__ = ("_get", "_limit")

    def __init__(self, ranks: Mapping[bytes, int], limit: int) -> None:
        self._get = ranks.get
        self._limit = limit

    def get(self, key: bytes, default: int) -> int:
        rank = self._get(key, default)
        return rank if rank < self._limit else default


def split_by_rank(
    token: bytes, ranks: Mapping[bytes, int], rank: int
) -> tuple[bytes, bytes] | None:
    """The two lower-ranked tokens that build ``token`` (rank ``rank``), or None.

    It is what BPE makes of the token's bytes with only lower-ranked tokens, when that ends
    in two parts. subtle: those two parts always split the token into two lower-ranked
    tokens, so when only one such split exists it must be the answer, and the (slower) BPE
    run is skipped; that is the common case.

    >>> ranks = {b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"abc": 4, b"ca": 5}
    >>> split_by_rank(b"abc", ranks, 4), split_by_rank(b"ca", ranks, 5)
    ((b'a', b'bc'), (b'c', b'a'))
    >>> split_by_rank(b"a", ranks, 0) is None
    True
    """
    if len(token) < 2:
        return None
    only = None
    found = 0
    for i in range(1, len(token)):
        left = ranks.get(token[:i])
        if left is not None and left < rank:
            right = ranks.get(token[i:])
            if right is not None and right < rank:
                only = i
                found += 1
                if found > 1:
                    break
    if found == 0:
        return None
    if found == 1:
        assert only is not None
        return token[:only], token[only:]
    ids = bpe_by_rank(token, ranks, limit=rank)
    if len(ids) != 2:
        return None
    by_id = {ranks[token[:i]]: i for i in range(1, len(token)) if token[:i] in ranks}
    cut = by_id[ids[0]]
    return token[:cut], token[cut:]


def merges_from_ranks(
    ranks: Mapping[bytes, int],
) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
    """``(merges, whole_only)``: the merge list in rank order, and the multi-byte tokens
    that no two lower-ranked tokens build (:func:`split_by_rank` is None).

    >>> merges_from_ranks({b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"abc": 4, b"ac": 5})
    ([(b'b', b'c'), (b'a', b'bc'), (b'a', b'c')], [])
    >>> merges_from_ranks({b"a": 0, b"b": 1, b"c": 2, b"abc": 3})
    ([], [b'abc'])
    """
    merges: list[tuple[bytes, bytes]] = []
    whole_only: list[bytes] = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        pair = split_by_rank(token, ranks, rank)
        if pair is None:
            whole_only.append(token)
        else:
            merges.append(pair)
    return merges, whole_only

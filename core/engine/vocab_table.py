"""The vocabulary as a table: one row per token, with its merge rank and the two parts it was
merged from, plus the lookups the Vocabulary page needs (search, lengths).

>>> vocab = {0: b"a", 1: b"b", 2: b"ab"}
>>> rows = vocab_rows(vocab, [(b"a", b"b")])
>>> rows[2]
VocabRow(id=2, token=b'ab', length=2, rank=0, left=b'a', right=b'b')
>>> [r.id for r in search_rows(rows, "b")]
[1, 2]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["VocabRow", "length_counts", "search_rows", "vocab_rows"]


@dataclass(frozen=True)
class VocabRow:
    """One vocabulary entry. ``rank`` is its merge's index (``None`` for a byte or a special
    token); ``left`` / ``right`` are the parts it was merged from."""

    id: int
    token: bytes
    length: int
    rank: int | None
    left: bytes | None
    right: bytes | None


def vocab_rows(vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]]) -> list[VocabRow]:
    """One row per token, sorted by ID.

    subtle: a merged token is found by its bytes, and the *first* merge producing those bytes
    wins: two different pairs can make the same bytes, but BPE only ever adds a token once.

    >>> [r.rank for r in vocab_rows({5: b"x", 6: b"xx"}, [(b"x", b"x")])]
    [None, 0]
    """
    made_by: dict[bytes, tuple[int, bytes, bytes]] = {}
    for rank, (left, right) in enumerate(merges):
        made_by.setdefault(left + right, (rank, left, right))
    rows = []
    for token_id in sorted(vocab):
        token = vocab[token_id]
        made = made_by.get(token) if len(token) > 1 else None  # single bytes are never merges
        rows.append(VocabRow(token_id, token, len(token), *(made or (None, None, None))))
    return rows


def search_rows(rows: Iterable[VocabRow], query: str) -> list[VocabRow]:
    """Rows whose token contains ``query`` (as UTF-8 bytes), or whose ID equals it when
    ``query`` is a number; an empty query keeps every row.

    >>> rows = vocab_rows({0: b"7", 1: b" the", 7: b"x"}, [])
    >>> [r.id for r in search_rows(rows, "the")]
    [1]
    >>> [r.id for r in search_rows(rows, "7")]
    [0, 7]
    """
    if not query:
        return list(rows)
    needle = query.encode("utf-8")
    as_id = int(query) if query.strip().isdigit() else None
    return [r for r in rows if needle in r.token or r.id == as_id]


def length_counts(vocab: Mapping[int, bytes]) -> dict[int, int]:
    """How many tokens have each length in bytes, sorted by length.

    >>> length_counts({0: b"a", 1: b"b", 2: b"ab"})
    {1: 2, 2: 1}
    """
    return dict(sorted(Counter(len(t) for t in vocab.values()).items()))

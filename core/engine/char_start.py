"""Byte-level BPE started from whole characters, where that provably makes the same tokens.

Byte-level BPE starts every pre-token from its UTF-8 bytes, so a CJK character costs two
joins before it is one token, a Cyrillic letter one: most of the work on non-Latin text.
:class:`CharStart` gives each multi-byte character of a pre-token the parts BPE makes of
that character alone, when a rank table lets that be done up front without changing what
BPE ends with; otherwise the character starts from its bytes, as before.

>>> ranks = {bytes([i]): i for i in range(256)}
>>> ranks |= {"é".encode(): 256, b"ab": 257, b"a\\xc3": 300}
>>> start = CharStart(ranks, rank_mode=True, eager=True)
>>> start.parts("abé"), start.parts("aé")   # "a\\xc3" (300) ranks above "é" (256)
([b'a', b'b', b'\\xc3\\xa9'], [b'a', b'\\xc3\\xa9'])
>>> ranks[b"a\\xc3"] = 200                  # now a+\\xc3 could join before \\xc3+\\xa9
>>> CharStart(ranks, rank_mode=True, eager=True).parts("aé")
[b'a', b'\\xc3', b'\\xa9']

Why this is exact (``c`` a multi-byte character of the pre-token; ``I(c)`` the highest rank
among the joins BPE makes on ``c``'s bytes alone, ending in ``c``'s *final parts*; a
*crossing* pair is one whose joined bytes hold some bytes of ``c`` and some outside it).
``c`` starts from its final parts only when every crossing pair that can occur at its place
ranks above ``I(c)``. Such a pair joins a prefix of ``c`` to the bytes before it or a suffix
of ``c`` to the bytes after it, so its joined bytes end with ``a + c[:k]`` (``a`` the byte
before ``c``) or start with ``c[j:] + z`` (``z`` the byte after): the two indexes below
hold the lowest rank of such tokens, keyed by those bytes. Then, in BPE from the bytes:

1. while ``c`` is not yet its final parts, its next join of its own ranks at most ``I(c)``
   and is adjacent, so no crossing pair (ranked above ``I(c)``) is ever the lowest: ``c``
   changes only by its own joins, which are the lowest-ranked and leftmost among its own
   pairs, hence exactly the joins (and order) of BPE on ``c`` alone;
2. replace each unfinished character by its final parts (a *projection*; ``c``'s own joins
   leave it unchanged): any other join has a rank ``r`` at most ``c``'s next own join, so
   ``r <= I(c)``; every pair the projection adds involves a final part of an unfinished
   ``c`` and so is crossing (above ``I(c)``) or has no rank (BPE on ``c`` alone left it).
   So ``r`` is also the projection's lowest rank, its pairs of rank ``r`` are the state's
   less some of ``c``'s own, and the leftmost is the same one: the projection makes
   exactly the joins of BPE started from final parts, in order, and both end together (BPE
   from bytes ends only when every character is finished: the projection is then the
   state itself).

Checked per character occurrence, against the bytes next to it: each character keeps the
bytes that may not come before it and those that may not come after it, so a token such as
``b" \\xe5"`` stops only the characters that follow a space. The indexes cost one pass over
the tokens with non-ASCII bytes, so they are built once a tokenizer has run BPE on enough
non-ASCII text to repay it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from core.engine.bpe import NO_MERGE, merge

__all__ = ["CharStart", "crossing_index"]

_BYTES = tuple(bytes([b]) for b in range(256))
#: Bytes of multi-byte characters (past their first) BPE sees before the indexes are built:
#: a paragraph of CJK text. Building takes 0.01-0.08 s (cl100k_base, o200k_base), which one
#: typed sentence would not repay; each character started whole saves one or two joins.
_BUILD_AFTER = 1 << 10
_MAX_CHARS = 1 << 14  # characters remembered (~0.5 KB each; cleared when full)
_NONE: frozenset[int] = frozenset()  # (one shared empty set: most characters have no limits)


def crossing_index(
    tokens: Mapping[bytes, int] | Iterable[tuple[bytes, int]],
) -> tuple[dict[bytes, int], dict[bytes, int]]:
    """``(ends, starts)``: the lowest rank of a token ending with ``a + p`` (``p`` a prefix of
    a multi-byte character, from its lead byte; ``a`` the byte before it) and of one starting
    with ``s + z`` (``s`` the end of a multi-byte character; ``z`` the byte that starts the
    next one). ASCII-only tokens cross no multi-byte character and are skipped.

    >>> crossing_index({b" \\xe5": 5, b"\\xa5x": 7, b"\\xe5\\xa5": 9})
    ({b' \\xe5': 5}, {b'\\xa5x': 7})
    """
    ends: dict[bytes, int] = {}
    starts: dict[bytes, int] = {}
    items = tokens.items() if isinstance(tokens, Mapping) else tokens
    for token, rank in items:
        if token.isascii():
            continue
        n = len(token)
        # the first character boundary after position 0: after the leading continuation bytes
        k = 1
        while k < n and 0x80 <= token[k] < 0xC0:
            k += 1
        if k < n and token[0] >= 0x80:
            key = token[: k + 1]
            if starts.get(key, NO_MERGE) > rank:
                starts[key] = rank
        # the last character start: before the trailing continuation bytes
        q = n - 1
        while q > 0 and 0x80 <= token[q] < 0xC0:
            q -= 1
        if q > 0 and token[q] >= 0xC0:
            key = token[q - 1 :]
            if ends.get(key, NO_MERGE) > rank:
                ends[key] = rank
    return ends, starts


class CharStart:
    """The parts BPE may start a pre-token from: each multi-byte character as the parts BPE
    makes of it alone where the proof above allows, else its bytes (see the module).

    ``ranks`` is a rank file's table (``rank_mode=True``: parts are ``bytes``, a pair's rank
    is its joined bytes' rank) or a merge list's ``(left ID, right ID) -> rank``, with
    ``merged`` (each rank's new ID), ``byte_ids`` (each byte's ID), ``token_bytes`` (each
    ID's bytes) and ``merge_pairs`` (each rank's pair). ``eager=True`` builds the indexes
    now instead of once BPE has seen enough non-ASCII bytes (tests use it).
    """

    __slots__ = ("_standalone", "_byte_part", "_crossing", "_ends", "_starts", "_chars",
                 "_seen", "_build_after")  # fmt: skip

    def __init__(
        self,
        ranks: Mapping[Any, int],
        *,
        rank_mode: bool,
        merged: Sequence[int] = (),
        byte_ids: Sequence[int] = (),
        token_bytes: Sequence[bytes | None] = (),
        merge_pairs: Sequence[tuple[int, int]] = (),
        eager: bool = False,
    ) -> None:
        if rank_mode:
            self._byte_part: Sequence[Any] = _BYTES
            self._standalone: Callable[[bytes, list[Any]], list[Any]] = lambda data, log: merge(
                list(map(_BYTES.__getitem__, data)), ranks, key=operator.add, log=log
            )
            self._crossing: Callable[[], Iterable[tuple[bytes, int]]] = lambda: ranks.items()
        else:
            self._byte_part = tuple(byte_ids)
            self._standalone = lambda data, log: merge(
                list(map(byte_ids.__getitem__, data)), ranks, merged, log=log
            )
            self._crossing = lambda: (
                (token_bytes[a] + token_bytes[b], rank)  # type: ignore[operator]
                for rank, (a, b) in enumerate(merge_pairs)
            )
        # crossing tokens by the part of the character they hold: prefix -> [(byte before,
        # lowest rank)], suffix -> [(byte after, lowest rank)]; None until built
        self._ends: dict[bytes, list[tuple[int, int]]] | None = None
        self._starts: dict[bytes, list[tuple[int, int]]] = {}
        self._chars: dict[str, _Char] = {}
        self._seen = 0
        self._build_after = 0 if eager else _BUILD_AFTER
        if eager:
            self._build()

    def _build(self) -> None:
        ends, starts = crossing_index(self._crossing())
        by_prefix: dict[bytes, list[tuple[int, int]]] = {}
        for key, rank in ends.items():
            by_prefix.setdefault(key[1:], []).append((key[0], rank))
        by_suffix: dict[bytes, list[tuple[int, int]]] = {}
        for key, rank in starts.items():
            by_suffix.setdefault(key[:-1], []).append((key[-1], rank))
        # subtle: `_ends` last, as it says "built": a thread that sees it sees `_starts`
        self._starts = by_suffix
        self._ends = by_prefix

    def parts(self, word: str, data: bytes | None = None) -> list[Any]:
        """The starting parts of the pre-token ``word``, whose UTF-8 bytes are ``data``
        (``word`` holds no lone surrogate, so its characters are ``data``'s)."""
        if data is None:
            data = word.encode("utf-8")
        extra = len(data) - len(word)  # 0 for ASCII; one or more per multi-byte character
        if not extra:
            return list(map(self._byte_part.__getitem__, data))
        if self._ends is None:
            self._seen += extra
            if self._seen < self._build_after:
                return list(map(self._byte_part.__getitem__, data))
            self._build()
        chars = self._chars
        out: list[Any] = []
        # a character's parts are appended once the next one is seen (its byte after)
        whole = raw = ()
        last = -1  # (no byte before the first character)
        not_after = _NONE
        for c in word:
            got = chars.get(c)
            if got is None:
                got = self._char(c)
            c_whole, c_raw, first, c_last, not_before, c_not_after = got
            if first in not_after:
                whole = raw
            out += whole
            whole, raw, not_after = (c_raw if last in not_before else c_whole), c_raw, c_not_after
            last = c_last
        out += whole
        return out

    def _char(self, char: str) -> _Char:
        """What :meth:`parts` needs of one character: its final parts, its bytes as parts, its
        first and last byte, and the bytes that may not come before it or after it for the
        final parts to be a safe start (none when BPE joins nothing in it)."""
        data = char.encode("utf-8")
        raw = tuple(map(self._byte_part.__getitem__, data))
        log: list[tuple[int, int, int]] = []
        whole = tuple(self._standalone(data, log))
        internal = max((rank for _, _, rank in log), default=-1)
        not_before = not_after = _NONE
        if internal >= 0:
            assert self._ends is not None
            ends, starts = self._ends, self._starts
            prefixes = [data[:k] for k in range(1, len(data) + 1)]
            not_before = frozenset(
                byte for p in prefixes for byte, rank in ends.get(p, ()) if rank <= internal
            ) or _NONE
            suffixes = [data[j:] for j in range(len(data))]
            not_after = frozenset(
                byte for s in suffixes for byte, rank in starts.get(s, ()) if rank <= internal
            ) or _NONE
        if len(self._chars) >= _MAX_CHARS:
            self._chars.clear()
        got = self._chars[char] = (whole, raw, data[0], data[-1], not_before, not_after)
        return got


#: What CharStart keeps per character (see CharStart._char).
_Char = tuple[
    tuple[Any, ...], tuple[Any, ...], int, int, frozenset[int], frozenset[int]
]

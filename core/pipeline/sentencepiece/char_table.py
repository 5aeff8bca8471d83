"""A char map (``precompiled_charsmap``) applied one character at a time, with ``str.translate``,
when no rule can reach from one character into the next.

SentencePiece takes, left to right, the longest rule matching the UTF-8 bytes from here
(:class:`~core.pipeline.sentencepiece.normalizer.SentencePieceNormalizer`). Most rules are
one character, but a walk of the trie may go on past a character: ``nmt_nfkc`` composes
``"A"`` and U+0301 into ``"Á"``, so a walk from ``"A"`` reads the next character's first byte.
Where the walk from a character ``c`` cannot read the next character's first byte (it is
not among ``c``'s *follow bytes*, the labels of the trie's children after ``c``), every
match starting at ``c`` lies inside ``c``: ``c`` becomes its own rule, or stays as it is (no
rule, or one ending inside it, which SentencePiece does not apply). So a text where no
character is followed by one of its follow bytes maps character by character; the table
learns each character on first sight, and a regex of the pairs that could reach further
tells when to take the byte walk instead.

>>> from core.pipeline.sentencepiece.normalizer import CharsMap
>>> table = CharTable(CharsMap(bytes([4, 0, 0, 0, 0, 0, 0, 0]) + b"x", "m"))
>>> table.apply("abc")
'abc'
"""

from __future__ import annotations

import re
import threading
from typing import Any, Protocol

__all__ = ["CharTable"]


class CharsMap(Protocol):
    """What the table reads of a :class:`core.pipeline.sentencepiece.normalizer.CharsMap`
    (a protocol: that module builds the table, so this one does not import it)."""

    units: list[int]

    def longest_reach(self, data: bytes, pos: int) -> tuple[int, str | None, int]: ...


#: Characters learnt before the table starts afresh (bounded memory on arbitrary input).
_TABLE_MAX = 1 << 16
_MASK = (1 << 31) | 0xFF


def _lead_class(leads: frozenset[int]) -> str:
    """A regex class body of the characters whose UTF-8 encoding starts with one of ``leads``."""
    parts: list[str] = []
    for lead in sorted(leads):
        if lead < 0x80:
            lo = hi = lead
        elif 0xC2 <= lead <= 0xDF:
            lo = (lead & 0x1F) << 6
            hi = lo + 0x3F
        elif 0xE0 <= lead <= 0xEF:
            lo = (lead & 0x0F) << 12
            hi = lo + 0xFFF
        elif 0xF0 <= lead <= 0xF4:
            lo = (lead & 0x07) << 18
            hi = min(lo + 0x3FFFF, 0x10FFFF)
        else:  # (a continuation byte or an invalid one starts no character)
            continue
        low = re.escape(chr(lo))
        parts.append(low if lo == hi else f"{low}-{re.escape(chr(hi))}")
    return "".join(parts)


class _Learner(dict[int, str]):
    """``str.translate``'s table: a code point -> what the char map makes of it alone,
    learnt on first sight (``__missing__``), noting its follow bytes."""

    def __init__(self, owner: CharTable) -> None:
        super().__init__()
        self.owner = owner

    def __missing__(self, code: int) -> str:
        return self.owner.learn(code)


class CharTable:
    """The char map a character at a time (see the module docstring). ``hard`` characters
    always need the byte walk (e.g. the first characters of user-defined pieces)."""

    def __init__(self, charsmap: CharsMap, *, hard: str = "") -> None:
        self.charsmap = charsmap
        self.hard = frozenset(hard)
        self._table = _Learner(self)
        self._follow: dict[frozenset[int], set[str]] = {}  # follow bytes -> characters
        self._reach: re.Pattern[str] | None = self._compile()
        self._stale = False  # characters learnt since _reach was compiled
        # one text at a time: what a text teaches, the regex compiled from it and the check
        # must see the same table (a model is shared by every session's thread)
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]  # (a lock does not pickle; the copy gets its own)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def learn(self, code: int) -> str:
        """Character ``code`` as the char map makes it alone; notes its follow bytes."""
        ch = chr(code)
        data = ch.encode("utf-8")
        length, replacement, _ = self.charsmap.longest_reach(data, 0)
        out = (replacement or "") if length == len(data) else ch
        follow = self._follow_bytes(data)
        if follow:
            self._follow.setdefault(follow, set()).add(ch)
        if "  " in out:  # (normalize_str may not squeeze such text: always the byte walk)
            self._follow.setdefault(frozenset(), set()).add(ch)
        if follow or "  " in out:
            self._stale = True  # (apply compiles once per text, not once per character)
        self._table[code] = out
        return out

    def apply(self, text: str) -> str | None:
        """``text`` mapped a character at a time, or None when a rule might reach past a
        character (or a hard character or a two-space replacement is there)."""
        with self._lock:
            return self._apply(text)

    def _apply(self, text: str) -> str | None:
        if len(self._table) >= _TABLE_MAX:
            # (here, not in learn: what this text teaches must all reach _compile)
            self._table.clear()
            self._follow.clear()
            self._stale = True
        out = text.translate(self._table)
        if self._stale:
            self._reach = self._compile()
            self._stale = False
        reach = self._reach
        if reach is not None and reach.search(text) is not None:
            return None
        return out

    def _compile(self) -> re.Pattern[str] | None:
        """The regex of what needs the byte walk: a hard character, a character whose own
        rule holds two spaces, or one followed by a character starting with a follow byte."""
        alts = []
        if self.hard:
            alts.append("[" + "".join(map(re.escape, sorted(self.hard))) + "]")
        for follow, chars in self._follow.items():
            first = "[" + "".join(map(re.escape, sorted(chars))) + "]"
            body = _lead_class(follow)
            alts.append(f"{first}[{body}]" if body else first)
        return re.compile("|".join(alts)) if alts else None

    def _follow_bytes(self, data: bytes) -> frozenset[int]:
        """The bytes a walk of the trie may read right after ``data`` (none when the walk
        stops inside it), the same steps as ``CharsMap.longest_reach``."""
        units = self.charsmap.units
        n = len(units)
        unit = units[0]
        node = (unit >> 10) << ((unit & (1 << 9)) >> 6)
        for byte in data:
            node ^= byte
            if node >= n:
                return frozenset()
            unit = units[node]
            if (unit & _MASK) != byte:
                return frozenset()
            node ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1 and node >= n:
                return frozenset()
        return frozenset(
            b for b in range(256) if (node ^ b) < n and (units[node ^ b] & _MASK) == b
        )

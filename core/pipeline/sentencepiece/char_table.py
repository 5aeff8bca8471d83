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
character is followed by one of its follow bytes maps character by character, and a regex
of the pairs that could reach further tells when to take the byte walk instead.

Only a character whose every UTF-8 byte is a step of the trie can have a rule or follow
bytes; any other one stays as it is. So the characters that matter are found once per char
map, by walking the trie's paths of whole characters (:class:`CharRules`, about 5,000 for
``nmt_nfkc``, in a few hundredths of a second): one fixed ``str.translate`` table and one
regex, shared by every text; any other character maps to itself.

>>> from core.pipeline.sentencepiece.normalizer import CharsMap
>>> table = CharTable(CharsMap(bytes([4, 0, 0, 0, 0, 0, 0, 0]) + b"x", "m"))
>>> table.apply("abc")
'abc'
"""

from __future__ import annotations

import re
import threading
from typing import Any, Protocol

__all__ = ["CharRules", "CharTable"]


class CharsMap(Protocol):
    """What the table reads of a :class:`core.pipeline.sentencepiece.normalizer.CharsMap`
    (a protocol: that module builds the table, so this one does not import it)."""

    @property
    def units(self) -> list[int]: ...

    def child_keys(self) -> bytes: ...

    def char_rules(self) -> CharRules: ...

    def longest_reach(self, data: bytes, pos: int) -> tuple[int, str | None, int]: ...


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
            hi = ((lead & 0x0F) << 12) + 0xFFF
            lo = max(hi - 0xFFF, 0x800)  # (E0 starts at U+0800: shorter forms are overlong)
        elif 0xF0 <= lead <= 0xF4:
            hi = min(((lead & 0x07) << 18) + 0x3FFFF, 0x10FFFF)
            lo = max((lead & 0x07) << 18, 0x10000)
        else:  # (a continuation byte or an invalid one starts no character)
            continue
        low = re.escape(chr(lo))
        parts.append(low if lo == hi else f"{low}-{re.escape(chr(hi))}")
    return "".join(parts)


def _step(units: list[int], node: int, byte: int) -> int:
    """The trie's node after ``byte`` from ``node``, or -1 (no such edge)."""
    node ^= byte
    if node >= len(units) or (units[node] & _MASK) != byte:
        return -1
    unit = units[node]
    return node ^ ((unit >> 10) << ((unit & (1 << 9)) >> 6))


def _children(charsmap: CharsMap, node: int) -> list[int]:
    """The bytes labelling ``node``'s children: units ``node ^ b`` with label ``b``, found by
    their keys (``child_keys()``) without a 256-step loop."""
    units = charsmap.units
    low = node & 0xFF
    base = node - low
    keys = charsmap.child_keys()[base : base + 256]
    out = []
    i = keys.find(low)
    while i >= 0:
        if (units[base + i] & _MASK) == i ^ low:
            out.append(i ^ low)
        i = keys.find(low, i + 1)
    return out


def _utf8_length(lead: int) -> int:
    """The UTF-8 length of a character starting with byte ``lead`` (0: none does)."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    return 4 if 0xF0 <= lead <= 0xF4 else 0


class CharRules:
    """What a char map makes of each character alone, for the characters whose every byte
    is a step of its trie (no other one has a rule or follow bytes), found once per char map
    (:meth:`CharsMap.char_rules`): ``table`` (code point -> replacement, or the character),
    and where a text needs the byte walk instead: a character followed by one starting with
    one of its follow bytes, or one mapped to two spaces. As a regex, that is a character of
    ``scan`` (those second characters, and the two-space ones) that one of ``behind`` (the
    lookbehinds of each group) accepts: a search in C skips every other character.

    >>> from core.pipeline.sentencepiece.normalizer import CharsMap
    >>> rules = CharRules(CharsMap(bytes([4, 0, 0, 0, 0, 0, 0, 0]) + b"x", "m"))
    >>> rules.table, rules.behind[0]  # (a one-unit trie: NUL steps to itself)
    ({0: '\\x00'}, '(?<=[\\x00])(?<=[\\x00][\\x00])')
    """

    def __init__(self, charsmap: CharsMap) -> None:
        self.charsmap = charsmap
        self.table: dict[int, str] = {}
        follows: dict[frozenset[int], set[str]] = {}  # follow bytes -> characters
        for ch in self._walk():
            out, follow = self.alone(ch)
            self.table[ord(ch)] = out
            if follow:
                follows.setdefault(follow, set()).add(ch)
            if "  " in out:  # (normalize_str may not squeeze such text: the byte walk)
                follows.setdefault(frozenset(), set()).add(ch)
        self.scan = ""  # a regex class body
        self.behind: list[str] = []
        for follow, chars in follows.items():
            first = "[" + "".join(map(re.escape, sorted(chars))) + "]"
            body = _lead_class(follow)
            self.scan += body if body else first[1:-1]
            # (the scanned character's own class first: most groups fail on it, cheaply)
            pair = f"(?<=[{body}])(?<={first}[{body}])"
            self.behind.append(pair if body else f"(?<={first})")
        #: ``str.translate``'s table: every character with a rule, and ASCII (whose look-ups
        #: ``str.translate`` caches); any other character maps to itself
        self.translation = {code: chr(code) for code in range(128)} | self.table
        # a lone surrogate takes the byte walk, which fails on it as sentencepiece does
        self.scan += "\ud800-\udfff"
        self.behind.append("(?<=[\ud800-\udfff])")
        self._regexes: dict[frozenset[str], re.Pattern[str] | None] = {}

    def regex(self, hard: frozenset[str]) -> re.Pattern[str] | None:
        """What needs the byte walk: a ``hard`` character, or a pair of the rules'. One
        class first, so ``re`` scans for it in C; compiled once per ``hard`` (a model's
        normalizer has one)."""
        if hard not in self._regexes:
            first = "".join(map(re.escape, sorted(hard)))
            behind = ([f"(?<=[{first}])"] if first else []) + self.behind
            if len(self._regexes) > 16:  # (bounded: a char map shared by odd callers)
                self._regexes.clear()
            self._regexes[hard] = (
                re.compile(f"[{first}{self.scan}](?:{'|'.join(behind)})") if behind else None
            )
        return self._regexes[hard]

    def _walk(self) -> list[str]:
        """Every character whose UTF-8 bytes are a path of the trie from its root (a
        superset of those with a rule or follow bytes)."""
        units = self.charsmap.units
        if not units:
            return []
        root = (units[0] >> 10) << ((units[0] & (1 << 9)) >> 6)
        found: list[str] = []
        for lead in _children(self.charsmap, root):
            length = _utf8_length(lead)
            stack = [(_step(units, root, lead), bytes([lead]))] if length else []
            while stack:
                node, prefix = stack.pop()
                if len(prefix) == length:
                    try:
                        found.append(prefix.decode("utf-8"))
                    except UnicodeDecodeError:  # (a surrogate's or an overlong form)
                        pass
                    continue
                if not 0 <= node < len(units):
                    continue
                for byte in _children(self.charsmap, node):
                    if 0x80 <= byte <= 0xBF:
                        stack.append((_step(units, node, byte), prefix + bytes([byte])))
        return found

    def alone(self, ch: str) -> tuple[str, frozenset[int]]:
        """``ch`` as the char map makes it alone, and its follow bytes."""
        data = ch.encode("utf-8")
        length, replacement, _ = self.charsmap.longest_reach(data, 0)
        out = (replacement or "") if length == len(data) else ch
        return out, self._follow_bytes(data)

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
        return frozenset(_children(self.charsmap, node))


class CharTable:
    """The char map a character at a time (see the module docstring). ``hard`` characters
    always need the byte walk (e.g. the first characters of user-defined pieces)."""

    def __init__(self, charsmap: CharsMap, *, hard: str = "") -> None:
        self.charsmap = charsmap
        self.hard = frozenset(hard)
        self._table: dict[int, str] | None = None  # (the char map's rules: on the first text)
        self._reach: re.Pattern[str] | None = None
        # (the first text sets the two up, once: a model is shared by every session's thread)
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]  # (a lock does not pickle; the copy gets its own)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def apply(self, text: str) -> str | None:
        """``text`` mapped a character at a time, or None when a rule might reach past a
        character (or a hard character, a two-space replacement or a lone surrogate is
        there)."""
        table = self._table
        if table is None:
            with self._lock:
                rules = self.charsmap.char_rules()
                self._reach = rules.regex(self.hard)
                table = self._table = rules.translation
        reach = self._reach
        if reach is not None and reach.search(text) is not None:
            return None
        # (a plain dict, never changed: characters it lacks have no rule and stay as they are)
        return text.translate(table)

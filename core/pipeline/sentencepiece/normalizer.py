"""SentencePiece's normalizer (``normalizer.cc``): the file's char map, the dummy prefix,
extra spaces removed, spaces escaped to ``▁``, as a pipeline normalizer that keeps spans.

:class:`SentencePieceNormalizer` applies, left to right, a user-defined piece (kept as is,
found by :class:`PrefixMatcher`), else the longest rule of the compiled char map
(``precompiled_charsmap``, e.g. ``nmt_nfkc``: a Darts double-array trie), else one character.
"""

from __future__ import annotations

import functools
import re
import struct
from collections.abc import Iterable
from typing import Any

from core.errors import FormatError
from core.pipeline.piece import Piece, Span, cover
from core.pipeline.sentencepiece.char_table import CharRules, CharTable
from core.pipeline.sentencepiece.packed import kept_charsmap
from core.pipeline.sentencepiece.proto import SPACE, NormalizerSpec

__all__ = ["CharsMap", "PrefixMatcher", "SentencePieceNormalizer"]


class CharsMap:
    """A compiled normalization rule (``precompiled_charsmap``, e.g. ``nmt_nfkc``): a Darts
    double-array trie over UTF-8 byte strings whose values point into a blob of
    NUL-terminated replacement strings (``normalizer.cc``, ``darts.h``).
    """

    def __init__(self, blob: bytes, what: str) -> None:
        if len(blob) <= 4:
            raise FormatError(
                f"{what}: the normalization rule (precompiled_charsmap) is broken"
            )
        size = int.from_bytes(blob[:4], "little")
        if size >= len(blob) or size % 4:
            raise FormatError(
                f"{what}: the normalization rule's trie size ({size}) is broken"
            )
        self._size = size  # (the trie's bytes: `units` is made on first read)
        self.normalized = blob[4 + size :]
        self._cache: dict[int, str] = {}
        self._blob = bytes(blob)  # (for the C twin, see native())
        self._native: tuple[frozenset[str], Any] | None = None
        # (built on the first text; private: a fingerprint reads public attributes only)
        self._child_keys: bytes | None = None
        self._char_rules: CharRules | None = None
        self._first_chars: str | None = None

    @functools.cached_property
    def units(self) -> list[int]:
        """The trie's little-endian uint32 units, whatever the machine (made on first read:
        a load reads only the root's children, :meth:`first_chars`)."""
        return list(struct.unpack_from(f"<{self._size // 4}I", self._blob, 4))

    def _unit(self, i: int) -> int:
        """``units[i]``, read from the blob while the list is not made."""
        made = self.__dict__.get("units")
        if made is not None:
            return made[i]
        return int.from_bytes(self._blob[4 + 4 * i : 8 + 4 * i], "little")

    def _fingerprint_attributes(self) -> dict[str, Any]:
        """What :mod:`core.engine.fingerprint` hashes: the attributes, ``units`` among them even
        before it is made."""
        return {**vars(self), "units": self.units}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_native"] = None  # (a C object does not pickle: the copy builds its own)
        return state

    def native(self, symbols: frozenset[str] = frozenset()) -> Any:
        """This map in C with these user-defined pieces (a
        ``tokplay_native.normalize.CharsMap``), built on the first call while
        ``core.native.normalize`` is there (read at each call: a test turns it off); None
        without it, or for a map the C twin leaves to the pure code (an empty trie,
        replacements that are not UTF-8).

        >>> m = CharsMap(bytes([8, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0]), "m")
        >>> compiled = m.native()
        >>> compiled is None or compiled.sp_normalize(" a", True, True, True, False) == "▁a"
        True
        """
        return kept_charsmap(self, self._blob, symbols)

    def child_keys(self) -> bytes:
        """Per unit, its label XOR the low byte of its index. Node ``x``'s child along byte
        ``b`` is unit ``x ^ b``, in ``x``'s block of 256, whose label is ``b``: exactly the
        units of the block whose key is ``x``'s low byte (then checked, a leaf's flag
        aside). ``bytes.find`` lists a node's children without a 256-step loop (CharTable).

        >>> CharsMap(bytes([4, 0, 0, 0, 0, 0, 0, 0]) + b"x", "m").child_keys()
        b'\\x00'
        """
        if self._child_keys is None:
            self._child_keys = bytes([(unit ^ p) & 0xFF for p, unit in enumerate(self.units)])
        return self._child_keys

    def char_rules(self) -> CharRules:
        """Each character a rule may start with, as this map makes it alone (built once,
        on the first text: :class:`~core.pipeline.sentencepiece.char_table.CharRules`)."""
        if self._char_rules is None:
            self._char_rules = CharRules(self)
        return self._char_rules

    def first_chars(self) -> str:
        """A regex character class of the characters a rule may start with: those whose
        first UTF-8 byte leaves the trie's root (any other character is never rewritten);
        ``""`` when there are none.

        >>> CharsMap(bytes([4, 0, 0, 0, 0, 0, 0, 0]) + b"x", "m").first_chars()[:1]
        '['
        """
        if self._first_chars is None:
            self._first_chars = self._find_first_chars()
        return self._first_chars

    def _find_first_chars(self) -> str:
        unit, n = self._unit, self._size // 4
        root = (unit(0) >> 10) << ((unit(0) & (1 << 9)) >> 6) if n else 0
        ranges: list[tuple[int, int]] = []
        for lead in range(256):
            node = root ^ lead
            if node >= n or (unit(node) & ((1 << 31) | 0xFF)) != lead:
                continue
            if lead < 0x80:
                ranges.append((lead, lead))
            elif 0xC2 <= lead <= 0xDF:
                ranges.append(((lead & 0x1F) << 6, ((lead & 0x1F) << 6) + 0x3F))
            elif 0xE0 <= lead <= 0xEF:  # (E0 from U+0800, F0 from U+10000: no overlong form)
                low = (lead & 0x0F) << 12
                ranges.append((max(low, 0x800), low + 0xFFF))
            elif 0xF0 <= lead <= 0xF4:
                low = (lead & 0x07) << 18
                ranges.append((max(low, 0x10000), min(low + 0x3FFFF, 0x10FFFF)))
        inner = "".join(
            re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
            for lo, hi in ranges
        )
        return f"[{inner}]" if inner else ""

    def longest(self, data: bytes, pos: int) -> tuple[int, str | None]:
        """The longest rule matching ``data[pos:]``: (bytes matched, replacement), or (0, None)."""
        length, replacement, _ = self.longest_reach(data, pos)
        return length, replacement

    def longest_reach(self, data: bytes, pos: int) -> tuple[int, str | None, int]:
        """:meth:`longest`, and how many bytes from ``pos`` the walk read: the answer is the
        same wherever those bytes come again (a cache key). A walk that ran out of ``data``
        still on a path of the trie says one byte more: a longer text could change it.

        >>> CharsMap(bytes([4, 0, 0, 0, 0, 0, 0, 0]) + b"x", "m").longest_reach(b"ab", 0)
        (0, None, 1)
        """
        units = self.units
        n = len(units)
        unit = units[0]
        node = (unit >> 10) << ((unit & (1 << 9)) >> 6)
        best_len, best_value = 0, -1
        reach = len(data) - pos + 1
        for i in range(pos, len(data)):
            byte = data[i]
            node ^= byte
            if node >= n:
                reach = i + 1 - pos
                break
            unit = units[node]
            if (unit & ((1 << 31) | 0xFF)) != byte:
                reach = i + 1 - pos
                break
            node ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1:
                if node >= n:
                    reach = i + 1 - pos
                    break
                best_len, best_value = i + 1 - pos, units[node] & ((1 << 31) - 1)
        if best_len == 0:
            return 0, None, reach
        return best_len, self._replacement(best_value), reach

    def first(self, data: bytes) -> str | None:
        """The *shortest* rule matching a prefix of ``data`` (its replacement), or None; a
        NUL byte ends the walk. This is how Hugging Face's ``Precompiled`` normalizer reads
        the trie (``spm_precompiled``'s ``transform``), unlike SentencePiece's longest match.

        >>> CharsMap(bytes([4, 0, 0, 0, 0, 0, 0, 0]) + b"x", "m").first(b"a") is None
        True
        """
        units = self.units
        n = len(units)
        unit = units[0]
        node = (unit >> 10) << ((unit & (1 << 9)) >> 6)
        for byte in data:
            if byte == 0:
                break
            node ^= byte
            if node >= n:
                break
            unit = units[node]
            if (unit & ((1 << 31) | 0xFF)) != byte:
                break
            node ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1:
                if node >= n:
                    break
                return self._replacement(units[node] & ((1 << 31) - 1))
        return None

    def _replacement(self, value: int) -> str:
        """The NUL-terminated replacement string at ``value`` in the blob (cached)."""
        out = self._cache.get(value)
        if out is None:
            end = self.normalized.find(b"\0", value)
            raw = self.normalized[value : end if end >= 0 else len(self.normalized)]
            out = raw.decode("utf-8", "replace")
            self._cache[value] = out
        return out


_SPACES = re.compile("  +")
#: A normalizer's cached segments: a word and the spaces after it (or a text's heading
#: spaces); longer ones are not cached.
_SEGMENT = re.compile("[^ ]+ *| +")
_SEGMENT_LONG = 64
#: Entries in a normalizer's cache of char-map matches (two characters -> the match).
_PAIRS_MAX = 1 << 16


def _whole_chars(data: bytes) -> str | None:
    """``data`` as text when it ends on a character boundary (it starts on one), else None."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class PrefixMatcher:
    """Longest-match of user-defined pieces at a position (SentencePiece's PrefixMatcher):
    a left-to-right scan taking the longest piece that starts here, else one character.

    >>> PrefixMatcher(["ab", "abc"]).split("xabcab")
    [('x', False), ('abc', True), ('ab', True)]
    """

    def __init__(self, symbols: Iterable[str]) -> None:
        ordered = sorted(set(symbols), key=lambda s: (-len(s), s))
        self.symbols = frozenset(ordered)
        self.first = frozenset(s[0] for s in ordered)
        self.regex = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def split(self, text: str) -> list[tuple[str, bool]]:
        """``text`` as (chunk, is_user_defined): user-defined matches and single characters."""
        if self.regex is None:
            return [(ch, False) for ch in text]
        out: list[tuple[str, bool]] = []
        pos = 0
        for m in self.regex.finditer(text):
            out.extend((ch, False) for ch in text[pos : m.start()])
            out.append((m.group(), True))
            pos = m.end()
        out.extend((ch, False) for ch in text[pos:])
        return out


class SentencePieceNormalizer:
    """SentencePiece's normalizer as a pipeline :class:`Normalizer` (keeps :class:`Piece` spans).

    >>> n = SentencePieceNormalizer(remove_extra_whitespaces=False)
    >>> p = n.normalize(Piece.of("Hi  you"))
    >>> p.text, p.spans[:3]
    ('▁Hi▁▁you', [(0, 0), (0, 1), (1, 2)])
    >>> SentencePieceNormalizer().normalize(Piece.of("  Hi   you ")).text
    '▁Hi▁you'
    """

    def __init__(
        self,
        *,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = True,
        escape_whitespaces: bool = True,
        treat_whitespace_as_suffix: bool = False,
        user_defined_symbols: Iterable[str] = (),
        precompiled_charsmap: bytes = b"",
        name: str = "tokenizer.model",
    ) -> None:
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.treat_whitespace_as_suffix = treat_whitespace_as_suffix
        self.matcher = PrefixMatcher(user_defined_symbols)
        self.charsmap = (
            CharsMap(precompiled_charsmap, name) if precompiled_charsmap else None
        )
        # where a user-defined piece or a rule may start; _chunks copies the rest in bulk
        firsts = "".join(sorted(self.matcher.first))
        stops = [f"[{re.escape(firsts)}]"] if firsts else []
        if self.charsmap is not None and self.charsmap.first_chars():
            stops.append(self.charsmap.first_chars())
        self._stops = re.compile("|".join(stops)) if stops else None
        self._pairs: dict[str, tuple[int, str | None]] = {}  # see _walk
        self._segments: dict[str, tuple[str, bool]] = {}  # see _mapped_text
        # (a user-defined piece with a space could straddle two segments: none then)
        self._segmentable = not any(" " in s for s in self.matcher.symbols)
        # normalize_str maps most texts a character at a time (see CharTable)
        self._table = (
            CharTable(self.charsmap, hard="".join(self.matcher.first))
            if self.charsmap is not None
            else None
        )

    def clear_cache(self) -> None:
        """Forget what earlier texts taught (e.g. to time a cold encode)."""
        self._pairs.clear()
        self._segments.clear()
        if self.charsmap is not None:
            self.charsmap._cache.clear()
            # a new table, not a cleared one: another thread may be inside the old one
            self._table = CharTable(self.charsmap, hard="".join(self.matcher.first))

    @classmethod
    def from_spec(
        cls, spec: NormalizerSpec, *, treat_whitespace_as_suffix: bool = False,
        user_defined_symbols: Iterable[str] = (), name: str = "tokenizer.model",
    ) -> SentencePieceNormalizer:  # fmt: skip
        return cls(
            add_dummy_prefix=spec.add_dummy_prefix,
            remove_extra_whitespaces=spec.remove_extra_whitespaces,
            escape_whitespaces=spec.escape_whitespaces,
            treat_whitespace_as_suffix=treat_whitespace_as_suffix,
            user_defined_symbols=user_defined_symbols,
            precompiled_charsmap=spec.precompiled_charsmap,
            name=name,
        )

    def normalize_str(self, text: str) -> str:
        """The normalized text alone (``SentencePieceProcessor.normalize``): what
        :meth:`normalize` gives, without spans (with a char map, in C where built:
        ``core.native.normalize``; else the char table or the walk below).

        >>> SentencePieceNormalizer().normalize_str("  Hi   you ")
        '▁Hi▁you'
        """
        if not text:
            return text
        space = SPACE if self.escape_whitespaces else " "
        if self.charsmap is None and not self.remove_extra_whitespaces:
            out = text.replace(" ", space) if space != " " else text
            if not self.add_dummy_prefix:
                return out
            return out + space if self.treat_whitespace_as_suffix else space + out
        charsmap = self.charsmap
        compiled = charsmap.native(self.matcher.symbols) if charsmap is not None else None
        if compiled is not None:  # (the same walk and the same _general, in C)
            return compiled.sp_normalize(
                text, self.add_dummy_prefix, self.remove_extra_whitespaces,
                self.escape_whitespaces, self.treat_whitespace_as_suffix,
            )  # fmt: skip
        fast = self._table.apply(text) if self._table is not None else None
        mapped, exact = (fast, True) if fast is not None else self._mapped_text(text)
        if not exact:
            return self._general(Piece.of(text), space).text
        if self.remove_extra_whitespaces:
            # _general's squeezing, on the whole string: the same unless a rule's
            # replacement holds two spaces in a row (then _mapped says not exact)
            if "  " in mapped:
                mapped = _SPACES.sub(" ", mapped)
            mapped = mapped.lstrip(" ")
            if not mapped:  # (all spaces, or rules that remove characters: _general)
                return self._general(Piece.of(text), space).text
        out = mapped.replace(" ", space) if space != " " else mapped
        if self.add_dummy_prefix and not self.treat_whitespace_as_suffix:
            out = space + out
        if self.remove_extra_whitespaces:
            out = out.rstrip(space)
        if self.add_dummy_prefix and self.treat_whitespace_as_suffix:
            out += space
        return out

    def _mapped_text(self, text: str) -> tuple[str, bool]:
        """:meth:`_mapped` a segment at a time, each cached: a word and the spaces after it.
        A segment mapped alone is mapped as in the text when no walk of the char map ran
        past its end (a walk that stops inside it reads the same bytes in the text; a
        user-defined piece holds no space, so none straddles two); else the whole text is
        mapped at once. (The last segment ends where the text does: it is always right.)"""
        if not self._segmentable:
            return self._mapped(text)[:2]
        cache = self._segments
        out: list[str] = []
        exact = True
        segments = _SEGMENT.findall(text)
        last = len(segments) - 1
        for k, segment in enumerate(segments):
            hit = cache.get(segment)
            if hit is None:
                mapped, seg_exact, closed = self._mapped(segment)
                if not closed and k != last:
                    return self._mapped(text)[:2]
                hit = (mapped, seg_exact)
                if closed and len(segment) <= _SEGMENT_LONG:
                    if len(cache) >= _PAIRS_MAX:
                        cache.clear()
                    cache[segment] = hit
            out.append(hit[0])
            exact = exact and hit[1]
        return "".join(out), exact

    def _mapped(self, text: str) -> tuple[str, bool, bool]:
        """:meth:`_chunks` without spans: the chunks' outputs joined; whether
        :meth:`normalize_str` may squeeze spaces on that string (False when a rule's
        replacement holds two spaces in a row); whether every walk of the char map ended
        inside ``text`` (False: one ran out of it, so a longer text might map otherwise)."""
        chunks, closed = self._walk(text)
        exact = not any(rule and "  " in out for out, _, _, rule in chunks)
        return "".join([out for out, _, _, _ in chunks]), exact, closed

    def normalize(self, piece: Piece) -> Piece:
        if not piece.text:
            return piece
        space = SPACE if self.escape_whitespaces else " "
        if self.charsmap is None and not self.remove_extra_whitespaces:
            # Fast path (Llama 2 / Mistral): one character in, one out. Cutting out
            # user-defined pieces first changes nothing here: their spaces are escaped too.
            out = (
                Piece(piece.text.replace(" ", space), piece.spans)
                if space != " "
                else piece
            )
            if not self.add_dummy_prefix:
                return out
            return (
                out.append(space)
                if self.treat_whitespace_as_suffix
                else out.prepend(space)
            )
        return self._general(piece, space)

    def _chunks(self, piece: Piece) -> list[tuple[str, Span]]:
        """``Normalizer::NormalizePrefix`` applied left to right: (output, original span) per
        chunk: a user-defined piece (kept as is), else the longest char-map rule, else one
        character. A rule may run over the start of a later user-defined piece, as in C++."""
        text, spans = piece.text, piece.spans
        out: list[tuple[str, Span]] = []
        for chunk, i, j, rule in self._walk(text)[0]:
            if rule:
                out.append((chunk, cover(spans, i, j)))
            else:  # characters as they are: one chunk each
                out.extend(zip(chunk, spans[i:j]))
        return out

    def _walk(self, text: str) -> tuple[list[tuple[str, int, int, bool]], bool]:
        """The walk behind :meth:`_chunks` and :meth:`_mapped`: ``(output, start, end, rule)``
        per stretch of ``text``, where ``rule`` says a user-defined piece or a char-map rule
        made the output (else the characters are copied as they are); and whether every walk
        of the char map ended inside ``text``."""
        charsmap = self.charsmap
        regex = self.matcher.regex
        n = len(text)
        if charsmap is None and regex is None:
            return [(text, 0, n, False)], True
        first = self.matcher.first
        out: list[tuple[str, int, int, bool]] = []
        closed = True
        data = text.encode("utf-8") if charsmap is not None else b""
        stops = self._stops
        pairs = self._pairs
        b = 0  # byte offset of text[i] in data
        i = 0
        while i < n:
            found = stops.search(text, i) if stops is not None else None
            j = found.start() if found is not None else n
            if j > i:  # characters that start no rule and no user-defined piece: as they are
                run = text[i:j]
                out.append((run, i, j, False))
                if charsmap is not None:
                    b += len(run.encode("utf-8"))
                i = j
                continue
            if regex is not None and text[i] in first:
                m = regex.match(text, i)
                if m:
                    j = m.end()
                    group = m.group()
                    out.append((group, i, j, True))
                    b += len(group.encode("utf-8")) if charsmap is not None else j - i
                    i = j
                    continue
            if charsmap is not None:
                # cached by the two characters here when the walk read no further (it
                # rarely does: most rules are one character, or one and a mark)
                key = text[i : i + 2]
                hit = pairs.get(key)
                if hit is None:
                    length, replacement, reach = charsmap.longest_reach(data, b)
                    if reach <= len(key.encode("utf-8")):
                        if len(pairs) >= _PAIRS_MAX:
                            pairs.clear()
                        pairs[key] = (length, replacement)
                    elif reach > len(data) - b:
                        closed = False
                else:
                    length, replacement = hit
                matched = _whole_chars(data[b : b + length]) if length else None
                if matched is not None:
                    j = i + len(matched)
                    out.append((replacement or "", i, j, True))
                    b += length
                    i = j
                    continue
                # (a rule ending inside a character would make invalid UTF-8: not applied)
                b += len(text[i].encode("utf-8"))
            else:
                b += 1
            out.append((text[i], i, i + 1, False))
            i += 1
        return out, closed

    def _general(self, piece: Piece, space: str) -> Piece:
        """``Normalizer::Normalize``: heading spaces dropped, the dummy prefix, runs of spaces
        squeezed, trailing spaces (any ``▁``, even typed ones) dropped, or the dummy suffix."""
        chunks = self._chunks(piece)
        k = 0
        if self.remove_extra_whitespaces:  # heading spaces
            while k < len(chunks) and chunks[k][0] == " ":
                k += 1
        if k == len(chunks):  # nothing but spaces: nothing at all, not even the dummy ▁
            return Piece("", [])
        at = chunks[k][1][0]
        text: list[str] = []
        spans: list[Span] = []
        if self.add_dummy_prefix and not self.treat_whitespace_as_suffix:
            text.append(space)
            spans.append((at, at))
        squeeze = self.remove_extra_whitespaces
        is_prev_space = squeeze
        for out, span in chunks[k:]:
            if len(out) == 1:  # (most chunks: one character, the same rules made quick)
                if out != " ":
                    text.append(out)
                    spans.append(span)
                    is_prev_space = False
                elif not is_prev_space:
                    text.append(space)
                    spans.append(span)
                    is_prev_space = squeeze
                continue
            if is_prev_space:
                out = out.lstrip(" ")
            if out:
                text.append(out.replace(" ", space) if space != " " else out)
                spans.extend([span] * len(out))
                is_prev_space = out.endswith(" ")
            if not self.remove_extra_whitespaces:
                is_prev_space = False
        joined = "".join(text)
        if self.remove_extra_whitespaces:
            # trailing spaces go (and typed ▁ too: SentencePiece strips them the same way)
            joined = joined.rstrip(space)
            del spans[len(joined) :]
        if self.add_dummy_prefix and self.treat_whitespace_as_suffix:
            end = spans[-1][1] if spans else at
            joined += space
            spans.append((end, end))
        return Piece(joined, spans)

"""Normalizers: the first stage of a Hugging Face pipeline, rewriting the text before it is cut.

Each class twins one ``tokenizers`` normalizer and maps a :class:`Piece` to a :class:`Piece`,
so every output character still knows which characters of the user's text it stands for:

>>> seq = Sequence((Prepend("▁"), Replace(Pattern.string(" "), "▁"), Lowercase()))
>>> out = seq.normalize(Piece.of("Hi you"))
>>> out.text
'▁hi▁you'
>>> out.spans[:4]                 # "▁" is inserted: an empty span where it was put
[(0, 0), (0, 1), (1, 2), (2, 3)]

The output text is exactly Hugging Face's (``normalize_str``). The spans are Hugging Face's
alignments with two deliberate differences, both for drawing tokens under the right letters:

- a character that was *inserted* (``Prepend``, a ``Replace`` of an empty match, the spaces
  ``BertNormalizer`` puts around CJK) gets the empty span where it was put, not its
  neighbour's span;
- NFC/NFD/NFKC/NFKD normalize the text in segments (a starter and the marks that go with it)
  and every character a changed segment produces gets the whole segment's span, so ``"é"``
  composed from ``"e" + U+0301`` covers both original characters (Hugging Face gives it the
  ``"e"`` only). A ``Replace`` match gives its content the span of the whole match.

Unicode versions. ``tokenizers`` is built from Rust crates with their own Unicode tables: its
normalization forms and ``StripAccents`` use tables from around Unicode 12, its Bert
normalizer a general-category table from around Unicode 8, lower-casing Rust's own (Unicode
16), its regexes Oniguruma's (Unicode 16). Python 3.11's ``unicodedata`` is Unicode 14 and the
``regex`` module is newer still. The small tables at the end of this module record, code
point by code point, where those differ, so that even characters the crates do not know yet
behave as in Hugging Face. The tests compare every table with ``tokenizers`` over all of
Unicode.

This module also holds what the other stages share: :class:`Pattern` (Hugging Face's
``{"String": ...}`` / ``{"Regex": ...}``, matched the way Oniguruma does),
:func:`is_whitespace` (Rust's ``char::is_whitespace``) and :func:`read_field` (a checked
``tokenizer.json`` field).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, Protocol

from core.bytes_unicode import bytes_to_unicode
from core.errors import FormatError
from core.pipeline.piece import Piece, Span
from core.regex_compat import regex


class Normalizer(Protocol):
    """One normalization step: a piece of text in, the rewritten piece out."""

    def normalize(self, piece: Piece) -> Piece: ...


# ---------------------------------------------------------------------------------------------
# Character classes, as Rust and the crates ``tokenizers`` uses define them
# ---------------------------------------------------------------------------------------------

#: Rust's ``char::is_whitespace``: the Unicode ``White_Space`` property (25 code points).
#: subtle: not Python's ``str.isspace``, which adds U+001C..U+001F.
_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def is_whitespace(ch: str) -> bool:
    """Rust's ``char::is_whitespace`` (``White_Space``), which Hugging Face uses everywhere.

    >>> is_whitespace("\\u3000"), is_whitespace("\\x1c")
    (True, False)
    """
    return ch in _WHITESPACE


def _is_control(ch: str) -> bool:
    """BERT's "control character": general category Cc/Cf/Co (in the crate's tables), except
    the tab and line breaks, which are whitespace to BERT."""
    if ch in "\t\n\r":
        return False
    other = unicodedata.category(ch) in ("Cc", "Cf", "Co")
    return other != (ord(ch) in _CONTROL_FLIPS)


def _is_chinese_char(ch: str) -> bool:
    """The CJK ideograph blocks BERT isolates (not Hangul, kana or CJK punctuation)."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_BLOCKS)


_CJK_BLOCKS = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip


def _is_nonspacing_mark(ch: str) -> bool:
    """General category Mn, in the (older) tables of the crate BERT's accent stripping uses."""
    return (unicodedata.category(ch) == "Mn") != (ord(ch) in _NONSPACING_MARK_FLIPS)


def _is_combining_mark(ch: str) -> bool:
    """General category M (Mn, Mc, Me), in the tables ``StripAccents`` uses."""
    return unicodedata.category(ch).startswith("M") != (
        ord(ch) in _COMBINING_MARK_FLIPS
    )


def _lowercase(ch: str) -> str:
    """Rust's ``char::to_lowercase``: Python's per-character mapping, plus Unicode 15/16 pairs.

    subtle: per character, so a final ``Σ`` becomes ``σ`` (Python's ``str.lower`` on a
    whole word would give ``ς``).
    """
    return _LOWERCASE_EXTRA.get(ch) or ch.lower()


# ---------------------------------------------------------------------------------------------
# Patterns: Hugging Face's {"String": ...} / {"Regex": ...}, matched as Oniguruma does
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    """A literal string or an Oniguruma regex, as in ``Replace`` and ``Split``.

    Regexes are written in Oniguruma's Ruby syntax; :func:`onig_to_python` rewrites them for
    the ``regex`` module. Matches are found the way the ``onig`` crate iterates them (an empty
    match right after a match is skipped), and on empty text there are none.

    >>> Pattern.regex(r"\\p{N}{1,3}+").matches("12345 6")      # Ruby: {1,3}+ repeats
    [(0, 5), (6, 7)]
    >>> Pattern.regex("x*").matches("axxb")
    [(0, 0), (1, 3), (4, 4)]
    """

    source: str
    is_regex: bool = False
    _compiled: regex.Pattern[str] = field(init=False, repr=False, compare=False)
    _literal_chars: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        source = (
            onig_to_python(self.source) if self.is_regex else regex.escape(self.source)
        )
        try:
            compiled = regex.compile(source, regex.MULTILINE | regex.V0)
        except regex.error as err:
            raise FormatError(
                f"the regex {self.source!r} cannot be compiled ({err}); it must be a pattern "
                "Oniguruma (which Hugging Face uses) accepts"
            ) from None
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "_literal_chars", frozenset(self.source))

    @classmethod
    def string(cls, text: str) -> Pattern:
        """A literal: matches exactly ``text``."""
        return cls(text, is_regex=False)

    @classmethod
    def regex(cls, source: str) -> Pattern:
        """An Oniguruma regex (Ruby syntax), as in a ``tokenizer.json``."""
        return cls(source, is_regex=True)

    @classmethod
    def from_json(cls, obj: Any, *, where: str) -> Pattern:
        """``{"String": "..."}`` or ``{"Regex": "..."}``.

        >>> Pattern.from_json({"Regex": "\\\\s+"}, where="x")
        Pattern(source='\\\\s+', is_regex=True)
        """
        if isinstance(obj, dict) and len(obj) == 1:
            ((kind, source),) = obj.items()
            if kind in ("String", "Regex") and isinstance(source, str):
                try:
                    return cls(source, is_regex=kind == "Regex")
                except FormatError as err:
                    raise FormatError(f"{where}: {err}") from None
        raise FormatError(
            f'{where}: pattern should be {{"String": "..."}} or {{"Regex": "..."}}, '
            f"not {_show(obj)}"
        )

    def matches(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` character offsets of every match, in order."""
        if not text:
            return []
        haystack = (
            as_unicode_16(text, keep=self._literal_chars) if self.is_regex else text
        )
        found: list[tuple[int, int]] = []
        pos, last_end = 0, -1
        search = self._compiled.search
        while pos <= len(text):
            m = search(haystack, pos)
            if m is None:
                break
            start, end = m.span()
            # subtle: the onig crate skips an empty match where the last match ended and
            # searches again one character on, so a longer match starting there is never
            # found (Python's finditer would find it)
            if start == end == last_end:
                pos += 1
                continue
            found.append((start, end))
            pos = last_end = end
        return found

    def find_matches(self, text: str) -> list[tuple[int, int, bool]]:
        """The whole of ``text`` cut into ``(start, end, is_match)`` runs (HF ``find_matches``).

        >>> Pattern.string("-").find_matches("a-b")
        [(0, 1, False), (1, 2, True), (2, 3, False)]
        """
        if not text:
            return [(0, 0, False)]
        runs: list[tuple[int, int, bool]] = []
        prev = 0
        for start, end in self.matches(text):
            if start != prev:
                runs.append((prev, start, False))
            runs.append((start, end, True))
            prev = end
        if prev != len(text):
            runs.append((prev, len(text), False))
        return runs


def as_unicode_16(text: str, *, keep: frozenset[str] = frozenset()) -> str:
    """``text`` as regex engines on Unicode 16 (Oniguruma, Rust's ``regex`` crate) see it,
    for matching with the newer ``regex`` module: characters assigned since become U+FFFF,
    unassigned in every version, so ``\\p{L}``, ``\\s``, ``\\w``... treat them as those
    engines do; U+0295 (Ll until Unicode 17) becomes U+0296, a caseless Latin Ll like it was.
    Same length, so offsets do not move. Characters in ``keep`` (those written in the
    pattern itself) are left alone.

    >>> as_unicode_16("a\\u0295\\U0001fac8") == "a\\u0296\\uffff"
    True
    """
    if _NEWER_THAN_UNICODE_16.search(text) is None:
        return text
    return _NEWER_THAN_UNICODE_16.sub(
        lambda m: (
            m.group() if m.group() in keep else _RECATEGORIZED.get(m.group(), "\uffff")
        ),
        text,
    )


_INTERVAL = regex.compile(r"\{(\d*)(?:,(\d*))?\}")
# Oniguruma's \w: the regex module's (Alphabetic, M, Nd, Pc, Join_Control) without ZWJ/ZWNJ,
# with the Latin-1 digits ² ³ ¹ ¼ ½ ¾
_WORD = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\xb2\xb3\xb9\xbc-\xbe"
_ESCAPES_OUTSIDE = {
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
    "B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))",
    "h": "[0-9a-fA-F]",
    "H": "[^0-9a-fA-F]",
    "Z": r"(?=\n?\Z)",  # Ruby: end of text or before a final newline; Python's \Z is the end
    "z": r"\Z",
    "R": r"(?>\r\n|[\n\x0b\x0c\r\x85\u2028\u2029])",
}


def onig_to_python(pattern: str) -> str:
    r"""Rewrite an Oniguruma (Ruby syntax) regex for the ``regex`` module (with MULTILINE, as
    Ruby's ``^``/``$`` always match at line breaks).

    What differs: ``X{n,m}+`` repeats ``X{n,m}`` (Python: possessive), ``(?m)`` is Python's
    ``(?s)``, ``\h`` is a hex digit, ``\w`` (so ``\b``) takes ``²³¹¼½¾`` and not
    ZWJ/ZWNJ, ``\Z``/``\z``/``\R``/``\x{...}``/``\k<name>`` are spelled differently. Class
    intersections (``[a-z&&[^b]]``) and negated nested classes are not supported (a
    :class:`FormatError`); ``\W`` inside a class and POSIX ``[[:punct:]]`` keep Python's
    meaning.

    >>> onig_to_python(r"\p{N}{1,3}+|(?m:a.)\h")
    '(?:\\p{N}{1,3})+|(?s:a.)[0-9a-fA-F]'
    """
    out: list[str] = []
    group_starts: list[int] = []
    last_atom = 0
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            token, i = _escape(pattern, i, in_class=False)
            last_atom = len(out)
            out.append(token)
        elif ch == "[":
            token, i = _char_class(pattern, i)
            last_atom = len(out)
            out.append(token)
        elif ch == "(":
            group_starts.append(len(out))
            token, i = _group_open(pattern, i)
            out.append(token)
        elif ch == ")":
            last_atom = group_starts.pop() if group_starts else len(out)
            out.append(ch)
            i += 1
        elif (
            ch == "{"
            and (m := _INTERVAL.match(pattern, i))
            and m.group(1, 2) != ("", None)
        ):
            i = m.end()
            if i < len(pattern) and pattern[i] in "+*":
                # subtle: Ruby reads X{1,3}+ as (X{1,3})+, not as a possessive X{1,3}
                atom = "".join(out[last_atom:])
                del out[last_atom:]
                out.append(f"(?:{atom}{m.group()}){pattern[i]}")
                i += 1
            else:
                out.append(m.group())
        else:
            if ch not in "*+?|":
                last_atom = len(out)
            out.append(ch)
            i += 1
    return "".join(out)


def _escape(pattern: str, i: int, *, in_class: bool) -> tuple[str, int]:
    """The escape sequence at ``pattern[i]`` (a backslash), rewritten; and where it ends."""
    if i + 1 >= len(pattern):
        return "\\", i + 1
    ch = pattern[i + 1]
    if ch == "x" and pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 3)
        if end > 0:
            digits = pattern[i + 3 : end]
            try:
                return f"\\U{int(digits, 16):08x}", end + 1
            except ValueError:
                pass
    if ch == "k" and pattern.startswith("<", i + 2):
        return "\\g", i + 2  # \k<name> -> \g<name>: the rest copies through
    if ch in "pP" and pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 3)
        if end > 0:
            return pattern[i : end + 1], end + 1
    if in_class:
        return {"h": "0-9a-fA-F", "w": _WORD}.get(ch, pattern[i : i + 2]), i + 2
    return _ESCAPES_OUTSIDE.get(ch, pattern[i : i + 2]), i + 2


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """The bracket expression at ``pattern[i]``; nested plain classes are merged into it."""
    out = ["["]
    i += 1
    if pattern.startswith("^", i):
        out.append("^")
        i += 1
    if pattern.startswith("]", i):  # a "]" first in the class is literal
        out.append("\\]")
        i += 1
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            token, i = _escape(pattern, i, in_class=True)
            out.append(token)
        elif ch == "]":
            return "".join(out) + "]", i + 1
        elif ch == "[" and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            stop = end + 2 if end > 0 else i + 1
            out.append(pattern[i:stop])
            i = stop
        elif ch == "[":
            if pattern.startswith("[^", i):
                raise FormatError(
                    f"the regex {pattern!r} nests a negated class, not supported"
                )
            inner, i = _char_class(pattern, i)
            out.append(inner[1:-1])
        elif ch == "&" and pattern.startswith("&&", i):
            raise FormatError(
                f"the regex {pattern!r} uses a class intersection (&&), not supported"
            )
        else:
            out.append(ch)
            i += 1
    raise FormatError(f"the regex {pattern!r} has a '[' that is never closed")


_GROUP_OPTIONS = regex.compile(r"\(\?([imx]*)(-[imx]*)?([:)])")


def _group_open(pattern: str, i: int) -> tuple[str, int]:
    """``(`` and its options; Ruby's ``m`` option (dot matches newline) is Python's ``s``."""
    m = _GROUP_OPTIONS.match(pattern, i)
    if m is None:
        return "(", i + 1
    on, off, end = m.group(1), m.group(2) or "", m.group(3)
    return f"(?{on.replace('m', 's')}{off.replace('m', 's')}{end}", m.end()


# ---------------------------------------------------------------------------------------------
# Unicode normalization forms, in segments so that spans stay meaningful
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _composition_seconds() -> frozenset[str]:
    """Characters that can combine with the character before them under NFC/NFKC: the second
    half of every two-character canonical decomposition, and the Hangul vowels and finals."""
    seconds = {chr(cp) for cp in range(0x1161, 0x1176)} | {
        chr(cp) for cp in range(0x11A8, 0x11C3)
    }
    for cp in range(0x2FA1E):  # nothing above U+2FA1D decomposes
        parts = unicodedata.decomposition(chr(cp)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(chr(int(parts[1], 16)))
    return frozenset(seconds)


@lru_cache(maxsize=8192)  # bounded: one entry per distinct character and form
def _starts_segment(ch: str, form: str) -> bool:
    """Whether normalizing under ``form`` can restart at ``ch``: nothing before ``ch`` can be
    reordered past it or combine with it (UAX #15's "stable" boundary, slightly conservative).
    """
    if ord(ch) in _UNKNOWN_TO_NORMALIZATION:
        return True
    first = unicodedata.normalize("NFKD" if "K" in form else "NFD", ch)[0]
    if unicodedata.combining(first):
        return False
    return form in ("NFD", "NFKD") or first not in _composition_seconds()


def _is_cut(text: str, i: int, form: str) -> bool:
    """Whether normalization under ``form`` can restart at ``text[i]``; characters
    ``tokenizers`` does not know yet stand alone (to it they are unassigned: no
    decomposition, never combined or reordered)."""
    return ord(text[i - 1]) in _UNKNOWN_TO_NORMALIZATION or _starts_segment(
        text[i], form
    )


def _normalization_segments(text: str, form: str) -> list[tuple[int, int]]:
    """Cut ``text`` wherever ``form`` can restart.

    >>> _normalization_segments("ae\\u0301\\u0323b", "NFC")
    [(0, 1), (1, 4), (4, 5)]
    """
    cuts = [i for i in range(1, len(text)) if _is_cut(text, i, form)]
    return list(zip([0, *cuts], [*cuts, len(text)])) if text else []


def _normalize_form(piece: Piece, form: str) -> Piece:
    """``piece`` under a Unicode normalization form, as the ``tokenizers`` crate computes it."""
    if unicodedata.is_normalized(
        form, piece.text
    ):  # fast path: nothing to do (most text)
        return piece
    out: list[str] = []
    spans: list[Span] = []
    _normalize_range(piece, form, 0, len(piece.text), out, spans)
    return Piece("".join(out), spans)


def _normalize_range(
    piece: Piece, form: str, lo: int, hi: int, out: list[str], spans: list[Span]
) -> None:
    """Normalize ``piece.text[lo:hi]`` (cut where ``form`` can restart) into ``out`` and
    ``spans``: halves that are already normalized are copied as they are, so only the
    segments that change are visited one by one."""
    text = piece.text
    if unicodedata.is_normalized(form, text[lo:hi]):
        out.append(text[lo:hi])
        spans.extend(piece.spans[lo:hi])
        return
    if hi - lo > 16:
        # a cut near the middle: the first one after it, else the last one before it
        mid = next(
            (i for i in range((lo + hi) // 2, hi) if _is_cut(text, i, form)), None
        )
        if mid is None:
            cuts = (
                i for i in range((lo + hi) // 2 - 1, lo, -1) if _is_cut(text, i, form)
            )
            mid = next(cuts, None)
        if mid is not None:
            _normalize_range(piece, form, lo, mid, out, spans)
            _normalize_range(piece, form, mid, hi, out, spans)
            return
    for start, end in _normalization_segments(text[lo:hi], form):
        _normalize_segment(piece, form, lo + start, lo + end, out, spans)


def _normalize_segment(
    piece: Piece, form: str, start: int, end: int, out: list[str], spans: list[Span]
) -> None:
    segment = piece.text[start:end]
    inert = end - start == 1 and ord(segment) in _UNKNOWN_TO_NORMALIZATION
    normalized = segment if inert else unicodedata.normalize(form, segment)
    out.append(normalized)
    # characters the segment starts with and keeps keep their own spans ("a" in
    # "a" + U+0344 -> "a" + U+0308 U+0301); the rest share the span of what they replace
    same = 0
    while (
        same < min(len(segment), len(normalized)) and segment[same] == normalized[same]
    ):
        same += 1
    spans.extend(piece.spans[start : start + same])
    if same < len(normalized):
        spans.extend([piece[start + same : end].span] * (len(normalized) - same))


@dataclass(frozen=True)
class _UnicodeForm:
    form: ClassVar[str] = "NFC"

    def normalize(self, piece: Piece) -> Piece:
        return _normalize_form(piece, self.form)


@dataclass(frozen=True)
class NFC(_UnicodeForm):
    """Canonical composition: ``"e" + U+0301`` → ``"é"`` (both get the span of the two).

    >>> NFC().normalize(Piece.of("e\\u0301!")).spans
    [(0, 2), (2, 3)]
    """

    form: ClassVar[str] = "NFC"


@dataclass(frozen=True)
class NFD(_UnicodeForm):
    """Canonical decomposition: ``"é"`` → ``"e" + U+0301``, both from the one original char.

    >>> NFD().normalize(Piece.of("é")).spans
    [(0, 1), (0, 1)]
    """

    form: ClassVar[str] = "NFD"


@dataclass(frozen=True)
class NFKC(_UnicodeForm):
    """Compatibility composition: ``"ﬁ"`` → ``"fi"``, ``"Ａ"`` → ``"A"``, ``"①"`` → ``"1"``.

    >>> NFKC().normalize(Piece.of("ﬁ")).text
    'fi'
    """

    form: ClassVar[str] = "NFKC"


@dataclass(frozen=True)
class NFKD(_UnicodeForm):
    """Compatibility decomposition (NFKC without recomposing accents).

    >>> NFKD().normalize(Piece.of("ﬁé")).text == "fie\\u0301"
    True
    """

    form: ClassVar[str] = "NFKD"


# ---------------------------------------------------------------------------------------------
# Character-by-character normalizers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lowercase:
    """Rust's ``to_lowercase``, character by character: ``"İ"`` becomes ``"i̇"`` (two chars).

    >>> Lowercase().normalize(Piece.of("ÀΣ")).text
    'àσ'
    """

    def normalize(self, piece: Piece) -> Piece:
        # fast path: without these, Python's whole-string lower() maps one char to one char,
        # exactly as Rust does it char by char
        if _LOWERCASE_SLOW.search(piece.text) is None:
            return Piece(piece.text.lower(), piece.spans)
        return piece.map_chars(_lowercase)


@dataclass(frozen=True)
class Strip:
    """Remove whitespace (Rust's definition) from the start and/or end.

    >>> Strip(left=True, right=False).normalize(Piece.of("  a ")).text
    'a '
    """

    _: KW_ONLY
    left: bool = True
    right: bool = True

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        start, end = 0, len(text)
        while self.left and start < end and text[start] in _WHITESPACE:
            start += 1
        while self.right and end > start and text[end - 1] in _WHITESPACE:
            end -= 1
        return piece[start:end]


@dataclass(frozen=True)
class StripAccents:
    """Drop combining marks (Mn, Mc, Me). Alone it strips nothing from ``"é"``: put ``NFD``
    first so accents become separate marks.

    >>> StripAccents().normalize(NFD().normalize(Piece.of("café"))).text
    'cafe'
    """

    def normalize(self, piece: Piece) -> Piece:
        return piece.map_chars(lambda ch: "" if _is_combining_mark(ch) else ch)


@dataclass(frozen=True)
class Prepend:
    """Put ``prepend`` in front of the text, unless the text is empty (Llama 2 adds ``"▁"``).

    >>> Prepend("▁").normalize(Piece.of("")).text, Prepend("▁").normalize(Piece.of("a")).text
    ('', '▁a')
    """

    prepend: str

    def normalize(self, piece: Piece) -> Piece:
        return piece.prepend(self.prepend) if piece.text else piece


@dataclass(frozen=True)
class Replace:
    """Replace every match of ``pattern`` by ``content``; the content covers the whole match
    (an empty match: the empty span where it was).

    >>> out = Replace(Pattern.string("ab"), "X").normalize(Piece.of("zab"))
    >>> out.text, out.spans
    ('zX', [(0, 1), (1, 3)])
    """

    pattern: Pattern
    content: str

    def normalize(self, piece: Piece) -> Piece:
        matches = self.pattern.matches(piece.text)
        if not matches:
            return piece
        text: list[str] = []
        spans: list[Span] = []
        last = 0
        for start, end in matches:
            text.append(piece.text[last:start])
            spans.extend(piece.spans[last:start])
            text.append(self.content)
            spans.extend([piece.span_of(start, end)] * len(self.content))
            last = end
        text.append(piece.text[last:])
        spans.extend(piece.spans[last:])
        return Piece("".join(text), spans)


@dataclass(frozen=True)
class BertNormalizer:
    """BERT's normalizer, in Hugging Face's order: clean the text (drop NUL, U+FFFD and
    control characters; every whitespace becomes ``" "``), put spaces around CJK ideographs,
    strip accents (NFD, then drop Mn marks; by default whenever ``lowercase``), lower-case.

    >>> out = BertNormalizer().normalize(Piece.of("Héllo\\t中!"))
    >>> out.text
    'hello  中 !'
    >>> out.spans[5:9]           # the inserted spaces get empty spans
    [(5, 6), (6, 6), (6, 7), (7, 7)]
    """

    _: KW_ONLY
    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: bool | None = None
    lowercase: bool = True

    def normalize(self, piece: Piece) -> Piece:
        if self.clean_text:
            piece = piece.map_chars(_bert_clean)
        if self.handle_chinese_chars and not piece.text.isascii():
            piece = _space_out_cjk(piece)
        if self.lowercase if self.strip_accents is None else self.strip_accents:
            piece = NFD().normalize(piece)
            piece = piece.map_chars(lambda ch: "" if _is_nonspacing_mark(ch) else ch)
        if self.lowercase:
            piece = Lowercase().normalize(piece)
        return piece


def _bert_clean(ch: str) -> str:
    if ch in "\x00\ufffd" or _is_control(ch):
        return ""
    return " " if ch in _WHITESPACE else ch


def _space_out_cjk(piece: Piece) -> Piece:
    text: list[str] = []
    spans: list[Span] = []
    for ch, (start, end) in zip(piece.text, piece.spans):
        if _is_chinese_char(ch):
            text.append(f" {ch} ")
            spans.extend([(start, start), (start, end), (end, end)])
        else:
            text.append(ch)
            spans.append((start, end))
    return Piece("".join(text), spans)


@dataclass(frozen=True)
class Nmt:
    """The NMT normalizer: drop some control characters, turn others (and ZW spaces, U+2581,
    U+FEFF, U+FFFD) into a plain space.

    >>> Nmt().normalize(Piece.of("a\\x01\\u200bb")).text
    'a b'
    """

    def normalize(self, piece: Piece) -> Piece:
        return piece.map_chars(_nmt_char)


_NMT_DROP = frozenset(
    [chr(c) for c in range(0x01, 0x09)] + ["\x0b"] + [chr(c) for c in range(0x0E, 0x20)]
    + ["\x7f", "\x8f", "\x9f"]
)  # fmt: skip
_NMT_SPACE = frozenset(
    "\t\n\x0c\r\u1680\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u2581\ufeff\ufffd"
)


def _nmt_char(ch: str) -> str:
    if ch in _NMT_DROP:
        return ""
    return " " if ch in _NMT_SPACE else ch


@dataclass(frozen=True)
class ByteLevel:
    """Spell each character as GPT-2's byte characters (``" "`` → ``"Ġ"``, ``"é"`` → ``"Ã©"``).

    >>> ByteLevel().normalize(Piece.of(" é")).text
    'ĠÃ©'
    """

    def normalize(self, piece: Piece) -> Piece:
        return piece.map_chars(byte_level_chars)


@lru_cache(maxsize=8192)  # bounded: one entry per distinct character
def byte_level_chars(ch: str) -> str:
    """``ch``'s UTF-8 bytes through GPT-2's byte map (shared with the ByteLevel pre-tokenizer).

    >>> byte_level_chars("中")
    'ä¸Ń'
    """
    table = bytes_to_unicode()
    return "".join(table[b] for b in ch.encode("utf-8"))


@dataclass(frozen=True)
class Sequence:
    """Apply ``normalizers`` in order; an empty sequence leaves the text alone.

    >>> Sequence((NFKC(), Lowercase())).normalize(Piece.of("ＡＢ")).text
    'ab'
    """

    normalizers: tuple[Normalizer, ...] = ()

    def normalize(self, piece: Piece) -> Piece:
        for normalizer in self.normalizers:
            piece = normalizer.normalize(piece)
        return piece


# ---------------------------------------------------------------------------------------------
# tokenizer.json
# ---------------------------------------------------------------------------------------------

_REQUIRED: Any = object()
_KIND_NAMES = {bool: "true or false", str: "a string", int: "a whole number", list: "a list",
               dict: "an object", type(None): "null"}  # fmt: skip


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def read_field(
    obj: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    *,
    where: str,
    default: Any = _REQUIRED,
) -> Any:
    """``obj[key]``, checked to be of ``kind`` (``default`` when absent, if one is given).

    >>> read_field({"a": True}, "a", bool, where="x")
    True
    >>> read_field({"a": 1}, "a", bool, where="tokenizer.json: normalizer 'Strip'")
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tokenizer.json: normalizer 'Strip': field 'a' should be true or false, not 1
    """
    if key not in obj:
        if default is _REQUIRED:
            raise FormatError(
                f"{where}: the field {key!r} is missing (Hugging Face requires it too, so the "
                "file is damaged or was written by hand)"
            )
        return default
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # subtle: JSON true is a Python int too; only accept it where a bool is expected
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise FormatError(
            f"{where}: field {key!r} should be {expected}, not {_show(value)}"
        )
    return value


def _precompiled(obj: Mapping[str, Any], name: str) -> Normalizer:
    # subtle: Hugging Face itself panics on an empty charsmap; SentencePiece reads an empty one
    # as "no normalization", which is what we do
    if obj.get("precompiled_charsmap") in (None, ""):
        return Sequence(())
    raise FormatError(
        f"{name}: normalizer type 'Precompiled' (SentencePiece's compiled "
        f"normalization table, used by T5, ALBERT, XLM-RoBERTa...) is not supported yet "
        f"(supported: {', '.join(sorted(_FROM_JSON))})"
    )


def _sequence(obj: Mapping[str, Any], where: str) -> Normalizer:
    items = read_field(obj, "normalizers", list, where=where)
    return Sequence(
        tuple(
            n
            for i, item in enumerate(items)
            if (n := normalizer_from_json(item, name=f"{where}, item {i + 1}"))
            is not None
        )
    )


def _bert(obj: Mapping[str, Any], where: str) -> Normalizer:
    return BertNormalizer(
        clean_text=read_field(obj, "clean_text", bool, where=where),
        handle_chinese_chars=read_field(obj, "handle_chinese_chars", bool, where=where),
        strip_accents=read_field(obj, "strip_accents", (bool, type(None)), where=where),
        lowercase=read_field(obj, "lowercase", bool, where=where),
    )


_FROM_JSON: dict[str, Callable[[Mapping[str, Any], str], Normalizer]] = {
    "BertNormalizer": _bert,
    "ByteLevel": lambda obj, where: ByteLevel(),
    "Lowercase": lambda obj, where: Lowercase(),
    "NFC": lambda obj, where: NFC(),
    "NFD": lambda obj, where: NFD(),
    "NFKC": lambda obj, where: NFKC(),
    "NFKD": lambda obj, where: NFKD(),
    "Nmt": lambda obj, where: Nmt(),
    "Prepend": lambda obj, where: Prepend(read_field(obj, "prepend", str, where=where)),
    "Replace": lambda obj, where: Replace(
        Pattern.from_json(read_field(obj, "pattern", dict, where=where), where=where),
        read_field(obj, "content", str, where=where),
    ),
    "Sequence": _sequence,
    "Strip": lambda obj, where: Strip(
        left=read_field(obj, "strip_left", bool, where=where),
        right=read_field(obj, "strip_right", bool, where=where),
    ),
    "StripAccents": lambda obj, where: StripAccents(),
}


def normalizer_from_json(
    obj: Any, *, name: str = "tokenizer.json"
) -> Normalizer | None:
    """The normalizer a ``tokenizer.json`` describes (its ``"normalizer"`` value); None for null.

    >>> normalizer_from_json({"type": "Sequence", "normalizers": [{"type": "NFKC"}]})
    Sequence(normalizers=(NFKC(),))
    >>> normalizer_from_json({"type": "Precompiled", "precompiled_charsmap": "AAA"})
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tokenizer.json: normalizer type 'Precompiled' (SentencePiece's compiled normalization table, used by T5, ALBERT, XLM-RoBERTa...) is not supported yet (supported: BertNormalizer, ByteLevel, Lowercase, NFC, NFD, NFKC, NFKD, Nmt, Prepend, Replace, Sequence, Strip, StripAccents)
    """
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise FormatError(
            f"{name}: a normalizer should be a JSON object or null, not {_show(obj)}"
        )
    kind = obj.get("type")
    if kind == "Precompiled":
        return _precompiled(obj, name)
    return build_from_table(obj, _FROM_JSON, stage="normalizer", name=name)


def build_from_table(
    obj: dict[str, Any], table: dict[str, Callable[[dict[str, Any], str], Any]], *,
    stage: str, name: str,
) -> Any:
    """The component ``table[obj["type"]]`` builds (normalizer, pre-tokenizer, decoder), or
    a :class:`FormatError` naming the type and listing the supported ones."""
    kind = obj.get("type")
    build = table.get(kind) if isinstance(kind, str) else None
    if build is None:
        raise FormatError(
            f"{name}: {stage} type {kind!r} is not supported yet "
            f"(supported: {', '.join(sorted(table))})"
        )
    return build(obj, f"{name}: {stage} {kind!r}")


# ---------------------------------------------------------------------------------------------
# Unicode tables of the crates tokenizers is built from, where they differ from Python 3.11's
# unicodedata (Unicode 14.0) and the regex module. Ranges of hex code points. The tests in
# tests/pipeline compare each with tokenizers over every code point and print a fresh table
# if one is wrong (e.g. after a tokenizers, regex or Python upgrade).
# ---------------------------------------------------------------------------------------------


def code_points(ranges: str) -> frozenset[int]:
    """``"0041-0043 00E9"`` → {0x41, 0x42, 0x43, 0xE9}.

    >>> sorted(code_points("0041-0043 00E9"))
    [65, 66, 67, 233]
    """
    out: set[int] = set()
    for item in ranges.split():
        lo, _, hi = item.partition("-")
        out.update(range(int(lo, 16), int(hi or lo, 16) + 1))
    return frozenset(out)


def ranges_class(ranges: str) -> str:
    """A regex character class for ``ranges`` (same format as :func:`code_points`)."""
    parts = []
    for item in ranges.split():
        lo, _, hi = item.partition("-")
        parts.append(f"\\U{int(lo, 16):08x}" + (f"-\\U{int(hi, 16):08x}" if hi else ""))
    return "[" + "".join(parts) + "]"


#: Characters the normalization tables of ``tokenizers`` (Unicode ~12) do not know, though
#: Python's do: for NFC/NFD/NFKC/NFKD they have no decomposition and never combine.
_UNKNOWN_TO_NORMALIZATION = code_points(
    "07FD 0898-089F 08CA-08D3 09FE 0C3C 0D3B-0D3C 0EBA 1715 1ABF-1ACE 1DF6-1DFA 32FF "
    "A7F2-A7F4 A82C AB69 10781-10785 10787-107B0 107B2-107BA 10D24-10D27 10EAB-10EAC "
    "10F46-10F50 10F82-10F85 11070 1133B 1145E 11839-1183A 11930 11935 11938 1193D-1193E "
    "11943 119E0 11A34 11A47 11A99 11D42 11D44-11D45 11D97 16FF0-16FF1 1E130-1E136 1E2AE "
    "1E2EC-1E2EF 1F16C 1FBF0-1FBF9"
)

#: Where "is a combining mark (M)" for ``StripAccents`` differs from Python's answer.
_COMBINING_MARK_FLIPS = code_points(
    "07FD 0898-089F 08CA-08D3 09FE 0AFA-0AFF 0B55 0C04 0C3C 0D00 0D3B-0D3C 0D81 0EBA 1715 "
    "180F 1ABF-1ACE 1CF2-1CF3 1CF7 1DF6-1DFA A82C A8FF 10D24-10D27 10EAB-10EAC 10F46-10F50 "
    "10F82-10F85 11070 11073-11074 110C2 11145-11146 111C9 111CE-111CF 1133B 1145E "
    "1182C-1183A 11930-11935 11937-11938 1193B-1193E 11940 11942-11943 119D1-119D7 "
    "119DA-119E0 119E4 11A01-11A0A 11A33-11A39 11A3B-11A3E 11A47 11A51-11A5B 11A8A-11A99 "
    "11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 11D8A-11D8E 11D90-11D91 11D93-11D97 "
    "11EF3-11EF6 16F4F 16F7F-16F87 16FE4 16FF0-16FF1 1CF00-1CF2D 1CF30-1CF46 1E130-1E136 "
    "1E2AE 1E2EC-1E2EF"
)

#: Where "is a nonspacing mark (Mn)" for BERT's accent stripping differs from Python's.
_NONSPACING_MARK_FLIPS = code_points(
    "07FD 0898-089F 08CA-08E1 09FE 0AFA-0AFF 0B55 0C04 0C3C 0D00 0D3B-0D3C 0D81 0EBA 1734 "
    "180F 1885-1886 1ABF-1ACE 1DF6-1DFB A82C A8C5 A8FF A9BD 10D24-10D27 10EAB-10EAC "
    "10F46-10F50 10F82-10F85 11070 11073-11074 110C2 111C9 111CF 1123E 1133B 11438-1143F "
    "11442-11444 11446 1145E 1182F-11837 11839-1183A 1193B-1193C 1193E 11943 119D4-119D7 "
    "119DA-119DB 119E0 11A01-11A0A 11A33-11A38 11A3B-11A3E 11A47 11A51-11A56 11A59-11A5B "
    "11A8A-11A96 11A98-11A99 11C30-11C36 11C38-11C3D 11C3F 11C92-11CA7 11CAA-11CB0 "
    "11CB2-11CB3 11CB5-11CB6 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 11D90-11D91 "
    "11D95 11D97 11EF3-11EF4 16F4F 16FE4 1CF00-1CF2D 1CF30-1CF46 1E000-1E006 1E008-1E018 "
    "1E01B-1E021 1E023-1E024 1E026-1E02A 1E130-1E136 1E2AE 1E2EC-1E2EF 1E944-1E94A"
)

#: Where "is a control character (Cc/Cf/Co)" for BERT's text cleaning differs from Python's.
_CONTROL_FLIPS = code_points("0890-0891 08E2 110CD 13430-13438")

#: Rust's lower-case mappings (Unicode 16) that Python 3.11's tables do not have yet.
_LOWERCASE_EXTRA: dict[str, str] = {
    "\u1c89": "\u1c8a", "\ua7cb": "\u0264", "\ua7cc": "\ua7cd", "\ua7ce": "\ua7cf",
    "\ua7d2": "\ua7d3", "\ua7d4": "\ua7d5", "\ua7da": "\ua7db", "\ua7dc": "\u019b",
    **{chr(cp): chr(cp + 0x20) for cp in range(0x10D50, 0x10D66)},
    **{chr(cp): chr(cp + 0x1B) for cp in range(0x16EA0, 0x16EB9)},
}  # fmt: skip

#: Characters the ``regex`` module's Unicode (17) assigns but Oniguruma's and Rust's regex
#: crate's (16) do not: to those engines they are unassigned (see :func:`as_unicode_16`).
NEWER_THAN_ONIG_RANGES = (
    "0558 058B-058C 05C8-05C9 088F 0B53-0B54 0C5C 0CDC 1ACF-1AF0 208F 209D-209F 20C1-20C4 "
    "2B96 2E60-2E63 A7CE-A7CF A7D2 A7D4 A7DD A7E2 A7F1 AB6C-AB6D FBC3-FBD2 FD90-FD91 "
    "FDC8-FDCE 107BB-107BF 10940-10959 10EC5-10EC7 10EC9-10EEE 10EF0-10EFB 11B0A "
    "11B60-11B67 11DB0-11DDB 11DE0-11DE9 11DF0-11DF1 1246F 12475-1247F 12550-12686 "
    "16EA0-16EB8 16EBB-16ED3 16FF2-16FF6 187F8-187FF 18CD6-18CDA 18D09-18D20 18D80-18DF2 "
    "18E00-19191 191A0-191D2 1B123-1B128 1B168 1CCFA-1CCFC 1CEBA-1CED0 1CED2-1CED4 "
    "1CEDD-1CEFD 1D127-1D128 1D1EB-1D1FF 1D250-1D281 1D6A6 1DB00-1DB1C 1DF1F-1DF24 "
    "1DF2B-1DF81 1DF90-1DF96 1DFCD-1DFFF 1E6C0-1E6DE 1E6E0-1E6F5 1E6FE-1E6FF 1F1AE "
    "1F6D8-1F6D9 1F777-1F77A 1F7DA-1F7DB 1F7F1-1F7FF 1F8D0-1F8D8 1FA54-1FA57 1FA8A-1FA8E "
    "1FAC8 1FACC-1FACD 1FADD 1FAEA-1FAEB 1FAEF 1FAF9-1FAFA 1FBFA 2B73A-2B73F 2B81E "
    "2CEA2-2CEAD 323B0-33479 3D000-3FC3F"
)
#: Characters whose general category changed in the ``regex`` module's Unicode, to one that
#: has their Unicode 16 category (and script, and no case).
_RECATEGORIZED = {"\u0295": "\u0296"}
_NEWER_THAN_UNICODE_16 = regex.compile(
    ranges_class(NEWER_THAN_ONIG_RANGES) + "|" + "|".join(_RECATEGORIZED)
)

#: Where Python's ``str.lower`` on a whole string differs from Rust's per-character mapping:
#: final sigma (``"ΑΣ"`` → ``"ας"`` in Python), ``"İ"`` (two characters) and the extra pairs.
_LOWERCASE_SLOW = regex.compile(
    "[" + regex.escape("\u03a3\u0130" + "".join(_LOWERCASE_EXTRA)) + "]"
)

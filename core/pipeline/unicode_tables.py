"""Unicode as the crates behind ``tokenizers`` see it: character tests, their tables, and
the normalization forms computed in segments so that spans stay meaningful.

``tokenizers`` is built from Rust crates with their own Unicode tables: its normalization
forms and ``StripAccents`` use tables from around Unicode 12, its Bert normalizer a
general-category table from around Unicode 8, lower-casing Rust's own (Unicode 16), its
regexes Oniguruma's (Unicode 16). Python 3.11's ``unicodedata`` is Unicode 14 and the
``regex`` module is newer still. The small tables at the end of this module record, code
point by code point, where those differ, so that even characters the crates do not know yet
behave as in Hugging Face. The tests compare every table with ``tokenizers`` over all of
Unicode.

>>> is_whitespace("\u3000"), is_chinese_char("中"), lowercase_char("Σ")
(True, True, 'σ')
>>> normalize_form(Piece.of("e\u0301!"), "NFC").spans   # "é" covers both characters
[(0, 2), (2, 3)]
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from functools import lru_cache
from operator import itemgetter
from typing import Literal

from core.engine.regex_compat import compile_held, regex
from core.pipeline.piece import Piece, Span

__all__ = [
    "Form",
    "LOWERCASE_SLOW",
    "NEWER_THAN_ONIG_RANGES",
    "NEWER_THAN_UNICODE_16",
    "has_newer_than_unicode_16",
    "sub_newer_than_unicode_16",
    "RECATEGORIZED",
    "WHITESPACE",
    "code_points",
    "is_chinese_char",
    "is_combining_mark",
    "is_control",
    "is_nonspacing_mark",
    "is_whitespace",
    "lowercase_char",
    "normalize_form",
    "normalize_form_text",
    "ranges_class",
]

#: A Unicode normalization form, as :func:`unicodedata.normalize` names it.
Form = Literal["NFC", "NFD", "NFKC", "NFKD"]

# ---------------------------------------------------------------------------------------------
# Character classes, as Rust and the crates ``tokenizers`` uses define them
# ---------------------------------------------------------------------------------------------

#: Rust's ``char::is_whitespace``: the Unicode ``White_Space`` property (25 code points).
#: subtle: not Python's ``str.isspace``, which adds U+001C..U+001F.
WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def is_whitespace(ch: str) -> bool:
    """Rust's ``char::is_whitespace`` (``White_Space``), which Hugging Face uses everywhere.

    >>> is_whitespace("\\u3000"), is_whitespace("\\x1c")
    (True, False)
    """
    return ch in WHITESPACE


def is_control(ch: str) -> bool:
    """BERT's "control character": general category Cc/Cf/Co (in the crate's tables), except
    the tab and line breaks, which are whitespace to BERT."""
    if ch in "\t\n\r":
        return False
    other = unicodedata.category(ch) in ("Cc", "Cf", "Co")
    return other != (ord(ch) in _CONTROL_FLIPS)


def is_chinese_char(ch: str) -> bool:
    """The CJK ideograph blocks BERT isolates (not Hangul, kana or CJK punctuation)."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_BLOCKS)


_CJK_BLOCKS = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip


def is_nonspacing_mark(ch: str) -> bool:
    """General category Mn, in the (older) tables of the crate BERT's accent stripping uses."""
    return (unicodedata.category(ch) == "Mn") != (ord(ch) in _NONSPACING_MARK_FLIPS)


def is_combining_mark(ch: str) -> bool:
    """General category M (Mn, Mc, Me), in the tables ``StripAccents`` uses."""
    return unicodedata.category(ch).startswith("M") != (
        ord(ch) in _COMBINING_MARK_FLIPS
    )


def lowercase_char(ch: str) -> str:
    """Rust's ``char::to_lowercase``: Python's per-character mapping, plus Unicode 15/16 pairs.

    subtle: per character, so a final ``Σ`` becomes ``σ`` (Python's ``str.lower`` on a
    whole word would give ``ς``).
    """
    return _LOWERCASE_EXTRA.get(ch) or ch.lower()


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
def _starts_segment(ch: str, form: Form) -> bool:
    """Whether normalizing under ``form`` can restart at ``ch``: nothing before ``ch`` can be
    reordered past it or combine with it (UAX #15's "stable" boundary, slightly conservative).
    """
    if ord(ch) in _UNKNOWN_TO_NORMALIZATION:
        return True
    first = unicodedata.normalize("NFKD" if "K" in form else "NFD", ch)[0]
    if unicodedata.combining(first):
        return False
    return form in ("NFD", "NFKD") or first not in _composition_seconds()


def _is_cut(text: str, i: int, form: Form) -> bool:
    """Whether normalization under ``form`` can restart at ``text[i]``; characters
    ``tokenizers`` does not know yet stand alone (to it they are unassigned: no
    decomposition, never combined or reordered)."""
    return ord(text[i - 1]) in _UNKNOWN_TO_NORMALIZATION or _starts_segment(
        text[i], form
    )


def _normalization_segments(text: str, form: Form) -> list[tuple[int, int]]:
    """Cut ``text`` wherever ``form`` can restart.

    >>> _normalization_segments("ae\\u0301\\u0323b", "NFC")
    [(0, 1), (1, 4), (4, 5)]
    """
    cuts = [i for i in range(1, len(text)) if _is_cut(text, i, form)]
    return list(zip([0, *cuts], [*cuts, len(text)])) if text else []


def normalize_form(piece: Piece, form: Form) -> Piece:
    """``piece`` under a Unicode normalization form, as the ``tokenizers`` crate computes it."""
    if unicodedata.is_normalized(
        form, piece.text
    ):  # fast path: nothing to do (most text)
        return piece
    out: list[str] = []
    spans: list[Span] = []
    _normalize_range(piece, form, 0, len(piece.text), out, spans)
    return Piece("".join(out), spans)


def normalize_form_text(text: str, form: Form) -> str:
    """``normalize_form(Piece.of(text), form).text``, without spans: the characters
    ``tokenizers`` does not know yet stand alone (each is a segment of its own) and the
    text between them is normalized whole, since it is cut only where ``form`` restarts.

    >>> normalize_form_text("e\\u0301e\\u0898\\u0301", "NFC") == "\\xe9e\\u0898\\u0301"
    True
    """
    if unicodedata.is_normalized(form, text):
        return text
    if not any(map(_UNKNOWN_TO_NORMALIZATION.__contains__, map(ord, text))):
        return unicodedata.normalize(form, text)
    out: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        if ord(ch) in _UNKNOWN_TO_NORMALIZATION:
            out.append(unicodedata.normalize(form, text[start:i]))
            out.append(ch)
            start = i + 1
    out.append(unicodedata.normalize(form, text[start:]))
    return "".join(out)


def _normalize_range(
    piece: Piece, form: Form, lo: int, hi: int, out: list[str], spans: list[Span]
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
    piece: Piece, form: Form, start: int, end: int, out: list[str], spans: list[Span]
) -> None:
    segment = piece.text[start:end]
    inert = end - start == 1 and ord(segment) in _UNKNOWN_TO_NORMALIZATION
    if not inert and form in ("NFD", "NFKD"):
        _decompose_segment(piece[start:end], form, out, spans)
        return
    normalized = segment if inert else unicodedata.normalize(form, segment)
    out.append(normalized)
    # composition (NFC/NFKC): characters the segment starts with and keeps keep their own
    # spans ("a" in "a" + U+0344 -> "a" + U+0308 U+0301); the rest share the span of what
    # they replace, on purpose: a composed "é" covers the "e" and the accent it absorbed
    same = 0
    while (
        same < min(len(segment), len(normalized)) and segment[same] == normalized[same]
    ):
        same += 1
    spans.extend(piece.spans[start : start + same])
    if same < len(normalized):
        spans.extend([piece[start + same : end].span] * (len(normalized) - same))


def _decompose_segment(
    piece: Piece, form: Form, out: list[str], spans: list[Span]
) -> None:
    """Decompose ``piece`` (one segment) with Hugging Face's alignments, exactly.

    ``tokenizers`` decomposes with the ``unicode-normalization-alignments`` crate: each
    character's first output char "replaces" it, the others are "inserted" after it; marks
    are then sorted by combining class, the tags travelling with them. The spans are handed
    out by position: a "replacing" char takes the next original char's span, an "inserted"
    one the span of the original char consumed last. So the letter of ``"Ù" + U+07EB``
    keeps ``"Ù"``'s span alone, and the mark it loses under ``BertNormalizer`` takes no span
    with it (composition forms keep the whole segment's span: see ``_normalize_segment``).

    >>> out, spans = [], []
    >>> _decompose_segment(Piece.of("\u00d9\u07eb"), "NFD", out, spans)
    >>> spans
    [(0, 1), (0, 1), (1, 2)]
    >>> out, spans = [], []         # U+0315 (class 232) sorts after U+0301 (230)
    >>> _decompose_segment(Piece.of("\u00e9\u0315\u0301"), "NFD", out, spans)
    >>> "".join(out) == "e\u0301\u0301\u0315", spans
    (True, [(0, 1), (0, 1), (1, 2), (2, 3)])
    """
    # (combining class, char, replaces an original char) in text order
    items = [
        (unicodedata.combining(d), d, i == 0)
        for ch in piece.text
        for i, d in enumerate(unicodedata.normalize(form, ch))
    ]
    # subtle: the crate sorts each run of marks (class > 0) stably, not the whole segment
    run = 0
    for k in range(len(items) + 1):
        if k == len(items) or items[k][0] == 0:
            items[run:k] = sorted(items[run:k], key=itemgetter(0))
            run = k + 1
    consumed = 0
    for _, ch, replaces in items:
        if replaces:
            consumed += 1
        out.append(ch)
        spans.append(piece.spans[max(consumed - 1, 0)])


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
RECATEGORIZED = {"\u0295": "\u0296"}
NEWER_THAN_UNICODE_16 = regex.compile(
    ranges_class(NEWER_THAN_ONIG_RANGES) + "|" + "|".join(RECATEGORIZED)
)


def _newer_than_unicode_16_check() -> tuple[re.Pattern[str], list[int]]:
    """:data:`NEWER_THAN_UNICODE_16`'s characters: those in the BMP as a standard ``re``
    class (a bitmap, ~4 ns a character; the ``regex`` module walks the ranges, ~250 ns:
    0.5 s for 2 MB), the others as the sorted bounds of their ranges (``[lo, hi + 1, ...]``:
    a character is in one when :func:`bisect.bisect_right` of it is odd), tested only on
    the few characters beyond the BMP a text has (a ``re`` class of astral ranges is
    walked, as the ``regex`` module's)."""
    bmp, bounds = [], []
    for item in (NEWER_THAN_ONIG_RANGES + " " + " ".join(f"{ord(c):04X}" for c in RECATEGORIZED)).split():
        lo, _, hi = item.partition("-")
        if int(hi or lo, 16) <= 0xFFFF:
            bmp.append(item)
        else:
            bounds += [int(lo, 16), int(hi or lo, 16) + 1]
    return re.compile(ranges_class(" ".join(bmp))), sorted(bounds)


_NEWER_BMP, _NEWER_ASTRAL_BOUNDS = _newer_than_unicode_16_check()
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _is_newer_astral(ch: str) -> bool:
    return bisect_right(_NEWER_ASTRAL_BOUNDS, ord(ch)) % 2 == 1


def has_newer_than_unicode_16(text: str) -> bool:
    """Whether :data:`NEWER_THAN_UNICODE_16` matches somewhere in ``text``, quickly: the
    BMP class, then each character beyond the BMP (emoji, mostly) on its own.

    >>> has_newer_than_unicode_16("abc \u0295"), has_newer_than_unicode_16("a \U0001f600")
    (True, False)
    """
    if _NEWER_BMP.search(text) is not None:
        return True
    return any(map(_is_newer_astral, _ASTRAL.findall(text)))


def sub_newer_than_unicode_16(repl: Callable[[str], str], text: str) -> str:
    """``NEWER_THAN_UNICODE_16.sub(lambda m: repl(m.group()), text)`` as
    :func:`has_newer_than_unicode_16` finds them (each match is one character): the BMP
    class's matches, then each character beyond the BMP that is newer.

    >>> sub_newer_than_unicode_16(lambda c: "?", "a\u0295\U0001fac8\U0001f600") == "a??\U0001f600"
    True
    """
    text = _NEWER_BMP.sub(lambda m: repl(m.group()), text)
    if _ASTRAL.search(text) is None:
        return text
    return _ASTRAL.sub(lambda m: repl(c) if _is_newer_astral(c := m.group()) else c, text)

#: Where Python's ``str.lower`` on a whole string differs from Rust's per-character mapping:
#: final sigma (``"ΑΣ"`` → ``"ας"`` in Python), ``"İ"`` (two characters) and the extra pairs.
LOWERCASE_SLOW = compile_held(
    "[" + regex.escape("\u03a3\u0130" + "".join(_LOWERCASE_EXTRA)) + "]"
)

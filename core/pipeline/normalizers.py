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
- NFC/NFKC compose in segments (a starter and the marks that go with it) and every
  character a changed segment produces gets the whole segment's span, so ``"é"`` composed
  from ``"e" + U+0301`` covers both original characters (Hugging Face gives it the ``"e"``
  only). A ``Replace`` match gives its content the span of the whole match.

NFD/NFKD give exactly Hugging Face's alignments: a decomposed letter keeps its own span, so
when ``StripAccents`` or ``BertNormalizer`` then drops marks (as every normalizer that
removes characters does, Hugging Face's ``filter``), what is left keeps its own span and the
removed characters' spans go with them: ``"Ù" + U+07EB`` → ``"u"`` from ``"Ù"`` alone.

Unicode versions: ``tokenizers`` uses the Unicode tables of its Rust crates, older or newer
than Python's; :mod:`core.pipeline.unicode_tables` records where they differ, so that even
characters the crates do not know yet behave as in Hugging Face. :class:`Pattern` lives in
:mod:`core.pipeline.pattern`, the checked ``tokenizer.json`` fields in
:mod:`core.pipeline.json_fields`.

Each class also has ``normalize_str(text) -> str``, the same text without spans, for
encoding to IDs only: ``n.normalize_str(t) == n.normalize(Piece.of(t)).text`` always.
Character-by-character rules run there as ``str.translate`` through a :class:`CharTable`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from functools import lru_cache
from typing import Any, ClassVar, Protocol

from core.engine.bytes_unicode import bytes_to_unicode
from core.errors import FormatError
from core.pipeline.json_fields import build_from_table, read_field, show
from core.pipeline.pattern import Pattern
from core.pipeline.piece import Piece, Span
from core.pipeline.unicode_tables import (
    LOWERCASE_SLOW,
    WHITESPACE,
    Form,
    is_chinese_char,
    is_combining_mark,
    is_control,
    is_nonspacing_mark,
    lowercase_char,
    normalize_form,
    normalize_form_text,
)

__all__ = [
    "NFC",
    "NFD",
    "NFKC",
    "NFKD",
    "BertNormalizer",
    "ByteLevel",
    "Lowercase",
    "Nmt",
    "Normalizer",
    "Prepend",
    "Replace",
    "Sequence",
    "CharTable",
    "Strip",
    "StripAccents",
    "byte_level_chars",
    "byte_level_text",
    "normalize_text",
    "normalizer_from_json",
]


class Normalizer(Protocol):
    """One normalization step: a piece of text in, the rewritten piece out (the classes
    here also have ``normalize_str``, optional in this protocol)."""

    def normalize(self, piece: Piece) -> Piece: ...


class CharTable(dict):
    """A ``str.translate`` table of ``fn`` (one character -> its replacement, ``""`` to drop
    it), filled in as characters are met: ``text.translate(table)`` then runs in C for
    every character seen before. Bounded: cleared when full (``fn`` is pure, so a table
    can be shared by every tokenizer).

    >>> table = CharTable(lambda ch: "" if ch == "x" else ch.upper())
    >>> "axb".translate(table), sorted(table)
    ('AB', [97, 98, 120])
    """

    __slots__ = ("_fn",)
    _MAX = 1 << 16

    def __init__(self, fn: Callable[[str], str]) -> None:
        super().__init__()
        self._fn = fn

    def __missing__(self, code_point: int) -> str:
        out = self._fn(chr(code_point))
        if len(self) >= self._MAX:
            self.clear()
        self[code_point] = out
        return out


def normalize_text(normalizer: Normalizer, text: str) -> str:
    """``normalizer``'s text for ``text``: its ``normalize_str`` if it has one, else the
    :class:`Piece` path (a normalizer's text never depends on the spans it is given).

    >>> normalize_text(Lowercase(), "ÀB")
    'àb'
    """
    fast = getattr(normalizer, "normalize_str", None)
    return fast(text) if fast is not None else normalizer.normalize(Piece.of(text)).text


@dataclass(frozen=True)
class _UnicodeForm:
    form: ClassVar[Form] = "NFC"

    def normalize(self, piece: Piece) -> Piece:
        return normalize_form(piece, self.form)

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        return normalize_form_text(text, self.form)


@dataclass(frozen=True)
class NFC(_UnicodeForm):
    """Canonical composition: ``"e" + U+0301`` → ``"é"`` (both get the span of the two).

    >>> NFC().normalize(Piece.of("e\\u0301!")).spans
    [(0, 2), (2, 3)]
    """

    form: ClassVar[Form] = "NFC"


@dataclass(frozen=True)
class NFD(_UnicodeForm):
    """Canonical decomposition: ``"é"`` → ``"e" + U+0301``, both from the one original char.

    >>> NFD().normalize(Piece.of("é")).spans
    [(0, 1), (0, 1)]
    """

    form: ClassVar[Form] = "NFD"


@dataclass(frozen=True)
class NFKC(_UnicodeForm):
    """Compatibility composition: ``"ﬁ"`` → ``"fi"``, ``"Ａ"`` → ``"A"``, ``"①"`` → ``"1"``.

    >>> NFKC().normalize(Piece.of("ﬁ")).text
    'fi'
    """

    form: ClassVar[Form] = "NFKC"


@dataclass(frozen=True)
class NFKD(_UnicodeForm):
    """Compatibility decomposition (NFKC without recomposing accents).

    >>> NFKD().normalize(Piece.of("ﬁé")).text == "fie\\u0301"
    True
    """

    form: ClassVar[Form] = "NFKD"


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
        if LOWERCASE_SLOW.search(piece.text) is None:
            return Piece(piece.text.lower(), piece.spans)
        return piece.map_chars(lowercase_char)

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        if LOWERCASE_SLOW.search(text) is None:
            return text.lower()
        return text.translate(_LOWERCASE)


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
        while self.left and start < end and text[start] in WHITESPACE:
            start += 1
        while self.right and end > start and text[end - 1] in WHITESPACE:
            end -= 1
        return piece[start:end]

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        if self.left:
            text = text.lstrip(_WHITESPACE)
        return text.rstrip(_WHITESPACE) if self.right else text


@dataclass(frozen=True)
class StripAccents:
    """Drop combining marks (Mn, Mc, Me). Alone it strips nothing from ``"é"``: put ``NFD``
    first so accents become separate marks.

    >>> StripAccents().normalize(NFD().normalize(Piece.of("café"))).text
    'cafe'
    """

    def normalize(self, piece: Piece) -> Piece:
        return piece.map_chars(lambda ch: "" if is_combining_mark(ch) else ch)

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        return text.translate(_DROP_COMBINING)


@dataclass(frozen=True)
class Prepend:
    """Put ``prepend`` in front of the text, unless the text is empty (Llama 2 adds ``"▁"``).

    >>> Prepend("▁").normalize(Piece.of("")).text, Prepend("▁").normalize(Piece.of("a")).text
    ('', '▁a')
    """

    prepend: str

    def normalize(self, piece: Piece) -> Piece:
        return piece.prepend(self.prepend) if piece.text else piece

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        return self.prepend + text if text else text


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

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        pattern = self.pattern
        if not pattern.is_regex and pattern.source:
            # a non-empty literal: str.replace finds the same leftmost, non-overlapping
            # matches
            return text.replace(pattern.source, self.content)
        out: list[str] = []
        last = 0
        for start, end in pattern.matches(text):
            out += (text[last:start], self.content)
            last = end
        out.append(text[last:])
        return "".join(out)


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
    >>> BertNormalizer().normalize(Piece.of("\u00d9\u07eb")).spans   # the marks are dropped
    [(0, 1)]
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
            piece = piece.map_chars(lambda ch: "" if is_nonspacing_mark(ch) else ch)
        if self.lowercase:
            piece = Lowercase().normalize(piece)
        return piece

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        if self.clean_text:
            text = text.translate(_BERT_CLEAN)
        if self.handle_chinese_chars and not text.isascii():
            text = text.translate(_SPACED_CJK)
        if self.lowercase if self.strip_accents is None else self.strip_accents:
            text = normalize_form_text(text, "NFD").translate(_DROP_NONSPACING)
        if self.lowercase:
            text = Lowercase().normalize_str(text)
        return text


def _bert_clean(ch: str) -> str:
    if ch in "\x00\ufffd" or is_control(ch):
        return ""
    return " " if ch in WHITESPACE else ch


def _space_out_cjk(piece: Piece) -> Piece:
    text: list[str] = []
    spans: list[Span] = []
    for ch, (start, end) in zip(piece.text, piece.spans):
        if is_chinese_char(ch):
            text.append(f" {ch} ")
            spans.extend([(start, start), (start, end), (end, end)])
        else:
            text.append(ch)
            spans.append((start, end))
    return Piece("".join(text), spans)


_WHITESPACE = "".join(sorted(WHITESPACE))
_LOWERCASE = CharTable(lowercase_char)
_DROP_COMBINING = CharTable(lambda ch: "" if is_combining_mark(ch) else ch)
_DROP_NONSPACING = CharTable(lambda ch: "" if is_nonspacing_mark(ch) else ch)
_BERT_CLEAN = CharTable(_bert_clean)
_SPACED_CJK = CharTable(lambda ch: f" {ch} " if is_chinese_char(ch) else ch)


@dataclass(frozen=True)
class Nmt:
    """The NMT normalizer: drop some control characters, turn others (and ZW spaces, U+2581,
    U+FEFF, U+FFFD) into a plain space.

    >>> Nmt().normalize(Piece.of("a\\x01\\u200bb")).text
    'a b'
    """

    def normalize(self, piece: Piece) -> Piece:
        return piece.map_chars(_nmt_char)

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        return text.translate(_NMT)


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


_NMT = CharTable(_nmt_char)


@dataclass(frozen=True)
class ByteLevel:
    """Spell each character as GPT-2's byte characters (``" "`` → ``"Ġ"``, ``"é"`` → ``"Ã©"``).

    >>> ByteLevel().normalize(Piece.of(" é")).text
    'ĠÃ©'
    """

    def normalize(self, piece: Piece) -> Piece:
        return piece.map_chars(byte_level_chars)

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        return byte_level_text(text)


@lru_cache(maxsize=8192)  # bounded: one entry per distinct character
def byte_level_chars(ch: str) -> str:
    """``ch``'s UTF-8 bytes through GPT-2's byte map (shared with the ByteLevel pre-tokenizer).

    >>> byte_level_chars("中")
    'ä¸Ń'
    """
    table = bytes_to_unicode()
    return "".join(table[b] for b in ch.encode("utf-8"))


#: byte -> its GPT-2 character, as a ``str.translate`` table of the bytes spelled as Latin-1
_BYTE_CHARS = {b: ch for b, ch in bytes_to_unicode().items()}


def byte_level_text(text: str) -> str:
    """``text`` with every character spelled as :func:`byte_level_chars`, all in C: the UTF-8
    bytes read as Latin-1 (one character per byte), then each mapped.

    >>> byte_level_text(" é")
    'ĠÃ©'
    """
    return text.encode("utf-8").decode("latin-1").translate(_BYTE_CHARS)


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

    def normalize_str(self, text: str) -> str:
        """The normalized text (see the module docstring)."""
        for normalizer in self.normalizers:
            text = normalize_text(normalizer, text)
        return text


# ---------------------------------------------------------------------------------------------
# tokenizer.json
# ---------------------------------------------------------------------------------------------


def _precompiled(obj: Mapping[str, Any], name: str) -> Normalizer:
    # subtle: Hugging Face itself panics on an empty charsmap; SentencePiece reads an empty one
    # as "no normalization", which is what we do
    if obj.get("precompiled_charsmap") in (None, ""):
        return Sequence(())
    from core.pipeline.precompiled import precompiled_from_json  # (it imports sentencepiece)

    return precompiled_from_json(dict(obj), name)


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
    >>> normalizer_from_json({"type": "Precompiled", "precompiled_charsmap": "AAAA"})
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tokenizer.json: the normalization rule (precompiled_charsmap) is broken
    """
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise FormatError(
            f"{name}: a normalizer should be a JSON object or null, not {show(obj)}"
        )
    kind = obj.get("type")
    if kind == "Precompiled":
        return _precompiled(obj, name)
    return build_from_table(obj, _FROM_JSON, stage="normalizer", name=name)


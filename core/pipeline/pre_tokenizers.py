"""Pre-tokenizers: cut normalized text into the pieces the model tokenizes one by one.

Each class twins one ``tokenizers`` pre-tokenizer. ``split`` takes pieces and returns the
pieces they are cut into, in order, never an empty one (Hugging Face drops those too):

>>> pieces = Metaspace().split([Piece.of("Hey you")])
>>> [(p.text, p.span) for p in pieces]
[('▁Hey', (0, 3)), ('▁you', (3, 7))]
>>> [p.text for p in ByteLevel(add_prefix_space=False).split([Piece.of("é!")])]
['Ã©', '!']

How the tokenizer calls this (what Hugging Face does):

1. The text is cut at added tokens first; each stretch of text between them is a *segment*
   (the added tokens themselves are never normalized or pre-tokenized).
2. Each segment is normalized on its own, then pre-tokenized on its own:
   ``pre_tokenizer.split([normalized_segment])``.
3. Spans must be positions in the user's whole text, not in the segment:
   ``Piece.of(segment, offset=start)``. Two pre-tokenizers look at where a piece starts:

   - ``Metaspace(prepend_scheme="first")`` adds ``"▁"`` only to a piece whose first
     character comes from position 0 of the whole text (Hugging Face checks the piece's
     original offset). So no ``"▁"`` for a segment after an added token (``"<s>hi"``), nor
     when a normalizer removed the leading characters (``Strip`` on ``"  hi"``), nor for the
     later pieces of an earlier split in a ``Sequence``. With ``"always"`` every segment gets
     one.
   - ``ByteLevel(add_prefix_space=True)`` adds ``" "`` to *every* segment that does not
     start with one, including those after added tokens.

   In a pair of texts (``encode(a, b)``) each text starts at position 0 of its own.

Each class also has ``split_str(text) -> list[str]``, for encoding to IDs only: the texts
of ``split([Piece.of(text)])``, exactly. ``Piece.of(text)`` starts at position 0, so for a
``Metaspace(prepend_scheme="first")`` (alone or in a :class:`Sequence`) ``split_str`` is
the answer for a piece that starts the whole text; any other piece needs ``split``.

Characters are classified with Rust's and the crates' tables (``char::is_whitespace``,
``char::is_numeric``, the ``unicode_categories`` punctuation), and regexes as Oniguruma
matches them: see :mod:`core.pipeline.char_classes`, :mod:`core.pipeline.unicode_tables`
and :mod:`core.pipeline.pattern`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal, Protocol

from core.engine.bytes_unicode import bytes_to_unicode
from core.engine.regex_compat import compile_held
from core.errors import FormatError
from core.pipeline.char_classes import (
    NOT_WHITESPACE,
    NUMERIC_FLAGS,
    PUNCTUATION_FLAGS,
    SPACED_PUNCTUATION,
    is_numeric,
    is_punctuation,
)
from core.pipeline.json_fields import build_from_table, read_field
from core.pipeline.normalizers import byte_level_chars, byte_level_text
from core.pipeline.pattern import Pattern, as_unicode_16
from core.pipeline.piece import Piece
from core.pipeline.split_runs import (
    Behavior,
    char_runs,
    flag_runs,
    split_runs,
    split_runs_str,
)
from core.pipeline.unicode_tables import is_whitespace
from core.pipeline.word_memo import WordMemo


class PreTokenizer(Protocol):
    """One pre-tokenization step: pieces in, the pieces they are cut into out (the classes
    here also have ``split_str``, optional in this protocol)."""

    def split(self, pieces: list[Piece]) -> list[Piece]: ...


def split_text(pre_tokenizer: PreTokenizer, text: str, *, start: int = 0) -> list[str]:
    """``pre_tokenizer``'s words of ``text``, a piece whose first character comes from
    position ``start`` of the original text: ``split_str`` if it has one, else the
    :class:`Piece` path. ``start`` only matters to a step that :func:`uses_offsets`; it is
    right only when nothing was inserted or dropped at the piece's start (no normalizer).

    >>> split_text(WhitespaceSplit(), " a b ")
    ['a', 'b']
    >>> split_text(Metaspace(prepend_scheme="first"), "a b", start=3)
    ['a', '▁b']
    """
    if start and uses_offsets(pre_tokenizer):
        if isinstance(pre_tokenizer, Metaspace):  # "first", not at the start: "never"
            return dataclasses.replace(pre_tokenizer, prepend_scheme="never").split_str(text)
        return [p.text for p in pre_tokenizer.split([Piece.of(text, offset=start)])]
    fast = getattr(pre_tokenizer, "split_str", None)
    if fast is not None:
        return fast(text)
    return [p.text for p in pre_tokenizer.split([Piece.of(text)])]


def _each(pieces: list[Piece], cut: Callable[[Piece], list[Piece]]) -> list[Piece]:
    """Apply ``cut`` to every piece; empty results are dropped, as in Hugging Face."""
    return [out for piece in pieces for out in cut(piece) if out.text]



# ---------------------------------------------------------------------------------------------
# Pre-tokenizers
# ---------------------------------------------------------------------------------------------

#: GPT-2's pattern as Hugging Face's ByteLevel spells it (contractions are lower-case only).
BYTE_LEVEL_PATTERN = Pattern.regex(
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
)


@dataclass(frozen=True)
class ByteLevel:
    """GPT-2's pre-tokenizer: optionally a leading space, the GPT-2 regex, then every
    character spelled as its UTF-8 bytes through GPT-2's byte map (each byte character keeps
    the span of the character it came from).

    ``trim_offsets`` only changes the offsets the ByteLevel *post-processor* reports; it is
    kept here because the JSON carries it.

    >>> [(p.text, p.span) for p in ByteLevel().split([Piece.of("Hi 中")])]
    [('ĠHi', (0, 2)), ('Ġä¸Ń', (2, 4))]
    """

    _: KW_ONLY
    add_prefix_space: bool = True
    trim_offsets: bool = True
    use_regex: bool = True

    def split(self, pieces: list[Piece]) -> list[Piece]:
        return [_to_byte_chars(piece) for piece in _each(pieces, self._cut)]

    def _cut(self, piece: Piece) -> list[Piece]:
        if self.add_prefix_space and piece.text and not piece.text.startswith(" "):
            piece = piece.prepend(" ")
        if not self.use_regex:
            return [piece]
        return split_runs(
            piece, BYTE_LEVEL_PATTERN.find_matches(piece.text), "isolated"
        )

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        if not text:
            return []
        if self.add_prefix_space and not text.startswith(" "):
            text = " " + text
        words = BYTE_LEVEL_PATTERN.split_str(text, "isolated") if self.use_regex else [text]
        if text.isascii():
            return [w.translate(_ASCII_BYTE_CHARS) for w in words]
        return list(map(byte_level_text, words))


_ASCII_BYTE_CHARS = {b: bytes_to_unicode()[b] for b in range(128)}


def _to_byte_chars(piece: Piece) -> Piece:
    """``piece`` spelled in GPT-2's byte characters (ASCII maps one to one: fast path)."""
    if piece.text.isascii():
        return Piece(piece.text.translate(_ASCII_BYTE_CHARS), piece.spans)
    # Piece.map_chars, with C-level loops: each character's span repeated once per byte
    outs = list(map(byte_level_chars, piece.text))
    spans = list(itertools.chain.from_iterable(map(itertools.repeat, piece.spans, map(len, outs))))
    return Piece("".join(outs), spans)


@dataclass(frozen=True)
class Split:
    """Cut at every match of ``pattern`` (with ``invert``: at everything between matches).

    >>> [p.text for p in Split(Pattern.regex(r"\\d+"), "isolated").split([Piece.of("a12b")])]
    ['a', '12', 'b']
    """

    pattern: Pattern
    behavior: Behavior
    _: KW_ONLY
    invert: bool = False

    def split(self, pieces: list[Piece]) -> list[Piece]:
        return _each(pieces, self._cut)

    def _cut(self, piece: Piece) -> list[Piece]:
        runs = self.pattern.find_matches(piece.text)
        if self.invert:
            runs = [(s, e, not delimiter) for s, e, delimiter in runs]
        return split_runs(piece, runs, self.behavior)

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        if not self.invert:
            return self.pattern.split_str(text, self.behavior)
        runs = [(s, e, not d) for s, e, d in self.pattern.find_matches(text)]
        return split_runs_str(text, runs, self.behavior)


PrependScheme = Literal["always", "first", "never"]


@dataclass(frozen=True)
class Metaspace:
    """SentencePiece's pre-tokenizer: every ``" "`` becomes ``replacement``, a replacement is
    put in front (``prepend_scheme``: ``"always"``; ``"first"``: only for a piece that starts
    the whole text, see the module docstring; ``"never"``), then, with ``split_pieces``
    (``"split"`` in tokenizer.json), the text is cut before each replacement.

    >>> [p.text for p in Metaspace(prepend_scheme="first").split([Piece.of("a b", offset=4)])]
    ['a', '▁b']
    """

    _: KW_ONLY
    replacement: str = "▁"
    prepend_scheme: PrependScheme = "always"
    split_pieces: bool = True

    def split(self, pieces: list[Piece]) -> list[Piece]:
        return _each(pieces, self._cut)

    def _cut(self, piece: Piece) -> list[Piece]:
        rep = self.replacement
        if " " in piece.text:
            if len(rep) == 1:  # one character for one: every span stays where it was
                piece = Piece(piece.text.replace(" ", rep), piece.spans)
            else:
                piece = piece.map_chars(lambda ch: rep if ch == " " else ch)
        starts_text = bool(piece.spans) and piece.spans[0][0] == 0
        if (
            piece.text
            and not piece.text.startswith(rep)
            and (
                self.prepend_scheme == "always"
                or (self.prepend_scheme == "first" and starts_text)
            )
        ):
            piece = piece.prepend(rep)
        if not self.split_pieces:
            return [piece]
        return split_runs(piece, char_runs(piece.text, rep.__eq__), "merged_with_next")

    def split_str(self, text: str) -> list[str]:
        """The words' texts, for a piece that starts the whole text (see the module
        docstring: ``prepend_scheme="first"`` looks at where a piece starts)."""
        if not text:
            return []
        rep = self.replacement
        text = text.replace(" ", rep)
        # (an empty replacement can empty the text: then nothing is prepended either)
        if text and not text.startswith(rep) and self.prepend_scheme != "never":
            text = rep + text
        if not self.split_pieces or len(rep) != 1:
            # (a replacement of several characters is no one character: no cut, as in split)
            return [text] if text else []
        # merged_with_next at every replacement: a cut before each one
        first, *rest = text.split(rep)
        words = [rep + w for w in rest]
        return [first, *words] if first else words


@dataclass(frozen=True)
class Digits:
    """Cut digits (Rust's ``is_numeric``) from the rest: runs of them, or one by one.

    >>> [p.text for p in Digits(individual_digits=True).split([Piece.of("a123")])]
    ['a', '1', '2', '3']
    """

    _: KW_ONLY
    individual_digits: bool = False

    def split(self, pieces: list[Piece]) -> list[Piece]:
        behavior: Behavior = "isolated" if self.individual_digits else "contiguous"
        return _each(
            pieces, lambda p: split_runs(p, char_runs(p.text, is_numeric), behavior)
        )

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        behavior: Behavior = "isolated" if self.individual_digits else "contiguous"
        return split_runs_str(text, flag_runs(text.translate(NUMERIC_FLAGS)), behavior)


#: subtle: compiled by Rust's ``regex`` crate, not Oniguruma, so ``\w`` is the Unicode one
#: the ``regex`` module also has (letters, marks, decimal digits, ZWJ...), not Oniguruma's.
_WORDS = compile_held(r"\w+|[^\w\s]+")


@dataclass(frozen=True)
class Whitespace:
    """Words (``\\w+``) and runs of other non-space characters; whitespace is dropped.

    >>> [p.text for p in Whitespace().split([Piece.of("Hi, you!")])]
    ['Hi', ',', 'you', '!']
    """

    def split(self, pieces: list[Piece]) -> list[Piece]:
        return _each(pieces, self._cut)

    def _cut(self, piece: Piece) -> list[Piece]:
        text, spans = piece.text, piece.spans
        found = _WORDS.finditer(as_unicode_16(text))
        return [
            Piece(text[m.start() : m.end()], spans[m.start() : m.end()]) for m in found
        ]

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        haystack = as_unicode_16(text)
        if haystack is text:
            return _WORDS.findall(text)
        return [text[m.start() : m.end()] for m in _WORDS.finditer(haystack)]


@dataclass(frozen=True)
class WhitespaceSplit:
    """Cut at whitespace (Rust's definition), which is dropped.

    >>> [p.text for p in WhitespaceSplit().split([Piece.of("a\\u3000b  c")])]
    ['a', 'b', 'c']
    """

    def split(self, pieces: list[Piece]) -> list[Piece]:
        return _each(
            pieces,
            lambda p: split_runs(p, char_runs(p.text, is_whitespace), "removed"),
        )

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        return NOT_WHITESPACE.findall(text)


@dataclass(frozen=True)
class Punctuation:
    """Cut at each punctuation character (see :func:`is_punctuation`).

    >>> [p.text for p in Punctuation().split([Piece.of("a,b!!")])]
    ['a', ',', 'b', '!', '!']
    """

    behavior: Behavior = "isolated"

    def split(self, pieces: list[Piece]) -> list[Piece]:
        return _each(
            pieces,
            lambda p: split_runs(p, char_runs(p.text, is_punctuation), self.behavior),
        )

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        runs = flag_runs(text.translate(PUNCTUATION_FLAGS))
        return split_runs_str(text, runs, self.behavior)


@dataclass(frozen=True)
class BertPreTokenizer:
    """BERT's: cut at whitespace (dropped), then isolate each punctuation character.

    >>> [p.text for p in BertPreTokenizer().split([Piece.of("Don't stop.")])]
    ['Don', "'", 't', 'stop', '.']
    """

    def split(self, pieces: list[Piece]) -> list[Piece]:
        return Punctuation("isolated").split(WhitespaceSplit().split(pieces))

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        return NOT_WHITESPACE.findall(text.translate(SPACED_PUNCTUATION))


@dataclass(frozen=True)
class CharDelimiterSplit:
    """Cut at ``delimiter`` (one character), which is dropped.

    >>> [p.text for p in CharDelimiterSplit("_").split([Piece.of("a_b__c")])]
    ['a', 'b', 'c']
    """

    delimiter: str

    def split(self, pieces: list[Piece]) -> list[Piece]:
        is_delimiter = self.delimiter.__eq__
        return _each(
            pieces, lambda p: split_runs(p, char_runs(p.text, is_delimiter), "removed")
        )

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        if len(self.delimiter) != 1:  # (no single character equals it: no cut, as in split)
            return [text] if text else []
        return [w for w in text.split(self.delimiter) if w]


@dataclass(frozen=True)
class FixedLength:
    """Cut into pieces of ``length`` characters (the last may be shorter).

    >>> [p.text for p in FixedLength(2).split([Piece.of("abcde")])]
    ['ab', 'cd', 'e']
    """

    length: int = 5

    def split(self, pieces: list[Piece]) -> list[Piece]:
        n = self.length
        return _each(pieces, lambda p: [p[i : i + n] for i in range(0, len(p), n)])

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring)."""
        n = self.length
        return [text[i : i + n] for i in range(0, len(text), n)]


@dataclass(frozen=True)
class Sequence:
    """Apply ``pre_tokenizers`` in order, each to the pieces the previous one made.

    >>> seq = Sequence((WhitespaceSplit(), Digits(individual_digits=True)))
    >>> [p.text for p in seq.split([Piece.of("ab12 c")])]
    ['ab', '1', '2', 'c']
    """

    pre_tokenizers: tuple[PreTokenizer, ...] = ()

    def split(self, pieces: list[Piece]) -> list[Piece]:
        for pre_tokenizer in self.pre_tokenizers:
            pieces = pre_tokenizer.split(pieces)
        return pieces

    def split_str(self, text: str) -> list[str]:
        """The words' texts (see the module docstring). A step after the first that looks
        at where its pieces start (``Metaspace(prepend_scheme="first")``) cannot be told
        from a ``str``: such a sequence takes the :class:`Piece` path."""
        if self._memo is None:
            return [p.text for p in self.split([Piece.of(text)])]
        return list(self._memo.words(text))

    @functools.cached_property
    def _memo(self) -> WordMemo | None:
        """The steps' words of each short piece, remembered (None with an offset step)."""
        steps = self.pre_tokenizers
        return None if any(map(uses_offsets, steps[1:])) else WordMemo(steps, split_text)


def uses_offsets(pre_tokenizer: PreTokenizer) -> bool:
    """Whether ``pre_tokenizer``'s words depend on where its pieces start in the original
    text (``Metaspace(prepend_scheme="first")``, alone or in a sequence), or it cannot say
    (a step of another kind). Then ``split_str`` is only right for a piece at position 0.

    >>> uses_offsets(Metaspace(prepend_scheme="first")), uses_offsets(Metaspace())
    (True, False)
    """
    if isinstance(pre_tokenizer, Metaspace):
        return pre_tokenizer.prepend_scheme == "first"
    if isinstance(pre_tokenizer, Sequence):
        return any(map(uses_offsets, pre_tokenizer.pre_tokenizers))
    return not isinstance(pre_tokenizer, _KNOWN)


_KNOWN = (
    BertPreTokenizer, ByteLevel, CharDelimiterSplit, Digits, FixedLength, Punctuation, Split,
    Whitespace, WhitespaceSplit,
)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# tokenizer.json
# ---------------------------------------------------------------------------------------------

_BEHAVIORS: dict[str, Behavior] = {
    "Removed": "removed",
    "Isolated": "isolated",
    "MergedWithPrevious": "merged_with_previous",
    "MergedWithNext": "merged_with_next",
    "Contiguous": "contiguous",
}


def _behavior(name: str, where: str) -> Behavior:
    if name not in _BEHAVIORS:
        raise FormatError(
            f"{where}: behavior {name!r} is not one of {', '.join(_BEHAVIORS)}"
        )
    return _BEHAVIORS[name]


def _char(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = read_field(obj, key, str, where=where)
    if len(value) != 1:
        raise FormatError(
            f"{where}: {key!r} should be a single character, not {value!r}"
        )
    return value


def _metaspace(obj: Mapping[str, Any], where: str) -> PreTokenizer:
    scheme = read_field(obj, "prepend_scheme", str, where=where, default="always")
    if scheme not in ("always", "first", "never"):
        raise FormatError(
            f"{where}: prepend_scheme {scheme!r} should be 'always', 'first' or 'never'"
        )
    # subtle: the legacy field. Hugging Face now refuses add_prefix_space=false next to a
    # scheme other than "never" (even the default); older versions read it as "never", as we do
    if (
        read_field(
            obj, "add_prefix_space", (bool, type(None)), where=where, default=None
        )
        is False
    ):
        scheme = "never"
    return Metaspace(
        replacement=_char(obj, "replacement", where),
        prepend_scheme=scheme,
        split_pieces=read_field(obj, "split", bool, where=where, default=True),
    )


def _sequence(obj: Mapping[str, Any], where: str) -> PreTokenizer:
    items = read_field(obj, "pretokenizers", list, where=where)
    steps = [
        pre_tokenizer_from_json(item, name=f"{where}, item {i + 1}")
        for i, item in enumerate(items)
    ]
    return Sequence(tuple(step for step in steps if step is not None))


def _fixed_length(obj: Mapping[str, Any], where: str) -> PreTokenizer:
    length = read_field(obj, "length", int, where=where, default=5)
    if length < 1:
        raise FormatError(f"{where}: length should be at least 1, not {length}")
    return FixedLength(length)


_FROM_JSON: dict[str, Callable[[Mapping[str, Any], str], PreTokenizer]] = {
    "BertPreTokenizer": lambda obj, where: BertPreTokenizer(),
    "ByteLevel": lambda obj, where: ByteLevel(
        add_prefix_space=read_field(obj, "add_prefix_space", bool, where=where),
        trim_offsets=read_field(obj, "trim_offsets", bool, where=where),
        use_regex=read_field(obj, "use_regex", bool, where=where, default=True),
    ),
    "CharDelimiterSplit": lambda obj, where: CharDelimiterSplit(
        _char(obj, "delimiter", where)
    ),
    "Digits": lambda obj, where: Digits(
        individual_digits=read_field(obj, "individual_digits", bool, where=where)
    ),
    "FixedLength": _fixed_length,
    "Metaspace": _metaspace,
    "Punctuation": lambda obj, where: Punctuation(
        _behavior(
            read_field(obj, "behavior", str, where=where, default="Isolated"), where
        )
    ),
    "Sequence": _sequence,
    "Split": lambda obj, where: Split(
        Pattern.from_json(read_field(obj, "pattern", dict, where=where), where=where),
        _behavior(read_field(obj, "behavior", str, where=where), where),
        invert=read_field(obj, "invert", bool, where=where),
    ),
    "Whitespace": lambda obj, where: Whitespace(),
    "WhitespaceSplit": lambda obj, where: WhitespaceSplit(),
}


def pre_tokenizer_from_json(
    obj: Any, *, name: str = "tokenizer.json"
) -> PreTokenizer | None:
    """The pre-tokenizer a ``tokenizer.json`` describes (its ``"pre_tokenizer"``); None for null.

    >>> pre_tokenizer_from_json({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"})
    Metaspace(replacement='▁', prepend_scheme='first', split_pieces=True)
    >>> pre_tokenizer_from_json({"type": "UnicodeScripts"})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tokenizer.json: pre_tokenizer type 'UnicodeScripts' is not supported
    yet (supported: BertPreTokenizer, ByteLevel, CharDelimiterSplit, Digits, FixedLength, Metaspace,
    Punctuation, Sequence, Split, Whitespace, WhitespaceSplit)
    """
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise FormatError(
            f"{name}: a pre_tokenizer should be a JSON object or null, not {obj!r}"
        )
    return build_from_table(obj, _FROM_JSON, stage="pre_tokenizer", name=name)

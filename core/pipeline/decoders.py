"""Decoders: turn a list of tokens back into text, as Hugging Face ``tokenizers`` does.

Each class twins one ``tokenizers`` decoder. ``decode_chain`` maps the token strings to new
strings (a :class:`Sequence` feeds each decoder the previous one's output); the text is
``"".join`` of the last chain, which :func:`decode_tokens` returns:

>>> llama = Sequence((Replace(Pattern.string("▁"), " "), ByteFallback(), Fuse(), Strip(" ", start=1, stop=0)))
>>> decode_tokens(llama, ["▁Hello", "▁w", "<0xC3>", "<0xB6>", "rld"])
'Hello wörld'
>>> decode_tokens(None, ["no", "decoder"])          # Hugging Face joins with spaces
'no decoder'

Invalid UTF-8 becomes U+FFFD exactly as in Hugging Face: ``ByteLevel`` decodes all the bytes
of all the tokens at once, replacing each maximal invalid sequence with one U+FFFD (Rust's
``from_utf8_lossy``); ``ByteFallback`` gives one U+FFFD per byte of an invalid run of
``<0x..>`` tokens.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal, Protocol

from core.engine.bytes_unicode import unicode_to_bytes
from core.errors import FormatError
from core.pipeline.json_fields import build_from_table, read_field
from core.pipeline.pattern import Pattern


class Decoder(Protocol):
    """One decoding step: token strings in, (fewer, longer, cleaner) strings out."""

    def decode_chain(self, tokens: list[str]) -> list[str]: ...


def decode_tokens(decoder: Decoder | None, tokens: list[str]) -> str:
    """The text ``tokens`` decode to: the decoder's chain joined, or, with no decoder, the
    tokens joined by spaces (as Hugging Face does).

    >>> decode_tokens(WordPiece(), ["un", "##believ", "##able", "!"])
    'unbelievable!'
    """
    if decoder is None:
        return " ".join(tokens)
    return "".join(decoder.decode_chain(tokens))


@dataclass(frozen=True)
class ByteLevel:
    """GPT-2's byte map backwards: all the tokens' bytes, decoded together. A token with a
    character outside the map (an added token like ``"<|im_start|>"`` is inside it, ``"▁"``
    is not) stands for its own UTF-8 bytes.

    >>> ByteLevel().decode_chain(["Hello", "Ġw", "Ã¶", "rld", "Ġâ"])
    ['Hello wörld �']
    """

    def decode_chain(self, tokens: list[str]) -> list[str]:
        table = unicode_to_bytes()
        data = bytearray()
        for token in tokens:
            if all(ch in table for ch in token):
                data.extend(table[ch] for ch in token)
            else:
                data.extend(token.encode("utf-8"))
        # Python's "replace" and Rust's from_utf8_lossy both put one U+FFFD per maximal
        # invalid subsequence (the Unicode recommendation)
        return [data.decode("utf-8", errors="replace")]


_BYTE_TOKEN = re.compile(r"<0x(\+[0-9A-Fa-f]|[0-9A-Fa-f]{2})>")


def _byte_of(token: str) -> int | None:
    """The byte a ``<0xHH>`` token stands for. subtle: Rust's ``u8::from_str_radix`` also
    reads ``"+F"``, so ``<0x+F>`` is byte 15."""
    m = _BYTE_TOKEN.fullmatch(token)
    return int(m.group(1), 16) if m else None


@dataclass(frozen=True)
class ByteFallback:
    """``<0xHH>`` tokens become the bytes they stand for; each run of them is decoded as
    UTF-8, or, if the run is not valid UTF-8, gives one U+FFFD per byte.

    >>> ByteFallback().decode_chain(["a", "<0xE4>", "<0xB8>", "<0xAD>", "b", "<0xE4>", "<0xB8>"])
    ['a', '中', 'b', '�', '�']
    """

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()
        for token in tokens:
            byte = _byte_of(token)
            if byte is not None:
                run.append(byte)
                continue
            out.extend(_decode_run(run))
            run.clear()
            out.append(token)
        out.extend(_decode_run(run))
        return out


def _decode_run(run: bytearray) -> list[str]:
    """A run of byte tokens: its text, or (invalid UTF-8) one U+FFFD string per byte.
    subtle: separate strings, which the next decoder in a Sequence sees as tokens."""
    if not run:
        return []
    try:
        return [run.decode("utf-8")]
    except UnicodeDecodeError:
        return ["\ufffd"] * len(run)


@dataclass(frozen=True)
class Metaspace:
    """SentencePiece's ``"▁"`` back to spaces. Unless ``prepend_scheme`` is ``"never"``,
    *every* replacement character of the first token is dropped (not only a leading one).

    >>> Metaspace().decode_chain(["▁Hey", "▁you"])
    ['Hey', ' you']
    >>> Metaspace().decode_chain(["▁▁a▁", "▁b"])
    ['a', ' b']
    """

    _: KW_ONLY
    replacement: str = "▁"
    prepend_scheme: Literal["always", "first", "never"] = "always"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        first = "" if self.prepend_scheme != "never" else " "
        return [
            token.replace(self.replacement, first if i == 0 else " ")
            for i, token in enumerate(tokens)
        ]


def _cleanup(text: str) -> str:
    """WordPiece's (and CTC's) clean-up of spaces before punctuation and contractions."""
    for dirty, clean in _CLEANUPS:
        text = text.replace(dirty, clean)
    return text


_CLEANUPS = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)  # fmt: skip


@dataclass(frozen=True)
class WordPiece:
    """BERT's: ``prefix`` marks a continuation, every other token (but the first) starts a
    new word after a space; ``cleanup`` removes spaces before punctuation and contractions.

    >>> WordPiece().decode_chain(["i", "do", "n't", "##s", "."])
    ['i', ' do', "n't", 's', '.']
    """

    _: KW_ONLY
    prefix: str = "##"
    cleanup: bool = True

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        for i, token in enumerate(tokens):
            if i:  # subtle: an empty prefix marks every token as a continuation
                prefixed = token.startswith(self.prefix)
                token = token[len(self.prefix) :] if prefixed else " " + token
            out.append(_cleanup(token) if self.cleanup else token)
        return out


@dataclass(frozen=True)
class BPEDecoder:
    """The original BPE's end-of-word ``suffix`` becomes a space (nothing at the very end).

    >>> BPEDecoder().decode_chain(["hel", "lo</w>", "you</w>"])
    ['hel', 'lo ', 'you']
    """

    suffix: str = "</w>"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        last = len(tokens) - 1
        return [
            t.replace(self.suffix, "" if i == last else " ")
            for i, t in enumerate(tokens)
        ]


@dataclass(frozen=True)
class Fuse:
    """All the tokens as one string (for decoders that must see the whole text).

    >>> Fuse().decode_chain(["a", "b"])
    ['ab']
    """

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


@dataclass(frozen=True)
class Strip:
    """Remove up to ``start`` leading and ``stop`` trailing ``content`` characters of each
    token (Llama strips the space left by the first ``"▁"``).

    >>> Strip(" ", start=1, stop=0).decode_chain(["  a ", " b"])
    [' a ', 'b']
    """

    content: str
    _: KW_ONLY
    start: int = 0
    stop: int = 0

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._strip(token) for token in tokens]

    def _strip(self, token: str) -> str:
        begin = 0
        while begin < min(self.start, len(token)) and token[begin] == self.content:
            begin += 1
        end = len(token)
        # subtle: Hugging Face panics where these two would cross (all-content tokens
        # shorter than start + stop); we return what is left, nothing
        while (
            len(token) - end < self.stop
            and end > begin
            and token[end - 1] == self.content
        ):
            end -= 1
        return token[begin:end]


@dataclass(frozen=True)
class Replace:
    """Replace matches of ``pattern`` in each token (``"▁"`` → ``" "`` for SentencePiece).

    >>> Replace(Pattern.string("▁"), " ").decode_chain(["▁a▁b"])
    [' a b']
    """

    pattern: Pattern
    content: str

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._replace(token) for token in tokens]

    def _replace(self, token: str) -> str:
        parts: list[str] = []
        last = 0
        for start, end in self.pattern.matches(token):
            parts.append(token[last:start])
            parts.append(self.content)
            last = end
        parts.append(token[last:])
        return "".join(parts)


@dataclass(frozen=True)
class CTC:
    """Speech models' CTC output: merge repeated tokens, drop ``pad_token``, and (with
    ``cleanup``) clean up like WordPiece and turn ``word_delimiter_token`` into a space.

    >>> CTC().decode_chain(["h", "h", "<pad>", "i", "|", "|", "y", "o", "u"])
    ['h', 'i', ' ', 'y', 'o', 'u']
    """

    _: KW_ONLY
    pad_token: str = "<pad>"
    word_delimiter_token: str = "|"
    cleanup: bool = True

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for token, _ in itertools.groupby(tokens):
            token = token.replace(self.pad_token, "")
            if self.cleanup:
                token = _cleanup(token).replace(self.word_delimiter_token, " ")
            if token:
                out.append(token)
        return out


@dataclass(frozen=True)
class Sequence:
    """Each decoder in turn, on the previous one's output.

    >>> Sequence((Replace(Pattern.string("_"), " "), Fuse())).decode_chain(["a_", "b"])
    ['a b']
    """

    decoders: tuple[Decoder, ...] = ()

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for decoder in self.decoders:
            tokens = decoder.decode_chain(tokens)
        return tokens


# ---------------------------------------------------------------------------------------------
# tokenizer.json
# ---------------------------------------------------------------------------------------------


def _char(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = read_field(obj, key, str, where=where)
    if len(value) != 1:
        raise FormatError(
            f"{where}: {key!r} should be a single character, not {value!r}"
        )
    return value


def _count(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = read_field(obj, key, int, where=where)
    if value < 0:
        raise FormatError(f"{where}: {key!r} should not be negative, not {value}")
    return value


def _metaspace(obj: Mapping[str, Any], where: str) -> Decoder:
    scheme = read_field(obj, "prepend_scheme", str, where=where, default="always")
    if scheme not in ("always", "first", "never"):
        raise FormatError(
            f"{where}: prepend_scheme {scheme!r} should be 'always', 'first' or 'never'"
        )
    # the legacy field, read as the pre-tokenizer reads it (see pre_tokenizers.py)
    legacy = read_field(
        obj, "add_prefix_space", (bool, type(None)), where=where, default=None
    )
    if legacy is False:
        scheme = "never"
    replacement = _char(obj, "replacement", where)
    return Metaspace(replacement=replacement, prepend_scheme=scheme)


def _sequence(obj: Mapping[str, Any], where: str) -> Decoder:
    items = read_field(obj, "decoders", list, where=where)
    steps = [
        decoder_from_json(item, name=f"{where}, item {i + 1}")
        for i, item in enumerate(items)
    ]
    return Sequence(tuple(step for step in steps if step is not None))


def _byte_level(obj: Mapping[str, Any], where: str) -> Decoder:
    # the fields are the pre-tokenizer's (one struct in Hugging Face); decoding ignores them
    read_field(obj, "add_prefix_space", bool, where=where)
    read_field(obj, "trim_offsets", bool, where=where)
    return ByteLevel()


_FROM_JSON: dict[str, Callable[[Mapping[str, Any], str], Decoder]] = {
    "BPEDecoder": lambda obj, where: BPEDecoder(
        read_field(obj, "suffix", str, where=where)
    ),
    "ByteFallback": lambda obj, where: ByteFallback(),
    "ByteLevel": _byte_level,
    "CTC": lambda obj, where: CTC(
        pad_token=read_field(obj, "pad_token", str, where=where),
        word_delimiter_token=read_field(obj, "word_delimiter_token", str, where=where),
        cleanup=read_field(obj, "cleanup", bool, where=where),
    ),
    "Fuse": lambda obj, where: Fuse(),
    "Metaspace": _metaspace,
    "Replace": lambda obj, where: Replace(
        Pattern.from_json(read_field(obj, "pattern", dict, where=where), where=where),
        read_field(obj, "content", str, where=where),
    ),
    "Sequence": _sequence,
    "Strip": lambda obj, where: Strip(
        _char(obj, "content", where),
        start=_count(obj, "start", where),
        stop=_count(obj, "stop", where),
    ),
    "WordPiece": lambda obj, where: WordPiece(
        prefix=read_field(obj, "prefix", str, where=where),
        cleanup=read_field(obj, "cleanup", bool, where=where),
    ),
}


def decoder_from_json(obj: Any, *, name: str = "tokenizer.json") -> Decoder | None:
    """The decoder a ``tokenizer.json`` describes (its ``"decoder"`` value); None for null.

    >>> decoder_from_json({"type": "WordPiece", "prefix": "##", "cleanup": True})
    WordPiece(prefix='##', cleanup=True)
    >>> decoder_from_json({"type": "Nope"})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tokenizer.json: decoder type 'Nope' is not supported yet (supported:
    BPEDecoder, ByteFallback, ByteLevel, CTC, Fuse, Metaspace, Replace, Sequence, Strip, WordPiece)
    """
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise FormatError(
            f"{name}: a decoder should be a JSON object or null, not {obj!r}"
        )
    return build_from_table(obj, _FROM_JSON, stage="decoder", name=name)

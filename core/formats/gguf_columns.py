"""The checked common part of every GGUF vocab kind: tokens, their types and scores, and
the special IDs, as :mod:`core.formats.gguf_vocab`'s builders read them.

:func:`checked_vocab` makes lists of the metadata's arrays and checks them (an empty token
renamed as llama.cpp does, one spelled twice refused); :func:`packed_vocab` keeps the
tokens packed as the reader left them (:class:`~core.formats.gguf.GGUFStrings`) and the
types one byte each, for a builder that reads them a whole column at a time (its tokens
are checked there; :mod:`core.formats.gguf_bpe`).

>>> from core.formats.gguf import read_gguf_metadata, write_gguf
>>> meta = read_gguf_metadata(write_gguf({"tokenizer.ggml.tokens": ["<s>", "a", ""],
...                                       "tokenizer.ggml.token_type": [3, 1, 1]}))
>>> v = checked_vocab(meta)
>>> v.tokens, v.added()
(['<s>', 'a', '[EMPTY_2]'], [(0, '<s>', 3)])
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.template import Template
from core.errors import FormatError
from core.formats.gguf import GGUFMetadata, GGUFStrings
from core.formats.gguf_packed import type_bytes
from core.pipeline.sentencepiece.packed import PieceColumns, has_repeats

__all__ = [
    "ADDED",
    "ARRAY_TYPES",
    "BYTE",
    "CONTROL",
    "KEY",
    "NORMAL",
    "UNKNOWN",
    "UNUSED",
    "USER_DEFINED",
    "Vocab",
    "checked_vocab",
    "packed_vocab",
    "typed_list",
]

# llama_token_type (llama.h): the same numbers as SentencePiece's piece types
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
ADDED = (CONTROL, USER_DEFINED)
KEY = "tokenizer.ggml."


@dataclass(frozen=True)
class Vocab:
    """The checked common part of every kind: tokens, their types and scores, and the
    special IDs (``None`` when the file has none and llama.cpp's default does not fit).
    ``packed``: a llama vocab's pieces as read (:mod:`core.formats.gguf_packed`), or None."""

    name: str
    tokens: Sequence[str]
    types: Sequence[int]
    scores: list[float] | None
    meta: GGUFMetadata
    packed: PieceColumns | None = None

    def special_id(self, what: str, default: int | None) -> int | None:
        """``tokenizer.ggml.<what>_token_id``, else llama.cpp's default, when in range."""
        for candidate in (self.meta.get(f"{KEY}{what}_token_id"), default):
            if isinstance(candidate, int) and not isinstance(candidate, bool):
                if 0 <= candidate < len(self.tokens):
                    return candidate
        return None

    def flag(self, what: str, default: bool) -> bool:
        value = self.meta.get(f"{KEY}{what}", default)
        return value if isinstance(value, bool) else default

    def template(self, *, bos: int | None, eos: int | None, add_bos: bool,
                 add_eos: bool) -> Template:  # fmt: skip
        """What ``add_special_tokens=True`` adds: BOS and/or EOS as the file asks."""
        prefix = (bos,) if add_bos and bos is not None else ()
        suffix = (eos,) if add_eos and eos is not None else ()
        text = " ".join([*(self.tokens[i] for i in prefix), "$A", *(self.tokens[i] for i in suffix)])
        return Template(prefix, suffix, text)

    def added(self) -> list[tuple[int, str, int]]:
        """``(id, text, type)`` of every control or user-defined token."""
        if isinstance(self.types, bytes):  # (packed: the few found by a regex, in C)
            found = [m.start() for m in re.finditer(b"[\x03\x04]", self.types)]
            return [(i, self.tokens[i], self.types[i]) for i in found]
        return [(i, t, k) for i, (t, k) in enumerate(zip(self.tokens, self.types)) if k in ADDED]


ARRAY_TYPES = {
    "strings": ("array[string]",),
    "integers": tuple(f"array[{t}]" for t in ("int32", "uint32", "int64", "uint64", "int16",
                                              "uint16", "int8", "uint8")),
    "numbers": ("array[float32]", "array[float64]", "array[int32]"),
    "bytes": ("array[int8]", "array[uint8]"),
}  # fmt: skip


def typed_list(meta: GGUFMetadata, key: str, what: str) -> list[Any] | None:
    """``meta[key]``, checked by its GGUF type (the reader built each array of one type)."""
    value = meta.get(key)
    if value is None:
        return None
    kind = meta.types.get(key, "")
    if kind not in ARRAY_TYPES[what] and not (kind == "array[string]" and value == []):
        raise FormatError(
            f"{meta.name}: {key} is {kind or type(value).__name__}, not an array of {what}; "
            "the file is damaged"
        )
    return value.tolist() if isinstance(value, (array, GGUFStrings)) else list(value)


def checked_vocab(meta: GGUFMetadata) -> Vocab:
    """The vocab of ``meta`` as lists, checked (see the module docstring)."""
    tokens = typed_list(meta, KEY + "tokens", "strings")
    if not tokens:
        raise FormatError(f"{meta.name}: tokenizer.ggml.tokens is missing or empty")
    types = typed_list(meta, KEY + "token_type", "integers")
    scores = typed_list(meta, KEY + "scores", "numbers")
    for key, values in (("token_type", types), ("scores", scores)):
        if values is not None and len(values) < len(tokens):
            raise FormatError(
                f"{meta.name}: tokenizer.ggml.{key} has {len(values):,} entries for "
                f"{len(tokens):,} tokens; the file is damaged"
            )
    # as llama.cpp: an empty token (nothing can produce it) gets a name of its own
    if "" in tokens:
        tokens = [t or f"[EMPTY_{i}]" for i, t in enumerate(tokens)]
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens if has_repeats(tokens) else ()):  # (find it)
        first = seen.setdefault(token, i)
        if first != i:
            raise FormatError(
                f"{meta.name}: token {token!r} appears twice (IDs {first} and {i}); the "
                "file is damaged"
            )
    # (whole-list conversions: a vocab has tens of thousands of entries)
    kinds = types[: len(tokens)] if types else [NORMAL] * len(tokens)  # (ints: checked)
    if scores and meta.types.get(KEY + "scores") == "array[int32]":
        scores = list(map(float, scores))  # (float arrays are floats already)
    return Vocab(meta.name, tokens, kinds, scores[: len(tokens)] if scores else None, meta)


def packed_vocab(meta: GGUFMetadata) -> Vocab | None:
    """The vocab as read packed (tokens as GGUFStrings, types one byte each), when every
    check :func:`checked_vocab` makes of the columns passes here; the builder checks the tokens."""
    tokens, types = meta.get(KEY + "tokens"), meta.get(KEY + "token_type")
    scores, n = meta.get(KEY + "scores"), len(tokens or ())
    codes = type_bytes(types, n) if types is not None else bytes([NORMAL]) * n
    if not isinstance(tokens, GGUFStrings) or not n or codes is None:
        return None
    if scores is not None and (meta.types.get(KEY + "scores") not in ARRAY_TYPES["numbers"]
                               or len(scores) < n):  # fmt: skip
        return None
    return Vocab(meta.name, tokens, codes, None, meta)

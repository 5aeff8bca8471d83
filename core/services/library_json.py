"""The library's canonical JSON: a tokenizer as bytes whose SHA-256 prefix is its ID.

A saved tokenizer is *content-addressed*: its ID is the first :data:`ID_LENGTH` hex digits of
the SHA-256 of its canonical bytes (vocab, merges, special tokens, pattern), so the same
tokenizer always gets the same ID, wherever and however often it is saved. The bytes are
JSON, sorted and compact, with every token as hex (never a pickle)::

    {"format":"tokenizer-playground/bpe-v1","merges":[["61","62"]],"pattern":"gpt2",
     "special_tokens":[],"vocab":[[0,"00"], ...]}

A built-in pattern is stored by its name (``"gpt2"``), whether it was given by name or as the
regex itself. :func:`tokenizer_json` writes the bytes (checking the tokenizer first);
:func:`tokenizer_from_json` reads them back, validating every field, since they come from
disk. ``core.services.library`` stores them (a blob file per tokenizer); ``ui.workspace`` keeps a
session's trained tokenizers in the same form. Pure functions, no I/O.

>>> data = tokenizer_json({0: b"a", 1: b"b", 2: b"ab"}, [(b"a", b"b")], [], "gpt2")
>>> tokenizer_from_json(data)
({0: b'a', 1: b'b', 2: b'ab'}, [(b'a', b'b')], [], 'gpt2')
>>> len(content_id(data)) == ID_LENGTH
True
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence

from core.engine.pretokenize import PATTERNS
from core.engine.regex_compat import regex
from core.errors import InvalidIdError, LibraryError

__all__ = [
    "ID_LENGTH",
    "canonical_pattern",
    "content_id",
    "tokenizer_from_json",
    "tokenizer_json",
    "validate_id",
]

#: Hex digits of SHA-256 kept as the ID (64 bits: collisions are not a practical concern).
ID_LENGTH = 16

_ID_RE = re.compile(r"[0-9a-f]{16}")
_BLOB_FORMAT = "tokenizer-playground/bpe-v1"


# --------------------------------------------------------------------------------------
# IDs
# --------------------------------------------------------------------------------------


def validate_id(text: object) -> str:
    """Return ``text`` if it is a library ID (16 lowercase hex digits), else raise InvalidIdError.

    IDs arrive from URLs, so this is the gate against path traversal and injection: only
    ``[0-9a-f]{16}`` passes, and nothing else is ever used to build a path or a query.

    >>> validate_id("0123456789abcdef")
    '0123456789abcdef'
    >>> validate_id("../../etc/passwd")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.errors.InvalidIdError: '../../etc/passwd' is not a valid library ID: an ID is 16 characters
    0-9 and a-f, as in the link you were given. Check that the link was copied completely.
    """
    if isinstance(text, str) and _ID_RE.fullmatch(text):
        return text
    shown = repr(text) if len(repr(text)) <= 40 else repr(text)[:37] + "..."
    raise InvalidIdError(
        f"{shown} is not a valid library ID: an ID is {ID_LENGTH} characters 0-9 and a-f, "
        "as in the link you were given. Check that the link was copied completely."
    )


def content_id(data: bytes) -> str:
    """The ID of ``data``: the first :data:`ID_LENGTH` hex digits of its SHA-256."""
    return hashlib.sha256(data).hexdigest()[:ID_LENGTH]


# --------------------------------------------------------------------------------------
# Canonical bytes
# --------------------------------------------------------------------------------------


def canonical_pattern(pattern: str) -> str:
    """Name a built-in pattern by its name, so "gpt2" and GPT2_PATTERN give the same ID.

    >>> canonical_pattern(PATTERNS["cl100k"])
    'cl100k'
    """
    if not isinstance(pattern, str) or not pattern:
        raise LibraryError("pattern must be a non-empty string: a name such as 'gpt2' or a regex.")
    for name, regex_text in PATTERNS.items():
        if pattern in (name, regex_text):
            return name
    try:
        regex.compile(pattern)
    except regex.error as err:
        raise LibraryError(f"pattern is not a valid regex ({err}); fix it before saving.") from None
    return pattern


def _check_tokenizer(
    vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]], special_tokens: Sequence[str]
) -> None:
    """Raise LibraryError unless the inputs follow the CS336 data contract."""
    if not isinstance(vocab, Mapping) or not vocab:
        raise LibraryError("vocab must be a non-empty dict[int, bytes]; train or load a tokenizer first.")
    for token_id, token in vocab.items():
        if type(token_id) is not int or token_id < 0 or not isinstance(token, bytes):
            raise LibraryError(
                f"vocab entry {token_id!r}: {token!r} is not a non-negative int ID mapped to bytes."
            )
    if isinstance(merges, (str, bytes)) or not isinstance(merges, Sequence):
        raise LibraryError("merges must be a list of (bytes, bytes) pairs.")
    for rank, pair in enumerate(merges):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(part, bytes) for part in pair)
        ):
            raise LibraryError(f"merge {rank} is {pair!r}, not a pair of bytes.")
    if isinstance(special_tokens, str) or not all(isinstance(t, str) and t for t in special_tokens):
        raise LibraryError("special_tokens must be a list of non-empty strings.")


def _canonical_blob(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str],
    pattern: str,
) -> bytes:
    """The tokenizer as canonical JSON bytes (sorted, compact, ASCII); its hash is the ID.

    >>> _canonical_blob({0: b"a"}, [], [], "gpt2")
    b'{"format":"tokenizer-playground/bpe-v1","merges":[],"pattern":"gpt2","special_tokens":[],"vocab":[[0,"61"]]}'
    """
    doc = {
        "format": _BLOB_FORMAT,
        "pattern": pattern,
        "special_tokens": list(special_tokens),
        "vocab": [[token_id, vocab[token_id].hex()] for token_id in sorted(vocab)],
        "merges": [[a.hex(), b.hex()] for a, b in merges],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def tokenizer_json(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str],
    pattern: str,
) -> bytes:
    """A tokenizer as the library's canonical JSON (checked first; never a pickle).

    >>> tokenizer_json({0: b"a"}, [], [], "gpt2")[:44]
    b'{"format":"tokenizer-playground/bpe-v1","mer'
    """
    _check_tokenizer(vocab, merges, special_tokens)
    return _canonical_blob(vocab, merges, list(special_tokens), canonical_pattern(pattern))


def tokenizer_from_json(
    data: bytes, *, where: str = "(workspace)"
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[str], str]:
    """The inverse of :func:`tokenizer_json`: ``(vocab, merges, special_tokens, pattern)``,
    every field validated (the bytes come from disk: untrusted).

    >>> tokenizer_from_json(tokenizer_json({0: b"a"}, [], [], "gpt2"))
    ({0: b'a'}, [], [], 'gpt2')
    """
    return _parse_blob(data, where)


def _parse_blob(
    data: bytes, where: str
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[str], str]:
    """Decode a blob file, validating every field (the file on disk is untrusted)."""

    def bad(what: str) -> LibraryError:
        return LibraryError(
            f"saved tokenizer file {where} is damaged ({what}); delete the entry and save it again."
        )

    try:
        doc = json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as err:
        raise bad(f"not valid JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != _BLOB_FORMAT:
        raise bad(f"format is not {_BLOB_FORMAT!r}")
    pattern, specials = doc.get("pattern"), doc.get("special_tokens")
    raw_vocab, raw_merges = doc.get("vocab"), doc.get("merges")
    if not isinstance(pattern, str) or not pattern:
        raise bad("pattern is not a string")
    if not isinstance(specials, list) or not all(isinstance(t, str) for t in specials):
        raise bad("special_tokens is not a list of strings")
    if not isinstance(raw_vocab, list) or not isinstance(raw_merges, list):
        raise bad("vocab or merges is not a list")
    try:
        vocab: dict[int, bytes] = {}
        for item in raw_vocab:
            token_id, token_hex = item
            if type(token_id) is not int or not isinstance(token_hex, str):
                raise ValueError(f"vocab item {item!r}")
            vocab[token_id] = bytes.fromhex(token_hex)
        merges: list[tuple[bytes, bytes]] = []
        for item in raw_merges:
            left, right = item
            if not isinstance(left, str) or not isinstance(right, str):
                raise ValueError(f"merge item {item!r}")
            merges.append((bytes.fromhex(left), bytes.fromhex(right)))
    except (TypeError, ValueError) as err:
        raise bad(str(err)[:80]) from None
    return vocab, merges, list(specials), pattern

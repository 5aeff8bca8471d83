"""Mistral's Tekken ``tekken_*.json``: a tiktoken rank file in JSON, with its own pattern.

Layout (mistral-common's ``Tekkenizer``)::

    {"config": {"pattern": ..., "default_vocab_size": 131072,
                "default_num_special_tokens": 1000, "version": "v3", ...},
     "vocab": [{"rank": 0, "token_bytes": "AA==", "token_str": "\\u0000"}, ...],
     "special_tokens": [{"rank": 0, "token_str": "<unk>", "is_control": true}, ...]}

Special tokens take IDs ``0 .. n-1`` and an ordinary token's ID is its rank + n. Only the
first ``default_vocab_size - n`` ranks are used (the file holds more). Files without a
``special_tokens`` list (v3 and older) use mistral-common's built-in names, then
``<SPECIAL_k>`` fillers. mistral-common encodes a special token typed in the text as
ordinary text, and so do we; ``add_special_tokens=True`` puts ``<s>`` first.

>>> doc = {"config": {"pattern": "\\\\S+|\\\\s+", "default_vocab_size": 259,
...        "default_num_special_tokens": 2, "version": "v3"},
...        "vocab": [{"rank": i, "token_bytes": __import__("base64").b64encode(bytes([i])).decode(),
...                   "token_str": None} for i in range(256)] + [
...                  {"rank": 256, "token_bytes": "aGk=", "token_str": "hi"}]}
>>> tok = tokenizer_from_tekken(doc)
>>> tok.encode("hi"), tok.encode("hi", add_special_tokens=True), tok.special_token_ids
([258], [1, 258], {'<unk>': 0, '<s>': 1})
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from core.engine.pretokenize import PATTERNS
from core.engine.template import Template
from core.engine.tokenizer import Tokenizer
from core.errors import FormatError

__all__ = ["looks_like_tekken", "tokenizer_from_tekken"]

# mistral-common's Tekkenizer.DEPRECATED_SPECIAL_TOKENS, for files that list none.
_DEFAULT_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)  # fmt: skip


def looks_like_tekken(doc: object) -> bool:
    """A parsed JSON document with Tekken's ``config`` + ``vocab`` list layout."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("config"), dict)
        and isinstance(doc.get("vocab"), list)
        and "pattern" in doc["config"]
    )


def _field(obj: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise FormatError(
            f"{where}: '{key}' should be {kind.__name__}, found {type(value).__name__}; is this "
            "a Tekken file from mistral-common?"
        )
    return value


def _specials(doc: dict[str, Any], count: int, name: str) -> dict[str, int]:
    listed = doc.get("special_tokens")
    if listed is None:
        names = list(_DEFAULT_SPECIALS[:count])
    else:
        if not isinstance(listed, list):
            raise FormatError(f"{name}: 'special_tokens' should be a list")
        names = []
        for i, item in enumerate(listed):
            where = f"{name}: special_tokens[{i}]"
            if not isinstance(item, dict) or _field(item, "rank", int, where) != i:
                raise FormatError(f"{where}: expected {{'rank': {i}, 'token_str': ...}}")
            names.append(_field(item, "token_str", str, where))
    names += [f"<SPECIAL_{i}>" for i in range(len(names), count)]
    if len(names) != count or len(set(names)) != count:
        raise FormatError(
            f"{name}: {len(names)} special tokens for {count} special IDs, or a name twice"
        )
    return {special: i for i, special in enumerate(names)}


def tokenizer_from_tekken(data: bytes | str | dict[str, Any], *, name: str = "tekken.json") -> Tokenizer:
    """A :class:`~core.engine.tokenizer.Tokenizer` (rank mode) from a Tekken file."""
    if isinstance(data, dict):
        doc = data
    else:
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise FormatError(f"{name}: not valid JSON ({err})") from None
    if not looks_like_tekken(doc):
        raise FormatError(f"{name}: not a Tekken file (it needs 'config' with a 'pattern' and a 'vocab' list)")
    config = doc["config"]
    pattern = _field(config, "pattern", str, f"{name}: config")
    n_special = _field(config, "default_num_special_tokens", int, f"{name}: config")
    vocab_size = _field(config, "default_vocab_size", int, f"{name}: config")
    entries = doc["vocab"]
    n_ordinary = vocab_size - n_special
    if not 256 <= n_ordinary <= len(entries):
        raise FormatError(
            f"{name}: default_vocab_size {vocab_size} minus {n_special} special tokens leaves "
            f"{n_ordinary} ordinary tokens; the file lists {len(entries)} (at least 256 needed)"
        )
    vocab: dict[int, bytes] = {}
    for i, entry in enumerate(entries[:n_ordinary]):
        where = f"{name}: vocab[{i}]"
        if not isinstance(entry, dict) or entry.get("rank") != i:
            raise FormatError(f"{where}: expected {{'rank': {i}, 'token_bytes': ...}} in rank order")
        try:
            vocab[n_special + i] = base64.b64decode(_field(entry, "token_bytes", str, where), validate=True)
        except (binascii.Error, ValueError):
            raise FormatError(f"{where}: token_bytes is not valid base64") from None
    specials = _specials(doc, n_special, name)
    # a pattern we know keeps the ASCII fast path and the safe cuts
    named = next((key for key, regex in PATTERNS.items() if regex == pattern), pattern)
    bos = specials.get("<s>")
    template = Template((bos,), (), "<s> $A") if bos is not None else Template()
    return Tokenizer(
        vocab, None, specials, pattern=named, name=name, template=template, specials_in_text=False
    )

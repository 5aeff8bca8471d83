"""Hugging Face ``tokenizer.json`` for byte-level BPE (the ByteLevel pre-tokenizer and decoder).

What we write loads in Hugging Face ``tokenizers`` and gives the same IDs as our encoder:

- ``model``: ``BPE`` with the vocab and merges spelled through GPT-2's byte map (``"Ġthe"``),
  merges as ``"left right"`` strings (every ``tokenizers`` version reads these; newer ones also
  read ``["left", "right"]`` pairs, which we accept on load). ``ignore_merges`` is false so
  merges decide every split, as in our encoder.
- ``pre_tokenizer``: for the GPT-2 pattern, ``ByteLevel(use_regex=True)`` (HF's built-in regex
  *is* GPT-2's); for any other pattern, ``Sequence[Split(Regex(pattern), "Isolated"),
  ByteLevel(use_regex=False)]`` (the layout HF uses for tiktoken-style models). In both,
  ``add_prefix_space=False``: HF would otherwise prepend a space and shift every ID.
- ``added_tokens``: our special tokens, also present in ``model.vocab`` under their own text
  (subtle: ``tokenizers`` only keeps an added token's ``id`` when the model vocab already holds
  that string; otherwise it assigns a new ID after the vocab).

>>> text = dumps_hf_json({0: b"<|eot|>", 1: b"a", 2: b" ", 3: b" a"}, [(b" ", b"a")], ["<|eot|>"])
>>> loads_hf_json(text)
({0: b'<|eot|>', 1: b'a', 2: b' ', 3: b' a'}, [(b' ', b'a')], ['<|eot|>'], 'gpt2')
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from core.bytes_unicode import to_gpt2_str
from core.errors import FormatError
from core.formats._text import parse_json
from core.formats.gpt2_files import decode_mapped_token
from core.formats.safe_pickle import (
    validate_merges,
    validate_merges_in_vocab,
    validate_vocab,
)
from core.pipeline.post_processors import post_processor_from_json
from core.pretokenize import GPT2_PATTERN, PATTERNS, resolve_pattern
from core.tokenizer import Tokenizer

# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _byte_level(*, use_regex: bool) -> dict[str, Any]:
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
            "use_regex": use_regex}  # fmt: skip


_POSSESSIVE_INTERVAL = re.compile(r"(?<!\\)(\{\d+(?:,\d*)?\})\+")


def hf_regex(pattern: str) -> str:
    r"""Our pattern in the regex dialect of ``tokenizers`` (Oniguruma, Ruby syntax).

    subtle: in Ruby syntax ``X{1,3}+`` is not possessive but "``X{1,3}``, one or more times",
    so cl100k's ``\p{N}{1,3}+`` would swallow ``"1000"`` whole. We drop that ``+``: a bounded
    repetition that ends its alternative (as in cl100k) matches the same either way.
    ``?+``, ``*+`` and ``++`` are possessive in both dialects and stay.

    >>> hf_regex(r"\p{N}{1,3}+|a++")
    '\\p{N}{1,3}|a++'
    """
    return _POSSESSIVE_INTERVAL.sub(r"\1", resolve_pattern(pattern))


def _pre_tokenizer(pattern: str) -> dict[str, Any]:
    regex = resolve_pattern(pattern)
    if regex == GPT2_PATTERN:
        return _byte_level(use_regex=True)
    return {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": hf_regex(regex)}, "behavior": "Isolated",
             "invert": False},  # fmt: skip
            _byte_level(use_regex=False),
        ],
    }


def dumps_hf_json(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] = (),
    *,
    pattern: str = "gpt2",
) -> str:
    """``tokenizer.json`` text for a byte-level BPE (see the module docstring for the layout)."""
    special_ids: dict[int, str] = {}
    by_bytes = {t: i for i, t in vocab.items()}
    for special in special_tokens:
        token_id = by_bytes.get(special.encode("utf-8"))
        if token_id is None:
            raise FormatError(
                f"tokenizer.json: special token {special!r} is not in the vocab; add it to the "
                "vocab before exporting"
            )
        special_ids[token_id] = special
    model_vocab: dict[str, int] = {}
    for token_id, token in sorted(vocab.items()):
        key = special_ids.get(token_id) or to_gpt2_str(token)
        if key in model_vocab:
            other = model_vocab[key]
            ordinary = other if token_id in special_ids else token_id
            raise FormatError(
                f"tokenizer.json: special token {key!r} is spelled like ordinary token ID "
                f"{ordinary} in GPT-2's byte map, so Hugging Face would confuse them; "
                "rename the special token"
            )
        model_vocab[key] = token_id
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}  # fmt: skip
            for i, s in sorted(special_ids.items())
        ],
        "normalizer": None,
        "pre_tokenizer": _pre_tokenizer(pattern),
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},  # fmt: skip
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": model_vocab,
            "merges": [f"{to_gpt2_str(a)} {to_gpt2_str(b)}" for a, b in merges],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=2)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def _pattern_of(pre: object, name: str) -> str:
    """Our pattern (a name when it is a known one) from a ``pre_tokenizer`` section."""
    if not isinstance(pre, dict):
        raise FormatError(
            f"{name}: pre_tokenizer is {pre!r}; a byte-level BPE needs the ByteLevel "
            "pre-tokenizer"
        )
    kind = pre.get("type")
    if kind == "ByteLevel":
        if pre.get("add_prefix_space"):
            raise FormatError(
                f"{name}: pre_tokenizer ByteLevel has add_prefix_space=true (a space is added "
                "before the text); the playground cannot reproduce that, set it to false"
            )
        if pre.get("use_regex", True):
            return "gpt2"
        raise FormatError(
            f"{name}: pre_tokenizer ByteLevel has use_regex=false and no Split before it; "
            "the playground needs a pre-tokenizer pattern"
        )
    if kind == "Sequence":
        steps = pre.get("pretokenizers") or []
        if (
            len(steps) == 2
            and isinstance(steps[0], dict)
            and steps[0].get("type") == "Split"
            and isinstance(steps[0].get("pattern"), dict)
            and "Regex" in steps[0]["pattern"]
            and str(steps[0].get("behavior", "")).lower() == "isolated"
            and not steps[0].get("invert")
            and isinstance(steps[1], dict)
            and steps[1].get("type") == "ByteLevel"
            and not steps[1].get("use_regex", True)
            and not steps[1].get("add_prefix_space")
        ):
            regex = str(steps[0]["pattern"]["Regex"])
            for pattern_name, known in PATTERNS.items():
                if regex in (known, hf_regex(known)):
                    return pattern_name
            return regex
    raise FormatError(
        f"{name}: pre_tokenizer {kind!r} is not supported; expected ByteLevel (use_regex=true, "
        "add_prefix_space=false) or Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)]"
    )


_BYTE_LEVEL_POST = {None, "ByteLevel", "TemplateProcessing", "Sequence"}


def is_byte_level_bpe(data: bytes | str | dict[str, Any]) -> bool:
    """Whether a ``tokenizer.json`` is a plain byte-level BPE that the fast
    :class:`~core.tokenizer.Tokenizer` reproduces exactly: a BPE model with no subword
    prefix or suffix and no byte fallback, no normalizer, the ByteLevel pre-tokenizer (alone
    or after one Split), the ByteLevel decoder, and added tokens without strip options.
    Anything else goes to :mod:`core.pipeline`, which follows every stage.

    >>> is_byte_level_bpe({"model": {"type": "BPE", "vocab": {}, "merges": []},
    ...                    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}})
    True
    >>> is_byte_level_bpe({"model": {"type": "WordPiece", "vocab": {}}})
    False
    """
    try:
        doc = data if isinstance(data, dict) else parse_json(data, "tokenizer.json")
        model = doc["model"]
        _pattern_of(doc.get("pre_tokenizer"), "tokenizer.json")
    except (FormatError, KeyError, TypeError):
        return False
    added = doc.get("added_tokens") or []
    post = doc.get("post_processor")
    decoder = doc.get("decoder")
    return (
        isinstance(model, dict)
        and model.get("type", "BPE") == "BPE"
        and not model.get("continuing_subword_prefix")
        and not model.get("end_of_word_suffix")
        and not model.get("byte_fallback")
        and not model.get("dropout")
        and doc.get("normalizer") is None
        and (decoder is None or (isinstance(decoder, dict) and decoder.get("type") == "ByteLevel"))
        and (post is None or (isinstance(post, dict) and post.get("type") in _BYTE_LEVEL_POST))
        and all(
            isinstance(a, dict) and not (a.get("lstrip") or a.get("rstrip") or a.get("single_word"))
            for a in added
        )
    )


def loads_hf_json(
    data: bytes | str, *, name: str = "tokenizer.json"
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[str], str]:
    """Read a byte-level BPE ``tokenizer.json``; returns ``(vocab, merges, special_tokens,
    pattern)``. Every added token becomes a special token (HF matches them before
    pre-tokenization, as we do)."""
    doc = parse_json(data, name)
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise FormatError(f"{name}: no \"model\" section; is this a Hugging Face tokenizer.json?")
    model = doc["model"]
    if model.get("type", "BPE") != "BPE":
        raise FormatError(
            f"{name}: model type is {model.get('type')!r}; only BPE tokenizers can be loaded"
        )
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise FormatError(
                f"{name}: model.{key} is {model[key]!r}; a byte-level BPE has none"
            )
    normalizer = doc.get("normalizer")
    if normalizer is not None:
        kind = normalizer.get("type") if isinstance(normalizer, dict) else normalizer
        raise FormatError(
            f"{name}: normalizer {kind!r} "
            "changes the text before BPE; the playground only loads tokenizers without one"
        )
    pattern = _pattern_of(doc.get("pre_tokenizer"), name)

    added: dict[int, str] = {}
    for i, entry in enumerate(doc.get("added_tokens") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not (
            isinstance(entry.get("id"), int)
        ):
            raise FormatError(f"{name}: added_tokens[{i}] needs a string content and an int id")
        added[entry["id"]] = entry["content"]

    model_vocab = model.get("vocab")
    if not isinstance(model_vocab, dict):
        raise FormatError(f"{name}: model.vocab must be an object of token -> ID")
    raw: dict[int, bytes] = {}
    for key, token_id in model_vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool):
            raise FormatError(f"{name}: model.vocab[{key!r}] is {token_id!r}, not an int ID")
        if token_id in raw:
            raise FormatError(f"{name}: model.vocab has two tokens with ID {token_id}")
        if token_id in added:
            raw[token_id] = added[token_id].encode("utf-8")
        else:
            raw[token_id] = decode_mapped_token(key, name=name, where=f"model.vocab[{key!r}]")
    for token_id, content in added.items():
        raw.setdefault(token_id, content.encode("utf-8"))
    vocab = validate_vocab(raw, name=name)

    merges_raw = model.get("merges")
    if not isinstance(merges_raw, list):
        raise FormatError(f"{name}: model.merges must be a list")
    pairs: list[tuple[bytes, bytes]] = []
    for i, item in enumerate(merges_raw):
        parts = item.split(" ") if isinstance(item, str) else item
        if not isinstance(parts, list) or len(parts) != 2 or not all(
            isinstance(p, str) and p for p in parts
        ):
            raise FormatError(
                f"{name}: model.merges[{i}] is {item!r}; expected \"left right\" or "
                "[\"left\", \"right\"]"
            )
        where = f"model.merges[{i}]"
        pairs.append(
            (
                decode_mapped_token(parts[0], name=name, where=where),
                decode_mapped_token(parts[1], name=name, where=where),
            )
        )
    merges = validate_merges(pairs, name=name)
    validate_merges_in_vocab(vocab, merges, name=name, locate=lambda i: f"model.merges[{i}]")
    return vocab, merges, [added[i] for i in sorted(added)], pattern


# ---------------------------------------------------------------------------------------------
# Tokenizer-level wrappers
# ---------------------------------------------------------------------------------------------


def tokenizer_from_hf_json(
    data: bytes | str,
    special_tokens: Sequence[str] | None = None,
    *,
    name: str = "",
    file_name: str = "tokenizer.json",
) -> Tokenizer:
    """A :class:`~core.tokenizer.Tokenizer` from ``tokenizer.json``; the pattern and special
    tokens come from the file unless ``special_tokens`` is given."""
    vocab, merges, found, pattern = loads_hf_json(data, name=file_name)
    specials = found if special_tokens is None else list(special_tokens)
    doc = parse_json(data, file_name)
    by_content = {token.decode("utf-8", "replace"): i for i, token in vocab.items()}
    by_content.update({to_gpt2_str(token): i for i, token in vocab.items()})
    template = post_processor_from_json(doc.get("post_processor"), by_content.get)
    return Tokenizer(
        vocab, merges, specials, pattern=pattern, name=name, template=template,
        # Llama 3's layout: a pre-token that is a token is taken whole, as tiktoken does
        ignore_merges=bool(doc["model"].get("ignore_merges")),
    )  # fmt: skip


def tokenizer_to_hf_json(tokenizer: Tokenizer) -> dict[str, bytes]:
    """``{"tokenizer.json": ...}`` as UTF-8 bytes."""
    text = dumps_hf_json(
        tokenizer.vocab, tokenizer.merges, list(tokenizer.special_tokens),
        pattern=tokenizer.pattern,
    )  # fmt: skip
    return {"tokenizer.json": text.encode("utf-8")}

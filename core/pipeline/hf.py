"""Hugging Face ``tokenizer.json`` -> :class:`~core.pipeline.tokenizer.PipelineTokenizer`.

Every section is read by its stage's module (``normalizer``, ``pre_tokenizer``, ``model``,
``post_processor``, ``decoder``); ``added_tokens`` are numbered as ``tokenizers`` numbers
them when it loads a file: the model's ID when the vocab has the string, else the next ID
after the vocab (the ``id`` written in the file is not used, as there). ``truncation`` and
``padding`` do not change the IDs of one text and are ignored.

>>> doc = {
...     "added_tokens": [{"id": 0, "content": "[UNK]", "special": True, "normalized": False}],
...     "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
...     "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hi": 1}, "unk_token": "[UNK]"},
... }
>>> tok = pipeline_from_hf_json(doc)
>>> tok.kind, tok.encode("hi"), tok.encode("yo"), tok.special_tokens
('WordLevel', [1], [0], ['[UNK]'])
"""

from __future__ import annotations

import json
from typing import Any

from core.engine.file_text import parse_json
from core.errors import FormatError
from core.pipeline.decoders import decoder_from_json
from core.pipeline.models import BPEModel, Model, model_from_json
from core.pipeline.normalizers import normalizer_from_json
from core.pipeline.post_processors import post_processor_from_json
from core.pipeline.pre_tokenizers import pre_tokenizer_from_json
from core.pipeline.tokenizer import AddedToken, PipelineTokenizer

__all__ = ["describe_pre_tokenizer", "pipeline_from_hf_json"]

_FLAGS = ("special", "single_word", "lstrip", "rstrip", "normalized")


def _document(data: bytes | str | dict[str, Any], name: str) -> dict[str, Any]:
    doc = data if isinstance(data, dict) else parse_json(data, name)
    if not isinstance(doc, dict):
        raise FormatError(
            f"{name}: the JSON is a {type(doc).__name__}, not an object; is this a Hugging "
            "Face tokenizer.json?"
        )
    if not isinstance(doc.get("model"), dict):
        raise FormatError(
            f'{name}: no "model" section; is this a Hugging Face tokenizer.json?'
        )
    version = doc.get("version", "1.0")
    if version != "1.0":
        raise FormatError(
            f"{name}: version {version!r}; Hugging Face (and the playground) read version "
            '"1.0" files'
        )
    return doc


def _added_tokens(raw: object, name: str) -> list[AddedToken]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise FormatError(f"{name}: added_tokens must be a list")
    out: list[AddedToken] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            raise FormatError(
                f"{name}: added_tokens[{i}] is {entry!r}; expected an object with a "
                'string "content"'
            )
        flags: dict[str, bool] = {}
        for key in _FLAGS:
            value = entry.get(key)
            if value is None:
                continue
            if not isinstance(value, bool):
                raise FormatError(
                    f"{name}: added_tokens[{i}].{key} is {value!r}; expected true or false"
                )
            flags[key] = value
        # Hugging Face's default: a special token is matched in the original text
        flags.setdefault("normalized", not flags.get("special", False))
        out.append(AddedToken(entry["content"], **flags))
    return out


def _kind(model: Model, doc: dict[str, Any]) -> str:
    """``"BPE (byte-level)"``, ``"BPE (byte fallback)"``, ``"WordPiece"``, ..."""
    if not isinstance(model, BPEModel):
        return str(model.kind)
    if model.byte_fallback:
        return "BPE (byte fallback)"
    sections = json.dumps([doc.get("pre_tokenizer"), doc.get("decoder")])
    if '"ByteLevel"' in sections:
        return "BPE (byte-level)"
    if model.end_of_word_suffix:
        return f"BPE (end-of-word suffix {model.end_of_word_suffix!r})"
    if model.continuing_subword_prefix:
        return f"BPE (continuing-subword prefix {model.continuing_subword_prefix!r})"
    return "BPE"


def describe_pre_tokenizer(obj: object) -> str:
    """A short description of a ``pre_tokenizer`` section, for display.

    >>> describe_pre_tokenizer({"type": "Metaspace", "replacement": "▁",
    ...                         "prepend_scheme": "first", "split": False})
    "Metaspace(replacement='▁', prepend_scheme='first', split=False)"
    >>> describe_pre_tokenizer({"type": "Sequence", "pretokenizers": [
    ...     {"type": "Split", "pattern": {"Regex": "[0-9]+"}, "behavior": "Isolated"},
    ...     {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]})
    "Split(Regex '[0-9]+', Isolated) + ByteLevel(add_prefix_space=False, use_regex=False)"
    """
    if obj is None:
        return "none (each piece between added tokens is one word)"
    if not isinstance(obj, dict):
        return repr(obj)
    kind = obj.get("type", "?")
    if kind == "Sequence":
        steps = obj.get("pretokenizers") or []
        return (
            " + ".join(describe_pre_tokenizer(step) for step in steps) or "Sequence[]"
        )
    if kind == "Split":
        pattern = obj.get("pattern") or {}
        shown = (
            ", ".join(f"{k} '{v}'" for k, v in pattern.items())
            if isinstance(pattern, dict)
            else repr(pattern)
        )
        invert = ", inverted" if obj.get("invert") else ""
        return f"Split({shown}, {obj.get('behavior')}{invert})"
    options = ", ".join(
        f"{k}={v!r}" for k, v in obj.items() if k not in ("type", "trim_offsets")
    )
    return f"{kind}({options})" if options else str(kind)


def pipeline_from_hf_json(
    data: bytes | str | dict[str, Any],
    *,
    name: str = "tokenizer.json",
    model: Model | None = None,
) -> PipelineTokenizer:
    """A :class:`PipelineTokenizer` from a ``tokenizer.json`` (bytes, text or the parsed
    object). A malformed file or a component the playground cannot run raises
    :class:`~core.errors.FormatError` naming it. ``model``: the model of ``data``'s
    ``"model"`` section, built already (from a table cache: the section then holds only its
    settings)."""
    doc = _document(data, name)
    if model is None:
        model = model_from_json(doc["model"], name=name)
    tokenizer = PipelineTokenizer(
        model=model,
        normalizer=normalizer_from_json(doc.get("normalizer"), name=name),
        pre_tokenizer=pre_tokenizer_from_json(doc.get("pre_tokenizer"), name=name),
        decoder=decoder_from_json(doc.get("decoder"), name=name),
        added_tokens=_added_tokens(doc.get("added_tokens"), name),
        name=name,
        kind=_kind(model, doc),
        pattern=describe_pre_tokenizer(doc.get("pre_tokenizer")),
    )
    # the template's IDs come from the file; the lookup only fills in a hand-written one
    tokenizer.template = post_processor_from_json(
        doc.get("post_processor"), tokenizer.token_to_id, name=name
    )
    return tokenizer

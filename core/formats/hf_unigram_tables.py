"""The table cache for a ``tokenizer.json`` whose model is Unigram (T5's, XLM-R's, ALBERT's
layout: pieces with log-probability scores, a precompiled normalizer), so a model opened
before opens without parsing its JSON, and the first open reads each score from the file's
own digits.

The cache (:mod:`core.formats.table_cache`, never a pickle) keeps what reading the vocab
costs: the pieces' texts (a JSON list) and their scores as packed little-endian float64
(the exact bits ``tokenizers`` reads from the file's digits, :mod:`core.pipeline.models.unigram_json`),
beside the rest of the document (normalizer, pre-tokenizer, decoder, added tokens,
post-processor, the model's settings) as JSON, as :mod:`core.formats.hf_pipeline_tables`
does for BPE. A cache file is untrusted input: its document goes through the same readers
as the file's, its columns are checked, and any failure means the file is read again.

>>> doc = {"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5]]}}
>>> data = json.dumps(doc).encode()
>>> tables = unigram_tables(doc, pipeline_from_hf_json(doc, model=unigram_model(doc, data)))
>>> tables.meta["pieces"], tables.meta["doc"]["model"]
(['<unk>', 'a'], {'type': 'Unigram', 'unk_id': 0})
>>> unigram_from_tables(tables).encode("aa?")
[1, 1, 0]
"""

from __future__ import annotations

import array
import base64
import binascii
import json
import sys
from typing import Any

from core.errors import FormatError
from core.formats.hf_pipeline_tables import cached_document, rest_of
from core.formats.table_cache import Tables
from core.pipeline.hf import pipeline_from_hf_json
from core.pipeline.tokenizer import PipelineTokenizer
from core.pipeline.models.unigram import UnigramModel
from core.pipeline.models.unigram_json import unigram_from_columns, unigram_from_json

__all__ = ["KIND", "unigram_from_tables", "unigram_model", "unigram_tables"]

#: What the cache files written here hold (raise it when that changes).
KIND = "hf-json pipeline Unigram 1"
_TABLES_KEYS = ("vocab",)


def unigram_model(
    doc: object, source: bytes, *, name: str = "tokenizer.json"
) -> UnigramModel | None:
    """The model of ``doc`` (a parsed ``tokenizer.json``) when it is Unigram, its scores
    read from ``source`` (the file ``doc`` was parsed from) as ``tokenizers`` reads them;
    None for any other model (or a document that is none: the pipeline's reader says why)."""
    section = doc.get("model") if isinstance(doc, dict) else None
    if not isinstance(section, dict):
        return None
    # (a file without "type" is Unigram when its vocab is a list, as tokenizers guesses)
    kind = section.get("type") or ("Unigram" if isinstance(section.get("vocab"), list) else None)
    if kind != "Unigram":
        return None
    return unigram_from_json(section, name, source=source)


def unigram_tables(doc: dict[str, Any], tok: PipelineTokenizer) -> Tables | None:
    """The cacheable tables of ``tok``, just read from ``doc``; None when its model is not
    a ``tokenizer.json``'s Unigram."""
    model = tok.model
    if not isinstance(model, UnigramModel) or model.flavour != "huggingface":
        return None
    tokens, scores = model.columns()
    packed = array.array("d", scores)
    if sys.byteorder == "big":  # pragma: no cover (little-endian in the file, everywhere)
        packed.byteswap()
    meta = {"kind": KIND, "doc": rest_of(doc, _TABLES_KEYS), "pieces": tokens,
            "scores": base64.b64encode(packed.tobytes()).decode("ascii")}  # fmt: skip
    return Tables({}, [], meta)


def unigram_from_tables(tables: Tables, *, name: str = "tokenizer.json") -> PipelineTokenizer:
    """The pipeline :func:`unigram_tables` kept: the same tokenizer as reading the file
    again. A :class:`FormatError` for tables that do not fit together (the caller then
    reads the file)."""
    doc, settings = cached_document(tables, KIND, _TABLES_KEYS)
    if settings.get("type") not in (None, "", "Unigram"):
        raise FormatError("cached tables: not a Unigram model's")
    tokens, scores = tables.meta.get("pieces"), tables.meta.get("scores")
    if not isinstance(tokens, list) or not set(map(type, tokens)) <= {str}:
        raise FormatError("cached tables: the pieces are no texts")
    try:
        raw = base64.b64decode(scores, validate=True) if isinstance(scores, str) else b""
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 8 * len(tokens) or tables.vocab or tables.merges:
        raise FormatError("cached tables: not one score per piece")
    packed = array.array("d")
    packed.frombytes(raw)
    if sys.byteorder == "big":  # pragma: no cover
        packed.byteswap()
    model = unigram_from_columns(settings, tokens, packed.tolist(), name)
    return pipeline_from_hf_json({**doc, "model": {**settings}}, name=name, model=model)

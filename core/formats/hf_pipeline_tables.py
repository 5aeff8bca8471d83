"""The table cache for a ``tokenizer.json`` read as a pipeline whose model is BPE (Llama 2's,
Mistral's and Gemma's layout: BPE over characters with byte fallback, a normalizer and a
decoder of its own), so a model opened before opens without its JSON.

Reading such a file means parsing megabytes of JSON and looking up every merge's two parts
and their join among the tokens; the cache keeps what comes out (:mod:`core.formats.table_cache`,
never a pickle): each token's ID and text (UTF-8), each merge as ``(left, right, merged)``
IDs in rank order, and the rest of the document (normalizer, pre-tokenizer, decoder, added
tokens, post-processor, the model's settings) as JSON. A cache file is untrusted input: its
document goes through the same readers as the file's, its IDs are checked against its
tokens, and any failure means the file is read again.

>>> from core.pipeline.hf import pipeline_from_hf_json
>>> doc = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}}
>>> tables = pipeline_tables(doc, pipeline_from_hf_json(doc))
>>> tables.merges, tables.meta["doc"]["model"]
([(0, 1, 2)], {'type': 'BPE'})
>>> pipeline_from_tables(tables).encode("abba")
[2, 1, 0]
"""

from __future__ import annotations

import operator
from typing import Any

from core.errors import FormatError
from core.formats.table_cache import Tables
from core.pipeline.hf import pipeline_from_hf_json
from core.pipeline.models import BPEModel
from core.pipeline.models.from_json import bpe_model_from_tables
from core.pipeline.tokenizer import PipelineTokenizer
from core.engine.vocab_index import IdColumns

__all__ = ["KIND", "cached_document", "pipeline_from_tables", "pipeline_tables", "rest_of"]

#: What the cache files written here hold (raise it when that changes).
KIND = "hf-json pipeline BPE 1"
_TABLES_KEYS = ("vocab", "merges")
_decode = operator.methodcaller("decode", "utf-8", "surrogatepass")


def pipeline_tables(doc: dict[str, Any], tok: PipelineTokenizer) -> Tables | None:
    """The cacheable tables of ``tok``, just read from ``doc``; None when its model is not
    BPE, or when the tables could not give it back exactly (two tokens with one ID)."""
    model = tok.model
    if not isinstance(model, BPEModel):
        return None
    vocab = model.vocab
    try:
        texts = {i: t.encode("utf-8", "surrogatepass") for t, i in vocab.items()}
    except (AttributeError, UnicodeEncodeError):
        return None
    if len(texts) != len(vocab):
        return None
    lefts, rights = model.merge_id_columns()
    made = list(map(model._merged.__getitem__, range(len(lefts))))
    meta = {"kind": KIND, "doc": rest_of(doc, _TABLES_KEYS)}
    return Tables(texts, list(zip(lefts, rights, made)), meta)


def rest_of(doc: dict[str, Any], tables_keys: tuple[str, ...]) -> dict[str, Any]:
    """``doc`` without what the tables hold (its model section's ``tables_keys``)."""
    rest = {key: value for key, value in doc.items() if key != "model"}
    rest["model"] = {k: v for k, v in doc["model"].items() if k not in tables_keys}
    return rest


def cached_document(
    tables: Tables, kind: str, tables_keys: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document :func:`rest_of` kept in ``tables`` (of builder ``kind``) and its model
    settings, or a :class:`FormatError` when it is not one."""
    doc = tables.meta.get("doc")
    if tables.meta.get("kind") != kind or not isinstance(doc, dict):
        raise FormatError("cached tables: not a pipeline's")
    settings = doc.get("model")
    if not isinstance(settings, dict) or any(key in settings for key in tables_keys):
        raise FormatError("cached tables: bad model settings")
    return doc, settings


def pipeline_from_tables(tables: Tables, *, name: str = "tokenizer.json") -> PipelineTokenizer:
    """The pipeline :func:`pipeline_tables` kept: the same tokenizer as reading the file
    again. A :class:`FormatError` for tables that do not fit together (the caller then
    reads the file)."""
    doc, settings = cached_document(tables, KIND, _TABLES_KEYS)
    try:
        texts = map(_decode, tables.vocab.values())
        vocab = dict(zip(texts, tables.vocab.keys()))
    except UnicodeDecodeError:
        raise FormatError("cached tables: a token is no text") from None
    if len(vocab) != len(tables.vocab):
        raise FormatError("cached tables: a token is spelled twice")
    triples = tables.merges
    lefts, rights = tables.columns if tables.columns is not None else (
        list(map(operator.itemgetter(0), triples)), list(map(operator.itemgetter(1), triples))
    )  # fmt: skip
    made = list(map(operator.itemgetter(2), triples))
    if made and not _all_tokens(tables.vocab, lefts, rights, made):
        raise FormatError("cached tables: a merge names no token")
    # a pair listed twice keeps its last rank, as the file's reader does
    ranks = dict(zip(zip(lefts, rights), range(len(made))))
    model = bpe_model_from_tables(
        settings, vocab, IdColumns(lefts, rights), (ranks, dict(enumerate(made))), name=name
    )
    return pipeline_from_hf_json({**doc, "model": {**settings}}, name=name, model=model)


def _all_tokens(texts: dict[int, bytes], *columns: list[int]) -> bool:
    """Whether every ID in ``columns`` is a token's (IDs ``0..n-1``, the usual vocab: the
    largest alone tells; else each is looked up)."""
    top = max(map(max, columns))
    if top < len(texts) and max(texts) == len(texts) - 1:  # (distinct IDs >= 0: 0..n-1)
        return True
    return all(set(column) <= texts.keys() for column in columns)

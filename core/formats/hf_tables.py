"""The :mod:`core.formats.table_cache` codecs of a ``tokenizer.json`` read as a pipeline: one
for a BPE model (Llama 2's, Mistral's and Gemma's layout: BPE over characters with byte
fallback, a normalizer and a decoder of its own), one for a Unigram model (T5's, XLM-R's,
ALBERT's: pieces with log-probability scores, a precompiled normalizer).

What reading such a file costs is the model's vocab, so that is what each keeps: for BPE
each token's ID and text (UTF-8) and each merge as ``(left, right, merged)`` IDs in rank
order; for Unigram the pieces' texts (a JSON list) and their scores as packed little-endian
float64 (the exact bits ``tokenizers`` reads from the file's digits,
:mod:`core.pipeline.models.unigram_json`). The rest of the document (normalizer,
pre-tokenizer, decoder, added tokens, post-processor, the model's settings) is kept as JSON.
A cache file is untrusted input: its document goes through the same readers as the file's,
its IDs and columns are checked, and any failure means the file is read again.

>>> doc = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}}
>>> tables = BPE.to_tables((pipeline_from_hf_json(doc), doc))
>>> tables.merges, tables.meta["doc"]["model"]
([(0, 1, 2)], {'type': 'BPE'})
>>> BPE.from_tables(tables).encode("abba")
[2, 1, 0]
>>> doc = {"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5]]}}
>>> data = json.dumps(doc).encode()
>>> tables = UNIGRAM.to_tables((pipeline_from_hf_json(doc, model=unigram_model(doc, data)), doc))
>>> tables.meta["pieces"], tables.meta["doc"]["model"]
(['<unk>', 'a'], {'type': 'Unigram', 'unk_id': 0})
>>> UNIGRAM.from_tables(tables).encode("aa?")
[1, 1, 0]
"""

from __future__ import annotations

import array
import base64
import binascii
import json  # noqa: F401 - the module docstring's example uses it
import operator
import sys
from typing import Any

from core.engine.vocab_index import IdColumns
from core.errors import FormatError
from core.formats.table_cache import Codec, Tables
from core.pipeline.hf import pipeline_from_hf_json
from core.pipeline.models import BPEModel
from core.pipeline.models.from_json import bpe_model_from_tables
from core.pipeline.models.unigram import UnigramModel
from core.pipeline.models.unigram_json import unigram_from_columns, unigram_from_json
from core.pipeline.tokenizer import PipelineTokenizer

__all__ = ["BPE", "CODECS", "UNIGRAM", "Built", "unigram_model"]

#: What a pipeline's builder built: the tokenizer and the parsed ``tokenizer.json``.
Built = tuple[PipelineTokenizer, dict[str, Any]]

_decode = operator.methodcaller("decode", "utf-8", "surrogatepass")


# ---------------------------------------------------------------------------------------------
# The rest of the document, beside a model's tables
# ---------------------------------------------------------------------------------------------


def _rest_of(doc: dict[str, Any], tables_keys: tuple[str, ...]) -> dict[str, Any]:
    """``doc`` without what the tables hold (its model section's ``tables_keys``)."""
    rest = {key: value for key, value in doc.items() if key != "model"}
    rest["model"] = {k: v for k, v in doc["model"].items() if k not in tables_keys}
    return rest


def _cached_document(
    tables: Tables, tables_keys: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document :func:`_rest_of` kept in ``tables`` and its model settings, or a
    :class:`FormatError` when it is not one."""
    doc = tables.meta.get("doc")
    if not isinstance(doc, dict):
        raise FormatError("cached tables: not a pipeline's")
    settings = doc.get("model")
    if not isinstance(settings, dict) or any(key in settings for key in tables_keys):
        raise FormatError("cached tables: bad model settings")
    return doc, settings


# ---------------------------------------------------------------------------------------------
# BPE
# ---------------------------------------------------------------------------------------------

_BPE_KEYS = ("vocab", "merges")


def _bpe_tables(built: Built) -> Tables | None:
    """The cacheable tables of a pipeline just read from its document; None when its model
    is not BPE, or when the tables could not give it back exactly (two tokens with one ID)."""
    tok, doc = built
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
    return Tables(texts, list(zip(lefts, rights, made)), {"doc": _rest_of(doc, _BPE_KEYS)})


def _bpe_from_tables(
    tables: Tables, *, name: str = "tokenizer.json", **_: object
) -> PipelineTokenizer:
    """The pipeline :func:`_bpe_tables` kept: the same tokenizer as reading the file again.
    A :class:`FormatError` for tables that do not fit together (the caller then reads the
    file)."""
    doc, settings = _cached_document(tables, _BPE_KEYS)
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


#: A ``tokenizer.json`` pipeline whose model is BPE.
BPE: Codec[Built, PipelineTokenizer] = Codec(
    "hf-json-pipeline-bpe", 1, _bpe_tables, _bpe_from_tables
)


# ---------------------------------------------------------------------------------------------
# Unigram
# ---------------------------------------------------------------------------------------------

_UNIGRAM_KEYS = ("vocab",)


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


def _unigram_tables(built: Built) -> Tables | None:
    """The cacheable tables of a pipeline just read from its document; None when its model
    is not a ``tokenizer.json``'s Unigram."""
    tok, doc = built
    model = tok.model
    if not isinstance(model, UnigramModel) or model.flavour != "huggingface":
        return None
    tokens, scores = model.columns()
    packed = array.array("d", scores)
    if sys.byteorder == "big":  # pragma: no cover (little-endian in the file, everywhere)
        packed.byteswap()
    meta = {"doc": _rest_of(doc, _UNIGRAM_KEYS), "pieces": tokens,
            "scores": base64.b64encode(packed.tobytes()).decode("ascii")}  # fmt: skip
    return Tables({}, [], meta)


def _unigram_from_tables(
    tables: Tables, *, name: str = "tokenizer.json", **_: object
) -> PipelineTokenizer:
    """The pipeline :func:`_unigram_tables` kept: the same tokenizer as reading the file
    again. A :class:`FormatError` for tables that do not fit together (the caller then
    reads the file)."""
    doc, settings = _cached_document(tables, _UNIGRAM_KEYS)
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


#: A ``tokenizer.json`` pipeline whose model is Unigram.
UNIGRAM: Codec[Built, PipelineTokenizer] = Codec(
    "hf-json-pipeline-unigram", 1, _unigram_tables, _unigram_from_tables
)

#: Both, in the order the cache tries them.
CODECS: tuple[Codec[Built, PipelineTokenizer], ...] = (BPE, UNIGRAM)

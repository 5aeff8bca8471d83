"""GGUF vocabs read as a pipeline whose model is BPE, opened before: the built tables from
the table cache, not the file.

A GGUF whose BPE runs in a :class:`~core.pipeline.tokenizer.PipelineTokenizer` (Gemma 4's
``gemma4`` kind, or a byte-level vocab cut by several regexes: DeepSeek's, Command-R's) is
kept as :mod:`core.formats.hf_pipeline_tables` keeps a ``tokenizer.json``: each token's text,
each merge as ``(left, right, merged)`` IDs and the rest of the document the loader made;
plus what a GGUF says beside it (the BOS/EOS template and the chat template, as
:mod:`core.formats.gguf_cache` keeps them for the fast Tokenizer). The next load of the same
bytes (keyed by their SHA-256, :func:`~core.formats.gguf_cache.key_of`) reads those instead
of the metadata's hundreds of thousands of strings: for Gemma 4 without the compiled
helpers, 0.5 s instead of 1.9 s. A cache file is untrusted input: its document goes through
the same readers as the file's, its IDs are checked against its tokens, and any failure
means the file is read again.

>>> from core.pipeline.hf import pipeline_from_hf_json
>>> doc = {"model": {"type": "BPE", "vocab": {"<bos>": 0, "a": 1, "b": 2, "ab": 3},
...                  "merges": [["a", "b"]]}}
>>> tok = pipeline_from_hf_json(doc)
>>> tok.template = Template((0,), (), "<bos> $A")
>>> again = from_tables(tables_of(doc, tok), name="model.gguf")
>>> again.encode("abba", add_special_tokens=True), again.fingerprint() == tok.fingerprint()
([0, 3, 2, 1], True)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.errors import PlaygroundError
from core.formats import hf_pipeline_tables, table_cache
from core.formats.gguf_cache import extras_of, extras_sound, restore_chat
from core.formats.table_cache import Tables
from core.pipeline.tokenizer import PipelineTokenizer
from core.engine.template import Template

__all__ = ["KIND", "from_tables", "keep", "tables_of"]

#: What the cache files written here hold (raise it when that changes).
KIND = "gguf pipeline BPE 1"


def tables_of(doc: dict[str, Any], tok: PipelineTokenizer) -> Tables | None:
    """The cacheable tables of ``tok``, just built from ``doc``; None when its model is not
    BPE (or its tables could not give it back exactly)."""
    tables = hf_pipeline_tables.pipeline_tables(doc, tok)
    if tables is None:
        return None
    return Tables(tables.vocab, tables.merges, {**tables.meta, "kind": KIND, **extras_of(tok)})


def keep(key: str, doc: dict[str, Any], tok: PipelineTokenizer) -> None:
    """Cache ``tok``'s tables under ``key`` (best effort: a read-only disk costs the speed-up)."""
    tables = tables_of(doc, tok)
    if tables is not None:
        table_cache.write_tables(key, tables)


def from_tables(tables: Tables, *, name: str) -> PipelineTokenizer | None:
    """The tokenizer :func:`tables_of` kept: the same as reading the file again; None for
    tables of another kind, or that do not fit together (the caller reads the file)."""
    meta = tables.meta
    if meta.get("kind") != KIND or not extras_sound(meta):
        return None
    # (hf_pipeline_tables reads and checks the tables and the document, kind aside)
    as_json = replace(tables, meta={**meta, "kind": hf_pipeline_tables.KIND})
    try:
        tok = hf_pipeline_tables.pipeline_from_tables(as_json, name=name)
    except PlaygroundError:
        return None
    prefix, suffix, text = meta["template"]
    if any(tok.id_to_token(i) is None for i in prefix + suffix):
        return None
    tok.template = Template(tuple(prefix), tuple(suffix), text)
    restore_chat(tok, meta)
    return tok

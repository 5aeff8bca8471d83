"""The :mod:`core.formats.table_cache` codecs of a GGUF upload's tokenizer: the fast
:class:`~core.engine.tokenizer.Tokenizer` of a byte-level BPE vocab, or a
:class:`~core.pipeline.tokenizer.PipelineTokenizer` whose model is BPE (Gemma 4's ``gemma4``
kind, or a byte-level vocab cut by several regexes: DeepSeek's, Command-R's).

The Tokenizer's codec keeps its vocab, merges (as IDs) and settings; the pipeline's keeps
what :data:`core.formats.hf_tables.BPE` keeps of a ``tokenizer.json`` (the document the
loader made). Both keep what a GGUF says beside them: the BOS/EOS template and the chat
template. The next load of the same bytes (:func:`core.formats.table_cache.key_of`) reads those instead of the
metadata's hundreds of thousands of strings (for Gemma 4 without the compiled helpers,
0.5 s instead of 1.9 s). A file read from a path is not cached (hashing a model of
gigabytes would cost more than its header), nor is an upload over :data:`MAX_CACHED_BYTES`.
A cache file is untrusted input: any value of the wrong shape, or tables the tokenizer
refuses, and the file is read again.

>>> from core.pipeline.hf import pipeline_from_hf_json
>>> doc = {"model": {"type": "BPE", "vocab": {"<bos>": 0, "a": 1, "b": 2, "ab": 3},
...                  "merges": [["a", "b"]]}}
>>> tok = pipeline_from_hf_json(doc)
>>> tok.template = Template((0,), (), "<bos> $A")
>>> again = PIPELINE.from_tables(PIPELINE.to_tables((tok, doc)), name="model.gguf")
>>> again.encode("abba", add_special_tokens=True), again.fingerprint() == tok.fingerprint()
([0, 3, 2, 1], True)
"""

from __future__ import annotations

from typing import Any, cast

from core.engine.template import Template
from core.engine.tokenizer import Tokenizer
from core.errors import PlaygroundError
from core.formats import hf_tables
from core.formats.table_cache import Codec, Tables
from core.pipeline.tokenizer import PipelineTokenizer

__all__ = ["CODECS", "MAX_CACHED_BYTES", "PIPELINE", "TOKENIZER", "Built"]

#: Uploads bigger than this (a whole model, not a vocab-only file) are not hashed.
MAX_CACHED_BYTES = 64 << 20

#: What a GGUF's builder built: its tokenizer, and the ``tokenizer.json`` document of a
#: pipeline whose tables are worth caching (else None).
Built = tuple[Tokenizer | PipelineTokenizer, dict[str, Any] | None]


# ---------------------------------------------------------------------------------------------
# What a GGUF says beside its tables: the template and the chat template
# ---------------------------------------------------------------------------------------------


def _extras_of(tok: Any) -> dict[str, Any]:
    """A GGUF tokenizer's ``template`` (what ``add_special_tokens=True`` adds) and its
    ``chat`` template with the tokens it names."""
    chat, template = tok.chat_template, tok.template
    return {
        "template": [list(template.prefix), list(template.suffix), template.text],
        "chat": None if chat is None else [chat.get(), chat.special_tokens_map],
    }


def _restore_chat(tok: Any, meta: dict[str, Any]) -> None:
    """Give ``tok`` the chat template :func:`_extras_of` kept in ``meta`` (checked by
    :func:`_extras_sound`), if any."""
    if meta["chat"] is not None:
        from core.chat import chat_template_from_gguf  # the Jinja side loads only when used

        template, named = meta["chat"]
        tok.chat_template = chat_template_from_gguf(template, **named)


_NAMED = {"bos_token", "eos_token", "unk_token", "pad_token"}


def _extras_sound(meta: dict[str, Any]) -> bool:
    """Whether ``meta``'s ``template`` and ``chat`` have the shape :func:`_extras_of` writes.

    >>> _extras_sound({"template": [[1], [], "<s> $A"], "chat": None})
    True
    >>> _extras_sound({"template": [[True], [], "<s> $A"], "chat": None})
    False
    """
    template, chat = meta.get("template"), meta.get("chat")
    return (
        isinstance(template, list) and len(template) == 3
        and all(isinstance(ids, list) and all(type(i) is int for i in ids) for ids in template[:2])
        and isinstance(template[2], str)
        and (chat is None or (
            isinstance(chat, list) and len(chat) == 2 and isinstance(chat[0], str)
            and isinstance(chat[1], dict) and set(chat[1]) <= _NAMED
            and all(isinstance(v, str) for v in chat[1].values())))
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The fast Tokenizer of a byte-level BPE vocab
# ---------------------------------------------------------------------------------------------


def _tokenizer_tables(built: Built) -> Tables | None:
    """The tables of the fast Tokenizer (None for any other tokenizer)."""
    tok = built[0]
    if not isinstance(tok, Tokenizer) or tok.by_rank:
        return None
    meta = {"specials": tok.special_token_ids, "pattern": tok.pattern,
            "ignore_merges": tok.ignore_merges, **_extras_of(tok)}  # fmt: skip
    merges = list(map(tuple.__add__, tok.merge_pair_ids, zip(tok.merged_ids)))  # (a pair + 1 ID)
    return Tables(tok.vocab, cast("list[tuple[int, int, int]]", merges), meta)


def _tokenizer_from_tables(tables: Tables, *, name: str, **_: object) -> Tokenizer | None:
    """The Tokenizer of :func:`_tokenizer_tables`'s tables, or None (a bad one)."""
    meta = tables.meta
    if not _tokenizer_sound(meta):
        return None
    prefix, suffix, text = meta["template"]
    try:
        tok = Tokenizer.from_id_merges(
            tables.vocab, tables.columns or tables.merges, meta["specials"],
            pattern=meta["pattern"], name=name, ignore_merges=meta["ignore_merges"],
            template=Template(tuple(prefix), tuple(suffix), text),
        )  # fmt: skip
    except PlaygroundError:
        return None
    if not set(prefix + suffix) <= tok.vocab.keys():
        return None
    _restore_chat(tok, meta)
    return tok


def _tokenizer_sound(meta: dict[str, Any]) -> bool:
    """Every setting of the shape :func:`_tokenizer_tables` writes."""
    specials = meta.get("specials")
    return (
        isinstance(specials, dict)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in specials.values())
        and isinstance(meta.get("pattern"), str)
        and isinstance(meta.get("ignore_merges"), bool)
        and _extras_sound(meta)
    )


#: A GGUF's fast Tokenizer (byte-level BPE).
TOKENIZER: Codec[Built, Tokenizer] = Codec(
    "gguf-byte-level-bpe", 1, _tokenizer_tables, _tokenizer_from_tables
)


# ---------------------------------------------------------------------------------------------
# A BPE pipeline
# ---------------------------------------------------------------------------------------------


def _pipeline_tables(built: Built) -> Tables | None:
    """A BPE pipeline's tables (as a ``tokenizer.json``'s) and its GGUF extras; None for any
    other tokenizer (or tables that could not give it back exactly)."""
    tok, doc = built
    if doc is None or not isinstance(tok, PipelineTokenizer):
        return None
    tables = hf_tables.BPE.to_tables((tok, doc))
    if tables is None:
        return None
    return Tables(tables.vocab, tables.merges, {**tables.meta, **_extras_of(tok)})


def _pipeline_from_tables(tables: Tables, *, name: str, **_: object) -> PipelineTokenizer | None:
    """The tokenizer :func:`_pipeline_tables` kept: the same as reading the file again;
    None for tables that do not fit together (the caller reads the file)."""
    meta = tables.meta
    if not _extras_sound(meta):
        return None
    try:
        tok = hf_tables.BPE.from_tables(tables, name=name)
    except PlaygroundError:
        return None
    if tok is None:
        return None
    prefix, suffix, text = meta["template"]
    if any(tok.id_to_token(i) is None for i in prefix + suffix):
        return None
    tok.template = Template(tuple(prefix), tuple(suffix), text)
    _restore_chat(tok, meta)
    return tok


#: A GGUF read as a pipeline whose model is BPE.
PIPELINE: Codec[Built, PipelineTokenizer] = Codec(
    "gguf-pipeline-bpe", 1, _pipeline_tables, _pipeline_from_tables
)

#: Both, in the order the cache tries them (a byte-level vocab's is the usual).
CODECS: tuple[Codec[Built, Any], ...] = (TOKENIZER, PIPELINE)

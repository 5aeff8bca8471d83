"""GGUF byte-level BPE vocabs opened before: the built tables from the table cache, not the file.

An uploaded GGUF (its bytes) whose tokenizer is the fast :class:`~core.engine.tokenizer.Tokenizer`
keeps its vocab, merges (as IDs) and settings in :mod:`core.formats.table_cache`, keyed by
the file's SHA-256; the next load of the same bytes reads those instead of the metadata's
hundreds of thousands of strings. A file read from a path is not cached (hashing a model of
gigabytes would cost more than its header), nor is an upload over :data:`MAX_CACHED_BYTES`.
A cache file is untrusted input: any value of the wrong shape, or tables the Tokenizer
refuses, and the file is read again.

>>> key_of(b"GGUF" + bytes(10)) is None   # too small to be worth it
True
"""

from __future__ import annotations

import os
from typing import IO, Any

from core.errors import PlaygroundError
from core.formats import table_cache
from core.formats.table_cache import Tables
from core.engine.template import Template
from core.engine.tokenizer import Tokenizer

__all__ = [
    "MAX_CACHED_BYTES",
    "TABLES_KIND",
    "cached",
    "extras_of",
    "extras_sound",
    "from_tables",
    "keep",
    "key_of",
    "restore_chat",
]

#: What the cache files written here hold (raise it when that changes).
TABLES_KIND = "gguf byte-level BPE 1"
#: Uploads bigger than this (a whole model, not a vocab-only file) are not hashed.
MAX_CACHED_BYTES = 64 << 20


def key_of(source: bytes | bytearray | memoryview | str | os.PathLike[str] | IO[bytes]) -> str | None:
    """The cache key of a GGUF given as bytes, or None (a path or file, too small or too big,
    or the cache off)."""
    if not isinstance(source, (bytes, bytearray, memoryview)) or len(source) > MAX_CACHED_BYTES:
        return None
    data = bytes(source)
    return table_cache.source_key(data) if table_cache.wanted(data) else None


def keep(key: str, tok: object) -> None:
    """Cache ``tok``'s tables when it is the fast Tokenizer (best effort)."""
    if not isinstance(tok, Tokenizer) or tok.by_rank:
        return
    meta = {
        "kind": TABLES_KIND, "specials": tok.special_token_ids, "pattern": tok.pattern,
        "ignore_merges": tok.ignore_merges, **extras_of(tok),
    }  # fmt: skip
    pairs = tok.merge_pair_ids
    merges = list(map(tuple.__add__, pairs, zip(tok.merged_ids)))
    table_cache.write_tables(key, Tables(tok.vocab, merges, meta))


def extras_of(tok: Any) -> dict[str, Any]:
    """What a GGUF tokenizer's cache entry keeps besides its tables: its ``template`` (what
    ``add_special_tokens=True`` adds) and its ``chat`` template with the tokens it names."""
    chat, template = tok.chat_template, tok.template
    return {
        "template": [list(template.prefix), list(template.suffix), template.text],
        "chat": None if chat is None else [chat.get(), chat.special_tokens_map],
    }


def restore_chat(tok: Any, meta: dict[str, Any]) -> None:
    """Give ``tok`` the chat template :func:`extras_of` kept in ``meta`` (checked by
    :func:`extras_sound`), if any."""
    if meta["chat"] is not None:
        from core.chat import chat_template_from_gguf  # the Jinja side loads only when used

        template, named = meta["chat"]
        tok.chat_template = chat_template_from_gguf(template, **named)


def cached(key: str, *, name: str) -> Tokenizer | None:
    """The Tokenizer of the tables cached under ``key``, or None (none, or a bad one)."""
    tables = table_cache.read_tables(key, kind=TABLES_KIND)
    return None if tables is None else from_tables(tables, name=name)


def from_tables(tables: Tables, *, name: str) -> Tokenizer | None:
    """The Tokenizer of cached ``tables`` of :data:`TABLES_KIND`, or None (a bad one)."""
    if tables.meta.get("kind") != TABLES_KIND or not _sound(tables.meta):
        return None
    meta = tables.meta
    prefix, suffix, text = meta["template"]
    try:
        tok = Tokenizer.from_id_merges(
            tables.vocab, tables.columns or tables.merges, meta["specials"], pattern=meta["pattern"], name=name,
            ignore_merges=meta["ignore_merges"], template=Template(tuple(prefix), tuple(suffix), text),
        )  # fmt: skip
    except PlaygroundError:
        return None
    if not set(prefix + suffix) <= tok.vocab.keys():
        return None
    restore_chat(tok, meta)
    return tok


_NAMED = {"bos_token", "eos_token", "unk_token", "pad_token"}


def _sound(meta: dict[str, Any]) -> bool:
    """Every setting of the shape :func:`keep` writes."""
    specials = meta.get("specials")
    return (
        isinstance(specials, dict)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in specials.values())
        and isinstance(meta.get("pattern"), str)
        and isinstance(meta.get("ignore_merges"), bool)
        and extras_sound(meta)
    )


def extras_sound(meta: dict[str, Any]) -> bool:
    """Whether ``meta``'s ``template`` and ``chat`` have the shape :func:`extras_of` writes.

    >>> extras_sound({"template": [[1], [], "<s> $A"], "chat": None})
    True
    >>> extras_sound({"template": [[True], [], "<s> $A"], "chat": None})
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

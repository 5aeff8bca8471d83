"""The optional compiled helpers (the ``tokplay_native`` package), when they were built.

core is pure Python so that it runs anywhere; where a loop is the whole cost, a C twin in
``tokplay_native`` runs it instead, with the same result on every input (tests/test_native_*.py
checks each pair). Each name here is that module, or ``None`` where it was not built (no C
compiler, Pyodide) or ``TOKPLAY_NATIVE=0`` was set: callers then take the pure path.

Callers read the attribute when they run (``native.bpe``), never bind it at import time, so
that a test can set it to ``None`` to run the pure path. Few modules read it: each hot loop's
one home (:mod:`core.engine.bpe`, :mod:`core.engine.vocab_index`,
:mod:`core.pipeline.sentencepiece.packed`, :mod:`core.pipeline.models.unigram_lattice`,
:mod:`core.train.merge`, :mod:`core.engine.pretoken_split`), which gives the same answer
either way; everything else calls those (tests/test_speed_homes.py).

Decode's join lives here whole (:func:`join_tokens`, :func:`join_text`): a tokenizer calls
one function, which takes the C twin where it was built and the pure join otherwise.

>>> bpe is None or callable(bpe.merge_joined)
True
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from operator import itemgetter
from types import ModuleType

__all__ = ["bpe", "count", "decode", "join_text", "join_tokens", "normalize", "pretok", "spm",
           "status", "tables", "train", "unigram"]  # fmt: skip


def _load(name: str) -> ModuleType | None:
    if os.environ.get("TOKPLAY_NATIVE", "1") == "0":
        return None
    try:
        return importlib.import_module(f"tokplay_native.{name}")
    except ImportError:  # not built here (no compiler, Pyodide): the pure twin runs
        return None


#: The BPE merge loop (:func:`core.engine.bpe.merge`'s two hot cases).
bpe: ModuleType | None = _load("bpe")
#: Training's merge loop (:mod:`core.train.merge`).
train: ModuleType | None = _load("train")
#: Training's pre-token counts (:mod:`core.train.count_table`).
count: ModuleType | None = _load("count")
#: Unigram's Viterbi pass (:mod:`core.pipeline.models.unigram`).
unigram: ModuleType | None = _load("unigram")
#: Loading a merge list: splitting the merges, indexing the pairs (:mod:`core.engine.vocab_index`).
tables: ModuleType | None = _load("tables")
#: A SentencePiece model's readers (:mod:`core.pipeline.sentencepiece.proto`, GGUF strings).
spm: ModuleType | None = _load("spm")
#: A char map applied to a text (``normalize_str`` in :mod:`core.pipeline.sentencepiece.normalizer`
#: and :mod:`core.pipeline.precompiled`).
normalize: ModuleType | None = _load("normalize")
#: Decode's join of the tokens' bytes (:func:`join_tokens`, :func:`join_text`).
decode: ModuleType | None = _load("decode")
#: The built-in patterns' pre-tokenization (:mod:`core.engine.pretoken_split`).
pretok: ModuleType | None = _load("pretok")


def status() -> dict[str, bool]:
    """Which compiled helpers this process uses (the benchmarks print it).

    >>> sorted(status())
    ['bpe', 'count', 'decode', 'normalize', 'pretok', 'spm', 'tables', 'train', 'unigram']
    """
    return {"bpe": bpe is not None, "count": count is not None, "decode": decode is not None,
            "normalize": normalize is not None, "pretok": pretok is not None, "spm": spm is not None,
            "tables": tables is not None, "train": train is not None,
            "unigram": unigram is not None}  # fmt: skip


# ----------------------------------------------------------------------------------------
# Decode: the tokens' bytes joined
# ----------------------------------------------------------------------------------------

_JOIN_CHUNK = 4096  # IDs the pure join fetches per itemgetter call (its tuple stays in cache)


def join_tokens(table: list[bytes] | list[bytes | None], ids: list[int]) -> bytes:
    """``b"".join(table[i] for i in ids)``: in one C pass (``tokplay_native.decode.join``)
    where built, else :func:`_join_chunks`. ``table`` maps ID -> bytes (``None`` where an ID
    is no token); an ID picks its row as a list index does (a negative one from the end).

    Raises TypeError or IndexError for an item that is no int, an ID past the table or a
    ``None`` row: the caller then looks for the bad item itself, to name it.

    >>> join_tokens([b"a", b"b", b"cd"], [2, 0, 2])
    b'cdacd'
    """
    fast = decode
    return _join_chunks(table, ids) if fast is None else fast.join(table, ids)


def join_text(table: list[bytes] | list[bytes | None], ids: list[int]) -> str:
    """``join_tokens(table, ids).decode("utf-8", "replace")`` (one U+FFFD per maximal invalid
    sequence, as tiktoken's decode), in C straight into the str where built.

    >>> join_text([b"h", b"i", b"\\xe4"], [0, 1, 2])
    'hi\\ufffd'
    """
    fast = decode
    if fast is None:
        return _join_chunks(table, ids).decode("utf-8", "replace")
    return fast.join_text(table, ids)


def _join_chunks(table: Sequence[bytes | None], ids: list[int]) -> bytes:
    """The pure join, a chunk of IDs at a time: ``itemgetter(*chunk)(table)`` indexes the list
    in C (no Python call per ID), and chunks keep the tuples small. Over twice as fast as
    ``map(table.__getitem__, ids)``.

    >>> _join_chunks([b"a", b"b", b"cd"], [2, 0, 2])
    b'cdacd'
    """
    parts = []
    for k in range(0, len(ids), _JOIN_CHUNK):
        chunk = ids[k : k + _JOIN_CHUNK]
        if len(chunk) == 1:  # itemgetter of one item returns it bare, not in a tuple
            parts.append(table[chunk[0]])  # (a None here fails in the last join)
        else:
            parts.append(b"".join(itemgetter(*chunk)(table)))
    return b"".join(parts)  # type: ignore[arg-type]

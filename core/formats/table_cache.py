"""The table cache: a model opened before opens from its built tables, not from its file.

Reading a big ``tokenizer.json`` means parsing megabytes of JSON and turning every token
back into bytes; the tables that come out (the vocab as bytes, the merges as ID pairs, a
few small settings) are kept in one file per source file, named by the source's SHA-256,
in the user's data folder (``$TOKPLAY_TABLE_CACHE_DIR``, else ``table-cache`` in the
saved-tokenizer library's folder; ``off`` turns the cache off). Never a pickle: a cache file is
untrusted input like any other. Its layout, all integers unsigned 32-bit little-endian::

    MAGIC (16 bytes)  source SHA-256 (32)  meta length, vocab size, blob length, merges
    meta (JSON)  vocab IDs  token lengths  token blob  merge IDs (left, right, merged)  SHA-256

A file that is short, long, of another source or another kind, or whose checksum fails is
not used (the caller rebuilds from the source and writes it again); writing is best effort
(a read-only disk only costs the speed-up).

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> key = source_key(b"some tokenizer file")
>>> write_tables(key, Tables({0: b"a", 1: b"b", 2: b"ab"}, [(0, 1, 2)], {"kind": "x"}),
...              folder=folder)
>>> read_tables(key, kind="x", folder=folder)
Tables(vocab={0: b'a', 1: b'b', 2: b'ab'}, merges=[(0, 1, 2)], meta={'kind': 'x'})
>>> read_tables(source_key(b"another file"), kind="x", folder=folder) is None
True
"""

from __future__ import annotations

import array
import hashlib
import itertools
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.basics import gc_paused
from core.engine.vocab_index import IdColumns
from core.paths import library_dir

__all__ = [
    "CACHE_ENV",
    "MIN_CACHED_BYTES",
    "Tables",
    "cache_folder",
    "read_tables",
    "source_key",
    "wanted",
    "write_tables",
]

#: Environment variable naming the cache folder; ``off`` (or empty) turns the cache off.
CACHE_ENV = "TOKPLAY_TABLE_CACHE_DIR"
#: Smaller source files are not cached: they load faster than a cache file is written.
#: (A 575 KB Unigram tokenizer.json loads in 6.5 ms, from its tables in 3.7 ms, and
#: writing them once costs 5 ms.)
MIN_CACHED_BYTES = 1 << 18
#: Raise the version when the meaning of what is stored changes: old files are then ignored.
MAGIC = b"TOKPLAY-TABLES\x00\x02"
_HEADER = len(MAGIC) + 32 + 16
_DIGEST = 32


@dataclass(frozen=True)
class Tables:
    """Built tables: ``vocab`` (ID -> bytes), ``merges`` as ``(left, right, merged)`` IDs in
    rank order, and ``meta``: small JSON values (``meta["kind"]`` says what built them)."""

    vocab: dict[int, bytes]
    merges: list[tuple[int, int, int]]
    meta: dict[str, Any]
    #: The merges' left and right IDs as read (a file's columns), for
    #: :meth:`~core.engine.tokenizer.Tokenizer.from_id_merges` without a tuple per merge.
    columns: IdColumns | None = field(default=None, compare=False, repr=False)


def source_key(data: bytes) -> str:
    """The cache key of a source file: its SHA-256, in hex."""
    return hashlib.sha256(data).hexdigest()


def cache_folder() -> Path | None:
    """Where cache files live, or ``None`` when the cache is off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("", "off") else Path(configured)
    return library_dir() / "table-cache"


def _path(key: str, folder: Path) -> Path:
    return folder / f"{key}.tables"


def _u32(values: Any) -> array.array[int]:
    out = array.array("I", values)
    if out.itemsize != 4:  # pragma: no cover (every platform CPython and Pyodide run on)
        raise OverflowError("no 32-bit unsigned array type")
    if sys.byteorder == "big":  # pragma: no cover
        out.byteswap()
    return out


def _encode(key: str, tables: Tables) -> bytes:
    ids = list(tables.vocab)
    tokens = list(tables.vocab.values())
    blob = b"".join(tokens)
    meta = json.dumps(tables.meta, ensure_ascii=False).encode("utf-8")
    parts = [
        MAGIC,
        bytes.fromhex(key),
        _u32([len(meta), len(ids), len(blob), len(tables.merges)]).tobytes(),
        meta,
        _u32(ids).tobytes(),
        _u32(map(len, tokens)).tobytes(),
        blob,
        _u32(itertools.chain.from_iterable(tables.merges)).tobytes(),
    ]
    body = b"".join(parts)
    return body + hashlib.sha256(body).digest()


def _decode(raw: bytes, key: str, kind: str | tuple[str, ...]) -> Tables | None:
    if len(raw) < _HEADER + _DIGEST or raw[: len(MAGIC)] != MAGIC:
        return None
    body = memoryview(raw)[:-_DIGEST]
    if hashlib.sha256(body).digest() != raw[-_DIGEST:]:
        return None
    if raw[len(MAGIC) : len(MAGIC) + 32] != bytes.fromhex(key):
        return None
    sizes = array.array("I")
    sizes.frombytes(raw[_HEADER - 16 : _HEADER])
    if sys.byteorder == "big":  # pragma: no cover
        sizes.byteswap()
    n_meta, n_vocab, n_blob, n_merges = sizes
    if _HEADER + n_meta + 8 * n_vocab + n_blob + 12 * n_merges != len(body):
        return None
    at = _HEADER
    meta = json.loads(bytes(body[at : at + n_meta]).decode("utf-8"))
    at += n_meta
    columns = []
    for count in (n_vocab, n_vocab):
        column = array.array("I")
        column.frombytes(body[at : at + 4 * count])
        columns.append(column)
        at += 4 * count
    blob = bytes(body[at : at + n_blob])
    at += n_blob
    pairs = array.array("I")
    pairs.frombytes(body[at:])
    if sys.byteorder == "big":  # pragma: no cover
        for column in (*columns, pairs):
            column.byteswap()
    ids, lengths = columns
    kinds = (kind,) if isinstance(kind, str) else kind
    if sum(lengths) != n_blob or not isinstance(meta, dict) or meta.get("kind") not in kinds:
        return None
    if ids and max(ids) > 2 * n_vocab + 1024:  # bounded memory: ID tables are lists
        return None
    ends = list(itertools.accumulate(lengths))
    tokens = list(map(blob.__getitem__, map(slice, [0, *ends[:-1]], ends)))
    vocab = dict(zip(ids, tokens))
    if len(vocab) != n_vocab:
        return None
    lefts, rights = pairs[::3].tolist(), pairs[1::3].tolist()
    merges = list(zip(lefts, rights, pairs[2::3]))
    return Tables(vocab, merges, meta, IdColumns(lefts, rights))


def wanted(source: bytes) -> bool:
    """Whether the tables of ``source`` are worth caching: a big enough file, and a cache
    that is on."""
    return len(source) >= MIN_CACHED_BYTES and cache_folder() is not None


def read_tables(
    key: str, *, kind: str | tuple[str, ...], folder: Path | None = None
) -> Tables | None:
    """The tables cached for source ``key`` by a builder of ``kind`` (or of one of several
    kinds), or ``None`` (no cache, no file, or a file that fails any check: the caller
    rebuilds)."""
    folder = folder or cache_folder()
    if folder is None:
        return None
    try:
        raw = _path(key, folder).read_bytes()
        with gc_paused():  # (hundreds of thousands of small objects, none in a cycle)
            return _decode(raw, key, kind)
    except (OSError, ValueError, OverflowError, MemoryError, RecursionError):
        return None


def write_tables(key: str, tables: Tables, *, folder: Path | None = None) -> None:
    """Keep ``tables`` for source ``key``: written to a temporary file, then renamed, so a
    reader never sees half a file. Any failure is ignored (the cache only saves time)."""
    folder = folder or cache_folder()
    if folder is None:
        return
    try:
        data = _encode(key, tables)
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tables-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, _path(key, folder))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, ValueError, OverflowError):
        return

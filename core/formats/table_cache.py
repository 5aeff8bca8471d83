"""The table cache: a model opened before opens from its built tables, not from its file.

Reading a big ``tokenizer.json`` or GGUF means parsing megabytes and turning every token
back into bytes. What comes out is kept, one file per source file and kind of tokenizer, in
the user's data folder (``$TOKPLAY_TABLE_CACHE_DIR``, else ``table-cache`` in the
saved-tokenizer library's folder; ``off`` turns the cache off), named by the source's SHA-256,
the kind and its version: ``<sha256>.<kind>-v<version>.tables``.

This module only keys, writes and reads. What a kind keeps is its :class:`Codec`'s, defined
beside the loader of that kind (as ``tokenizers`` keeps each model's serialisation beside
the model): ``to_tables`` gives the :class:`Tables` of what its builder built (the vocab as
bytes, the merges as IDs, small JSON settings), ``from_tables`` the tokenizer again. The
codecs: :data:`core.formats.hf_json.BYTE_LEVEL`, :data:`core.formats.tiktoken_file.RANKS`,
:mod:`core.formats.hf_tables` (a ``tokenizer.json`` pipeline, BPE or Unigram) and
:mod:`core.formats.gguf_tables` (a GGUF's Tokenizer or BPE pipeline).

Never a pickle: a cache file is untrusted input like any other. Its layout, all integers
unsigned 32-bit little-endian::

    MAGIC (16 bytes)  source SHA-256 (32)  meta length, vocab size, blob length, merges
    meta (JSON)  vocab IDs  token lengths  token blob  merge IDs (left, right, merged)  SHA-256

A file that is short, long, of another source, version or kind, whose checksum fails, or
whose tables the codec refuses is not used (the caller builds from the source and writes it
again); writing is atomic and best effort (a read-only disk only costs the speed-up).

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> pairs = Codec("pairs", 1, lambda built: Tables(*built, {}), lambda t, **_: t.vocab)
>>> key = source_key(b"some tokenizer file")
>>> write(key, pairs, Tables({0: b"a", 1: b"b", 2: b"ab"}, [(0, 1, 2)], {}), folder=folder)
>>> read(key, pairs, folder=folder)
Tables(vocab={0: b'a', 1: b'b', 2: b'ab'}, merges=[(0, 1, 2)], meta={'kind': 'pairs-v1'})
>>> cache_path(key, pairs, folder).name == key + ".pairs-v1.tables"
True
>>> read(source_key(b"another file"), pairs, folder=folder) is None
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from core.engine.basics import gc_paused
from core.engine.vocab_index import IdColumns
from core.errors import PlaygroundError
from core.paths import library_dir

__all__ = [
    "CACHE_ENV",
    "MIN_CACHED_BYTES",
    "Cached",
    "Codec",
    "Tables",
    "cache_folder",
    "cache_path",
    "find",
    "keep",
    "key_of",
    "lookup",
    "read",
    "source_key",
    "write",
]

B = TypeVar("B")  # what a kind's builder built
T = TypeVar("T")  # the tokenizer (or table) a kind's tables give back

#: Environment variable naming the cache folder; ``off`` (or empty) turns the cache off.
CACHE_ENV = "TOKPLAY_TABLE_CACHE_DIR"
#: Smaller source files are not cached: they load faster than a cache file is written.
#: (A 575 KB Unigram tokenizer.json loads in 6.5 ms, from its tables in 3.7 ms, and
#: writing them once costs 5 ms.)
MIN_CACHED_BYTES = 1 << 18
#: Raise the version when the meaning of what is stored changes: old files are then ignored.
MAGIC = b"TOKPLAY-TABLES\x00\x03"
_HEADER = len(MAGIC) + 32 + 16
_DIGEST = 32


@dataclass(frozen=True)
class Tables:
    """Built tables: ``vocab`` (ID -> bytes), ``merges`` as ``(left, right, merged)`` IDs in
    rank order, and ``meta``: small JSON values (read back, ``meta["kind"]`` is the codec's
    :attr:`Codec.name`)."""

    vocab: dict[int, bytes]
    merges: list[tuple[int, int, int]]
    meta: dict[str, Any]
    #: The merges' left and right IDs as read (a file's columns), for
    #: :meth:`~core.engine.tokenizer.Tokenizer.from_id_merges` without a tuple per merge.
    columns: IdColumns | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Codec(Generic[B, T]):
    """How one kind of tokenizer is kept: ``to_tables(built)`` gives the tables of what its
    builder built (None: not this kind, or nothing worth keeping); ``from_tables(tables,
    name=..., **options)`` gives the tokenizer back (None, or a
    :class:`~core.errors.PlaygroundError`, for tables that do not fit: the caller builds).
    ``kind`` and ``version`` name its files: raise ``version`` when what is kept changes."""

    kind: str
    version: int
    to_tables: Callable[[B], Tables | None]
    from_tables: Callable[..., T | None]

    @property
    def name(self) -> str:
        """The kind and version, as in file names and ``meta["kind"]``: ``"ranks-v1"``."""
        return f"{self.kind}-v{self.version}"


@dataclass(frozen=True)
class Cached(Generic[T]):
    """Tables read from the cache file ``path`` and the codec that opens them (see
    :func:`find`)."""

    codec: Codec[Any, T]
    tables: Tables
    path: Path

    def open(self, **options: Any) -> T | None:
        """The tokenizer of these tables (``options`` go to the codec: ``name``, ...), or
        None when the codec refuses them (their file is then removed)."""
        try:
            got = self.codec.from_tables(self.tables, **options)
        except PlaygroundError:  # (a cache file is untrusted input)
            got = None
        if got is None:
            _forget(self.path)
        return got


def source_key(data: bytes) -> str:
    """The cache key of a source file: its SHA-256, in hex."""
    return hashlib.sha256(data).hexdigest()


def key_of(source: object, *, max_bytes: int | None = None) -> str | None:
    """The cache key of ``source``'s bytes, or None when it is not worth caching: not bytes
    (a path or an open file: hashing a model of gigabytes would cost more than its header),
    a file under :data:`MIN_CACHED_BYTES` or over ``max_bytes``, or the cache off.

    >>> key_of("model.gguf") is None and key_of(b"tiny") is None
    True
    """
    if not isinstance(source, (bytes, bytearray, memoryview)):
        return None
    if len(source) < MIN_CACHED_BYTES or (max_bytes is not None and len(source) > max_bytes):
        return None
    if cache_folder() is None:
        return None
    return source_key(bytes(source))


def cache_folder() -> Path | None:
    """Where cache files live, or ``None`` when the cache is off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("", "off") else Path(configured)
    return library_dir() / "table-cache"


def cache_path(key: str, codec: Codec[Any, Any], folder: Path) -> Path:
    """The file of source ``key``'s tables of ``codec``'s kind in ``folder``."""
    return folder / f"{key}.{codec.name}.tables"


def _u32(values: Any) -> array.array[int]:
    out = array.array("I", values)
    if out.itemsize != 4:  # pragma: no cover (every platform CPython and Pyodide run on)
        raise OverflowError("no 32-bit unsigned array type")
    if sys.byteorder == "big":  # pragma: no cover
        out.byteswap()
    return out


def _encode(key: str, kind: str, tables: Tables) -> bytes:
    ids = list(tables.vocab)
    tokens = list(tables.vocab.values())
    blob = b"".join(tokens)
    meta = json.dumps({**tables.meta, "kind": kind}, ensure_ascii=False).encode("utf-8")
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


def _decode(raw: bytes, key: str, kind: str) -> Tables | None:
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
    if sum(lengths) != n_blob or not isinstance(meta, dict) or meta.get("kind") != kind:
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


def read(key: str, codec: Codec[Any, Any], *, folder: Path | None = None) -> Tables | None:
    """The tables of ``codec``'s kind cached for source ``key``, or ``None`` (no cache, no
    file, or a file that fails any check: the caller builds)."""
    folder = folder or cache_folder()
    if folder is None:
        return None
    path = cache_path(key, codec, folder)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    try:
        with gc_paused():  # (hundreds of thousands of small objects, none in a cycle)
            tables = _decode(raw, key, codec.name)
    except (ValueError, OverflowError, MemoryError, RecursionError):
        tables = None
    if tables is None:
        _forget(path)
    return tables


def _forget(path: Path) -> None:
    """Remove a cache file that failed its checks (best effort): it would never be used, and
    a build of another kind would never write over it."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def write(key: str, codec: Codec[Any, Any], tables: Tables, *, folder: Path | None = None) -> None:
    """Keep ``tables`` of ``codec``'s kind for source ``key``: written to a temporary file,
    then renamed, so a reader never sees half a file. Any failure is ignored (the cache only
    saves time)."""
    folder = folder or cache_folder()
    if folder is None:
        return
    try:
        data = _encode(key, codec.name, tables)
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tables-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, cache_path(key, codec, folder))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, ValueError, OverflowError):
        return


def find(key: str | None, codecs: Sequence[Codec[Any, T]]) -> Cached[T] | None:
    """The first of ``codecs`` whose tables are cached for source ``key`` (None: not cached,
    or no key), to open later with :meth:`Cached.open`."""
    folder = cache_folder()
    for codec in codecs if key is not None and folder is not None else ():
        tables = read(key, codec, folder=folder)  # type: ignore[arg-type]
        if tables is not None:
            return Cached(codec, tables, cache_path(key, codec, folder))  # type: ignore[arg-type]
    return None


def lookup(key: str | None, codecs: Sequence[Codec[Any, T]], **options: Any) -> T | None:
    """The tokenizer cached for source ``key`` by the first of ``codecs`` whose tables are
    cached and open with ``options``; None when there is none (the caller builds, then
    calls :func:`keep`)."""
    for codec in codecs:
        found = find(key, [codec])
        got = None if found is None else found.open(**options)
        if got is not None:
            return got
    return None


def keep(key: str | None, codecs: Sequence[Codec[B, Any]], built: B) -> None:
    """Cache what a builder ``built`` for source ``key`` (None: nothing is kept), as the first
    of ``codecs`` whose ``to_tables`` takes it."""
    for codec in codecs if key is not None else ():
        tables = codec.to_tables(built)
        if tables is not None:
            write(key, codec, tables)  # type: ignore[arg-type]
            return

"""Corpus files as work items: plain text in byte ranges, compressed text streamed, Parquet by
row group; what one item reads comes out as pieces that can be counted on their own.

Each file is one document or more, and no pre-token spans two (as if the documents were
joined with a special token between them, as in CS336):

- **plain text** (any other name): cut into ``(path, start, end)`` byte ranges at safe
  boundaries (:func:`core.train.corpus.find_chunk_boundaries`), one or more per worker;
- **``.gz``, ``.zst``**: one ``(path, codec)`` item, decompressed from start to end by one
  worker, cut at safe boundaries as it goes (:func:`core.train.corpus.iter_byte_chunks`); memory
  stays near two chunks. ``.zst`` needs the ``zstandard`` package (the ``corpora`` extra);
- **``.parquet``**: one ``(path, row_group, column)`` item per row group; each row of the
  text column is a document, read in batches of rows with pyarrow.

Items are plain tuples, so a process pool or a Dask cluster can send them anywhere; a piece's
``size`` is the bytes of the file it stands for, so progress adds up to the files' bytes.

>>> item_kind(("a.txt", 0, 10)), item_kind(("a.txt.gz", "gzip")), item_kind(("a.parquet", 0, "text"))
('text', 'gzip', 'parquet')
"""

from __future__ import annotations

import gzip
import itertools
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, NamedTuple, cast

from core.errors import CorpusError
from core.train.corpus import (
    DEFAULT_CHUNK_SIZE,
    file_texts,
    find_chunk_boundaries,
    iter_byte_chunks,
)

__all__ = ["CORPUS_SUFFIXES", "CorpusFiles", "FileItem", "Piece", "corpus_texts", "file_items",
           "file_kind", "is_corpus_name", "item_kind", "read_item"]

#: What a folder's files must end with to be read (a file named by itself is read whatever
#: its name: as plain text unless it ends with one of the other suffixes).
CORPUS_SUFFIXES = (".txt", ".gz", ".zst", ".parquet")
_KINDS = {".gz": "gzip", ".zst": "zstd", ".parquet": "parquet"}  # any other name: "text"
_BATCH_ROWS = 4096  # Parquet rows read at a time: a piece of about that many documents

#: ``(path, start, end)`` bytes of a plain file; ``(path, codec)`` a compressed file;
#: ``(path, row_group, column)`` documents of a Parquet file.
FileItem = tuple[str, int, int] | tuple[str, str] | tuple[str, int, str]
_Sized = Iterator[tuple[FileItem, int]]  # work items and their sizes


@dataclass(frozen=True)
class CorpusFiles:
    """Local corpus files, read in this order, each its own document(s); Parquet files give
    the strings of ``text_column``, one document per row. (A list of str would be texts: this
    type says they are paths.)

    >>> CorpusFiles(["a.txt", "b.parquet"]).paths
    ('a.txt', 'b.parquet')
    """

    paths: Sequence[str]  # (kept as a tuple)
    text_column: str = "text"

    def __post_init__(self) -> None:
        if isinstance(self.paths, (str, os.PathLike)):
            raise CorpusError("CorpusFiles takes a list of paths, not one path: CorpusFiles([path])")
        object.__setattr__(self, "paths", tuple(os.fspath(p) for p in self.paths))


class Piece(NamedTuple):
    """Part of an item, counted on its own: UTF-8 bytes cut at a safe boundary, or whole
    documents (Parquet rows)."""

    data: bytes | list[str]
    size: int  #: bytes of the file it stands for (what progress counts)
    offset: int  #: where ``data`` starts in the (decompressed) file, for a bad byte's message
    source: str  #: the file, as a message names it


def file_kind(path: str) -> str:
    """``"text"``, ``"gzip"``, ``"zstd"`` or ``"parquet"``, by the file's name.

    >>> file_kind("web.txt.zst"), file_kind("notes"), file_kind("x.PARQUET")
    ('zstd', 'text', 'parquet')
    """
    return _KINDS.get(os.path.splitext(path)[1].lower(), "text")


def is_corpus_name(name: str) -> bool:
    """Whether a folder's file is read: it ends with a corpus suffix, and neither it nor a
    folder on its way (``name`` is relative to the folder given) is hidden.

    >>> is_corpus_name("books/a.txt"), is_corpus_name("a.md"), is_corpus_name(".cache/a.txt")
    (True, False, False)
    """
    parts = name.replace(os.sep, "/").split("/")
    return name.lower().endswith(CORPUS_SUFFIXES) and not any(p.startswith(".") for p in parts)


def item_kind(item: FileItem) -> str:
    """The kind of file a work item reads (:func:`file_kind`)."""
    if len(item) == 2:
        return str(item[1])
    return "parquet" if isinstance(item[2], str) else "text"


# ─── work items ─────────────────────────────────────────────────────────────────────────


def file_items(
    files: CorpusFiles, special_tokens: Sequence[str] = (), *, chunk_size: int | None = None,
    num_workers: int = 1,
) -> tuple[list[FileItem], list[int]]:
    """The work items of ``files`` and their sizes in bytes, checking each file first (a
    Parquet file without the text column, a missing package) so that nothing fails later in
    a worker.

    ``chunk_size`` (for plain files): by default enough chunks to keep every worker busy,
    none bigger than :data:`core.train.corpus.DEFAULT_CHUNK_SIZE`.
    """
    if chunk_size is None:
        plain = sum(os.path.getsize(p) for p in files.paths if file_kind(p) == "text")
        chunk_size = max(64 << 10, min(DEFAULT_CHUNK_SIZE, plain // (4 * num_workers) + 1))
    items: list[FileItem] = []
    sizes: list[int] = []
    for path in files.paths:
        for item, size in _ITEMS[file_kind(path)](path, special_tokens, chunk_size, files.text_column):
            items.append(item)
            sizes.append(size)
    return items, sizes


def _text_items(path: str, specials: Sequence[str], chunk_size: int, _column: str) -> _Sized:
    bounds = find_chunk_boundaries(path, special_tokens=specials, chunk_size=chunk_size)
    for start, end in itertools.pairwise(bounds):
        if end > start:
            yield (path, start, end), end - start


def _stream_items(path: str, _specials: Sequence[str], _chunk: int, _column: str) -> _Sized:
    codec = file_kind(path)
    if codec == "zstd":
        _zstandard()  # say it is missing now, not in a worker
    size = os.path.getsize(path)
    if size:
        yield (path, codec), size


def _parquet_items(path: str, _specials: Sequence[str], _chunk: int, column: str) -> _Sized:
    meta = _parquet_file(path, column).metadata
    for i in range(meta.num_row_groups):
        yield (path, i, column), _column_bytes(meta.row_group(i), column)


_ITEMS: dict[str, Callable[[str, Sequence[str], int, str], _Sized]] = {
    "text": _text_items, "gzip": _stream_items, "zstd": _stream_items, "parquet": _parquet_items,
}


# ─── reading an item ────────────────────────────────────────────────────────────────────


def read_item(item: FileItem, special_tokens: Sequence[str] = ()) -> Iterator[Piece]:
    """The pieces of one work item, in order; their sizes add up to the item's.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(suffix=".gz", delete=False) as fh:
    ...     _ = fh.write(gzip.compress(b"hello world"))
    >>> [p.data for p in read_item((fh.name, "gzip"))], os.remove(fh.name)
    ([b'hello world'], None)
    """
    return _READERS[item_kind(item)](item, special_tokens)


def _byte_range_pieces(item: Any, _specials: Sequence[str]) -> Iterator[Piece]:
    path, start, end = item
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    yield Piece(data, end - start, start, os.fspath(path))


def _stream_pieces(item: Any, specials: Sequence[str]) -> Iterator[Piece]:
    """Decompress from start to end, a piece per safe chunk; a piece's size is the compressed
    bytes read for it (the file's read-ahead makes that approximate; the sum is exact)."""
    path, codec = item
    size = os.path.getsize(path)
    reported = 0
    source = f"{path} (decompressed)"
    with open(path, "rb") as raw:
        stream, broken = _decompressing(raw, codec)
        try:
            for offset, data in iter_byte_chunks(stream, special_tokens=specials):
                done = min(raw.tell(), size)
                yield Piece(data, done - reported, offset, source)
                reported = done
        except broken as err:
            name = "gzip" if codec == "gzip" else "Zstandard"
            raise CorpusError(f"{path} is not a valid {name} file ({err}): give it whole, or "
                              "decompress it and train on the text") from None
    if size > reported:
        yield Piece(b"", size - reported, 0, source)


def _row_group_pieces(item: Any, _specials: Sequence[str]) -> Iterator[Piece]:
    """One row group's documents, a batch of rows per piece (memory: one batch)."""
    path, row_group, column = item
    parquet = _parquet_file(path, column)
    meta = parquet.metadata.row_group(row_group)
    size, rows = _column_bytes(meta, column), max(1, meta.num_rows)
    done_rows = reported = 0
    for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, row_groups=[row_group], columns=[column]):
        documents = [doc for doc in batch.column(0).to_pylist() if doc]  # null and "" hold no text
        done_rows += batch.num_rows
        done = size * done_rows // rows
        yield Piece(documents, done - reported, 0, path)
        reported = done
    if size > reported:
        yield Piece([], size - reported, 0, path)


_READERS: dict[str, Callable[[Any, Sequence[str]], Iterator[Piece]]] = {
    "text": _byte_range_pieces, "gzip": _stream_pieces, "zstd": _stream_pieces,
    "parquet": _row_group_pieces,
}


def corpus_texts(files: CorpusFiles, special_tokens: Sequence[str] = ()) -> Iterator[str]:
    """The text of ``files`` piece by piece, bad UTF-8 as U+FFFD: for looking (is it blank?),
    not training (training names a bad byte's offset). Stops reading where the caller stops.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as fh:
    ...     _ = fh.write(b"caf\\xc3\\xa9 \\xff")
    >>> list(corpus_texts(CorpusFiles([fh.name]))), os.remove(fh.name)
    (['café \\ufffd'], None)
    """
    for path in files.paths:
        if file_kind(path) == "text":  # streamed; no chunk boundaries needed for a look
            yield from file_texts(path)
            continue
        for item in file_items(CorpusFiles([path], files.text_column), special_tokens)[0]:
            for piece in read_item(item, special_tokens):
                if isinstance(piece.data, bytes):
                    yield piece.data.decode("utf-8", "replace")
                else:
                    yield from piece.data


# ─── the optional packages ──────────────────────────────────────────────────────────────


def _decompressing(raw: IO[bytes], codec: str) -> tuple[IO[bytes], tuple[type[BaseException], ...]]:
    """A stream of the decompressed bytes of ``raw``, and the errors that mean a broken file."""
    if codec == "gzip":
        stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
        return stream, (OSError, EOFError, zlib.error)
    zstandard = _zstandard()
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    return reader, (zstandard.ZstdError, OSError)


def _zstandard() -> Any:
    """The ``zstandard`` module, imported on first use: optional, like the files it reads."""
    try:
        import zstandard
    except ImportError:
        raise CorpusError(
            "reading .zst files needs the zstandard package: pip install zstandard "
            "(or pip install 'tokenizer-playground[corpora]')"
        ) from None
    return zstandard


def _parquet_file(path: str, column: str) -> Any:
    """``pyarrow.parquet.ParquetFile(path)``, checked to have ``column`` as text.

    pyarrow is imported here, not at the top: it is big, and Pyodide's core needs none of it.
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise CorpusError("reading Parquet files needs the pyarrow package: pip install pyarrow") from None
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CorpusError(f"{path} is not a Parquet file we can read ({first})") from None
    schema = parquet.schema_arrow
    if column not in schema.names:
        raise CorpusError(
            f"{path} has no column {column!r}; its columns: {', '.join(schema.names) or 'none'}. "
            "Name the one with the text: text_column= (CLI: --text-column)")
    kind = schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or getattr(pa.types, "is_string_view", lambda _: False)(kind)):
        raise CorpusError(f"column {column!r} of {path} holds {kind}, not text: name a text "
                          "column with text_column= (CLI: --text-column)")
    return parquet


def _column_bytes(row_group: Any, column: str) -> int:
    """The stored (compressed) bytes of ``column`` in one Parquet row group."""
    return sum(row_group.column(j).total_compressed_size for j in range(row_group.num_columns)
               if row_group.column(j).path_in_schema == column)

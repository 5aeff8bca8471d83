"""Encoding a corpus for training: the token IDs of its files as one flat array on disk (a
NumPy ``.npy`` file, or raw little-endian integers), documents joined by an end-of-text
token, in bounded memory, in worker processes. CS336's data preparation, as
``np.memmap(path, dtype=np.uint16)`` or ``np.load(path, mmap_mode="r")`` reads it.

The corpus is what :func:`core.train.corpus_sources.find_corpus_files` finds (files, folders,
globs, ``hf://datasets/...``; plain, ``.gz``, ``.zst`` and Parquet), read as training reads
it (:mod:`core.train.corpus_readers`):

- plain text is cut into byte ranges at safe places (the start of a special token, or a space
  after a character that is not whitespace: :func:`core.train.corpus.find_chunk_boundaries`), and each worker
  reads and encodes its ranges; compressed files are decompressed here and their safe chunks
  sent to the workers; Parquet rows are sent a batch at a time;
- a special token written in the text (``<|endoftext|>`` between the documents of a file)
  becomes its ID, as tiktoken's ``encode(text, allowed_special="all")`` does;
- between documents (one file and the next, one Parquet row and the next) comes the
  ``separator``'s ID: by default the tokenizer's end-of-text token (:data:`END_OF_TEXT`).
  Nothing is added before the first document or after the last, and an empty document
  (an empty file, a null row) adds nothing;
- the results are written in order as they come, a few chunks in flight per worker, so
  memory stays near ``4 * workers`` chunks of about 1 MB whatever the corpus's size.

Cutting is exact only where no token can cross a cut: byte-level BPE with a built-in
pattern (:func:`core.explain.evaluate.cuts_exactly`); other tokenizers are refused. The ``.npy``
header is written here (:func:`npy_header`), so core needs no NumPy: Pyodide has none, and
importing it starts BLAS threads, after which worker processes could no longer be forked.
benchmarks/bench_encode_corpus.py compares the speed with tiktoken's batch encoder.

>>> import tempfile
>>> from core.train.corpus_readers import CorpusFiles
>>> from core.formats.presets import load_preset
>>> folder = tempfile.mkdtemp()
>>> for name, text in (("a.txt", "Hello world"), ("b.txt", "Bye")):
...     with open(os.path.join(folder, name), "w") as fh:
...         _ = fh.write(text)
>>> files = CorpusFiles([os.path.join(folder, "a.txt"), os.path.join(folder, "b.txt")])
>>> done = encode_corpus(load_preset("gpt2"), files, os.path.join(folder, "ids.bin"), raw=True)
>>> with open(done.path, "rb") as fh:
...     done.count, done.dtype, array("H", fh.read()).tolist()   # "Hello world", EOT, "Bye"
(5, 'uint16', [15496, 995, 50256, 3886, 68])
"""

from __future__ import annotations

import ast
import os
import struct
import sys
from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from core.errors import PlaygroundError
from core.explain.evaluate import cuts_exactly
from core.train.corpus_readers import CorpusFiles, FileItem, Piece, file_items, file_kind, read_item
from core.train.processes import plain_main, pool_context

if TYPE_CHECKING:
    from core.interface import TokenizerInterface
    from core.train.count import ProgressCallback

__all__ = ["DTYPES", "END_OF_TEXT", "EncodedCorpus", "choose_dtype", "encode_corpus",
           "npy_header", "separator_id", "text_specials"]

#: dtype name -> (``array`` typecode, NumPy ``descr``, how many IDs it holds).
DTYPES = {"uint16": ("H", "<u2", 1 << 16), "uint32": ("I", "<u4", 1 << 32)}
#: End-of-text tokens tried, in order, when no separator is named (GPT-2, cl100k, o200k and
#: CS336: ``<|endoftext|>``; Llama 3: ``<|end_of_text|>``; Mistral: ``</s>``).
END_OF_TEXT = ("<|endoftext|>", "<|end_of_text|>", "</s>")
_NPY_HEADER = 128  # bytes: magic, version, length and the dict, padded (a multiple of 64)
_IN_FLIGHT = 4  # chunks per worker sent and not yet written (none waits idle for the oldest)

#: What one task is: a byte range a worker reads itself, or a piece read here.
_Task = tuple[str, Any]


@dataclass(frozen=True)
class EncodedCorpus:
    """What :func:`encode_corpus` wrote: ``count`` IDs of ``dtype`` in ``path`` (``.npy`` unless
    ``raw``), from ``bytes`` bytes of files, in ``workers`` processes (1 where none can start)."""

    path: str
    count: int
    dtype: str
    raw: bool
    bytes: int
    workers: int


# ─── the settings, checked before any work ───────────────────────────────────────────────


def choose_dtype(n_vocab: int, requested: str | None = None, *, name: str = "the tokenizer") -> str:
    """``requested`` if it holds every ID of a vocabulary of ``n_vocab`` (None: the smallest
    that does), else a one-line refusal.

    >>> choose_dtype(50257), choose_dtype(200019), choose_dtype(50257, "uint32")
    ('uint16', 'uint32', 'uint32')
    >>> choose_dtype(200019, "uint16", name="o200k_base")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.errors.PlaygroundError: o200k_base has 200,019 token IDs, more than uint16 holds (65,536):
    use uint32 (CLI: --dtype uint32, or leave --dtype out)
    """
    if requested is not None and requested not in DTYPES:
        raise PlaygroundError(f"dtype must be one of {', '.join(DTYPES)}, not {requested!r}")
    if requested is None:
        return next(d for d, (_, _, size) in DTYPES.items() if n_vocab <= size)
    size = DTYPES[requested][2]
    if n_vocab > size:
        raise PlaygroundError(f"{name} has {n_vocab:,} token IDs, more than {requested} holds "
                              f"({size:,}): use uint32 (CLI: --dtype uint32, or leave --dtype out)")
    return requested


def text_specials(tok: TokenizerInterface) -> list[str]:
    """The special tokens that become their own ID where the text spells them (the places a
    file may be cut before), in the tokenizer's order.

    >>> from core.formats.presets import load_preset
    >>> text_specials(load_preset("gpt2"))
    ['<|endoftext|>']
    """
    if not tok.capabilities.details:
        return []
    found = []
    for special in tok.special_tokens:  # type: ignore[attr-defined]
        tokens = tok.encode_details(special).tokens  # type: ignore[attr-defined]
        if len(tokens) == 1 and tokens[0].is_special:
            found.append(special)
    return found


def separator_id(tok: TokenizerInterface, separator: str | None = None) -> int | None:
    """The ID put between documents: ``separator``'s, which must be a special token of
    ``tok``, or else the first of :data:`END_OF_TEXT` that ``tok`` has (None if none).

    >>> from core.formats.presets import load_preset
    >>> separator_id(load_preset("gpt2")), separator_id(load_preset("cl100k_base"), "<|fim_middle|>")
    (50256, 100259)
    """
    specials = text_specials(tok)
    if separator is None:
        separator = next((s for s in END_OF_TEXT if s in specials), None)
        if separator is None:
            return None
    elif separator not in specials:
        shown = ", ".join(specials[:5]) + (" ..." if len(specials) > 5 else "")
        raise PlaygroundError(f"separator {separator!r} is not a special token of "
                              f"{tok.name or 'the tokenizer'} (its special tokens: {shown or 'none'})")
    return tok.encode(separator)[0]


def npy_header(dtype: str, count: int) -> bytes:
    """The header of a NumPy ``.npy`` file (format 1.0) holding ``count`` IDs of ``dtype``,
    always :data:`_NPY_HEADER` bytes long, so that it can be written first with a guess and
    again at the end with the real count.

    >>> header = npy_header("uint16", 3)
    >>> len(header), header[:8], header[10:].rstrip()
    (128, b'\\x93NUMPY\\x01\\x00', b"{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }")
    """
    text = f"{{'descr': '{DTYPES[dtype][1]}', 'fortran_order': False, 'shape': ({count},), }}"
    body = text.encode("latin-1").ljust(_NPY_HEADER - 10 - 1) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body


def _read_npy_count(header: bytes) -> int:
    """The count :func:`npy_header` wrote (for tests and the doctest).

    >>> _read_npy_count(npy_header("uint32", 12))
    12
    """
    return int(ast.literal_eval(header[10:].decode("latin-1"))["shape"][0])


# ─── the work: what a worker does with one task ───────────────────────────────────────────


@dataclass(frozen=True)
class _Job:
    """What every task needs: the tokenizer, the array typecode, the separator's ID (between
    Parquet rows), the special tokens that cut files and how to read bad UTF-8."""

    tok: TokenizerInterface
    typecode: str
    separator: int | None
    specials: tuple[str, ...]
    errors: str


def _decoded(piece: Piece, errors: str) -> str:
    try:
        return piece.data.decode("utf-8", errors)  # type: ignore[union-attr]
    except UnicodeDecodeError as err:
        bad = err.object[err.start:err.end].hex(" ")
        raise PlaygroundError(
            f"{piece.source} is not UTF-8 text: byte {bad} at byte offset {piece.offset + err.start} "
            f"({err.reason}). Re-save it as UTF-8, or pass errors='replace' (CLI: --errors "
            "replace) to read bad bytes as U+FFFD.") from None


def _encode_piece(piece: Piece, job: _Job, out: array[int]) -> None:
    """Append the IDs of one piece: text, or documents (Parquet rows) joined by the separator."""
    # (fromlist: 4x faster than extend, which takes any iterable)
    if isinstance(piece.data, bytes):
        out.fromlist(job.tok.encode(_decoded(piece, job.errors)))
        return
    for i, document in enumerate(piece.data):
        if i and job.separator is not None:
            out.append(job.separator)
        out.fromlist(job.tok.encode(document))


def _run_task(task: _Task, job: _Job) -> bytes:
    """The IDs of one task as little-endian bytes of the job's dtype."""
    kind, what = task
    pieces = read_item(what, job.specials) if kind == "item" else [what]
    out = array(job.typecode)
    for piece in pieces:
        _encode_piece(piece, job, out)
    if sys.byteorder == "big":
        out.byteswap()
    return out.tobytes()


# subtle: set only inside pool worker processes (by _init_worker), never in the parent: the
# job, sent once per worker instead of once per task.
_worker_job: _Job | None = None


def _init_worker(job: _Job) -> None:
    global _worker_job
    _worker_job = job


def _worker_task(task: _Task) -> bytes:
    assert _worker_job is not None  # (set by _init_worker in every worker)
    return _run_task(task, _worker_job)


# ─── the tasks, in order ──────────────────────────────────────────────────────────────────


def _tasks(items: Sequence[FileItem], sizes: Sequence[int],
           specials: Sequence[str]) -> Iterator[tuple[_Task, int, bool]]:
    """``(task, bytes it stands for, starts a document)`` for each task in corpus order. A
    plain file's byte ranges are read by the workers; compressed files and Parquet are read
    here, a piece at a time, and the pieces sent."""
    previous = None
    for item, size in zip(items, sizes):
        path = item[0]
        first = path != previous
        previous = path
        if file_kind(path) == "text":
            yield ("item", item), size, first
            continue
        parquet = file_kind(path) == "parquet"
        for piece in read_item(item, specials):
            yield ("piece", piece), piece.size, first or parquet  # every row batch: new rows
            first = False


# ─── encoding a corpus ────────────────────────────────────────────────────────────────────


def encode_corpus(
    tok: TokenizerInterface, files: CorpusFiles, out: str | os.PathLike[str], *,
    dtype: str | None = None, raw: bool = False, workers: int = 1, separator: str | None = None,
    errors: str = "strict", on_progress: ProgressCallback | None = None,
) -> EncodedCorpus:
    """Write the IDs of ``files`` to ``out`` (see the module docstring) and say what was written.

    ``dtype``: ``"uint16"`` or ``"uint32"`` (None: the smallest that holds every ID);
    ``raw``: no ``.npy`` header; ``workers``: processes that encode (1: this one);
    ``separator``: the special token between documents (None: :data:`END_OF_TEXT`);
    ``on_progress("encoding", done, total)``: bytes of the files done so far. The file
    appears only when complete: an error leaves no half-written ``out``.
    """
    out = os.fspath(out)
    if not cuts_exactly(tok):
        raise PlaygroundError(
            f"{tok.name or 'this tokenizer'} is {tok.kind}: encoding a corpus cuts it into chunks, "
            "which gives the IDs of the whole text only for byte-level BPE with a built-in pattern "
            "(gpt2, cl100k_base, o200k_base, Llama 3, tokenizers trained here)")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise PlaygroundError(f"workers must be a whole number, 1 or more, not {workers!r}")
    if errors not in ("strict", "replace"):
        raise PlaygroundError(f"errors must be 'strict' or 'replace', not {errors!r}")
    dtype = choose_dtype(tok.n_vocab, dtype, name=tok.name or "the tokenizer")
    sep = separator_id(tok, separator)
    if sep is None and (len(files.paths) > 1 or any(file_kind(p) == "parquet" for p in files.paths)):
        raise PlaygroundError(
            f"{tok.name or 'the tokenizer'} has no end-of-text token ({', '.join(END_OF_TEXT)}) to "
            "put between documents: name one of its special tokens (CLI: --separator TOKEN)")
    specials = tuple(text_specials(tok))
    items, sizes = file_items(files, specials, num_workers=workers)
    job = _Job(tok, DTYPES[dtype][0], sep, specials, errors)
    tasks = _tasks(items, sizes, specials)
    with _OutputFile(out, dtype, raw) as output:
        pool = _pool(job, workers) if workers > 1 else None  # None: encode in this process
        _write_all(_results(tasks, job, pool, workers), job, output, sep, sum(sizes), on_progress)
    return EncodedCorpus(out, output.count, dtype, raw, sum(sizes), workers if pool else 1)


class _OutputFile:
    """``out``, written through a temporary file beside it that takes its name only when
    complete (``.npy``: the header written first, and again with the final count)."""

    def __init__(self, out: str, dtype: str, raw: bool) -> None:
        if os.path.isdir(out):
            raise PlaygroundError(f"{out!r} is a folder: give the name of the file to write")
        self.out, self.dtype, self.raw = out, dtype, raw
        self.part = f"{out}.{os.getpid()}.part"
        self.count = 0
        self._size = array(DTYPES[dtype][0]).itemsize
        try:
            self.fh: IO[bytes] = open(self.part, "wb")  # noqa: SIM115 - closed by __exit__
        except OSError as err:
            raise PlaygroundError(f"cannot write {out!r} ({(err.strerror or str(err)).lower()}): "
                                  "give a file in a folder you can write to") from None
        if not raw:
            self.fh.write(npy_header(dtype, 0))

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.count += len(data) // self._size

    def __enter__(self) -> _OutputFile:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        try:
            if kind is None and not self.raw:
                self.fh.seek(0)
                self.fh.write(npy_header(self.dtype, self.count))
            self.fh.close()
            if kind is None:
                os.replace(self.part, self.out)
        finally:
            if os.path.exists(self.part):
                os.remove(self.part)


def _write_all(results: Iterator[tuple[bytes, int, bool]], job: _Job, output: _OutputFile,
               sep: int | None, total: int, on_progress: ProgressCallback | None) -> None:
    """Write the tasks' IDs in order, the separator before each document but the first."""
    separator = b"" if sep is None else array(job.typecode, [sep]).tobytes()
    if sys.byteorder == "big":
        separator = separator[::-1]
    done = 0
    for data, size, first in results:
        if data:
            if first and output.count:
                output.write(separator)
            output.write(data)
        done += size
        if on_progress is not None:
            on_progress("encoding", done, total)


def _results(tasks: Iterator[tuple[_Task, int, bool]], job: _Job, pool: Any,
             workers: int) -> Iterator[tuple[bytes, int, bool]]:
    """``(IDs as bytes, size, starts a document)`` per task, in order, run by ``pool``'s
    ``workers`` processes (at most ``_IN_FLIGHT * workers`` tasks sent and not yet taken)."""
    if pool is None:  # one worker, or this Python makes no processes (Pyodide): here
        for task, size, first in tasks:
            yield _run_task(task, job), size, first
        return
    from concurrent.futures.process import BrokenProcessPool

    pending: deque[tuple[Any, int, bool]] = deque()
    try:
        with plain_main():  # the workers start on the first submit
            for task, size, first in tasks:
                pending.append((pool.submit(_worker_task, task), size, first))
                if len(pending) >= _IN_FLIGHT * workers:
                    break
        for task, size, first in tasks:
            future, size0, first0 = pending.popleft()
            yield future.result(), size0, first0  # re-raises a worker's error here
            pending.append((pool.submit(_worker_task, task), size, first))
        while pending:
            future, size, first = pending.popleft()
            yield future.result(), size, first
    except BrokenProcessPool:
        raise PlaygroundError("a worker process encoding the corpus died (killed, or out of "
                              "memory): try again with fewer workers") from None
    finally:
        pool.shutdown(cancel_futures=True)


def _pool(job: _Job, workers: int) -> Any:
    """A ``ProcessPoolExecutor`` of ``workers`` processes holding ``job``, or None where this
    Python cannot make processes (Pyodide)."""
    try:
        from concurrent.futures import ProcessPoolExecutor

        # fork where safe (the workers inherit the tokenizer), else forkserver: core.train.processes
        ctx = pool_context(preload=["core.train.encode_corpus"])
        return ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                                   initargs=(job,))
    except (ImportError, OSError, NotImplementedError, ValueError):
        return None

"""Phase 1 of training: count the distinct pre-tokens of a corpus.

Cut the corpus at special tokens (dropped: they are never merged), cut each piece with the
pre-tokenizer regex, count each distinct pre-token. A file is read chunk by chunk, cut at
safe places (:mod:`core.train.corpus`), optionally by several processes (this one counts too);
an iterable of texts is counted text by text, so no pre-token spans two texts. On a Dask
cluster (``dask=``, :mod:`core.train.count_dask`) the same work items are counted as Dask tasks
by :func:`count_items`, and their counts summed here. ASCII
stretches go through the stdlib `re` twin of the pattern
(:func:`core.engine.pretokenize.ascii_pattern`), several times faster than `regex` and exact there;
a file chunk is not even decoded outside the spans around its non-ASCII bytes. Each process
counts into the counts of :mod:`core.train.count_table` (a C table that also cuts GPT-2's ASCII
stretches itself, where it was built), and the result is a ``Counter``.

>>> counts, stats = count_pretokens(["the cat", "the"])
>>> counts["the"], counts[" cat"], stats["distinct_pretokens"]
(2, 1, 2)
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any

from core.engine.pretoken_split import splitter as builtin_cut
from core.engine.pretokenize import (
    GPT2_PATTERN,
    ascii_pattern,
    compile_pattern,
    mixed_byte_regions,
    mixed_regions,
    resolve_pattern,
    special_splitter,
)
from core.errors import CorpusError
from core.train.corpus import decode_chunk
from core.train.corpus_readers import CorpusFiles, FileItem, file_items, read_item
from core.train.count_dask import count_on_dask
from core.train.count_table import PretokenCounts, PureCounts, new_counts
from core.train.processes import plain_main, pool_context

__all__ = ["Corpus", "ProgressCallback", "count_in_steps", "count_items", "count_pretoken_table", "count_pretokens",
           "count_table_in_steps"]

#: ``on_progress(phase, done, total)``: phase "counting" (bytes) or "merging" (merges).
ProgressCallback = Callable[[str, int, int], None]

#: A file path (read chunk by chunk), files (:class:`~core.train.corpus_readers.CorpusFiles`: each
#: its own documents), or texts (each pre-tokenized on its own).
Corpus = str | os.PathLike[str] | CorpusFiles | Iterable[str]


def _findall(pattern: str) -> Callable[[str], list[str]]:
    """``pattern``'s findall: a built-in pattern's C cut where it was built
    (:mod:`core.engine.pretoken_split`, the same pre-tokens), else `regex`'s."""
    return builtin_cut(pattern) or compile_pattern(pattern).findall


def _findall_gpt2(text: str, counts: Counter[str] | PretokenCounts) -> None:
    """Count GPT-2 pre-tokens of ``text`` into ``counts``: stdlib `re` on ASCII stretches
    (about 3x faster than `regex` here), `regex` only around non-ASCII characters, cut at safe
    places (:func:`core.engine.pretokenize.mixed_regions`), so the counts are exact.

    >>> c = Counter(); _findall_gpt2("naïve café ok", c); sorted(c)
    [' café', ' ok', 'naïve']
    """
    fast = ascii_pattern("gpt2").findall  # type: ignore[union-attr]  # built in: never None
    if text.isascii():
        counts.update(fast(text))
        return
    slow = _findall("gpt2")
    pos = 0  # start of the not-yet-counted rest
    for start, end in mixed_regions(text):
        if start > pos:
            counts.update(fast(text[pos:start]))
        counts.update(slow(text[start:end]))
        pos = end
    if pos < len(text):
        counts.update(fast(text[pos:]))


def _count_text(
    text: str, specials: tuple[str, ...], pattern: str, counts: Counter[str] | PretokenCounts | None = None
) -> Counter[str] | PretokenCounts:
    """Pre-token counts of one text (added to ``counts`` if given); special tokens are cut
    out and not counted.

    >>> _count_text("ab ab<|s|>ab", ("<|s|>",), "gpt2")
    Counter({'ab': 2, ' ab': 1})
    """
    if counts is None:
        counts = Counter()
    pieces = [text] if not specials else special_splitter(specials).split(text)  # type: ignore[union-attr]
    if resolve_pattern(pattern) == GPT2_PATTERN:
        for piece in pieces:
            if piece:
                _findall_gpt2(piece, counts)
    else:
        findall = _findall(pattern)
        for piece in pieces:
            if piece:
                counts.update(findall(piece))
    return counts


_Item = str | FileItem  # a text, or part of a file: (path, start, end), ... (core.train.corpus_readers)


def _count_bytes(
    data: bytes, specials: tuple[str, ...], fast: re.Pattern[str], pattern: str,
    counts: Counter[str] | PretokenCounts, *, offset: int, errors: str, source: str,
) -> None:
    """Count the pre-tokens of UTF-8 ``data`` (one file chunk) without decoding it whole.

    The bytes are read as Latin-1, one character per byte, a copy and no decoding: the ASCII
    stretches are ASCII text already and go to the stdlib `re` twin ``fast`` as they are; only
    the spans around bytes >= 0x80 (:func:`core.engine.pretokenize.mixed_byte_regions`, cut where
    pre-tokens restart) are decoded and cut by `regex`. Special tokens are found in the same
    view (a UTF-8 string matches as its bytes, at character boundaries only). The counts are
    those of decoding first: tests/test_train_speed_paths.py checks it. ``counts``: a Counter,
    or the counts of :mod:`core.train.count_table` (whose ``add_ascii`` cuts ASCII text in C).

    >>> c = Counter(); _count_bytes("naïve café<|s|>ok".encode(), ("<|s|>",),
    ...     ascii_pattern("gpt2"), "gpt2", c, offset=0, errors="strict", source="x"); sorted(c)
    [' café', 'naïve', 'ok']
    """
    tally = PureCounts(fast, counts) if isinstance(counts, Counter) else counts
    text = data.decode("latin-1")
    splitter = special_splitter(tuple(sp.encode("utf-8").decode("latin-1") for sp in specials))
    slow = _findall(pattern)
    for piece in [text] if splitter is None else splitter.split(text):
        if piece.isascii():
            tally.add_ascii(piece)
            continue
        pos = 0  # start of the not-yet-counted rest
        for start, end in mixed_byte_regions(piece):
            if start > pos:
                tally.add_ascii(piece[pos:start])
            try:
                tally.update(slow(piece[start:end].encode("latin-1").decode("utf-8", errors)))
            except UnicodeDecodeError:
                decode_chunk(data, offset=offset, errors=errors, source=source)  # names the first bad byte
                raise
            pos = end
        if pos < len(piece):
            tally.add_ascii(piece[pos:])


def _count_item(item: _Item, specials: tuple[str, ...], pattern: str, errors: str, counts: PretokenCounts) -> int:
    """Count one text or file item into ``counts``; returns its size (characters or bytes)."""
    return sum(_item_steps(item, specials, pattern, errors, counts))


def _item_steps(
    item: _Item, specials: tuple[str, ...], pattern: str, errors: str, counts: PretokenCounts
) -> Iterator[int]:
    """Count one item into ``counts`` piece by piece (:func:`core.train.corpus_readers.read_item`),
    yielding each piece's size: a long compressed file shows progress, and can be stopped,
    as it goes. File bytes with a built-in pattern are counted as bytes (:func:`_count_bytes`);
    Parquet rows are documents, each counted on its own."""
    if isinstance(item, str):
        _count_text(item, specials, pattern, counts)
        yield len(item)
        return
    fast = ascii_pattern(pattern)
    for piece in read_item(item, specials):
        if not isinstance(piece.data, bytes):
            for document in piece.data:
                _count_text(document, specials, pattern, counts)
        elif fast is None:
            text = decode_chunk(piece.data, offset=piece.offset, errors=errors, source=piece.source)
            _count_text(text, specials, pattern, counts)
        else:
            _count_bytes(piece.data, specials, fast, pattern, counts, offset=piece.offset, errors=errors,
                         source=piece.source)
        yield piece.size


def count_items(items: Sequence[_Item], specials: tuple[str, ...], pattern: str, errors: str) -> Counter[str]:
    """The pre-token counts of some work items: what one Dask task counts (:mod:`core.train.count_dask`).

    >>> count_items(["ab ab<|s|>", "ab"], ("<|s|>",), "gpt2", "strict")
    Counter({'ab': 2, ' ab': 1})
    """
    counts = new_counts(pattern)
    for item in items:
        _count_item(item, specials, pattern, errors, counts)
    return counts.counter()


# subtle: set only inside pool worker processes (by _init_worker), never in the parent: the
# shared counters (bytes counted so far, for progress; the next file chunk to claim).
_worker_shared: tuple[Any, Any] | None = None


def _init_worker(progress: Any, next_item: Any) -> None:
    global _worker_shared
    _worker_shared = (progress, next_item)


def _count_task(
    items: Sequence[_Item], specials: tuple[str, ...], pattern: str, errors: str, *,
    shared: tuple[Any, Any] | None = None, claim: bool = True, on_chunk: Callable[[], None] | None = None,
) -> PretokenCounts:
    """Count items into one Counter, in a worker or in the parent (the same loop).

    ``claim``: take the items one at a time from the shared ``next_item`` counter until none is
    left, so a process that starts late (or shares its core with others) simply counts fewer
    chunks; else count all of ``items``. A failure stops the others after their current chunk.
    """
    progress, next_item = shared if shared is not None else _worker_shared  # type: ignore[misc]
    counts = new_counts(pattern)
    n = len(items)
    i = -1
    try:
        while True:
            if claim:
                with next_item.get_lock():
                    i = next_item.value
                    next_item.value = i + 1
            else:
                i += 1
            if i >= n:
                return counts
            for size in _item_steps(items[i], specials, pattern, errors, counts):
                with progress.get_lock():
                    progress.value += size
                if on_chunk is not None:
                    on_chunk()
    except BaseException:
        with next_item.get_lock():
            next_item.value = n
        raise


def _groups(items: list[_Item], sizes: list[int], n_groups: int) -> list[list[_Item]]:
    """Cut ``items`` into at most ``n_groups`` runs of about equal total size.

    >>> _groups(["a", "b", "c", "d"], [1, 1, 1, 1], 2)
    [['a', 'b'], ['c', 'd']]
    """
    total = sum(sizes) or 1
    groups: list[list[_Item]] = [[]]
    acc = 0
    for item, size in zip(items, sizes):
        if groups[-1] and acc >= total * len(groups) / n_groups:
            groups.append([])
        groups[-1].append(item)
        acc += size
    return groups


def _checked_texts(texts: Iterable[str]) -> Iterator[str]:
    """Pass texts through, rejecting anything that is not a str with a clear error."""
    for text in texts:
        if not isinstance(text, str):
            raise CorpusError(
                "the corpus must be a file path or an iterable of str, "
                f"got an item of type {type(text).__name__}"
            )
        yield text


def _count_in_pool(
    items: list[_Item],
    sizes: list[int],
    specials: tuple[str, ...],
    pattern: str,
    errors: str,
    num_workers: int,
    total: int,
    on_progress: ProgressCallback | None,
) -> PretokenCounts:
    """Count with ``num_workers - 1`` worker processes and this one, all claiming file chunks
    from one shared counter; each worker sends back one Counter.

    subtle: this process counts too instead of waiting: the workers' start-up hides behind
    its first chunks, and its share of the counts is never pickled. Texts (not a file) are
    cut into one run per process up front, so none is sent twice.

    Raises :class:`_NoWorkerProcesses` before counting anything where this Python cannot
    make processes (Pyodide: no ``_multiprocessing``; platforms without ``sem_open``).
    """
    claim = not isinstance(items[0], str)
    runs = [items] * num_workers if claim else _groups(items, sizes, num_workers)
    try:
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        # fork where safe, else forkserver preloading only this module (not ``__main__``,
        # which under Streamlit or pytest is somebody else's script): core.train.processes
        ctx = pool_context(preload=["core.train"])
        shared = (ctx.Value("q", 0), ctx.Value("q", 0))
        # subtle: ProcessPoolExecutor, not multiprocessing.Pool: when a worker dies (killed,
        # out of memory) Pool silently starts another and waits forever for the lost task;
        # the executor raises BrokenProcessPool, which becomes a clear error below.
        executor = ProcessPoolExecutor(
            max(1, len(runs) - 1), mp_context=ctx, initializer=_init_worker, initargs=shared
        )
    except (ImportError, OSError, NotImplementedError, ValueError) as err:
        raise _NoWorkerProcesses(f"{type(err).__name__}: {err}") from None
    progress = shared[0]

    def report() -> None:
        if on_progress is not None:
            on_progress("counting", min(progress.value, total), total)

    with executor as pool:
        with plain_main():  # the workers start on these submits
            futures = [pool.submit(_count_task, run, specials, pattern, errors, claim=claim) for run in runs[1:]]
        try:
            total_counts = _count_task(runs[0], specials, pattern, errors, shared=shared, claim=claim, on_chunk=report)
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for future in done:
                    counts = future.result()  # re-raises a worker's CorpusError here
                    if len(counts) > len(total_counts):
                        total_counts, counts = counts, total_counts  # merge the smaller one in
                    total_counts.update(counts)
                report()
        except BrokenProcessPool:
            raise CorpusError(
                "a worker process counting the corpus died (killed, or out of memory); "
                "try again with fewer workers (num_workers=1) or a smaller corpus"
            ) from None
    return total_counts


class _NoWorkerProcesses(Exception):
    """This Python cannot start worker processes; the message says why."""


def count_pretokens(
    corpus: Corpus,
    special_tokens: Sequence[str] = (),
    *,
    pattern: str = "gpt2",
    num_workers: int = 1,
    errors: str = "strict",
    chunk_size: int | None = None,
    on_progress: ProgressCallback | None = None,
    dask: str | None = None,
) -> tuple[Counter[str], dict[str, Any]]:
    """Count pre-tokens of a file path, files (:class:`~core.train.corpus_readers.CorpusFiles`) or
    an iterable of texts; returns (counts, stats).

    Each text of an iterable is pre-tokenized on its own (no pre-token spans two texts), and
    so is each file, and each row of a Parquet file. A file is read in chunks cut at safe
    boundaries (see :mod:`core.train.corpus`), in a process pool when ``num_workers > 1``; a
    compressed file is one chunk streamed by one process (:mod:`core.train.corpus_readers`).
    Where this Python cannot start processes (Pyodide), it counts in this one instead;
    ``stats["workers"]`` is the number used and ``stats["workers_note"]`` says why it is
    fewer than asked.

    ``dask``: count on a Dask cluster instead (:mod:`core.train.count_dask`), the address of its
    scheduler (``tcp://HOST:8786``) or ``"local"`` (a ``LocalCluster`` of ``num_workers``
    processes); the counts are the same. Needs the ``cluster`` extra (``dask[distributed]``).

    >>> counts, stats = count_pretokens(["the cat", "the"])
    >>> sorted(counts.items()), stats["pretokens"]
    ([(' cat', 1), ('the', 2)], 3)
    """

    table, stats = count_pretoken_table(
        corpus, special_tokens, pattern=pattern, num_workers=num_workers, errors=errors,
        chunk_size=chunk_size, on_progress=on_progress, dask=dask,
    )
    return table.counter(), stats  # stats first: counter() leaves the table empty


def count_pretoken_table(
    corpus: Corpus,
    special_tokens: Sequence[str] = (),
    *,
    pattern: str = "gpt2",
    num_workers: int = 1,
    errors: str = "strict",
    chunk_size: int | None = None,
    on_progress: ProgressCallback | None = None,
    dask: str | None = None,
) -> tuple[PretokenCounts, dict[str, Any]]:
    """:func:`count_pretokens`, with the counts left in their table
    (:mod:`core.train.count_table`): what training hands to its merge loop, which reads the
    C table's packed bytes without making a str and an int per distinct pre-token.

    >>> table, stats = count_pretoken_table(["the cat", "the"])
    >>> len(table), table.total() == stats["pretokens"] == 3
    (2, True)
    """
    specials = tuple(special_tokens)
    started = time.perf_counter()
    items, sizes, is_file = _work_items(corpus, specials, pattern, errors, chunk_size, num_workers)
    total = sum(sizes)
    if on_progress is not None:
        on_progress("counting", 0, total)
    if dask is not None:
        table = new_counts(pattern)
        workers = _drive(_dask_steps(dask, items, sizes, specials, pattern, errors, num_workers, table),
                         total, on_progress)
        return table, _stats(table, items, total, is_file, started, workers)
    if num_workers > 1 and len(items) > 1:
        try:
            table = _count_in_pool(items, sizes, specials, pattern, errors, num_workers, total, on_progress)
        except _NoWorkerProcesses as err:
            note = (
                f"Counted in this one process, not {num_workers} workers: this Python cannot "
                f"start worker processes ({err})."
            )
        else:
            return table, _stats(table, items, total, is_file, started, num_workers)
    else:
        note = ""
    table = _drive(_count_steps(items, total, specials, pattern, errors), total, on_progress)
    stats = _stats(table, items, total, is_file, started, 1)
    if note:
        stats["workers_note"] = note
    return table, stats


def count_in_steps(
    corpus: Corpus,
    special_tokens: Sequence[str] = (),
    *,
    pattern: str = "gpt2",
    errors: str = "strict",
    chunk_size: int | None = None,
    counts: Counter[str] | None = None,
    dask: str | None = None,
    num_workers: int = 1,
) -> Generator[tuple[int, int], None, tuple[Counter[str], dict[str, Any]]]:
    """:func:`count_pretokens` in this process, one chunk at a time: yields ``(done, total)``
    after each chunk and returns ``(counts, stats)`` (``StopIteration.value``, or
    ``yield from``).

    For a caller that must keep control between chunks: in a browser tab (Pyodide) Python has
    one thread, and the page can only redraw a progress bar or take a click on Stop between
    two chunks. The counts are those of :func:`count_pretokens` (a file is cut at the same
    safe boundaries). ``counts``: an empty Counter to count into, for a caller that wants to
    see the distinct pre-tokens so far between two steps (``len(counts)``). With ``dask``
    (as :func:`count_pretokens` takes it, ``num_workers`` for ``"local"``), the chunks are
    counted on the cluster and a step is yielded as each task finishes (and every 0.2 s);
    closing the generator cancels the rest.

    >>> steps = count_in_steps(["the cat", "the"])
    >>> next(steps), next(steps)
    ((7, 10), (10, 10))
    >>> try:
    ...     next(steps)
    ... except StopIteration as end:
    ...     counts, stats = end.value
    >>> counts["the"], stats["distinct_pretokens"]
    (2, 2)
    """
    table, stats = yield from count_table_in_steps(
        corpus, special_tokens, pattern=pattern, errors=errors, chunk_size=chunk_size,
        counts=None if counts is None else PureCounts(ascii_pattern(pattern), counts),
        dask=dask, num_workers=num_workers,
    )
    return table.counter(), stats


def count_table_in_steps(
    corpus: Corpus,
    special_tokens: Sequence[str] = (),
    *,
    pattern: str = "gpt2",
    errors: str = "strict",
    chunk_size: int | None = None,
    counts: PretokenCounts | None = None,
    dask: str | None = None,
    num_workers: int = 1,
) -> Generator[tuple[int, int], None, tuple[PretokenCounts, dict[str, Any]]]:
    """:func:`count_in_steps`, counting into a table (:func:`core.train.count_table.new_counts`,
    the C one for GPT-2's pattern): ``counts``, or a new one. What training runs, a step at a
    time, before it hands the table to its merge loop.

    >>> table = new_counts("gpt2"); steps = count_table_in_steps(["the cat", "the"], counts=table)
    >>> next(steps), len(table)
    ((7, 10), 2)
    """
    specials = tuple(special_tokens)
    started = time.perf_counter()
    items, sizes, is_file = _work_items(corpus, specials, pattern, errors, chunk_size, 1)
    total = sum(sizes)
    table = new_counts(pattern) if counts is None else counts
    if dask is not None:
        workers = yield from _dask_steps(dask, items, sizes, specials, pattern, errors, num_workers, table)
    else:
        workers = 1
        yield from _count_steps(items, total, specials, pattern, errors, table)
    return table, _stats(table, items, total, is_file, started, workers)


def _drive(
    steps: Generator[tuple[int, int], None, Any], total: int, on_progress: ProgressCallback | None
) -> Any:
    """Run ``steps`` to its end, reporting each ``(done, total)`` as "counting"; returns its value."""
    while True:
        try:
            done, _ = next(steps)
        except StopIteration as end:
            return end.value
        if on_progress is not None:
            on_progress("counting", done, total)


def _dask_steps(
    address: str, items: list[_Item], sizes: list[int], specials: tuple[str, ...], pattern: str, errors: str,
    local_workers: int, counts: PretokenCounts,
) -> Generator[tuple[int, int], None, int]:
    """:func:`count_items` over runs of ``items`` as Dask tasks, into ``counts``
    (:func:`core.train.count_dask.count_on_dask`); returns the number of Dask workers."""
    task = functools.partial(count_items, specials=specials, pattern=pattern, errors=errors)
    return count_on_dask(address, items, sizes, task, counts, local_workers=local_workers)


def _count_steps(
    items: list[_Item], total: int, specials: tuple[str, ...], pattern: str, errors: str,
    tally: PretokenCounts | None = None,
) -> Generator[tuple[int, int], None, PretokenCounts]:
    """Count ``items`` one by one in this process (into ``tally`` if given), yielding (size
    counted so far, total) after each piece of an item (a chunk of a file); returns the table."""
    tally = new_counts(pattern) if tally is None else tally
    done = 0
    for item in items:
        for size in _item_steps(item, specials, pattern, errors, tally):
            done += size
            yield done, total
    return tally


def _work_items(
    corpus: Corpus, specials: tuple[str, ...], pattern: str, errors: str, chunk_size: int | None, num_workers: int
) -> tuple[list[_Item], list[int], bool]:
    """The corpus as work items (texts, or parts of files: :mod:`core.train.corpus_readers`), their
    sizes, and whether it is files; checks the arguments first."""
    compile_pattern(pattern)  # fail fast on a broken regex, before any worker starts
    if errors not in ("strict", "replace"):
        raise CorpusError(f"errors must be 'strict' or 'replace', not {errors!r}")
    if isinstance(corpus, (str, os.PathLike)):
        path = os.fspath(corpus)
        if not os.path.isfile(path):
            raise CorpusError(
                f"corpus file {path!r} not found. To train on text itself, pass it in a list: train_bpe([text], ...)"
            )
        corpus = CorpusFiles([path])
    if isinstance(corpus, CorpusFiles):
        items, sizes = file_items(corpus, specials, chunk_size=chunk_size, num_workers=num_workers)
        return items, sizes, True  # type: ignore[return-value]  # FileItems are _Items
    if isinstance(corpus, (bytes, bytearray)):
        raise CorpusError("the corpus must be text (str), not bytes: decode it first")
    texts: list[_Item] = list(_checked_texts(corpus))
    return texts, [len(t) for t in texts], False


def _stats(
    counts: Counter[str] | PretokenCounts, items: list[_Item], total: int, is_file: bool, started: float, workers: int
) -> dict[str, Any]:
    return {
        "bytes": total if is_file else None,
        "characters": None if is_file else total,
        "chunks": len(items),
        "pretokens": counts.total(),
        "distinct_pretokens": len(counts),
        "seconds_counting": time.perf_counter() - started,
        "workers": workers,
    }



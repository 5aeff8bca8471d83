"""Phase 1 of training: count the distinct pre-tokens of a corpus.

Cut the corpus at special tokens (dropped: they are never merged), cut each piece with the
pre-tokenizer regex, count each distinct pre-token. A file is read chunk by chunk, cut at
safe places (:mod:`core.corpus`), optionally counted in a process pool; an iterable of
texts is counted text by text, so no pre-token spans two texts. ASCII stretches go through
the stdlib `re` twin of the pattern (:func:`core.pretokenize.ascii_pattern`), several times
faster than `regex` and exact there.

>>> counts, stats = count_pretokens(["the cat", "the"])
>>> counts["the"], counts[" cat"], stats["distinct_pretokens"]
(2, 1, 2)
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any

from core.corpus import DEFAULT_CHUNK_SIZE, find_chunk_boundaries, read_chunk
from core.errors import CorpusError
from core.pretokenize import (
    GPT2_PATTERN,
    ascii_pattern,
    compile_pattern,
    mixed_regions,
    resolve_pattern,
    special_splitter,
)
from core.processes import plain_main

__all__ = ["Corpus", "ProgressCallback", "count_in_steps", "count_pretokens"]

#: ``on_progress(phase, done, total)``: phase "counting" (bytes) or "merging" (merges).
ProgressCallback = Callable[[str, int, int], None]

#: A file path (read chunk by chunk), or texts (each pre-tokenized on its own).
Corpus = str | os.PathLike[str] | Iterable[str]


def _findall_gpt2(text: str, counts: Counter[str]) -> None:
    """Count GPT-2 pre-tokens of ``text`` into ``counts``: stdlib `re` on ASCII stretches
    (about 3x faster than `regex` here), `regex` only around non-ASCII characters, cut at safe
    places (:func:`core.pretokenize.mixed_regions`), so the counts are exact.

    >>> c = Counter(); _findall_gpt2("naïve café ok", c); sorted(c)
    [' café', ' ok', 'naïve']
    """
    fast = ascii_pattern("gpt2").findall  # type: ignore[union-attr]  # built in: never None
    if text.isascii():
        counts.update(fast(text))
        return
    slow = compile_pattern("gpt2").findall
    pos = 0  # start of the not-yet-counted rest
    for start, end in mixed_regions(text):
        if start > pos:
            counts.update(fast(text[pos:start]))
        counts.update(slow(text[start:end]))
        pos = end
    if pos < len(text):
        counts.update(fast(text[pos:]))


def _count_text(
    text: str, specials: tuple[str, ...], pattern: str, counts: Counter[str] | None = None
) -> Counter[str]:
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
        findall = compile_pattern(pattern).findall
        for piece in pieces:
            if piece:
                counts.update(findall(piece))
    return counts


# subtle: set only inside pool worker processes (by _init_worker), never in the parent;
# workers add the bytes they have counted so the parent can report smooth progress.
_worker_progress: Any = None


def _init_worker(progress: Any) -> None:
    global _worker_progress
    _worker_progress = progress


_Item = str | tuple[str, int, int]  # a text, or (path, start, end) of a file chunk


def _count_items(
    items: Sequence[_Item], specials: tuple[str, ...], pattern: str, errors: str
) -> tuple[int, Counter[str]]:
    """Count the pre-tokens of several chunks into one Counter (one result per pool task,
    so the parent merges a few big Counters instead of one per chunk)."""

    counts: Counter[str] = Counter()
    done = 0
    for item in items:
        if isinstance(item, str):
            text, n = item, len(item)
        else:
            path, start, end = item
            text, n = read_chunk(path, start, end, errors=errors), end - start
        _count_text(text, specials, pattern, counts)
        del text  # subtle: free the chunk before reading the next one
        done += n
        if _worker_progress is not None:
            with _worker_progress.get_lock():
                _worker_progress.value += n
    return done, counts


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
) -> Counter[str]:
    """Count in a process pool: two tasks per worker, progress polled from a shared counter.

    Raises :class:`_NoWorkerProcesses` before counting anything where this Python cannot
    make processes (Pyodide: no ``_multiprocessing``; platforms without ``sem_open``).
    """
    groups = _groups(items, sizes, 2 * num_workers)
    try:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        # subtle: forkserver, not fork: the app calls this from a threaded server, where fork
        # can deadlock. The forkserver preloads only this module (not ``__main__``, which under
        # Streamlit or pytest is somebody else's script).
        if os.name == "nt":
            ctx = multiprocessing.get_context("spawn")
        else:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["core.train"])
        progress = ctx.Value("q", 0)
        # subtle: ProcessPoolExecutor, not multiprocessing.Pool: when a worker dies (killed,
        # out of memory) Pool silently starts another and waits forever for the lost task;
        # the executor raises BrokenProcessPool, which becomes a clear error below.
        executor = ProcessPoolExecutor(
            min(num_workers, len(groups)), mp_context=ctx, initializer=_init_worker, initargs=(progress,)
        )
    except (ImportError, OSError, NotImplementedError, ValueError) as err:
        raise _NoWorkerProcesses(f"{type(err).__name__}: {err}") from None
    total_counts: Counter[str] = Counter()
    with executor as pool:
        with plain_main():  # the workers start on these submits
            pending = {pool.submit(_count_items, g, specials, pattern, errors) for g in groups}
        try:
            while pending:
                done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for future in done:
                    counts = future.result()[1]  # re-raises a worker's CorpusError here
                    if len(counts) > len(total_counts):
                        total_counts, counts = counts, total_counts  # merge the smaller one in
                    total_counts.update(counts)
                if on_progress is not None:
                    on_progress("counting", min(progress.value, total), total)
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
) -> tuple[Counter[str], dict[str, Any]]:
    """Count pre-tokens of a file path or an iterable of texts; returns (counts, stats).

    Each text of an iterable is pre-tokenized on its own (no pre-token spans two texts).
    A file is read in chunks cut at safe boundaries (see :mod:`core.corpus`), in a process
    pool when ``num_workers > 1``. Where this Python cannot start processes (Pyodide), it
    counts in this one instead; ``stats["workers"]`` is the number used and
    ``stats["workers_note"]`` says why it is fewer than asked.

    >>> counts, stats = count_pretokens(["the cat", "the"])
    >>> sorted(counts.items()), stats["pretokens"]
    ([(' cat', 1), ('the', 2)], 3)
    """

    specials = tuple(special_tokens)
    started = time.perf_counter()
    items, sizes, is_file = _work_items(corpus, specials, pattern, errors, chunk_size, num_workers)
    total = sum(sizes)
    if on_progress is not None:
        on_progress("counting", 0, total)
    if num_workers > 1 and len(items) > 1:
        try:
            counts = _count_in_pool(items, sizes, specials, pattern, errors, num_workers, total, on_progress)
        except _NoWorkerProcesses as err:
            note = (
                f"Counted in this one process, not {num_workers} workers: this Python cannot "
                f"start worker processes ({err})."
            )
        else:
            return counts, _stats(counts, items, total, is_file, started, num_workers)
    else:
        note = ""
    steps = _count_steps(items, sizes, total, specials, pattern, errors)
    while True:
        try:
            done, _ = next(steps)
        except StopIteration as end:
            counts = end.value
            break
        if on_progress is not None:
            on_progress("counting", done, total)
    stats = _stats(counts, items, total, is_file, started, 1)
    if note:
        stats["workers_note"] = note
    return counts, stats


def count_in_steps(
    corpus: Corpus,
    special_tokens: Sequence[str] = (),
    *,
    pattern: str = "gpt2",
    errors: str = "strict",
    chunk_size: int | None = None,
    counts: Counter[str] | None = None,
) -> Generator[tuple[int, int], None, tuple[Counter[str], dict[str, Any]]]:
    """:func:`count_pretokens` in this process, one chunk at a time: yields ``(done, total)``
    after each chunk and returns ``(counts, stats)`` (``StopIteration.value``, or
    ``yield from``).

    For a caller that must keep control between chunks: in a browser tab (Pyodide) Python has
    one thread, and the page can only redraw a progress bar or take a click on Stop between
    two chunks. The counts are those of :func:`count_pretokens` (a file is cut at the same
    safe boundaries). ``counts``: an empty Counter to count into, for a caller that wants to
    see the distinct pre-tokens so far between two steps (``len(counts)``).

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
    specials = tuple(special_tokens)
    started = time.perf_counter()
    items, sizes, is_file = _work_items(corpus, specials, pattern, errors, chunk_size, 1)
    total = sum(sizes)
    counts = yield from _count_steps(items, sizes, total, specials, pattern, errors, counts)
    return counts, _stats(counts, items, total, is_file, started, 1)


def _count_steps(
    items: list[_Item], sizes: list[int], total: int, specials: tuple[str, ...], pattern: str, errors: str,
    counts: Counter[str] | None = None,
) -> Generator[tuple[int, int], None, Counter[str]]:
    """Count ``items`` one by one in this process (into ``counts`` if given), yielding (size
    counted so far, total)."""
    counts = Counter() if counts is None else counts
    done = 0
    for item, size in zip(items, sizes):
        _count_text(item if isinstance(item, str) else read_chunk(*item, errors=errors), specials, pattern, counts)
        done += size
        yield done, total
    return counts


def _work_items(
    corpus: Corpus, specials: tuple[str, ...], pattern: str, errors: str, chunk_size: int | None, num_workers: int
) -> tuple[list[_Item], list[int], bool]:
    """The corpus as work items (texts, or safe chunks of a file), their sizes, and whether
    it is a file; checks the arguments first."""
    compile_pattern(pattern)  # fail fast on a broken regex, before any worker starts
    if errors not in ("strict", "replace"):
        raise CorpusError(f"errors must be 'strict' or 'replace', not {errors!r}")
    if isinstance(corpus, (str, os.PathLike)):
        path = os.fspath(corpus)
        if not os.path.isfile(path):
            raise CorpusError(
                f"corpus file {path!r} not found. To train on text itself, pass it in a list: train_bpe([text], ...)"
            )
        if chunk_size is None:
            # enough chunks to keep every worker busy, none bigger than the default
            chunk_size = max(64 << 10, min(DEFAULT_CHUNK_SIZE, os.path.getsize(path) // (4 * num_workers) + 1))
        bounds = find_chunk_boundaries(path, special_tokens=specials, chunk_size=chunk_size)
        spans = [(s, e) for s, e in itertools.pairwise(bounds) if e > s]
        return [(path, s, e) for s, e in spans], [e - s for s, e in spans], True
    if isinstance(corpus, (bytes, bytearray)):
        raise CorpusError("the corpus must be text (str), not bytes: decode it first")
    texts: list[_Item] = list(_checked_texts(corpus))
    return texts, [len(t) for t in texts], False  # type: ignore[arg-type]


def _stats(
    counts: Counter[str], items: list[_Item], total: int, is_file: bool, started: float, workers: int
) -> dict[str, Any]:
    return {
        "bytes": total if is_file else None,
        "characters": None if is_file else total,
        "chunks": len(items),
        "pretokens": sum(counts.values()),
        "distinct_pretokens": len(counts),
        "seconds_counting": time.perf_counter() - started,
        "workers": workers,
    }



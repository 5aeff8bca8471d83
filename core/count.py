"""Phase 1 of training: count the distinct pre-tokens of a corpus.

Cut the corpus at special tokens (dropped: they are never merged), cut each piece with the
pre-tokenizer regex, count each distinct pre-token. A file is read chunk by chunk, cut at
safe places (:mod:`core.corpus`), optionally by several processes (this one counts too);
an iterable of texts is counted text by text, so no pre-token spans two texts. ASCII
stretches go through the stdlib `re` twin of the pattern
(:func:`core.pretokenize.ascii_pattern`), several times faster than `regex` and exact there;
a file chunk is not even decoded outside the spans around its non-ASCII bytes.

>>> counts, stats = count_pretokens(["the cat", "the"])
>>> counts["the"], counts[" cat"], stats["distinct_pretokens"]
(2, 1, 2)
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any

from core.corpus import DEFAULT_CHUNK_SIZE, decode_chunk, find_chunk_boundaries, read_chunk
from core.errors import CorpusError
from core.pretokenize import (
    GPT2_PATTERN,
    ascii_pattern,
    compile_pattern,
    mixed_byte_regions,
    mixed_regions,
    resolve_pattern,
    special_splitter,
)
from core.processes import plain_main, pool_context

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


_Item = str | tuple[str, int, int]  # a text, or (path, start, end) of a file chunk


def _count_bytes(
    data: bytes, specials: tuple[str, ...], fast: re.Pattern[str], pattern: str, counts: Counter[str],
    *, offset: int, errors: str, source: str,
) -> None:
    """Count the pre-tokens of UTF-8 ``data`` (one file chunk) without decoding it whole.

    The bytes are read as Latin-1, one character per byte, a copy and no decoding: the ASCII
    stretches are ASCII text already and go to the stdlib `re` twin ``fast`` as they are; only
    the spans around bytes >= 0x80 (:func:`core.pretokenize.mixed_byte_regions`, cut where
    pre-tokens restart) are decoded and cut by `regex`. Special tokens are found in the same
    view (a UTF-8 string matches as its bytes, at character boundaries only). The counts are
    those of decoding first: tests/test_train_speed_paths.py checks it.

    >>> c = Counter(); _count_bytes("naïve café<|s|>ok".encode(), ("<|s|>",),
    ...     ascii_pattern("gpt2"), "gpt2", c, offset=0, errors="strict", source="x"); sorted(c)
    [' café', 'naïve', 'ok']
    """
    text = data.decode("latin-1")
    splitter = special_splitter(tuple(sp.encode("utf-8").decode("latin-1") for sp in specials))
    slow = compile_pattern(pattern).findall
    for piece in [text] if splitter is None else splitter.split(text):
        if piece.isascii():
            counts.update(fast.findall(piece))
            continue
        pos = 0  # start of the not-yet-counted rest
        for start, end in mixed_byte_regions(piece):
            if start > pos:
                counts.update(fast.findall(piece[pos:start]))
            try:
                counts.update(slow(piece[start:end].encode("latin-1").decode("utf-8", errors)))
            except UnicodeDecodeError:
                decode_chunk(data, offset=offset, errors=errors, source=source)  # names the first bad byte
                raise
            pos = end
        if pos < len(piece):
            counts.update(fast.findall(piece[pos:]))


def _count_item(item: _Item, specials: tuple[str, ...], pattern: str, errors: str, counts: Counter[str]) -> int:
    """Count one text or file chunk into ``counts``; returns its size (characters or bytes).
    A file chunk with a built-in pattern is counted from its bytes (:func:`_count_bytes`)."""
    if isinstance(item, str):
        _count_text(item, specials, pattern, counts)
        return len(item)
    path, start, end = item
    fast = ascii_pattern(pattern)
    if fast is None:
        _count_text(read_chunk(path, start, end, errors=errors), specials, pattern, counts)
    else:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(end - start)
        _count_bytes(data, specials, fast, pattern, counts, offset=start, errors=errors, source=os.fspath(path))
    return end - start


# subtle: set only inside pool worker processes (by _init_worker), never in the parent: the
# shared counters (bytes counted so far, for progress; the next file chunk to claim).
_worker_shared: tuple[Any, Any] | None = None


def _init_worker(progress: Any, next_item: Any) -> None:
    global _worker_shared
    _worker_shared = (progress, next_item)


def _count_task(
    items: Sequence[_Item], specials: tuple[str, ...], pattern: str, errors: str, *,
    shared: tuple[Any, Any] | None = None, claim: bool = True, on_chunk: Callable[[], None] | None = None,
) -> Counter[str]:
    """Count items into one Counter, in a worker or in the parent (the same loop).

    ``claim``: take the items one at a time from the shared ``next_item`` counter until none is
    left, so a process that starts late (or shares its core with others) simply counts fewer
    chunks; else count all of ``items``. A failure stops the others after their current chunk.
    """
    progress, next_item = shared if shared is not None else _worker_shared  # type: ignore[misc]
    counts: Counter[str] = Counter()
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
            size = _count_item(items[i], specials, pattern, errors, counts)
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
) -> Counter[str]:
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
        # which under Streamlit or pytest is somebody else's script): core.processes
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
    steps = _count_steps(items, total, specials, pattern, errors)
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
    counts = yield from _count_steps(items, total, specials, pattern, errors, counts)
    return counts, _stats(counts, items, total, is_file, started, 1)


def _count_steps(
    items: list[_Item], total: int, specials: tuple[str, ...], pattern: str, errors: str,
    counts: Counter[str] | None = None,
) -> Generator[tuple[int, int], None, Counter[str]]:
    """Count ``items`` one by one in this process (into ``counts`` if given), yielding (size
    counted so far, total)."""
    counts = Counter() if counts is None else counts
    done = 0
    for item in items:
        done += _count_item(item, specials, pattern, errors, counts)
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



"""Byte-level BPE training (CS336 semantics), as one call or as a stream of merge events.

The recipe:

1. **Count pre-tokens** (:mod:`core.train.count`). Cut the corpus at special tokens (dropped: they are
   never merged), cut each piece with the pre-tokenizer regex, count each distinct
   pre-token. Big files are read chunk by chunk, optionally in a process pool.
2. **Count pairs** of adjacent tokens inside each distinct pre-token ("word"), weighted
   by the word's count. Every adjacent position counts, so ``b"aaaa"`` holds (a, a) 3 times.
3. **Merge** the most frequent pair; ties go to the lexicographically greater pair compared
   as bytes. Occurrences are replaced left to right without overlap
   (``aaaa -> [aa, aa]``). Only the words that contain the pair are touched, and only the
   pairs next to each merged occurrence change (:mod:`core.train.merge`).

>>> vocab, merges = train_bpe(["low lower lowest"], 259)
>>> merges  # (o, w) beats (l, o) on the tie; (low, e) beats (' ', low): b"low" > b" "
[(b'o', b'w'), (b'l', b'ow'), (b'low', b'e')]
>>> vocab[258]
b'lowe'

IDs follow the CS336 contract: special tokens 0..k-1, the 256 bytes at k..k+255, then one
ID per merge in creation order.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.basics import gc_paused
from core.engine.pretokenize import compile_pattern
from core.errors import CorpusError, TrainingConfigError
from core.train.count import (
    Corpus,
    ProgressCallback,
    count_pretoken_table,
    count_pretokens,
    count_table_in_steps,
)
from core.train.count_table import PretokenCounts, PureCounts, new_counts
from core.train.merge import MAX_TOKENS, MergeLoop, merge_state

__all__ = ["BPETrainer", "MergeEvent", "ProgressCallback", "count_pretokens", "end_note",
           "first_merges", "stopped_counting_note", "train_bpe"]


@dataclass(frozen=True)
class MergeEvent:
    """One merge, as the step-wise trainer reports it. Small and picklable.

    >>> MergeEvent(0, (b"a", b"b"), 258, b"ab", 7, 259, 0.5).token
    b'ab'
    """

    rank: int  #: 0-based merge index
    pair: tuple[bytes, bytes]
    token_id: int  #: ID of the new token in the final vocab
    token: bytes  #: pair[0] + pair[1]
    count: int  #: frequency of the pair when it was merged
    vocab_size: int  #: vocab size after this merge
    elapsed: float  #: seconds since training started (including counting)


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------


def _check_config(vocab_size: int, special_tokens: Sequence[str], num_workers: int) -> tuple[str, ...]:
    if isinstance(special_tokens, str):
        raise TrainingConfigError(
            f"special_tokens must be a list of strings, not one string: use [{special_tokens!r}]"
        )
    specials = tuple(special_tokens)
    for tok in specials:
        if not isinstance(tok, str):
            raise TrainingConfigError(f"special tokens must be strings, got {tok!r}")
        if not tok:
            raise TrainingConfigError("a special token is empty: remove it or give it some text")
    seen: set[str] = set()
    for tok in specials:
        if tok in seen:
            raise TrainingConfigError(f"special token {tok!r} is listed twice: list each special token once")
        seen.add(tok)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TrainingConfigError(f"vocab_size must be an integer, got {vocab_size!r}")
    minimum = 256 + len(specials)
    if vocab_size - len(specials) > MAX_TOKENS:
        raise TrainingConfigError(
            f"vocab_size {vocab_size:,} is too large: at most {MAX_TOKENS + len(specials):,} "
            "(one Unicode code point per token while training)"
        )
    if vocab_size < minimum:
        raise TrainingConfigError(
            f"vocab_size {vocab_size} is too small: the 256 single bytes and {len(specials)} special "
            f"token(s) already need {minimum}; choose vocab_size >= {minimum}"
        )
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise TrainingConfigError(f"num_workers must be a positive integer, got {num_workers!r}")
    return specials


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


class BPETrainer:
    """Step-wise BPE training: one :class:`MergeEvent` per merge, pausable and stoppable.

    Counting happens on first use (``step()``, iteration, or :meth:`run`). Iteration
    blocks while paused; :meth:`stop` ends it after the current merge, keeping what was
    learned. ``pause``/``resume``/``stop`` may be called from another thread.

    >>> trainer = BPETrainer(["aaabdaaabac"], 259)
    >>> [(e.rank, e.pair, e.token_id, e.count) for e in trainer]
    [(0, (b'a', b'a'), 256, 4), (1, (b'aa', b'a'), 257, 2), (2, (b'aaa', b'b'), 258, 2)]
    >>> trainer.done, trainer.stop_reason
    (True, 'reached vocab size')
    """

    def __init__(
        self,
        corpus: Corpus,
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        *,
        pattern: str = "gpt2",
        num_workers: int = 1,
        errors: str = "strict",
        on_progress: ProgressCallback | None = None,
        dask: str | None = None,
    ) -> None:
        self.special_tokens = _check_config(vocab_size, special_tokens, num_workers)
        compile_pattern(pattern)
        if errors not in ("strict", "replace"):
            raise CorpusError(f"errors must be 'strict' or 'replace', not {errors!r}")
        self.corpus = corpus
        self.vocab_size = vocab_size
        self.pattern = pattern
        self.num_workers = num_workers
        self.errors = errors
        self.on_progress = on_progress
        self.dask = dask  # a Dask scheduler's address, or "local": count there (core.train.count_dask)
        self.done = False
        self.stop_reason: str | None = None
        self.messages: list[str] = []
        self.corpus_stats: dict[str, Any] = {}
        self._state: MergeLoop | None = None
        self._counting: PretokenCounts = PureCounts(None)  # filled while count_steps() runs
        self._merges: list[tuple[bytes, bytes]] = []
        self._started = 0.0
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._running.set()
        self._stop_requested = False

    # -- control (thread-safe) ----------------------------------------------------------

    def pause(self) -> None:
        """Make iteration block before the next merge (``step()`` is not affected)."""
        self._running.clear()

    def resume(self) -> None:
        """Let a paused iteration continue."""
        self._running.set()

    def stop(self) -> None:
        """Finish after the current merge; what was learned so far is kept."""
        self._stop_requested = True
        self._running.set()  # subtle: wake a paused iteration so it can end

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    # -- results ------------------------------------------------------------------------

    @property
    def n_merges_target(self) -> int:
        return self.vocab_size - 256 - len(self.special_tokens)

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """Merges learned so far (a copy), in creation order."""
        return list(self._merges)

    @property
    def vocab(self) -> dict[int, bytes]:
        """Vocab learned so far (a new dict): specials, then 256 bytes, then merges."""
        k = len(self.special_tokens)
        vocab = {i: tok.encode("utf-8") for i, tok in enumerate(self.special_tokens)}
        vocab.update({k + i: bytes([i]) for i in range(256)})
        for j, (left, right) in enumerate(self._merges):
            vocab[k + 256 + j] = left + right
        return vocab

    # -- training -----------------------------------------------------------------------

    def _prepare(self) -> MergeLoop:
        if self._state is None:
            self._started = time.perf_counter()
            counts, stats = count_pretoken_table(
                self.corpus,
                self.special_tokens,
                pattern=self.pattern,
                num_workers=self.num_workers,
                errors=self.errors,
                on_progress=self.on_progress,
                dask=self.dask,
            )
            self._counted(counts, stats)
        return self._state  # type: ignore[return-value]  # set by _counted

    def count_steps(self, *, chunk_size: int | None = None) -> Iterator[tuple[int, int]]:
        """Count the pre-tokens in this process one chunk at a time, yielding ``(done,
        total)`` after each (characters of texts, or bytes of a file); the first
        :meth:`step` after it merges at once. Nothing to do if counting already happened.

        For a caller with one thread (a browser tab): between two chunks it can redraw a
        progress bar, or take a Stop (then :meth:`stop` and :meth:`step` end the training).
        With ``dask`` the chunks are counted on the cluster, a step per finished task.

        >>> trainer = BPETrainer(["aaabdaaabac", "aab"], 258)
        >>> list(trainer.count_steps())
        [(11, 14), (14, 14)]
        >>> trainer.step().pair, trainer.corpus_stats["distinct_pretokens"]
        ((b'a', b'a'), 2)
        """
        if self._state is not None:
            return
        self._started = time.perf_counter()
        self._counting = new_counts(self.pattern)  # the C table for GPT-2's pattern where built
        counts, stats = yield from count_table_in_steps(
            self.corpus, self.special_tokens, pattern=self.pattern, errors=self.errors,
            chunk_size=chunk_size, counts=self._counting, dask=self.dask, num_workers=self.num_workers,
        )
        self._counting = PureCounts(None)  # the merge state holds them now
        self._counted(counts, stats)

    @property
    def distinct_so_far(self) -> int:
        """Distinct pre-tokens found so far while :meth:`count_steps` runs (what a progress
        line can say during a long count), then the final number.

        >>> trainer = BPETrainer(["the cat", "the dog"], 260)
        >>> steps = trainer.count_steps(); _ = next(steps); trainer.distinct_so_far
        2
        >>> _ = list(steps); trainer.distinct_so_far
        3
        """
        if self._state is not None:
            return int(self.corpus_stats.get("distinct_pretokens", 0))
        return len(self._counting)

    def _counted(self, counts: Counter[str] | PretokenCounts, stats: dict[str, Any]) -> None:
        self.corpus_stats = stats
        if stats.get("workers_note"):  # no processes here (Pyodide)
            self.messages.append(stats["workers_note"])
        if not len(counts):
            self.messages.append(
                "The corpus has no text to learn from (it is empty or only special tokens): "
                "the vocabulary holds just the special tokens and the 256 bytes."
            )
        with gc_paused():  # hundreds of thousands of index lists: see core.train.merge
            self._state = merge_state(counts, target=self.n_merges_target)

    def _finish(self, reason: str) -> None:
        self.done = True
        self.stop_reason = reason
        size = 256 + len(self.special_tokens) + len(self._merges)
        if reason == "no pairs left" and not self.corpus_stats.get("distinct_pretokens"):
            return  # an empty corpus: _counted has said so
        note = end_note(reason, len(self._merges), size, self.vocab_size)
        if note:
            self.messages.append(note)

    def _merge_once(self) -> tuple[int, int, int] | None:
        """One merge without building an event; None when training is over."""
        if self.done:
            return None
        state = self._prepare()
        if len(self._merges) >= self.n_merges_target:
            self._finish("reached vocab size")
            return None
        result = state.merge_best()
        if result is None:
            self._finish("no pairs left")
            return None
        a, b, _ = result
        self._merges.append((state.tokens[a], state.tokens[b]))
        return result

    def step(self) -> MergeEvent | None:
        """Do one merge and describe it; None when training is done (never blocks)."""
        with self._lock:
            if self._stop_requested and not self.done:
                self._prepare()
                self._finish("stopped")
            result = self._merge_once()
            if result is None:
                return None
            rank = len(self._merges) - 1
            left, right = self._merges[rank]
            k = len(self.special_tokens)
            return MergeEvent(
                rank,
                (left, right),
                k + 256 + rank,
                left + right,
                result[2],
                k + 257 + rank,
                time.perf_counter() - self._started,
            )

    def __iter__(self) -> Iterator[MergeEvent]:
        """Count (on first use), then yield one event per merge until done or stopped."""
        running = self._running
        while True:
            if not running.is_set():
                running.wait()
            event = self.step()
            if event is None:
                return
            yield event

    def run(self) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
        """Train to the end without events (fastest); returns (vocab, merges)."""
        with self._lock:
            progress = self.on_progress
            target = self.n_merges_target
            every = max(1, target // 200)
            merge_once = self._merge_once
            self._prepare()
            with gc_paused():  # the merge loop makes no cycles; see core.train.merge
                while not self._stop_requested:
                    if merge_once() is None:
                        break
                    if progress is not None and len(self._merges) % every == 0:
                        progress("merging", len(self._merges), target)
            if not self.done:
                self._finish("stopped")
            if progress is not None:
                progress("merging", len(self._merges), target)
        return self.vocab, self.merges


def train_bpe(
    input_path: Corpus,
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    *,
    pattern: str = "gpt2",
    num_workers: int = 1,
    errors: str = "strict",
    on_progress: ProgressCallback | None = None,
    dask: str | None = None,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train a byte-level BPE tokenizer (CS336 contract); returns ``(vocab, merges)``.

    ``input_path``: a file path (str or PathLike, read chunk by chunk; ``.gz``, ``.zst`` and
    ``.parquet`` by their kind), several files as a :class:`~core.train.corpus_readers.CorpusFiles`
    (each file its own documents; :func:`core.train.corpus_sources.find_corpus_files` makes one from
    folders, globs and ``hf://`` addresses), or any other iterable of str (texts, each
    pre-tokenized on its own; pass ``[text]`` for one text).
    ``errors``: ``"strict"`` (default) raises :class:`~core.errors.CorpusError` naming the
    byte offset of the first bad UTF-8 byte; ``"replace"`` turns bad bytes into U+FFFD.
    Training stops early, without error, when no pair is left (see
    :attr:`BPETrainer.messages` for the explanation when using the trainer). ``dask``: count
    the pre-tokens on a Dask cluster, ``tcp://HOST:PORT`` or ``"local"`` (:mod:`core.train.count_dask`);
    the merges are the same.

    >>> vocab, merges = train_bpe(["aaabdaaabac"], 258)
    >>> merges
    [(b'a', b'a'), (b'aa', b'a')]
    """
    trainer = BPETrainer(
        input_path,
        vocab_size,
        special_tokens,
        pattern=pattern,
        num_workers=num_workers,
        errors=errors,
        on_progress=on_progress,
        dask=dask,
    )
    return trainer.run()


# ---------------------------------------------------------------------------------------
# A training cut short


def first_merges(
    vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], n: int
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """The tokenizer a training would have returned had it stopped after its first ``n``
    merges: ``merges[:n]``, and the vocab without the tokens of the later merges.

    Exact because BPE training is sequential: merge k depends only on merges 1..k-1. The
    merge tokens are the last ``len(merges)`` IDs (the CS336 layout :class:`BPETrainer`
    writes), so the vocab keeps every ID below ``len(vocab) - len(merges) + n``.

    >>> vocab, merges = train_bpe(["low lower lowest"], 259)
    >>> first_merges(vocab, merges, 1) == train_bpe(["low lower lowest"], 257)
    True
    """
    n = max(0, min(int(n), len(merges)))
    below = len(vocab) - len(merges) + n
    return {i: t for i, t in vocab.items() if i < below}, merges[:n]


def end_note(reason: str | None, n_merges: int, vocab_size: int, requested: int) -> str | None:
    """What a training that ended for ``reason`` says about it (None: nothing to say).

    >>> end_note("stopped", 1200, 1457, 2000)
    'Stopped by request at merge 1,200 (vocab 1,457).'
    >>> end_note("reached vocab size", 1743, 2000, 2000) is None
    True
    """
    if reason == "no pairs left":
        return (f"No pair of tokens is left to merge: stopped at vocab size {vocab_size} "
                f"({n_merges} merges), short of the requested {requested}. "
                "Train on more text or ask for a smaller vocabulary.")
    if reason == "stopped":
        return f"Stopped by request at merge {n_merges:,} (vocab {vocab_size:,})."
    return None


def stopped_counting_note(fraction: float, vocab_size: int) -> str:
    """What a training stopped before its first merge says (it ends with no merge: counting
    the rest of a big corpus first could take a while).

    >>> stopped_counting_note(0.374, 257)  # doctest: +NORMALIZE_WHITESPACE
    'Stopped by request while counting pre-tokens (37% counted): no merge was learned (vocab 257:
    the special tokens and the 256 bytes).'
    """
    return (f"Stopped by request while counting pre-tokens ({int(fraction * 100)}% counted): no merge "
            f"was learned (vocab {vocab_size:,}: the special tokens and the 256 bytes).")

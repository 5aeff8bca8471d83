"""What a page sees of a training job: :class:`JobSnapshot`, its merge rows and the rules
that decide which rows it shows.

Both managers (:mod:`training.manager` on a server, :mod:`training.inpage` in a browser tab)
return the same immutable snapshots, so the Train page and the sidebar draw them one way.
A Pause or a Stop holds the merge count the page showed at the click (:func:`shown_rows`,
:func:`cut_to_shown`); a Stop that arrives after the end says so (:func:`note_late_stop`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TERMINAL", "JobSnapshot", "MergeRow", "cut_to_shown", "note_late_stop", "shown_rows",
           "stop_while_downloading"]

#: (rank, count, token, pair, vocab_size, elapsed): one learned merge, as the page draws it.
MergeRow = tuple[int, int, bytes, tuple[bytes, bytes], int, float]

#: Statuses after which a job never changes again.
TERMINAL = frozenset({"finished", "stopped", "cancelled", "failed"})


@dataclass(frozen=True)
class JobSnapshot:
    """An immutable copy of one job's state, safe to read from any thread."""

    job_id: str
    status: str  # queued | starting | downloading | counting | training | paused | finished | ...
    queue_position: int | None  # 1-based while queued, else None
    vocab_size: int  # target
    special_tokens: tuple[str, ...]
    pattern: str
    corpus_name: str
    corpus_bytes: int
    rows: tuple[MergeRow, ...]  # every merge learned so far, in rank order
    count_progress: float | None  # 0..1 while counting pre-tokens if known
    vocab: dict[int, bytes] | None  # final (or stopped) vocabulary
    merges: list[tuple[bytes, bytes]] | None
    stop_reason: str | None
    messages: tuple[str, ...]
    error: str | None
    corpus_stats: dict[str, Any] = field(default_factory=dict)
    pause_requested: bool = False
    stop_requested: bool = False
    submitted_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    paused_seconds: float = 0.0  # time spent paused in earlier pauses
    paused_since: float | None = None  # when the current pause began (the worker confirmed it)
    pid: int | None = None
    count_distinct: int | None = None  # distinct pre-tokens found so far, while counting
    download: tuple[int, int] | None = None  # (bytes fetched, of bytes) while downloading

    @property
    def done(self) -> bool:
        """True once the job will never change again."""
        return self.status in TERMINAL

    @property
    def target_merges(self) -> int:
        """How many merges reach the target vocab size."""
        return max(0, self.vocab_size - 256 - len(self.special_tokens))

    @property
    def merge_progress(self) -> float:
        """Fraction of the target merges learned (0..1)."""
        target = self.target_merges
        return 1.0 if target == 0 else min(1.0, len(self.rows) / target)

    @property
    def n_merges(self) -> int:
        """Merges learned so far: the final count once done, the streamed rows before."""
        return len(self.merges) if self.merges is not None else len(self.rows)

    @property
    def elapsed(self) -> float:
        """Seconds of training since the worker started, time spent paused left out (0 while
        queued)."""
        if self.started_at is None:
            return 0.0
        end = self.finished_at or time.time()
        paused = self.paused_seconds + (end - self.paused_since if self.paused_since else 0.0)
        return max(0.0, end - self.started_at - paused)


# =============================================================================================
# Which rows a page shows, and what an ended job keeps


def shown_rows(rows: Sequence[MergeRow], hold: int | None) -> tuple[MergeRow, ...]:
    """The rows a page shows: all of them, or while a pause (or a Stop on its way) holds the
    count shown at the click, the first ``hold``.

    subtle: the worker runs on for a moment after the click (the page's count lags it by a
    poll or more, and the request travels). Merges are sequential, so the rows past ``hold``
    are exactly the ones a resume would make next: hiding them while paused shows the user
    what they paused, and a Stop then keeps it (:func:`cut_to_shown`).

    >>> shown_rows([(0,), (1,), (2,)], 2), shown_rows([(0,)], None)
    (((0,), (1,)), ((0,),))
    """
    return tuple(rows if hold is None else rows[:hold])


def cut_to_shown(job: Any, shown: int | None) -> None:
    """Make an ended job keep its first ``shown`` merges: what the page showed when Stop was
    clicked (None, or no fewer merges learned: unchanged).

    ``job`` is either manager's job record: ``vocab``, ``merges``, ``rows``, ``messages``,
    ``stop_reason`` and ``vocab_size``. The result is exactly the tokenizer trained to
    ``shown`` merges (``core.train.first_merges``), and the job says it stopped there.
    """
    from core.train import end_note, first_merges

    if shown is None or job.merges is None or job.vocab is None or shown >= len(job.merges):
        return
    old = end_note(job.stop_reason, len(job.merges), len(job.vocab), job.vocab_size)
    job.vocab, job.merges = first_merges(job.vocab, job.merges, shown)
    del job.rows[shown:]
    job.stop_reason = "stopped"
    job.messages[:] = [m for m in job.messages if m != old]
    job.messages.append(end_note("stopped", len(job.merges), len(job.vocab), job.vocab_size))


def stop_while_downloading(job: Any) -> None:
    """End a job whose corpus is still downloading as a Stop while counting ends one: no
    merge, a vocab of the special tokens and the 256 bytes, and a note saying so (``job``:
    either manager's job record, as for :func:`cut_to_shown`)."""
    k = len(job.special_tokens)
    job.vocab = {i: token.encode("utf-8") for i, token in enumerate(job.special_tokens)}
    job.vocab.update({k + i: bytes([i]) for i in range(256)})
    job.merges, job.stop_reason, job.stop_requested = [], "stopped", True
    job.messages.append(
        f"Stopped by request while downloading the corpus: no merge was learned (vocab "
        f"{len(job.vocab):,}: the special tokens and the 256 bytes). What was fetched stays in "
        "the Hugging Face cache.")


def note_late_stop(messages: list[str], merges: list[Any] | None,
                   vocab: dict[int, bytes] | None) -> None:
    """Say (once) that a Stop came too late to cut anything short: never silently."""
    note = (f"Training had already finished at {len(merges or []):,} merges (vocab "
            f"{len(vocab or {}):,}) when Stop arrived: nothing was cut short.")
    if note not in messages:
        messages.append(note)

"""Training in the page's own thread, a slice at a time: the static build's trainer.

In a browser tab (Pyodide) Python has one thread: no worker process, no manager thread. And
while a script runs, nothing it draws reaches the screen. So a training there cannot run in
one go: :class:`InPageTrainingManager` keeps each job's ``core.train.BPETrainer`` between
script runs and does a slice of work (about :data:`SLICE_SECONDS`) each time the Train page's
status fragment polls it (:meth:`InPageTrainingManager.advance`). Between slices the page
redraws its progress bar, charts and newest merges, and takes clicks on Pause or Stop.

It has the same public methods as ``training.manager.TrainingManager`` (both satisfy
``training.protocol.Manager``) and returns the same ``JobSnapshot``, so the Train page and the
sidebar draw both the same way. Pause and Stop are exact here: no merge is ever running
while a click is handled.

>>> manager = InPageTrainingManager()
>>> job = manager.submit(["low lower lowest"], vocab_size=260, special_tokens=[])
>>> manager.snapshot(job).status
'counting'
>>> while not manager.snapshot(job).done:
...     manager.advance(job)
>>> snap = manager.snapshot(job)
>>> snap.status, [row[2] for row in snap.rows]
('finished', [b'ow', b'low', b'lowe', b' lowe'])
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from training.inputs import CorpusSource, check_pace, write_corpus
from training.snapshot import (
    TERMINAL,
    JobSnapshot,
    MergeRow,
    cut_to_shown,
    note_late_stop,
    shown_rows,
)

__all__ = ["COUNT_CHUNK_BYTES", "SLICE_SECONDS", "InPageTrainingManager"]

#: Work done per call to ``advance``: long enough to make progress, short enough that the
#: page redraws (and a click on Stop is handled) several times a second.
SLICE_SECONDS = 0.2
#: Counting reads the corpus in chunks of about this size, one or more per slice.
COUNT_CHUNK_BYTES = 256 << 10


@dataclass
class _Job:
    job_id: str
    temp_path: str | None  # the texts' file, removed at the end (never a corpus's own file)
    corpus_name: str
    corpus_bytes: int
    vocab_size: int
    special_tokens: tuple[str, ...]
    pattern: str
    pace: float
    trainer: Any
    counting: Iterator[tuple[int, int]] | None
    status: str = "counting"
    rows: list[MergeRow] = field(default_factory=list)
    count_progress: float | None = 0.0
    messages: list[str] = field(default_factory=list)
    error: str | None = None
    vocab: dict[int, bytes] | None = None
    merges: list[tuple[bytes, bytes]] | None = None
    stop_reason: str | None = None
    corpus_stats: dict[str, Any] = field(default_factory=dict)
    pause_requested: bool = False
    stop_requested: bool = False
    hold: int | None = None  # while paused: the merge count shown when Pause was clicked
    keep: int | None = None  # after a Stop: the merge count shown when it was clicked
    submitted_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    paused_seconds: float = 0.0
    paused_since: float | None = None
    merging_since: float | None = None  # when merge 0 was due at this pace (moved by pauses)


class InPageTrainingManager:
    """Trainings that advance only when asked (:meth:`advance`), in the caller's thread.

    One per Python process, like ``training.manager.TrainingManager``; jobs are keyed by unguessable
    IDs. ``max_concurrent`` is 1 and there is never a queue: a tab trains one thing at a time.
    """

    max_concurrent = 1

    def __init__(self, *, max_jobs: int = 20) -> None:
        self.max_jobs = max_jobs
        self._jobs: dict[str, _Job] = {}
        self._tmpdir = tempfile.mkdtemp(prefix="tokplay-inpage-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._tmpdir, ignore_errors=True)

    # ---- the Manager protocol (training.protocol) -----------------------------------------

    def submit(
        self,
        corpus: str | Sequence[str] | CorpusSource,
        *,
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        corpus_name: str = "",
        pace: float = 0.0,
    ) -> str:
        """Create a job (counting starts on the first :meth:`advance`); returns its ID.

        Texts are written to a file by ``training.inputs.write_corpus``, as on a server, so
        the counts (and so the merges) are the same. A :class:`CorpusSource` is found here
        and now (an ``hf://`` one downloaded in this thread: the pages offer none in a tab).
        """
        from core.train import BPETrainer
        from core.train.corpus_readers import CorpusFiles
        from core.train.corpus_sources import find_corpus_files

        check_pace(pace)
        job_id = secrets.token_urlsafe(9)
        files: CorpusFiles | str
        if isinstance(corpus, CorpusSource):
            path, specials = None, tuple(dict.fromkeys(special_tokens))
            files = find_corpus_files(list(corpus.sources), text_column=corpus.text_column)
            size = corpus.size or sum(os.path.getsize(p) for p in files.paths)
        else:
            path = os.path.join(self._tmpdir, f"{job_id}.txt")
            specials, data = write_corpus(path, corpus, special_tokens)
            files, size = path, len(data)
        trainer = BPETrainer(files, int(vocab_size), list(specials), pattern=pattern)
        self._jobs[job_id] = _Job(
            job_id=job_id, temp_path=path, corpus_name=corpus_name or "corpus",
            corpus_bytes=size, vocab_size=int(vocab_size), special_tokens=specials,
            pattern=pattern, pace=float(pace), trainer=trainer,
            counting=trainer.count_steps(chunk_size=COUNT_CHUNK_BYTES),
        )
        self._evict()
        return job_id

    def snapshot(self, job_id: str) -> JobSnapshot:
        """The current state of a job; raises ``KeyError`` for an unknown ID."""
        job = self._jobs[job_id]
        return JobSnapshot(
            job_id=job.job_id, status=job.status, queue_position=None,
            vocab_size=job.vocab_size, special_tokens=job.special_tokens, pattern=job.pattern,
            corpus_name=job.corpus_name, corpus_bytes=job.corpus_bytes,
            rows=shown_rows(job.rows, job.keep if job.stop_requested else job.hold),
            count_progress=job.count_progress,
            count_distinct=job.trainer.distinct_so_far if job.counting is not None else None,
            vocab=dict(job.vocab) if job.vocab is not None else None,
            merges=list(job.merges) if job.merges is not None else None,
            stop_reason=job.stop_reason, messages=tuple(job.messages), error=job.error,
            corpus_stats=dict(job.corpus_stats), pause_requested=job.pause_requested,
            stop_requested=job.stop_requested, submitted_at=job.submitted_at,
            started_at=job.submitted_at, finished_at=job.finished_at,
            paused_seconds=job.paused_seconds, paused_since=job.paused_since,
        )

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._jobs

    def status(self, job_id: str) -> str | None:
        job = self._jobs.get(job_id)
        return None if job is None else job.status

    def pause(self, job_id: str, *, shown: int | None = None) -> None:
        """Pause before the next merge (while counting: once counting is done). ``shown``:
        the merge count the page showed at the click, held while paused (as on a server)."""
        job = self._jobs[job_id]
        if job.status in TERMINAL:
            return
        if not job.pause_requested:
            job.hold = None if shown is None else max(0, int(shown))
        job.pause_requested = True
        if job.status == "training":
            job.status = "paused"
            job.paused_since = time.time()

    def resume(self, job_id: str) -> None:
        job = self._jobs[job_id]
        if job.status in TERMINAL:
            return
        job.pause_requested = False
        job.hold = None
        if job.paused_since is not None:
            paused = time.time() - job.paused_since
            job.paused_seconds += paused
            if job.merging_since is not None:
                job.merging_since += paused  # a pause does not count towards the pace
            job.paused_since = None
        if job.status == "paused":
            job.status = "training"

    def stop(self, job_id: str, *, shown: int | None = None) -> None:
        """End now, keeping the merges learned so far (``shown``: the merge count the page
        showed at the click, kept exactly); a Stop after the end says so."""
        job = self._jobs[job_id]
        if job.status in TERMINAL:
            if job.status == "finished":
                note_late_stop(job.messages, job.merges, job.vocab)
            return
        job.keep = job.hold if shown is None else max(0, int(shown))
        job.stop_requested = True
        self._end(job, stopped=True)

    def cancel(self, job_id: str) -> None:
        job = self._jobs[job_id]
        if job.status in TERMINAL:
            return
        job.messages.append("Cancelled.")
        self._close(job, "cancelled")

    def forget(self, job_id: str) -> None:
        job = self._jobs.pop(job_id, None)
        if job is not None and job.status not in TERMINAL:
            self._close(job, "cancelled")

    def wait(self, job_id: str, timeout: float | None = None) -> JobSnapshot:
        """Advance a job until it ends (or ``timeout`` seconds pass): for tests and scripts."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.snapshot(job_id).done and (deadline is None or
                                                   time.monotonic() < deadline):
            if self._jobs[job_id].status == "paused":
                break  # nothing will move until someone resumes it
            self.advance(job_id)
        return self.snapshot(job_id)

    def status_counts(self) -> dict[str, int]:
        running = sum(job.status not in TERMINAL for job in self._jobs.values())
        return {"running": running, "queued": 0, "waiting_for_other_processes": 0}

    def warm_up(self) -> None:
        """Nothing to warm: there are no worker processes."""

    def shutdown(self) -> None:
        for job in list(self._jobs.values()):
            if job.status not in TERMINAL:
                self._close(job, "cancelled")
        self._cleanup()

    # ---- the slice ----------------------------------------------------------------------------

    def advance(self, job_id: str, budget: float = SLICE_SECONDS) -> None:
        """Do about ``budget`` seconds of the job's work here and now: at least one chunk of
        counting or one merge (nothing if it is paused, ended, or ahead of its pace). Every
        failure ends the job with a message."""
        job = self._jobs.get(job_id)
        if job is None or job.status in TERMINAL or job.status == "paused":
            return
        deadline = time.perf_counter() + budget
        try:
            if job.counting is not None and not self._count(job, deadline):
                return
            self._merge(job, deadline)
        except MemoryError:
            self._fail(job, "Training ran out of memory in this browser tab: use a smaller "
                            "corpus or vocab size.")
        except Exception as err:  # noqa: BLE001 - every failure becomes a job error
            from core.errors import PlaygroundError

            self._fail(job, str(err) if isinstance(err, PlaygroundError)
                       else f"Training failed: {type(err).__name__}: {err}")

    def _count(self, job: _Job, deadline: float) -> bool:
        """Count chunks until the deadline; True once counting is over."""
        for done, total in job.counting or ():
            job.count_progress, job.corpus_bytes = (done / total if total else 1.0), total
            if time.perf_counter() >= deadline:
                return False
        job.counting = None
        job.count_progress = 1.0
        job.corpus_stats = dict(job.trainer.corpus_stats)
        job.status = "training"
        job.merging_since = time.monotonic()
        if job.pause_requested:  # asked while counting: pause before merge 0
            job.status = "paused"
            job.paused_since = time.time()
            return False
        return True

    def _merge(self, job: _Job, deadline: float) -> None:
        trainer = job.trainer
        target = trainer.n_merges_target
        while True:  # at least one merge per slice, however small the budget
            rank = len(job.rows)
            if rank >= target:
                trainer.step()  # finishes as "reached vocab size"
                self._end(job, stopped=False)
                return
            if job.pace and job.merging_since is not None and \
                    time.monotonic() < job.merging_since + rank / job.pace:
                return  # ahead of the pace: the next poll does the next merge
            event = trainer.step()
            if event is None:
                self._end(job, stopped=False)
                return
            job.rows.append((event.rank, event.count, event.token, event.pair,
                             event.vocab_size, self._elapsed(job)))
            if time.perf_counter() >= deadline:
                return

    @staticmethod
    def _elapsed(job: _Job) -> float:
        paused = job.paused_seconds
        return max(0.0, time.time() - job.submitted_at - paused)

    # ---- endings ------------------------------------------------------------------------------

    def _end(self, job: _Job, *, stopped: bool) -> None:
        """Finish with what was learned: "stopped" on request, else "finished"."""
        trainer = job.trainer
        if stopped and job.counting is not None:
            # stopped while counting: end now, with no merge (counting the rest first could
            # take a while on a big upload, in the tab's only thread)
            from core.train import stopped_counting_note

            job.vocab, job.merges = trainer.vocab, []
            job.stop_reason = "stopped"
            job.messages.append(stopped_counting_note(job.count_progress or 0.0, len(job.vocab)))
            self._close(job, "stopped")
            return
        if stopped and not trainer.done:
            trainer.stop()
            trainer.step()
        if job.paused_since is not None:
            job.paused_seconds += time.time() - job.paused_since
            job.paused_since = None
        job.vocab, job.merges = trainer.vocab, trainer.merges
        job.stop_reason = trainer.stop_reason
        job.messages.extend(m for m in trainer.messages if m not in job.messages)
        job.corpus_stats = dict(trainer.corpus_stats)
        job.hold = None
        if stopped:  # cut to what the page showed at the click (a slice may have run since)
            cut_to_shown(job, job.keep)
        self._close(job, "stopped" if job.stop_reason == "stopped" else "finished")

    def _fail(self, job: _Job, message: str) -> None:
        job.error = message
        self._close(job, "failed")

    def _close(self, job: _Job, status: str) -> None:
        job.status = status
        job.finished_at = job.finished_at or time.time()
        job.counting = None
        job.trainer = None  # its merge state can be large: keep only the result
        if job.temp_path is not None:
            try:
                os.remove(job.temp_path)
            except OSError:
                pass

    def _evict(self) -> None:
        """Keep at most ``max_jobs`` jobs: the oldest ended ones go first."""
        ended = [j for j in self._jobs.values() if j.status in TERMINAL]
        while len(self._jobs) > self.max_jobs and ended:
            self._jobs.pop(ended.pop(0).job_id, None)

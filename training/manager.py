"""Training jobs in worker processes: a server-wide queue with a concurrency limit.

No Streamlit import here: the Train page creates one :class:`TrainingManager` per server
(``st.cache_resource``, in ``ui.training``), submits jobs, keeps only its own job IDs in
``st.session_state``, and polls :meth:`TrainingManager.snapshot` from a fragment. Everything
else happens here:

- each job runs ``core.train.BPETrainer`` in its own process (``spawn``: the Streamlit server
  is threaded, and forking a threaded process is unsafe), so one user's training never blocks
  another user's pages;
- at most ``max_concurrent`` jobs run at once (``TOKPLAY_MAX_TRAININGS``, default 2); the rest
  wait in a FIFO queue that reports each job's position;
- each worker gets an address-space limit (``TOKPLAY_TRAIN_MEMORY_MB``, default 2048), so a
  huge corpus ends its own job with a clear message instead of the server;
- texts go to the worker as a temporary file (never pickled through a pipe); a corpus that
  lives in files (``training.inputs.CorpusSource``: a server corpus, a Hugging Face dataset
  file) is read where it lies, never copied, and an ``hf://`` one is downloaded by the worker
  (status "downloading", its bytes reported); merge events come back in batches (one message
  per ~0.05 s, not one per merge);
- pause / resume / stop (keeps what was learned) / cancel (drops the job), each taking effect
  before the worker's next merge; a Stop that arrives after the end says so in the messages;
  time spent paused is left out of every elapsed time; a worker that dies (killed, crashed)
  marks its job failed with a message saying so.

Typical use::

    manager = TrainingManager(max_concurrent=2)
    job_id = manager.submit(["some text ..."], vocab_size=500, special_tokens=["<|endoftext|>"])
    snap = manager.snapshot(job_id)        # status, queue position, progress, merges so far
    manager.wait(job_id)                   # (tests, scripts) block until it ends
    snap = manager.snapshot(job_id); snap.vocab, snap.merges
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from training.inputs import CorpusSource, check_pace, write_corpus
from training.slots import TrainingSlots
from training.snapshot import (
    TERMINAL,
    JobSnapshot,
    MergeRow,
    cut_to_shown,
    note_late_stop,
    shown_rows,
    stop_while_downloading,
)
from training.worker import Worker, death_message, spawn_worker
from ui.limits import max_concurrent_trainings, train_memory_mb

__all__ = ["TrainingManager"]

_log = logging.getLogger(__name__)


@dataclass
class _Job:
    job_id: str
    corpus: CorpusSource  # what the worker reads
    temp_path: str | None  # the texts' file, deleted when the job ends (never a server corpus)
    corpus_name: str
    corpus_bytes: int
    vocab_size: int
    special_tokens: tuple[str, ...]
    pattern: str
    pace: float = 0.0  # merges per second; 0 = full speed
    status: str = "queued"
    rows: list[MergeRow] = field(default_factory=list)
    count_progress: float | None = None
    vocab: dict[int, bytes] | None = None
    merges: list[tuple[bytes, bytes]] | None = None
    stop_reason: str | None = None
    messages: list[str] = field(default_factory=list)
    error: str | None = None
    corpus_stats: dict[str, Any] = field(default_factory=dict)
    pause_requested: bool = False
    stop_requested: bool = False
    hold: int | None = None  # while paused: the merge count shown when Pause was clicked
    keep: int | None = None  # after a Stop: the merge count shown when it was clicked
    count_distinct: int | None = None
    download: tuple[int, int] | None = None  # (bytes fetched, of bytes) while downloading
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    paused_seconds: float = 0.0
    paused_since: float | None = None
    process: Any = None
    conn: Any = None
    run_event: Any = None  # set = may run, clear = paused
    stop_event: Any = None
    finished: threading.Event = field(default_factory=threading.Event)
    slot: Any = None  # the TrainingSlots lock held while it runs


class TrainingManager:
    """Runs training jobs in worker processes, at most ``max_concurrent`` at a time.

    Thread-safe: every public method may be called from any Streamlit script thread. One
    background thread (started lazily) starts queued jobs, reads worker messages and notices
    dead workers.
    """

    def __init__(
        self,
        *,
        max_concurrent: int | None = None,
        memory_mb: int | None = None,
        max_jobs: int = 200,
        prewarm: bool = True,
        slots_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """``slots_dir``: a folder shared by every server process on the host (the library
        folder's ``training-slots``); with it, ``max_concurrent`` holds across all of them
        (:class:`TrainingSlots`), else per process."""
        # subtle: imported here, not at the top: Pyodide has no _multiprocessing, and this
        # module must still import there (the static build trains in the page, training.inpage)
        import multiprocessing
        import multiprocessing.connection

        self._mp = multiprocessing
        self.max_concurrent = max_concurrent or max_concurrent_trainings()
        self._slots = None if slots_dir is None else TrainingSlots(slots_dir, self.max_concurrent)
        self.waiting_for_slot = False  # queued jobs wait for another process's trainings
        self.memory_mb = memory_mb if memory_mb is not None else train_memory_mb()
        self.max_jobs = max_jobs
        self._ctx = multiprocessing.get_context("spawn")
        self._lock = threading.RLock()
        self._jobs: dict[str, _Job] = {}
        self._queue: deque[str] = deque()
        self._running: set[str] = set()
        self._tmpdir = tempfile.mkdtemp(prefix="tokplay-jobs-")
        self._wake_r, self._wake_w = multiprocessing.Pipe(duplex=False)
        self._closed = False
        self._to_close: list[Any] = []
        # the temp dir goes even if nobody calls shutdown() (the server just exits)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._tmpdir, ignore_errors=True)
        self.prewarm = prewarm
        self._spare: Worker | None = None
        self._thread: threading.Thread | None = None
        self._counter = itertools.count(1)

    # ---- public API ------------------------------------------------------------------------

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
        """Queue a training job on ``corpus`` and return its ID (hard to guess, per user).

        ``corpus``: texts, joined as :func:`write_corpus` says, or a :class:`CorpusSource`
        (files read where they are). ``pace`` (merges per second, 0 = full speed) slows the
        merge loop down so people can watch it: merge k is not emitted before k / pace
        seconds of (unpaused) merging.
        """
        check_pace(pace)
        if self._closed:
            raise RuntimeError("this TrainingManager has been shut down")
        job_id = secrets.token_urlsafe(9)
        specials = tuple(dict.fromkeys(special_tokens))
        temp_path = None
        if not isinstance(corpus, CorpusSource):
            temp_path = os.path.join(self._tmpdir, f"{next(self._counter):06d}-{job_id}.txt")
            specials, data = write_corpus(temp_path, corpus, special_tokens)
            corpus = CorpusSource((temp_path,), size=len(data))
        job = _Job(
            job_id=job_id,
            corpus=corpus,
            temp_path=temp_path,
            corpus_name=corpus_name or "corpus",
            corpus_bytes=corpus.size,
            vocab_size=int(vocab_size),
            special_tokens=specials,
            pattern=pattern,
            pace=float(pace),
        )
        with self._lock:
            self._jobs[job_id] = job
            self._queue.append(job_id)
            self._evict_locked()
        self._ensure_thread()
        self._wake()
        return job_id

    def snapshot(self, job_id: str) -> JobSnapshot:
        """The current state of a job; raises ``KeyError`` for an unknown (or evicted) ID."""
        with self._lock:
            job = self._jobs[job_id]
            position = None
            if job.status == "queued":
                position = self._queue.index(job_id) + 1 if job_id in self._queue else None
            return JobSnapshot(
                job_id=job.job_id,
                status=job.status,
                queue_position=position,
                vocab_size=job.vocab_size,
                special_tokens=job.special_tokens,
                pattern=job.pattern,
                corpus_name=job.corpus_name,
                corpus_bytes=job.corpus_bytes,
                rows=shown_rows(job.rows, job.keep if job.stop_requested else job.hold),
                count_progress=job.count_progress,
                count_distinct=job.count_distinct,
                download=job.download,
                vocab=dict(job.vocab) if job.vocab is not None else None,
                merges=list(job.merges) if job.merges is not None else None,
                stop_reason=job.stop_reason,
                messages=tuple(job.messages),
                error=job.error,
                corpus_stats=dict(job.corpus_stats),
                pause_requested=job.pause_requested,
                stop_requested=job.stop_requested,
                submitted_at=job.submitted_at,
                started_at=job.started_at,
                finished_at=job.finished_at,
                paused_seconds=job.paused_seconds,
                paused_since=job.paused_since,
                pid=job.process.pid if job.process is not None else None,
            )

    def __contains__(self, job_id: object) -> bool:
        with self._lock:
            return job_id in self._jobs

    def status(self, job_id: str) -> str | None:
        """A job's status, or None for an unknown ID: cheap (no copy of its rows), for code
        that runs on every page rerun."""
        with self._lock:
            job = self._jobs.get(job_id)
            return None if job is None else job.status

    def pause(self, job_id: str, *, shown: int | None = None) -> None:
        """Pause a job before its next merge (while queued or counting: after its first merge).

        ``shown``: the merge count the page showed at the click. Snapshots then hold the rows
        at that count while paused (:func:`shown_rows`), and a Stop keeps them. The status
        turns "paused" once the worker confirms.
        """
        self._set_paused(job_id, True, shown)

    def resume(self, job_id: str) -> None:
        """Resume a paused job."""
        self._set_paused(job_id, False)

    def _set_paused(self, job_id: str, paused: bool, shown: int | None = None) -> None:
        with self._lock:
            job = self._jobs[job_id]
            if job.status in TERMINAL:
                return
            if paused and not job.pause_requested:
                job.hold = None if shown is None else max(0, int(shown))
            elif not paused:
                job.hold = None
            job.pause_requested = paused  # a queued job starts paused (after its counting)
            if job.run_event is not None:
                (job.run_event.clear if paused else job.run_event.set)()
            if not paused:
                self._end_pause_locked(job)
                if job.status == "paused":
                    job.status = "training"

    @staticmethod
    def _end_pause_locked(job: _Job) -> None:
        if job.paused_since is not None:
            job.paused_seconds += time.time() - job.paused_since
            job.paused_since = None

    def stop(self, job_id: str, *, shown: int | None = None) -> None:
        """End a job before its next merge, keeping the merges learned so far (a queued job is
        cancelled). A job that has already finished gets a message saying so.

        ``shown``: the merge count the page showed at the click (while paused, the count the
        pause holds). The job keeps exactly that many merges (:func:`cut_to_shown`), however
        far the worker got before the request reached it.
        """
        with self._lock:
            job = self._jobs[job_id]
            if job.status in TERMINAL:
                if job.status == "finished":
                    self._note_late_stop_locked(job)
                return
            if job.status == "queued":
                self._cancel_locked(job, "Cancelled while waiting in the queue.")
                return
            if job.status == "downloading":
                self._stop_download_locked(job)
                return
            if not job.stop_requested:
                job.keep = job.hold if shown is None else max(0, int(shown))
            job.stop_requested = True
            job.stop_event.set()
            job.run_event.set()  # a paused worker must wake up to stop
        self._wake()

    def _stop_download_locked(self, job: _Job) -> None:
        """A Stop while the corpus downloads ends the worker now (a download cannot look at
        a Stop between two chunks), keeping what a Stop while counting keeps: no merge."""
        if job.process is not None and job.process.is_alive():
            job.process.terminate()
        stop_while_downloading(job)
        self._finish_locked(job, "stopped")

    @staticmethod
    def _note_late_stop_locked(job: _Job) -> None:
        note_late_stop(job.messages, job.merges, job.vocab)

    def cancel(self, job_id: str) -> None:
        """Drop a job: leave the queue, or end its worker at once (nothing is kept)."""
        with self._lock:
            job = self._jobs[job_id]
            if job.status in TERMINAL:
                return
            self._cancel_locked(job, "Cancelled.")
        self._wake()

    def forget(self, job_id: str) -> None:
        """Cancel a job if needed and drop everything the manager keeps about it."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return
            if job.status not in TERMINAL:
                self._cancel_locked(job, "Cancelled.")
            del self._jobs[job_id]

    def wait(self, job_id: str, timeout: float | None = None) -> JobSnapshot:
        """Block until a job ends (or ``timeout`` seconds pass); return its snapshot."""
        with self._lock:
            event = self._jobs[job_id].finished
        event.wait(timeout)
        return self.snapshot(job_id)

    def advance(self, job_id: str, budget: float = 0.0) -> None:
        """Nothing to do: workers train on their own (``training.inpage`` trains when asked)."""

    def status_counts(self) -> dict[str, int]:
        """Running and queued jobs across the whole server (for a status line)."""
        with self._lock:
            return {"running": len(self._running), "queued": len(self._queue),
                    "waiting_for_other_processes": int(self.waiting_for_slot)}

    def shutdown(self) -> None:
        """Cancel every job, stop the background thread and delete temporary files."""
        with self._lock:
            self._closed = True
            for job in list(self._jobs.values()):
                if job.status not in TERMINAL:
                    self._cancel_locked(job, "The server is shutting down.")
            if self._spare is not None:
                self._spare.process.terminate()
                self._spare.close()
                self._spare = None
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._cleanup()

    # ---- internals (lock held where the name says so) --------------------------------------

    def _wake(self) -> None:
        try:
            self._wake_w.send_bytes(b"!")
        except OSError:
            pass

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="tokplay-training-manager", daemon=True
                )
                self._thread.start()

    def _evict_locked(self) -> None:
        """Bound memory: forget the oldest finished jobs beyond ``max_jobs``."""
        excess = len(self._jobs) - self.max_jobs
        if excess <= 0:
            return
        ended = sorted(
            (j for j in self._jobs.values() if j.status in TERMINAL), key=lambda j: j.submitted_at
        )
        for job in ended[:excess]:
            del self._jobs[job.job_id]

    def _finish_locked(self, job: _Job, status: str, *, error: str | None = None) -> None:
        job.status = status
        if error is not None:
            job.error = error
        job.finished_at = time.time()
        self._end_pause_locked(job)
        self._running.discard(job.job_id)
        if job.slot is not None:
            TrainingSlots.release(job.slot)
            job.slot = None
        if job.job_id in self._queue:
            self._queue.remove(job.job_id)
        if job.conn is not None:
            # subtle: the loop thread may be waiting on this pipe right now; closing it under
            # its feet breaks select(), so the loop closes it once the wait returns
            self._to_close.append(job.conn)
            job.conn = None
        if job.temp_path is not None:
            try:
                os.unlink(job.temp_path)
            except OSError:
                pass
        job.finished.set()

    def _cancel_locked(self, job: _Job, message: str) -> None:
        if job.process is not None and job.process.is_alive():
            job.process.terminate()
        job.messages.append(message)
        self._finish_locked(job, "cancelled")

    def _take_spare_locked(self) -> Worker:
        spare, self._spare = self._spare, None
        if spare is None or not spare.process.is_alive():
            if spare is not None:
                spare.close()
            spare = spawn_worker(self._ctx, self.memory_mb)
        return spare

    def warm_up(self) -> None:
        """Start the idle worker now (the page does this when the manager is created)."""
        with self._lock:
            if self._spare is None and not self._closed:
                self._spare = spawn_worker(self._ctx, self.memory_mb)
        self._ensure_thread()

    def _start_locked(self, job: _Job) -> None:
        job.status = "starting"
        job.started_at = time.time()
        self._running.add(job.job_id)
        try:
            spare = self._take_spare_locked()
            spare.ctrl.send((job.corpus.sources, job.corpus.text_column, job.vocab_size,
                             job.special_tokens, job.pattern, job.pace))
        except Exception as err:  # noqa: BLE001 - e.g. out of processes: fail this job only
            self._finish_locked(job, "failed", error=f"Could not start a training worker: {err}")
            return
        job.process, job.conn = spare.process, spare.events
        job.run_event, job.stop_event = spare.run_event, spare.stop_event
        if job.pause_requested:
            job.run_event.clear()
        spare.ctrl.close()

    def _refill_spare_locked(self) -> None:
        """Keep one warm worker, but only start it while no training runs.

        subtle: starting a Python process costs ~0.5 s of CPU; doing it next to a running
        training slowed that training by ~20% on a 2-core machine.
        """
        if self.prewarm and self._spare is None and not self._closed and not self._running:
            try:
                self._spare = spawn_worker(self._ctx, self.memory_mb)
            except Exception:  # noqa: BLE001 - no spare: the next job spawns its own
                self._spare = None

    def _schedule_locked(self) -> None:
        self.waiting_for_slot = False
        while self._queue and len(self._running) < self.max_concurrent:
            job = self._jobs.get(self._queue[0])
            if job is None or job.status != "queued":
                self._queue.popleft()
                continue
            if self._slots is not None:
                job.slot = self._slots.try_acquire()
                if job.slot is None:  # other server processes hold every slot: retry later
                    self.waiting_for_slot = True
                    return
            self._queue.popleft()
            self._start_locked(job)

    def _loop(self) -> None:
        while True:
            try:
                if not self._loop_once():
                    return
            except Exception:  # noqa: BLE001 - the loop must survive anything, or jobs stall
                _log.exception("training manager loop error")
                time.sleep(0.1)

    def _loop_once(self) -> bool:
        with self._lock:
            for conn in self._to_close:
                try:
                    conn.close()
                except OSError:
                    pass
            self._to_close.clear()
            self._mp.active_children()  # reaps finished workers (no zombies)
            if self._closed and not self._running:
                return False
            self._schedule_locked()
            self._refill_spare_locked()
            conns = {j.conn: j for j in map(self._jobs.get, self._running) if j and j.conn}
        self._poll(conns)
        return True

    def _poll(self, conns: dict[Any, _Job]) -> None:
        """Wait up to 0.5 s for worker messages (or a wake-up) and apply them."""
        ready: list[Any] = self._mp.connection.wait([self._wake_r, *conns], timeout=0.5)
        for conn in ready:
            if conn is self._wake_r:
                while self._wake_r.poll():
                    self._wake_r.recv_bytes()
                continue
            job = conns[conn]
            try:
                message = conn.recv()
            except (EOFError, OSError):
                self._worker_gone(job)
                continue
            with self._lock:
                if job.status not in TERMINAL:
                    self._handle_locked(job, message)
        self._reap_dead()

    def _handle_locked(self, job: _Job, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "status":
            status = message[1]
            if status == "paused":
                # the worker has stopped merging (its rows came first, on the same pipe);
                # subtle: not if a resume crossed this message on its way here
                if job.pause_requested and job.status != "paused":
                    job.status, job.paused_since = "paused", time.time()
            # subtle: a pause the user asked for wins over a stale "training" from the worker
            elif not (status == "training" and job.pause_requested):
                job.status = status
        elif kind == "download":  # (its total is the corpus's size until counting says)
            job.download = (message[1], message[2])
            job.corpus_bytes = job.corpus_bytes or message[2]
        elif kind == "count":
            job.count_progress, job.count_distinct, job.corpus_bytes = message[1:4]
        elif kind == "merges":
            job.rows.extend(message[1])
        elif kind == "messages":
            job.messages.extend(m for m in message[1] if m not in job.messages)
        elif kind == "done":
            _, vocab, merges, stop_reason, messages, stats = message
            job.vocab, job.merges, job.stop_reason = vocab, merges, stop_reason
            job.messages.extend(m for m in messages if m not in job.messages)
            job.corpus_stats = dict(stats or {})
            job.hold = None
            if job.stop_requested:  # cut to what the page showed at the click
                cut_to_shown(job, job.keep)
            self._finish_locked(job, "stopped" if job.stop_reason == "stopped" else "finished")
            if job.stop_requested and job.status == "finished":
                self._note_late_stop_locked(job)  # the worker was done before Stop reached it
        elif kind == "error":  # (naming a server corpus as the page does, never by its path)
            self._finish_locked(job, "failed", error=job.corpus.shown(message[1]))

    def _worker_gone(self, job: _Job) -> None:
        """The worker's pipe closed: fine after "done", a failure otherwise."""
        if job.process is not None:
            job.process.join(timeout=2)
        with self._lock:
            if job.status in TERMINAL:
                return
            code = job.process.exitcode if job.process is not None else None
            self._finish_locked(job, "failed", error=death_message(code))

    def _reap_dead(self) -> None:
        with self._lock:
            jobs = [self._jobs[j] for j in self._running if j in self._jobs]
        for job in jobs:
            process = job.process
            # subtle: a dead worker's last messages may still sit in the pipe; the EOF path
            # (_worker_gone) handles it after they are read. Only a worker that died without
            # ever closing its pipe end (impossible on Linux, defensive) is reaped here.
            if process is not None and process.exitcode is not None and job.conn is None:
                with self._lock:
                    if job.status not in TERMINAL:
                        self._finish_locked(job, "failed", error=death_message(process.exitcode))
        with self._lock:
            for job_id in list(self._running):
                running = self._jobs.get(job_id)
                if running is None or running.status in TERMINAL:
                    self._running.discard(job_id)

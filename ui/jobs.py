"""Training jobs in worker processes: a server-wide queue with a concurrency limit.

No Streamlit import here: the Train page creates one :class:`TrainingManager` per server
(``st.cache_resource``), submits jobs, keeps only its own job IDs in ``st.session_state``, and
polls :meth:`TrainingManager.snapshot` from a fragment. Everything else happens here:

- each job runs ``core.train.BPETrainer`` in its own process (``spawn``: the Streamlit server
  is threaded, and forking a threaded process is unsafe), so one user's training never blocks
  another user's pages;
- at most ``max_concurrent`` jobs run at once (``TOKPLAY_MAX_TRAININGS``, default 2); the rest
  wait in a FIFO queue that reports each job's position;
- each worker gets an address-space limit (``TOKPLAY_TRAIN_MEMORY_MB``, default 2048), so a
  huge corpus ends its own job with a clear message instead of the server;
- the corpus goes to the worker as a temporary file (never pickled through a pipe); merge
  events come back in batches (one message per ~0.1 s, not one per merge);
- pause / resume / stop (keeps what was learned) / cancel (drops the job), and a worker that
  dies (killed, crashed) marks its job failed with a message saying so.

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
import multiprocessing
import multiprocessing.connection
import os
import runpy
import secrets
import shutil
import signal
import tempfile
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.processes import plain_main

__all__ = [
    "DEFAULT_MAX_TRAININGS",
    "DEFAULT_MAX_UPLOAD_MB",
    "DEFAULT_MAX_VOCAB",
    "DEFAULT_MEMORY_MB",
    "JobSnapshot",
    "MergeRow",
    "TERMINAL",
    "TrainingManager",
    "decode_upload",
    "env_int",
    "format_bytes",
    "max_upload_bytes",
    "max_vocab_size",
    "parse_special_tokens",
    "readable_token",
    "vocab_size_problem",
]

DEFAULT_MAX_TRAININGS = 2
DEFAULT_MEMORY_MB = 2048

#: (rank, count, token, pair, vocab_size, elapsed): one learned merge, as the page draws it.
MergeRow = tuple[int, int, bytes, tuple[bytes, bytes], int, float]

#: Statuses after which a job never changes again.
TERMINAL = frozenset({"finished", "stopped", "cancelled", "failed"})

_log = logging.getLogger(__name__)
_WORKER_RUN_NAME = "__tokplay_training_worker__"
_FLUSH_SECONDS = 0.1  # worker -> manager batching interval
_FLUSH_ROWS = 2000  # ... or this many merges, whichever comes first


def env_int(name: str, default: int, *, minimum: int = 1) -> int:
    """An integer setting from the environment; ``default`` when unset or not a number.

    >>> env_int("TOKPLAY_SURELY_UNSET_FOR_DOCTEST", 7)
    7
    """
    raw = os.environ.get(name, "").strip()
    try:
        return max(minimum, int(raw)) if raw else default
    except ValueError:
        return default


# =============================================================================================
# What the page sees


@dataclass(frozen=True)
class JobSnapshot:
    """An immutable copy of one job's state, safe to read from any thread."""

    job_id: str
    status: str  # queued | starting | counting | training | paused | finished | stopped | ...
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
    submitted_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    pid: int | None = None

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
    def elapsed(self) -> float:
        """Seconds since the worker started (0 while queued)."""
        if self.started_at is None:
            return 0.0
        return (self.finished_at or time.time()) - self.started_at


# =============================================================================================
# Manager side


@dataclass
class _Job:
    job_id: str
    corpus_path: str
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
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    process: Any = None
    conn: Any = None
    run_event: Any = None  # set = may run, clear = paused
    stop_event: Any = None
    finished: threading.Event = field(default_factory=threading.Event)


@dataclass
class _Spare:
    """An idle worker process and its ends of the pipes and events."""

    process: Any
    ctrl: Any  # manager -> worker: the job spec
    events: Any  # worker -> manager: batched events
    run_event: Any
    stop_event: Any

    def close(self) -> None:
        for conn in (self.ctrl, self.events):
            try:
                conn.close()
            except OSError:
                pass


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
    ) -> None:
        self.max_concurrent = max_concurrent or env_int(
            "TOKPLAY_MAX_TRAININGS", DEFAULT_MAX_TRAININGS
        )
        self.memory_mb = memory_mb if memory_mb is not None else env_int(
            "TOKPLAY_TRAIN_MEMORY_MB", DEFAULT_MEMORY_MB, minimum=0
        )
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
        self._spare: _Spare | None = None
        self._thread: threading.Thread | None = None
        self._counter = itertools.count(1)

    # ---- public API ------------------------------------------------------------------------

    def submit(
        self,
        texts: str | Sequence[str],
        *,
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        corpus_name: str = "",
        pace: float = 0.0,
    ) -> str:
        """Queue a training job on ``texts`` and return its ID (hard to guess, per user).

        Several texts (several uploaded files) are joined with the first special token
        (or a newline when there is none), so no merge spans two files. ``pace`` (merges per
        second, 0 = full speed) slows the merge loop down so people can watch it: merge k is
        not emitted before k / pace seconds of (unpaused) merging.
        """
        if not (pace == 0 or 0 < pace <= 1_000_000):
            raise ValueError(f"pace must be 0 (full speed) or a positive rate, not {pace!r}")
        if self._closed:
            raise RuntimeError("this TrainingManager has been shut down")
        if isinstance(texts, str):
            texts = [texts]
        specials = tuple(dict.fromkeys(special_tokens))  # dedupe, keep order
        joiner = specials[0] if specials else "\n"
        job_id = secrets.token_urlsafe(9)
        path = os.path.join(self._tmpdir, f"{next(self._counter):06d}-{job_id}.txt")
        # subtle: write bytes, not text mode, so "\r\n" in an upload is not rewritten
        data = joiner.join(texts).encode("utf-8")
        with open(path, "wb") as fh:
            fh.write(data)
        job = _Job(
            job_id=job_id,
            corpus_path=path,
            corpus_name=corpus_name or "corpus",
            corpus_bytes=len(data),
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
                rows=tuple(job.rows),
                count_progress=job.count_progress,
                vocab=dict(job.vocab) if job.vocab is not None else None,
                merges=list(job.merges) if job.merges is not None else None,
                stop_reason=job.stop_reason,
                messages=tuple(job.messages),
                error=job.error,
                corpus_stats=dict(job.corpus_stats),
                pause_requested=job.pause_requested,
                submitted_at=job.submitted_at,
                started_at=job.started_at,
                finished_at=job.finished_at,
                pid=job.process.pid if job.process is not None else None,
            )

    def __contains__(self, job_id: object) -> bool:
        with self._lock:
            return job_id in self._jobs

    def pause(self, job_id: str) -> None:
        """Pause a job after its current merge (while queued or counting: after its first merge)."""
        with self._lock:
            job = self._jobs[job_id]
            if job.status in TERMINAL:
                return
            job.pause_requested = True  # a queued job starts paused (after its counting)
            if job.run_event is not None:
                job.run_event.clear()
            if job.status == "training":
                job.status = "paused"

    def resume(self, job_id: str) -> None:
        """Resume a paused job."""
        with self._lock:
            job = self._jobs[job_id]
            if job.status in TERMINAL:
                return
            job.pause_requested = False
            if job.run_event is not None:
                job.run_event.set()
            if job.status == "paused":
                job.status = "training"

    def stop(self, job_id: str) -> None:
        """End a job early, keeping the merges learned so far (a queued job is cancelled)."""
        with self._lock:
            job = self._jobs[job_id]
            if job.status in TERMINAL:
                return
            if job.status == "queued":
                self._cancel_locked(job, "Cancelled while waiting in the queue.")
                return
            job.stop_event.set()
            job.run_event.set()  # a paused worker must wake up to stop
        self._wake()

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

    def status_counts(self) -> dict[str, int]:
        """Running and queued jobs across the whole server (for a status line)."""
        with self._lock:
            return {"running": len(self._running), "queued": len(self._queue)}

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
        self._running.discard(job.job_id)
        if job.job_id in self._queue:
            self._queue.remove(job.job_id)
        if job.conn is not None:
            # subtle: the loop thread may be waiting on this pipe right now; closing it under
            # its feet breaks select(), so the loop closes it once the wait returns
            self._to_close.append(job.conn)
            job.conn = None
        try:
            os.unlink(job.corpus_path)
        except OSError:
            pass
        job.finished.set()

    def _cancel_locked(self, job: _Job, message: str) -> None:
        if job.process is not None and job.process.is_alive():
            job.process.terminate()
        job.messages.append(message)
        self._finish_locked(job, "cancelled")

    def _spawn_spare_locked(self) -> _Spare:
        """Start an idle worker that has already imported core.train, waiting for a job.

        subtle: spawning a Python process and importing core takes ~0.3-1 s on a busy
        machine; keeping one warm worker hides that from the next training. A worker runs
        one job and exits, so its memory limit and a kill only ever affect that job.
        """
        ctrl_r, ctrl_w = self._ctx.Pipe(duplex=False)
        events_r, events_w = self._ctx.Pipe(duplex=False)
        run_event = self._ctx.Event()
        run_event.set()
        stop_event = self._ctx.Event()
        # subtle: run this file by path (runpy), not by importing ``ui.jobs``: importing the
        # ``ui`` package would import Streamlit (~1 s, ~100 MB) in every worker.
        process = self._ctx.Process(
            target=runpy.run_path,
            name="tokplay-train-worker",
            args=(os.path.abspath(__file__),),
            kwargs={
                "init_globals": {
                    "_WORKER_ARGS": (ctrl_r, events_w, self.memory_mb, run_event, stop_event)
                },
                "run_name": _WORKER_RUN_NAME,
            },
            daemon=True,
        )
        try:
            with plain_main():  # the page script must not run again in the worker
                process.start()
        finally:
            ctrl_r.close()  # the child has its own copies; EOF on events_r now means it died
            events_w.close()
        return _Spare(process, ctrl_w, events_r, run_event, stop_event)

    def _take_spare_locked(self) -> _Spare:
        spare, self._spare = self._spare, None
        if spare is None or not spare.process.is_alive():
            if spare is not None:
                spare.close()
            spare = self._spawn_spare_locked()
        return spare

    def warm_up(self) -> None:
        """Start the idle worker now (the page does this when the manager is created)."""
        with self._lock:
            if self._spare is None and not self._closed:
                self._spare = self._spawn_spare_locked()
        self._ensure_thread()

    def _start_locked(self, job: _Job) -> None:
        job.status = "starting"
        job.started_at = time.time()
        self._running.add(job.job_id)
        try:
            spare = self._take_spare_locked()
            spare.ctrl.send(
                (job.corpus_path, job.vocab_size, job.special_tokens, job.pattern, job.pace))
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
                self._spare = self._spawn_spare_locked()
            except Exception:  # noqa: BLE001 - no spare: the next job spawns its own
                self._spare = None

    def _schedule_locked(self) -> None:
        while self._queue and len(self._running) < self.max_concurrent:
            job = self._jobs.get(self._queue.popleft())
            if job is not None and job.status == "queued":
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
            multiprocessing.active_children()  # reaps finished workers (no zombies)
            if self._closed and not self._running:
                return False
            self._schedule_locked()
            self._refill_spare_locked()
            conns = {j.conn: j for j in map(self._jobs.get, self._running) if j and j.conn}
        self._poll(conns)
        return True

    def _poll(self, conns: dict[Any, _Job]) -> None:
        """Wait up to 0.5 s for worker messages (or a wake-up) and apply them."""
        ready = multiprocessing.connection.wait([self._wake_r, *conns], timeout=0.5)
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
            # subtle: a pause the user asked for wins over a stale "training" from the worker
            if not (status == "training" and job.pause_requested):
                job.status = status
        elif kind == "count":
            job.count_progress = message[1]
        elif kind == "merges":
            job.rows.extend(message[1])
        elif kind == "messages":
            job.messages.extend(m for m in message[1] if m not in job.messages)
        elif kind == "done":
            _, vocab, merges, stop_reason, messages, stats = message
            job.vocab, job.merges, job.stop_reason = vocab, merges, stop_reason
            job.messages.extend(m for m in messages if m not in job.messages)
            job.corpus_stats = dict(stats or {})
            self._finish_locked(job, "stopped" if stop_reason == "stopped" else "finished")
        elif kind == "error":
            self._finish_locked(job, "failed", error=message[1])

    def _worker_gone(self, job: _Job) -> None:
        """The worker's pipe closed: fine after "done", a failure otherwise."""
        if job.process is not None:
            job.process.join(timeout=2)
        with self._lock:
            if job.status in TERMINAL:
                return
            code = job.process.exitcode if job.process is not None else None
            self._finish_locked(job, "failed", error=_death_message(code))

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
                        self._finish_locked(job, "failed", error=_death_message(process.exitcode))
        with self._lock:
            for job_id in list(self._running):
                job = self._jobs.get(job_id)
                if job is None or job.status in TERMINAL:
                    self._running.discard(job_id)


def _death_message(code: int | None) -> str:
    """The message for a worker that ended without reporting a result.

    >>> _death_message(-9)
    'The training worker stopped unexpectedly (killed by signal 9, SIGKILL). The server may be low on memory or the process was ended by someone. Start the training again, perhaps with a smaller corpus or vocab size.'
    """
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown signal"
        how = f"killed by signal {-code}, {name}"
    else:
        how = f"exit code {code}"
    return (
        f"The training worker stopped unexpectedly ({how}). The server may be low on memory or "
        "the process was ended by someone. Start the training again, perhaps with a smaller "
        "corpus or vocab size."
    )


# =============================================================================================
# Settings checks for the Train page (pure: no Streamlit, testable)

DEFAULT_MAX_VOCAB = 50_000
DEFAULT_MAX_UPLOAD_MB = 50


def max_vocab_size() -> int:
    """The largest vocab size this server trains (``TOKPLAY_MAX_VOCAB``, default 50,000)."""
    return env_int("TOKPLAY_MAX_VOCAB", DEFAULT_MAX_VOCAB, minimum=257)


def max_upload_bytes() -> int:
    """The most corpus bytes a training may upload (``TOKPLAY_MAX_UPLOAD_MB``, default 50)."""
    return env_int("TOKPLAY_MAX_UPLOAD_MB", DEFAULT_MAX_UPLOAD_MB) * 1024 * 1024


def parse_special_tokens(text: str) -> list[str]:
    r"""Special tokens from a text box: separated by commas or newlines, blanks dropped.

    >>> parse_special_tokens("<|endoftext|>, <|pad|>\n\n<|endoftext|>")
    ['<|endoftext|>', '<|pad|>']
    >>> parse_special_tokens("  ")
    []
    """
    parts = (p.strip() for line in text.splitlines() for p in line.split(","))
    return list(dict.fromkeys(p for p in parts if p))


def vocab_size_problem(vocab_size: int, n_special: int, *, maximum: int | None = None) -> str | None:
    """Why a vocab size cannot be trained, or ``None`` when it is fine.

    >>> vocab_size_problem(1000, 1) is None
    True
    >>> vocab_size_problem(100, 1)
    'Vocab size 100 is too small: the 256 single bytes and 1 special token(s) already take 257 IDs. Choose at least 257.'
    >>> vocab_size_problem(10**9, 1, maximum=50_000)
    'Vocab size 1,000,000,000 is too large for this server: at most 50,000 (set TOKPLAY_MAX_VOCAB to change the limit). Byte-level BPE vocabularies are usually 1,000 to 200,000.'
    """
    maximum = max_vocab_size() if maximum is None else maximum
    minimum = 256 + n_special
    if vocab_size < minimum:
        return (
            f"Vocab size {vocab_size:,} is too small: the 256 single bytes and {n_special} special "
            f"token(s) already take {minimum} IDs. Choose at least {minimum}."
        )
    if vocab_size > maximum:
        return (
            f"Vocab size {vocab_size:,} is too large for this server: at most {maximum:,} (set "
            "TOKPLAY_MAX_VOCAB to change the limit). Byte-level BPE vocabularies are usually "
            "1,000 to 200,000."
        )
    return None


def decode_upload(name: str, data: bytes) -> str:
    """Decode an uploaded corpus file, or raise ``CorpusError`` naming the file and byte offset.

    A NUL byte marks a binary file (valid UTF-8, but never text anyone means to train on).

    >>> decode_upload("a.txt", "café".encode())
    'café'
    >>> decode_upload("img.png", b"\\x89PNG")
    Traceback (most recent call last):
    ...
    core.errors.CorpusError: “img.png” is not valid UTF-8: bad byte(s) 89 50 4e 47 at byte offset 0 (invalid start byte). Upload a UTF-8 text file (re-save it as UTF-8 in your editor).
    """
    from core.errors import CorpusError

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = data[err.start : err.start + 4].hex(" ")
        raise CorpusError(
            f"“{name}” is not valid UTF-8: bad byte(s) {bad} at byte offset {err.start} "
            f"({err.reason}). Upload a UTF-8 text file (re-save it as UTF-8 in your editor)."
        ) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise CorpusError(
            f"“{name}” looks like a binary file, not text: a NUL byte at byte offset {nul}. "
            "Upload a plain UTF-8 .txt file."
        )
    return text


def readable_token(token: bytes) -> str:
    r"""A token for tables: whitespace visible (``·``, ``↵``, ``→``), bytes that are not whole
    UTF-8 characters and non-printable characters as ``\\xNN``.

    >>> readable_token(b" the\n")
    '·the↵'
    >>> readable_token(b"\xe2\x82")
    '\\xe2\\x82'
    >>> readable_token(b"a\x00\tb")
    'a\\x00→b'
    """
    text = token.decode("utf-8", errors="backslashreplace")
    text = text.replace(" ", "·").replace("\n", "↵").replace("\t", "→").replace("\r", "\\r")
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else "".join(f"\\x{b:02x}" for b in c.encode("utf-8")) for c in text
    )


def format_bytes(n: int) -> str:
    """Human-readable size.

    >>> format_bytes(532), format_bytes(2048), format_bytes(5 * 1024 * 1024)
    ('532 B', '2.0 KB', '5.0 MB')
    """
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


# =============================================================================================
# Worker side (runs in a spawned process)


def _limit_memory(memory_mb: int) -> None:
    """Cap this process's address space, so a runaway training fails with MemoryError."""
    if memory_mb <= 0:
        return
    try:
        import resource
    except ImportError:  # not on this platform: run unbounded
        return
    limit = memory_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _worker_entry(
    ctrl: Any, conn: Any, memory_mb: int, run_event: Any, stop_event: Any
) -> None:
    """An idle worker: import core now, wait for one job spec, run it, exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C on the server: the parent decides
    from core.pretokenize import PATTERNS, compile_pattern
    from core.train import train_bpe

    # warm up while idle: imports, the three regexes, one tiny training (first-call costs)
    for name in PATTERNS:
        compile_pattern(name)
    train_bpe(["warm up the worker<|endoftext|>warm"], 262, ["<|endoftext|>"])

    try:
        spec = ctrl.recv()
    except (EOFError, OSError):
        return  # the manager went away or shut down
    finally:
        ctrl.close()
    corpus_path, vocab_size, special_tokens, pattern, pace = spec
    _worker_main(conn, corpus_path, vocab_size, special_tokens, pattern, memory_mb, run_event,
                 stop_event, pace)


def _worker_main(
    conn: Any,
    corpus_path: str,
    vocab_size: int,
    special_tokens: tuple[str, ...],
    pattern: str,
    memory_mb: int,
    run_event: Any,
    stop_event: Any,
    pace: float = 0.0,
) -> None:
    """Train and stream batched events to ``conn``; always ends with "done" or "error"."""
    try:
        _limit_memory(memory_mb)
        _train_in_worker(conn, corpus_path, vocab_size, special_tokens, pattern, run_event,
                         stop_event, pace)
    except MemoryError:
        _send_error(
            conn,
            f"Training ran out of memory: each training may use at most {memory_mb} MB "
            "(TOKPLAY_TRAIN_MEMORY_MB). Use a smaller corpus or vocab size, or ask the server's "
            "owner to raise the limit.",
        )
    except Exception as err:  # noqa: BLE001 - every failure becomes a job error, never a crash
        from core.errors import PlaygroundError

        if isinstance(err, PlaygroundError):
            _send_error(conn, str(err))
        else:
            _send_error(
                conn,
                f"Training failed: {type(err).__name__}: {err}\n\n"
                + "".join(traceback.format_exception(err)[-3:]),
            )
    finally:
        try:
            conn.close()
        except OSError:
            pass


def _send_error(conn: Any, message: str) -> None:
    try:
        conn.send(("error", message))
    except (OSError, MemoryError):
        pass


def _train_in_worker(
    conn: Any,
    corpus_path: str,
    vocab_size: int,
    special_tokens: tuple[str, ...],
    pattern: str,
    run_event: Any,
    stop_event: Any,
    pace: float = 0.0,
) -> None:
    from core.train import BPETrainer

    conn.send(("status", "counting"))
    last_count = [0.0]

    def on_progress(phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if phase == "counting" and (now - last_count[0] >= _FLUSH_SECONDS or done >= total):
            last_count[0] = now
            conn.send(("count", done / total if total else 1.0))

    trainer = BPETrainer(
        corpus_path, vocab_size, list(special_tokens), pattern=pattern, on_progress=on_progress
    )
    batch: list[MergeRow] = []
    last_flush = time.monotonic()
    first = True
    merging_since = 0.0  # when merge 0 would be due at this pace (moved on by pauses)
    for event in trainer:
        if first:
            first = False
            conn.send(("status", "training"))
            merging_since = time.monotonic()
        if pace:  # slow motion: merge k is due k / pace seconds after merging began
            delay = merging_since + event.rank / pace - time.monotonic()
            if delay > 0:
                stop_event.wait(delay)  # a stop ends the wait at once (handled below)
        batch.append(
            (event.rank, event.count, event.token, event.pair, event.vocab_size, event.elapsed)
        )
        now = time.monotonic()
        if len(batch) >= _FLUSH_ROWS or now - last_flush >= _FLUSH_SECONDS:
            conn.send(("merges", batch))
            batch, last_flush = [], now
        if not run_event.is_set() and not stop_event.is_set():
            if batch:
                conn.send(("merges", batch))
                batch = []
            conn.send(("status", "paused"))
            paused_at = time.monotonic()
            while not run_event.wait(0.2):
                if stop_event.is_set():
                    break
            if not stop_event.is_set():
                conn.send(("status", "training"))
            last_flush = time.monotonic()
            merging_since += last_flush - paused_at  # a pause does not count towards the pace
        if stop_event.is_set():
            # subtle: stop() then keep iterating: the trainer's next step ends the loop and
            # records stop_reason "stopped" with its own message, keeping every merge so far
            trainer.stop()
    if stop_event.is_set() and not trainer.done:
        trainer.stop()
        trainer.step()  # counting was stopped before any merge: let the trainer finish cleanly
    if batch:
        conn.send(("merges", batch))
    stats = getattr(trainer, "corpus_stats", {}) or {}
    conn.send(
        ("done", trainer.vocab, trainer.merges, trainer.stop_reason, list(trainer.messages), stats)
    )


if __name__ == _WORKER_RUN_NAME:  # a worker process started by TrainingManager (runpy)
    _worker_entry(*_WORKER_ARGS)  # type: ignore[name-defined]  # noqa: F821

"""Evaluation jobs: :func:`core.explain.evaluate.evaluate` over a long text in a worker process, so
the page that asked (and every other session) stays responsive, with progress to poll.

The Evaluate page submits one job per (tokenizer, text) under a key naming both contents
(a fingerprint and a text hash), so a rerun, another session or a reload finds the same job
instead of starting a new one. A small text is evaluated at once in the caller's thread
(starting a process costs more than it saves); a long one is written to a temporary file and
read back in chunks by a spawned worker (no Streamlit, no ``ui``: core alone), which reports
the bytes done. At most ``max_concurrent`` workers run (the rest queue), each at a lower CPU
priority; finished results are kept for the ``max_jobs`` newest jobs. With ``in_page=True``
(the static build: no processes, no threads) every job runs at once, in the page.

>>> from core.formats.presets import load_preset
>>> jobs = EvaluationJobs(in_page=True)
>>> key = jobs.submit("gpt2|hi", load_preset("gpt2"), "hello world", name="hi")
>>> snap = jobs.snapshot(key)
>>> snap.status, snap.result.stats.tokens, snap.fraction
('done', 2, 1.0)
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.train.processes import plain_main

__all__ = ["SMALL_BYTES", "EvaluationJobs", "EvaluationSnapshot"]

#: Texts up to this many UTF-8 bytes are evaluated in the caller's thread.
SMALL_BYTES = 1_000_000
_PROGRESS_SECONDS = 0.2  # worker -> manager: at most this often
_NICENESS = 10


@dataclass(frozen=True)
class EvaluationSnapshot:
    """What a page sees of a job: ``status`` (queued, running, done, failed), bytes done of
    ``total``, the :class:`core.explain.evaluate.Evaluation` when done, the message when failed."""

    status: str
    done_bytes: int
    total_bytes: int
    result: Any = None
    error: str | None = None

    @property
    def fraction(self) -> float:
        """How far it is, 0 to 1."""
        if self.status == "done":
            return 1.0
        return min(self.done_bytes / self.total_bytes, 1.0) if self.total_bytes else 0.0


class _Job:
    def __init__(self, total: int) -> None:
        self.status = "queued"
        self.done_bytes = 0
        self.total = total
        self.result: Any = None
        self.error: str | None = None
        self.finished = threading.Event()

    def end(self, status: str, *, result: Any = None, error: str | None = None) -> None:
        self.result, self.error, self.status = result, error, status
        if status == "done":
            self.done_bytes = self.total
        self.finished.set()


class EvaluationJobs:
    """Jobs keyed by the caller's content key; thread-safe (every session's script thread
    calls it). One thread per queued or running job waits for a slot, starts the worker and
    reads its reports."""

    def __init__(self, *, max_concurrent: int = 1, max_jobs: int = 64, in_page: bool = False,
                 small_bytes: int = SMALL_BYTES) -> None:
        self.in_page = in_page
        self.small_bytes = small_bytes
        self._max_jobs = max_jobs
        self._slots = threading.BoundedSemaphore(max(1, max_concurrent))
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, _Job] = OrderedDict()

    def submit(self, key: str, tokenizer: Any, text: str | Callable[[], str], *,
               name: str = "", curve: bool = False) -> str:
        """Start evaluating ``text`` with ``tokenizer`` under ``key``, unless a job with that
        key exists (a failed one too: a rerun must not retry a text that crashed its worker
        over and over; it is tried again once forgotten). ``text`` may be a function that returns it,
        called only when a job starts (a page's rerun reads no long text). Returns ``key``."""
        with self._lock:
            if key in self._jobs:
                self._jobs.move_to_end(key)
                return key
        if callable(text):
            text = text()
        data = text.encode("utf-8", "surrogatepass")
        with self._lock:
            if key in self._jobs:
                return key  # another session started it meanwhile
            job = self._jobs[key] = _Job(len(data))
            while len(self._jobs) > self._max_jobs:
                self._jobs.popitem(last=False)
        if self.in_page or len(data) <= self.small_bytes:
            self._run_here(job, tokenizer, text, name, curve)
        else:
            threading.Thread(target=self._run_worker, args=(job, tokenizer, data, name, curve),
                             name="tokplay-evaluate", daemon=True).start()
        return key

    def snapshot(self, key: str) -> EvaluationSnapshot | None:
        """The job's state, or None for an unknown (or long forgotten) key."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return None
            return EvaluationSnapshot(job.status, job.done_bytes, job.total, job.result, job.error)

    def wait(self, key: str, timeout: float | None = None) -> EvaluationSnapshot | None:
        """Block until the job ends (scripts, tests), then its snapshot."""
        with self._lock:
            job = self._jobs.get(key)
        if job is not None:
            job.finished.wait(timeout)
        return self.snapshot(key)

    def _run_here(self, job: _Job, tokenizer: Any, text: str, name: str, curve: bool) -> None:
        from core.explain.evaluate import evaluate

        job.status = "running"
        try:
            result = evaluate(tokenizer, [text], name=name, curve=curve)
        except Exception as err:  # noqa: BLE001 - the page shows the message
            job.end("failed", error=str(err))
            return
        job.end("done", result=result)

    def _run_worker(self, job: _Job, tokenizer: Any, data: bytes, name: str, curve: bool) -> None:
        import multiprocessing

        with self._slots:
            fd, path = tempfile.mkstemp(prefix="tokplay-evaluate-", suffix=".txt")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                del data
                ctx = multiprocessing.get_context("spawn")
                reader, writer = ctx.Pipe(duplex=False)
                process = ctx.Process(target=_worker, args=(writer, tokenizer, path, name, curve),
                                      name="tokplay-evaluate-worker", daemon=True)
                with plain_main():  # the page script must not run again in the worker
                    process.start()
                writer.close()
                job.status = "running"
                self._read(job, reader)
                process.join()
                if job.status == "running":
                    job.end("failed", error=(f"The evaluation worker stopped unexpectedly (exit "
                                             f"code {process.exitcode}); the server may be low "
                                             "on memory."))
            except Exception as err:  # noqa: BLE001
                job.end("failed", error=f"The evaluation could not run: {err}")
            finally:
                os.remove(path)

    @staticmethod
    def _read(job: _Job, reader: Any) -> None:
        while True:
            try:
                kind, value = reader.recv()
            except EOFError:
                return
            if kind == "progress":
                job.done_bytes = value
            elif kind == "done":
                job.end("done", result=value)
                return
            else:
                job.end("failed", error=value)
                return


def _worker(conn: Any, tokenizer: Any, path: str, name: str, curve: bool) -> None:
    """Runs in the worker process: evaluate the file, reporting progress, then the result."""
    import time

    from core.explain.evaluate import evaluate
    from core.train.corpus import file_texts

    try:
        os.nice(_NICENESS)
    except OSError:
        pass
    last = [0.0]

    def progress(done: int) -> None:
        now = time.monotonic()
        if now - last[0] >= _PROGRESS_SECONDS:
            last[0] = now
            conn.send(("progress", done))

    try:
        result = evaluate(tokenizer, file_texts(path), name=name, curve=curve, on_progress=progress)
    except Exception as err:  # noqa: BLE001 - one message for the page
        conn.send(("error", str(err)))
    else:
        conn.send(("done", result))
    conn.close()

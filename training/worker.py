"""The process side of training: start a worker process, and what runs inside it.

A worker is started idle (:func:`spawn_worker`): it imports core and warms up, then waits for
one job spec on its control pipe, finds the corpus files (``core.train.corpus_sources``: an
``hf://`` one is downloaded here, into the Hugging Face cache), trains with
``core.train.BPETrainer`` and streams batched events back (``("status", s)``, ``("download",
done, total)``, ``("count", fraction, distinct, total)``, ``("merges", rows)``, then ``("done",
vocab, merges, stop_reason, messages, stats)`` or ``("error", message)``), and exits. The
manager (:mod:`training.manager`) pauses and stops it through two events.

The worker runs this file by path, so it imports nothing but core and the standard library
(``MergeRow`` is read from :mod:`training.snapshot` by type checkers only).
"""

from __future__ import annotations

import os
import runpy
import signal
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.train.processes import plain_main

if TYPE_CHECKING:  # never at run time: a worker imports core alone
    from training.snapshot import MergeRow

__all__ = ["Worker", "death_message", "spawn_worker"]

_WORKER_RUN_NAME = "__tokplay_training_worker__"
_FLUSH_SECONDS = 0.05  # worker -> manager batching interval (a share of the page's lag)
_FLUSH_ROWS = 2000  # ... or this many merges, whichever comes first
_GATE_SECONDS = 0.05  # at a slow pace, how often a wait for the next merge looks for a pause
_COUNT_CHUNK_BYTES = 1 << 20  # counting reads this much between two looks at Stop
#: Workers run at a lower CPU priority than the server (``TOKPLAY_TRAIN_NICENESS``, 0-19,
#: default 10): on a busy machine the pages (and their Pause and Stop buttons) stay
#: responsive, and the trainings take what is left (benchmarks/ui_latency.py measures it).
_DEFAULT_NICENESS = 10


def _niceness() -> int:
    """The worker's niceness from ``TOKPLAY_TRAIN_NICENESS`` (the default when unset or bad).

    >>> os.environ["TOKPLAY_TRAIN_NICENESS"] = "25"; _niceness()
    19
    >>> os.environ["TOKPLAY_TRAIN_NICENESS"] = "x"; _niceness()
    10
    >>> del os.environ["TOKPLAY_TRAIN_NICENESS"]
    """
    try:
        value = int(os.environ.get("TOKPLAY_TRAIN_NICENESS", _DEFAULT_NICENESS))
    except ValueError:
        return _DEFAULT_NICENESS
    return max(0, min(19, value))


# =============================================================================================
# Manager side: starting a worker


@dataclass
class Worker:
    """A worker process and the manager's ends of its pipes and events."""

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



def spawn_worker(ctx: Any, memory_mb: int) -> Worker:
    """Start an idle worker that has already imported core.train, waiting for a job.

    subtle: spawning a Python process and importing core takes ~0.3-1 s on a busy
    machine; keeping one warm worker hides that from the next training. A worker runs
    one job and exits, so its memory limit and a kill only ever affect that job.
    """
    ctrl_r, ctrl_w = ctx.Pipe(duplex=False)
    events_r, events_w = ctx.Pipe(duplex=False)
    run_event = ctx.Event()
    run_event.set()
    stop_event = ctx.Event()
    # subtle: run this file by path (runpy), not as a module of the ``training`` package: a
    # worker needs only core, and must not pay for importing anything else (the manager's
    # imports, ui, Streamlit ~1 s, ~100 MB).
    process = ctx.Process(
        target=runpy.run_path,
        name="tokplay-train-worker",
        args=(os.path.abspath(__file__),),
        kwargs={
            "init_globals": {
                "_WORKER_ARGS": (ctrl_r, events_w, memory_mb, run_event, stop_event)
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
    return Worker(process, ctrl_w, events_r, run_event, stop_event)


def death_message(code: int | None) -> str:
    """The message for a worker that ended without reporting a result.

    >>> death_message(-9)  # doctest: +NORMALIZE_WHITESPACE
    'The training worker stopped unexpectedly (killed by signal 9, SIGKILL). The server may be low
    on memory or the process was ended by someone. Start the training again, perhaps with a smaller
    corpus or vocab size.'
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
# Worker side (runs in the spawned process)


def _limit_memory(memory_mb: int) -> None:
    """Cap this process's address space, so a runaway training fails with MemoryError."""
    if memory_mb <= 0:
        return
    try:
        import resource
    except ImportError:  # not on this platform: run unbounded
        return
    limit = memory_mb * 1000 * 1000  # decimal MB, as every size on the pages (ui/limits.py)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _worker_entry(
    ctrl: Any, conn: Any, memory_mb: int, run_event: Any, stop_event: Any
) -> None:
    """An idle worker: import core now, wait for one job spec, run it, exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C on the server: the parent decides
    try:
        os.nice(_niceness())
    except (AttributeError, OSError):  # not on this platform: run at the server's priority
        pass
    from core.engine.pretokenize import PATTERNS, compile_pattern
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
    sources, text_column, vocab_size, special_tokens, pattern, pace = spec
    _worker_main(conn, (sources, text_column), vocab_size, special_tokens, pattern, memory_mb,
                 run_event, stop_event, pace)


def _worker_main(
    conn: Any,
    corpus: tuple[tuple[str, ...], str],
    vocab_size: int,
    special_tokens: tuple[str, ...],
    pattern: str,
    memory_mb: int,
    run_event: Any,
    stop_event: Any,
    pace: float = 0.0,
) -> None:
    """Train and stream batched events to ``conn``; always ends with "done" or "error".
    ``corpus``: (sources, Parquet text column), as ``core.train.corpus_sources`` takes them."""
    try:
        _limit_memory(memory_mb)
        _train_in_worker(conn, corpus, vocab_size, special_tokens, pattern, run_event,
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


def _find_files(conn: Any, sources: tuple[str, ...], text_column: str) -> Any:
    """The corpus files ``sources`` name (``core.train.corpus_sources.find_corpus_files``), an
    ``hf://`` one downloaded first with its progress sent as ``("download", done, total)``
    (the manager stops a download by ending this process: nothing is kept yet)."""
    from core.train.corpus_sources import find_corpus_files
    from core.train.hub_datasets import is_hub_url

    if any(is_hub_url(source) for source in sources):
        conn.send(("status", "downloading"))
    last = 0.0

    def report(_phase: str, done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= _FLUSH_SECONDS or done >= total:
            last = now
            conn.send(("download", done, total))

    files = find_corpus_files(list(sources), text_column=text_column, on_progress=report)
    conn.send(("status", "counting"))
    return files


def _train_in_worker(
    conn: Any,
    corpus: tuple[tuple[str, ...], str],
    vocab_size: int,
    special_tokens: tuple[str, ...],
    pattern: str,
    run_event: Any,
    stop_event: Any,
    pace: float = 0.0,
) -> None:
    from core.train import BPETrainer

    files = _find_files(conn, *corpus)
    # TOKPLAY_DASK_SCHEDULER (tcp://HOST:PORT): count on that Dask cluster (docs/scaling.md)
    dask = os.environ.get("TOKPLAY_DASK_SCHEDULER") or None
    trainer = BPETrainer(files, vocab_size, list(special_tokens), pattern=pattern, dask=dask)
    # counted a chunk at a time, here: between chunks the page learns how far it got (bytes
    # read across all the files, distinct pre-tokens so far), and a Stop ends the training at
    # once (a big corpus takes minutes to count)
    last_count = 0.0
    for done, total in trainer.count_steps(chunk_size=_COUNT_CHUNK_BYTES):
        now = time.monotonic()
        if now - last_count >= _FLUSH_SECONDS or done >= total:
            last_count = now
            conn.send(("count", done / total if total else 1.0, trainer.distinct_so_far, total))
        if stop_event.is_set():
            _stopped_while_counting(conn, trainer, done / total if total else 1.0)
            return
    batch: list[MergeRow] = []
    last_flush = time.monotonic()
    merging_since = 0.0  # when merge 0 was due at this pace (moved on by pauses)
    paused_total = 0.0  # seconds spent paused: left out of every row's elapsed time

    def flush() -> None:
        nonlocal batch, last_flush
        if batch:
            conn.send(("merges", batch))
            batch = []
        last_flush = time.monotonic()

    def may_merge(rank: int) -> bool:
        """Wait until merge ``rank`` may be computed: not paused, and due at this pace.

        False once a stop arrives. subtle: the gate sits *before* the merge, so a stop or a
        pause that arrives while waiting takes effect with no further merge; at full speed,
        within the merge being computed when it arrives.
        """
        nonlocal merging_since, paused_total
        while not stop_event.is_set():
            if not run_event.is_set():
                flush()  # rows first: when the manager reads "paused", it has every merge
                conn.send(("status", "paused"))
                paused_at = time.monotonic()
                run_event.wait()  # stop() sets it too
                paused = time.monotonic() - paused_at
                paused_total += paused
                merging_since += paused  # a pause does not count towards the pace
                if not stop_event.is_set():
                    conn.send(("status", "training"))
                continue
            delay = merging_since + rank / pace - time.monotonic() if pace else 0.0
            if delay <= 0:
                return True
            flush()  # nothing to compute until then: let the page see what we have
            stop_event.wait(min(delay, _GATE_SECONDS))  # also notices a pause soon
        return False

    event = trainer.step()  # counts the pre-tokens, then merge 0 (counting cannot pause)
    if event is not None:
        conn.send(("status", "training"))
        merging_since = time.monotonic()
    while event is not None:
        batch.append((event.rank, event.count, event.token, event.pair, event.vocab_size,
                      event.elapsed - paused_total))
        if len(batch) >= _FLUSH_ROWS or time.monotonic() - last_flush >= _FLUSH_SECONDS:
            flush()
        following = event.rank + 1
        # the target reached: finish as "reached vocab size", even if a stop is on its way
        if following < trainer.n_merges_target and not may_merge(following):
            break
        event = trainer.step()
    if not trainer.done:  # stopped: the trainer ends with stop_reason "stopped", keeping all
        trainer.stop()
        trainer.step()
    flush()
    stats = getattr(trainer, "corpus_stats", {}) or {}
    conn.send(
        ("done", trainer.vocab, trainer.merges, trainer.stop_reason, list(trainer.messages), stats)
    )


def _stopped_while_counting(conn: Any, trainer: Any, fraction: float) -> None:
    """A Stop during counting: end with no merge (the in-page trainer says the same)."""
    from core.train import stopped_counting_note

    vocab = trainer.vocab
    conn.send(("done", vocab, [], "stopped", [stopped_counting_note(fraction, len(vocab))], {}))


if __name__ == _WORKER_RUN_NAME:  # a worker process started by spawn_worker (runpy)
    _worker_entry(*_WORKER_ARGS)  # type: ignore[name-defined]  # noqa: F821

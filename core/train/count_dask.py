"""Counting on a Dask cluster: one task per run of work items, the Counters summed here.

When a corpus outgrows one machine, counting pre-tokens is a map-reduce, and Dask
(``dask.distributed``) is the engine for it. :func:`count_on_dask` sends runs of the work
items that :mod:`core.train.count` cut (byte ranges of a file, cut at special tokens) to a Dask
scheduler as tasks, adds each task's Counter here as it arrives, and yields progress; the
merge loop then runs here, as after a local count. Every worker needs the project installed
(the task is a function of :mod:`core.train.count`) and the corpus at the same path.

subtle: a worker killed mid-count costs time, never exactness. Each task has a fixed key;
Dask reruns the key of a task lost with its worker, and this client receives each key's
result once. A result is released as soon as it is added, so a later death cannot bring it
back a second time.

>>> task_runs([10] * 8, workers=1, task_bytes=30)
[range(0, 2), range(2, 4), range(4, 6), range(6, 8)]
"""

from __future__ import annotations

import logging
import math
import queue
import sys
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

from core.errors import CorpusError, PlaygroundError, TrainingConfigError
from core.train.count_table import PretokenCounts
from core.train.processes import plain_main

if TYPE_CHECKING:  # type checkers only: dask.distributed is imported when first used
    from distributed import Client, LocalCluster

__all__ = ["CONNECT_SECONDS", "TASK_BYTES", "count_on_dask", "task_runs"]

#: Bytes per task: tens of MB, so the scheduler's cost per task (about a millisecond) and a
#: Counter sent back per task stay small beside the counting itself.
TASK_BYTES = 32 << 20
#: How long to try to reach a scheduler before saying it cannot be reached.
CONNECT_SECONDS = 5
_POLL_SECONDS = 0.2  # a yield at least this often, so a caller can stop between two tasks
_INSTALL = ("pip install 'tokenizer-playground[cluster]' "
            "(or pip install '.[cluster]' in the project's folder)")


def task_runs(sizes: Sequence[int], workers: int, task_bytes: int = TASK_BYTES) -> list[range]:
    """Consecutive runs of items (as index ranges), about ``task_bytes`` each, and smaller when
    that would give fewer than 4 runs per worker (while there are items enough): a worker that
    finishes early takes another run.

    >>> task_runs([10] * 8, workers=1, task_bytes=30)
    [range(0, 2), range(2, 4), range(4, 6), range(6, 8)]
    >>> task_runs([100, 1, 1], workers=2)  # a big item is a run of its own
    [range(0, 1), range(1, 3)]
    """
    target = max(1, min(task_bytes, math.ceil(sum(sizes) / (4 * workers))))
    runs: list[range] = []
    start, acc = 0, 0
    for i, size in enumerate(sizes):
        acc += size
        if acc >= target:
            runs.append(range(start, i + 1))
            start, acc = i + 1, 0
    if start < len(sizes):
        runs.append(range(start, len(sizes)))
    return runs


def count_on_dask(
    address: str,
    items: Sequence[Any],
    sizes: Sequence[int],
    task: Callable[[list[Any]], Counter[str]],
    counts: PretokenCounts,
    *,
    local_workers: int = 1,
) -> Generator[tuple[int, int], None, int]:
    """Count ``items`` on the Dask cluster at ``address``, adding into ``counts``: yields
    ``(size counted so far, total)`` as tasks finish (and every 0.2 s meanwhile); returns the
    number of Dask workers.

    ``address``: a scheduler's (``tcp://HOST:8786``), or ``"local"`` for a ``LocalCluster``
    of ``local_workers`` processes on this machine. ``task(run)`` counts one run of items; it
    must be importable on the workers (a module-level function of core, or a
    ``functools.partial`` of one). Closing the generator (a caller that stops) cancels the
    tasks still pending.
    """
    client, cluster = _connect(address, local_workers)
    pending: set[Any] = set()
    try:
        tokenize = sys.modules["dask.base"].tokenize  # imported (and checked) by _connect

        workers = max(1, len(client.scheduler_info()["workers"]))
        spans = task_runs(sizes, workers)
        runs = [[items[i] for i in span] for span in spans]
        run_sizes = [sum(sizes[i] for i in span) for span in spans]
        # fixed keys: a rerun (a worker lost) replaces a task's result instead of adding one
        token = tokenize(task, runs)
        futures = [client.submit(task, run, key=f"tokplay-count-{token}-{i}")
                   for i, run in enumerate(runs)]
        size_of = {future.key: size for future, size in zip(futures, run_sizes)}
        finished: queue.Queue[Any] = queue.Queue()
        pending = set(futures)
        for future in futures:
            future.add_done_callback(finished.put)  # called from Dask's thread
        total, done = sum(sizes), 0
        while pending:
            try:
                future = finished.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                yield done, total  # nothing new: the caller may stop here
                continue
            if future not in pending:
                continue  # reported twice (lost and rerun before it was read): counted once
            counts.update(_result(future, address))
            done += size_of[future.key]
            pending.discard(future)
            future.release()  # counted: a later worker death must not recompute it
            yield done, total
        return workers
    finally:
        if pending:
            client.cancel(list(pending))
        client.close()
        if cluster is not None:
            cluster.close()


def _connect(address: str, local_workers: int) -> tuple[Client, LocalCluster | None]:
    """A client of the scheduler at ``address`` (and the cluster it started, for "local")."""
    try:
        # subtle: imported here, not at the top: dask.distributed is a heavy optional
        # dependency (the `cluster` extra), loaded only by a count on a cluster
        import dask.base  # noqa: F401 - count_on_dask's task keys (dask.base.tokenize)
        import distributed  # noqa: F401 - _result's KilledWorker
        from distributed import Client, LocalCluster
        from distributed.comm import get_address_host_port
    except ImportError:
        raise TrainingConfigError(f"counting on Dask needs dask.distributed: {_INSTALL}") from None
    if address == "local":
        with plain_main():  # the worker processes must not run a page or pytest again
            cluster = LocalCluster(n_workers=local_workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster, set_as_default=False), cluster
    try:
        get_address_host_port(address)  # subtle: before Client, whose half-made self hangs at exit
    except ValueError as err:
        raise TrainingConfigError(
            f"{address!r} is not a Dask scheduler's address ({err}): give tcp://HOST:PORT, as "
            "`dask scheduler` prints it, or 'local'"
        ) from None
    try:
        return Client(address, timeout=CONNECT_SECONDS, set_as_default=False), None
    except OSError as err:
        raise TrainingConfigError(
            f"cannot reach the Dask scheduler at {address} ({err}): is it running? start one "
            "with `dask scheduler` and give the address it prints (tcp://HOST:8786)"
        ) from None


def _result(future: Any, address: str) -> Counter[str]:
    """A finished task's Counter; its failure as one line that says the fix."""
    KilledWorker = sys.modules["distributed"].KilledWorker  # imported by _connect

    try:
        return future.result()
    except PlaygroundError:
        raise  # the corpus itself (bad UTF-8 at a byte offset): the local run's message
    except KilledWorker:
        raise CorpusError(
            f"Dask workers at {address} kept dying while counting one part of the corpus "
            "(out of memory?): give them more memory, or count with fewer threads per worker"
        ) from None
    except ModuleNotFoundError as err:
        raise TrainingConfigError(
            f"a Dask worker at {address} cannot import {err.name!r}: install the project on "
            f"the scheduler and every worker ({_INSTALL})"
        ) from None
    except RuntimeError as err:
        if "deserializ" not in str(err):
            raise
        # subtle: the scheduler unpickles each task too, so it needs core as the workers do
        raise TrainingConfigError(
            f"the Dask scheduler at {address} cannot load the counting task (the project is "
            f"missing there?): install the project on the scheduler and every worker ({_INSTALL})"
        ) from None
    except OSError as err:
        raise CorpusError(
            f"a Dask worker at {address} cannot read the corpus ({err}): every worker must see "
            "the file at the same path (a shared folder)"
        ) from None

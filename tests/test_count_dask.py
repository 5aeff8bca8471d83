"""Counting on Dask (core.train.count_dask): a real scheduler and workers on 127.0.0.1, started here
(``dask scheduler``, ``dask worker``), and a LocalCluster; the merges are byte-identical to a
local run's, a killed worker costs time but never a count."""

from __future__ import annotations

import functools
import json
import os
import pickle
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.train.corpus import find_chunk_boundaries
from core.train.count import count_items, count_pretokens
from core.train.count_dask import count_on_dask
from core.errors import CorpusError, TrainingConfigError
from core.train import train_bpe

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.xdist_group("dask")  # a cluster of processes: one xdist worker at a time

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SPECIALS = ("<|endoftext|>",)
_SYLLABLES = ["th", "e", "ca", "t", "naï", "ve", "fé", "lo", "w", "er", "st", "日本", "語", "ok",
              "an", "is"]


def wait_for(check: Callable[[], Any], timeout: float = 120.0) -> Any:
    """Poll ``check`` until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)
    return value


def write_corpus(path: Path, docs: int) -> Path:
    """``docs`` documents of 30 made-up words (ASCII and not) joined by <|endoftext|>."""
    rng = random.Random(0)
    vocab = ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(3000)]
    text = "<|endoftext|>".join(" ".join(rng.choice(vocab) for _ in range(30)) + rng.choice(".\n!")
                                for _ in range(docs))
    path.write_text(text, encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """``dask scheduler`` and ``n`` ``dask worker`` processes on 127.0.0.1 (no nanny: each
    worker is the process started here, so killing it kills that worker)."""

    def __init__(self, folder: Path, n: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}  # the workers import this test's helpers
        scheduler_file = folder / "scheduler.json"
        self.scheduler = subprocess.Popen(
            [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", scheduler_file],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.address = wait_for(lambda: scheduler_file.exists() and json.loads(
            scheduler_file.read_text() or "{}").get("address"))
        self.workers = [subprocess.Popen(
            [BIN / "dask", "worker", self.address, "--host", "127.0.0.1", "--nworkers", "1",
             "--nthreads", "1", "--no-nanny", "--no-dashboard", "--local-directory", folder],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(n)]
        self.client = distributed.Client(self.address, set_as_default=False)
        self.client.wait_for_workers(n, timeout=120)

    def pids(self) -> dict[str, int]:
        """Worker address -> its process ID."""
        return self.client.run(os.getpid)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Workers first (a worker whose scheduler is gone may retry for a long while), then
        the scheduler; a process that ignores SIGTERM for 10 s is killed."""
        self.client.close()
        for group in (self.workers, [self.scheduler]):
            for process in group:
                process.terminate()
            for process in group:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("dask"), 2)
    yield c
    c.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt", 6000)


def file_items(path: Path, chunk_size: int = 64 << 10) -> tuple[list[tuple[str, int, int]], list[int]]:
    """A file's work items as core.train.count cuts them: byte ranges ending at special tokens."""
    bounds = find_chunk_boundaries(path, special_tokens=SPECIALS, chunk_size=chunk_size)
    items = [(str(path), s, e) for s, e in zip(bounds, bounds[1:]) if e > s]
    return items, [e - s for _, s, e in items]


def held_count(items: list[Any], *, gate: str) -> Counter[str]:
    """:func:`count_items`, once the test sets the Dask event ``gate`` (runs on a worker)."""
    distributed.Event(gate).wait()
    return count_items(items, SPECIALS, "gpt2", "strict")


def run_steps(steps: Iterator[tuple[int, int]]) -> Any:
    """Drive a counting generator to its end; its return value."""
    while True:
        try:
            next(steps)
        except StopIteration as end:
            return end.value


def run_cli(*args: Any, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)})


# ---- the command line: merges.pkl byte-identical to a local run ---------------------------------


def _train(corpus: Path, out: Path, *extra: Any) -> bytes:
    res = run_cli("train", corpus, "--vocab-size", 400, "--special-token", SPECIALS[0], "--out", out,
                  "--quiet", *extra, cwd=out.parent)
    assert res.returncode == 0, res.stderr
    return (out / "merges.pkl").read_bytes()


def test_train_on_a_scheduler_with_two_workers_writes_the_local_merges(cluster, corpus, tmp_path):
    local = _train(corpus, tmp_path / "local")
    assert _train(corpus, tmp_path / "dask", "--dask", cluster.address) == local
    assert (tmp_path / "dask" / "vocab.pkl").read_bytes() == (tmp_path / "local" / "vocab.pkl").read_bytes()
    assert len(pickle.loads(local)) == 400 - 257


def test_train_on_a_local_cluster_writes_the_local_merges(corpus, tmp_path):
    local = _train(corpus, tmp_path / "local")
    assert _train(corpus, tmp_path / "dask", "--dask", "local", "--workers", 2) == local


def test_an_unreachable_scheduler_is_one_line(corpus, tmp_path):
    address = f"tcp://127.0.0.1:{_free_port()}"
    res = run_cli("train", corpus, "--vocab-size", 300, "--out", tmp_path / "o", "--dask", address,
                  "--quiet", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.startswith(f"error: cannot reach the Dask scheduler at {address} (")
    assert res.stderr.endswith("is it running? start one with `dask scheduler` and give the address "
                               "it prints (tcp://HOST:8786)\n")
    assert res.stderr.count("\n") == 1


def test_an_address_that_is_none_says_what_one_looks_like(corpus):
    with pytest.raises(TrainingConfigError, match=r"^'scheduler' is not a Dask scheduler's address "
                       r"\(missing port number in address 'scheduler'\): give tcp://HOST:PORT"):
        count_pretokens(corpus, SPECIALS, dask="scheduler")


def test_import_core_does_not_import_dask():
    code = ("import sys, core, core.train.count, core.train.count_dask, core.train, core.cli.train, training.worker; "
            "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_without_the_cluster_extra_a_count_on_dask_says_what_to_install():
    code = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"{name} is blocked in this test")
sys.meta_path.insert(0, _Block())
from core.train import train_bpe
try:
    train_bpe(["some text"], 260, dask="tcp://127.0.0.1:8786")
except Exception as err:
    print(type(err).__name__, err)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip() == (
        "TrainingConfigError counting on Dask needs dask.distributed: pip install "
        "'tokenizer-playground[cluster]' (or pip install '.[cluster]' in the project's folder)"), out.stderr


# ---- the counts: exact, whatever happens to a worker --------------------------------------------


def test_counts_on_dask_equal_the_local_counts_with_the_same_stats(cluster, corpus):
    local, local_stats = count_pretokens(corpus, SPECIALS)
    progress: list[tuple[str, int, int]] = []
    counts, stats = count_pretokens(corpus, SPECIALS, dask=cluster.address,
                                    on_progress=lambda *p: progress.append(p))
    assert counts == local and stats["workers"] == 2
    assert {k: stats[k] for k in ("bytes", "chunks", "pretokens")} == {
        k: local_stats[k] for k in ("bytes", "chunks", "pretokens")}
    assert progress[0] == ("counting", 0, local_stats["bytes"])
    assert progress[-1] == ("counting", local_stats["bytes"], local_stats["bytes"])
    texts = corpus.read_text(encoding="utf-8").split(SPECIALS[0])[:500]  # texts, not a file
    assert count_pretokens(texts, dask=cluster.address)[0] == count_pretokens(texts)[0]


def test_a_worker_killed_mid_count_is_retried_without_double_counting(corpus, tmp_path):
    """Every task waits at a gate; one worker holding tasks is killed (SIGKILL), then the gate
    opens: Dask reruns the lost tasks on the other worker, and each is counted once."""
    local, _ = count_pretokens(corpus, SPECIALS)
    items, sizes = file_items(corpus)
    c = Cluster(tmp_path, 2)
    try:
        gate = distributed.Event("tokplay-test-gate", client=c.client)
        counts: Counter[str] = Counter()
        steps = count_on_dask(c.address, items, sizes, functools.partial(held_count, gate=gate.name), counts)
        next(steps)  # the tasks are submitted; none can finish before the gate opens
        # both workers hold tasks, started and waiting at the gate
        busy = wait_for(lambda: next(steps) and [w for w, keys in c.client.processing().items() if keys])
        victim = c.pids()[busy[0]]
        assert victim in {w.pid for w in c.workers}  # a process this test started
        lost = set(c.client.processing()[busy[0]])
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: len(c.client.scheduler_info()["workers"]) == 1)
        gate.set()
        assert run_steps(steps) == 2
        assert counts == local  # nothing counted twice, nothing missing
        assert lost and all(k.startswith("tokplay-count-") for k in lost)
    finally:
        c.close()


def test_a_count_stopped_midway_cancels_its_tasks(cluster, corpus):
    items, sizes = file_items(corpus)
    gate = distributed.Event("tokplay-test-stop", client=cluster.client)
    try:
        steps = count_on_dask(cluster.address, items, sizes, functools.partial(held_count, gate=gate.name),
                              Counter())
        next(steps)
        wait_for(lambda: next(steps) and any(cluster.client.processing().values()))
        steps.close()  # the caller stops: what is pending is cancelled
        wait_for(lambda: not cluster.client.run_on_scheduler(_tokplay_tasks))
    finally:
        gate.set()  # the tasks already running end (their results go nowhere)


def _tokplay_tasks(dask_scheduler: Any) -> list[str]:
    return [str(k) for k in dask_scheduler.tasks if str(k).startswith("tokplay-count-")]


def test_bad_utf8_on_a_worker_is_the_local_message(cluster, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"abc \xff def")
    with pytest.raises(CorpusError) as local:
        count_pretokens(bad)
    with pytest.raises(CorpusError) as remote:
        count_pretokens(bad, dask=cluster.address)
    assert str(remote.value) == str(local.value) and "byte offset 4" in str(local.value)


def test_a_corpus_the_workers_cannot_read_says_so(cluster, tmp_path):
    corpus = write_corpus(tmp_path / "gone.txt", 50)
    items, sizes = file_items(corpus)
    corpus.unlink()  # as on a worker without the shared folder
    task = functools.partial(count_items, specials=SPECIALS, pattern="gpt2", errors="strict")
    with pytest.raises(CorpusError, match=rf"^a Dask worker at {cluster.address} cannot read the corpus "
                       r"\(\[Errno 2\] No such file or directory: .*gone.txt'\): every worker must see "
                       r"the file at the same path \(a shared folder\)$"):
        run_steps(count_on_dask(cluster.address, items, sizes, task, Counter()))


def test_a_worker_without_the_project_says_to_install_it(cluster, tmp_path, monkeypatch):
    (tmp_path / "tokplay_only_here.py").write_text("def count(items):\n    return {}\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # importable here, not on the workers
    from tokplay_only_here import count  # type: ignore[import-not-found]

    with pytest.raises(TrainingConfigError, match=rf"^the Dask scheduler at {cluster.address} cannot load "
                       r"the counting task \(the project is missing there\?\): install the project on "
                       r"the scheduler and every worker \(pip install "):
        run_steps(count_on_dask(cluster.address, ["a text"], [6], count, Counter()))


# ---- the app's trainings: TOKPLAY_DASK_SCHEDULER --------------------------------------------------


def test_the_apps_trainings_count_on_the_scheduler_the_server_names(cluster, corpus, monkeypatch):
    from training.manager import TrainingManager

    text = corpus.read_text(encoding="utf-8")
    monkeypatch.setenv("TOKPLAY_DASK_SCHEDULER", cluster.address)  # the spawned worker inherits it
    manager = TrainingManager(max_concurrent=1, prewarm=False)
    try:
        snap = manager.wait(manager.submit(text, vocab_size=400, special_tokens=list(SPECIALS)), timeout=300)
    finally:
        manager.shutdown()
    assert snap.status == "finished", snap.error
    assert snap.corpus_stats["workers"] == 2  # counted by the cluster's two workers
    assert (snap.vocab, snap.merges) == train_bpe(corpus, 400, list(SPECIALS))

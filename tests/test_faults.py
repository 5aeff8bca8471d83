"""Fault tests: a training worker killed mid-run, and a server killed in the middle of a save.

* Worker: ``SIGKILL`` on the worker's pid (from the job snapshot, or a /proc scan for the idle
  warm worker) -> the job is "failed" with a message that says what happened and what to do,
  the manager goes on serving queued and new jobs, and the Train page shows the message.
* Library: a child process saves (or deletes) a tokenizer and SIGKILLs itself at a chosen point
  of the save (monkeypatched crash points: after the temp file is written, before/after the
  rename, after the row is inserted but before the commit, after the commit). Reopening the
  library must give a consistent state: previous entries intact and loadable, the in-flight one
  either absent or complete, no temp files, no blob without a row.

The randomized version (random kill delays, many rounds) is benchmarks/fault_test.py.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.train.builtin_corpus import builtin_corpus_text
from core.services.library import LibraryError, TokenizerLibrary, UnknownIdError
from core.train import train_bpe
from training.manager import TrainingManager
from ui.site import page

pytestmark = pytest.mark.xdist_group("jobs")  # worker processes: share one xdist worker

REPO = Path(__file__).resolve().parent.parent
TRAIN_PAGE = str(REPO / page("Train").script)
SPECIALS = ["<|endoftext|>"]


def wait_for(check: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached in {timeout} s")
        time.sleep(0.02)


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (absent, or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def spawned_children() -> set[int]:
    """PIDs of this process's ``multiprocessing`` spawn children, from /proc (no psutil)."""
    me = os.getpid()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] not in ("Z", "X") and b"spawn_main" in cmdline:
            found.add(int(entry.name))
    return found


@pytest.fixture(scope="module")
def long_text() -> str:
    return builtin_corpus_text()


@pytest.fixture(scope="module")
def small_text() -> str:
    return builtin_corpus_text()[:60_000]


@pytest.fixture()
def manager1() -> Iterator[TrainingManager]:
    m = TrainingManager(max_concurrent=1)
    yield m
    m.shutdown()


def kill_when(manager: TrainingManager, job: str, statuses: tuple[str, ...]) -> int:
    """SIGKILL the job's worker once it reaches one of ``statuses``; return its pid."""
    wait_for(lambda: manager.snapshot(job).status in statuses and manager.snapshot(job).pid,
             what=f"job status in {statuses}")
    pid = manager.snapshot(job).pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    return pid


def assert_killed_message(error: str | None) -> None:
    assert error is not None
    assert "stopped unexpectedly" in error and "SIGKILL" in error
    assert "Start the training again" in error  # says what to do


# ---------------------------------------------------------------------------------------------
# A training worker killed mid-run


@pytest.mark.parametrize("phase", [("training",), ("paused",)], ids=["training", "paused"])
def test_killed_worker_fails_its_job_and_the_queue_moves_on(
    manager1, long_text, small_text, tmp_path, phase
):
    # at 50 merges/s the victim takes minutes: it is certainly still training when killed
    victim = manager1.submit(long_text, vocab_size=20_000, special_tokens=SPECIALS, pace=50)
    if phase == ("paused",):
        manager1.pause(victim)
    wait_for(lambda: manager1.snapshot(victim).status != "queued", what="the victim started")
    queued = manager1.submit(small_text, vocab_size=500, special_tokens=SPECIALS)
    assert manager1.snapshot(queued).queue_position == 1  # limit 1: it waits behind the victim

    pid = kill_when(manager1, victim, phase)

    snap = manager1.wait(victim, timeout=30)
    assert snap.status == "failed"
    assert_killed_message(snap.error)
    wait_for(lambda: gone(pid), what="the killed worker reaped")
    # the queued job gets the freed slot and trains exactly as train_bpe does
    done = manager1.wait(queued, timeout=120)
    assert done.status == "finished", done.error
    path = tmp_path / "corpus.txt"
    path.write_bytes(small_text.encode())
    assert done.merges == train_bpe(str(path), 500, SPECIALS)[1]
    # and a job submitted after the failure runs too
    again = manager1.wait(manager1.submit(small_text, vocab_size=300, special_tokens=SPECIALS),
                          timeout=120)
    assert again.status == "finished" and len(again.merges) == 300 - 257
    assert manager1.status_counts() == {"running": 0, "queued": 0, "waiting_for_other_processes": 0}


def test_killed_idle_warm_worker_is_replaced(small_text):
    before = spawned_children()
    manager = TrainingManager(max_concurrent=1)
    try:
        manager.warm_up()
        wait_for(lambda: spawned_children() - before, what="the warm worker started")
        # subtle: another manager in this process (the Train page's, cached by AppTest tests)
        # may have started its own spare meanwhile; killing it too is harmless (same code path)
        spares = spawned_children() - before
        for pid in spares:
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: all(gone(pid) for pid in spares), what="the warm worker gone")
        snap = manager.wait(manager.submit(small_text, vocab_size=300, special_tokens=SPECIALS),
                            timeout=120)
        assert snap.status == "finished", snap.error
        assert snap.pid not in spares
    finally:
        manager.shutdown()


def test_worker_killed_during_counting_fails_cleanly(manager1, long_text, small_text):
    # ~27 MB: counting takes seconds, and no merge can come before the kill
    victim = manager1.submit(long_text * 30, vocab_size=20_000, special_tokens=SPECIALS)
    kill_when(manager1, victim, ("starting", "counting"))
    snap = manager1.wait(victim, timeout=30)
    assert snap.status == "failed" and snap.rows == ()
    assert_killed_message(snap.error)
    assert manager1.wait(manager1.submit(small_text, vocab_size=300), timeout=120).status == "finished"


def _managers_with(job_id: str) -> list[TrainingManager]:
    return [o for o in gc.get_objects() if isinstance(o, TrainingManager) and job_id in o]


def test_train_page_shows_the_killed_worker_message_and_trains_again():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(TRAIN_PAGE, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    at.number_input[0].set_value(20_000).run()
    at.radio(key="_w.train.speed").set_value("5 merges/s").run()  # minutes: Pause is drawn
    at.button(key="train.start").click().run()
    assert not at.exception, at.exception
    job = at.session_state["train.job"]
    (manager,) = _managers_with(job)  # the page's server-wide manager (st.cache_resource)
    # subtle: other tests' trainings may hold the manager's slots, so the job can wait in the
    # queue (Cancel only) before its Pause button is drawn: wait for the button, not a time
    wait_for(lambda: manager.snapshot(job).status != "queued", what="the job left the queue")
    at.run()
    at.button(key="train.pause").click().run()  # paused after its first merge: a stable target
    pid = kill_when(manager, job, ("paused",))
    wait_for(lambda: manager.snapshot(job).done, what="the job marked failed")

    at.run()
    assert not at.exception, at.exception
    shown = "\n".join(str(e.value) for e in at.error)
    assert_killed_message(shown)
    assert gone(pid) or manager.snapshot(job).status == "failed"

    # the same session starts a new training on the same server, and it finishes
    at.number_input[0].set_value(300).run()
    at.radio(key="_w.train.speed").set_value("full speed").run()
    start = at.button(key="train.start")
    assert not start.disabled
    start.click().run()
    new_job = at.session_state["train.job"]
    assert new_job != job
    snap = manager.wait(new_job, timeout=180)
    assert snap.status == "finished", snap.error
    at.run()
    at.run()  # the first run adopts the tokenizer and reruns
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("now active" in str(s.value) for s in at.success)


# ---------------------------------------------------------------------------------------------
# The server killed in the middle of a save

# A child process: build toy tokenizer `seed`, arm a crash point, save (or delete), and SIGKILL
# itself at that point. argv: root, seed, crash point, action ("save" | "delete").
_CHILD = textwrap.dedent(
    """
    import os, pathlib, random, signal, sys
    import core.services.library as library

    root, seed, point, action = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    real_fsync, real_replace, real_insert = os.fsync, os.replace, library.TokenizerLibrary._insert_row
    real_unlink = pathlib.Path.unlink

    def fsync(fd):
        if point == "tmp-written":
            die()
        return real_fsync(fd)

    def replace(src, dst):
        if point == "before-rename":
            die()
        real_replace(src, dst)
        if point == "after-rename":
            die()

    def insert(conn, values):
        real_insert(conn, values)
        if point == "before-commit":
            die()

    def unlink(self, *args, **kwargs):
        if point == "delete-before-unlink" and self.suffix == ".json":
            die()
        return real_unlink(self, *args, **kwargs)

    os.fsync, os.replace = fsync, replace
    library.TokenizerLibrary._insert_row = staticmethod(insert)
    pathlib.Path.unlink = unlink

    rng = random.Random(seed)
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    for k in range(300):
        a, b = vocab[rng.randrange(len(vocab))], vocab[rng.randrange(len(vocab))]
        vocab[256 + k] = a + b
        merges.append((a, b))
    lib = library.TokenizerLibrary(root)
    if action == "save":
        entry = lib.save(vocab, merges, name=f"toy {seed}", corpus_name="toy")
        print(entry.id, flush=True)
        if point == "after-commit":
            die()
    else:
        lib.delete(sys.argv[5])
    sys.exit(3)  # the crash point was never reached
    """
)


def toy(seed: int) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """The child's toy tokenizer ``seed`` (same construction, in this process)."""
    import random

    rng = random.Random(seed)
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    for k in range(300):
        a, b = vocab[rng.randrange(len(vocab))], vocab[rng.randrange(len(vocab))]
        vocab[256 + k] = a + b
        merges.append((a, b))
    return vocab, merges


def crash_child(root: Path, seed: int, point: str, action: str = "save", *extra: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), str(seed), point, action, *extra],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-2000:])


def assert_consistent(root: Path) -> TokenizerLibrary:
    """Reopen the library and check every invariant a crash must not break."""
    lib = TokenizerLibrary(root)
    assert lib.problems == []
    listed = {e.id for e in lib.list()}
    blobs = sorted((root / "blobs").iterdir())
    assert [p.name for p in blobs if p.name.startswith(".")] == [], "temp files left behind"
    assert {p.stem for p in blobs} == listed, "a blob without its row, or a row without its blob"
    for entry_id in listed:
        vocab, merges, _specials, _pattern = lib.load(entry_id)  # checks hash and shape
        assert len(vocab) == lib.get(entry_id).vocab_size and len(merges) == 300
    return lib


@pytest.fixture()
def library_with_two(tmp_path: Path) -> tuple[Path, list[str]]:
    lib = TokenizerLibrary(tmp_path)
    ids = [lib.save(*toy(seed), name=f"kept {seed}").id for seed in (1, 2)]
    return tmp_path, ids


@pytest.mark.parametrize(
    ("point", "kept"),
    [
        ("tmp-written", False),  # temp file written, not yet fsynced or renamed
        ("before-rename", False),
        ("after-rename", False),  # blob in place, row not yet inserted
        ("before-commit", False),  # row inserted, transaction not committed
        ("after-commit", True),
    ],
)
def test_save_killed_at_each_point_leaves_a_consistent_library(library_with_two, point, kept):
    root, before = library_with_two
    new_id = TokenizerLibrary(root.parent / f"{root.name}-scratch").save(*toy(7), name="x").id
    crash_child(root, 7, point)
    lib = assert_consistent(root)
    listed = {e.id for e in lib.list()}
    assert set(before) <= listed, "an entry saved before the crash was lost"
    assert (new_id in listed) is kept
    if not kept:
        with pytest.raises(UnknownIdError):
            lib.get(new_id)
        # the save can simply be repeated after the restart
        assert lib.save(*toy(7), name="again").id == new_id
        assert_consistent(root)
    else:
        assert lib.load(new_id)[:2] == toy(7)


def test_delete_killed_between_row_and_file_leaves_no_orphan(library_with_two):
    root, (first, second) = library_with_two
    crash_child(root, 0, "delete-before-unlink", "delete", first)
    lib = assert_consistent(root)
    assert [e.id for e in lib.list()] == [second]
    assert not (root / "blobs" / f"{first}.json").exists()


def test_half_written_leftovers_are_cleaned_on_open(library_with_two):
    """What a crash mid-write looks like on disk: a truncated temp file, a truncated blob
    whose row was never committed. Both go on the next open; the kept entries stay."""
    root, before = library_with_two
    (root / "blobs" / ".tmp-0123456789abcdef-99-deadbeef").write_bytes(b'{"format":"tok')
    (root / "blobs" / "0123456789abcdef.json").write_bytes(b'{"format":"tokenizer-play')
    lib = assert_consistent(root)
    assert sorted(e.id for e in lib.list()) == sorted(before)


def test_damaged_blob_of_a_listed_entry_is_a_clear_error_not_a_wrong_tokenizer(library_with_two):
    root, (first, _second) = library_with_two
    path = root / "blobs" / f"{first}.json"
    path.write_bytes(path.read_bytes()[:100])  # e.g. a disk that lost the tail of the file
    with pytest.raises(LibraryError, match="does not match its ID"):
        TokenizerLibrary(root).load(first)

"""training.manager: the training manager (worker processes, queue, controls) and the page's
pure checks."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest

from core.train.builtin_corpus import builtin_corpus_text
from core.errors import CorpusError
from core.train import train_bpe
from ui import limits
from training.manager import TrainingManager

pytestmark = pytest.mark.xdist_group("jobs")  # worker processes: keep these on one xdist worker

SPECIALS = ["<|endoftext|>"]


@pytest.fixture(scope="module")
def small_text() -> str:
    """~60 KB of the built-in corpus: a few hundred merges in well under a second."""
    text = builtin_corpus_text()
    return text[: 60_000]


@pytest.fixture(scope="module")
def long_text() -> str:
    """The whole built-in corpus: long enough to pause, stop or kill mid-run."""
    return builtin_corpus_text()


@pytest.fixture()
def manager() -> Iterator[TrainingManager]:
    m = TrainingManager(max_concurrent=2)
    yield m
    m.shutdown()


@pytest.fixture()
def manager1() -> Iterator[TrainingManager]:
    m = TrainingManager(max_concurrent=1)
    yield m
    m.shutdown()


def wait_for(check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def reference(text: str, vocab_size: int, specials: list[str], tmp_path) -> tuple:
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    return train_bpe(str(path), vocab_size, specials)


# ---------------------------------------------------------------------------------------------
# Runs


def test_job_runs_to_completion_with_the_same_merges_as_train_bpe(manager, small_text, tmp_path):
    job = manager.submit(small_text, vocab_size=600, special_tokens=SPECIALS, corpus_name="s")
    snap = manager.wait(job, timeout=120)
    vocab, merges = reference(small_text, 600, SPECIALS, tmp_path)
    assert snap.status == "finished", snap.error
    assert snap.merges == merges
    assert snap.vocab == vocab
    assert snap.stop_reason == "reached vocab size"
    # every merge was streamed, in order, with its count, token and vocab size
    assert [r[0] for r in snap.rows] == list(range(len(merges)))
    assert [r[3] for r in snap.rows] == merges
    assert [r[2] for r in snap.rows] == [a + b for a, b in merges]
    assert snap.rows[-1][4] == 600
    assert all(r[1] >= 1 for r in snap.rows)
    assert snap.corpus_stats["distinct_pretokens"] > 0
    assert snap.queue_position is None and snap.done


def test_several_texts_are_joined_with_the_first_special_token(manager, tmp_path):
    texts = ["the cat sat on the mat", "the dog sat on the log"]
    job = manager.submit(texts, vocab_size=270, special_tokens=SPECIALS)
    snap = manager.wait(job, timeout=60)
    _, merges = reference("<|endoftext|>".join(texts), 270, SPECIALS, tmp_path)
    assert snap.status == "finished", snap.error
    assert snap.merges == merges


def test_empty_corpus_finishes_with_a_message(manager):
    snap = manager.wait(manager.submit("", vocab_size=300), timeout=60)
    assert snap.status == "finished"
    assert snap.merges == []
    assert any("no text to learn from" in m for m in snap.messages)


def test_bad_settings_become_a_clear_job_error(manager):
    snap = manager.wait(manager.submit("abc", vocab_size=100, special_tokens=SPECIALS), 60)
    assert snap.status == "failed"
    assert "too small" in snap.error and "257" in snap.error


def test_memory_limit_becomes_a_clear_error(long_text):
    m = TrainingManager(memory_mb=30, prewarm=False)
    try:
        snap = m.wait(m.submit(long_text, vocab_size=2000), timeout=120)
    finally:
        m.shutdown()
    assert snap.status == "failed"
    assert "ran out of memory" in snap.error and "TOKPLAY_TRAIN_MEMORY_MB" in snap.error


def test_unknown_job_id_is_a_key_error(manager):
    with pytest.raises(KeyError):
        manager.snapshot("no-such-job")


# ---------------------------------------------------------------------------------------------
# Queue and controls


def test_queue_positions_with_a_limit_of_one(manager1, long_text, small_text):
    first = manager1.submit(long_text, vocab_size=5000)
    manager1.pause(first)  # holds the only slot until resumed
    second = manager1.submit(small_text, vocab_size=300)
    third = manager1.submit(small_text, vocab_size=310)
    wait_for(lambda: manager1.snapshot(first).status == "paused")
    assert manager1.snapshot(second).queue_position == 1
    assert manager1.snapshot(third).queue_position == 2
    assert manager1.snapshot(second).status == "queued"
    assert manager1.status_counts() == {"running": 1, "queued": 2,
                                        "waiting_for_other_processes": 0}

    manager1.cancel(second)
    assert manager1.snapshot(second).status == "cancelled"
    assert manager1.snapshot(third).queue_position == 1

    manager1.stop(first)
    assert manager1.wait(first, timeout=60).status == "stopped"
    snap = manager1.wait(third, timeout=120)
    assert snap.status == "finished" and len(snap.merges) == 310 - 256


def test_the_limit_holds_across_managers_sharing_a_slots_folder(long_text, small_text, tmp_path):
    """Two server processes (here: two managers) with one shared slot: the second waits for
    the first's training, then runs (``make serve WORKERS=N`` shares the library folder)."""
    slots = tmp_path / "training-slots"
    a = TrainingManager(max_concurrent=1, slots_dir=slots, prewarm=False)
    b = TrainingManager(max_concurrent=1, slots_dir=slots, prewarm=False)
    try:
        first = a.submit(long_text, vocab_size=5000)
        a.pause(first)  # holds the only slot until stopped
        wait_for(lambda: a.snapshot(first).status == "paused")
        second = b.submit(small_text, vocab_size=300)
        wait_for(lambda: b.status_counts()["waiting_for_other_processes"] == 1)
        assert b.snapshot(second).status == "queued"
        assert b.snapshot(second).queue_position == 1
        a.stop(first)
        assert a.wait(first, timeout=60).status == "stopped"
        snap = b.wait(second, timeout=120)
        assert snap.status == "finished" and len(snap.merges) == 300 - 256
        assert b.status_counts()["waiting_for_other_processes"] == 0
    finally:
        a.shutdown()
        b.shutdown()


def test_cancel_a_running_job_keeps_nothing(manager, long_text):
    job = manager.submit(long_text, vocab_size=5000, pace=20)  # minutes: still running
    wait_for(lambda: len(manager.snapshot(job).rows) > 0)
    pid = manager.snapshot(job).pid
    manager.cancel(job)
    snap = manager.snapshot(job)
    assert snap.status == "cancelled" and snap.done
    assert snap.vocab is None and snap.merges is None
    wait_for(lambda: not _alive(pid), timeout=10)


def test_pause_and_resume(manager, long_text, tmp_path):
    text = long_text[:200_000]
    job = manager.submit(text, vocab_size=1200, special_tokens=SPECIALS)
    manager.pause(job)
    wait_for(lambda: manager.snapshot(job).status == "paused")
    n = len(manager.snapshot(job).rows)
    assert n >= 1
    time.sleep(0.5)
    assert len(manager.snapshot(job).rows) == n  # nothing happens while paused
    manager.resume(job)
    snap = manager.wait(job, timeout=120)
    assert snap.status == "finished", snap.error
    assert snap.merges == reference(text, 1200, SPECIALS, tmp_path)[1]


def test_stop_keeps_the_merges_learned_so_far(manager, long_text, tmp_path):
    text = long_text[:200_000]
    job = manager.submit(text, vocab_size=1200, special_tokens=SPECIALS)
    manager.pause(job)
    wait_for(lambda: manager.snapshot(job).status == "paused")
    manager.stop(job)
    snap = manager.wait(job, timeout=60)
    full = reference(text, 1200, SPECIALS, tmp_path)[1]
    assert snap.status == "stopped" and snap.stop_reason == "stopped"
    assert 1 <= len(snap.merges) < len(full)
    assert snap.merges == full[: len(snap.merges)]
    assert len(snap.vocab) == 256 + 1 + len(snap.merges)
    assert any("Stopped" in m for m in snap.messages)


def test_pace_spreads_the_merges_and_a_pause_does_not_count(manager, small_text, tmp_path):
    """At 100 merges/s, merge k is not streamed before k / 100 s of unpaused merging; the
    merges are the same as at full speed."""
    job = manager.submit(small_text, vocab_size=300, special_tokens=SPECIALS, pace=100)
    wait_for(lambda: len(manager.snapshot(job).rows) >= 5)
    manager.pause(job)
    wait_for(lambda: manager.snapshot(job).status == "paused")
    paused_at = len(manager.snapshot(job).rows)
    assert paused_at < 300 - 257  # 43 merges take at least 0.42 s: not over yet
    manager.resume(job)
    snap = manager.wait(job, timeout=60)
    assert snap.status == "finished", snap.error
    assert snap.merges == reference(small_text, 300, SPECIALS, tmp_path)[1]
    first_merge, last_merge = snap.rows[0][5], snap.rows[-1][5]  # trainer's elapsed seconds
    # merge k is produced once merge k-1 has been let through at (k-1)/100 s
    assert last_merge - first_merge >= (len(snap.rows) - 2) / 100


def test_a_bad_pace_is_refused(manager):
    for pace in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="pace must be 0"):
            manager.submit("abc", vocab_size=300, pace=pace)


def test_a_killed_worker_marks_its_job_failed(manager, long_text):
    job = manager.submit(long_text, vocab_size=5000)
    manager.pause(job)
    wait_for(lambda: manager.snapshot(job).status == "paused")
    os.kill(manager.snapshot(job).pid, signal.SIGKILL)
    snap = manager.wait(job, timeout=30)
    assert snap.status == "failed"
    assert "stopped unexpectedly" in snap.error and "SIGKILL" in snap.error
    # the manager keeps working for the next job
    snap = manager.wait(manager.submit("hello hello", vocab_size=258), timeout=60)
    assert snap.status == "finished"
    assert snap.merges == train_bpe(["hello hello"], 258)[1]


def test_forget_drops_a_job(manager):
    job = manager.submit("abc abc", vocab_size=258)
    manager.wait(job, timeout=60)
    manager.forget(job)
    assert job not in manager


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# The page's pure checks


def test_parse_special_tokens():
    assert limits.parse_special_tokens("<|endoftext|>") == ["<|endoftext|>"]
    assert limits.parse_special_tokens(" <|a|> ,<|b|>\n<|c|>\n\n,<|a|>") == ["<|a|>", "<|b|>", "<|c|>"]
    assert limits.parse_special_tokens("") == []


@pytest.mark.parametrize("size", [0, 1, 256])
def test_vocab_size_too_small(size):
    message = limits.vocab_size_problem(size, 1)
    assert message is not None and "too small" in message and "at least 257" in message


def test_vocab_size_absurd(monkeypatch):
    monkeypatch.setenv("TOKPLAY_MAX_VOCAB", "1000")
    message = limits.vocab_size_problem(5_000_000, 0)
    assert message is not None
    assert "too large" in message and "1,000" in message and "TOKPLAY_MAX_VOCAB" in message
    assert limits.vocab_size_problem(1000, 0) is None


def test_decode_upload_names_the_file_and_offset():
    with pytest.raises(CorpusError, match=r"“bad\.txt” is not valid UTF-8.*byte offset 5"):
        limits.decode_upload("bad.txt", b"hello\xff world")
    with pytest.raises(CorpusError, match=r"“x\.bin” looks like a binary file.*byte offset 2"):
        limits.decode_upload("x.bin", b"ab\x00cd")
    assert limits.decode_upload("ok.txt", "naïve café\n".encode()) == "naïve café\n"


def test_readable_token():
    assert limits.readable_token(b" the") == "·the"
    assert limits.readable_token(b"\n\t") == "↵→"
    assert limits.readable_token(b"\xff") == "\\xff"
    assert limits.readable_token(b"\x07") == "\\x07"
    assert limits.readable_token("é".encode()) == "é"


def test_env_settings(monkeypatch):
    monkeypatch.setenv("TOKPLAY_MAX_TRAININGS", "3")
    monkeypatch.setenv("TOKPLAY_TRAIN_MEMORY_MB", "512")
    m = TrainingManager(prewarm=False)
    try:
        assert m.max_concurrent == 3 and m.memory_mb == 512
    finally:
        m.shutdown()
    monkeypatch.setenv("TOKPLAY_MAX_TRAININGS", "lots")
    assert limits.env_int("TOKPLAY_MAX_TRAININGS", 2) == 2


def test_the_worker_side_never_imports_streamlit():
    # workers run training/worker.py by path: they need core alone
    import subprocess
    import sys
    from pathlib import Path

    from training import worker

    path = Path(worker.__file__).resolve()
    code = (
        "import runpy, sys; runpy.run_path(sys.argv[1]);"
        "print(sorted(m for m in ('streamlit', 'ui', 'training') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# Precise control: Stop and Pause act before the next merge; paused time is not training time


def _wait_for_a_new_row(manager: TrainingManager, job: str, after: int) -> int:
    wait_for(lambda: len(manager.snapshot(job).rows) > after)
    return len(manager.snapshot(job).rows)


def test_stop_takes_effect_within_one_merge_of_the_request(manager, long_text):
    """At 2 merges/s the worker spends ~0.5 s waiting before each merge; a stop that arrives
    then ends the job with no further merge. ``seen`` is read just after a merge arrived, so
    the worker holds ``seen`` (or, after a stall of the test, one more) merges."""
    job = manager.submit(long_text, vocab_size=5000, special_tokens=SPECIALS, pace=2)
    seen = _wait_for_a_new_row(manager, job, after=1)  # a fresh merge, not the first
    manager.stop(job)
    assert manager.snapshot(job).stop_requested
    snap = manager.wait(job, timeout=60)
    assert snap.status == "stopped" and snap.stop_reason == "stopped"
    assert seen <= len(snap.merges) <= seen + 1
    assert len(snap.rows) == len(snap.merges) == snap.n_merges
    assert f"Stopped by request at merge {len(snap.merges):,} (vocab {len(snap.vocab):,})." in (
        snap.messages)


def test_paused_at_merge_n_then_stop_keeps_exactly_n(manager, long_text):
    """Once the status says "paused", ``rows`` holds every merge learned: a Stop then keeps
    exactly that many (the page's "paused at merge N" is what the user gets)."""
    job = manager.submit(long_text, vocab_size=5000, special_tokens=SPECIALS, pace=50)
    _wait_for_a_new_row(manager, job, after=3)
    manager.pause(job)
    assert manager.snapshot(job).pause_requested
    wait_for(lambda: manager.snapshot(job).status == "paused")
    paused_at = len(manager.snapshot(job).rows)
    manager.stop(job)
    snap = manager.wait(job, timeout=60)
    assert snap.status == "stopped"
    assert len(snap.merges) == len(snap.rows) == paused_at
    assert len(snap.vocab) == 256 + 1 + paused_at


def test_elapsed_time_leaves_out_the_pauses(manager, long_text):
    """JobSnapshot.elapsed stands still while paused, and so do the rows' seconds column and
    the final training time."""
    pause_s = 1.5
    # (taken before the submit: the job's clock starts inside it, so this wall time is never
    # shorter than the job's, however slowly submit returns on a loaded machine)
    started = time.time()
    job = manager.submit(long_text, vocab_size=5000, special_tokens=SPECIALS, pace=20)
    _wait_for_a_new_row(manager, job, after=3)
    manager.pause(job)
    wait_for(lambda: manager.snapshot(job).status == "paused")
    before = manager.snapshot(job)
    time.sleep(pause_s)  # not a wait for a result: paused time must pass to be left out
    during = manager.snapshot(job)
    assert during.elapsed - before.elapsed < 0.05  # stands still while paused
    assert len(during.rows) == len(before.rows)
    manager.resume(job)
    n = len(before.rows)
    _wait_for_a_new_row(manager, job, after=n + 3)
    manager.stop(job)
    snap = manager.wait(job, timeout=60)
    wall = snap.finished_at - started
    assert snap.elapsed <= wall - pause_s
    assert abs(snap.paused_seconds - pause_s) < 1.0
    # the merge after the pause comes ~1/20 s after the one before it in the seconds column
    gap = snap.rows[n][5] - snap.rows[n - 1][5]
    assert 0 <= gap < pause_s - 0.5, gap
    assert snap.rows[-1][5] <= snap.elapsed


def test_a_stop_after_the_end_is_reported_not_silent(manager):
    job = manager.submit("hello hello", vocab_size=258)
    snap = manager.wait(job, timeout=60)
    assert snap.status == "finished"
    manager.stop(job)  # the page still showed the job running when Stop was clicked
    snap = manager.snapshot(job)
    assert snap.status == "finished" and snap.stop_reason == "reached vocab size"
    assert "Training had already finished at 2 merges (vocab 258) when Stop arrived" in (
        " ".join(snap.messages))
    manager.stop(job)  # said once
    assert sum("already finished" in m for m in manager.snapshot(job).messages) == 1


def test_a_stop_in_flight_when_the_worker_finishes_is_reported(manager):
    """The worker sent "done" before it saw the stop: the finished job says so."""
    job = manager.submit("hello hello", vocab_size=258, pace=1)  # one merge, then done
    wait_for(lambda: manager.snapshot(job).status in ("training", "finished"))
    with manager._lock:  # subtle: make the race certain: the stop is recorded, not delivered
        manager._jobs[job].stop_requested = True
    snap = manager.wait(job, timeout=60)
    assert snap.status == "finished"
    assert any("already finished at 2 merges" in m for m in snap.messages)


# ---------------------------------------------------------------------------------------------
# Stop and Pause keep the merge count the page showed at the click


def test_a_stop_keeps_exactly_the_count_shown_when_the_worker_is_past_it(
    manager, long_text, tmp_path
):
    """The worker runs past the count on screen before a Stop reaches it; the job keeps
    exactly the count shown, and that is the tokenizer trained to that count, ID for ID.
    (At 200 merges a second the worker is 15 merges past the count shown and about 13 s
    from its end when the Stop is sent: certain, not a race. At full speed the C merge loop
    may finish all 2,743 merges before the Stop arrives.)"""
    job = manager.submit(long_text, vocab_size=3000, special_tokens=SPECIALS, pace=200)
    wait_for(lambda: len(manager.snapshot(job).rows) >= 20)
    shown = 5  # what a page drew a moment ago; the worker is past it by now
    manager.stop(job, shown=shown)
    snap = manager.wait(job, timeout=120)
    assert snap.status == "stopped" and snap.stop_reason == "stopped"
    assert (snap.vocab, snap.merges) == reference(long_text, 256 + 1 + shown, SPECIALS, tmp_path)
    assert len(snap.rows) == shown
    assert snap.messages[-1] == f"Stopped by request at merge {shown} (vocab {256 + 1 + shown})."
    assert not any("already finished" in m for m in snap.messages)


def test_a_stop_shown_before_the_worker_finished_still_cuts(manager, long_text, tmp_path):
    """The worker reached the target before the Stop did; the user saw 3 merges and clicked
    Stop: they get 3, not the finished training."""
    job = manager.submit("hello hello world world", vocab_size=262)
    with manager._lock:  # subtle: make the race certain: the stop is recorded, not delivered
        manager._jobs[job].stop_requested, manager._jobs[job].keep = True, 3
    snap = manager.wait(job, timeout=60)
    assert snap.status == "stopped" and len(snap.merges) == 3 and len(snap.vocab) == 259
    assert snap.merges == train_bpe(["hello hello world world"], 259)[1]


def test_a_pause_holds_the_count_shown_and_a_stop_keeps_it(manager, long_text):
    job = manager.submit(long_text, vocab_size=5000, special_tokens=SPECIALS, pace=200)
    _wait_for_a_new_row(manager, job, after=10)
    manager.pause(job, shown=4)  # the page showed 4 when Pause was clicked
    assert len(manager.snapshot(job).rows) == 4  # at once, before the worker confirms
    wait_for(lambda: manager.snapshot(job).status == "paused")
    snap = manager.snapshot(job)
    assert len(snap.rows) == 4 and snap.rows[-1][0] == 3
    manager.resume(job)  # the rows past 4 were the next ones anyway: they come back
    wait_for(lambda: len(manager.snapshot(job).rows) > 12)
    manager.pause(job, shown=12)
    wait_for(lambda: manager.snapshot(job).status == "paused")
    manager.stop(job)  # while paused: what the pause holds
    snap = manager.wait(job, timeout=60)
    assert snap.status == "stopped" and len(snap.merges) == len(snap.rows) == 12


def test_a_stop_while_counting_ends_without_counting_the_rest(manager, tmp_path):
    """Counting ~20 MB takes seconds; a Stop during it ends the job with no merge."""
    text = "some words and some more words to count, " * 500_000
    job = manager.submit(text, vocab_size=5000, special_tokens=SPECIALS)
    wait_for(lambda: (manager.snapshot(job).count_progress or 0) > 0
             and manager.snapshot(job).count_distinct)
    snap = manager.snapshot(job)
    assert snap.status == "counting" and snap.count_progress < 1
    manager.stop(job, shown=0)
    snap = manager.wait(job, timeout=60)
    assert snap.status == "stopped" and snap.merges == [] and len(snap.vocab) == 257
    assert "while counting pre-tokens" in " ".join(snap.messages)

"""training.inpage: the static build's trainer (one thread, a slice per poll) learns exactly what a
server's worker learns, shows its progress between slices, and pauses and stops exactly."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from core.train.builtin_corpus import BUILTIN_SEPARATOR, builtin_corpus_text
from core.train.count import count_in_steps, count_pretokens
from core.train import BPETrainer, train_bpe
from training.inpage import InPageTrainingManager

TEXTS = ["low lower lowest newer wider", "the cat sat on the mat, naïve café ☕ 東京"]


@pytest.fixture(scope="module")
def corpus() -> str:
    return builtin_corpus_text()


def test_count_in_steps_equals_count_pretokens_on_file_chunks(tmp_path, corpus):
    path = tmp_path / "corpus.txt"
    path.write_bytes(corpus.encode("utf-8"))
    expected, stats = count_pretokens(str(path), [BUILTIN_SEPARATOR])
    steps = count_in_steps(str(path), [BUILTIN_SEPARATOR], chunk_size=64 << 10)
    seen = []
    try:
        while True:
            seen.append(next(steps))
    except StopIteration as end:
        counts, step_stats = end.value
    assert counts == expected
    assert step_stats["distinct_pretokens"] == stats["distinct_pretokens"]
    total = path.stat().st_size
    assert len(seen) == step_stats["chunks"] > 10  # one yield per chunk: slices are possible
    assert [t for _, t in seen] == [total] * len(seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == total


def test_trainer_count_steps_then_step_equals_run(corpus):
    expected = train_bpe([corpus], 600, [BUILTIN_SEPARATOR])
    trainer = BPETrainer([corpus], 600, [BUILTIN_SEPARATOR])
    assert list(trainer.count_steps()) == [(len(corpus), len(corpus))]
    while trainer.step() is not None:
        pass
    assert (trainer.vocab, trainer.merges) == expected
    assert list(trainer.count_steps()) == []  # counting happens once


def _drive(manager: InPageTrainingManager, job: str, *, budget: float = 0.01) -> list[str]:
    """Advance until the end, noting every status seen between slices."""
    seen = []
    for _ in range(100_000):
        snap = manager.snapshot(job)
        seen.append(snap.status)
        if snap.done:
            return seen
        manager.advance(job, budget)
    raise AssertionError("the job never ended")


def test_same_merges_as_the_worker_in_small_slices(corpus):
    """Counting one 256 KB chunk and making one merge per slice (the smallest slices: a
    budget of 0 s) changes nothing: the merges are train_bpe's on the same joined text.
    (Slices of a fixed time would make the counts below depend on the machine's speed.)"""
    manager = InPageTrainingManager()
    texts = [corpus[:400_000], corpus[400_000:]]
    job = manager.submit(texts, vocab_size=700, special_tokens=[BUILTIN_SEPARATOR],
                         corpus_name="two files")
    statuses = _drive(manager, job, budget=0.0)
    snap = manager.snapshot(job)
    vocab, merges = train_bpe([BUILTIN_SEPARATOR.join(texts)], 700, [BUILTIN_SEPARATOR])
    assert snap.status == "finished" and snap.stop_reason == "reached vocab size"
    assert snap.merges == merges and snap.vocab == vocab
    assert [r[3] for r in snap.rows] == merges
    assert [r[0] for r in snap.rows] == list(range(len(merges)))
    assert statuses.count("counting") >= 2  # progress was visible between counting slices
    assert statuses.count("training") >= 2  # ... and between merging slices
    assert snap.corpus_stats["distinct_pretokens"] > 0


def test_counting_progress_rises_between_slices(corpus):
    manager = InPageTrainingManager()
    job = manager.submit([corpus], vocab_size=300, special_tokens=[BUILTIN_SEPARATOR])
    progress = []
    while manager.snapshot(job).status == "counting":
        manager.advance(job, 0.0)  # one chunk per slice
        progress.append(manager.snapshot(job).count_progress)
    assert len(progress) >= 3
    assert progress == sorted(progress) and progress[-1] == 1.0 and progress[0] < 1.0


def test_pause_and_stop_are_exact():
    manager = InPageTrainingManager()
    job = manager.submit(TEXTS * 50, vocab_size=400, special_tokens=[])
    while len(manager.snapshot(job).rows) < 5:
        manager.advance(job, 0.0)
    manager.pause(job)
    paused_at = len(manager.snapshot(job).rows)
    for _ in range(20):
        manager.advance(job)
    snap = manager.snapshot(job)
    assert snap.status == "paused" and len(snap.rows) == paused_at
    manager.stop(job)
    snap = manager.snapshot(job)
    assert snap.status == "stopped" and len(snap.merges) == paused_at
    assert f"Stopped by request at merge {paused_at:,}" in " ".join(snap.messages)


def test_pause_while_counting_stops_before_merge_zero(corpus):
    manager = InPageTrainingManager()
    job = manager.submit([corpus], vocab_size=300, special_tokens=[BUILTIN_SEPARATOR])
    manager.pause(job)
    for _ in range(50):
        manager.advance(job)
    snap = manager.snapshot(job)
    assert snap.status == "paused" and snap.rows == ()
    manager.resume(job)
    assert manager.wait(job).status == "finished"


def test_pace_limits_merges_per_second():
    manager = InPageTrainingManager()
    job = manager.submit(TEXTS * 50, vocab_size=400, special_tokens=[], pace=50.0)
    manager.advance(job, 5.0)  # counting (tiny), then merges only as they fall due
    started = time.monotonic()
    while time.monotonic() - started < 0.3:
        manager.advance(job, 0.05)
    n = len(manager.snapshot(job).rows)
    # 50 merges/s over the measured span: never more than due (+1 for merge 0)
    assert 1 <= n <= 50 * (time.monotonic() - started + 0.05) + 2


def test_stop_after_the_end_says_so_and_cancel_keeps_nothing():
    manager = InPageTrainingManager()
    job = manager.submit(TEXTS, vocab_size=270, special_tokens=[])
    assert manager.wait(job).status == "finished"
    manager.stop(job)
    assert "nothing was cut short" in " ".join(manager.snapshot(job).messages)
    other = manager.submit(TEXTS, vocab_size=270, special_tokens=[])
    manager.cancel(other)
    snap = manager.snapshot(other)
    assert snap.status == "cancelled" and snap.vocab is None


def test_a_failure_becomes_the_jobs_message():
    manager = InPageTrainingManager()
    job = manager.submit(["a"], vocab_size=300, special_tokens=[])
    manager._jobs[job].trainer.step = lambda: 1 / 0  # break the trainer
    manager.advance(job)
    manager.advance(job)
    snap = manager.snapshot(job)
    assert snap.status == "failed" and "ZeroDivisionError" in snap.error


def test_counts_match_a_counter_of_the_pretokens():
    """The slices count what the regex finds, nothing more (a small hand check)."""
    manager = InPageTrainingManager()
    job = manager.submit(["ab ab ab", "ab"], vocab_size=259, special_tokens=["<s>"])
    snap = manager.wait(job)
    assert snap.corpus_stats["pretokens"] == sum(Counter(["ab", " ab", " ab", "ab"]).values())
    assert snap.merges == [(b"a", b"b"), (b" ", b"ab")]


def test_stop_while_counting_ends_at_once_with_no_merge(corpus):
    manager = InPageTrainingManager()
    job = manager.submit([corpus], vocab_size=300, special_tokens=[BUILTIN_SEPARATOR])
    manager.advance(job, 0.0)  # one chunk of four
    progress = manager.snapshot(job).count_progress
    assert 0 < progress < 1
    manager.stop(job)
    snap = manager.snapshot(job)
    assert snap.status == "stopped" and snap.merges == [] and len(snap.vocab) == 257
    assert f"({int(progress * 100)}% counted)" in " ".join(snap.messages)


def test_stop_and_pause_keep_the_count_shown_at_the_click(corpus):
    """A slice may run between the page's last drawing and the click: the count shown wins."""
    manager = InPageTrainingManager()
    job = manager.submit(TEXTS * 50, vocab_size=400, special_tokens=[])
    while len(manager.snapshot(job).rows) < 9:
        manager.advance(job, 0.0)
    manager.pause(job, shown=6)
    assert len(manager.snapshot(job).rows) == 6
    manager.resume(job)
    manager.advance(job, 0.0)
    assert len(manager.snapshot(job).rows) == 10
    manager.stop(job, shown=7)
    snap = manager.snapshot(job)
    assert snap.status == "stopped" and len(snap.merges) == len(snap.rows) == 7
    assert snap.messages[-1] == "Stopped by request at merge 7 (vocab 263)."

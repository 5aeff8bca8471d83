"""training.evaluation: long texts are evaluated in a worker process with progress, and give
exactly core.explain.evaluate's numbers; small ones at once; one job per content key."""

from __future__ import annotations

import pytest

from core.explain.evaluate import evaluate
from core.formats.presets import load_preset
from training.evaluation import EvaluationJobs


@pytest.fixture(scope="module")
def gpt2(tiktoken_cache):
    return load_preset("gpt2")


def test_a_long_text_runs_in_a_worker_and_equals_core(gpt2):
    jobs = EvaluationJobs(small_bytes=1000)
    text = "A long text, evaluated away from the page. 日本語\n" * 3000
    gpt2.encode(text)  # a preset used before (its lazily built tables still pickle)
    key = jobs.submit("k", gpt2, text, name="long", curve=True)
    assert jobs.submit("k", gpt2, "other", name="x") == key  # same key: the same job
    snap = jobs.wait(key, timeout=120)
    expected = evaluate(gpt2, [text], name="long", curve=True)
    assert snap.status == "done" and snap.fraction == 1.0 and snap.error is None
    assert snap.result == expected
    assert snap.done_bytes == snap.total_bytes == len(text.encode("utf-8"))


def test_a_small_text_is_done_at_once_and_errors_are_messages(gpt2):
    from core.explain.baselines import WordTokenizer

    jobs = EvaluationJobs()
    snap = jobs.snapshot(jobs.submit("s", gpt2, "hello", name="s"))
    assert snap.status == "done" and snap.result.stats.tokens == 1
    failed = jobs.snapshot(jobs.submit("w", WordTokenizer.train("a b"), "a b", curve=True))
    assert failed.status == "failed" and "Replay shows byte-level BPE" in failed.error
    assert jobs.snapshot("unknown") is None


def test_a_failing_worker_reports_its_message(gpt2):
    from core.explain.baselines import WordTokenizer

    jobs = EvaluationJobs(small_bytes=10)
    key = jobs.submit("w", WordTokenizer.train("a b"), "a b " * 100, curve=True)
    snap = jobs.wait(key, timeout=120)
    assert snap.status == "failed" and "Replay shows byte-level BPE" in snap.error


def test_old_jobs_are_forgotten(gpt2):
    jobs = EvaluationJobs(max_jobs=2)
    for key in "abc":
        jobs.submit(key, gpt2, key)
    assert jobs.snapshot("a") is None and jobs.snapshot("c").status == "done"

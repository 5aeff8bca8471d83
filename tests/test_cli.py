"""The command line end to end: pickles written, progress on stderr, clear errors."""

from __future__ import annotations

import pickle
import subprocess
import sys

from core import train_bpe

REPO = __import__("pathlib").Path(__file__).resolve().parent.parent


def run_cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "core", *map(str, args)], capture_output=True, text=True, cwd=cwd,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def test_train_writes_cs336_pickles_and_shows_progress(tmp_path):
    corpus = tmp_path / "corpus.txt"
    text = "low lower widest newest<|endoftext|>newest newest low\n" * 50
    corpus.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    res = run_cli("train", corpus, "--vocab-size", 270, "--special-token", "<|endoftext|>", "--out", out,
                  "--workers", 2, cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "counting" in res.stderr and "merging" in res.stderr and "100%" in res.stderr
    assert "wrote vocab.pkl and merges.pkl" in res.stdout
    vocab = pickle.loads((out / "vocab.pkl").read_bytes())
    merges = pickle.loads((out / "merges.pkl").read_bytes())
    assert (vocab, merges) == train_bpe(corpus, 270, ["<|endoftext|>"])
    assert vocab[0] == b"<|endoftext|>" and len(vocab) == 270


def test_errors_are_one_clear_line_without_traceback(tmp_path):
    corpus = tmp_path / "bad.txt"
    corpus.write_bytes(b"abc \xff def")
    res = run_cli("train", corpus, "--vocab-size", 300, "--out", tmp_path / "o", cwd=tmp_path)
    assert res.returncode == 2
    assert "error:" in res.stderr and "byte offset 4" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("train", corpus, "--vocab-size", 300, "--out", tmp_path / "o", "--errors", "replace",
                  "--quiet", cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0 and res.stderr.count("%") == 0
    res = run_cli("train", corpus, "--vocab-size", 10, "--out", tmp_path / "o", cwd=tmp_path)
    assert res.returncode == 2 and "vocab_size >= 256" in res.stderr


def test_unreachable_vocab_size_is_reported(tmp_path):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("ab ab", encoding="utf-8")
    res = run_cli("train", corpus, "--vocab-size", 1000, "--out", tmp_path / "o", cwd=tmp_path)
    assert res.returncode == 0
    assert "stopped at vocab size 258" in res.stderr
    assert len(pickle.loads((tmp_path / "o" / "merges.pkl").read_bytes())) == 2

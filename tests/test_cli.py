"""The command line end to end: pickles written, progress on stderr, clear errors."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

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


# ---- Issue 27: inputs checked before training, with command-line messages ----------------------


def test_a_directory_as_corpus_says_so_with_a_command_line_fix(tmp_path):
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "a.txt").write_text("hello world " * 20, encoding="utf-8")
    res = run_cli("train", "texts", "--vocab-size", 300, "--out", "o", cwd=tmp_path)
    assert res.returncode == 2
    line = res.stderr.strip()
    assert line.startswith("error: corpus 'texts' is a directory: give a text file")
    assert "cat" in line and "train_bpe" not in line and "Traceback" not in line
    assert not (tmp_path / "o").exists()


def test_a_missing_corpus_gets_no_python_only_hint(tmp_path):
    res = run_cli("train", "nope.txt", "--vocab-size", 300, "--out", "o", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip() == "error: corpus file 'nope.txt' not found"


@pytest.mark.parametrize("content", ["", "  \n\t\n \u3000"], ids=["empty", "whitespace"])
def test_an_empty_corpus_is_refused_as_the_train_page_does(tmp_path, content):
    (tmp_path / "c.txt").write_text(content, encoding="utf-8")
    res = run_cli("train", "c.txt", "--vocab-size", 300, "--out", "o", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip() == ("error: corpus 'c.txt' is empty (only whitespace): add some "
                                  "text to learn from.")
    assert not (tmp_path / "o").exists()


def test_the_train_page_and_the_cli_share_the_empty_corpus_rule():
    from core.corpus import blank_corpus_problem

    assert blank_corpus_problem([" ", "\n"]) == (
        "The uploaded text is empty (only whitespace): add some text to learn from.")
    assert blank_corpus_problem(["", "a"]) is None


@pytest.mark.parametrize("out", ["afile", "afile/sub"], ids=["a file", "under a file"])
def test_an_unwritable_out_fails_before_training(tmp_path, out):
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    (tmp_path / "c.txt").write_text("low lower lowest " * 50, encoding="utf-8")
    res = run_cli("train", "c.txt", "--vocab-size", 300, "--out", out, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith(f"error: cannot write to --out '{out}'")
    assert "counting" not in res.stderr and "merging" not in res.stderr  # no training started


def test_out_is_created_before_training(tmp_path):
    (tmp_path / "c.txt").write_text("low lower lowest " * 50, encoding="utf-8")
    res = run_cli("train", "c.txt", "--vocab-size", 260, "--out", "a/b/c", "--quiet", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "a/b/c/merges.pkl").is_file()

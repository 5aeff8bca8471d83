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


def test_a_directory_without_text_files_says_so_and_makes_no_folder(tmp_path):
    """Issue 38: a folder is read (its .txt, .gz, .zst and .parquet files); one without any
    is refused on one line."""
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "a.md").write_text("hello world " * 20, encoding="utf-8")
    res = run_cli("train", "texts", "--vocab-size", 300, "--out", "o", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr == ("error: folder 'texts' has no corpus files (.txt, .gz, .zst, .parquet; "
                          "hidden ones aside): give the files themselves, or a folder that holds some\n")
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
    from core.train.corpus import blank_corpus_problem

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


# ---- Issue 24: encode, decode, evaluate, inspect ---------------------------------------------

import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import tomllib  # noqa: E402

import tiktoken  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from core.cli import main  # noqa: E402
from core.formats import export_all  # noqa: E402
from core.formats.presets import PRESETS, load_preset  # noqa: E402
from core.engine.pretokenize import PATTERNS  # noqa: E402

_PROPERTY = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
_TEXT = st.text(st.one_of(st.characters(codec="utf-8"), st.sampled_from(" \n.'1é日")), max_size=60)


def call(monkeypatch, *args, stdin=b""):
    """main() in this process: (exit code, stdout bytes, stderr text)."""
    out, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="ascii"))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding="ascii"))
    code = main([str(a) for a in args])
    sys.stdout.flush()
    sys.stderr.flush()
    return code, out.getvalue(), err.getvalue().decode("utf-8")


@pytest.fixture(scope="module")
def encodings(tiktoken_cache):
    return {name: tiktoken.get_encoding(name) for name in PRESETS}


@_PROPERTY
@given(text=_TEXT, name=st.sampled_from(list(PRESETS)))
def test_encode_prints_tiktokens_ids_from_the_argument_and_stdin(monkeypatch, encodings, text, name):
    expected = " ".join(map(str, encodings[name].encode(text, allowed_special="all"))) + "\n"
    code, out, err = call(monkeypatch, "encode", "-t", name, text)
    assert (code, out.decode(), err) == (0, expected, "")
    code, out, err = call(monkeypatch, "encode", "-t", name, stdin=text.encode("utf-8"))
    assert (code, out.decode(), err) == (0, expected, "")


def test_encode_streams_a_long_stdin_exactly(monkeypatch, encodings):
    text = ("Tokenizers <|endoftext|> split 日本語 text.\n  indented  words " * 3000)
    code, out, _ = call(monkeypatch, "encode", "-t", "cl100k_base", stdin=text.encode())
    assert code == 0 and out.decode().split() == [
        str(i) for i in encodings["cl100k_base"].encode(text, allowed_special="all")]


def test_special_adds_the_models_template(monkeypatch, tmp_path):
    from core.formats import load_tokenizer_files

    # a BOS template only shows on a tokenizer that has one: a tokenizer.json with a post-processor
    tok = load_preset("gpt2")
    assert call(monkeypatch, "encode", "-t", "gpt2", "--special", "hi")[1] == \
        call(monkeypatch, "encode", "-t", "gpt2", "--no-special", "hi")[1]  # no template: same
    files = export_all(tok)
    doc = json.loads(files["tokenizer.json"])
    doc["post_processor"] = {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}}],
                             "pair": [], "special_tokens": {"<|endoftext|>": {
                                 "id": "<|endoftext|>", "ids": [50256], "tokens": ["<|endoftext|>"]}}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    loaded = load_tokenizer_files({"tokenizer.json": (tmp_path / "tokenizer.json").read_bytes()})
    expected = " ".join(map(str, loaded.encode("hi", add_special_tokens=True))) + "\n"
    code, out, _ = call(monkeypatch, "encode", "-t", tmp_path / "tokenizer.json", "--special", "hi")
    assert (code, out.decode()) == (0, expected) and expected.startswith("50256 ")


@_PROPERTY
@given(ids=st.lists(st.integers(0, 50256), max_size=30))
def test_decode_prints_tiktokens_text_with_u_fffd_for_broken_bytes(monkeypatch, encodings, ids):
    expected = encodings["gpt2"].decode(ids, errors="replace")
    code, out, err = call(monkeypatch, "decode", "-t", "gpt2", *ids)
    assert (code, out.decode("utf-8"), err) == (0, expected, "")
    code, out, _ = call(monkeypatch, "decode", "-t", "gpt2", stdin=", ".join(map(str, ids)).encode())
    assert (code, out.decode("utf-8")) == (0, expected)


def test_decode_of_encode_round_trips_through_the_shell(tmp_path):
    text = "Héllo wörld 🧩 <|endoftext|>\n"
    enc = run_cli("encode", "-t", "o200k_base", text, cwd=tmp_path)
    dec = run_cli("decode", "-t", "o200k_base", *enc.stdout.split(), cwd=tmp_path)
    assert enc.returncode == dec.returncode == 0 and dec.stdout == text


@_PROPERTY
@given(texts=st.lists(_TEXT, min_size=1, max_size=3), name=st.sampled_from(list(PRESETS)))
def test_evaluate_equals_an_independent_count(monkeypatch, tmp_path, encodings, texts, name):
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"t{i}.txt"
        path.write_bytes(text.encode("utf-8"))
        paths.append(str(path))
    code, out, err = call(monkeypatch, "evaluate", "-t", name, *paths, "--json", "--quiet")
    assert code == 0 and err == ""
    expected = []
    for path, text in zip(paths, texts):
        n = len(encodings[name].encode(text, allowed_special="all"))
        size = len(text.encode("utf-8"))
        expected.append({"file": path, "bytes": size, "chars": len(text), "tokens": n,
                         "bytes_per_token": size / n if n else 0.0})
    assert json.loads(out) == expected
    code, out, _ = call(monkeypatch, "evaluate", "-t", name, *paths, "--quiet")
    lines = out.decode().splitlines()
    assert lines[0] == "file\tbytes\tchars\ttokens\tbytes_per_token"
    assert lines[1:] == [f"{r['file']}\t{r['bytes']}\t{r['chars']}\t{r['tokens']}\t"
                         f"{r['bytes_per_token']:.4f}" for r in expected]


def test_evaluate_shows_a_progress_bar_on_a_long_file(tmp_path):
    (tmp_path / "long.txt").write_text("some words to count, again and again. " * 50_000,
                                       encoding="utf-8")
    res = run_cli("evaluate", "-t", "gpt2", "long.txt", cwd=tmp_path)
    assert res.returncode == 0 and "long.txt" in res.stderr and "B/s" in res.stderr
    assert res.stdout.splitlines()[1].startswith("long.txt\t1900000\t1900000\t")
    quiet = run_cli("evaluate", "-t", "gpt2", "long.txt", "--quiet", cwd=tmp_path)
    assert quiet.stderr == "" and quiet.stdout == res.stdout


def test_inspect_names_kind_size_specials_pattern_and_source(monkeypatch, tmp_path):
    code, out, _ = call(monkeypatch, "inspect", "-t", "cl100k_base")
    lines = out.decode().splitlines()
    assert code == 0 and lines[:4] == ["name: cl100k_base", "kind: byte-level BPE (by rank)",
                                       "vocab size: 100277", 'special tokens: 5: "<|endoftext|>" '
                                       '"<|fim_prefix|>" "<|fim_middle|>" "<|fim_suffix|>" '
                                       '"<|endofprompt|>"']
    assert lines[4].startswith("pattern: cl100k = ") and lines[5].startswith("source: preset cl100k_base")
    tok = load_preset("gpt2")
    files = export_all(tok)
    (tmp_path / "vocab.pkl").write_bytes(files["vocab.pkl"])
    (tmp_path / "merges.pkl").write_bytes(files["merges.pkl"])
    spec = f"{tmp_path / 'vocab.pkl'},{tmp_path / 'merges.pkl'}"
    code, out, _ = call(monkeypatch, "inspect", "-t", spec, "--json")
    info = json.loads(out)
    assert code == 0 and info["vocab_size"] == 50257 and info["source"] == "files merges.pkl, vocab.pkl"
    assert info["kind"] == tok.kind and info["pattern"] == "gpt2"
    # the pair loads as the preset does: same IDs
    assert call(monkeypatch, "encode", "-t", spec, "hello world")[1] == b"31373 995\n"


def test_a_hub_id_loads_through_core_hub(monkeypatch, tmp_path, encodings):
    from tests.hub_stub import GPT2, HubStub, real_repos

    repos, renamed = real_repos(llama3_json=b"{}")
    stub = HubStub(repos, renamed).start()
    try:
        for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HF_HUB_CACHE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HF_ENDPOINT", stub.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        code, out, err = call(monkeypatch, "encode", "-t", GPT2, "Hello Hub")
        assert (code, out.decode(), err) == (
            0, " ".join(map(str, encodings["gpt2"].encode("Hello Hub"))) + "\n", "")
        code, out, _ = call(monkeypatch, "inspect", "-t", f"{GPT2}@main")
        assert code == 0 and f"source: Hugging Face Hub {GPT2} at main" in out.decode()
    finally:
        stub.stop()


def _one_error_line(code, err):
    assert code == 2, err
    err = err.rsplit("\r", 1)[-1]  # what a terminal shows: a progress bar is wiped with \r
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err


@pytest.mark.parametrize("args, stdin, message", [
    (["encode", "-t", "gpt5", "x"], b"", "unknown tokenizer 'gpt5'"),
    (["encode", "-t", "", "x"], b"", "-t is empty"),
    (["encode", "-t", "nope/vocab.pkl,nope/merges.pkl", "x"], b"", "'nope/vocab.pkl' is not a file"),
    (["decode", "-t", "gpt2", "12x"], b"", "item 1 '12x' is not an integer"),
    (["decode", "-t", "gpt2", "5", "-3"], b"", "item 2 '-3' is negative"),
    (["decode", "-t", "gpt2", "50257"], b"", "ID 50257 (item 1) is not in this tokenizer's vocabulary"),
    (["decode", "-t", "gpt2"], b"1 2 x", "item 3 'x' is not an integer"),
    (["decode", "-t", "cl100k_base", "100256"], b"", "ID 100256 (item 1) is not in this"),
    (["encode", "-t", "gpt2"], b"ok \xe9t\xe9", "stdin is not UTF-8 text: byte e9 at byte offset 3"),
    (["evaluate", "-t", "gpt2", "missing.txt"], b"", "file 'missing.txt' not found"),
    (["evaluate", "-t", "gpt2", "."], b"", "'.' is a directory: give text files"),
    (["evaluate", "-t", "gpt2", "-"], b"\xff", "stdin is not UTF-8 text: byte ff at byte offset 0"),
    (["encode"], b"", "the following arguments are required: -t/--tokenizer"),
    (["frobnicate"], b"", "invalid choice: 'frobnicate'"),
    (["evaluate", "-t", "gpt2"], b"", "the following arguments are required: FILE"),
], ids=lambda v: str(v)[:40])
def test_bad_input_is_one_line_and_exit_2(monkeypatch, tmp_path, args, stdin, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = call(monkeypatch, *args, stdin=stdin)
    _one_error_line(code, err)
    assert message in err and out == b""


def test_bad_files_are_one_line_and_exit_2(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    long = ("fine text " * 200_000).encode() + b"\xc3(" + b" more" * 10
    (tmp_path / "late.txt").write_bytes(long)
    code, out, err = call(monkeypatch, "evaluate", "-t", "gpt2", "late.txt")
    _one_error_line(code, err)
    assert f"late.txt is not UTF-8 text: byte c3 at byte offset {len('fine text ') * 200_000}" in err
    code, out, _ = call(monkeypatch, "evaluate", "-t", "gpt2", "late.txt", "--errors", "replace",
                        "--quiet")
    assert code == 0 and out.decode().splitlines()[1].startswith("late.txt\t")
    (tmp_path / "vocab.pkl").write_bytes(b"not a pickle")
    (tmp_path / "merges.pkl").write_bytes(b"not a pickle")
    code, _, err = call(monkeypatch, "inspect", "-t", "vocab.pkl,merges.pkl")
    _one_error_line(code, err)
    assert "vocab.pkl" in err
    evil = pickle.dumps(os.system)  # a pickle that would call a function: refused, never run
    (tmp_path / "vocab.pkl").write_bytes(evil)
    code, _, err = call(monkeypatch, "inspect", "-t", "vocab.pkl,merges.pkl")
    _one_error_line(code, err)


def test_an_unreachable_hub_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    code, _, err = call(monkeypatch, "inspect", "-t", "some-org/some-model")
    _one_error_line(code, err)
    assert "some-org/some-model" in err


def test_a_text_argument_that_is_not_utf8_is_one_line(tmp_path):
    res = subprocess.run([sys.executable, "-m", "core", "encode", "-t", "gpt2", b"ab\xff"],
                         capture_output=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    err = res.stderr.decode()
    _one_error_line(res.returncode, err)
    assert "the TEXT argument is not UTF-8 text" in err


def test_console_scripts_name_the_same_main():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["tokplay"] == "core.cli:main"
    assert scripts["tokenizer-playground"] == "core.__main__:main"
    import core.__main__

    assert core.__main__.main is main


# ---- issue 35: pattern names, the file's bytes, inspect's line width --------------------

_PATTERN_CORPUS = ("Numbers 1234567 and DON'T stop.\n\n  indented line\nWe're 12 here!!\n" * 40
                   + "<|endoftext|>" + "ünïcödé wörds 987654321\n" * 30)


@pytest.mark.parametrize("spelling, name", [
    ("cl100k_base", "cl100k"), ("CL100K", "cl100k"), ("GPT2", "gpt2"), ("o200k_BASE", "o200k"),
    ("Llama3", "llama3"), (" tekken ", "tekken")])
def test_train_takes_the_pattern_names_t_knows_in_any_spelling(monkeypatch, tmp_path, spelling, name):
    corpus = tmp_path / "c.txt"
    corpus.write_text(_PATTERN_CORPUS, encoding="utf-8")
    code, out, err = call(monkeypatch, "train", corpus, "--vocab-size", 300, "--pattern", spelling,
                          "--special-token", "<|endoftext|>", "--out", tmp_path / "out", "--quiet")
    assert code == 0, err
    merges = pickle.loads((tmp_path / "out" / "merges.pkl").read_bytes())
    assert merges == train_bpe(corpus, 300, ["<|endoftext|>"], pattern=name)[1]
    assert len(merges) == 300 - 257


def test_the_pattern_names_cut_the_corpus_differently():
    """The case above tells the names apart: each trains other merges on that corpus."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c.txt")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(_PATTERN_CORPUS)
        trained = {name: tuple(train_bpe(path, 300, ["<|endoftext|>"], pattern=name)[1])
                   for name in ("gpt2", "cl100k", "o200k", "tekken")}
    assert len(set(trained.values())) == 4


def test_a_pattern_that_matches_nothing_is_refused_and_writes_nothing(monkeypatch, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world, hello again\n" * 20, encoding="utf-8")
    code, out, err = call(monkeypatch, "train", corpus, "--vocab-size", 300, "--pattern", "xyz+",
                          "--out", tmp_path / "out", "--quiet")
    _one_error_line(code, err)
    assert "--pattern 'xyz+' matches nothing in" in err and "gpt2, cl100k, o200k" in err
    assert out == b"" and not (tmp_path / "out" / "merges.pkl").exists()


def test_a_corpus_of_special_tokens_only_is_refused(monkeypatch, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("<|endoftext|> <|endoftext|>\n", encoding="utf-8")
    code, _, err = call(monkeypatch, "train", corpus, "--vocab-size", 300, "--out", tmp_path / "o",
                        "--special-token", "<|endoftext|>", "--quiet")
    _one_error_line(code, err)
    assert "(special tokens aside) is empty (only whitespace)" in err


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_evaluate_with_errors_replace_counts_the_files_bytes(monkeypatch, tmp_path, source):
    data = ("plain text, " * 50).encode() + b"\xff\xfe\x80" * 100 + b" end\n"
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    arg, stdin = (path, b"") if source == "file" else ("-", data)
    code, out, err = call(monkeypatch, "evaluate", "-t", "gpt2", arg, "--errors", "replace",
                          "--json", "--quiet", stdin=stdin)
    assert code == 0, err
    [row] = json.loads(out)
    text = data.decode("utf-8", errors="replace")
    tokens = len(load_preset("gpt2").encode(text))
    assert row["bytes"] == len(data) == 905 and row["chars"] == len(text)
    assert row["tokens"] == tokens and row["bytes_per_token"] == len(data) / tokens


def test_inspect_summarises_long_lists_in_lines_of_at_most_200_characters(monkeypatch, tmp_path):
    from core import Tokenizer

    specials = [f"<|reserved_special_token_{i}|>" for i in range(256)]
    base = load_preset("gpt2")
    tok = Tokenizer(base.vocab, base.merges, specials)
    (tmp_path / "tokenizer.json").write_bytes(export_all(tok)["tokenizer.json"])
    for spec in ("o200k_base", "cl100k_base", str(tmp_path / "tokenizer.json")):
        code, out, _ = call(monkeypatch, "inspect", "-t", spec)
        lines = out.decode().splitlines()
        assert code == 0 and max(map(len, lines)) <= 200, spec
    line = next(x for x in lines if x.startswith("special tokens: "))
    assert line.startswith('special tokens: 256: "<|reserved_special_token_0|>" ')
    assert line.endswith(" more (--json lists all)")
    pattern = next(x for x in call(monkeypatch, "inspect", "-t", "o200k_base")[1].decode()
                   .splitlines() if x.startswith("pattern: "))
    assert pattern.startswith("pattern: o200k = [^\\r\\n\\p{L}\\p{N}]?")
    assert pattern.endswith(f"... ({len('o200k = ' + PATTERNS['o200k'])} characters; --json shows all)")
    info = json.loads(call(monkeypatch, "inspect", "-t", str(tmp_path / "tokenizer.json"),
                           "--json")[1])
    assert info["special_tokens"] == specials  # whole in JSON


# ---- -t FOLDER holding every file the Train page downloads -------------------------------------


def _train_downloads(folder, *, pattern):
    """Train a small tokenizer as the Train page does and write its downloads into ``folder``
    (the rank file renamed as the page names it); return the tokenizer."""
    from core import Tokenizer

    text = "low lower lowest newer wider<|endoftext|> the cat's 12345 hats! " * 40
    vocab, merges = train_bpe([text], 280, ["<|endoftext|>"], pattern=pattern)
    tok = Tokenizer(vocab, merges, ["<|endoftext|>"], pattern=pattern, name="BPE 280 · mine")
    files = export_all(tok)
    assert not files.failures
    folder.mkdir()
    for name, data in files.items():
        name = f"bpe-{len(vocab)}.tiktoken" if name.endswith(".tiktoken") else name
        (folder / name).write_bytes(data)
    return tok


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k"])
def test_a_folder_of_the_train_pages_downloads_encodes_like_the_trained_tokenizer(
        monkeypatch, tmp_path, pattern):
    tok = _train_downloads(tmp_path / "downloads", pattern=pattern)
    assert sorted(p.name for p in (tmp_path / "downloads").iterdir()) == [
        "bpe-280.tiktoken", "encoder.json", "merges.pkl", "tokenizer.json", "vocab.bpe",
        "vocab.pkl"]
    text = "the lowest hats<|endoftext|>newer 12345 cat's"
    code, out, err = call(monkeypatch, "encode", "-t", tmp_path / "downloads", text)
    assert (code, err) == (0, "")
    assert out.decode().split() == [str(i) for i in tok.encode(text)]
    assert tok.encode(text).count(0) == 1  # the special token, as one ID
    # which file was read, and which were not
    code, out, _ = call(monkeypatch, "inspect", "-t", tmp_path / "downloads", "--json")
    info = json.loads(out)
    assert code == 0 and info["pattern"] == pattern and info["special_tokens"] == ["<|endoftext|>"]
    assert info["source"] == ("files tokenizer.json (the same tokenizer in other formats, not "
                              "read: vocab.pkl, merges.pkl, encoder.json, vocab.bpe, "
                              "bpe-280.tiktoken)")


def test_two_tokenizers_of_one_format_name_the_file_to_remove(monkeypatch, tmp_path):
    _train_downloads(tmp_path / "d", pattern="gpt2")
    ranks = (tmp_path / "d" / "bpe-280.tiktoken").read_bytes()
    (tmp_path / "d" / "old.tiktoken").write_bytes(ranks)
    code, _, err = call(monkeypatch, "encode", "-t", tmp_path / "d", "hi")
    _one_error_line(code, err)
    assert err == ("error: bpe-280.tiktoken and old.tiktoken are 2 tiktoken rank files, one "
                   "tokenizer each: remove the one you do not want to open\n")


def test_a_file_we_cannot_read_says_give_not_upload(monkeypatch, tmp_path):
    (tmp_path / "notes.txt").write_text("hello there", encoding="utf-8")
    code, _, err = call(monkeypatch, "encode", "-t", tmp_path / "notes.txt", "hi")
    _one_error_line(code, err)
    assert err.startswith("error: cannot tell which tokenizer format this file is: notes.txt "
                          "(not a tokenizer file). Give one of: vocab.pkl + merges.pkl")
    assert "upload" not in err.lower()


# ---- issue 38: corpora where they live: several files, folders, globs, Parquet ----------------


def test_train_takes_files_folders_and_globs_as_documents_joined_by_the_special_token(monkeypatch, tmp_path):
    import gzip

    docs = [f"document {i}: low lower lowest, the cat's {i * 37} hats ünïcödé " * 30 + "ends"
            for i in range(6)]
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "a.txt").write_text(docs[0], encoding="utf-8")
    (tmp_path / "folder" / "b.txt.gz").write_bytes(gzip.compress(docs[1].encode()))
    for i in (2, 3):
        (tmp_path / f"g{i}.txt").write_text(docs[i], encoding="utf-8")
    (tmp_path / "one.txt").write_text(docs[4] + "<|endoftext|>" + docs[5], encoding="utf-8")
    code, out, err = call(monkeypatch, "train", tmp_path / "folder", tmp_path / "g*.txt", tmp_path / "one.txt",
                          "--vocab-size", 300, "--special-token", "<|endoftext|>", "--out", tmp_path / "o",
                          "--workers", 2)
    assert code == 0, err
    joined = tmp_path / "joined.txt"
    joined.write_text("<|endoftext|>".join(docs), encoding="utf-8")
    merges = pickle.loads((tmp_path / "o" / "merges.pkl").read_bytes())
    assert merges == train_bpe(joined, 300, ["<|endoftext|>"])[1] and len(merges) == 300 - 257
    sizes = sum(p.stat().st_size for p in [*tmp_path.glob("folder/*"), *tmp_path.glob("g*.txt"),
                                           tmp_path / "one.txt"])
    shown = __import__("tqdm").tqdm.format_sizeof(sizes, divisor=1000)
    assert f" {shown}/{shown} " in err  # counting: the bytes of all the files


def test_train_reads_the_parquet_column_text_column_names(monkeypatch, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    docs = [f"row {i} of the table, lower and lowest words {i}" for i in range(40)]
    pq.write_table(pa.table({"body": docs}), tmp_path / "t.parquet", row_group_size=7)
    code, _, err = call(monkeypatch, "train", tmp_path / "t.parquet", "--vocab-size", 300,
                        "--special-token", "<|endoftext|>", "--out", tmp_path / "o", "--quiet")
    _one_error_line(code, err)
    assert err == (f"error: {tmp_path / 't.parquet'} has no column 'text'; its columns: body. Name the "
                   "one with the text: text_column= (CLI: --text-column)\n")
    assert not (tmp_path / "o").exists()
    code, _, err = call(monkeypatch, "train", tmp_path / "t.parquet", "--text-column", "body",
                        "--vocab-size", 300, "--special-token", "<|endoftext|>", "--out", tmp_path / "o", "--quiet")
    assert code == 0, err
    (tmp_path / "joined.txt").write_text("<|endoftext|>".join(docs), encoding="utf-8")
    assert pickle.loads((tmp_path / "o" / "merges.pkl").read_bytes()) == train_bpe(
        tmp_path / "joined.txt", 300, ["<|endoftext|>"])[1]


@pytest.mark.parametrize("corpus, message", [
    ("nope/*.txt", "no file matches 'nope/*.txt': check the pattern ('**' for any depth)"),
    ("blank", "the corpus (2 files) is empty (only whitespace): add some text to learn from."),
    ("binary", "binary/b.txt is not valid UTF-8: bad byte(s) 89 50 4e 47 at byte offset 0"),
])  # fmt: skip
def test_train_refuses_a_bad_corpus_on_one_line(monkeypatch, tmp_path, corpus, message):
    for folder, data in (("blank", b"  \n"), ("binary", b"\x89PNG\r\n\x1a\n\x00")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.txt").write_bytes(b"fine text " * 5 if folder == "binary" else data)
        (tmp_path / folder / "b.txt").write_bytes(data)
    monkeypatch.chdir(tmp_path)
    code, out, err = call(monkeypatch, "train", corpus, "--vocab-size", 300, "--out", "o", "--quiet")
    _one_error_line(code, err)
    assert err.startswith(f"error: {message}") and out == b""
    assert not (tmp_path / "o" / "merges.pkl").exists()


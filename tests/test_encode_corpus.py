"""``tokplay encode -t TOK FILE... --out ids.npy`` (issue 38, part 4): a corpus's IDs as one flat
array for training, equal to tiktoken's, documents joined by the end-of-text token.

The oracle is tiktoken: a file's IDs are ``encode(text, allowed_special="all")``, and files (or
Parquet rows) are joined by the end-of-text ID, as CS336's data preparation joins documents.
"""

from __future__ import annotations

import gzip
import json
import pickle

import numpy as np
import pytest
import tiktoken

from core.train.builtin_corpus import builtin_corpus_documents
from core.train.encode_corpus import _read_npy_count, npy_header
from core.train import train_bpe
from tests.conftest import need_module
from tests.test_cli import _one_error_line, call, run_cli

SEP = "<|endoftext|>"
# real text (prose, code, non-ASCII) in documents joined by the special token, long enough
# (~300 kB) that a file is cut into several chunks (64 kB at least) for the workers
DOCS = [doc.strip() for doc in builtin_corpus_documents()[:40]] + ["naïve café 日本語 🧩 " * 300]
TEXT = SEP.join(DOCS) * 3


@pytest.fixture(scope="module")
def encodings(tiktoken_cache):
    return {name: tiktoken.get_encoding(name) for name in ("gpt2", "cl100k_base", "o200k_base")}


def _expected(enc, *texts: str) -> list[int]:
    """tiktoken's IDs of each text, joined by the end-of-text ID."""
    ids: list[int] = []
    for i, text in enumerate(texts):
        ids += ([enc.eot_token] if i else []) + enc.encode(text, allowed_special="all")
    return ids


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_files_ids_equal_tiktokens_in_a_npy_file(monkeypatch, tmp_path, encodings, name, workers):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.txt").write_text(TEXT, encoding="utf-8")
    assert len(TEXT.encode()) > 4 * 64_000  # several chunks
    code, out, err = call(monkeypatch, "encode", "-t", name, "corpus.txt", "--out", "ids.npy",
                          "--workers", workers)
    assert code == 0, err
    ids = np.load(tmp_path / "ids.npy")
    dtype = "uint16" if name == "gpt2" else "uint32"  # cl100k_base has 100,277 IDs
    assert ids.dtype == dtype and ids.tolist() == _expected(encodings[name], TEXT)
    assert out.decode() == (f"wrote {len(ids):,} token IDs ({dtype}) from 1 file "
                            f"({len(TEXT.encode()):,} bytes) to ids.npy\n")
    assert "encoding" in err  # the progress bar (wiped when done)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "ids.npy"]  # no .part left


def test_the_command_forks_its_workers_and_writes_the_same_ids(tmp_path, encodings):
    """The command in a process of its own: single-threaded there, it forks its workers (in
    pytest, where NumPy runs a thread, a forkserver starts them), so this covers that way in."""
    (tmp_path / "corpus.txt").write_text(TEXT, encoding="utf-8")
    res = run_cli("encode", "-t", "gpt2", "corpus.txt", "--out", "ids.npy", "--workers", 2, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("wrote ") and "encoding" in res.stderr
    assert np.load(tmp_path / "ids.npy").tolist() == _expected(encodings["gpt2"], TEXT)


def test_files_folders_globs_and_gz_are_documents_joined_by_end_of_text(monkeypatch, tmp_path, encodings):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "texts").mkdir()
    a, b, c = DOCS[0], DOCS[1], "third document, compressed"
    (tmp_path / "texts" / "a.txt").write_text(a, encoding="utf-8")
    (tmp_path / "texts" / "b.txt").write_text(b, encoding="utf-8")
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(c.encode()))
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    expected = _expected(encodings["gpt2"], a, b, c)
    for sources in (["texts", "c.txt.gz"], ["texts/*.txt", "empty.txt", "c.txt.gz"]):
        code, _, err = call(monkeypatch, "encode", "-t", "gpt2", *sources, "--out", "ids.npy",
                            "--workers", 2, "--quiet")
        assert (code, err) == (0, "")
        assert np.load("ids.npy").tolist() == expected  # an empty file adds no separator


def test_parquet_rows_are_documents(monkeypatch, tmp_path, encodings):
    pa, pq = need_module("pyarrow"), need_module("pyarrow.parquet")
    monkeypatch.chdir(tmp_path)
    rows = ["first row", None, "second row", "", "third row 日本"]
    pq.write_table(pa.table({"body": rows}), tmp_path / "rows.parquet", row_group_size=2)
    code, _, err = call(monkeypatch, "encode", "-t", "cl100k_base", "rows.parquet", "--out", "ids.npy",
                        "--text-column", "body", "--quiet")
    assert (code, err) == (0, "")
    assert np.load("ids.npy").tolist() == _expected(encodings["cl100k_base"], *filter(None, rows))


def test_raw_writes_little_endian_ids_and_dtype_is_chosen_by_vocab_size(monkeypatch, tmp_path, encodings):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.txt").write_text(TEXT, encoding="utf-8")
    expected = _expected(encodings["gpt2"], TEXT)
    code, out, _ = call(monkeypatch, "encode", "-t", "gpt2", "corpus.txt", "--out", "ids.bin", "--raw",
                        "--quiet")
    assert code == 0 and "(uint16, raw)" in out.decode()
    assert (tmp_path / "ids.bin").read_bytes() == np.array(expected, dtype="<u2").tobytes()
    code, _, _ = call(monkeypatch, "encode", "-t", "gpt2", "corpus.txt", "--out", "ids.bin", "--raw",
                      "--dtype", "uint32", "--quiet")
    assert code == 0 and (tmp_path / "ids.bin").read_bytes() == np.array(expected, dtype="<u4").tobytes()
    # o200k_base's IDs go past 65,535: uint32 unless told otherwise
    code, _, _ = call(monkeypatch, "encode", "-t", "o200k_base", "corpus.txt", "--out", "ids.npy",
                      "--quiet", "--workers", 2)
    ids = np.load("ids.npy")
    assert code == 0 and ids.dtype == np.uint32
    assert ids.tolist() == _expected(encodings["o200k_base"], TEXT)


def test_uint16_is_refused_for_a_vocab_it_cannot_hold(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.txt").write_text("hello", encoding="utf-8")
    code, out, err = call(monkeypatch, "encode", "-t", "o200k_base", "corpus.txt", "--out", "ids.npy",
                          "--dtype", "uint16")
    _one_error_line(code, err)
    assert err == ("error: o200k_base has 200,019 token IDs, more than uint16 holds (65,536): use "
                   "uint32 (CLI: --dtype uint32, or leave --dtype out)\n")
    assert out == b"" and not (tmp_path / "ids.npy").exists()


def test_bad_utf8_is_one_line_with_its_offset_and_leaves_no_file(monkeypatch, tmp_path, encodings):
    monkeypatch.chdir(tmp_path)
    good = TEXT.encode()
    (tmp_path / "bad.txt").write_bytes(good + b" \xff tail")
    for workers in (1, 2):
        code, out, err = call(monkeypatch, "encode", "-t", "gpt2", "bad.txt", "--out", "ids.npy",
                              "--workers", workers)
        _one_error_line(code, err)
        assert err.rsplit("\r", 1)[-1] == (
            f"error: bad.txt is not UTF-8 text: byte ff at byte offset {len(good) + 1} (invalid start "
            "byte). Re-save it as UTF-8, or pass errors='replace' (CLI: --errors replace) to read bad "
            "bytes as U+FFFD.\n")
        assert out == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]
    code, _, _ = call(monkeypatch, "encode", "-t", "gpt2", "bad.txt", "--out", "ids.npy", "--errors",
                      "replace", "--quiet")
    assert code == 0
    assert np.load("ids.npy").tolist() == _expected(encodings["gpt2"], TEXT + " \ufffd tail")


def test_text_argument_still_prints_ids_and_file_options_need_out(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert call(monkeypatch, "encode", "-t", "gpt2", "Hello world") == (0, b"15496 995\n", "")
    code, _, err = call(monkeypatch, "encode", "-t", "gpt2", "Hello", "world")
    _one_error_line(code, err)
    assert err == ('error: encode takes one TEXT, not 2: quote it (encode -t gpt2 "Hello world"), '
                   "or give files with --out PATH\n")
    code, _, err = call(monkeypatch, "encode", "-t", "gpt2", "Hello", "--workers", "2")
    _one_error_line(code, err)
    assert err.startswith("error: --workers goes with --out PATH")
    code, _, err = call(monkeypatch, "encode", "-t", "gpt2", "--out", "ids.npy")
    _one_error_line(code, err)
    assert "encode --out needs corpus files" in err


def test_a_separator_is_needed_between_documents(monkeypatch, tmp_path, encodings):
    """A tokenizer without an end-of-text token encodes one file, but joins several only with
    --separator, which must be one of its special tokens."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("low lower lowest " * 20, encoding="utf-8")
    (tmp_path / "b.txt").write_text("new newer newest " * 20, encoding="utf-8")
    for specials, name in (([], "plain"), (["<|doc|>"], "doc")):
        vocab, merges = train_bpe(tmp_path / "a.txt", 270, specials)
        (tmp_path / f"{name}-vocab.pkl").write_bytes(pickle.dumps(vocab))
        (tmp_path / f"{name}-merges.pkl").write_bytes(pickle.dumps(merges))
    plain = "plain-vocab.pkl,plain-merges.pkl"
    code, _, _ = call(monkeypatch, "encode", "-t", plain, "a.txt", "--out", "ids.npy", "--quiet")
    assert code == 0 and len(np.load("ids.npy")) > 0
    code, _, err = call(monkeypatch, "encode", "-t", plain, "a.txt", "b.txt", "--out", "ids.npy")
    _one_error_line(code, err)
    assert "has no end-of-text token (<|endoftext|>, <|end_of_text|>, </s>)" in err
    assert "--separator TOKEN" in err
    code, _, err = call(monkeypatch, "encode", "-t", "gpt2", "a.txt", "b.txt", "--out", "ids.npy",
                        "--separator", "<|doc|>")
    _one_error_line(code, err)
    assert "separator '<|doc|>' is not a special token of gpt2 (its special tokens: <|endoftext|>)" in err
    code, _, _ = call(monkeypatch, "encode", "-t", "doc-vocab.pkl,doc-merges.pkl", "a.txt", "b.txt",
                      "--out", "ids.npy", "--separator", "<|doc|>", "--quiet")
    ids = np.load("ids.npy").tolist()
    assert code == 0 and ids.count(0) == 1  # <|doc|> is ID 0, once: between the two files


def test_a_tokenizer_that_cannot_be_cut_is_refused(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    doc = {"model": {"type": "WordLevel", "unk_token": "<unk>", "vocab": {"<unk>": 0, "hi": 1}},
           "pre_tokenizer": {"type": "Whitespace"}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "a.txt").write_text("hi hi", encoding="utf-8")
    code, _, err = call(monkeypatch, "encode", "-t", "tokenizer.json", "a.txt", "--out", "ids.npy")
    _one_error_line(code, err)
    assert "gives the IDs of the whole text only for byte-level BPE with a built-in pattern" in err
    assert not (tmp_path / "ids.npy").exists()


def test_the_npy_header_is_fixed_size_and_numpy_reads_it(tmp_path):
    for count in (0, 7, 10**12):
        header = npy_header("uint32", count)
        assert len(header) == 128 and _read_npy_count(header) == count
    path = tmp_path / "x.npy"
    path.write_bytes(npy_header("uint16", 3) + np.array([1, 2, 65535], dtype="<u2").tobytes())
    assert np.load(path).tolist() == [1, 2, 65535]
    assert np.load(path, mmap_mode="r").dtype == np.uint16


def test_without_worker_processes_the_corpus_is_encoded_here(monkeypatch, tmp_path, encodings):
    """Where no process can start (Pyodide; no sem_open), --workers 2 encodes in this process."""
    import multiprocessing

    from core.train.corpus_readers import CorpusFiles
    from core.train.encode_corpus import encode_corpus
    from core.formats.presets import load_preset

    def no_context(method=None):
        raise ImportError("This platform lacks a functioning sem_open implementation")

    (tmp_path / "corpus.txt").write_text(TEXT, encoding="utf-8")
    files = CorpusFiles([str(tmp_path / "corpus.txt")])
    done = encode_corpus(load_preset("gpt2"), files, tmp_path / "a.npy", workers=2)
    assert done.workers == 2
    monkeypatch.setattr(multiprocessing, "get_context", no_context)
    done = encode_corpus(load_preset("gpt2"), files, tmp_path / "b.npy", workers=2)
    assert done.workers == 1 and done.count == len(_expected(encodings["gpt2"], TEXT))
    assert np.load(tmp_path / "b.npy").tolist() == _expected(encodings["gpt2"], TEXT)

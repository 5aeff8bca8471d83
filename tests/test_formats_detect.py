"""Guessing the format of uploaded files, loading them as a Tokenizer, exporting every format."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from core.errors import FormatError, UnsafePickleError
from core.formats import dumps_gpt2, dumps_hf_json, dumps_merges, dumps_vocab
from core.formats.detect import (
    ACCEPTED, export_all, files_to_open, identify_files, load_tokenizer_files,
)
from core.engine.tokenizer import Tokenizer
from tests.test_formats_gpt2 import _find_gpt2_files

VOCAB = {0: b"<|endoftext|>", **{1 + b: bytes([b]) for b in range(256)}, 257: b"ab", 258: b" ab"}
MERGES = [(b"a", b"b"), (b" ", b"ab")]
SPECIALS = ["<|endoftext|>"]
PICKLES = {"vocab.pkl": dumps_vocab(VOCAB), "merges.pkl": dumps_merges(MERGES)}
ENC, BPE = dumps_gpt2(VOCAB, MERGES)
GPT2 = {"encoder.json": ENC.encode(), "vocab.bpe": BPE.encode()}
HF = {"tokenizer.json": dumps_hf_json(VOCAB, MERGES, SPECIALS).encode()}


# ---------------------------------------------------------------------------------------------
# Identification (no Tokenizer needed)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "kind", "roles"),
    [
        (PICKLES, "pickles", {"vocab": "vocab.pkl", "merges": "merges.pkl"}),
        (
            {"run1/my_vocab.pickle": PICKLES["vocab.pkl"], "run1/my_merges.pickle": PICKLES["merges.pkl"]},
            "pickles", {"vocab": "run1/my_vocab.pickle", "merges": "run1/my_merges.pickle"},
        ),
        # names say nothing: the (safely loaded) content decides
        ({"a.pkl": PICKLES["merges.pkl"], "b.pkl": PICKLES["vocab.pkl"]}, "pickles", {"vocab": "b.pkl", "merges": "a.pkl"}),
        (GPT2, "gpt2", {"encoder": "encoder.json", "bpe": "vocab.bpe"}),
        ({"vocab.json": GPT2["encoder.json"], "merges.txt": GPT2["vocab.bpe"]}, "gpt2", {"encoder": "vocab.json", "bpe": "merges.txt"}),
        (HF, "hf", {"tokenizer": "tokenizer.json"}),
        ({**HF, "tokenizer_config.json": b"{}", "special_tokens_map.json": b"{}"}, "hf", {"tokenizer": "tokenizer.json"}),
        # a Hugging Face GPT-2 repo has tokenizer.json, vocab.json and merges.txt
        ({**HF, "vocab.json": GPT2["encoder.json"], "merges.txt": GPT2["vocab.bpe"]}, "hf", {"tokenizer": "tokenizer.json"}),
        ({"gpt2.tiktoken": b"IQ== 0\nIg== 1\n"}, "tiktoken", {"ranks": "gpt2.tiktoken"}),
        # tiktoken's cache names files by hash: content decides
        ({"9b5ad71b2ce5": b"IQ== 0\nIg== 1\n"}, "tiktoken", {"ranks": "9b5ad71b2ce5"}),
        ({"6c7ea1a7": GPT2["encoder.json"], "6d1cbeee": GPT2["vocab.bpe"]}, "gpt2", {"encoder": "6c7ea1a7", "bpe": "6d1cbeee"}),
        # one tokenizer in several formats: tokenizer.json says most (PRECEDENCE)
        ({**HF, **PICKLES}, "hf", {"tokenizer": "tokenizer.json"}),
        ({**PICKLES, **GPT2}, "pickles", {"vocab": "vocab.pkl", "merges": "merges.pkl"}),
        ({**HF, "chat_template.jinja": b"{{ messages }}"}, "hf", {"tokenizer": "tokenizer.json"}),
    ],
)
def test_identify(files: dict[str, bytes], kind: str, roles: dict[str, str]) -> None:
    found = identify_files(files)
    assert (found.kind, found.roles) == (kind, roles)


@pytest.mark.parametrize(
    ("files", "described"),
    [
        ({}, "these files are: no files"),
        ({"notes.txt": b"hello there"}, "this file is: notes.txt (not a tokenizer file)"),
        ({"vocab.pkl": PICKLES["vocab.pkl"]}, "this file is: vocab.pkl (a pickle)"),
        ({"encoder.json": GPT2["encoder.json"]},
         "this file is: encoder.json (a GPT-2 encoder.json)"),
        ({"vocab.pkl": PICKLES["vocab.pkl"], "encoder.json": GPT2["encoder.json"]},
         "these files are: vocab.pkl (a pickle), encoder.json (a GPT-2 encoder.json)"),
        ({"config.json": b"{}"}, "these files are: only config.json"),
    ],
)
def test_unrecognised_sets_list_what_is_accepted(files: dict[str, bytes], described: str) -> None:
    with pytest.raises(FormatError) as info:
        identify_files(files)
    assert str(info.value) == (
        f"cannot tell which tokenizer format {described}. Give one of: {ACCEPTED}"
    )
    assert ACCEPTED.startswith("vocab.pkl + merges.pkl; encoder.json + vocab.bpe")


# ---------------------------------------------------------------------------------------------
# Several tokenizers in one set: one tokenizer in several formats opens, two of one format not
# ---------------------------------------------------------------------------------------------

TRAIN_DOWNLOADS = export_all(Tokenizer(VOCAB, MERGES, SPECIALS, name="tiny"))
GGUF_MAGIC = b"GGUF\x03\x00\x00\x00"


@pytest.mark.parametrize(
    ("left_out", "kind", "others"),
    [
        ((), "hf", ["vocab.pkl", "merges.pkl", "encoder.json", "vocab.bpe", "tiny.tiktoken"]),
        (("tokenizer.json",), "pickles", ["encoder.json", "vocab.bpe", "tiny.tiktoken"]),
        (("tokenizer.json", "vocab.pkl", "merges.pkl"), "gpt2", ["tiny.tiktoken"]),
        (("tokenizer.json", "vocab.pkl", "merges.pkl", "encoder.json", "vocab.bpe"), "tiktoken",
         []),
    ],
)
def test_the_train_pages_downloads_open_the_format_that_says_most(
    left_out: tuple[str, ...], kind: str, others: list[str]
) -> None:
    assert sorted(TRAIN_DOWNLOADS) == ["encoder.json", "merges.pkl", "tiny.tiktoken",
                                       "tokenizer.json", "vocab.bpe", "vocab.pkl"]
    files = {k: v for k, v in TRAIN_DOWNLOADS.items() if k not in left_out}
    found = identify_files(files)
    assert (found.kind, found.other_formats, found.ignored) == (kind, others, others)
    if kind != "tiktoken":  # (a rank file we do not know needs its pattern named)
        tok = load_tokenizer_files(files)
        assert list(tok.special_tokens) == SPECIALS
        assert tok.encode("ab ab<|endoftext|>a") == [257, 258, 0, 1 + ord("a")]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a.gguf": GGUF_MAGIC, "b.gguf": GGUF_MAGIC},
         "a.gguf and b.gguf are 2 GGUF models, one tokenizer each: remove the one you do not "
         "want to open"),
        ({"a/tokenizer.json": HF["tokenizer.json"], "b/tokenizer.json": HF["tokenizer.json"],
          "c.json": HF["tokenizer.json"], **PICKLES},
         "a/tokenizer.json, b/tokenizer.json and c.json are 3 Hugging Face tokenizer.json "
         "files, one tokenizer each: remove the ones you do not want to open"),
        ({**PICKLES, "old_vocab.pkl": PICKLES["vocab.pkl"]},
         "vocab.pkl, merges.pkl and old_vocab.pkl are 3 pickles, and a tokenizer is one vocab "
         "+ merges pair: remove the pickles you do not want to open"),
        ({**GPT2, "vocab.json": GPT2["encoder.json"]},
         "encoder.json and vocab.json are 2 GPT-2 encoder.json files: remove the one you do "
         "not want to open"),
        ({**HF, "notes.txt": b"hello there", "LICENSE": b"MIT"},
         "notes.txt, LICENSE are not tokenizer files: remove them to open tokenizer.json"),
        ({**HF, "vocab.pkl": PICKLES["vocab.pkl"]},
         "vocab.pkl (a pickle) is half of a pair (vocab.pkl + merges.pkl, encoder.json + "
         "vocab.bpe): add the other half, or remove it to open tokenizer.json"),
    ],
    ids=["two GGUF", "three tokenizer.json", "three pickles", "two encoders", "strays", "half"],
)
def test_files_that_cannot_open_together_are_named_in_one_line(
    files: dict[str, bytes], message: str
) -> None:
    with pytest.raises(FormatError) as info:
        identify_files(files)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("old", "added", "opened"),
    [
        ({"a.gguf": GGUF_MAGIC}, {"b.gguf": GGUF_MAGIC + b"b"}, ["b.gguf"]),  # replaces
        (HF, PICKLES, ["merges.pkl", "vocab.pkl"]),  # (the newest, not the one saying most)
        ({"vocab.pkl": PICKLES["vocab.pkl"]}, {"merges.pkl": PICKLES["merges.pkl"]},
         ["merges.pkl", "vocab.pkl"]),  # completes the pair
        (HF, {"tokenizer_config.json": b"{}"}, ["tokenizer.json", "tokenizer_config.json"]),
        (HF, {"notes.txt": b"hello"}, ["notes.txt", "tokenizer.json"]),  # refused with it
        (HF, {}, ["tokenizer.json"]),  # a file taken away: what is left
    ],
    ids=["second GGUF", "second format", "pair", "companion", "junk", "removed"],
)
def test_files_added_to_an_upload_open_alone_when_they_are_a_tokenizer(
    old: dict[str, bytes], added: dict[str, bytes], opened: list[str]
) -> None:
    assert sorted(files_to_open({**old, **added}, added)) == opened


def test_malicious_pickle_is_refused_through_detection(tmp_path: Path) -> None:
    import os

    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):  # noqa: ANN204
            return (os.system, (f"touch {marker}",))

    files = {"vocab.pkl": pickle.dumps(Evil()), "merges.pkl": PICKLES["merges.pkl"]}
    with pytest.raises(UnsafePickleError, match="vocab.pkl: refused: the pickle asks for"):
        load_tokenizer_files(files)
    files = {"x.pkl": pickle.dumps(Evil()), "y.pkl": pickle.dumps(Evil())}
    with pytest.raises(FormatError):
        load_tokenizer_files(files)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# Loading and exporting (needs core.engine.tokenizer)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer_cls():  # noqa: ANN201
    return Tokenizer


@pytest.mark.parametrize("files", [PICKLES, GPT2, HF], ids=["pickles", "gpt2", "hf"])
def test_load_each_format(tokenizer_cls, files: dict[str, bytes]) -> None:  # noqa: ANN001
    tok = load_tokenizer_files(files, special_tokens=SPECIALS)
    assert tok.vocab == VOCAB and tok.merges == MERGES
    assert list(tok.special_tokens) == SPECIALS
    assert tok.encode("ab ab<|endoftext|>a") == [257, 258, 0, 1 + ord("a")]


def test_special_tokens_come_from_the_files(tokenizer_cls) -> None:  # noqa: ANN001
    for files in (PICKLES, GPT2, HF):
        assert list(load_tokenizer_files(files).special_tokens) == SPECIALS
        assert list(load_tokenizer_files(files, special_tokens=[]).special_tokens) == []


def test_hf_pattern_comes_from_the_file_unless_given(tokenizer_cls) -> None:  # noqa: ANN001
    files = {"tokenizer.json": dumps_hf_json(VOCAB, MERGES, SPECIALS, pattern="cl100k").encode()}
    assert load_tokenizer_files(files).pattern == "cl100k"
    assert load_tokenizer_files(files, pattern="o200k").pattern == "o200k"


def test_export_all_round_trips_through_detection(tokenizer_cls) -> None:  # noqa: ANN001
    from core.formats.detect import export_all

    tok = tokenizer_cls(VOCAB, MERGES, SPECIALS, name="tiny test")
    files = export_all(tok)
    assert {"vocab.pkl", "merges.pkl", "encoder.json", "vocab.bpe", "tokenizer.json"} <= set(files)
    assert all(isinstance(v, bytes) for v in files.values())
    groups = [
        {k: files[k] for k in ("vocab.pkl", "merges.pkl")},
        {k: files[k] for k in ("encoder.json", "vocab.bpe")},
        {"tokenizer.json": files["tokenizer.json"]},
    ]
    tiktoken_names = [k for k in files if k.endswith(".tiktoken")]
    if tiktoken_names:
        assert tiktoken_names == ["tiny_test.tiktoken"]
        groups.append({tiktoken_names[0]: files[tiktoken_names[0]]})
    for group in groups:
        # a rank file does not store its pattern: the user names it (gpt2, as exported)
        loaded = load_tokenizer_files(group, special_tokens=SPECIALS, pattern="gpt2")
        assert loaded.merges == tok.merges, sorted(group)
        assert loaded.encode("ab abc") == tok.encode("ab abc")
        if not tiktoken_names or tiktoken_names[0] not in group:
            assert loaded.vocab == tok.vocab, sorted(group)
            assert loaded.encode("ab<|endoftext|>") == tok.encode("ab<|endoftext|>")
        else:
            # a .tiktoken file stores no special tokens: ordinary tokens keep their IDs
            ordinary = {i: t for i, t in tok.vocab.items() if t != b"<|endoftext|>"}
            assert {i: t for i, t in loaded.vocab.items() if t != b"<|endoftext|>"} == ordinary


def test_genuine_gpt2_files_through_detection(tokenizer_cls, tiktoken_cache: Path) -> None:  # noqa: ANN001
    import tiktoken

    encoder, bpe = _find_gpt2_files(tiktoken_cache)
    tok = load_tokenizer_files({"encoder.json": encoder, "vocab.bpe": bpe})
    enc = tiktoken.get_encoding("gpt2")
    text = "Hello world<|endoftext|> and  more\n\n text 日本 🤖"
    assert tok.encode(text) == enc.encode(text, allowed_special="all")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"v.pkl": b"garbage", "merges.pkl": PICKLES["merges.pkl"]}, "v.pkl: not a valid pickle"),
        (
            {"vocab.pkl": PICKLES["vocab.pkl"], "merges.pkl": dumps_merges([(b"a", b"q")])},
            "merges.pkl: merge 0 (b'a', b'q'): b'aq' is not in the vocab",
        ),
        ({"tokenizer.json": b"{"}, "tokenizer.json: not valid JSON"),
        ({"encoder.json": b'{"a": 0', "vocab.bpe": BPE.encode()}, "encoder.json: not valid JSON"),
        (
            {"encoder.json": ENC.encode(), "vocab.bpe": b"#version: 0.2\na b\nab\n"},
            "vocab.bpe: line 3: expected two tokens separated by one space",
        ),
        ({"x.tiktoken": b"YQ== 0\nYg== zero\n"}, "x.tiktoken, line 2: the rank 'zero'"),
    ],
)
def test_bad_files_through_detection_name_file_and_place(
    tokenizer_cls, files: dict[str, bytes], message: str  # noqa: ANN001
) -> None:
    with pytest.raises(FormatError) as info:
        load_tokenizer_files(files)
    assert str(info.value).startswith(message)


# ---------------------------------------------------------------------------------------------
# An exporter that fails is reported (which format, which file, why), never swallowed
# ---------------------------------------------------------------------------------------------


def test_export_all_reports_a_failing_exporter_and_keeps_the_others(
    tokenizer_cls, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.formats import tiktoken_file
    from core.formats.detect import ExportFailure, export_all

    def broken(tokenizer: Tokenizer) -> bytes:
        raise FormatError("merge 0 (b'a', b'b'): its token's ID is not larger than its parts' IDs")

    monkeypatch.setattr(tiktoken_file, "tokenizer_to_tiktoken", broken)
    tok = tokenizer_cls(VOCAB, MERGES, SPECIALS, name="tiny test")
    files = export_all(tok)
    assert set(files) == {"vocab.pkl", "merges.pkl", "encoder.json", "vocab.bpe", "tokenizer.json"}
    assert files.failures == (
        ExportFailure("tiktoken rank file", ("tiny_test.tiktoken",),
                      "merge 0 (b'a', b'b'): its token's ID is not larger than its parts' IDs"),
    )
    assert files.failures[0].message == (
        "tiny_test.tiktoken (tiktoken rank file) is not offered: merge 0 (b'a', b'b'): its "
        "token's ID is not larger than its parts' IDs")
    # the formats that were written are complete and load back
    loaded = load_tokenizer_files({"tokenizer.json": files["tokenizer.json"]})
    assert loaded.vocab == tok.vocab and loaded.merges == tok.merges


def test_export_all_reports_every_failing_format(
    tokenizer_cls, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.formats import gpt2_files, hf_json
    from core.formats.detect import export_all

    def broken(what: str):
        def export(tokenizer: Tokenizer) -> dict[str, bytes]:
            raise FormatError(f"{what} cannot hold this tokenizer")
        return export

    monkeypatch.setattr(hf_json, "tokenizer_to_hf_json", broken("tokenizer.json"))
    monkeypatch.setattr(gpt2_files, "tokenizer_to_gpt2_files", broken("GPT-2 files"))
    files = export_all(tokenizer_cls(VOCAB, MERGES, SPECIALS, name="t"))
    assert set(files) == {"vocab.pkl", "merges.pkl", "t.tiktoken"}
    assert [(f.format, f.files, f.reason) for f in files.failures] == [
        ("GPT-2 files", ("encoder.json", "vocab.bpe"), "GPT-2 files cannot hold this tokenizer"),
        ("Hugging Face", ("tokenizer.json",), "tokenizer.json cannot hold this tokenizer"),
    ]


def test_export_all_result_is_still_a_plain_mapping(tokenizer_cls) -> None:
    import core
    from core.formats.detect import export_all

    files = export_all(tokenizer_cls(VOCAB, MERGES, SPECIALS))
    assert core.export_all is export_all
    assert isinstance(files, dict) and files.failures == ()
    assert dict(files) == files and pickle.loads(pickle.dumps(files)).failures == ()


def test_export_all_reports_a_real_tiktoken_failure(tokenizer_cls) -> None:
    from core.formats.detect import export_all

    # "ab" has ID 0, below its parts: tiktoken (which merges by ID) cannot express it
    vocab = {0: b"ab", **{1 + b: bytes([b]) for b in range(256)}}
    files = export_all(tokenizer_cls(vocab, [(b"a", b"b")], [], name="low ids"))
    assert {"vocab.pkl", "merges.pkl", "encoder.json", "vocab.bpe", "tokenizer.json"} == set(files)
    (failure,) = files.failures
    assert failure.files == ("low_ids.tiktoken",)
    assert failure.message.startswith(
        "low_ids.tiktoken (tiktoken rank file) is not offered: merge 0 (b'a', b'b'): its "
        "token's ID is not larger than its parts' IDs")


@pytest.mark.parametrize("name", ["tokenizer.json", "upload.bin"])
def test_a_json_file_never_walks_through_the_binary_readers(monkeypatch, name):
    """A file whose first byte is "{" is JSON: the GGUF, rank-file and SentencePiece
    sniffers are never asked (issue 37: an upload walks through fewer files)."""
    from core.formats import detect

    def refuse(*args, **kwargs):
        raise AssertionError("a binary reader was asked about a JSON file")

    for sniffer in ("looks_like_gguf", "looks_like_sentencepiece", "_is_rank_file"):
        monkeypatch.setattr(detect, sniffer, refuse)
    tok = load_tokenizer_files({name: HF["tokenizer.json"]})
    assert tok.encode(" a") == Tokenizer(VOCAB, MERGES, SPECIALS).encode(" a")

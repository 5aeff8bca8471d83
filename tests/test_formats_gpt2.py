"""GPT-2 encoder.json + vocab.bpe: the genuine files load, save back byte-identical, bad files
say what is wrong and where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.formats import dumps_gpt2, infer_special_tokens, loads_gpt2, loads_vocab_bpe


def _find_gpt2_files(cache: Path) -> tuple[bytes, bytes]:
    """tiktoken's cache names files by hash: pick encoder.json and vocab.bpe by content."""
    encoder = bpe = None
    for path in cache.iterdir():
        with open(path, "rb") as fh:
            head = fh.read(16)
        if head.startswith(b"{"):
            encoder = path.read_bytes()
        elif head.startswith(b"#version"):
            bpe = path.read_bytes()
    if encoder is None or bpe is None:
        raise AssertionError(f"GPT-2 encoder.json / vocab.bpe not found in {cache}")
    return encoder, bpe


@pytest.fixture(scope="module")
def gpt2_files(tiktoken_cache: Path) -> tuple[bytes, bytes]:
    return _find_gpt2_files(tiktoken_cache)


def test_genuine_gpt2_files_load(gpt2_files: tuple[bytes, bytes]) -> None:
    encoder, bpe = gpt2_files
    vocab, merges, specials = loads_gpt2(encoder, bpe)
    assert len(vocab) == 50257 and len(merges) == 50000
    assert specials == ["<|endoftext|>"]
    assert vocab[50256] == b"<|endoftext|>"
    assert vocab[262] == b" the" and vocab[198] == b"\n" and vocab[0] == b"!"
    assert merges[:3] == [(b" ", b"t"), (b" ", b"a"), (b"h", b"e")]
    # the GPT-2 vocab is bytes (IDs 0-255 in byte-map order) then one token per merge
    assert [vocab[256 + i] for i in range(50000)] == [a + b for a, b in merges]


def test_genuine_gpt2_files_match_tiktoken(gpt2_files: tuple[bytes, bytes]) -> None:
    import tiktoken

    vocab, merges, _ = loads_gpt2(*gpt2_files)
    enc = tiktoken.get_encoding("gpt2")
    assert {enc.decode_single_token_bytes(i): i for i in range(enc.n_vocab)} == {
        t: i for i, t in vocab.items()
    }


def test_genuine_gpt2_round_trip_is_byte_identical(gpt2_files: tuple[bytes, bytes]) -> None:
    encoder, bpe = gpt2_files
    vocab, merges, specials = loads_gpt2(encoder, bpe)
    enc2, bpe2 = dumps_gpt2(vocab, merges)
    assert bpe2.encode("utf-8") == bpe
    assert json.loads(enc2) == json.loads(encoder)
    assert loads_gpt2(enc2, bpe2) == (vocab, merges, specials)


ENC = json.dumps({"a": 0, "b": 1, "Ġ": 2, "ab": 3, "Ġab": 4})
BPE = "#version: 0.2\na b\nĠ ab\n"


def test_small_files_and_str_input() -> None:
    vocab, merges, specials = loads_gpt2(ENC, BPE.encode())
    assert vocab == {0: b"a", 1: b"b", 2: b" ", 3: b"ab", 4: b" ab"}
    assert merges == [(b"a", b"b"), (b" ", b"ab")]
    assert specials == []


def test_header_is_optional_and_crlf_accepted() -> None:
    assert loads_vocab_bpe("a b\r\nĠ ab\r\n") == [(b"a", b"b"), (b" ", b"ab")]


@pytest.mark.parametrize(
    ("encoder", "bpe", "message"),
    [
        ("{", BPE, "encoder.json: not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        ("[1, 2]", BPE, "encoder.json: expected a JSON object mapping token strings to IDs, got a list"),
        ('{"a": "0"}', BPE, "encoder.json: token 'a' has ID '0', not an integer"),
        ('{"a": 0, "b": 0}', BPE, "encoder.json: tokens 'a' and 'b' share ID 0"),
        ('{"model": {}, "version": "1.0"}', BPE, "encoder.json: this is a Hugging Face tokenizer.json"),
        (ENC, "#version: 0.2\na b\nĠab\n", "vocab.bpe: line 3: expected two tokens separated by one space"),
        (ENC, "#version: 0.2\na b\nĠ  ab\n", "vocab.bpe: line 3: expected two tokens separated by one space"),
        (ENC, "#version: 0.2\na b\n中 b\n", "vocab.bpe: line 3: '中' contains '中' (U+4E2D), which is not in GPT-2's byte-to-unicode map"),
        (ENC, "#version: 0.2\na b\na b\n", "vocab.bpe: line 3: 'a b' repeats line 2"),
        (ENC, "#version: 0.2\na b\nĠ ab\nb a\n", "vocab.bpe: line 4 (merge 2) (b'b', b'a'): b'ba' is not in the vocab"),
    ],
)
def test_bad_files_say_what_and_where(encoder: str, bpe: str, message: str) -> None:
    with pytest.raises(FormatError) as info:
        loads_gpt2(encoder, bpe)
    assert str(info.value).startswith(message)


def test_not_utf8_names_the_line() -> None:
    with pytest.raises(FormatError, match=r"vocab.bpe: not UTF-8 text \(bad byte 0xff on line 2\)"):
        loads_gpt2(ENC, b"#version: 0.2\n\xff b\n")


def test_special_tokens_outside_the_byte_map_survive() -> None:
    vocab = {0: b"<|end of text|>", 1: b"a", 2: "<|終|>".encode()}
    enc, bpe = dumps_gpt2(vocab, [])
    assert loads_gpt2(enc, bpe) == (vocab, [], ["<|end of text|>", "<|終|>"])


def test_infer_special_tokens_skips_bytes_and_merge_results() -> None:
    assert infer_special_tokens({0: b"a", 1: b"b", 2: b"ab", 3: b"<s>"}, [(b"a", b"b")]) == ["<s>"]


@st.composite
def bpe_models(draw: st.DrawFn) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """A random consistent vocab: all 256 bytes, then tokens built by random merges."""
    tokens = [bytes([i]) for i in range(256)]
    merges: list[tuple[bytes, bytes]] = []
    known = set(tokens)
    for _ in range(draw(st.integers(0, 30))):
        a = draw(st.sampled_from(tokens))
        b = draw(st.sampled_from(tokens))
        if (a, b) in merges:
            continue
        merges.append((a, b))
        if a + b not in known:
            known.add(a + b)
            tokens.append(a + b)
    offset = draw(st.integers(0, 3))
    vocab = {offset + i: t for i, t in enumerate(tokens)}
    return vocab, merges


@settings(max_examples=40, deadline=None, database=None)
@given(bpe_models())
def test_round_trip_property(model: tuple[dict[int, bytes], list[tuple[bytes, bytes]]]) -> None:
    vocab, merges = model
    loaded_vocab, loaded_merges, _ = loads_gpt2(*dumps_gpt2(vocab, merges))
    assert loaded_vocab == vocab and loaded_merges == merges

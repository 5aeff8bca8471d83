""".tiktoken rank files: parsing, errors with line numbers, ranks -> merges, export to tiktoken."""

from __future__ import annotations

import base64

import pytest

from core.errors import FormatError
from core.formats.tiktoken_file import (
    dump_tiktoken_ranks,
    load_tiktoken_ranks,
    ranks_to_merges,
    tokenizer_from_tiktoken,
    tokenizer_to_tiktoken,
)
from core.engine.tokenizer import Tokenizer
from tests.conftest import need_module

BYTES = {i: bytes([i]) for i in range(256)}


def b64(token: bytes) -> bytes:
    return base64.b64encode(token)


def test_round_trip_and_order():
    ranks = {b"b": 1, b"a": 0, b" the": 2}
    data = dump_tiktoken_ranks(ranks)
    assert data.splitlines()[0] == b64(b"a") + b" 0"
    assert load_tiktoken_ranks(data) == ranks
    assert load_tiktoken_ranks(data.decode() + "\n\n") == ranks  # str and blank lines are fine


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"YQ== 0\nYg==\n", "x.tiktoken, line 2: expected 'BASE64TOKEN RANK'"),
        (b"YQ== 0\n!!!! 1\n", "x.tiktoken, line 2: '!!!!' is not valid base64"),
        (b"YQ== 0\nYg== -1\n", "line 2: the rank '-1' is not a whole number"),
        (b"YQ== 0\nYQ== 1\n", "line 2: token b'a' appears twice"),
        (b"YQ== 0\nYg== 0\n", "line 2: rank 0 is used twice \\(also on line 1\\)"),
        (b"\n\n", "x.tiktoken: the file has no tokens"),
        (b"YQ== 0 extra\n", "line 1: expected .*found 3 field"),
    ],
)
def test_bad_files_say_line_and_problem(content, message):
    with pytest.raises(FormatError, match=message):
        load_tiktoken_ranks(content, name="x.tiktoken")


def test_ranks_to_merges_follows_bpe_with_lower_ranks():
    ranks = {b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"ab": 4, b"abc": 5}
    # "abc" could be (ab, c) or (a, bc); BPE with ranks < 5 merges bc first
    assert ranks_to_merges(ranks) == [(b"b", b"c"), (b"a", b"b"), (b"a", b"bc")]


def test_ranks_that_no_merge_order_can_build_are_refused():
    with pytest.raises(FormatError, match="e.g. b'abc' \\(rank 3\\), cannot be built"):
        ranks_to_merges({b"a": 0, b"b": 1, b"c": 2, b"abc": 3}, name="r.tiktoken")


def test_a_rank_file_out_of_merge_order_loads_and_encodes_by_rank_like_tiktoken():
    """Llama 3's case: b"abc" is built by no two lower-ranked tokens, yet tiktoken loads the
    file, and a pre-token "abc" is that token whole; inside a longer pre-token BPE joins by
    rank and never reaches it."""
    tiktoken = need_module("tiktoken")
    ranks = {bytes([i]): i for i in range(256)} | {b"abc": 256, b"bc": 257, b"xa": 258}
    tok = tokenizer_from_tiktoken(dump_tiktoken_ranks(ranks), pattern=r"\S+|\s+")
    enc = tiktoken.Encoding("t", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    for text in ["abc", "xabc", "abcabc", "bc abc xbc", "xa", "xxabcbc"]:
        assert tok.encode(text) == enc.encode_ordinary(text), text
    assert tok.whole_only == [b"abc"]
    assert tok.merges == [(b"b", b"c"), (b"x", b"a")]
    assert tok.parts_of(256) is None and tok.parts_of(257) == (257, 98, 99)


def test_tokenizer_from_tiktoken_needs_all_bytes_and_appends_specials():
    with pytest.raises(FormatError, match="single bytes 0x00"):
        tokenizer_from_tiktoken(dump_tiktoken_ranks({b"a": 0}))
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256}
    tok = tokenizer_from_tiktoken(dump_tiktoken_ranks(ranks), ["<|endoftext|>"], name="t")
    assert tok.merges == [(b"a", b"b")]
    assert tok.special_token_ids == {"<|endoftext|>": 257}
    assert tok.encode("ab<|endoftext|>") == [256, 257]
    assert load_tiktoken_ranks(tokenizer_to_tiktoken(tok)) == ranks


def test_export_refuses_ids_out_of_merge_order():
    vocab = dict(BYTES) | {256: b"abc", 257: b"ab"}
    tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")])
    with pytest.raises(FormatError, match="merge 1 .*not larger than its parts"):
        tokenizer_to_tiktoken(tok)


def test_export_loaded_by_tiktoken_gives_our_ids(tiktoken_cache):
    """A CS336-style tokenizer (specials first, then bytes, then merges) trained here, exported
    as .tiktoken and loaded by tiktoken, encodes exactly as ours."""
    import tiktoken

    from core.train import train_bpe

    corpus = (
        "the quick brown fox jumps over the lazy dog. 日本語のテキスト. "
        "low lower lowest newer newest wider\n\n  indented   code()<|endoftext|>"
    ) * 40
    vocab, merges = train_bpe([corpus], 400, ["<|endoftext|>"])
    tok = Tokenizer(vocab, merges, ["<|endoftext|>"])
    data = tokenizer_to_tiktoken(tok)
    enc = tiktoken.Encoding(
        "ours",
        pat_str=r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
        mergeable_ranks=load_tiktoken_ranks(data),
        special_tokens=tok.special_token_ids,
    )
    for text in [corpus[:2000], "the newest fox<|endoftext|>lowest   wider 日本", "x" * 50]:
        assert enc.encode(text, allowed_special="all") == tok.encode(text)


def test_specials_of_a_cs336_export_keep_their_ids_on_reload():
    """Specials sit at IDs 0..k-1 in a CS336 vocab; the .tiktoken file stores only the ranks
    from k on, so reloading gives the specials the free IDs below them again."""
    from core import Tokenizer, train_bpe
    from core.formats.tiktoken_file import tokenizer_from_tiktoken, tokenizer_to_tiktoken

    specials = ["<|endoftext|>", "<|pad|>"]
    vocab, merges = train_bpe(["hello world, hello there<|endoftext|>hi<|pad|>"], 270, specials)
    ours = Tokenizer(vocab, merges, specials)
    back = tokenizer_from_tiktoken(tokenizer_to_tiktoken(ours), specials)
    assert back.vocab == ours.vocab
    assert back.encode("hello<|pad|><|endoftext|>") == ours.encode("hello<|pad|><|endoftext|>") == [
        *ours.encode("hello"), 1, 0]

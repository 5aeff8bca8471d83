"""Tokenizer: BPE order, special tokens, streaming, decoding, errors, caches."""

from __future__ import annotations

import io
import pickle
import random
import tracemalloc

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core.engine.text_encoder as text_encoder
import core.engine.tokenizer as tokmod
from core import native
from core.engine.basics import utf8
from core.engine.bpe import merge
from core.errors import PlaygroundError
from core.engine.pretokenize import PATTERNS, ascii_pattern, compile_pattern, last_cut, split_on_specials
from core.engine.tokenizer import Tokenizer

BYTES = {i: bytes([i]) for i in range(256)}


def toy(merges, specials=None, *, pattern="gpt2", **kw) -> Tokenizer:
    """A tokenizer from merges alone: IDs 256.. follow the merge order."""
    vocab = dict(BYTES)
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return Tokenizer(vocab, merges, specials, pattern=pattern, **kw)


# Merges that fire often on English and on whitespace, so the stream tests exercise BPE.
MERGES = [
    (b" ", b"t"), (b"h", b"e"), (b" t", b"he"), (b"i", b"n"), (b" ", b" "), (b"  ", b"  "),
    (b"\n", b"\n"), (b"e", b"r"), (b" ", b"a"), (b"o", b"n"), (b"\xe4", b"\xb8"),
]  # fmt: skip
SPECIALS = ["<|endoftext|>", "<|a|>", "<|a|><|b|>"]


def reference_encode(tok: Tokenizer, text: str) -> list[int]:
    """The textbook pipeline with no caches, chunking or shortcuts."""
    out: list[int] = []
    for piece, special in split_on_specials(text, tok.special_tokens):
        if special:
            out.append(tok.special_token_ids[piece])
            continue
        for pretoken in compile_pattern(tok.pattern).findall(piece):
            out.extend(tok.bpe(utf8(pretoken)))
    return out


# ----------------------------------------------------------------------------------------
# BPE
# ----------------------------------------------------------------------------------------


def test_merges_apply_in_rank_order_not_list_scan_order():
    tok = toy([(b"b", b"c"), (b"a", b"b")])
    assert [tok.vocab[i] for i in tok.encode("abcde")] == [b"a", b"bc", b"d", b"e"]


def test_wikipedia_example_aaabdaaabac():
    # Z = aa, Y = ab, X = ZY: "aaabdaaabac" -> "XdXac"
    tok = toy([(b"a", b"a"), (b"a", b"b"), (b"aa", b"ab")])
    ids = tok.encode("aaabdaaabac")
    assert [tok.vocab[i] for i in ids] == [b"aaab", b"d", b"aaab", b"a", b"c"]
    assert tok.decode(ids) == "aaabdaaabac"


def test_overlapping_pair_merges_leftmost_first():
    tok = toy([(b"a", b"a")])
    assert [tok.vocab[i] for i in tok.encode("aaa")] == [b"aa", b"a"]


@pytest.mark.parametrize("text", ["", "hello world", "안녕하세요 👋 世界", "x" * 100_000, " " * 3000])
def test_round_trips(text):
    tok = toy(MERGES, SPECIALS)
    assert tok.decode(tok.encode(text)) == text
    assert tok.encode(text) == reference_encode(tok, text)


def test_long_pretoken_heap_path_matches_simple_path():
    tok = toy([(b"a", b"b"), (b"ab", b"ab"), (b"b", b"a"), (b"abab", b"a"), (b"a", b"a")])
    rng = random.Random(0)
    for _ in range(50):
        data = bytes(rng.choice(b"ab") for _ in range(rng.randint(2, 600)))
        ids = [tok.byte_ids[b] for b in data]
        simple = list(ids)
        # the naive loop: recompute every pair's rank after each merge
        ranks = tok.pair_ranks
        while len(simple) > 1:
            pairs = [(ranks.get((x, y), 1 << 62), k) for k, (x, y) in enumerate(zip(simple, simple[1:]))]
            r, k = min(pairs)
            if r == 1 << 62:
                break
            simple[k : k + 2] = [tok.merged_ids[r]]
        assert merge(list(ids), tok.pair_ranks, tok.merged_ids, heap=True) == simple
        assert tok.bpe(data) == simple  # the list path up to 256 bytes, the heap above


def test_ignore_merges_takes_a_whole_token_directly():
    # b"abc" is a token but these merges would never rebuild it from a, b, c
    vocab = dict(BYTES) | {256: b"bc", 257: b"ab", 258: b"abc"}
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")]
    assert Tokenizer(vocab, merges).encode("abc") == [97, 256]
    assert Tokenizer(vocab, merges, ignore_merges=True).encode("abc") == [258]


# ----------------------------------------------------------------------------------------
# Special tokens
# ----------------------------------------------------------------------------------------


def test_missing_special_token_is_appended_and_existing_one_reused():
    vocab = dict(BYTES) | {256: b"<|endoftext|>"}
    tok = Tokenizer(vocab, [], ["<|endoftext|>", "<|pad|>"])
    assert tok.special_token_ids == {"<|endoftext|>": 256, "<|pad|>": 257}
    assert tok.vocab[257] == b"<|pad|>"
    assert tok.encode("a<|pad|><|endoftext|>") == [97, 257, 256]
    assert tok.n_vocab == 258


def test_longest_special_wins_when_they_overlap():
    tok = toy([], SPECIALS)
    ids = tok.encode("x<|a|><|b|>y<|a|>")
    assert ids == [120, tok.special_token_ids["<|a|><|b|>"], 121, tok.special_token_ids["<|a|>"]]


def test_special_text_without_specials_is_ordinary_text():
    tok = toy([])
    assert tok.decode(tok.encode("<|endoftext|>")) == "<|endoftext|>"
    assert len(tok.encode("<|endoftext|>")) == 13


# ----------------------------------------------------------------------------------------
# Long text and streaming
# ----------------------------------------------------------------------------------------

ALPHABET = list(" \t\n\r\x0b\x0c\u00a0\u3000\u2028abcXYZ'sdmltvre.,!?/-_123中文🙂\u0301<|>")
PIECES = st.one_of(
    st.text(max_size=20),
    st.text(alphabet=st.sampled_from(ALPHABET), max_size=40),
    st.sampled_from(SPECIALS + ["<|a|", "<|", "|>", "<|endof", "  ", "\n\n", " \n ", "'s", "'S"]),
)
TEXTS = st.lists(PIECES, max_size=25).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
       pattern=st.sampled_from(list(PATTERNS)))  # fmt: skip
def test_encode_iterable_matches_encode_under_adversarial_chunkings(text, cuts, pattern):
    tok = toy(MERGES, SPECIALS, pattern=pattern)
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    expected = reference_encode(tok, text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text_encoder, "_STREAM_BUFFER", 1)  # look for a cut after every chunk
        assert list(tok.encode_iterable(chunks)) == expected
        assert list(tok.encode_iterable(iter(text))) == expected  # one character at a time
        mp.setattr(text_encoder, "_MAX_SEGMENT", 3)  # encode() cutting long text into segments
        assert tok.encode(text) == expected


@settings(max_examples=200, deadline=None)
@given(text=TEXTS, pattern=st.sampled_from(list(PATTERNS)))
def test_safe_cuts_split_pretokenization_exactly(text, pattern):
    """Every cut _last_cut proposes splits the pre-tokens exactly (the property the fast
    paths rely on), checked on the regex directly."""
    rx = compile_pattern(pattern)
    whole = rx.findall(text)
    hi = len(text) - 1
    while hi > 0:
        cut = last_cut(text, hi)
        if cut <= 0:
            break
        assert rx.findall(text[:cut]) + rx.findall(text[cut:]) == whole, cut
        hi = cut - 1


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, pattern=st.sampled_from(list(PATTERNS)))
def test_ascii_fast_pretokenizer_agrees_with_regex(text, pattern):
    tok = toy([], pattern=pattern)
    assert tok._findall(text) == compile_pattern(pattern).findall(text)
    ascii_text = text.encode("ascii", "ignore").decode()
    assert ascii_pattern(pattern).findall(ascii_text) == compile_pattern(pattern).findall(ascii_text)


ASCII_TEXTS = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(max_codepoint=127), max_size=12),
        st.sampled_from(["'s", "'S", "'ll", "'VE", " '", "HTTPServer", "x'd", " \n", "\r\n",
                         "  ", "   ", "\t ", ".\n", "/\n", "!/", "1234567", " 12", "\x1c"]),
    ),
    max_size=30,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=ASCII_TEXTS, pattern=st.sampled_from(list(PATTERNS)))
def test_possessive_ascii_patterns_split_ascii_like_regex(text, pattern):
    """The `re` patterns (possessive quantifiers, spelled-out classes) on every ASCII
    character, including the separators \\x1c-\\x1f that `re` but not `regex` calls space."""
    assert ascii_pattern(pattern).findall(text) == compile_pattern(pattern).findall(text)


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=6), pattern=st.sampled_from(["gpt2", "o200k"]))
def test_warm_and_evicting_cache_gives_the_same_ids(texts, pattern):
    """Encoding the same texts again (hits) with a tiny cache (evictions) changes nothing."""
    tok = toy(MERGES, SPECIALS, pattern=pattern, cache_size=64)
    for _ in range(3):
        for text in texts:
            assert tok.encode(text) == reference_encode(tok, text)


@pytest.mark.parametrize("stream_cache", [1000, tokmod.STREAM_CACHE_SIZE])
def test_encode_iterable_reads_a_file_lazily_with_bounded_memory(stream_cache):
    tok = toy(MERGES, SPECIALS)
    rng = random.Random(1)
    words = ["the", "then", "in", "there", "  ", "\n", "中文", "<|endoftext|>", "x" * 30]
    text = " ".join(rng.choice(words) + str(rng.randint(0, 99999)) for _ in range(60_000))
    expected = tok.encode(text)
    tok.clear_cache()
    source = io.StringIO(text)  # (its buffer is a copy of the text: made before tracing)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        count = 0
        checksum = 0
        for i in tok.encode_iterable(source, cache_size=stream_cache):
            count += 1
            checksum = (checksum * 31 + i) % 1_000_000_007
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    exp_sum = 0
    for i in expected:
        exp_sum = (exp_sum * 31 + i) % 1_000_000_007
    assert (count, checksum) == (len(expected), exp_sum)
    assert len(text) > 600_000
    # ~60k distinct pre-tokens, far more than either cache holds: the stream's private
    # cache is all that grows (~150 bytes an entry), and the tokenizer's own stays empty
    limit = 1_500_000 + 200 * stream_cache  # buffers (64k chars, their IDs) + entries
    assert peak < limit, f"encode_iterable grew memory by {peak:,} bytes (limit {limit:,})"
    assert len(tok._pretoken_cache) == 1  # just the "" entry: streams never grow it


def test_stream_reads_the_shared_cache_without_growing_it():
    tok = toy(MERGES, SPECIALS)
    text = "the then there in the then " * 50
    expected = tok.encode(text)  # fills the shared cache
    before = dict(tok._pretoken_cache)
    assert list(tok.encode_iterable([text], cache_size=0)) == expected
    assert dict(tok._pretoken_cache) == before
    with pytest.raises(PlaygroundError, match="cache_size must be a whole number"):
        tok.encode_iterable([text], cache_size=-1)  # at the call, before any iteration


def test_encode_iterable_refuses_bytes_with_a_hint():
    tok = toy([])
    with pytest.raises(PlaygroundError, match="item 1.*encoding='utf-8'"):
        list(tok.encode_iterable(["ok", b"bytes"]))


def test_cache_is_bounded():
    tok = toy(MERGES, cache_size=50)
    text = " ".join(f"w{i}" for i in range(5000))
    assert tok.encode(text) == reference_encode(tok, text)
    assert len(tok._pretoken_cache) <= 50
    custom = toy(MERGES, pattern=r"\w+|\s+|[^\w\s]+", cache_size=50)
    assert custom.encode(text) == reference_encode(custom, text)
    assert len(custom._pretoken_cache) <= 50


def test_lone_surrogates_encode_like_tiktoken_as_replacement_chars():
    tok = toy([])
    assert tok.decode(tok.encode("a\ud800b")) == "a\ufffdb"


# ----------------------------------------------------------------------------------------
# Decoding
# ----------------------------------------------------------------------------------------


def test_decode_replaces_invalid_utf8_and_unknown_ids():
    tok = toy([(b"\xe4", b"\xb8")])
    zhong = tok.encode("中")
    assert tok.decode(zhong) == "中"
    assert tok.decode(zhong[:1]) == "\ufffd"  # b"\xe4\xb8": one unfinished character
    assert tok.decode([104, 999_999, 105]) == "h\ufffdi"
    assert tok.decode([104, -1, 105]) == "h\ufffdi"
    assert tok.decode(zhong[:1] + [999_999] + [97]) == "\ufffd\ufffda"
    assert tok.decode((i for i in [104, 105])) == "hi"
    assert tok.decode([]) == ""
    assert tok.decode([2**40, 0x110000, 104]) == "\ufffd\ufffdh"


def _reference_decode(tok: Tokenizer, ids: list[int]) -> str:
    """One ID at a time: an unknown ID is one 0xFF byte (one U+FFFD, ending any open character)."""
    return b"".join(tok.vocab.get(i, b"\xff") for i in ids).decode("utf-8", "replace")


@settings(max_examples=100, deadline=None)
@given(
    ids=st.lists(
        st.one_of(st.integers(0, 262), st.integers(-3, 400), st.sampled_from([2**63, 2**70])),
        max_size=3 * native._JOIN_CHUNK + 2,  # several chunks, and a last chunk of 1 or 2
    ),
    gap=st.booleans(),
)
def test_decode_equals_one_id_at_a_time_across_chunks(ids, gap):
    """The chunked fast path and its fallback agree with the textbook decode for any ints:
    negative (never counted from the end), past the vocab, in a gap, at any position."""
    vocab = dict(BYTES) | {256: "中".encode()[:2], 257: b"the", 260: b"\xb8\xad"}
    if gap:
        vocab |= {262: b" x"}  # IDs 258, 259 and 261 are gaps
    tok = Tokenizer(vocab, [])
    assert tok.decode(ids) == _reference_decode(tok, ids)


def test_decode_flags_a_bad_item_deep_in_a_long_list():
    tok = toy([])
    ids = [104] * (native._JOIN_CHUNK + 5)
    assert tok.decode(ids + [-7]) == "h" * len(ids) + "\ufffd"
    with pytest.raises(PlaygroundError, match=f"item {len(ids)} of the IDs is '7'"):
        tok.decode(ids + ["7"])
    with pytest.raises(PlaygroundError, match=f"ID -7 at index {len(ids)}"):
        tok.decode_bytes(ids + [-7])


def test_decode_treats_bools_as_ints_like_tiktoken():
    tok = toy([])
    assert tok.decode([True, False, 104]) == "\x01\x00h"


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([104, "105"], "item 1 of the IDs is '105' \\(str\\)"),
        ([104, 1.0], "item 1 of the IDs is 1.0 \\(float\\)"),
        ([None], "item 0 of the IDs is None"),
    ],
)
def test_decode_names_a_non_integer_item_and_its_position(ids, message):
    tok = toy([])
    with pytest.raises(PlaygroundError, match=message):
        tok.decode(ids)


def test_decode_rejects_a_string_and_decode_bytes_rejects_unknown_ids():
    tok = toy([])
    with pytest.raises(PlaygroundError, match="parse_ids"):
        tok.decode("1 2 3")
    with pytest.raises(PlaygroundError, match="ID 300 at index 1 is not in this vocabulary"):
        tok.decode_bytes([104, 300])
    assert tok.decode_bytes([104, 105]) == b"hi"


# ----------------------------------------------------------------------------------------
# Construction, files, errors
# ----------------------------------------------------------------------------------------


def test_save_and_from_files_round_trip(tmp_path):
    tok = toy(MERGES, ["<|endoftext|>"])
    tok.save(tmp_path / "vocab.pkl", tmp_path / "merges.pkl")
    again = Tokenizer.from_files(tmp_path / "vocab.pkl", tmp_path / "merges.pkl", ["<|endoftext|>"])
    assert again.vocab == tok.vocab and again.merges == tok.merges
    text = "the then<|endoftext|> in 中"
    assert again.encode(text) == tok.encode(text)


def test_from_files_never_runs_code_from_a_pickle(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    (tmp_path / "vocab.pkl").write_bytes(pickle.dumps(Evil()))
    (tmp_path / "merges.pkl").write_bytes(pickle.dumps([]))
    with pytest.raises(PlaygroundError, match="refused"):
        Tokenizer.from_files(tmp_path / "vocab.pkl", tmp_path / "merges.pkl")


def test_constructor_errors_say_what_is_wrong():
    with pytest.raises(PlaygroundError, match="lacks single-byte tokens for 1 byte.*0xff"):
        Tokenizer({i: bytes([i]) for i in range(255)}, [])
    with pytest.raises(PlaygroundError, match="merge 0 .*not in the vocabulary"):
        Tokenizer(dict(BYTES), [(b"a", b"b")])
    with pytest.raises(PlaygroundError, match="non-empty string"):
        Tokenizer(dict(BYTES), [], [""])
    with pytest.raises(PlaygroundError, match="not a valid regex"):
        Tokenizer(dict(BYTES), [], pattern="(")
    with pytest.raises(PlaygroundError, match="encode takes a str, not bytes"):
        toy([]).encode(b"abc")


def test_custom_pattern_is_used():
    tok = toy([], pattern=r"\d|\D+")
    assert [tok.vocab[i] for i in tok.encode("ab12")] == [b"a", b"b", b"1", b"2"]
    assert regex.compile(tok.pretoken_regex.pattern).findall("ab12") == ["ab", "1", "2"]


# ----------------------------------------------------------------------------------------
# Pinned by mutation testing (benchmarks/mutation.sh core/engine/tokenizer.py tests/test_tokenizer.py)
# ----------------------------------------------------------------------------------------


def error_message(call, *args, **kw) -> str:
    """The message of the PlaygroundError ``call(*args, **kw)`` raises."""
    with pytest.raises(PlaygroundError) as info:
        call(*args, **kw)
    return str(info.value)


def test_a_merged_token_merges_again_with_either_neighbour():
    # (a, b) then (ab, c): the new token's RIGHT pair must be ranked after the merge;
    # (b, c) then (a, bc): its LEFT pair. Short pre-tokens, then 300 bytes (the heap path).
    right = toy([(b"a", b"b"), (b"ab", b"c")])
    left = toy([(b"b", b"c"), (b"a", b"bc")])
    for tok in (right, left):
        assert tok.encode("abc") == [257]
        assert tok.encode("xabc") == [120, 257]
        assert tok.encode("abc" * 100) == [257] * 100


def test_special_tokens_get_consecutive_new_ids_and_repeats_are_skipped():
    tok = Tokenizer(dict(BYTES), [], ["<|a|>", "<|a|>", "<|b|>", "<|c|>"])
    assert tok.special_tokens == ["<|a|>", "<|b|>", "<|c|>"]
    assert tok.special_token_ids == {"<|a|>": 256, "<|b|>": 257, "<|c|>": 258}
    assert tok.encode("<|c|>x<|b|>") == [258, 120, 257]
    assert tok.n_vocab == 259


def test_encode_ordinary_treats_special_tokens_as_text():
    tok = toy(MERGES, SPECIALS)
    text = "the<|endoftext|> in<|a|>"
    assert tok.encode_ordinary(text) == reference_encode(toy(MERGES), text)
    assert tok.encode_ordinary("<|a|>") == [60, 124, 97, 124, 62]
    assert tok.encode_ordinary("") == []
    assert error_message(tok.encode_ordinary, b"x") == (
        "encode takes a str, not bytes (decode bytes with .decode('utf-8') first)")


def test_encode_type_errors_exactly():
    tok = toy([])
    assert error_message(tok.encode, b"abc") == (
        "encode takes a str, not bytes (decode bytes with .decode('utf-8') first)")
    assert error_message(tok.encode, 5) == "encode takes a str, not int"
    assert error_message(tok.encode, None) == "encode takes a str, not NoneType"


def test_detail_methods_describe_this_tokenizer():
    tok = toy([(b"a", b"b")], ["<|x|>"])
    assert [(t.id, t.token, t.is_special) for t in tok.encode_details("ab<|x|>").tokens] == [
        (256, b"ab", False), (257, b"<|x|>", True)]
    assert [(s.rank, s.after) for s in tok.merge_trace("aab")] == [(0, [b"a", b"ab"])]
    assert tok.decode_details([256, 999]).text == "ab\ufffd"
    tree = tok.merge_tree(256)
    assert (tree.id, tree.rank, tree.left.token, tree.right.token) == (256, 0, b"a", b"b")


def test_repr_name_and_cache_size_defaults():
    tok = toy([(b"a", b"b")], ["<|x|>"])
    assert repr(tok) == (
        "Tokenizer(name='', n_vocab=258, merges=1, special_tokens=['<|x|>'], pattern='gpt2')")
    assert toy([], name="mine").name == "mine"
    assert tok.cache_size == tokmod.DEFAULT_CACHE_SIZE
    assert toy([], cache_size=0).cache_size == 0
    assert toy([], cache_size=-5).cache_size == 0


def test_merge_tables_by_rank():
    tok = toy([(b"a", b"b"), (b"ab", b"c"), (b"a", b"b")])  # a repeated pair keeps rank 0
    assert tok.merge_pair_ids == ((97, 98), (256, 99), (97, 98))
    assert tok.merged_ids == (256, 257, 256)  # vocab 258 repeats b"ab": the lowest ID wins
    assert dict(tok.pair_ranks) == {(97, 98): 0, (256, 99): 1}


def test_constructor_error_messages_exactly():
    assert error_message(Tokenizer, {}, []) == (
        "the vocabulary lacks single-byte tokens for 256 byte(s) (0x00, 0x01, 0x02, 0x03, "
        "0x04, 0x05, 0x06, 0x07, ...); a byte-level BPE vocabulary holds all 256 bytes so "
        "that any text can be encoded.")
    assert error_message(Tokenizer, {i: bytes([i]) for i in range(247)}, []) == (
        "the vocabulary lacks single-byte tokens for 9 byte(s) (0xf7, 0xf8, 0xf9, 0xfa, "
        "0xfb, 0xfc, 0xfd, 0xfe, ...); a byte-level BPE vocabulary holds all 256 bytes so "
        "that any text can be encoded.")
    assert error_message(Tokenizer, {i: bytes([i]) for i in range(248)}, []) == (
        "the vocabulary lacks single-byte tokens for 8 byte(s) (0xf8, 0xf9, 0xfa, 0xfb, "
        "0xfc, 0xfd, 0xfe, 0xff); a byte-level BPE vocabulary holds all 256 bytes so that "
        "any text can be encoded.")

    def merge_error(extra: dict[int, bytes], merge: tuple[bytes, bytes]) -> str:
        return error_message(Tokenizer, dict(BYTES) | extra, [merge])

    tail = ", which is not in the vocabulary; every merge's parts and result must be tokens."
    # the left part missing (the right part and the result are tokens)
    assert merge_error({256: b"c", 257: b"abc"}, (b"ab", b"c")) == (
        "merge 0 (b'ab', b'c') uses b'ab'" + tail)
    # the right part missing
    assert merge_error({256: b"cab"}, (b"c", b"ab")) == "merge 0 (b'c', b'ab') uses b'ab'" + tail
    # only the result missing
    assert merge_error({}, (b"a", b"b")) == "merge 0 (b'a', b'b') uses b'ab'" + tail
    assert merge_error({256: b"cd"}, (b"cd", b"e")) == "merge 0 (b'cd', b'e') uses b'cde'" + tail


def test_vocab_validation_messages_exactly():
    assert error_message(Tokenizer, [b"a"], []) == (
        "vocab must be a dict of token ID -> bytes, not list")
    for key in (-1, True, "1", 2.0):  # (alone: True and 2.0 equal keys 1 and 2 of BYTES)
        assert error_message(Tokenizer, {key: b"x"}, []) == (
            f"vocab key {key!r} is not a token ID (an integer >= 0)")
    for token in (b"", "ab", None):
        assert error_message(Tokenizer, dict(BYTES) | {256: token}, []) == (
            f"vocab[256] is {token!r}; every token must be non-empty bytes")


def test_from_files_passes_specials_pattern_and_name(tmp_path):
    tok = toy(MERGES, ["<|endoftext|>"])
    vocab_path, merges_path = tmp_path / "vocab.pkl", tmp_path / "merges.pkl"
    tok.save(vocab_path, merges_path)
    again = Tokenizer.from_files(vocab_path, merges_path, ["<|endoftext|>"], pattern="o200k",
                                 name="mine")
    assert (again.pattern, again.name) == ("o200k", "mine")
    assert again.special_token_ids == {"<|endoftext|>": tok.special_token_ids["<|endoftext|>"]}
    assert again.encode("don't<|endoftext|>") == reference_encode(again, "don't<|endoftext|>")
    plain = Tokenizer.from_files(vocab_path, merges_path)
    assert (plain.pattern, plain.name, plain.special_tokens) == ("gpt2", "", [])


def test_the_cache_holds_pretokens_up_to_256_chars_and_never_exceeds_its_size():
    tok = toy([])
    assert dict(tok._pretoken_cache) == {"": ()}  # only the empty pre-token, until used
    assert tok.pretoken_ids("") == ()
    assert tok.pretoken_ids("x" * 256) == (120,) * 256
    assert tok.pretoken_ids("y" * 257) == (121,) * 257
    assert set(tok._pretoken_cache) == {"", "x" * 256}  # the longer one is not kept
    tok.clear_cache()
    assert dict(tok._pretoken_cache) == {"": ()}
    small = toy([], cache_size=3)
    for word in "abcdefg":
        assert small.pretoken_ids(word) == (ord(word),)
        assert len(small._pretoken_cache) <= 3


def test_encode_iterable_of_a_str_encodes_it_in_one_go():
    tok = toy(MERGES, SPECIALS)
    text = "the <|endoftext|>then\n in"
    assert list(tok.encode_iterable(text)) == reference_encode(tok, text)
    assert list(tok.encode_iterable(text, cache_size=0)) == reference_encode(tok, text)


def test_encode_iterable_messages_exactly():
    tok = toy([])
    assert error_message(lambda: list(tok.encode_iterable(["ok", b"bytes"]))) == (
        "encode_iterable got bytes at item 1; it takes strings (open text files with "
        "encoding='utf-8', not 'rb').")
    for size in (True, "10", 2.5, -1):
        assert error_message(tok.encode_iterable, ["ok"], cache_size=size) == (
            f"cache_size must be a whole number of entries >= 0, not {size!r}")


@pytest.mark.parametrize("specials", [None, ["<|a b|>"]], ids=["no-specials", "spaced-special"])
@pytest.mark.parametrize(
    "text",
    ["<|a b|>" + " y" * 12, "x <|a b|> y <|a b|>" + " z" * 10, "ab cd ef\ngh  ij" * 3,
     "q <|a b" + "|> r" * 5],
)
def test_stream_cuts_only_where_nothing_can_straddle(specials, text):
    """Safe cuts with and without special tokens, and with a special token that holds a
    space (a place where ordinary text could be cut): never inside it, complete or not."""
    tok = toy(MERGES, specials)
    expected = reference_encode(tok, text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text_encoder, "_STREAM_BUFFER", 1)  # look for a cut after every character
        assert list(tok.encode_iterable(iter(text))) == expected
        assert list(tok.encode_iterable([text[:5], text[5:9], text[9:]])) == expected


SPACED_SPECIALS = ["<|a b|>", "<|a b|> c", "x\ny"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(st.one_of(PIECES, st.sampled_from(SPACED_SPECIALS + ["<|a", " b|>", "a b"])),
                  max_size=25).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    specials=st.sampled_from([None, SPACED_SPECIALS]),
)
def test_encode_iterable_matches_encode_without_specials_or_with_spaced_ones(text, cuts, specials):
    tok = toy(MERGES, specials)
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    expected = reference_encode(tok, text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text_encoder, "_STREAM_BUFFER", 1)
        assert list(tok.encode_iterable(chunks)) == expected
        assert list(tok.encode_iterable(iter(text))) == expected


def test_decode_messages_exactly():
    tok = toy([])
    for ids, kind in (("1 2 3", "str"), (b"\x01", "bytes")):
        for call in (tok.decode, tok.decode_bytes):
            assert error_message(call, ids) == (
                f"decode takes a list of token IDs, not {kind}; use parse_ids() to read IDs "
                "typed as text")
    assert error_message(tok.decode_bytes, [104, 300]) == (
        "ID 300 at index 1 is not in this vocabulary (IDs run from 0 to 255); decode() shows "
        "such IDs as U+FFFD instead.")


def test_decode_gaps_and_out_of_range_ints_in_the_fast_path(monkeypatch):
    """Any ints within the padded tables (valid, in a gap, negative, up to 2x past the end)
    decode in C; the per-item loop (which checks each item's type) is only for bad items."""
    vocab = dict(BYTES) | {258: b"xy"}  # IDs 256 and 257 are gaps
    tok = Tokenizer(vocab, [])

    def per_item(item, index):
        raise AssertionError(f"per-item fallback ran for item {index} ({item!r})")

    monkeypatch.setattr(tokmod, "check_id", per_item)
    assert tok.decode([104, 256, 258, -1, 300, 105]) == "h\ufffdxy\ufffd\ufffdi"
    assert tok.decode([257]) == "\ufffd"
    assert tok.decode_bytes([104, 258, 105]) == b"hxyi"
    assert tok.decode_bytes([258]) == b"xy"
    long = [104] * (native._JOIN_CHUNK + 1)  # two chunks, the last of one ID
    assert tok.decode(long) == "h" * len(long)
    assert tok.decode_bytes(long) == b"h" * len(long)


def test_stream_takes_pretokens_from_the_shared_cache_before_running_bpe():
    tok = toy(MERGES, SPECIALS)
    text = "the then there in the then "
    expected = tok.encode(text)  # every pre-token of the text is now in the shared cache

    def no_bpe(data):
        raise AssertionError(f"BPE ran for {data!r}, which the shared cache holds")

    tok.bpe = no_bpe
    assert list(tok.encode_iterable([text])) == expected
    assert list(tok.encode_iterable([text], cache_size=0)) == expected


def test_a_stray_huge_id_is_refused_before_any_table_that_long() -> None:
    """One ID of 10**12 in a vocab (or given to a special token) would ask for a list that
    long: refused with a message, nothing allocated."""
    from core.errors import PlaygroundError

    base = {i: bytes([i]) for i in range(256)}
    with pytest.raises(PlaygroundError, match="largest ID is 1,000,000,000,000 for 257 tokens"):
        Tokenizer(base | {10**12: b"xy"}, [])
    with pytest.raises(PlaygroundError, match="largest ID is 1,000,000,000,000"):
        Tokenizer(base, [], special_tokens={"<|x|>": 10**12})
    # gaps as real vocabs have them are fine (cl100k_base leaves 15 IDs unused)
    assert Tokenizer(base | {300: b"ab"}, []).n_vocab == 301
    assert Tokenizer(base | {50_256: b"ab"}, []).n_vocab == 50_257  # a replay keeps GPT-2's IDs

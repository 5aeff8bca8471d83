"""UI details: spans, partial UTF-8, groups, merge traces and trees, decode blame, parse_ids."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine.details import (
    MAX_PARSED_IDS,
    _utf8_step,
    decode_details,
    encode_details,
    merge_trace,
    merge_tree,
    parse_ids,
)
from core.errors import PlaygroundError
from core.formats.presets import load_preset
from core.engine.tokenizer import Tokenizer

BYTES = {i: bytes([i]) for i in range(256)}
MERGES = [(b"\xe4", b"\xb8"), (b" ", b"w"), (b"o", b"r"), (b" w", b"or"), (b"l", b"d")]


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    vocab = dict(BYTES)
    for a, b in MERGES:
        vocab[len(vocab)] = a + b
    return Tokenizer(vocab, MERGES, ["<|endoftext|>"])


@pytest.fixture(scope="module")
def gpt2(tiktoken_cache) -> Tokenizer:
    return load_preset("gpt2")


# ----------------------------------------------------------------------------------------
# encode_details
# ----------------------------------------------------------------------------------------


def test_encode_details_spans_partial_flags_and_groups(tok):
    d = encode_details(tok, "中 world<|endoftext|>é")
    assert [t.id for t in d.tokens] == tok.encode("中 world<|endoftext|>é")
    rows = [(t.token, t.start, t.end, t.partial, t.group, t.pretoken, t.is_special) for t in d.tokens]
    assert rows == [
        (b"\xe4\xb8", 0, 1, True, 0, 0, False),
        (b"\xad", 0, 1, True, 0, 0, False),
        (b" wor", 1, 5, False, 1, 1, False),
        (b"ld", 5, 7, False, 2, 1, False),
        (b"<|endoftext|>", 7, 20, False, 3, 2, True),
        (b"\xc3", 20, 21, True, 4, 3, False),
        (b"\xa9", 20, 21, True, 4, 3, False),
    ]
    assert d.pretokens == [(0, 1), (1, 7), (7, 20), (20, 21)]
    assert (d.n_chars, d.n_bytes, d.n_tokens) == (21, 3 + 6 + 13 + 2, 7)
    assert d.tokens[0].text == "\ufffd"


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=60))
def test_encode_details_agrees_with_encode_and_covers_the_text(gpt2, text):
    d = encode_details(gpt2, text)
    assert [t.id for t in d.tokens] == gpt2.encode(text)
    assert b"".join(t.token for t in d.tokens) == text.encode()
    # pre-tokens tile the text; every token lies inside its pre-token
    assert [s for s, _ in d.pretokens] == [0, *[e for _, e in d.pretokens]][: len(d.pretokens)]
    assert not d.pretokens or d.pretokens[-1][1] == len(text)
    for t in d.tokens:
        start, end = d.pretokens[t.pretoken]
        assert start <= t.start < t.end <= end
    # a group's tokens make whole characters: their bytes decode cleanly
    groups: dict[int, bytes] = {}
    for t in d.tokens:
        groups[t.group] = groups.get(t.group, b"") + t.token
    assert all(g.decode("utf-8") for g in groups.values())


# ----------------------------------------------------------------------------------------
# merge_trace / merge_tree
# ----------------------------------------------------------------------------------------


def test_merge_trace_lists_merges_with_ranks(tok):
    steps = merge_trace(tok, " world")
    assert [(s.rank, s.pair, s.merged) for s in steps] == [
        (1, (b" ", b"w"), b" w"),
        (2, (b"o", b"r"), b"or"),
        (3, (b" w", b"or"), b" wor"),
        (4, (b"l", b"d"), b"ld"),
    ]
    assert steps[0].before == [b" ", b"w", b"o", b"r", b"l", b"d"]
    assert steps[-1].after == [b" wor", b"ld"]
    assert merge_trace(tok, "<|endoftext|>") == []
    assert merge_trace(tok, "x") == []


@pytest.mark.parametrize("pretoken", [" tokenization", "Hello", " 中文", "1234", "   "])
def test_merge_trace_ends_in_the_encoding(gpt2, pretoken):
    steps = merge_trace(gpt2, pretoken)
    final = steps[-1].after if steps else [bytes([b]) for b in pretoken.encode()]
    assert [gpt2.vocab[i] for i in gpt2.encode(pretoken)] == final
    assert [s.rank for s in steps] == sorted(s.rank for s in steps)


def test_merge_tree_goes_down_to_single_bytes(gpt2):
    tid = gpt2.encode(" tokenization")[0]
    tree = merge_tree(gpt2, tid)

    def leaves(node):
        if node.left is None:
            return [node.token]
        assert node.left.token + node.right.token == node.token
        assert node.rank is not None and node.left.id != node.id
        return leaves(node.left) + leaves(node.right)

    assert b"".join(leaves(tree)) == gpt2.vocab[tid]
    assert all(len(leaf) == 1 for leaf in leaves(tree))
    special = merge_tree(gpt2, 50256)
    assert (special.token, special.rank, special.left) == (b"<|endoftext|>", None, None)
    with pytest.raises(PlaygroundError, match="ID 99999 is not in this vocabulary"):
        merge_tree(gpt2, 99999)


# ----------------------------------------------------------------------------------------
# decode_details
# ----------------------------------------------------------------------------------------


def test_decode_details_blames_replacements_on_their_ids(tok):
    zhong = tok.encode("中")  # [b"\xe4\xb8", b"\xad"]
    d = decode_details(tok, zhong + [ord("a")])
    assert d.text == "中a" and d.replacements == []
    d = decode_details(tok, [zhong[0], ord("a"), 99999, zhong[1]])
    assert d.text == "\ufffda\ufffd\ufffd" == tok.decode([zhong[0], ord("a"), 99999, zhong[1]])
    assert d.replacements == [(0, [0]), (2, [2]), (3, [3])]
    assert [p.out_of_vocab for p in d.pieces] == [False, False, True, False]
    assert d.pieces[0].hex == "e4 b8" and d.pieces[2].hex == "" and d.pieces[2].token is None
    # a genuine U+FFFD in the text is not a replacement
    assert decode_details(tok, tok.encode("\ufffd")).replacements == []


def test_decode_details_one_replacement_across_two_tokens(tok):
    # b"\xe4\xb8" then b"a": the unfinished character is one U+FFFD from piece 0 only;
    # b"\xf0\x9f" + b"\x98" (3 of 4 bytes) is one U+FFFD blamed on both pieces
    ids = [tok.encode("中")[0]] + [0xF0, 0x9F, 0x98, ord("a")]
    d = decode_details(tok, ids)
    assert d.text == tok.decode(ids) == "\ufffd\ufffda"
    assert d.replacements == [(0, [0]), (1, [1, 2, 3])]


def test_decode_details_rejects_non_integers(tok):
    with pytest.raises(PlaygroundError, match="item 1 of the IDs is 'x'"):
        decode_details(tok, [1, "x"])


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=40))
def test_utf8_walk_matches_pythons_decoder(data):
    out, i = [], 0
    while i < len(data):
        n, valid = _utf8_step(data, i)
        out.append(data[i : i + n].decode() if valid else "\ufffd")
        i += n
    assert "".join(out) == data.decode("utf-8", "replace")


# ----------------------------------------------------------------------------------------
# parse_ids
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["15496 11 995", "15496,11,995", "15496, 11,\n995", "[15496, 11, 995]", " [15496 11 995 "]
)
def test_parse_ids_accepts_common_layouts(text):
    assert parse_ids(text) == ([15496, 11, 995], [])


def test_parse_ids_reports_bad_items_with_positions():
    ids, problems = parse_ids("1 2 abc 4.5 -3 99999999999999999999999 5")
    assert ids == [1, 2, 5]
    assert [p.message for p in problems] == [
        "item 3 'abc' is not an integer",
        "item 4 '4.5' is not an integer",
        "item 5 '-3' is negative; token IDs are 0 or more",
        "item 6 '99999999999999999999999' is too large to be a token ID",
    ]
    assert [p.position for p in problems] == [3, 4, 5, 6]
    assert parse_ids("") == ([], [])
    ids, problems = parse_ids('[1, true, null, "7", [2]]')
    assert ids == [1, 7] and [p.item for p in problems] == ["true", "null", "[2]"]


def test_parse_ids_is_bounded():
    ids, problems = parse_ids(" ".join(["7"] * (MAX_PARSED_IDS + 5)))
    assert len(ids) == MAX_PARSED_IDS
    assert "only the first 100,000 IDs are read" in problems[-1].message
    ids, problems = parse_ids("1 2 3", max_ids=2)
    assert ids == [1, 2] and problems[0].position == 3

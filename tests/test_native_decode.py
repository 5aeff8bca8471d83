"""tokplay_native.decode, the C twin of decode's join: the same bytes and text as the pure
join (:func:`core.native._join_chunks`) on arbitrary tables and ID lists (negative IDs, IDs
past the table, ints too big for an index, ``None`` rows, tokens that split a UTF-8
character), the same errors where the pure join fails, and the same ``decode`` /
``decode_bytes`` results and messages from a Tokenizer either way.

`make test` builds the twin (setup.py), so a missing build fails here rather than skipping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import tiktoken
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core import native
from core.errors import PlaygroundError
from core.formats.presets import load_preset
from core.engine.tokenizer import Tokenizer

fast = native.decode

#: Rows as a decode table has them: ASCII, pieces of UTF-8 characters (中 = e4 b8 ad,
#: 😀 = f0 9f 98 80), 0xFF (decode()'s gap filler), longer tokens, and None (a gap).
ROWS = st.one_of(
    st.sampled_from([b"a", b" the", b"\xe4", b"\xb8\xad", b"\xe4\xb8", b"\xad", b"\xf0\x9f",
                     b"\x98\x80", b"\xff", b"\xc3", b"\xa9", b"<|endoftext|>", None]),
    st.binary(min_size=1, max_size=40),
)  # fmt: skip
IDS = st.lists(
    st.one_of(st.integers(-12, 12), st.booleans(),
              st.sampled_from([2**31, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**70])),
    max_size=200,
)  # fmt: skip


def outcome(join: Callable[[list[Any], list[Any]], Any], table: list[Any], ids: list[Any]) -> Any:
    """What ``join(table, ids)`` returns, or "error" for the TypeError or IndexError the
    caller catches (which of the two, with several bad items, is not part of the contract)."""
    try:
        return join(table, ids)
    except (TypeError, IndexError):
        return "error"


def test_the_twin_is_built():
    """`pip install -e .` (make test) builds it where a C compiler is; CI has one."""
    assert fast is not None, "tokplay_native.decode is not built: run `pip install -e .`"
    assert native.status()["decode"] is True


@settings(max_examples=400, deadline=None)
@given(table=st.lists(ROWS, max_size=12), ids=IDS)
@example(table=[b"\xe4\xb8", b"\xad"], ids=[0, 1, 1, 0])  # 中 split, then a stray piece
@example(table=[b"a", None], ids=[0, -1])  # a negative ID counts from the end, onto a gap
@example(table=[b"a"], ids=[0, 2**63])  # too big for an index: IndexError, not Overflow
@example(table=[b"x" * 40], ids=[0] * 70)  # past the first guess of the size (4 a token)
def test_the_twin_joins_as_the_pure_join(table: list[bytes | None], ids: list[int]):
    want = outcome(native._join_chunks, table, ids)
    assert outcome(fast.join, table, ids) == want
    text = want if want == "error" else want.decode("utf-8", "replace")
    assert outcome(fast.join_text, table, ids) == text
    assert outcome(native.join_tokens, table, ids) == want
    assert outcome(native.join_text, table, ids) == text


@pytest.mark.parametrize("bad", ["1", 1.0, None, b"\x01", [0]])
def test_an_item_that_is_no_int_is_an_error(bad: object):
    table = [b"a", b"b"]
    for join in (fast.join, fast.join_text, native._join_chunks):
        with pytest.raises(TypeError):
            join(table, [0, bad, 1])


def test_ids_in_several_blocks_and_a_long_output():
    """Lists longer than the C loop's block of 32 (and not a multiple of it), a bad item in
    a late block, and output far past the first guess of its size."""
    table = [bytes([97 + i]) * (i + 1) for i in range(26)] + [None]
    for n in (31, 32, 33, 64, 65, 1000, 5000):
        ids = [(k * 7) % 26 for k in range(n)]
        assert fast.join(table, ids) == native._join_chunks(table, ids)
        assert fast.join_text(table, ids) == native._join_chunks(table, ids).decode()
        for bad in (26, 27, -28, "x"):
            with pytest.raises((TypeError, IndexError)):
                fast.join(table, ids[:-1] + [bad])


def test_wrong_arguments_raise():
    for args in (([b"a"], (0,)), ((b"a",), [0]), ([b"a"],), ([b"a"], [0], [0])):
        for join in (fast.join, fast.join_text):
            with pytest.raises(TypeError, match=r"\(table: list, ids: list\)"):
                join(*args)


def test_the_pure_join_goes_chunk_by_chunk_and_raises_for_bad_items(monkeypatch):
    monkeypatch.setattr(native, "_JOIN_CHUNK", 2)
    table = [b"a", b"b", b"cd", None]
    assert native._join_chunks(table, [2, 0, 2]) == b"cdacd"  # chunks [2, 0] and [2]
    assert native._join_chunks(table, [1, 2, 0, 1, 1]) == b"bcdabb"
    assert native._join_chunks(table, [2]) == b"cd"
    assert native._join_chunks(table, []) == b""
    for bad in ([0, 3], [3], [0, 4], [4], [0, "1"], ["1"]):
        with pytest.raises((TypeError, IndexError)):
            native._join_chunks(table, bad)


# ─── through a Tokenizer: decode and decode_bytes the same with and without the twin ───

VOCAB = {i: bytes([i]) for i in range(256)} | {256: b"\xe4\xb8", 257: b" the", 260: b"\xad\xe4"}
ITEMS = st.one_of(st.integers(-3, 262), st.booleans(), st.sampled_from([2**40, 2**64, "7", 1.5]))


def results(tok: Tokenizer, ids: list[Any]) -> tuple[Any, Any]:
    """decode's and decode_bytes' answers, or their error messages."""
    out = []
    for call in (tok.decode, tok.decode_bytes):
        try:
            out.append(call(ids))
        except PlaygroundError as error:
            out.append(str(error))
    return out[0], out[1]


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(ITEMS, max_size=80))
@example(ids=[256, 260, 184, 173])  # 中 across tokens: e4 b8 | ad e4 | b8 | ad
@example(ids=[256, 258, 173])  # a gap inside a character: its own U+FFFD, as tiktoken
def test_a_tokenizer_decodes_the_same_with_and_without_the_twin(ids: list[Any]):
    tok = Tokenizer(VOCAB, [], special_tokens={"<|endoftext|>": 261})
    with_c = results(tok, ids)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "decode", None)
        assert results(tok, ids) == with_c


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_presets_decode_as_tiktoken_with_and_without_the_twin(name, tiktoken_cache, monkeypatch):
    """Every prefix of a multilingual text's IDs (so tokens that end inside a character),
    special tokens included, decodes as tiktoken's decode (errors="replace")."""
    tok, enc = load_preset(name), tiktoken.get_encoding(name)
    ids = enc.encode("Grüße, 東京 😀 x<|endoftext|>नमस्ते", allowed_special="all")
    want = [enc.decode(ids[:k]) for k in range(len(ids) + 1)]
    assert [tok.decode(ids[:k]) for k in range(len(ids) + 1)] == want
    monkeypatch.setattr(native, "decode", None)
    assert [tok.decode(ids[:k]) for k in range(len(ids) + 1)] == want

"""core.pipeline.word_memo: a Sequence of pre-tokenizers remembers what its steps make of
each short word; its words are those of the steps applied one after another, as Hugging
Face applies them (DeepSeek's and Falcon's six Split steps, Whitespace, Digits...)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.engine.fingerprint import fingerprint_of
from core.pipeline import pre_tokenizers as P
from core.pipeline import word_memo
from core.pipeline.pattern import Pattern
from core.pipeline.piece import Piece

#: DeepSeek LLM's steps (llama.cpp's deepseek-llm pre-tokenizer), shortened classes
DEEPSEEK = P.Sequence((
    P.Split(Pattern.regex(r"[\r\n]"), "isolated"),
    P.Split(Pattern.regex(r"\s?[A-Za-zµÀ-ÖØ-öø-ƺ]+"), "isolated"),
    P.Split(Pattern.regex(r"\s?[!-/:-~！-／：-～‘-‟\u3000-。]+"), "isolated"),
    P.Split(Pattern.regex(r"\s+$"), "isolated"),
    P.Split(Pattern.regex(r"[一-龥ࠀ-一가-\uD7FF]+"), "isolated"),
    P.Split(Pattern.regex(r"\p{N}+"), "isolated"),
    P.ByteLevel(add_prefix_space=False, use_regex=False),
))  # fmt: skip
OTHERS = [
    P.Sequence((P.WhitespaceSplit(), P.Digits(individual_digits=True))),
    P.Sequence((P.Split(Pattern.string(" "), "merged_with_next"), P.Punctuation("contiguous"),
                P.Split(Pattern.regex(r"\d"), "removed", invert=True))),
    P.Sequence((P.Whitespace(), P.Metaspace(prepend_scheme="always"))),
]  # fmt: skip
TEXT = st.text(st.sampled_from(list("ab Z1 23\n\r\t.,!？中文가é😀 \u3000")), max_size=90)


def _one_step_at_a_time(seq: P.Sequence, text: str) -> list[str]:
    """The steps applied in turn to every piece (what split_str did before the memo)."""
    words = [text]
    for step in seq.pre_tokenizers:
        words = [out for word in words for out in P.split_text(step, word) if out]
    return words


@settings(max_examples=300, deadline=None)
@given(text=TEXT, which=st.integers(0, len(OTHERS)))
@example(text="a" * (word_memo.MEMO_CHARS + 5) + " 12 b", which=0)  # a piece too long to keep
def test_remembered_words_are_the_steps_words(text: str, which: int) -> None:
    seq = [DEEPSEEK, *OTHERS][which]
    want = _one_step_at_a_time(seq, text)
    assert seq.split_str(text) == want
    assert seq.split_str(text) == want  # (again: from the memo)
    assert [p.text for p in seq.split([Piece.of(text)])] == want


def test_the_memo_is_bounded_and_stays_right(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(word_memo, "MEMO_MAX", 3)
    seq = P.Sequence((P.WhitespaceSplit(), P.Digits(individual_digits=True)))
    text = " ".join(f"w{i} 1{i}2" for i in range(40))
    for _ in range(3):
        assert seq.split_str(text) == _one_step_at_a_time(seq, text)
    memo = seq._memo
    assert memo is not None and all(len(m) <= 3 for m in memo._memos)
    long_word = "x" * (word_memo.MEMO_CHARS + 1)
    seq.split_str(long_word)
    assert all(long_word not in m for m in memo._memos)


def test_a_step_that_reads_offsets_takes_the_piece_path() -> None:
    seq = P.Sequence((P.WhitespaceSplit(), P.Metaspace(prepend_scheme="first")))
    assert seq._memo is None
    assert seq.split_str("a b") == ["▁a", "b"]


def test_the_memo_changes_neither_equality_nor_fingerprint() -> None:
    used, fresh = P.Sequence((P.WhitespaceSplit(),)), P.Sequence((P.WhitespaceSplit(),))
    used.split_str("some words here")
    assert used == fresh and hash(used) == hash(fresh)
    assert fingerprint_of(used) == fingerprint_of(fresh)

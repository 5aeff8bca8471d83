"""The seeds' other tokenizers: the book's SimpleTokenizerV2 and the HF course's BPE chapter."""

from __future__ import annotations

import pytest

from core.explain.baselines import (
    CharBPETokenizer,
    CoverageStats,
    WordTokenizer,
    coverage_stats,
    show_chars,
    split_words,
)
from core.train.builtin_corpus import builtin_corpus_text
from core.errors import PlaygroundError, TrainingConfigError

# ---------------------------------------------------------------------------------------------
# "LLMs from scratch", chapter 2: SimpleTokenizerV2
# ---------------------------------------------------------------------------------------------

BOOK_TEXT = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of the palace."
# A small corpus that, like the book's "The Verdict", lacks "Hello" and "palace".
CORPUS = "I do like tea, you see. In the sunlit terraces of the house?"


def test_word_vocab_is_sorted_words_then_specials() -> None:
    tok = WordTokenizer.train(CORPUS)
    assert tok.str_to_int == {
        ",": 0, ".": 1, "?": 2, "I": 3, "In": 4, "do": 5, "house": 6, "like": 7, "of": 8,
        "see": 9, "sunlit": 10, "tea": 11, "terraces": 12, "the": 13, "you": 14,
        "<|endoftext|>": 15, "<|unk|>": 16,
    }  # fmt: skip
    assert tok.n_vocab == 17 and tok.unk_id == 16


def test_word_tokenizer_on_the_books_example() -> None:
    tok = WordTokenizer.train(CORPUS)
    ids = tok.encode(BOOK_TEXT)
    assert ids == [16, 0, 5, 14, 7, 11, 2, 15, 4, 13, 10, 12, 8, 13, 16, 1]
    # the book's output, word for word
    assert tok.decode(ids) == (
        "<|unk|>, do you like tea? <|endoftext|> In the sunlit terraces of the <|unk|>."
    )
    assert tok.tokenize("Hello, tea") == ["<|unk|>", ",", "tea"]
    assert tok.id_to_token(11) == "tea"


def test_book_split_rules() -> None:
    assert split_words('Hello, world. Is this-- a test?') == [
        "Hello", ",", "world", ".", "Is", "this", "--", "a", "test", "?"
    ]
    assert split_words("  \n\t ") == []
    assert split_words('"quoted" (paren) it\'s_under') == [
        '"', "quoted", '"', "(", "paren", ")", "it", "'", "s", "_", "under"
    ]


def test_word_corpus_containing_the_special_keeps_one_id() -> None:
    tok = WordTokenizer.train(["a <|endoftext|> b", "c"])
    assert tok.str_to_int == {"a": 0, "b": 1, "c": 2, "<|endoftext|>": 3, "<|unk|>": 4}


def test_word_decode_edge_cases() -> None:
    tok = WordTokenizer.train(CORPUS)
    assert tok.decode([]) == ""
    assert tok.decode([999, -1]) == "\ufffd \ufffd"
    assert tok.id_to_token(999) == "\ufffd"
    with pytest.raises(PlaygroundError, match=r"item 1 of the IDs is '3' \(str\), not an integer"):
        tok.decode([1, "3"])  # type: ignore[list-item]


def test_word_vocab_without_unk_is_refused() -> None:
    with pytest.raises(TrainingConfigError, match="no '<|unk|>' entry"):
        WordTokenizer({"a": 0})


# ---------------------------------------------------------------------------------------------
# Hugging Face NLP course, chapter 6: BPE tokenization
# ---------------------------------------------------------------------------------------------

COURSE_CORPUS = [
    "This is the Hugging Face Course.",
    "This chapter is about tokenization.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]

COURSE_MERGES = [
    ("Ġ", "t"), ("i", "s"), ("e", "r"), ("Ġ", "a"), ("Ġt", "o"), ("e", "n"), ("T", "h"),
    ("Th", "is"), ("o", "u"), ("s", "e"), ("Ġto", "k"), ("Ġtok", "en"), ("n", "d"),
    ("Ġ", "is"), ("Ġt", "h"), ("Ġth", "e"), ("i", "n"), ("Ġa", "b"), ("Ġtoken", "i"),
]  # fmt: skip

COURSE_VOCAB = [
    "<|endoftext|>", ",", ".", "C", "F", "H", "T", "a", "b", "c", "d", "e", "f", "g", "h", "i",
    "k", "l", "m", "n", "o", "p", "r", "s", "t", "u", "v", "w", "y", "z", "Ġ", "Ġt", "is",
    "er", "Ġa", "Ġto", "en", "Th", "This", "ou", "se", "Ġtok", "Ġtoken", "nd", "Ġis", "Ġth",
    "Ġthe", "in", "Ġab", "Ġtokeni",
]  # fmt: skip


@pytest.fixture(scope="module")
def course() -> CharBPETokenizer:
    # the course has no unknown token: unk_token=None reproduces it exactly
    return CharBPETokenizer.train(COURSE_CORPUS, 50, unk_token=None)


def test_course_merges_and_vocab(course: CharBPETokenizer) -> None:
    assert course.merges == COURSE_MERGES
    assert course.tokens == COURSE_VOCAB
    assert course.n_vocab == 50 and course.unk_id is None


def test_course_tokenize(course: CharBPETokenizer) -> None:
    assert course.tokenize("This is not a token.") == [
        "This", "Ġis", "Ġ", "n", "o", "t", "Ġa", "Ġtoken", "."
    ]  # fmt: skip
    ids = course.encode("This is not a token.")
    assert [course.id_to_token(i) for i in ids] == course.tokenize("This is not a token.")
    assert course.decode(ids) == "This is not a token."


def test_course_without_unk_refuses_unknown_characters(course: CharBPETokenizer) -> None:
    with pytest.raises(PlaygroundError, match=r"character 'x' \(U\+0078\) is not in this tokenizer's alphabet"):
        course.encode("This is x")


def test_default_has_an_unknown_token() -> None:
    tok = CharBPETokenizer.train(COURSE_CORPUS, 51)
    assert tok.tokens[:2] == ["<|endoftext|>", "<|unk|>"]
    assert tok.merges == COURSE_MERGES  # one more slot for <|unk|>, same merges
    ids = tok.encode("This is 日本 x!<|endoftext|>")
    assert tok.tokenize("This is 日本 x!<|endoftext|>") == [
        "This", "Ġis", "Ġ", "<|unk|>", "<|unk|>", "Ġ", "<|unk|>", "<|unk|>", "<|endoftext|>"
    ]  # fmt: skip
    assert ids.count(tok.unk_id) == 4
    assert tok.decode(ids) == "This is <|unk|><|unk|> <|unk|><|unk|><|endoftext|>"


def test_newlines_show_as_in_gpt2_and_round_trip() -> None:
    tok = CharBPETokenizer.train(["a b\nc\td  e"], 40)
    text = "a b\nc\td  e"
    assert tok.decode(tok.encode(text)) == text
    assert show_chars(" \n\t") == "ĠĊĉ"
    assert "Ċ" in tok.tokens


def test_char_bpe_vocab_too_small() -> None:
    with pytest.raises(TrainingConfigError, match="use at least 32"):
        CharBPETokenizer.train(COURSE_CORPUS, 10)


def test_char_bpe_stops_when_no_pairs_left() -> None:
    tok = CharBPETokenizer.train(["ab ab"], 1000, unk_token=None)
    assert tok.merges == [("a", "b"), ("Ġ", "ab")]
    assert tok.n_vocab == 1 + 3 + 2


def test_char_bpe_decode_edge_cases(course: CharBPETokenizer) -> None:
    assert course.decode([10_000, -1]) == "\ufffd\ufffd"
    assert course.id_to_token(10_000) == "\ufffd"
    with pytest.raises(PlaygroundError, match="item 0 of the IDs is 1.5"):
        course.decode([1.5])  # type: ignore[list-item]


def test_char_bpe_on_a_real_corpus_round_trips_only_without_unknowns() -> None:
    english = builtin_corpus_text()
    tok = CharBPETokenizer.train(english[:100_000], 500)
    seen = set(english[:100_000])
    known = "".join(c for c in english[200_000:210_000] if c in seen)
    stats = coverage_stats(tok, known)
    assert stats.n_unknown == 0 and stats.round_trip
    assert stats.n_tokens < len(known) / 2  # merges made it shorter than one token a char
    unseen = next(c for c in "日本語✓ŋ" if c not in seen)
    stats = coverage_stats(tok, known + unseen)
    assert stats.n_unknown == 1 and not stats.round_trip


# ---------------------------------------------------------------------------------------------
# Coverage
# ---------------------------------------------------------------------------------------------


class _ByteLevel:
    """Stands in for a byte-level Tokenizer: no unknown token."""

    unk_id = None

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        return bytes(ids).decode("utf-8", errors="replace")


def test_coverage_stats() -> None:
    word = WordTokenizer.train(CORPUS)
    stats = coverage_stats(word, BOOK_TEXT)
    assert stats == CoverageStats(
        n_chars=len(BOOK_TEXT), n_tokens=16, n_unknown=2, unknown_rate=2 / 16,
        tokens_per_char=16 / len(BOOK_TEXT), round_trip=False,
    )  # fmt: skip
    byte_level = coverage_stats(_ByteLevel(), "日本 ok")
    assert (byte_level.n_unknown, byte_level.unknown_rate, byte_level.round_trip) == (0, 0.0, True)
    empty = coverage_stats(word, "")
    assert (empty.n_tokens, empty.unknown_rate, empty.tokens_per_char) == (0, 0.0, 0.0)

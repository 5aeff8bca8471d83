"""The IDs-only fast path of ``PipelineTokenizer.encode`` on SentencePiece ``.model`` files:
``normalize_str``, ``split_str`` and ``encode_word`` against their Piece methods, and the
whole encode against ``sentencepiece`` (Mistral's v1/v3/v7 files, Unigram models trained
here), ID for ID, on arbitrary Unicode.
"""

from __future__ import annotations

import functools
import io
from array import array
from importlib import resources
from typing import Any

import pytest
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.train.builtin_corpus import builtin_corpus_documents
from core.pipeline.piece import Piece
from core.pipeline.sentencepiece import sentencepiece_tokenizer
from core.pipeline.sentencepiece.bpe import WordCuts, cut_regex
from core.pipeline.sentencepiece.proto import NORMAL, UNKNOWN
from core.pipeline.models.unigram import UnigramModel
from core.pipeline.models.unigram_words import UnigramWords

MISTRAL = {
    "v1": "tokenizer.model.v1",
    "v3": "mistral_instruct_tokenizer_240323.model.v3",
    "v7": "mistral_instruct_tokenizer_241114.model.v7",
}

#: name -> sentencepiece training options of a Unigram model trained here
UNIGRAM = {
    "nmt_nfkc": {},
    "byte_fallback": {"byte_fallback": True},
    "user_defined": {"user_defined_symbols": ["<ud>", "ab", "∑x", "▁the", "a  b"]},
    "keep_whitespace": {"remove_extra_whitespaces": False},
    "suffix": {"treat_whitespace_as_suffix": True, "byte_fallback": True},
}

TEXTS = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=60),
    st.lists(
        st.one_of(
            st.sampled_from([" ", "  ", "\t", "\n", "▁", "\u0301", "\u3000", "the", "ab",
                             "<ud>", "∑x", "Ｆ", "ﬁ", "①", "é", "e", "你好", "😀", "\x00"]),
            st.text(max_size=3),
        ),
        max_size=30,
    ).map("".join),
)  # fmt: skip


@functools.cache
def _mistral(name: str) -> tuple[Any, Any]:
    path = resources.files("mistral_common").joinpath("data", MISTRAL[name])
    data = path.read_bytes()
    return sentencepiece_tokenizer(data), spm.SentencePieceProcessor(model_proto=data)


@functools.cache
def _lines() -> tuple[str, ...]:
    lines = [ln for doc in builtin_corpus_documents()[:30] for ln in doc.splitlines()]
    return tuple(ln for ln in lines if ln.strip())[:4000]


@functools.cache
def _unigram(name: str) -> tuple[Any, Any]:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_lines()), model_writer=out, model_type="unigram",
        vocab_size=800, minloglevel=2, **UNIGRAM[name],
    )  # fmt: skip
    data = out.getvalue()
    return sentencepiece_tokenizer(data), spm.SentencePieceProcessor(model_proto=data)


def _pair(name: str) -> tuple[Any, Any]:
    return _mistral(name) if name in MISTRAL else _unigram(name)


def _piece_path_ids(tok: Any, text: str) -> list[int]:
    """The Piece path's IDs (encode_spans walks Pieces and tokenize)."""
    return [t[0] for t in tok.encode_spans(text)[0]]


def _check_stages(tok: Any, text: str) -> None:
    """Each stage's str method equals its Piece method on ``text``."""
    normalized = tok.normalizer.normalize(Piece.of(text)).text
    assert tok.normalizer.normalize_str(text) == normalized
    pre = tok.pre_tokenizer
    words = [p.text for p in pre.split([Piece.of(normalized)])] if pre else [normalized]
    if pre is not None:
        assert pre.split_str(normalized) == words
    for word in words:
        want = [t[0] for t in tok.model.tokenize(word)]
        assert tok.model.encode_word(word) == want
        assert tok.model.encode_word(word) == want  # (from the cache)


ALL = list(MISTRAL) + list(UNIGRAM)


@pytest.mark.parametrize("name", ALL)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS)
def test_fast_path_matches_sentencepiece_and_the_piece_path(name: str, text: str) -> None:
    tok, sp = _pair(name)
    want = sp.encode(text)
    assert tok.encode(text) == want
    assert _piece_path_ids(tok, text) == want
    _check_stages(tok, text)


@pytest.mark.parametrize("name", ALL)
def test_corpus_lines_and_a_long_text_match(name: str) -> None:
    tok, sp = _pair(name)
    tok.model.clear_cache()
    texts = list(_lines()[:300]) + ["\n".join(_lines()[:400])]
    for _ in range(2):  # cold, then from the caches
        for text in texts:
            assert tok.encode(text) == sp.encode(text), text


def test_unigram_words_are_exact_past_the_score_reset_and_on_ties() -> None:
    """Scores pass 1e5 (the reset) in a long text; words whose best path wins by less
    than float32 rounding are searched exactly, the rest come from the cache."""
    tok, sp = _unigram("nmt_nfkc")
    text = " ".join(_lines()) * 3
    assert tok.encode(text) == sp.encode(text)
    words = tok.model._words
    assert isinstance(words, UnigramWords)


def test_unigram_tie_is_searched_exactly() -> None:
    """``F`` + ``FF`` and ``FF`` + ``F`` tie in real arithmetic: no margin, so the word is
    never taken from the cache and float32 rounding decides (differently for different
    scores before it), as in the whole-text search."""
    f = array("f", [-1.1])[0]
    pieces = [("<unk>", 0.0), ("F", f), ("FF", 2 * f), ("▁", -0.7)]
    types = [UNKNOWN, NORMAL, NORMAL, NORMAL]
    m = UnigramModel(pieces, unk_id=0, flavour="sentencepiece", types=types)
    for text in ["▁FFF", "▁FFF▁FF▁FFFF" * 400]:
        want = [t[0] for t in m.tokenize(text)]
        assert m.encode_word(text) == want
        assert m.encode_word(text) == want
    assert m._words._entry("▁FFF")[2] == 0.0  # (a tie: never from the cache)


EDGE = ["", " ", "a  b", "x a  b  y", "  a  b", "<ud>  <ud>", "▁▁x▁", "\t\n \u3000", "ﬁ  ①",
        "e\u0301  é", "😀" * 3, "\x00 \x01", "a" * 300, "the " * 100]  # fmt: skip


@pytest.mark.parametrize("name", ALL)
def test_edge_texts(name: str) -> None:
    tok, sp = _pair(name)
    for text in EDGE:
        assert tok.encode(text) == sp.encode(text) == _piece_path_ids(tok, text), text
        _check_stages(tok, text)


def test_encode_word_of_a_hugging_face_unigram_is_its_tokenize() -> None:
    m = UnigramModel([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)], unk_id=0)
    assert m.encode_word("abba?") == [t[0] for t in m.tokenize("abba?")] == [3, 2, 1, 0]


def test_an_object_without_str_methods_still_encodes() -> None:
    """The fast path falls back to each stage's Piece method."""
    tok, sp = _mistral("v7")

    class PieceOnly:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def normalize(self, piece: Piece) -> Piece:
            return self.inner.normalize(piece)

        def split(self, pieces: list[Piece]) -> list[Piece]:
            return self.inner.split(pieces)

    original = tok.normalizer, tok.pre_tokenizer
    try:
        tok.normalizer = PieceOnly(tok.normalizer)
        tok.pre_tokenizer = PieceOnly(tok.pre_tokenizer)
        for text in ["Hello  world", "你好 😀\n\tx", ""]:
            assert tok.encode(text) == sp.encode(text)
    finally:
        tok.normalizer, tok.pre_tokenizer = original


_CUT_TEXTS = st.lists(
    st.one_of(st.sampled_from(["▁", "▁▁", "1", "a", "\n", "▁1", "the", "你", "😀", "\x00"]),
              st.text(max_size=3)),
    max_size=30,
).map("".join)  # fmt: skip


@pytest.mark.parametrize("name", ["v1", "v7", "nmt_nfkc", "user_defined"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_CUT_TEXTS)
def test_word_cuts_are_the_cut_regex(name: str, text: str) -> None:
    """WordCuts' consuming regex finds the words cut_regex's lookarounds cut."""
    full, fast = _cuts(name)
    assert fast.split(text) == [w for w in full.split(text) if w]


@functools.cache
def _cuts(name: str) -> tuple[Any, WordCuts]:
    pieces = _pair(name)[0].model.vocab
    return cut_regex(pieces), WordCuts(pieces)

"""``CharTable``: the char map a character at a time, against the byte walk it stands for
(``SentencePieceNormalizer._mapped``) and against ``sentencepiece``'s own normalizer, on
text made of the characters where ``nmt_nfkc``'s rules reach past one character
(letters and combining marks, kana and their sound marks, Hangul jamo, ligatures)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import native
from core.pipeline.piece import Piece
from core.pipeline.sentencepiece.char_table import CharTable
from tests.pipeline.test_fast_encode_sp import _unigram

REACHING = st.lists(
    st.one_of(
        st.sampled_from(["A", "e", "o", "u", "n", "か", "ハ", "\u3099", "\u309a", "\u0301",
                         "\u0308", "\u0327", "\u1100", "\u1161", "\u11a8", "ﬁ", "①", " ",
                         "  ", "\u3000", "Ｆ", "한", "\u0338", "=", "<", "\u05b4", "י"]),
        st.characters(codec="utf-8"),
    ),
    max_size=25,
).map("".join)  # fmt: skip


def _normalizer():  # type: ignore[no-untyped-def]
    tok, sp = _unigram("nmt_nfkc")
    return tok.normalizer, sp


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(REACHING)
def test_table_is_the_byte_walk(text: str) -> None:
    normalizer, _ = _normalizer()
    fresh = CharTable(normalizer.charsmap)  # (nothing learnt: the text teaches it)
    for table in (fresh, normalizer._table):
        got = table.apply(text)
        if got is not None:
            assert got == normalizer._mapped(text)[0]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(REACHING)
def test_normalize_str_is_sentencepiece(text: str) -> None:
    normalizer, sp = _normalizer()
    assert normalizer.normalize_str(text) == sp.normalize(text)
    assert normalizer.normalize_str(text) == normalizer.normalize(Piece.of(text)).text
    with pytest.MonkeyPatch.context() as patch:  # (the pure path too: the C twin's off)
        patch.setattr(native, "normalize", None)
        assert normalizer.normalize_str(text) == sp.normalize(text)


def test_reaching_pairs_take_the_walk() -> None:
    normalizer, sp = _normalizer()
    table = CharTable(normalizer.charsmap)
    assert table.apply("Ae") == "Ae"
    assert table.apply("A\u0301") is None  # (one rule: "Á")
    assert table.apply("か\u3099") is None  # (one rule: "が")
    assert table.apply("ﬁ①") == "fi1"
    assert normalizer.normalize_str("xA\u0301 か\u3099") == sp.normalize("xA\u0301 か\u3099")


def test_the_table_is_the_char_maps_own_and_never_grows() -> None:
    # (bounded memory on arbitrary input: texts teach it nothing, every table shares it)
    normalizer, sp = _normalizer()
    table = CharTable(normalizer.charsmap)
    text = "".join(map(chr, range(0x4E00, 0x4E00 + 3000))) + "z\ud800"
    assert table.apply(text[:-1]) == text[:-1] and table.apply(text) is None  # (surrogate)
    translation = normalizer.charsmap.char_rules().translation
    assert table._table is translation and CharTable(normalizer.charsmap).apply("z") == "z"
    assert table.apply("\t①") == " 1" and sp.normalize("x\t①") == "▁x▁1"


def test_a_used_table_pickles_and_the_model_encodes_the_same_after() -> None:
    # Evaluate sends tokenizers to worker processes: the table's lock is left out and the
    # copy gets its own (a model is shared by every session's thread, see CharTable.apply)
    import pickle

    tok, sp = _unigram("nmt_nfkc")
    text = "xA\u0301 か\u3099 ﬁ① plain words, Ünïcödé"
    tok.encode(text)
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.normalizer._table._lock is not tok.normalizer._table._lock
    assert copy.encode(text) == tok.encode(text) == sp.encode(text)
    assert copy.normalizer._table.apply("A\u0301") is None


def test_clear_cache_forgets_what_texts_taught(monkeypatch: pytest.MonkeyPatch) -> None:
    # (benchmarks time a cold encode after it; the results stay the same; the pure path,
    # whose caches these are: the C twin, tokplay_native.normalize, keeps none)
    monkeypatch.setattr(native, "normalize", None)
    tok, sp = _unigram("nmt_nfkc")
    text = "xA\u0301 か\u3099 ﬁ① plain words, Ünïcödé"
    before = tok.encode(text)
    normalizer = tok.normalizer
    old_table = normalizer._table
    assert normalizer._segments
    normalizer.clear_cache()
    assert not normalizer._segments and not normalizer._pairs
    assert normalizer._table is not old_table
    assert tok.encode(text) == before == sp.encode(text)

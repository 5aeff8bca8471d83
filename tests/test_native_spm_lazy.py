"""SentencePiece BPE models load without their Python dicts where tokplay_native is built:
``tokplay_native.bpe.spm_words`` makes the C table encoding reads straight from the piece
columns (core/pipeline/sentencepiece/native_words.py), and ``vocab`` and the merge ranks are
made on first use. Checked here: the table equals ``SpmWords`` over piece_tables' dicts (its
pure-made twin) on arbitrary columns, a loaded model answers as the eager one, ID for ID
against sentencepiece, and the pure path (the twin off) is unchanged. Also
``tokplay_native.spm.first_repeat``, a GGUF vocab's check for a token spelled twice.
"""

from __future__ import annotations

import math
import pickle
import struct
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core import native
from core.pipeline.sentencepiece import native_words, sentencepiece_tokenizer
from core.pipeline.sentencepiece.bpe import SentencePieceBPE
from core.pipeline.sentencepiece.proto import (
    BYTE,
    CONTROL,
    NORMAL,
    UNKNOWN,
    USER_DEFINED,
    ProtoPiece,
)
from core.pipeline.sentencepiece import tables
from core.pipeline.sentencepiece.tables import piece_tables
from tests.pipeline.test_fast_encode_sp import TEXTS, _mistral
from tests.test_real_models import _mistral_path

fast = native.bpe


def test_the_twin_is_built():
    assert fast is not None, "tokplay_native.bpe is not built: run `pip install -e .`"


# ─── spm_words against SpmWords over the dicts ─────────────────────────────────────────

def _float32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


SCORES = st.one_of(
    st.sampled_from([0.0, -0.0, -1.0, -2.0, 1.5, -math.inf, math.inf]),
    st.floats(-40, 5, allow_nan=False).map(_float32),  # a parsed file's: float32 values
    st.floats(-40, 5, allow_nan=False),  # any double (the sorted path)
)
TYPES = st.sampled_from([NORMAL, NORMAL, NORMAL, USER_DEFINED, CONTROL, BYTE, UNKNOWN, 7])
PIECES = st.lists(st.tuples(st.text("ab▁é😀", min_size=1, max_size=4), SCORES, TYPES),
                  max_size=40, unique_by=lambda p: p[0])  # fmt: skip
WORDS = st.lists(st.text("ab▁é😀c", min_size=1, max_size=12), max_size=10)


def _columns(pieces: list[tuple[str, float, int]]) -> tuple[list[str], list[float], list[int]]:
    byte = [(f"<0x{b:02X}>", 0.0, BYTE) for b in range(256)]
    texts, scores, types = zip(("<unk>", 0.0, UNKNOWN), *byte, *pieces)
    return list(texts), list(scores), list(types)


def _encode(table: Any, words: list[str]) -> list[int]:
    out: list[int] = []
    fast.encode_words(words, {}, table, lambda w: (-1, len(w)), 256, 1000, out)
    return out


@settings(max_examples=300, deadline=None)
@given(pieces=PIECES, words=WORDS, user=st.sampled_from(["", "a", "é😀"]), exact=st.booleans())
@example(pieces=[("a", 0.0, NORMAL), ("b", -0.0, NORMAL), ("ab", -1.0, NORMAL),
                 ("ba", -1.0, NORMAL)], words=["abab", "baba"], user="", exact=True)  # ties
@example(pieces=[("a", -1.0, NORMAL), ("b", -1.0, NORMAL), ("ab", -2.0, NORMAL),
                 ("ba", -3.0, NORMAL)], words=["aba", "bab"], user="", exact=True)  # best first
@example(pieces=[("a", -1.0, NORMAL), ("b", -1.0, NORMAL), ("ab", -math.inf, NORMAL),
                 ("ba", 0.1, NORMAL)], words=["abab"], user="", exact=False)  # a double
@example(pieces=[("a", -1.0, NORMAL), ("b", -1.0, NORMAL), ("ab", 0.1, NORMAL),
                 ("ba", 0.1, NORMAL)], words=["aba", "bab"], user="", exact=False)  # sorted ties
def test_spm_words_is_spm_words_over_the_dicts(pieces, words, user, exact):
    """``exact``: every score a float32 (a parsed file's: the table's keys), else doubles
    too (the table sorts them)."""
    if exact:
        pieces = [(text, _float32(score), kind) for text, score, kind in pieces]
    texts, scores, types = _columns(pieces)
    vocab, _, ranks = piece_tables(texts, scores, types)
    byte_ids = [vocab[f"<0x{b:02X}>"] for b in range(256)]
    want = fast.SpmWords(ranks, vocab, unk=0, byte_ids=byte_ids, user_first=user)
    got = fast.spm_words(texts, scores, types, unk=0, byte_fallback=True, user_first=user)
    assert _encode(got, words) == _encode(want, words)
    assert [got.piece_id(t) for t in texts + ["zz", "\ud800"]] == [
        vocab.get(t, -1) for t in texts + ["zz", "\ud800"]
    ]


def test_spm_words_refuses_what_the_loader_refuses():
    with pytest.raises(ValueError, match="defined twice"):
        fast.spm_words(["a", "b", "a"], [0.0] * 3, [1] * 3, unk=0, byte_fallback=False,
                       user_first="")  # fmt: skip
    with pytest.raises(ValueError, match="piece 1 is empty"):
        fast.spm_words(["a", ""], [0.0] * 2, [1] * 2, unk=0, byte_fallback=False, user_first="")
    # a NaN score among the pieces merged into: the heap path's, no table
    assert fast.spm_words(["a", "b"], [0.0, math.nan], [1, 1], unk=0, byte_fallback=False,
                          user_first="") is None  # fmt: skip
    assert fast.spm_words(["a", "b"], [0.0, math.nan], [1, CONTROL], unk=0,
                          byte_fallback=False, user_first="") is not None  # fmt: skip
    for bad in (["a", "\ud800"], ["a", 3]):  # (the dicts' route decides these)
        with pytest.raises(TypeError):
            fast.spm_words(bad, [0.0] * 2, [1] * 2, unk=0, byte_fallback=False, user_first="")
    with pytest.raises(TypeError):
        fast.spm_words(["a"], [0], [1], unk=0, byte_fallback=False, user_first="")
    with pytest.raises(TypeError):
        fast.spm_words(["a"], [0.0, 1.0], [1], unk=0, byte_fallback=False, user_first="")


# ─── a loaded model: its dicts are made on first use ───────────────────────────────────

LAZY = ("_tables", "_merge_rank", "_byte_ids", "_cut")


def test_a_loaded_model_makes_no_dict_until_asked():
    tok, sp = sentencepiece_tokenizer(_mistral_path("v7").read_bytes()), _mistral("v7")[1]
    model = tok.model
    assert not any(name in vars(model) for name in LAZY)
    text = "Hello, world! 東京は日本の首都です ☃"
    model.clear_cache()
    assert tok.encode(text) == sp.encode(text)
    assert tok.decode(sp.encode(text)) == sp.decode(sp.encode(text))
    assert model.piece_to_id("▁Hello") == sp.piece_to_id("▁Hello")
    assert model.piece_to_id("no such piece") == sp.unk_id()
    assert model.token_to_id("no such piece") is None and "▁Hello" in model.vocab
    assert len(model.vocab) == sp.get_piece_size()
    assert "_tables" not in vars(model)  # (look-ups and the length read the C table)
    eager = dict(model.vocab)  # now made
    assert "_tables" in vars(model) and eager == {sp.id_to_piece(i): i for i in range(len(eager))}


def test_lazy_and_eager_models_answer_alike(monkeypatch: pytest.MonkeyPatch):
    data = _mistral_path("v1").read_bytes()
    lazy, sp = sentencepiece_tokenizer(data), _mistral("v1")[1]
    monkeypatch.setattr(native, "bpe", None)
    eager = sentencepiece_tokenizer(data)
    assert "_tables" in vars(eager.model) and "_tables" not in vars(lazy.model)
    assert eager.fingerprint() == lazy.fingerprint()
    monkeypatch.undo()
    text = "Bonjour  à tous\n\tdef f(x): return x**2 😀"
    assert lazy.encode(text) == eager.encode(text) == sp.encode(text)
    steps = [(s.merged, s.rank) for s in lazy.model.trace("▁Bonjour")]
    assert steps == [(s.merged, s.rank) for s in eager.model.trace("▁Bonjour")]


def test_a_lazy_model_pickles_and_its_copy_encodes_alike():
    tok, sp = _mistral("v7")
    copy = pickle.loads(pickle.dumps(tok))
    text = "東京は日本の首都です, isn't it?"
    assert copy.encode(text) == sp.encode(text)
    assert native_words.NATIVE_WORDS in vars(copy.model)  # (made again from the columns)


@settings(max_examples=40, deadline=None)
@given(text=TEXTS)
def test_pure_path_equals_sentencepiece(text: str):
    """The twin off (as on Pyodide): the model is built eagerly, as before."""
    tok, sp = _mistral("v1")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "bpe", None)
        model = SentencePieceBPE(tok.model.pieces, byte_fallback=True)
        assert "_tables" in vars(model)
        tok.model.clear_cache()
        assert tok.encode(text) == sp.encode(text)


def test_a_model_with_a_repeated_text_keeps_the_dict_route(monkeypatch: pytest.MonkeyPatch):
    pieces = [ProtoPiece("<unk>", 0.0, UNKNOWN), ProtoPiece("a", -1.0, NORMAL),
              ProtoPiece("b", -2.0, NORMAL), ProtoPiece("ab", -3.0, NORMAL),
              ProtoPiece("a", -4.0, CONTROL)]  # fmt: skip
    model = SentencePieceBPE(pieces, byte_fallback=True)
    assert "_tables" in vars(model)  # (a text spelled twice: the dicts say which ID wins)
    got = (model.piece_to_id("a"), model.encode_word("aab"))
    monkeypatch.setattr(native, "bpe", None)
    pure = SentencePieceBPE(pieces, byte_fallback=True)
    assert got == (pure.piece_to_id("a"), pure.encode_word("aab")) == (4, [4, 3])


def test_a_model_file_loads_the_same_both_ways(monkeypatch: pytest.MonkeyPatch):
    import sentencepiece as spm

    from tests.test_native_bpe import _lines

    trained: dict[str, Any] = {}
    import io

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_lines()), model_writer=out, model_type="bpe", vocab_size=600,
        minloglevel=2, byte_fallback=True, user_defined_symbols=["<ud>", "ab"],
    )  # fmt: skip
    data = out.getvalue()
    trained["lazy"] = sentencepiece_tokenizer(data)
    monkeypatch.setattr(native, "bpe", None)
    trained["eager"] = sentencepiece_tokenizer(data)
    monkeypatch.undo()
    sp = spm.SentencePieceProcessor(model_proto=data)
    text = "ab<ud> the cat sat on the mat. ☃ <ud>x"
    assert trained["lazy"].encode(text) == trained["eager"].encode(text) == sp.encode(text)
    assert trained["lazy"].special_token_ids == trained["eager"].special_token_ids


# ─── first_repeat: a GGUF vocab's check that no token is spelled twice ──────────────────


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text("aé😀\x00b", max_size=9), max_size=30))
@example(texts=["a" * 9, "a" * 8 + "b", "a" * 9])  # past one 8-byte word
@example(texts=["é", "\xe9"])  # one str spelled two ways in source: equal
def test_first_repeat_is_the_first_text_seen_before(texts: list[str]):
    seen: set[str] = set()
    want = next((i for i, t in enumerate(texts) if t in seen or seen.add(t)), -1)
    assert native.spm.first_repeat(texts) == want
    assert tables.has_repeats(texts) == (want >= 0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "spm", None)
        assert tables.has_repeats(texts) == (want >= 0)


def test_first_repeat_refuses_what_is_no_list_of_str():
    for bad in (("a", "a"), ["a", b"a"], ["a", 1]):
        with pytest.raises(TypeError):
            native.spm.first_repeat(bad)
    assert tables.has_repeats(("a", "a"))  # (the set decides)

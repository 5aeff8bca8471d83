"""tokplay_native.bpe, the C twin of the BPE merge loop: the same answers as the pure code in
core on every input (random hard tables from tests/test_bpe_fast_paths.py, arbitrary Unicode,
the presets against tiktoken), the same cache entries, and errors rather than crashes.

`make test` builds the twin (setup.py), so a missing build fails here rather than skipping:
the rest of the suite would otherwise test only the pure path without saying so.
"""

from __future__ import annotations

import functools
import io
import operator
import pickle
import struct
from collections.abc import Iterator
from typing import Any

import pytest
import sentencepiece as spm
import tiktoken
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.engine import bpe as pure_bpe
from core import native
from core.engine import char_start
from core.engine.bpe import NO_MERGE, merge
from core.pipeline.sentencepiece import bpe as sp_bpe
from core.pipeline.sentencepiece import native_words, sentencepiece_tokenizer
from core.formats.presets import load_preset
from core.engine.text_encoder import PretokenCache
from core.engine.tokenizer import Tokenizer
from tests.pipeline.test_fast_encode_sp import TEXTS, _lines, _mistral
from tests.test_bpe_fast_paths import CHARS, MULTILINGUAL, rank_vocabs, vocabs

fast = native.bpe


def test_the_twin_is_built():
    """`pip install -e .` (make test) builds it where a C compiler is; CI has one."""
    assert fast is not None, "tokplay_native.bpe is not built: run `pip install -e .`"
    assert native.status()["bpe"] is True


@pytest.fixture
def pure(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run core's pure path: the twin off, as on Pyodide."""
    monkeypatch.setattr(native, "bpe", None)
    yield


# ─── the merge loop itself ──────────────────────────────────────────────────────────────

WORD = st.text(alphabet="abcdé", max_size=40)
STR_TABLES = st.dictionaries(st.text(alphabet="abcdé", min_size=2, max_size=4),
                             st.integers(0, 50), max_size=30)  # fmt: skip


@given(word=WORD, table=STR_TABLES)
@example(word="aaaa", table={"aa": 0, "aaaa": 1})  # no overlap: aaaa -> aa aa -> aaaa
@example(word="abab", table={"ab": 3, "ba": 3})  # a tie: the leftmost pair first
def test_merge_joined_is_the_pure_loop(word: str, table: dict[str, int]):
    want = pure_bpe._merge_joined(list(word), table.get)
    parts = list(word)
    assert fast.merge_joined(parts, table) is parts  # joined in place, as merge() does
    assert parts == want
    as_bytes = {key.encode(): rank for key, rank in table.items()}
    data = [bytes([b]) for b in word.encode()]
    assert fast.merge_joined(list(data), as_bytes) == pure_bpe._merge_joined(data, as_bytes.get)


@given(ids=st.lists(st.integers(0, 6), max_size=40),
       pairs=st.dictionaries(st.tuples(st.integers(0, 12), st.integers(0, 12)),
                             st.integers(0, 12), max_size=40))  # fmt: skip
def test_merge_made_is_the_pure_loop(ids: list[int], pairs: dict[tuple[int, int], int]):
    made = [7 + rank for rank in range(13)]  # rank r makes ID 7 + r (IDs can join again)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "bpe", None)
        want = merge(list(ids), pairs, made)
    assert merge(list(ids), pairs, made) == want  # through merge(): the twin
    assert fast.merge_made(list(ids), pairs, made) == want
    assert fast.merge_made(list(ids), pairs, tuple(made)) == want
    assert fast.merge_made(list(ids), pairs, dict(enumerate(made))) == want


def test_a_missing_pair_is_no_merge_and_other_ranks_are_refused():
    assert fast.merge_made([1, 2], {(1, 2): NO_MERGE}, [9]) == [1, 2]
    with pytest.raises(TypeError):
        fast.merge_made([1, 2], {(1, 2): 0.5}, [9])  # floats: the pure path's business
    with pytest.raises(TypeError):
        fast.merge_joined(["a", "b"], {"ab": "0"})
    with pytest.raises(TypeError):
        fast.merge_joined(("a", "b"), {})  # a list, as merge() gets
    with pytest.raises(IndexError):
        fast.merge_made([1, 2], {(1, 2): 5}, [9])  # made[5]: what the pure loop raises too


# ─── a tokenizer's tables: RankTable, PairTable ─────────────────────────────────────────

WORDS = st.text(alphabet=CHARS, max_size=16)


@settings(max_examples=300)
@given(vocab=rank_vocabs() | vocabs().map(lambda table: table[0]),
       words=st.lists(WORDS, min_size=1, max_size=8))  # fmt: skip
def test_rank_table_is_the_pure_pretoken_bpe(vocab: dict[int, bytes], words: list[str]):
    tok = Tokenizer(vocab, None, cache_size=0)  # rank mode: whole pre-tokens first
    table = tok._native_table
    for word in words:
        data = word.encode()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(native, "bpe", None)
            want = tok._bpe_str(word)
        assert table.encode(data) == want == tok._bpe_str(word), word
        if tok._encoder.get(data) is None:  # (else the whole pre-token is looked up first)
            assert table.encode(data) == tuple(map(tok._encoder.__getitem__, merge(
                [bytes([b]) for b in data], tok._encoder, key=operator.add)))  # fmt: skip


@settings(max_examples=300)
@given(table=vocabs(), words=st.lists(WORDS, min_size=1, max_size=8),
       ignore_merges=st.booleans())  # fmt: skip
def test_pair_table_is_the_pure_pretoken_bpe(table, words: list[str], ignore_merges: bool):
    vocab, merges = table
    tok = Tokenizer(vocab, merges, cache_size=0, ignore_merges=ignore_merges)
    for word in words:
        data = word.encode()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(native, "bpe", None)
            want = tok._bpe_str(word)
        assert tok._native_table.encode(data) == want == tok._bpe_str(word), word
        ids = list(map(tok.byte_ids.__getitem__, data))
        if not ignore_merges:
            assert tok._native_table.merge(ids) == list(want)
            assert tok._native_table.encode(data) == tuple(
                merge(ids, tok._pair_ranks, tok._merged)
            )


def test_tables_join_the_leftmost_of_equal_ranks():
    base = {i: bytes([i]) for i in range(256)}
    by_rank = Tokenizer(base | {256: b"aa"}, None, cache_size=0)
    assert by_rank._native_table.encode(b"aaa") == (256, 97)
    by_merges = Tokenizer(base | {256: b"aa"}, [(b"a", b"a")], cache_size=0)
    assert by_merges._native_table.encode(b"aaa") == (256, 97)
    assert by_merges._native_table.merge([97, 97, 97]) == [256, 97]


def test_tables_refuse_what_they_cannot_hold():
    with pytest.raises(TypeError, match="bytes"):
        fast.RankTable({"a": 0})
    with pytest.raises(ValueError, match="0..2"):
        fast.PairTable({(-1, 2): 0}, [5], list(range(256)))
    with pytest.raises(IndexError):
        fast.PairTable({(1, 2): 0}, [5], [0])  # 256 byte IDs needed
    with pytest.raises(KeyError):
        fast.RankTable({b"a": 0}).encode(b"ab")  # b"b" is no token: encoder[b"b"] raises too
    with pytest.raises(TypeError):
        fast.RankTable({b"a": 0}).encode("a")


# ─── the pre-token cache's loop (encode_words) ──────────────────────────────────────────


@settings(max_examples=200)
@given(vocab=rank_vocabs(), words=st.lists(st.text(alphabet=CHARS + "\ud800", max_size=6)),
       maxsize=st.integers(0, 5), maxkey=st.integers(0, 4))  # fmt: skip
def test_encode_words_keeps_what_the_pure_cache_keeps(vocab, words, maxsize, maxkey):
    tok = Tokenizer(vocab, None, cache_size=0)
    pure_cache = PretokenCache(tok._bpe_str, maxsize, maxkey)
    c_cache = PretokenCache(tok._bpe_str, maxsize, maxkey)
    want, got = [1], [1]
    pure_cache.extend(want, words)
    c_cache.extend(got, words, tok._native_table)
    assert got == want
    assert dict(c_cache) == dict(pure_cache)


def test_a_lone_surrogate_and_a_long_pretoken_go_to_compute():
    calls: list[str] = []
    cache = PretokenCache(lambda p: calls.append(p) or (len(p),), 10, 1000)
    table = fast.RankTable({bytes([b]): b for b in range(256)})
    out: list[int] = []
    cache.extend(out, ["a\ud800", "x" * 300, "ab"], table)
    assert calls == ["a\ud800", "x" * 300]
    assert out == [2, 300, 97, 98]


# ─── whole tokenizers: the presets against tiktoken, both paths ─────────────────────────


@pytest.fixture(scope="module")
def presets(tiktoken_cache) -> dict[str, tuple[Tokenizer, tiktoken.Encoding]]:
    return {name: (load_preset(name), tiktoken.get_encoding(name))
            for name in ("gpt2", "cl100k_base", "o200k_base")}  # fmt: skip


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_presets_on_multilingual_text_both_paths(presets, name, monkeypatch):
    tok, enc = presets[name]
    want = enc.encode(MULTILINGUAL * 3, disallowed_special=())
    tok.clear_cache()
    assert tok.encode(MULTILINGUAL * 3) == want
    monkeypatch.setattr(native, "bpe", None)
    monkeypatch.setattr(char_start, "_BUILD_AFTER", 0)
    tok.clear_cache()
    assert tok.encode(MULTILINGUAL * 3) == want


@settings(max_examples=200)
@given(text=st.text(max_size=60))
def test_presets_on_arbitrary_unicode(presets, text: str):
    for tok, enc in presets.values():
        tok.clear_cache()
        assert tok.encode(text) == enc.encode(text, disallowed_special=()), text


def test_a_tokenizer_with_its_table_still_pickles(presets):
    tok, enc = presets["cl100k_base"]
    tok.encode("東京は日本の首都です")  # builds the table
    copy = pickle.loads(pickle.dumps(tok))
    assert "_native_table" not in vars(copy)  # each process builds its own
    assert copy.encode("東京は日本の首都です") == enc.encode("東京は日本の首都です")


# ─── SentencePiece BPE models: SpmWords ─────────────────────────────────────────────────


@functools.cache
def _trained_bpe(options: tuple[tuple[str, Any], ...]) -> tuple[Any, Any]:
    """A SentencePiece BPE model trained here on the built-in corpus, and sentencepiece."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_lines()), model_writer=out, model_type="bpe", vocab_size=800,
        minloglevel=2, **dict(options),
    )  # fmt: skip
    data = out.getvalue()
    return sentencepiece_tokenizer(data), spm.SentencePieceProcessor(model_proto=data)


SPM_MODELS = {
    "v1": lambda: _mistral("v1"),
    "v7": lambda: _mistral("v7"),
    "bytes": lambda: _trained_bpe((("byte_fallback", True),)),
    "no-bytes": lambda: _trained_bpe(()),  # <unk> runs merge: the pure loop
    "user": lambda: _trained_bpe((("byte_fallback", True),
                                  ("user_defined_symbols", "<ud>,ab,∑x,▁the")))
}  # fmt: skip


@settings(max_examples=60)
@given(text=TEXTS)
@pytest.mark.parametrize("name", list(SPM_MODELS))
def test_sentencepiece_bpe_words_both_paths(name: str, text: str):
    tok, sp = SPM_MODELS[name]()
    want = sp.encode(text)
    tok.model.clear_cache()
    assert tok.encode(text) == want
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "bpe", None)
        tok.model.clear_cache()
        assert tok.encode(text) == want


def test_sentencepiece_bpe_words_keep_what_the_pure_loop_computes():
    tok, _ = SPM_MODELS["user"]()
    model = tok.model
    words = model.words(" ".join(_lines()[:200])) + ["ab<ud>x", "x" * 300, "x\u0301"]
    out_c: list[int] = []
    model.clear_cache()
    model.encode_words(words, out_c)
    kept = dict(model._ids_cache)
    assert model.__dict__.get(native_words.NATIVE_WORDS)  # the C loop ran
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "bpe", None)
        model.clear_cache()
        out_pure: list[int] = []
        model.encode_words(words, out_pure)
        assert out_c == out_pure
        # (the pure loop also keeps the pieces it cuts a word into: a word is its pieces)
        assert all(tuple(model.encode_word(word)) == ids for word, ids in kept.items())


@settings(max_examples=80)
@given(text=TEXTS)
@example(text="x" * 100 + " ab" * 40)  # a word over LONG_WORD: the word loop's bigram cuts
@example(text="▁" * 300)
@example(text="ab<ud>x ∑x ab∑ the\ud800 é")  # user-defined pieces; a lone surrogate
@pytest.mark.parametrize("name", ["v7", "bytes", "user"])
def test_encode_text_is_encode_words(name: str, text: str):
    """The one-pass encode (word bounds, the table's own word cache) gives what the word
    loop gives over model.words(text): cold, then from its cache, then cleared."""
    tok, _ = SPM_MODELS[name]()
    model = tok.model
    if tok.normalizer is not None and "\ud800" not in text:  # (it refuses a lone surrogate)
        text = tok.normalizer.normalize_str(text)

    def outcome(encode: Any) -> Any:
        out: list[int] = [7]
        try:
            encode(out)
        except UnicodeEncodeError as err:  # a lone surrogate: the same error both ways
            return type(err)
        return out

    model.clear_cache()
    want = outcome(lambda out: model.encode_words(model.words(text), out))
    for _ in range(2):  # the second time from the table's cache
        assert outcome(lambda out: model.encode_text(text, out)) == want
    model.clear_cache()
    assert outcome(lambda out: model.encode_text(text, out)) == want


def test_encode_text_runs_in_c_and_forgets_when_full():
    """encode_text takes the C pass (no word in the model's dict), and its cache forgets
    everything at its bound (200,000 words) and goes on giving the same IDs."""
    tok, sp = SPM_MODELS["v7"]()
    model = tok.model
    model.clear_cache()
    text = " ".join(f"w{k}x" for k in range(210_000))
    got: list[int] = []
    model.encode_text(tok.normalizer.normalize_str(text), got)
    assert model._ids_cache == {}  # the C pass kept its words itself
    assert got == sp.encode(text)
    assert tok.encode("w5x w209999x") == sp.encode("w5x w209999x")


def test_encode_bounds_refuses_bounds_of_another_text():
    tok, _ = SPM_MODELS["v7"]()
    model = tok.model
    tok.encode("ab")  # builds the table
    table = model.__dict__[native_words.NATIVE_WORDS]

    def bounds(*at: int) -> bytes:
        return struct.pack(f"{len(at)}n", *at)

    compute = model.encode_word
    for bad in (bounds(0, 3), bounds(1, 2), bounds(0, 2, 2), bounds(0, 1)[:-1], bounds()):
        with pytest.raises(ValueError, match="bounds are not this text's"):
            table.encode_bounds("ab", bad, compute, 256, [])
    with pytest.raises(TypeError):
        table.encode_bounds("ab", bounds(0, 2), compute, 256, ())
    out: list[int] = []
    table.encode_bounds("", b"", compute, 256, out)
    assert out == []


def test_the_constants_are_the_models():
    assert (native_words.CACHE_WORD, native_words.CACHE_MAX) == (sp_bpe._CACHE_WORD,
                                                                 sp_bpe._CACHE_MAX)


def test_a_sentencepiece_model_with_its_table_still_pickles():
    tok, sp = SPM_MODELS["v7"]()
    tok.encode("東京は日本の首都です")
    copy = pickle.loads(pickle.dumps(tok))
    assert native_words.NATIVE_WORDS not in vars(copy.model)
    assert copy.encode("東京は日本の首都です") == sp.encode("東京は日本の首都です")

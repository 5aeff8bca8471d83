"""core.pipeline.models.native_merges: a Hugging Face BPE model's merges in C (tokplay_native's
PairTable) give the IDs core.engine.bpe.merge gives, on arbitrary words, byte fallback included; a
model pickles without its table; a model the table cannot hold keeps the pure loop."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import native
from core.engine.bpe import merge
from core.pipeline.models import BPEModel
from core.pipeline.models.native_merges import NATIVE_MERGES, merge_ids

needs_c = pytest.mark.skipif(native.bpe is None, reason="tokplay_native is not built")

#: a vocab over a few characters, every pair and some triples merged, byte fallback for the rest
CHARS = "ab▁中é"
PAIRS = [(x, y) for x in CHARS for y in CHARS]
TRIPLES = [(x + y, z) for x, y in PAIRS[::3] for z in CHARS[:3]]
VOCAB = {f"<0x{b:02X}>": b for b in range(256)}
for token in [*CHARS, *(x + y for x, y in PAIRS), *(x + y for x, y in TRIPLES)]:
    VOCAB.setdefault(token, len(VOCAB))
MERGES = [*PAIRS[::-1], *TRIPLES]  # (ranks out of the characters' order: ties matter)
WORDS = st.text(st.sampled_from(list(CHARS + "z😀")), max_size=300)


def _model() -> BPEModel:
    return BPEModel(VOCAB, MERGES, byte_fallback=True)


@given(WORDS)
@settings(max_examples=200, deadline=None)
def test_merge_ids_is_core_bpe_merge(word: str) -> None:
    model = _model()
    ids = [VOCAB.get(ch) for ch in word]
    ids = [i for i in ids if i is not None]
    assert merge_ids(model, list(ids)) == merge(list(ids), model._ranks, model._merged)


@given(WORDS)
@settings(max_examples=100, deadline=None)
def test_encode_word_is_the_tokenize_ids(word: str) -> None:
    model = _model()
    assert model.encode_word(word) == [t[0] for t in model.tokenize(word)]


@needs_c
def test_a_new_word_builds_the_table_once_and_a_pickle_drops_it() -> None:
    model = _model()
    assert model.encode_word("ab中é▁a") == [t[0] for t in model.tokenize("ab中é▁a")]
    table = model.__dict__[NATIVE_MERGES]
    assert type(table).__name__ == "PairTable"
    model.encode_word("ba中")
    assert model.__dict__[NATIVE_MERGES] is table
    copy = pickle.loads(pickle.dumps(model))
    assert NATIVE_MERGES not in copy.__dict__
    assert copy.encode_word("ab中é▁a") == model.encode_word("ab中é▁a")


@needs_c
def test_a_float_rank_keeps_the_pure_loop() -> None:
    model = _model()
    model._ranks = {pair: float(rank) for pair, rank in model._ranks.items()}
    ids = [VOCAB["a"], VOCAB["b"], VOCAB["a"]]
    assert merge_ids(model, list(ids)) == merge(list(ids), model._ranks, model._merged)
    assert model.__dict__[NATIVE_MERGES] is False

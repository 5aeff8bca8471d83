"""Vocabulary and Tokenize say what each kind of model really is (ui.kinds): byte-level BPE
(the 256 bytes, merges), SentencePiece BPE (characters, merges ordered by scores), Unigram
(scores, no merges) and WordPiece (longest pieces, no merges). A special token is no byte."""

from __future__ import annotations

import functools
import io
import json
from typing import Any

import pytest

from core.formats.detect import load_tokenizer_files
from core.formats.presets import load_preset
from tests.chart_svg import merge_trees
from tests.html_tables import tables
from tests.conftest import need_module
from tests.test_app_pages import TOKENIZE, VOCAB, all_html, metric, open_page
from tests.test_interface import WORD_PIECE_DOC
from ui import kinds

pytestmark = pytest.mark.xdist_group("apptest")

TEXT = "the cats sat naive"
WHY = "🔍 Why this split"
PRE = "✂️ Pre-tokens"


@functools.cache
def _sentencepiece(model_type: str) -> Any:
    """A small SentencePiece model trained here (``bpe`` or ``unigram``), loaded by core."""
    from core.train.builtin_corpus import builtin_corpus_documents

    spm = need_module("sentencepiece")
    lines = [ln for doc in builtin_corpus_documents()[:10] for ln in doc.splitlines() if ln.strip()]
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out,
                                   model_type=model_type, vocab_size=400, minloglevel=2)
    return load_tokenizer_files({"spiece.model": out.getvalue()})


def _wordpiece() -> Any:
    return load_tokenizer_files({"tokenizer.json": json.dumps(WORD_PIECE_DOC).encode()})


MODELS = {
    "byte-level BPE": (lambda: load_preset("gpt2"), kinds.BYTE_BPE),
    "SentencePiece BPE": (lambda: _sentencepiece("bpe"), kinds.CHAR_BPE),
    "Unigram": (lambda: _sentencepiece("unigram"), kinds.UNIGRAM),
    "WordPiece": (_wordpiece, kinds.WORDPIECE),
}


@pytest.fixture(params=list(MODELS))
def model(request: pytest.FixtureRequest) -> tuple[str, Any, kinds.Kind]:
    make, kind = MODELS[request.param]
    return request.param, make(), kind


def captions(at: Any) -> list[str]:
    return [c.value for c in at.caption]


# ---- Vocabulary ------------------------------------------------------------------------------


def test_vocabulary_caption_describes_the_model(model: tuple[str, Any, kinds.Kind]) -> None:
    name, tok, kind = model
    assert kinds.kind_of(tok.capabilities) is kind
    at = open_page(VOCAB, (name, tok))
    assert not at.exception and not at.error
    caption = captions(at)[0]
    assert caption == kind.vocabulary
    assert ("256 single bytes" in caption) is (kind is kinds.BYTE_BPE)
    assert ("merge tree" in caption) is bool(tok.capabilities.merges)
    if not tok.capabilities.merges:
        assert "learns no merges" in caption


def test_vocabulary_shows_merges_only_for_models_that_list_them(
        model: tuple[str, Any, kinds.Kind]) -> None:
    name, tok, kind = model
    at = open_page(VOCAB, (name, tok))
    if tok.merges:
        assert metric(at, "Merges") == f"{len(tok.merges):,}"
    else:  # SentencePiece BPE orders its merges by scores: no list, no merge columns
        assert metric(at, "Model") == tok.kind
        (table,) = tables(at)
        assert not {"merge", "left", "right"} & set(table[0])
    assert [s.value for s in at.subheader][0] == (
        "Merge tree" if tok.capabilities.merges else "Piece")


def test_vocabulary_calls_a_special_token_special_not_a_byte() -> None:
    tok = load_preset("gpt2")
    at = open_page(VOCAB, ("GPT-2", tok))
    at.number_input(key="_w.voc.token").set_value(50256).run()
    assert not at.exception and not at.error
    assert merge_trees(at) == [[("<|endoftext|>", "ID 50256 · special")]]
    at.number_input(key="_w.voc.token").set_value(32).run()  # GPT-2's ID 32: the byte "A"
    assert merge_trees(at) == [[("A", "ID 32 · byte")]]


def test_vocabulary_merge_tree_of_sentencepiece_bpe_ends_at_base_pieces() -> None:
    tok = _sentencepiece("bpe")
    (word_id,) = tok.encode("return")  # "▁return": merged from characters
    at = open_page(VOCAB, ("spm bpe", tok))
    at.number_input(key="_w.voc.token").set_value(word_id).run()
    assert not at.exception and not at.error
    (tree,) = merge_trees(at)
    kinds_drawn = [line.split(" · ")[1] for _, line in tree]
    assert "base piece" in kinds_drawn and "byte" not in kinds_drawn, tree
    assert tree[0] == ("▁return", f"ID {word_id} · merge #{tok.merge_tree(word_id).rank + 1}")
    special = tok.special_token_ids["</s>"]
    at.number_input(key="_w.voc.token").set_value(special).run()
    assert merge_trees(at) == [[("</s>", f"ID {special} · special")]]


# ---- Tokenize --------------------------------------------------------------------------------


def tokenize_tab(tok: Any, name: str, tab: str) -> Any:
    at = open_page(TOKENIZE, (name, tok))
    at.text_area[0].set_value(TEXT).run()
    at.session_state["tok.tab"] = tab
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def test_pretokens_caption_describes_the_model(model: tuple[str, Any, kinds.Kind]) -> None:
    name, tok, kind = model
    at = tokenize_tab(tok, name, PRE)
    n = len(tok.encode_details(TEXT).pretokens)
    (caption,) = [c for c in captions(at) if c.startswith(("The pre-tokenizer", "The text in"))]
    assert caption == kind.pretokens.format(n=f"{n:,}")
    assert ("BPE never merges" in caption) is (kind is kinds.BYTE_BPE)
    if not tok.capabilities.merges:
        assert "BPE" not in caption and "no merge" not in caption.lower().replace("no merges", "")


def test_why_this_split_describes_the_model(model: tuple[str, Any, kinds.Kind]) -> None:
    name, tok, kind = model
    at = tokenize_tab(tok, name, WHY)
    traced = [c for c in captions(at) if c.startswith("Start from the ")]
    if kind is kinds.WORDPIECE:  # no merges: no trace, and a word on why
        assert not traced
        assert kind.no_trace in [i.value for i in at.info]
    elif kind is kinds.UNIGRAM:  # the best path by scores (ui.why_split)
        assert not traced and any("learns no merges" in c for c in captions(at))
    else:
        (caption,) = traced
        first = "bytes" if kind is kinds.BYTE_BPE else "characters"
        assert caption.startswith(f"Start from the {first} of “")
        assert ("order it learned them" in caption) is bool(tok.merges)
        assert f'<span class="tp-rank">{first}</span>' in all_html(at)


def test_vocabulary_offers_only_the_orders_the_model_has(model: tuple[str, Any, kinds.Kind]) -> None:
    name, tok, kind = model
    at = open_page(VOCAB, (name, tok))
    orders = at.selectbox(key="_w.voc.order").options
    assert ("newest merges first" in orders) is bool(tok.merges)  # a merge list to sort by
    assert ("highest score first" in orders) is (kind is kinds.UNIGRAM)
    assert orders[:2] == ["ID", "longest first"]

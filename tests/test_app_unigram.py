"""The pages with a SentencePiece Unigram model (T5/ALBERT/XLM-R's kind): Tokenize's chips and
"why this split" (best path against the next best), Vocabulary's scores, Replay's note."""

from __future__ import annotations

import pytest

from core.formats.detect import load_tokenizer_files
from tests.html_tables import tables
from tests.pipeline.test_unigram import loaded, trained
from tests.test_app_pages import TOKENIZE, VOCAB, all_html, metric, open_page, page

pytestmark = pytest.mark.xdist_group("apptest")

REPLAY = page("Replay").script
TEXT = "Hello wörld, the tokenizer"


@pytest.fixture(scope="module")
def unigram():
    return load_tokenizer_files({"spiece.model": trained("nmt_nfkc")})


def test_tokenize_shows_unigram_chips_and_the_best_path(unigram):
    at = open_page(TOKENIZE, ("t5-like", unigram))
    at.text_area[0].set_value(TEXT).run()
    assert not at.exception and not at.error
    _, sp = loaded("nmt_nfkc")
    assert metric(at, "Tokens") == f"{len(sp.encode(TEXT)):,}"
    at.session_state["tok.tab"] = "🔍 Why this split"
    at.run()
    assert not at.exception and not at.error
    html = all_html(at)
    assert "tp-rank\">best · −" in html and "next best · −" in html and "lower: cuts" in html


def test_vocabulary_shows_scores_not_merges(unigram):
    at = open_page(VOCAB, ("t5-like", unigram))
    assert not at.exception and not at.error
    (table,) = tables(at)
    assert "score" in table[0] and "merge" not in table[0]
    _, sp = loaded("nmt_nfkc")
    (row,) = [r for r in table if r["ID"] == 10]
    assert row["score"] == pytest.approx(sp.get_score(10), abs=5e-5)  # shown to 4 decimals
    at.selectbox(key="_w.voc.order").set_value("highest score first").run()
    scores = [r["score"] for r in tables(at)[0] if r["score"] is not None]
    assert len(scores) > 100 and scores == sorted(scores, reverse=True)


def test_replay_says_it_is_for_merge_based_models(unigram):
    at = open_page(REPLAY, ("t5-like", unigram))
    assert not at.exception
    assert any("Unigram" in c.value and "merge-based" in c.value for c in at.caption)

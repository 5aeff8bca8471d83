"""ui.state's cache keys come from the tokenizer's own fingerprint (core.interface): two
pipelines with the same vocabulary and a different normalizer never share cached results."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.pipeline.models import WordLevelModel
from core.pipeline.normalizers import Lowercase
from core.pipeline.pre_tokenizers import Whitespace
from core.pipeline.tokenizer import PipelineTokenizer
from tests.test_app_pages import COMPARE, DECODE, HOME, TOKENIZE, open_page
from ui.state import fingerprint
from tests.copy_lines import copied
from tests.sidebar import active_tokenizer

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

VOCAB = {"<unk>": 0, "hi": 1, "Hi": 2}


def word_level(*, lowercase: bool) -> PipelineTokenizer:
    """A WordLevel pipeline, with or without a Lowercase normalizer: ``encode("Hi")`` is
    ``[1]`` with it and ``[2]`` without."""
    return PipelineTokenizer(model=WordLevelModel(VOCAB), pre_tokenizer=Whitespace(),
                             normalizer=Lowercase() if lowercase else None)


def code_lines(at) -> list[str]:
    """The page's copy lines: the link and the IDs under the chips."""
    return copied(at.main)


def test_a_normalizer_alone_changes_the_fingerprint() -> None:
    plain, lower = word_level(lowercase=False), word_level(lowercase=True)
    assert (plain.encode("Hi"), lower.encode("Hi")) == ([2], [1])
    assert fingerprint(plain) != fingerprint(lower)
    assert fingerprint(plain) == plain.fingerprint()  # the tokenizer's own, not a guess
    assert fingerprint(word_level(lowercase=True)) == fingerprint(lower)  # content, not identity


def test_each_pipeline_shows_its_own_tokens() -> None:
    """The bug: both pipelines got one fingerprint, so one cache key, and the second one
    picked showed the first one's tokens ([2] for both)."""
    plain, lower = word_level(lowercase=False), word_level(lowercase=True)
    at = open_page(TOKENIZE, ("plain", plain), ("lower", lower))
    at.text_area[0].set_value("Hi").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "2" in code_lines(at) and "1" not in code_lines(at)
    at.selectbox(key="tok.tokenizer").set_value("lower").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "1" in code_lines(at) and "2" not in code_lines(at)
    at.selectbox(key="tok.tokenizer").set_value("plain").run()
    assert "2" in code_lines(at) and "1" not in code_lines(at)


def test_each_pipeline_decodes_with_its_own_cache_entry() -> None:
    """Decode's "IDs of the Tokenize page's text" go through the same cache, keyed the same."""
    plain, lower = word_level(lowercase=False), word_level(lowercase=True)
    for label, tok, expected in (("plain", plain, "2"), ("lower", lower, "1")):
        at = open_page(None, (label, tok))
        at.session_state["tok.text"] = "Hi"
        at.switch_page(DECODE)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.text_area[0].value == expected, label


# ---- the tokenizer pages use now: one rule for pickers and the sidebar ----------------------


def sidebar_tokenizer(at) -> str | None:
    """The label the sidebar names under "Active tokenizer" (as code), if any."""
    shown = active_tokenizer(at)
    return shown[0] if shown else None


def test_a_fresh_session_names_gpt2_in_the_sidebar_as_the_page_shows_it() -> None:
    """The bug: the sidebar said "None yet" while Tokenize showed GPT-2, its default."""
    at = open_page(None)
    assert sidebar_tokenizer(at) == "GPT-2 (gpt2)"  # Home has no picker: what pages will use
    at.switch_page(TOKENIZE)
    at.run()
    assert at.selectbox(key="tok.tokenizer").value == "GPT-2 (gpt2)"
    assert sidebar_tokenizer(at) == "GPT-2 (gpt2)"
    assert "None yet" not in active_tokenizer(at)[1]


def test_pickers_and_sidebar_start_from_the_same_tokenizer() -> None:
    """Nothing chosen yet, one tokenizer of the session's own: Tokenize, Compare and the
    sidebar all start from it (Compare used to start from GPT-2)."""
    mine = word_level(lowercase=False)
    at = AppTest.from_file(HOME, default_timeout=120)
    at.session_state["ui.tokenizers"] = {
        "mine": {"tok": mine, "source": "test", "fingerprint": fingerprint(mine), "meta": {}}}
    at.run()
    assert sidebar_tokenizer(at) == "mine"
    at.switch_page(COMPARE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect[0].value[0] == "mine"
    assert sidebar_tokenizer(at) == "mine"
    at.query_params.clear()  # as the menu opens a page (AppTest keeps Compare's link)
    at.switch_page(TOKENIZE)
    at.run()
    assert at.selectbox(key="tok.tokenizer").value == "mine" == sidebar_tokenizer(at)


def _current_labels_script() -> None:
    """Run in AppTest: for each active label in turn, what ``current_label`` and
    ``active_label`` say, and what the whole list of offered tokenizers says they should."""
    import streamlit as st

    from core.formats.presets import load_preset
    from ui import state

    state.init_session()
    if st.session_state.get("own"):
        state.register_tokenizer("mine", load_preset("gpt2"), source="test")
        state.register_tokenizer("mine too", load_preset("gpt2"), source="test")
    offered = state.available_tokenizers()
    got = []
    for label in [None, "GPT-2 (gpt2)", "mine", "mine too", "gone", "📚 x · 0123456789abcdef",
                  "Word-level baseline (built-in corpus)", offered[-1], 3]:
        st.session_state[state._ACTIVE] = label
        want = label if label in offered else None
        got.append((label, state.active_label(), want, state.current_label(),
                    want if want is not None else offered[0]))
    st.session_state["checked"] = got


@pytest.mark.parametrize("own", [False, True])
def test_current_label_is_the_active_one_if_offered_else_the_first_offered(own: bool) -> None:
    """``current_label`` asks the cheap sources first instead of listing every tokenizer:
    the same answer as the whole list gives, for presets, baselines, the session's own,
    Hub models and labels no picker offers."""
    at = AppTest.from_function(_current_labels_script, default_timeout=60)
    at.session_state["own"] = own
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    for label, active, want_active, current, want_current in at.session_state["checked"]:
        assert (active, current) == (want_active, want_current), label
    firsts = {current for label, _, _, current, _ in at.session_state["checked"] if label is None}
    assert firsts == {"mine too" if own else "GPT-2 (gpt2)"}  # the newest own, else GPT-2

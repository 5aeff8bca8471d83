"""The model picker and ``model=`` links (ui/model_picker.py, ui/hub_models.py, the ``model``
row of ui/url_params.py) in AppTest sessions, the Hub being the local stand-in
(tests/hub_stub.py): a link names a model and the page loads it; the 🤗 box opens any ID and
refuses a malformed one before any request; Compare adds models; a server that cannot reach
the Hub says the model is not cached there; the static build offers no Hub models.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hub_stub import GPT2, LLAMA3, MISTRAL_SP, HubStub, real_repos
from tests.test_app_pages import DECODE, VOCAB
from tests.test_links import open_url, params_of, reopen, the_link, warnings
from ui import hub_models, keys
from tests.copy_lines import copied
from tests.sidebar import active_tokenizer

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

GPT2_LABEL = "🤗 " + GPT2
SP_LABEL = "🤗 " + MISTRAL_SP


@pytest.fixture(scope="module")
def stub() -> Iterator[HubStub]:
    repos, renamed = real_repos(llama3_json=b"{}")
    del repos[LLAMA3]
    server = HubStub(repos, renamed).start()
    yield server
    server.stop()


@pytest.fixture
def hub(stub: HubStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HubStub:
    monkeypatch.setenv("HF_ENDPOINT", stub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("TOKPLAY_LIBRARY_DIR", str(tmp_path / "library"))
    hub_models.cached_repos.clear()
    return stub


def test_a_model_link_opens_the_model_and_the_link_names_it(hub: HubStub) -> None:
    at = open_url("Tokenize", {"model": GPT2, "text": "hello world"})
    assert at.selectbox(key="tok.tokenizer").value == GPT2_LABEL
    assert not warnings(at)
    assert "31373, 995" in copied(at)  # GPT-2's IDs of "hello", " world"
    link = the_link(at)
    assert params_of(link)["model"] == [GPT2] and "tok" not in params_of(link)
    again = reopen(link)
    assert again.selectbox(key="tok.tokenizer").value == GPT2_LABEL


def test_the_box_opens_any_id_or_page_address(hub: HubStub) -> None:
    at = open_url("Tokenize")
    at.text_input(key="tok.tokenizer.hub").set_value(
        f"  https://huggingface.co/{MISTRAL_SP}/tree/main ").run()
    assert not at.exception
    assert at.selectbox(key="tok.tokenizer").value == SP_LABEL
    assert at.text_input(key="tok.tokenizer.hub").value == ""  # ready for the next one
    assert params_of(the_link(at))["model"] == [MISTRAL_SP]


@pytest.mark.parametrize("bad", ["../../etc/passwd", "a/b/c", "<b>x</b>/y"])
def test_the_box_refuses_a_malformed_id_before_any_request(hub: HubStub, bad: str) -> None:
    at = open_url("Tokenize")
    before = len(hub.requests)
    at.text_input(key="tok.tokenizer.hub").set_value(bad).run()
    assert not at.exception
    (error,) = at.error
    shown = error.value.replace("\\", "")  # markdown escapes: the text is shown as typed
    assert "is not a Hugging Face model ID: write it as org/name" in shown
    assert "<b>" not in error.value  # never HTML
    assert at.selectbox(key="tok.tokenizer").value == "GPT-2 (gpt2)"  # nothing else changed
    assert hub.requests[before:] == []


def test_a_bad_model_link_is_one_note(hub: HubStub) -> None:
    at = open_url("Tokenize", {"model": "../secret"})
    assert "The link's model `../secret` is not a Hugging Face model ID (org/name)" in warnings(at)
    assert at.selectbox(key="tok.tokenizer").value == "GPT-2 (gpt2)"


def test_compare_takes_tok_and_model_from_a_link_and_adds_more(hub: HubStub) -> None:
    at = open_url("Compare", {"tok": "gpt2", "model": [GPT2, MISTRAL_SP]})
    assert at.multiselect[0].value == ["GPT-2 (gpt2)", GPT2_LABEL, SP_LABEL]
    link = the_link(at)
    assert params_of(link)["tok"] == ["GPT-2 (gpt2)"]
    assert params_of(link)["model"] == [GPT2, MISTRAL_SP]
    assert reopen(link).multiselect[0].value == ["GPT-2 (gpt2)", GPT2_LABEL, SP_LABEL]
    only_models = open_url("Compare", {"model": [MISTRAL_SP, GPT2]})
    assert only_models.multiselect[0].value == [SP_LABEL, GPT2_LABEL]
    only_models.query_params.clear()  # a link with models alone replaces the comparison
    only_models.query_params["model"] = [MISTRAL_SP]
    only_models.run()
    assert only_models.multiselect[0].value == [SP_LABEL]
    at.text_input(key="cmp.tokenizers.hub").set_value("gpt2").run()  # a fourth
    at.text_input(key="cmp.tokenizers.hub").set_value(MISTRAL_SP).run()  # already there
    assert at.multiselect[0].value == ["GPT-2 (gpt2)", GPT2_LABEL, "🤗 gpt2", SP_LABEL]


def test_a_server_without_the_hub_says_the_model_is_not_cached_there(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """The link's note says why, and the page keeps the tokenizer in use. The bug: the
    model was made active before it loaded, so the picker and the sidebar named it while
    the page (and every later page) showed the built-in fallback tokenizer."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # HF_ENDPOINT: conftest's dead port
    hub_models.cached_repos.clear()
    at = open_url("Tokenize", {"model": "someone/uncached-model", "text": "Hello world"})
    assert warnings(at).replace("\\", "") == (
        "Link problem: The link's model `someone/uncached-model` cannot be loaded: this server "
        "cannot reach the Hugging Face Hub and someone/uncached-model is not cached here; "
        "models cached on this server: none; showing “GPT-2 (gpt2)” instead.")
    picker = at.selectbox(key="tok.tokenizer")
    assert picker.value == "GPT-2 (gpt2)"
    assert not [o for o in picker.options if "uncached-model" in o]  # not remembered either
    assert active_tokenizer(at)[0] == "GPT-2 (gpt2)"  # the active one
    assert "15496, 995" in copied(at)  # GPT-2's "Hello", " world"


def test_pickers_offer_popular_opened_and_cached_models_but_not_in_the_static_build(
        hub: HubStub, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.services.hub import fetch_tokenizer_files

    fetch_tokenizer_files(MISTRAL_SP)  # into this test's cache (the server may hold it loaded)
    at = open_url("Tokenize", {"model": MISTRAL_SP})
    options = at.selectbox(key="tok.tokenizer").options
    hub_part = [o for o in options if o.startswith("🤗")]
    assert hub_part[0].startswith(SP_LABEL) and hub_part[0].endswith("cached here")
    assert any(o.startswith("🤗 Qwen/Qwen3-8B · ") for o in hub_part)
    assert any(o.startswith("🤗 meta-llama/Llama-3.1-8B · ") for o in hub_part)
    monkeypatch.setenv("TOKPLAY_RUNTIME", "browser")
    assert hub_models.hub_labels() == []


def shown_errors(at) -> list[str]:
    """The page's error lines (markdown escapes dropped; one naming an address is shown
    whole as code: ``ui.display.escaped``)."""
    return [e.value.replace("\\", "") for e in at.error]


def test_a_model_that_cannot_load_leaves_the_tokenizer_in_use(hub: HubStub) -> None:
    """The bug: the model's label became the active tokenizer, so the picker and the sidebar
    named it while the page (and every later page) showed the built-in fallback tokenizer.
    A model that cannot load is now one line under the box, and nothing else changes."""
    at = open_url("Tokenize", {"text": "Hello world"})
    at.text_input(key="tok.tokenizer.hub").set_value("nobody/no-such-model").run()
    assert not at.exception
    (error,) = shown_errors(at)
    assert f"no model named nobody/no-such-model on {hub.url}: check the name" in error
    assert not warnings(at)  # no fallback note: nothing was swapped
    picker = at.selectbox(key="tok.tokenizer")
    assert picker.value == "GPT-2 (gpt2)"
    assert not [o for o in picker.options if "no-such-model" in o]
    opened = at.session_state[keys.HUB_MODELS] if keys.HUB_MODELS in at.session_state else []
    assert "nobody/no-such-model" not in opened
    assert "15496, 995" in copied(at)  # GPT-2's "Hello", " world"
    at.query_params.clear()  # as the menu opens a page
    at.switch_page(DECODE)
    at.run()
    assert at.selectbox(key="dec.tokenizer").value == "GPT-2 (gpt2)"
    assert at.text_area[0].value == "15496, 995"  # the Tokenize text, in GPT-2's IDs


def test_a_listed_model_that_cannot_load_is_not_picked(hub: HubStub) -> None:
    """The same for a popular model picked from the list (the stub knows none of them)."""
    at = open_url("Tokenize")
    at.selectbox(key="tok.tokenizer").set_value("🤗 Qwen/Qwen3-8B").run()
    assert not at.exception
    (error,) = shown_errors(at)
    assert f"no model named Qwen/Qwen3-8B on {hub.url}: " in error
    assert at.selectbox(key="tok.tokenizer").value == "GPT-2 (gpt2)"
    assert not warnings(at)


def test_compare_adds_no_model_that_cannot_load(hub: HubStub) -> None:
    at = open_url("Compare", {"tok": ["gpt2", "cl100k_base"]})
    at.text_input(key="cmp.tokenizers.hub").set_value("nobody/no-such-model").run()
    assert not at.exception
    (error,) = shown_errors(at)
    assert f"no model named nobody/no-such-model on {hub.url}: " in error
    assert at.multiselect[0].value == ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)"]
    assert not warnings(at)  # nothing "left out": it was never added


def test_the_sidebar_box_opens_no_model_that_cannot_load(hub: HubStub) -> None:
    at = open_url("Tokenize")
    at.session_state["ui.hub"] = True  # the sidebar's "Open a Hugging Face model", opened
    at.run()
    at.text_input(key="ui.sidebar_hub").set_value("nobody/no-such-model").run()
    assert not at.exception
    (error,) = [e.value.replace("\\", "") for e in at.sidebar.error]
    assert f"no model named nobody/no-such-model on {hub.url}: " in error
    assert at.selectbox(key="tok.tokenizer").value == "GPT-2 (gpt2)"
    assert active_tokenizer(at)[0] == "GPT-2 (gpt2)"  # still the active one
    assert not warnings(at)


def test_a_model_picked_on_decode_that_cannot_load_is_not_picked(hub: HubStub) -> None:
    """Decode's, Vocabulary's and Replay's picker (ui/widgets.py) as Tokenize's: the bug made
    the model active while the pages showed the built-in fallback tokenizer."""
    at = open_url("Decode")
    ids = at.text_area[0].value
    at.selectbox(key="dec.tokenizer").set_value("🤗 Qwen/Qwen3-8B").run()
    assert not at.exception
    (error,) = shown_errors(at)
    assert f"no model named Qwen/Qwen3-8B on {hub.url}: " in error
    assert not warnings(at)  # no "this page shows another tokenizer" note
    assert at.selectbox(key="dec.tokenizer").value == "GPT-2 (gpt2)"
    assert active_tokenizer(at)[0] == "GPT-2 (gpt2)"  # still the active one
    assert at.text_area[0].value == ids
    at.switch_page(VOCAB)
    at.run()
    assert not at.error and not warnings(at)  # the line is shown once
    assert at.selectbox(key="voc.tokenizer").value == "GPT-2 (gpt2)"


def test_a_compare_link_adds_no_model_that_cannot_load(hub: HubStub) -> None:
    at = open_url("Compare", {"tok": "gpt2", "model": ["nobody/no-such-model", GPT2]})
    assert at.multiselect[0].value == ["GPT-2 (gpt2)", GPT2_LABEL]
    (note,) = [w.value.replace("\\", "") for w in at.warning]
    assert note.startswith("Link problem: The link's model `nobody/no-such-model` cannot be "
                           "loaded: ")
    assert f"no model named nobody/no-such-model on {hub.url}: " in note
    assert note.endswith(". Comparing the others.")
    assert not [o for o in at.multiselect[0].options if "no-such-model" in o]

"""A Hugging Face model by name in a real browser: typed into the picker's 🤗 box, its chips
drawn, the link shared (``model=org/name``) and opened in a new browser context.

The app runs with ``HF_ENDPOINT`` pointing at the local Hub stand-in (tests/hub_stub.py),
serving Mistral's real SentencePiece model, and an empty ``HF_HOME``: nothing leaves the
machine. The expected IDs come from ``sentencepiece`` itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import (
    AppBrowser,
    StreamlitServer,
    browser_session,
    click_until,
    served_app,
)
from tests.browser.test_sharing import (
    chip_ids,
    copied_link,
    link_warnings,
    open_link,
    params_of,
    picked_tokenizer,
    wait_until,
)
from tests.conftest import need_module
from tests.hub_stub import GPT2, LLAMA3, MISTRAL_SP, MISTRAL_TEKKEN, HubStub, real_repos

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

TEXT = "Any model by name: 日本語 and 🧩, tokenized."
BOX = "org/name, e.g. Qwen/Qwen3-8B"  # the 🤗 box's placeholder


@pytest.fixture(scope="module")
def stub() -> Iterator[HubStub]:
    repos, renamed = real_repos(llama3_json=b"{}")  # Llama 3's file is not needed here
    del repos[LLAMA3]
    server = HubStub(repos, renamed).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def hub_server(stub: HubStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    """The app, its Hub being the stub, its Hugging Face cache and library empty folders."""
    workdir = tmp_path_factory.mktemp("hub-server")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(HF_ENDPOINT=stub.url, HF_HOME=str(workdir / "hf"), HF_HUB_DISABLE_TELEMETRY="1")
    with served_app(workdir, env) as server:
        yield server


@pytest.fixture
def app(browser: object, hub_server: StreamlitServer, screenshot_dir: Path) -> Iterator[AppBrowser]:
    with browser_session(browser, hub_server.url, screenshot_dir) as helper:
        yield helper


def commit_text(app: AppBrowser, text: str) -> None:
    box = app.page.get_by_role("textbox", name="Text", exact=True)  # (not the Text/Chat switch)
    box.fill(text)
    with app.rerun():
        box.press("Control+Enter")


def _expected_ids(stub: HubStub) -> list[str]:
    spm = need_module("sentencepiece")
    sp = spm.SentencePieceProcessor(model_proto=stub.repos[MISTRAL_SP].files["tokenizer.model"])
    return [str(i) for i in sp.encode(TEXT)]


def test_pick_a_model_by_id_share_the_link_and_open_it_elsewhere(
    app: AppBrowser, browser: object, hub_server: StreamlitServer, screenshot_dir: Path,
    stub: HubStub,
) -> None:
    expected = _expected_ids(stub)
    app.goto("Tokenize")
    commit_text(app, TEXT)
    box = app.page.get_by_placeholder(BOX)
    box.fill(MISTRAL_SP)
    with app.rerun():
        box.press("Enter")
    wait_until(lambda: chip_ids(app) == expected, "the model's chips")
    assert picked_tokenizer(app).startswith(f"🤗 {MISTRAL_SP}")
    link = copied_link(app)
    assert params_of(link)["model"] == [MISTRAL_SP] and "tok" not in params_of(link), link
    app.assert_healthy()

    with browser_session(browser, hub_server.url, screenshot_dir) as other:
        open_link(other, link)
        wait_until(lambda: chip_ids(other) == expected, "the same chips in the new session")
        assert picked_tokenizer(other).startswith(f"🤗 {MISTRAL_SP}")
        other.assert_healthy()
    # one load for the whole server: the second session asked the Hub nothing
    # (tokenizer.model is an LFS file: one HEAD on resolve, answered 302, then one CDN GET)
    assert stub.fetched().count("tokenizer.model") == 1
    assert len([p for _, p in stub.requests if p.startswith("/cdn/")]) == 1
    assert not {"config.json", "pytorch_model.bin"} & set(stub.fetched())


def test_links_naming_bad_unknown_or_unreachable_models_say_so(
    app: AppBrowser, hub_server: StreamlitServer, stub: HubStub
) -> None:
    before = len(stub.requests)
    app.goto("Tokenize?model=..%2F..%2Fetc%2Fpasswd")
    assert "model ../../etc/passwd is not a Hugging Face model ID (org/name)" in link_warnings(app)
    assert stub.requests[before:] == []  # refused before any request
    # (on Compare: a model that cannot load is left out, with no fallback tokenizer to train)
    app.goto("Compare?tok=gpt2&model=nobody%2Fno-such-model")
    wait_until(lambda: "no model named nobody/no-such-model" in link_warnings(app),
               "the unknown model's message")
    # this test fetches what it needs itself (no reliance on an earlier test's fetches)
    app.goto(f"Tokenize?model={MISTRAL_SP}")
    wait_until(lambda: chip_ids(app) != [], "the Mistral model's chips")
    app.goto(f"Tokenize?model={GPT2}")  # both are cached on the server now
    wait_until(lambda: chip_ids(app) != [] and picked_tokenizer(app).startswith(f"🤗 {GPT2}"),
               "GPT-2's chips")
    # the sidebar lists the server's cached models: one click opens one
    sidebar = app.page.locator('[data-testid="stSidebar"]')
    cached = sidebar.get_by_role("button", name=MISTRAL_SP)
    if not cached.is_visible():  # the expander may be open already
        with app.rerun():
            sidebar.get_by_text("Open a Hugging Face model").click()
    click_until(cached, lambda: picked_tokenizer(app).startswith(f"🤗 {MISTRAL_SP}"),
                "the cached model")
    app.wait()
    app.screenshot("hub-picker-sidebar")
    stub.stop()  # the server has no Hub any more
    app.goto(f"Compare?tok=gpt2&model={MISTRAL_TEKKEN}")
    wait_until(lambda: (f"cannot reach the Hugging Face Hub and {MISTRAL_TEKKEN} is not cached "
                        f"here; models cached on this server: ") in link_warnings(app),
               "the not-cached-here message")
    app.assert_healthy()

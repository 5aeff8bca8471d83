"""The Tokenize page's Chat mode in a real browser: type a two-message conversation, see its
token count (what ``apply_chat_template`` gives), share it, reopen the link elsewhere.

Messages are typed key by key with no Enter and no click outside (live editing, as the text
box); every wait is for content on the page, never for a time window.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.chat import apply_chat_template
from core.formats.presets import load_preset
from tests.browser.conftest import RUN_TIMEOUT_MS, AppBrowser, StreamlitServer
from tests.browser.test_sharing import (
    browser_session,
    copied_link,
    open_link,
    params_of,
    url_params,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

MESSAGES = [{"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": "Hi <|endoftext|> 日本語?"}]
_METRIC = """([label, value]) => [...document.querySelectorAll('.tp-stat')]
    .some(m => m.querySelector('.tp-stat-label')?.innerText.trim() === label
          && m.querySelector('.tp-stat-value')?.innerText.trim() === value)"""


def _type_over(app: AppBrowser, label: str, text: str) -> None:
    box = app.page.get_by_label(label, exact=True)  # type: ignore[attr-defined]
    box.click()
    app.page.keyboard.press("Control+A")  # type: ignore[attr-defined]
    app.page.keyboard.type(text, delay=40)  # type: ignore[attr-defined]


def _tokens_shown(app: AppBrowser, count: int) -> None:
    app.page.wait_for_function(_METRIC, arg=["Tokens", f"{count:,}"],  # type: ignore[attr-defined]
                               timeout=RUN_TIMEOUT_MS)


def test_two_messages_counted_shared_and_reopened(
    app: AppBrowser, browser: Any, streamlit_server: StreamlitServer, screenshot_dir: Any
) -> None:
    app.goto("Tokenize?tok=cl100k_base")
    app.page.get_by_text("💬 Chat", exact=True).click()  # type: ignore[attr-defined]
    app.page.get_by_label("Message 1", exact=True).wait_for(timeout=RUN_TIMEOUT_MS)  # type: ignore[attr-defined]
    for i, message in enumerate(MESSAGES, start=1):
        _type_over(app, f"Message {i}", message["content"])
    expected = apply_chat_template(load_preset("cl100k_base"), MESSAGES, add_generation_prompt=True)
    _tokens_shown(app, len(expected))
    wait_until(lambda: url_params(app).get("mode") == ["chat"], "the mode in the address bar")
    # the template's special tokens are chips of their own, apart from the typed text
    chips = app.page.locator(".tp-chips").first  # type: ignore[attr-defined]
    assert chips.locator(".tp-special", has_text="<|im_start|>").count() == 3
    assert chips.locator(".tp-special", has_text="<|endoftext|>").count() == 1
    assert "日本語" in chips.inner_text() or "\\x" in chips.inner_text()
    app.wait()
    link = copied_link(app)
    assert params_of(link)["mode"] == ["chat"]
    app.assert_healthy()

    with browser_session(browser, streamlit_server.url, screenshot_dir) as other:
        open_link(other, link)
        _tokens_shown(other, len(expected))
        for i, message in enumerate(MESSAGES, start=1):
            wait_until(lambda i=i, m=message: other.page.get_by_label(  # type: ignore[attr-defined]
                f"Message {i}", exact=True).input_value() == m["content"],
                f"message {i} in the new session")
        other.assert_healthy()

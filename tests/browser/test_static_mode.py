"""The static build's Train page in a real browser: training runs in the page, a slice per
poll (``training.inpage``), with its progress shown while it runs, an exact Pause and Stop, the
downloads, and the note that nothing is kept on a server.

stlite itself cannot load offline (Pyodide's packages come from its CDN), so the server runs
with ``TOKPLAY_RUNTIME=browser``: the same code paths the static build takes (no worker
processes, no library, no ``ws=``), driven by the page's own polling as in the tab.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.launch import stop
from tests.browser.conftest import (
    REPO,
    AppBrowser,
    StreamlitServer,
    browser_session,
    start_streamlit,
)
from tests.browser.test_train_control import (
    _WATCH,
    pause_then_stop_keeps_the_merge_shown,
)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

COPY_LINE = ".tp-copy-text"  # the text of a copy line (ui.copy_line): a link, token IDs


@pytest.fixture(scope="module")
def static_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    workdir = tmp_path_factory.mktemp("static-mode")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKPLAY_")}
    env.update(TOKPLAY_RUNTIME="browser", HOME=str(workdir))
    log = workdir / "server.log"
    proc, url = start_streamlit(REPO, env, log)
    try:
        yield StreamlitServer(url=url, library_dir=workdir, log=log, process=proc)
    finally:
        stop(proc)


@pytest.fixture
def static_app(browser: object, static_server: StreamlitServer,
               screenshot_dir: Path) -> Iterator[AppBrowser]:
    with browser_session(browser, static_server.url, screenshot_dir) as helper:
        yield helper


def test_training_in_the_page_shows_progress_and_pauses_exactly(static_app: AppBrowser) -> None:
    app = static_app
    app.goto("Train")
    page = app.page
    size = page.get_by_label("Vocab size", exact=True)
    size.fill("3000")
    with app.rerun():
        size.press("Enter")
    with app.rerun():
        page.get_by_text("20 merges/s", exact=True).click()
    page.evaluate(_WATCH)
    page.get_by_role("button", name="Start training").click()

    # the count rises while nothing but the page's own polling drives the training
    page.wait_for_function("() => new Set(window.__shown.map(([, n]) => n)).size >= 4",
                           timeout=120_000)  # several rising counts drawn on the way
    shown = page.evaluate("() => window.__shown.map(([, n]) => n)")
    assert shown == sorted(shown) and shown[-1] > shown[0], shown
    app.screenshot("static-mode-train")

    pause_then_stop_keeps_the_merge_shown(app)

    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "This is the static version of the playground" in main
    assert "Save to the library" not in main
    assert "ws=" not in page.url
    app.assert_healthy()


def test_a_link_names_its_page_in_the_query_and_opens_that_view(
        static_app: AppBrowser, browser: object, static_server: StreamlitServer,
        screenshot_dir: Path) -> None:
    """A static host serves only index.html: Tokenize's link is /?page=Tokenize&text=...,
    and a fresh browser opening it lands on Tokenize with the same text and IDs."""
    app = static_app
    app.goto("Tokenize?text=hello%20static%20world")
    link = app.page.locator(COPY_LINE).filter(has_text="?page=Tokenize")
    url = link.first.inner_text().strip()
    assert url.startswith(static_server.url + "/?page=Tokenize&"), url
    ids = app.page.locator(COPY_LINE).filter(has_text=re.compile(r"^\d+(, \d+)*$"))
    expected = ids.first.inner_text().strip()
    with browser_session(browser, static_server.url, screenshot_dir) as other:
        other.page.goto(url)
        other.page.get_by_role("heading", name="Tokenize").wait_for()
        other.wait()
        assert other.page.get_by_role("textbox", name="Text").input_value() == "hello static world"
        got = other.page.locator(COPY_LINE).filter(
            has_text=re.compile(r"^\d+(, \d+)*$")).first.inner_text().strip()
        assert got == expected
        assert "/Tokenize?" in other.page.url
        other.assert_healthy()

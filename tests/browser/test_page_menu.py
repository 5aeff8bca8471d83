"""The sidebar's page menu (``ui.page_menu``: one HTML element): a click changes page in the
same session, with no reload, as Streamlit's page links did; back goes back the same way."""

from __future__ import annotations

import pytest

from tests.browser.conftest import AppBrowser, wait_for_app
from tests.browser.test_reload import active_label, address, open_from_menu

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


def title(app: AppBrowser) -> str:
    return str(app.page.locator('[data-testid="stMain"] h1').first.inner_text())


def test_the_menu_changes_page_without_a_reload(app: AppBrowser) -> None:
    app.goto("Tokenize?tok=cl100k_base&text=hello")
    assert active_label(app) == "GPT-4 (cl100k_base)"
    # a mark on this document: a reload (a new document, a new session) would lose it
    app.page.evaluate("window.tpMenuMark = 'same document'")

    open_from_menu(app, "Decode")
    assert "Decode" in title(app)
    assert app.page.evaluate("window.tpMenuMark") == "same document"
    assert active_label(app) == "GPT-4 (cl100k_base)"  # the session's choice, kept
    menu = app.page.locator('[data-testid="stSidebar"] nav.tp-nav')
    assert menu.locator('a[aria-current="page"]').inner_text().split()[-1] == "Decode"

    before = app.runs.full_runs
    app.page.go_back()  # the history entry the click added
    wait_for_app(app.page, app.runs, after=before)
    assert "Tokenize" in title(app) and "/Tokenize" in address(app)
    assert app.page.evaluate("window.tpMenuMark") == "same document"

    before = app.runs.full_runs
    menu.get_by_role("link", name="Home", exact=True).click()
    wait_for_app(app.page, app.runs, after=before)
    assert "Playground" in title(app) and address(app).rstrip("/") == app.url("").rstrip("/")
    assert app.page.evaluate("window.tpMenuMark") == "same document"

"""Every page opened directly by its URL, in a fresh session, renders itself without errors.

URLs are derived from the files in pages/ the way Streamlit's automatic navigation does it
(``streamlit.source_util.page_icon_and_name``): ``pages/2_🔤_Tokenize.py`` -> ``/Tokenize``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.source_util import page_icon_and_name, page_sort_key

from tests.browser.conftest import REPO, AppBrowser

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

APP_TITLE = "Tokenizer Playground"


def page_urls() -> list[tuple[str, str]]:
    """``(url_path, expected_title)`` for the home page and every file in pages/."""
    pages = [("", APP_TITLE)]
    for path in sorted((REPO / "pages").glob("*.py"), key=page_sort_key):
        _icon, name = page_icon_and_name(path)
        pages.append((name, name.replace("_", " ")))
    return pages


def test_url_paths_follow_streamlits_rule() -> None:
    # what the app's docs and links assume: number prefix and emoji are not part of the URL
    assert page_icon_and_name(Path("2_🔤_Tokenize.py")) == ("🔤", "Tokenize")
    assert page_icon_and_name(Path("1_🏋️_Train.py"))[1] == "Train"
    assert page_icon_and_name(Path("5_⚖️_Compare.py"))[1] == "Compare"


@pytest.mark.parametrize(("url_path", "title"), page_urls(), ids=lambda v: v or "home")
def test_page_opens_directly_by_url(app: AppBrowser, url_path: str, title: str) -> None:
    app.goto(url_path)
    page = app.page
    assert page.url.rstrip("/") == app.url(url_path).rstrip("/"), "Streamlit redirected elsewhere"
    headings = " ".join(page.locator("h1").all_inner_texts())
    shown = f"{page.title()} | {headings}"
    assert title.lower() in shown.lower(), f"page {url_path or '/'} shows {shown!r}, not its title"
    assert page.locator('[data-testid="stException"]').count() == 0, app.exceptions()
    app.screenshot(f"page-{url_path or 'home'}")
    app.assert_healthy()


def test_unknown_page_url_falls_back_without_a_traceback(app: AppBrowser) -> None:
    app.goto("NoSuchPage")
    assert app.exceptions() == []
    assert app.page_errors == []

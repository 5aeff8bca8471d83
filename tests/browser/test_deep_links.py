"""Every page opened directly by its URL, in a fresh session, renders itself without errors,
and its browser asks the server's health once, at the server's root (``deploy.base_hint``:
Streamlit's frontend would otherwise ask ``/<page>/_stcore/health`` first and wait 100 ms).

The URLs come from the page table (``ui.site.PAGES``), which feeds the menu too; a test checks
that they are what Streamlit's automatic navigation derives from the files in ``pages/``
(``streamlit.source_util.page_icon_and_name``): ``pages/2_Tokenize.py`` -> ``/Tokenize``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.source_util import page_icon_and_name

from deploy.base_hint import hint_script
from tests.browser.conftest import REPO, AppBrowser
from ui.site import PAGES

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

APP_TITLE = "Tokenizer Playground"


def page_urls() -> list[tuple[str, str]]:
    """``(url_path, expected_title)`` for every page of the table."""
    return [(p.url_path, p.title if p.url_path else APP_TITLE) for p in PAGES]


def test_the_page_table_matches_the_files_and_streamlits_url_rule() -> None:
    files = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "pages").glob("*.py"))
    assert files == [p.script for p in PAGES if p.url_path]  # every file listed, in menu order
    for p in PAGES[1:]:
        assert p.script.isascii()
        assert page_icon_and_name(Path(p.script)) == ("", p.url_path)


@pytest.mark.parametrize(("url_path", "title"), page_urls(), ids=lambda v: v or "home")
def test_page_opens_directly_by_url(app: AppBrowser, url_path: str, title: str) -> None:
    app.goto(url_path)
    page = app.page
    assert page.url.rstrip("/") == app.url(url_path).rstrip("/"), "Streamlit redirected elsewhere"
    headings = " ".join(page.locator("h1").all_inner_texts())
    shown = f"{page.title()} | {headings}"
    assert title.lower() in shown.lower(), f"page {url_path or '/'} shows {shown!r}, not its title"
    assert page.locator('[data-testid="stException"]').count() == 0, app.exceptions()
    asked = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)"
                          ".filter(n => n.endsWith('/_stcore/health'))")
    assert asked == [app.url("_stcore/health")], "the browser looked for its server elsewhere first"
    app.screenshot(f"page-{url_path or 'home'}")
    app.assert_healthy()


HINTED = [("/Evaluate", "http://h:1/"), ("/Evaluate/", "http://h:1/"),
          ("/play/Tokenize", "http://h:1/play/"), ("/", None), ("/NoSuchPage", None),
          ("/Evaluate/more", None)]


def test_the_hint_names_the_server_under_any_prefix_and_only_on_a_page(browser: object) -> None:
    """The script as the browser runs it, against made-up locations: the URL without the
    page's name, behind a proxy's prefix too; nothing (Streamlit's own probing) elsewhere."""
    body = hint_script().removeprefix("<script>").removesuffix("</script>")
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        for pathname, expected in HINTED:
            got = page.evaluate("([body, pathname]) => { const w = {};"
                                " new Function('location', 'window', body)("
                                "{pathname, origin: 'http://h:1'}, w);"
                                " return w.__streamlit ? w.__streamlit.BACKEND_BASE_URL : null; }",
                                [body, pathname])
            assert got == expected, pathname
    finally:
        context.close()


def test_unknown_page_url_falls_back_without_a_traceback(app: AppBrowser) -> None:
    app.goto("NoSuchPage")
    assert app.exceptions() == []
    assert app.page_errors == []

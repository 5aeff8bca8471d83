"""Tokens made of Markdown and HTML syntax show as themselves, in a real browser (issue 27):
Train's *Newest merges* table (``st.table`` renders every cell as Markdown) and its chart's
hover label (an SVG ``<title>`` in HTML-enabled Markdown: ``<>`` is markup there unless
escaped); and one merge has one number on Train, Replay and Vocabulary (merges are numbered
from 1).

Waits are for content (the page's own text, the script runs), never for time.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.train import train_bpe
from tests.browser.conftest import AppBrowser
from ui.limits import readable_token

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

#: One line each, the more frequent first: BPE learns exactly these pairs, in this order
#: (nothing else is left to merge), each token a piece of Markdown or HTML syntax.
ITEMS = ["**", "~~", "##", "__", ">>", "``", "\\\\", "$$", "<>", "::", "&&", "||"]
CORPUS = "".join(f"{item}\n" * (100 - 5 * k) for k, item in enumerate(ITEMS))
SPECIALS = ["<|endoftext|>"]  # the page's default
MERGE = 5  # the merge followed across pages: `>>` = `>` + `>`


def _upload(app: AppBrowser, path: Path) -> None:
    page = app.page
    with app.rerun():
        page.get_by_text("Upload text files", exact=True).click()
    main = page.locator('[data-testid="stMain"]')
    with app.rerun():
        main.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(path)])
    main.get_by_text(re.compile(rf"Your corpus: {re.escape(path.name)}")).wait_for()


def _table(app: AppBrowser) -> list[dict[str, str]]:
    """The Newest merges table as the browser shows it: one dict per row, by column header."""
    return app.page.evaluate("""() => {
        const table = document.querySelector('[data-testid="stTable"] table');
        const heads = [...table.querySelectorAll('thead th')].map(th => th.innerText.trim());
        return [...table.querySelectorAll('tbody tr')].map(tr => Object.fromEntries(
            [...tr.querySelectorAll('th, td')].map((cell, i) => [heads[i], cell.innerText])));
    }""")


def _hover(app: AppBrowser, number: int) -> str:
    """The hover label of merge ``number`` on Train's count chart: its point's ``title``
    (what the browser's tooltip shows), as the browser parsed it."""
    point = app.page.locator(f'[data-chart="train.chart.counts"] .tp-series i[data-x="{number}"]')
    return point.get_attribute("title")


def test_newest_merges_show_markdown_tokens_literally_and_one_merge_number(
        app: AppBrowser, tmp_path: Path) -> None:
    _, merges = train_bpe([CORPUS], 400, SPECIALS)
    assert [(a + b).decode() for a, b in merges] == ITEMS  # the corpus does what it says
    path = tmp_path / "markdown-syntax.txt"
    path.write_text(CORPUS)
    page = app.page
    page.set_viewport_size({"width": 1280, "height": 1600})

    app.goto("Train")
    _upload(app, path)
    box = page.get_by_label("Vocab size", exact=True)
    box.fill("400")
    with app.rerun():
        box.press("Enter")
    page.get_by_role("button", name="Start training").click()
    page.get_by_role("button", name=re.compile(r"vocab\.pkl")).wait_for(timeout=120_000)
    app.wait()
    app.assert_healthy()
    app.screenshot("literal-tokens-train")

    # the table: newest first, merge n the n-th learned, every token exactly its text
    expected = [{"merge": str(n), "token": readable_token(a + b), "left": readable_token(a),
                 "right": readable_token(b)} for n, (a, b) in enumerate(merges, start=1)][::-1]
    shown = [{k: row[k] for k in ("merge", "token", "left", "right")} for row in _table(app)]
    assert shown == expected
    assert shown[-1] == {"merge": "1", "token": "**", "left": "*", "right": "*"}

    # the chart's hover: the token `<>` (an empty HTML tag if unescaped) as text, at its number
    number = ITEMS.index("<>") + 1
    assert _hover(app, number).split("\n") == [f"merge {number}", "count 60", "<>"]

    # Replay, same session: step k adds merge k
    with app.rerun():
        page.get_by_role("link", name="Replay", exact=True).click()
    thumb = page.locator('[data-testid="stSlider"] input[type="range"]')
    thumb.focus()
    for _ in range(MERGE):
        with app.rerun():
            thumb.press("ArrowRight")
    line = page.locator(".tp-replay-merge")
    line.filter(has_text=f"Merge {MERGE} adds").wait_for()
    new_id = 256 + len(SPECIALS) + MERGE - 1
    assert line.inner_text() == f"Merge {MERGE} adds >> (ID {new_id}) = > + >"
    app.assert_healthy()

    # Vocabulary, same session: that token's merge tree names the same merge
    with app.rerun():
        page.get_by_role("link", name="Vocabulary", exact=True).click()
    box = page.get_by_label("Token ID", exact=True)
    box.fill(str(new_id))
    with app.rerun():
        box.press("Enter")
    root = page.locator(".tp-mtree .tp-mt-box").first
    root.filter(has_text=f"ID {new_id}").wait_for()
    assert [root.locator("code").inner_text(), root.locator(".tp-mt-id").inner_text()] == [
        ">>", f"ID {new_id} · merge #{MERGE}"]
    app.assert_healthy()

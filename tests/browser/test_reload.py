"""Work survives a reload (issue 11): the trained tokenizer, the active choice, the training's
result and a training still running, all through the URL's ``ws=`` (``ui.workspace``)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser.conftest import RUN_TIMEOUT_MS, AppBrowser, click_until, wait_for_app

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

TRAIN_TIMEOUT_MS = 180_000


def address(app: AppBrowser) -> str:
    return str(app.page.evaluate("window.location.href"))


def ws_of(app: AppBrowser) -> str | None:
    return (parse_qs(urlsplit(address(app)).query).get("ws") or [None])[0]


def reload(app: AppBrowser) -> None:
    before = app.runs.full_runs
    app.page.reload(wait_until="domcontentloaded")
    wait_for_app(app.page, app.runs, after=before)


def open_from_menu(app: AppBrowser, title: str) -> None:
    link = app.page.locator('[data-testid="stSidebar"]').get_by_role("link", name=title, exact=True)
    page = re.compile(rf"/{title}(\?|$)")
    before = app.runs.full_runs
    click_until(link, lambda: bool(page.search(urlsplit(address(app)).path)), f"the {title} page")
    wait_for_app(app.page, app.runs, after=before)


def metric(app: AppBrowser, label: str) -> str:
    box = app.page.locator('.tp-stat').filter(has_text=label)
    return box.locator('.tp-stat-value').inner_text()


def active_label(app: AppBrowser) -> str:
    """The active tokenizer's label, as the sidebar shows it (a code span)."""
    sidebar = app.page.locator('[data-testid="stSidebar"]')
    return sidebar.get_by_text("Active tokenizer").locator("xpath=following::code[1]").inner_text()


def chip_ids(app: AppBrowser) -> list[str]:
    return app.page.locator(".tp-chips").first.locator("sub").all_inner_texts()


def start_training(app: AppBrowser, *, vocab_size: int, speed: str = "full speed") -> None:
    app.goto("Train")
    box = app.page.get_by_label("Vocab size", exact=True)
    box.fill(str(vocab_size))
    with app.rerun():
        box.press("Enter")
    if speed != "full speed":
        with app.rerun():
            app.page.get_by_text(speed, exact=True).click()
    with app.rerun():
        app.page.get_by_role("button", name=re.compile("Start training")).click()


def test_a_reload_restores_the_tokenizer_and_the_training_result(app: AppBrowser) -> None:
    start_training(app, vocab_size=320)
    app.page.get_by_text("Training time").wait_for(timeout=TRAIN_TIMEOUT_MS)
    app.wait()
    merges, vocab = metric(app, "Merges"), metric(app, "Vocab size")
    assert (merges, vocab) == ("63", "320")  # 320 - 256 bytes - 1 special
    label = active_label(app)
    assert label.startswith("BPE 320"), label

    open_from_menu(app, "Tokenize")
    app.page.locator(".tp-chips").first.wait_for()
    ids = chip_ids(app)
    assert ids and active_label(app) == label
    ws = ws_of(app)
    assert ws and re.fullmatch(r"[0-9a-f]{16}", ws), address(app)

    reload(app)  # a new Streamlit session: only the URL is left
    app.page.locator(".tp-chips").first.wait_for()
    assert active_label(app) == label
    assert chip_ids(app) == ids  # the trained tokenizer's IDs, not a preset's
    assert ws_of(app) == ws  # nothing changed: the same snapshot
    app.assert_healthy()

    open_from_menu(app, "Train")
    app.page.get_by_text("Training time").wait_for()
    assert (metric(app, "Merges"), metric(app, "Vocab size")) == (merges, vocab)
    for name in ("vocab.pkl", "merges.pkl"):
        app.page.get_by_role("button", name=re.compile(re.escape(name))).wait_for()
    app.page.locator('[data-chart="train.chart.counts"] img').wait_for()  # the charts are back
    assert app.page.get_by_label("Vocab size", exact=True).input_value() == "320"  # the form too
    app.page.set_viewport_size({"width": 1280, "height": 1900})  # the whole result, for the docs
    app.page.locator('.tp-stat').first.scroll_into_view_if_needed()
    app.screenshot("reload-train", full_page=False)
    app.assert_healthy()


def test_other_pages_show_a_running_training_and_a_reload_keeps_watching_it(
        app: AppBrowser) -> None:
    start_training(app, vocab_size=1800, speed="5 merges/s")
    open_from_menu(app, "Decode")
    status = app.page.locator(".st-key-ui-training-status")
    status.get_by_text(re.compile(r"Training(: | \(paused\): )[\d,]+ / 1,543 merges")).wait_for(
        timeout=TRAIN_TIMEOUT_MS)
    first = int(re.search(r"([\d,]+) /", status.inner_text()).group(1).replace(",", ""))
    # it follows the worker without any click: wait for a later count to be drawn
    app.page.wait_for_function(
        """(first) => {
            const el = document.querySelector('.st-key-ui-training-status');
            const m = el && el.innerText.match(/([\\d,]+) \\/ 1,543/);
            return m && parseInt(m[1].replace(/,/g, '')) > first;
        }""", arg=first, timeout=RUN_TIMEOUT_MS)
    assert status.get_by_role("link", name=re.compile("Watch it on Train")).count() == 1

    reload(app)
    app.page.locator(".st-key-ui-training-status").get_by_text(
        re.compile(r"/ 1,543 merges")).wait_for()
    open_from_menu(app, "Train")
    stop = app.page.get_by_role("button", name=re.compile("Stop"))
    stop.wait_for()  # the live view and its controls, reattached to the running job
    with app.rerun():
        stop.click()
    app.page.get_by_text("Training time").wait_for(timeout=TRAIN_TIMEOUT_MS)
    app.assert_healthy()

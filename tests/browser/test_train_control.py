"""Stop and Pause on the Train page, in a real browser: the page states the exact merge the
training ended at, and a Stop clicked while N merges are shown keeps about N.

Waits are for content (the page's own text), never for time.
"""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import AppBrowser

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

PACE = 20  # merges per second: the "20 merges/s" speed
SPECIALS = 1  # the default special tokens: <|endoftext|>
# Records, in the page, when each merge count was first shown and when the end was first
# stated (performance.now() ms). textContent, not innerText: no layout forced per mutation.
_WATCH = r"""() => {
    window.__shown = []; window.__ended = null;
    const check = () => {
        const text = document.body.textContent;
        const m = text.match(/Merges ([\d,]+) \/ [\d,]+/);
        if (m) {
            const n = parseInt(m[1].replaceAll(",", ""), 10);
            const last = window.__shown[window.__shown.length - 1];
            if (!last || last[1] !== n) window.__shown.push([performance.now(), n]);
        }
        if (window.__ended === null && /Stopped by request at merge/.test(text))
            window.__ended = performance.now();
    };
    new MutationObserver(check).observe(document.body,
        {subtree: true, childList: true, characterData: true});
}"""


def _start(app: AppBrowser, vocab_size: int) -> None:
    app.goto("Train")
    page = app.page
    size = page.get_by_label("Vocab size", exact=True)
    size.fill(str(vocab_size))
    with app.rerun():
        size.press("Enter")
    with app.rerun():
        page.get_by_text(f"{PACE} merges/s", exact=True).click()
    page.evaluate(_WATCH)
    page.get_by_role("button", name="Start training").click()


def _stated_end(app: AppBrowser) -> tuple[int, int]:
    """(merges, vocab) from "Stopped by request at merge M (vocab V).", once shown."""
    line = app.page.get_by_text(re.compile(r"Stopped by request at merge [\d,]+ \(vocab [\d,]+\)"))
    line.wait_for(timeout=120_000)
    m = re.search(r"at merge ([\d,]+) \(vocab ([\d,]+)\)", line.inner_text())
    assert m, line.inner_text()
    return int(m[1].replace(",", "")), int(m[2].replace(",", ""))


def _metric(app: AppBrowser, label: str) -> int:
    metric = app.page.locator('.tp-stat').filter(has_text=label)
    value = metric.locator('.tp-stat-value').inner_text()
    return int(value.replace(",", ""))


def _assert_results_agree(app: AppBrowser, merges: int, vocab: int) -> None:
    assert vocab == 256 + SPECIALS + merges
    app.page.get_by_role("button", name=re.compile(r"vocab\.pkl")).wait_for(timeout=120_000)
    assert _metric(app, "Merges") == merges
    assert _metric(app, "Vocab size") == 256 + SPECIALS + merges
    main = app.page.locator('[data-testid="stMain"]').inner_text()
    assert f"Merges {merges:,} / " in main  # the progress line ends on the same count


def test_stop_keeps_the_merges_shown_when_it_was_clicked(app: AppBrowser) -> None:
    _start(app, vocab_size=5000)  # 4,743 merges at 20/s: minutes, far more than the test needs
    page = app.page
    page.wait_for_function("() => window.__shown.some(([, n]) => n > 20)", timeout=120_000)
    # The count on screen is read in the same JavaScript task as the click: a read after the
    # click could see a later redraw (the training goes on until the Stop arrives), and the
    # page keeps exactly what was on screen at the click (ui.click_probe).
    shown = page.evaluate(r"""() => {
        const m = document.body.textContent.match(/Merges ([\d,]+) \/ [\d,]+/);
        document.querySelector(".st-key-train-stop button").click();
        return parseInt(m[1].replaceAll(",", ""), 10);
    }""")
    merges, vocab = _stated_end(app)
    assert merges == shown, (shown, merges)
    _assert_results_agree(app, merges, vocab)
    app.assert_healthy()


def test_paused_at_merge_n_then_stop_keeps_exactly_n(app: AppBrowser) -> None:
    """Deterministic: once the page says "paused at merge P", a Stop keeps exactly P."""
    _start(app, vocab_size=5000)
    app.page.wait_for_function("() => window.__shown.some(([, n]) => n > 5)", timeout=120_000)
    pause_then_stop_keeps_the_merge_shown(app)
    app.assert_healthy()


def pause_then_stop_keeps_the_merge_shown(app: AppBrowser) -> None:
    """Pause, read "paused at merge P", Stop: the page states exactly P merges, and its
    results (metrics, progress line, downloads) agree."""
    page = app.page
    with app.rerun():
        page.get_by_role("button", name="Pause").click()
    paused = page.get_by_text(re.compile(r"paused at merge [\d,]+"))
    paused.wait_for(timeout=120_000)
    at = int(re.search(r"paused at merge ([\d,]+)", paused.inner_text())[1].replace(",", ""))
    page.get_by_role("button", name="Stop").click()
    merges, vocab = _stated_end(app)
    assert merges == at
    _assert_results_agree(app, merges, vocab)

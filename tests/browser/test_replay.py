"""The Replay page in a real browser: a link opens step k with core's encoding at k, the
slider's arrow keys move it, and ▶ Play advances it (waits for content, never for time)."""

from __future__ import annotations

import os
import re
from urllib.parse import quote

import pytest

from core import load_preset
from core.explain.replay import encode_with_first_merges
from tests.browser.conftest import AppBrowser

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

TEXT = "Tokenizers turn text into numbers: the unbelievable 日本語 🧩 <b>bold</b>"

#: The step on the slider and the chips' IDs, read in one go (one consistent frame).
_READ = """() => {
    const thumb = document.querySelector('[data-testid="stSlider"] input[type="range"]');
    const chips = document.querySelector('.tp-chips');
    if (!thumb || !chips) return null;
    return {k: parseInt(thumb.value, 10),
            ids: [...chips.querySelectorAll('.tp-chip sub')].map(s => parseInt(s.innerText, 10))};
}"""


def _shown(app: AppBrowser) -> tuple[int, list[int]]:
    got = app.page.evaluate(_READ)  # type: ignore[attr-defined]
    assert got is not None, "no slider or chips on the page"
    return got["k"], got["ids"]


def test_replay_link_slider_keys_and_play_show_cores_encoding(app: AppBrowser) -> None:
    tok = load_preset("gpt2")
    app.goto(f"Replay?tok=gpt2&k=300&text={quote(TEXT)}")
    app.assert_healthy()
    k, ids = _shown(app)
    assert k == 300
    assert ids == encode_with_first_merges(tok, TEXT, 300)
    assert "Merge 300 adds" in app.page.inner_text("body")  # type: ignore[attr-defined]
    if os.environ.get("TOKPLAY_SCREENSHOT_DIR"):
        app.screenshot("replay")

    # the keyboard: focus the slider's handle, two steps right, one left
    thumb = app.page.locator('[data-testid="stSlider"] input[type="range"]')  # type: ignore[attr-defined]
    thumb.focus()
    for key, expected in (("ArrowRight", 301), ("ArrowRight", 302), ("ArrowLeft", 301)):
        with app.rerun():
            thumb.press(key)
        app.page.wait_for_function(  # type: ignore[attr-defined]
            "(k) => { const c = document.querySelector('.tp-replay-merge');"
            " return c && c.innerText.includes('Merge ' + k + ' adds'); }", arg=str(expected))
        k, ids = _shown(app)
        assert k == expected
        assert ids == encode_with_first_merges(tok, TEXT, k), k
    app.assert_healthy()

    # ▶ Play: the step advances on its own (to the next merge this text uses, each tick)
    with app.rerun():
        app.page.get_by_role("button", name="▶ Play").click()  # type: ignore[attr-defined]
    app.page.wait_for_function(  # type: ignore[attr-defined]
        """() => { const t = document.querySelector('[data-testid="stSlider"] input[type="range"]');
                   return t && parseInt(t.value, 10) > 400; }""",
        timeout=60_000)
    with app.rerun():
        app.page.get_by_role("button", name="⏸ Pause").click()  # type: ignore[attr-defined]
    app.page.get_by_role("button", name="▶ Play").wait_for()  # type: ignore[attr-defined]
    app.wait()
    k, ids = _shown(app)
    assert k > 400
    assert ids == encode_with_first_merges(tok, TEXT, k)
    app.assert_healthy()


def test_replay_of_a_training_marks_the_step_on_its_charts(app: AppBrowser) -> None:
    """Train on the built-in corpus, open Replay from the menu (same session), click the
    slider part-way: the training's two charts carry the step's mark. Saved as the README
    image (assets/screenshot-replay.png) when TOKPLAY_SCREENSHOT_DIR asks for screenshots."""
    page = app.page
    page.set_viewport_size({"width": 1280, "height": 1750})  # type: ignore[attr-defined]
    app.goto("Train")
    page.get_by_role("button", name="Start training").click()  # type: ignore[attr-defined]
    page.get_by_role("button", name=re.compile(r"vocab\.pkl")).wait_for(timeout=120_000)  # type: ignore[attr-defined]
    app.wait()
    with app.rerun():
        page.get_by_role("link", name="Replay", exact=True).click()  # type: ignore[attr-defined]
    page.get_by_text("red mark is step k").wait_for()  # type: ignore[attr-defined]
    track = page.locator('[data-testid="stSlider"] [data-orientation="horizontal"]').last  # type: ignore[attr-defined]
    box = track.bounding_box()
    with app.rerun():
        page.mouse.click(box["x"] + 0.35 * box["width"], box["y"] + box["height"] / 2)  # type: ignore[attr-defined]
    k, ids = _shown(app)
    assert 0 < k < 1743
    for name in ("counts", "growth"):  # the two charts, each with the step's mark
        chart = page.locator(f'[data-chart="rep.chart.{name}"]')  # type: ignore[attr-defined]
        picture = chart.locator("img")  # the SVG picture, drawn by the browser
        picture.wait_for()
        assert picture.evaluate("i => i.decode().then(() => i.naturalWidth)") > 0
        (mark,) = chart.locator(".tp-cursor i").all()  # its hover target, over the picture
        area, spot = picture.bounding_box(), mark.bounding_box()
        middle = (spot["x"] + spot["width"] / 2, spot["y"] + spot["height"] / 2)
        assert area["x"] < middle[0] < area["x"] + area["width"]
        assert area["y"] < middle[1] < area["y"] + area["height"]
        assert mark.get_attribute("title").startswith(f"step {k:,}\n")
    mark = page.locator('[data-chart="rep.chart.counts"] .tp-cursor')  # type: ignore[attr-defined]
    assert mark.get_attribute("data-x") == str(k)  # at merge k
    assert f"Merge {k:,} adds" in page.inner_text("body")  # type: ignore[attr-defined]
    app.assert_healthy()
    if os.environ.get("TOKPLAY_SCREENSHOT_DIR"):
        app.screenshot("screenshot-replay")

"""The Replay page in a real browser: a link opens step k with core's encoding at k, the
slider's arrow keys move it, and ▶ Play advances it (waits for content, never for time)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest

from core import load_preset
from core.replay import encode_with_first_merges
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


def test_replay_screenshot_for_the_readme(app: AppBrowser, screenshot_dir: Path) -> None:
    """The README image: a mid-replay step of GPT-2 on the sample text (saved to
    assets/screenshot-replay.png only when TOKPLAY_SCREENSHOT_DIR asks for screenshots)."""
    app.goto("Replay?tok=gpt2&k=1200")
    app.assert_healthy()
    app.page.locator(".js-plotly-plot").first.wait_for()  # type: ignore[attr-defined]
    path = app.screenshot("screenshot-replay")
    assert path.stat().st_size > 10_000

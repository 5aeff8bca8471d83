"""Refresh the README screenshots in assets/ from a real app in headless chromium.

    .venv/bin/python docs/screenshots.py            # writes assets/screenshot-*.png

It starts ``streamlit run app.py`` on a free loopback port with an empty saved-tokenizer
library, clicks Home's one-click training (1,000 tokens on the built-in corpus), then opens
each page with that tokenizer active and its default text, and saves a screenshot (Train
last: its bigger training would become the active tokenizer). Emoji and CJK text need fonts
(``apt-get install fonts-noto-color-emoji fonts-noto-cjk``); without them chromium draws
boxes.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: docs/ is on the path
    sys.path.insert(0, str(REPO))

from deploy.launch import start_streamlit, stop  # noqa: E402

ASSETS = REPO / "assets"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _settle(page, ms: int = 1500) -> None:
    """Wait until Streamlit has finished its script run, then a little for charts."""
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=120_000
    )
    page.wait_for_timeout(ms)


def main() -> None:
    from playwright.sync_api import sync_playwright

    env = dict(os.environ, TOKPLAY_LIBRARY_DIR=tempfile.mkdtemp(prefix="tokplay-shots-"))
    server = start_streamlit(env=env)  # once it answers its health check
    url = server.url
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(url)
            page.wait_for_selector(".tp-chips", timeout=120_000)  # the GPT-2 example
            _settle(page)
            page.screenshot(path=ASSETS / "screenshot-home.png", full_page=True)
            page.get_by_role("button", name="Train on the built-in corpus and tokenize").click()
            page.wait_for_selector(".tp-chips", timeout=120_000)
            _settle(page)
            page.screenshot(path=ASSETS / "screenshot-tokenize.png", full_page=True)
            for name, path, ready in [("decode", "Decode", ".tp-chips"),
                                      ("vocabulary", "Vocabulary", '[data-chart="voc.lengths"] svg'),
                                      ("compare", "Compare", ".tp-chips"),
                                      ("train", "Train", "button"),
                                      ("replay", "Replay", ".tp-chips")]:  # fmt: skip
                page.get_by_role("link", name=path).first.click()
                page.wait_for_selector(ready, timeout=120_000)
                _settle(page)
                if name == "train":  # a bigger vocab: the finished view with its charts
                    vocab = page.get_by_role("spinbutton", name="Vocab size")
                    vocab.fill("20000")
                    vocab.press("Enter")
                    _settle(page, 500)
                    page.get_by_role("button", name="Start training").click()
                    page.get_by_role("button", name="Start training").and_(
                        page.locator(":enabled")
                    ).wait_for(timeout=120_000)  # enabled again: the training has ended
                    _settle(page, 2500)
                if name == "decode":
                    page.get_by_role("button", name="Use the IDs of the Tokenize page's text").click()
                    _settle(page)
                page.screenshot(path=ASSETS / f"screenshot-{name}.png", full_page=True)
            browser.close()
    finally:
        stop(server.process)
    print("wrote", ", ".join(sorted(p.name for p in ASSETS.glob("screenshot-*.png"))))


if __name__ == "__main__":
    main()

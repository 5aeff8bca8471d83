"""A student trains a corpus far larger than any upload, from the Train page, in a real
browser: a server started with ``TOKPLAY_CORPUS_DIRS`` lists a 200 MB text file by name, the
page trains it where it lies, and the progress line shows the bytes read while counting.

Waits are for content (the page's own text), never for time.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import StreamlitServer, browser_session, served_app

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

NAME = "owt/stories.txt"
MIN_BYTES = 200_000_000
_COUNTING = re.compile(r"Counting pre-tokens: ([\d.]+ [KMG]?B) of ([\d.]+ MB) read \(\d+%\) · "
                       r"([\d,]+) distinct pre-tokens so far")


def write_corpus(path: Path, at_least: int = MIN_BYTES) -> int:
    """At least ``at_least`` bytes of varied lines (a block of 20,000 seeded random lines in
    documents of 50 joined by ``<|endoftext|>``, repeated): written in a second, and
    deterministic.

    subtle: the words are Cyrillic, so counting takes seconds, not a fraction of one: ASCII
    text is counted in C at hundreds of MB/s (200 MB in 0.8 s, three of the page's polls),
    and the test must see the line while counting is under way. Cyrillic goes through the
    `regex` pattern (200 MB in about 15 s on one core), a chunk at a time."""
    rng = random.Random(0)
    words = ["".join(rng.choice("етаоинсхрдлукмфвыпзбгж") for _ in range(rng.randint(2, 9)))
             for _ in range(5000)]
    lines = [" ".join(rng.choice(words) for _ in range(12)) + ".\n" for _ in range(20_000)]
    block = "".join(line + ("<|endoftext|>" if i % 50 == 49 else "")
                    for i, line in enumerate(lines)).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for _ in range(-(-at_least // len(block))):
            fh.write(block)
    return path.stat().st_size


@pytest.fixture(scope="module")
def corpus_server(
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StreamlitServer, int]]:
    """The app with one shared corpus folder holding a 200 MB corpus."""
    workdir = tmp_path_factory.mktemp("corpus-server")
    size = write_corpus(workdir / "corpora" / NAME)
    env = dict(os.environ, TOKPLAY_CORPUS_DIRS=str(workdir / "corpora"))
    with served_app(workdir, env) as server:
        yield server, size


def test_a_200_mb_server_corpus_trains_from_the_page_showing_the_bytes_read(
        browser: object, corpus_server: tuple[StreamlitServer, int], screenshot_dir: Path) -> None:
    server, size = corpus_server
    assert size >= MIN_BYTES
    with browser_session(browser, server.url, screenshot_dir) as app:
        app.goto("Train")
        page = app.page
        with app.rerun():
            page.get_by_text("Server corpus", exact=True).click()
        picker = page.get_by_role("combobox", name="Corpus on this server", exact=True)
        picker.wait_for()
        main = page.locator('[data-testid="stMain"]')
        assert picker.input_value() == f"{NAME} · {size / 1e6:.1f} MB"
        assert "corpus=owt%2Fstories.txt" in main.locator('.tp-copy-text').inner_text()
        app.screenshot("train-server-corpus")
        vocab = page.get_by_label("Vocab size", exact=True)
        vocab.fill("300")
        with app.rerun():
            vocab.press("Enter")
        page.get_by_role("button", name="Start training").click()
        # counting: the bytes read so far across the corpus, and the distinct pre-tokens (the
        # line as the page shows it once some bytes are read, caught in the page itself)
        shown = page.wait_for_function(
            "() => (document.body.textContent.match(/Counting pre-tokens: [1-9][^(]* read "
            "\\(\\d+%\\) · [\\d,]+ distinct pre-tokens so far/) || [null])[0]",
            timeout=120_000).json_value()
        seen = _COUNTING.fullmatch(shown)
        assert seen and seen[2] == f"{size / 1e6:.1f} MB" and seen[1] != seen[2], shown
        page.set_viewport_size({"width": 1280, "height": 1100})  # the line under the controls
        app.screenshot("train-server-corpus-counting", full_page=False)
        result = page.locator('.tp-stat').filter(has_text="Vocab size")
        result.wait_for(timeout=300_000)
        assert result.locator('.tp-stat-value').inner_text() == "300"
        assert "BPE 300 · owt/stories.txt" in page.inner_text("body")
        app.screenshot("train-server-corpus-done")
        app.assert_healthy()

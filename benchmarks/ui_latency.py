"""What a user waits for in the browser: live typing and the training view (headless chromium).

    .venv/bin/python benchmarks/ui_latency.py

- **typing**: last keystroke -> the new character count on Tokenize (GPT-2), over 6 typed words;
  again while two other sessions train at full speed on 20 MB each (both cores busy), with the
  training workers at niceness 0 and at the default 10 (``TOKPLAY_TRAIN_NICENESS``);
- **training lag**: Train at 20 merges/s, the shown merge count sampled every animation frame
  for 15 s. The worker emits merge k at a + k/20 s (paced), so the lag at browser time T is
  (T - N/20) - a; a is estimated as min(T - N/20), the best case, whose own few tens of ms are
  left out (the figures slightly under-estimate).

Each part starts its own server (a temporary library) on a free port.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: benchmarks/ is on the path
    sys.path.insert(0, str(REPO))

from deploy.launch import streamlit_server  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def _page(pw: object, **env: str) -> Iterator[tuple[object, str]]:
    """A fresh server (``env`` added to its environment, a temporary library), once it
    answers its health check, and a chromium page on it: (page, base URL); both closed after
    (the server with its training workers)."""
    with (tempfile.TemporaryDirectory(prefix="tokplay-latency-") as library,
          streamlit_server(env=dict(os.environ, TOKPLAY_LIBRARY_DIR=library, **env)) as server):
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900}), server.url
        finally:
            browser.close()


METRIC_JS = """const m = [...document.querySelectorAll('.tp-stat')]
    .find(e => e.innerText.split('\\n')[0].trim() === 'Characters');"""


def typing(pw: object, *, env: dict[str, str] | None = None, trainings: int = 0,
           label: str = "typing") -> None:
    """Last key -> new count on Tokenize; with ``trainings`` full-speed trainings of other
    sessions running meanwhile (a 20 MB upload each: they keep both cores busy)."""
    with _page(pw, **(env or {})) as (page, url):
        for _ in range(trainings):
            _start_big_training(page.context.browser, url)
        page.goto(f"{url}/Tokenize?tok=gpt2&text=hello")
        page.wait_for_selector(".tp-chips", timeout=120000)
        time.sleep(2)
        box = page.get_by_label("Text", exact=True)
        out = []
        for word in [" alpha", " bravo", " charlie", " delta", " echo", " foxtrot"]:
            box.click()
            page.keyboard.press("End")
            before = page.evaluate("() => { " + METRIC_JS + " return m.querySelector('.tp-stat-value').innerText; }")
            page.keyboard.type(word, delay=40)
            t0 = page.evaluate("performance.now()")
            want = int(before.replace(",", "")) + len(word)
            t1 = page.evaluate("(want) => new Promise(res => { const f = () => { " + METRIC_JS + """
                const v = m && parseInt(m.querySelector('.tp-stat-value').innerText.replace(/,/g, ''));
                if (v === want) res(performance.now()); else requestAnimationFrame(f); }; f(); })""", want)
            out.append(t1 - t0)
            time.sleep(1)
        print(f"{label}: last key -> new count {[round(x) for x in out]} ms, "
              f"median {statistics.median(out):.0f} ms, max {max(out):.0f} ms")


def _start_big_training(browser: object, url: str) -> None:
    """Another user's session: upload ~20 MB of random words, start a full-speed training to
    vocab 20,000, and leave it running (counting, then merging, for a minute or more)."""
    import random

    path = Path(tempfile.gettempdir()) / "tokplay-bench-words.txt"
    if not path.exists():
        rng = random.Random(0)
        letters = "etaoinshrdlucmfwypvbgk"
        path.write_text(" ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
                                 for _ in range(3_000_000)), encoding="utf-8")
    page = browser.new_context().new_page()  # type: ignore[attr-defined]
    page.goto(f"{url}/Train")
    page.get_by_text("Upload text files", exact=True).click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(path))
    page.get_by_text("Your corpus").wait_for(timeout=120000)
    box = page.get_by_label("Vocab size", exact=True)
    box.fill("20000")
    box.press("Enter")
    time.sleep(2)  # the run the new size starts (a benchmark, not a test: a pause will do)
    page.get_by_role("button", name="Start training").click()
    page.get_by_text("Counting pre-tokens").wait_for(timeout=60000)


def training_lag(pw: object) -> None:
    with _page(pw) as (page, url):
        page.goto(f"{url}/Train")
        page.get_by_role("button", name="Start training").wait_for(timeout=120000)
        time.sleep(1)
        page.get_by_text("20 merges/s", exact=True).click()
        time.sleep(1.5)
        page.get_by_role("button", name="Start training").click()
        page.wait_for_function("() => /Merges [\\d,]+ \\//.test(document.body.innerText)",
                               timeout=120000)
        samples = page.evaluate("""() => new Promise(res => { const out = []; const t0 = performance.now();
            const f = () => { const m = document.body.innerText.match(/Merges ([\\d,]+) \\//);
              if (m) out.push([performance.now() / 1000, parseInt(m[1].replace(/,/g, ''))]);
              if (performance.now() - t0 < 15000) requestAnimationFrame(f); else res(out); }; f(); })""")
        x = [t - n / 20 for t, n in samples]
        lags = sorted(v - min(x) for v in x)
        over = sum(1 for v in lags if v > 0.5) / len(lags)
        print(f"training lag: {len(samples)} samples, median {statistics.median(lags) * 1000:.0f} ms, "
              f"p90 {lags[int(0.9 * len(lags))] * 1000:.0f} ms, max {lags[-1] * 1000:.0f} ms, "
              f"{over:.1%} over 0.5 s")


if __name__ == "__main__":
    with sync_playwright() as pw:
        typing(pw)
        # other users' trainings must not freeze this session (workers run niced, training.worker)
        for niceness in ("0", "10"):
            typing(pw, env={"TOKPLAY_TRAIN_NICENESS": niceness}, trainings=2,
                   label=f"typing during 2 trainings (niceness {niceness})")
        training_lag(pw)

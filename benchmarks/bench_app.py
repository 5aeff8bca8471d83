"""Issue 36's figures in one table: team load, first visits, typing, encode/decode ratios.

    .venv/bin/python benchmarks/bench_app.py [--parts load,serve,first,typing,ratios]
        [--seconds 10] [--visits 7] [--repo DIR]

Each part starts its own servers (an empty temporary library) and stops them:

- **load**: Tokenize reruns by link (``tok=gpt2&text=<60 fresh characters>``: a whole-page
  run each) from 1, 5 and 20 websocket sessions on one server process started as ``make run``
  starts it (``deploy/warm_start.py``, measured once its warm-up is done), closed loop, no think
  time (the client of ``benchmarks/load_protocol.py``); reruns/s, p50, p95 and the server's
  CPU per rerun, which is less noisy than the latencies on a shared machine;
- **serve**: 20 such sessions through ``make serve WORKERS=2`` (``deploy/serve.py``: HAProxy
  and two Streamlit processes, CPU counted over all of them; measured once both warm-ups are done);
- **first**: a new visitor's first view of every page on a warm server (each page opened once
  before): a fresh browser context, from the request until the title is drawn and no script
  run, running indicator or skeleton is left; the median of ``--visits``, beside a bare
  Streamlit page (a title alone) measured the same way in the same rounds;
- **typing**: Tokenize with GPT-2 in chromium, the last key to the new "Characters" count
  (drawn by the run that draws the chips), for a short text and for 10,000 characters;
- **ratios**: tiktoken's time over ours (above 1: we are faster) to encode and to decode a
  slice of docs-en with GPT-2 (``benchmarks/bench_encode.py`` does the full comparison).

The machine is shared: compare figures from one run, or runs made back to back (``--repo`` of
a checkout of the commit before, e.g. ``git worktree add /tmp/base HEAD``). Timings are never
in the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: only benchmarks/ is on the path
    sys.path.insert(0, str(REPO))

from benchmarks.load.client import loopback_urls  # noqa: E402
from benchmarks.load.report import Cell, fmt, percentile  # noqa: E402
from benchmarks.load.runner import (  # noqa: E402
    measure,
    start_server,
    tree_cpu_seconds,
    wait_for_warm_ups,
)
from deploy.launch import free_port, start_streamlit, stop, wait_healthy  # noqa: E402
from ui.site import PAGES  # noqa: E402

PARTS = ("load", "serve", "first", "typing", "ratios")
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]
BARE_APP = 'import streamlit as st\n\nst.title("A bare Streamlit page")\n'
CORPUS = REPO.parent / "shared" / "corpora" / "docs-en.txt.gz"

#: The issue's goals: (row, goal text, test on the measured value).
GOALS: dict[str, tuple[str, Callable[[float], bool]]] = {
    "load 20 p95": ("≤ 300 ms", lambda v: v <= 300),
    "serve 20 p95": ("≤ 150 ms", lambda v: v <= 150),
    "first ratio": ("≤ 1.3x bare", lambda v: v <= 1.3),
    "typing short": ("≤ 200 ms", lambda v: v <= 200),
    "typing 10k": ("≤ 400 ms", lambda v: v <= 400),
}


def met(goal: str, value: float) -> str:
    """``"yes"`` / ``"no"`` for ``value`` against the goal named ``goal`` (``-`` for nan)."""
    if value != value:  # nan
        return "-"
    return "yes" if GOALS[goal][1](value) else "no"


# ---- load: one process, and make serve --------------------------------------------------------


def _load_args(seconds: float) -> argparse.Namespace:
    return argparse.Namespace(seconds=seconds, max_reruns=5000, chars=60, run_timeout=60.0,
                              seed=14, mode="link")


def load_cells(repo: Path, sessions: list[int], seconds: float) -> list[Cell]:
    """Tokenize by link from each number of ``sessions`` on one server of ``repo``."""
    with tempfile.TemporaryDirectory(prefix="tokplay-bench-app-") as tmp:
        proc, http, _ = start_server(repo, Path(tmp),
                                     warm=(repo / "deploy" / "warm_start.py").exists())
        try:
            _, ws_url = loopback_urls(http)
            cells = [Cell("Tokenize", 0, n) for n in sessions]
            for cell in cells:
                asyncio.run(measure(ws_url, cell, _load_args(seconds), proc.pid))
        finally:
            stop(proc)
    return cells


def serve_cell(repo: Path, sessions: int, seconds: float, workers: int = 2) -> Cell:
    """Tokenize by link from ``sessions`` through ``deploy/serve.py --workers`` (HAProxy)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tokplay-bench-serve-") as tmp:
        env = dict(os.environ, TOKPLAY_LIBRARY_DIR=tmp, PYTHONPATH=str(repo))
        log = Path(tmp) / "serve.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(  # noqa: S603
                [sys.executable, str(repo / "deploy" / "serve.py"), "--workers", str(workers),
                 "--port", str(port), "--bind", "127.0.0.1"], cwd=repo, env=env,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_healthy(f"http://127.0.0.1:{port}", [proc], timeout=180)
            # measured once every worker's warm-up is done, as the one-process cell is: the
            # warm-ups would otherwise share the cores with the first seconds of the load
            wait_for_warm_ups(log, proc, count=workers)
            _, ws_url = loopback_urls(f"http://127.0.0.1:{port}")
            cell = Cell("Tokenize", 0, sessions)
            asyncio.run(measure(ws_url, cell, _load_args(seconds), None,
                                lambda: tree_cpu_seconds(proc.pid)))
        finally:
            stop(proc)
    return cell


# ---- browsers: first visits and typing --------------------------------------------------------

READY_JS = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-connection-state') === 'CONNECTED'
    && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidgetRunningIcon"]')
    && !document.querySelector('[data-testid="stSkeleton"]')
    && !!document.querySelector('[data-testid="stMain"] h1'); }"""


@contextmanager
def _server(cwd: Path, **env: str) -> Iterator[str]:
    """A Streamlit server of ``cwd``'s app.py (warm start, empty library): its URL."""
    with tempfile.TemporaryDirectory(prefix="tokplay-bench-web-") as library:
        full = dict(os.environ, TOKPLAY_LIBRARY_DIR=library, PYTHONPATH=str(cwd), **env)
        server = start_streamlit(cwd=cwd, env=full, warm=(cwd / "deploy" / "warm_start.py").exists())
        try:
            yield server.url
        finally:
            stop(server.process)


def first_view_ms(browser: object, url: str) -> float:
    """A new visitor (fresh browser context) opening ``url``: ms until the page is ready."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.wait_for_function(READY_JS, timeout=120_000, polling=20)
        return (time.perf_counter() - t0) * 1000
    finally:
        context.close()


def first_visits(repo: Path, visits: int) -> dict[str, float]:
    """Median first view per page (``"bare"``: the bare Streamlit page), in ms."""
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {"bare": []}
    with (tempfile.TemporaryDirectory(prefix="tokplay-bare-") as bare_dir,
          _server(repo) as url, sync_playwright() as pw):
        (Path(bare_dir) / "app.py").write_text(BARE_APP, encoding="utf-8")
        with _server(Path(bare_dir)) as bare_url:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            try:
                for p in PAGES:  # warm: each page's first run in this process, not timed
                    first_view_ms(browser, f"{url}/{p.url_path}")
                for _ in range(visits):  # rounds: the bare page beside every page each time
                    times["bare"].append(first_view_ms(browser, bare_url))
                    for p in PAGES:
                        times.setdefault(p.title, []).append(first_view_ms(browser, f"{url}/{p.url_path}"))
            finally:
                browser.close()
    return {name: statistics.median(ms) for name, ms in times.items()}


METRIC_JS = """() => { const m = [...document.querySelectorAll('.tp-stat')]
    .find(e => e.innerText.split('\\n')[0].trim() === 'Characters');
    return m ? parseInt(m.querySelector('.tp-stat-value').innerText.replace(/,/g, '')) : -1; }"""


def typing_ms(repo: Path, words: int = 6) -> dict[str, float]:
    """Median ms from the last key of a typed word to the new character count on Tokenize,
    with a short text (``"short"``) and with 10,000 characters (``"10k"``)."""
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    with _server(repo) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{url}/Tokenize?tok=gpt2&text=hello")
            page.wait_for_function(READY_JS, timeout=120_000)
            box = page.get_by_label("Text", exact=True)
            for label, start in (("short", "hello"), ("10k", ("lorem ipsum " * 900)[:10_000])):
                box.fill(start)  # committed by the pause after it
                page.wait_for_function(f"() => ({METRIC_JS})() === {len(start)}", timeout=120_000)
                samples = []
                for i in range(words):
                    box.press("End")
                    word = f" w{i}x"
                    want = page.evaluate(METRIC_JS) + len(word)
                    page.keyboard.type(word, delay=40)
                    t0 = page.evaluate("performance.now()")
                    t1 = page.evaluate("(want) => new Promise(res => { const f = () => { "
                                       f"if (({METRIC_JS})() === want) res(performance.now()); "
                                       "else requestAnimationFrame(f); }; f(); })", want)
                    samples.append(t1 - t0)
                    page.wait_for_timeout(500)  # a pause between words, as a person makes
                out[label] = statistics.median(samples)
        finally:
            browser.close()
    return out


# ---- encode/decode ratios ---------------------------------------------------------------------


def ratios(megabytes: float = 2.0, repeat: int = 3) -> dict[str, float]:
    """tiktoken's best time over ours, GPT-2, on the first ``megabytes`` of docs-en."""
    import gzip

    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(REPO.parent / "shared" / "tiktoken-cache"))
    import tiktoken

    from core.formats.presets import load_preset

    with gzip.open(CORPUS, "rt", encoding="utf-8") as fh:
        text = fh.read(int(megabytes * 1_000_000))
    ours, ref = load_preset("gpt2"), tiktoken.get_encoding("gpt2")
    ids = ref.encode(text, allowed_special="all")

    def best(fn: Callable[[], object]) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    return {"encode": best(lambda: ref.encode(text, allowed_special="all")) / best(lambda: ours.encode(text)),
            "decode": best(lambda: ref.decode(ids)) / best(lambda: ours.decode(ids))}


# ---- the table --------------------------------------------------------------------------------


def load_row(what: str, c: Cell, goal: str | None = None) -> str:
    p95 = percentile(c.latencies_ms, 95)
    goal_text, ok = (GOALS[goal][0], met(goal, p95)) if goal else ("", "")
    return (f"| {what} | {c.rate:.1f} reruns/s, p50 {fmt(percentile(c.latencies_ms, 50), ',.0f')} ms, "
            f"p95 {fmt(p95, ',.0f')} ms, {fmt(c.cpu_ms_per_rerun, '.1f')} ms CPU/rerun"
            f"{f', {c.errors} errors' if c.errors else ''} | {goal_text} | {ok} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--seconds", type=float, default=10.0, help="per load cell")
    parser.add_argument("--visits", type=int, default=7,
                        help="first views per page (the median: 3 moved a page by 0.1x from run to run)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to measure")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {unknown} (known: {', '.join(PARTS)})")
    repo = args.repo.resolve()
    rows = []
    if "load" in parts:
        c1, c5, c20 = load_cells(repo, [1, 5, 20], args.seconds)
        rows += [load_row("Tokenize by link, 1 session, one process", c1),
                 load_row("Tokenize by link, 5 sessions, one process", c5),
                 load_row("Tokenize by link, 20 sessions, one process", c20, "load 20 p95")]
    if "serve" in parts:
        rows.append(load_row("Tokenize by link, 20 sessions, make serve WORKERS=2",
                             serve_cell(repo, 20, args.seconds), "serve 20 p95"))
    if "first" in parts:
        first = first_visits(repo, args.visits)
        bare = first.pop("bare")
        rows.append(f"| first view, bare Streamlit page | {bare:,.0f} ms | | |")
        for name, ms in first.items():
            rows.append(f"| first view, {name} | {ms:,.0f} ms ({ms / bare:.2f}x bare) "
                        f"| {GOALS['first ratio'][0]} | {met('first ratio', ms / bare)} |")
    if "typing" in parts:
        typed = typing_ms(repo)
        rows.append(f"| typing → chips, last key, short text | {typed['short']:,.0f} ms median "
                    f"| {GOALS['typing short'][0]} | {met('typing short', typed['short'])} |")
        rows.append(f"| typing → chips, last key, 10,000 characters | {typed['10k']:,.0f} ms "
                    f"median | {GOALS['typing 10k'][0]} | {met('typing 10k', typed['10k'])} |")
    if "ratios" in parts:
        r = ratios()
        rows.append(f"| GPT-2 encode, tiktoken time / ours (2 MB of docs-en) | {r['encode']:.2f}x | | |")
        rows.append(f"| GPT-2 decode, tiktoken time / ours | {r['decode']:.2f}x | | |")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{repo} on {os.cpu_count()} CPUs, load average now {load}\n")
    print("| what | measured | goal | met |\n|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

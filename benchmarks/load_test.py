"""Load test: 10 browser sessions on the Tokenize and Decode pages while two trainings run.

Starts its own ``streamlit run app.py`` on a free loopback port (with an empty temporary
saved-tokenizer library), one headless chromium (Playwright, the launch flags of
tests/browser/conftest.py) and, in it, one browser context (= one Streamlit session) per user:

* 2 "trainer" sessions open the Train page, upload a corpus (``--train-mb`` of
  ../shared/corpora/docs-en.txt.gz, written to a temp file; the built-in corpus when that file
  is absent or ``--train-mb 0``), set a large vocab size and press "Start training" (the server
  runs both at once: TOKPLAY_MAX_TRAININGS defaults to 2), then watch the live view. Their
  progress line ("Counting pre-tokens… n%" / "Merges n / target") is sampled every second; a
  training that ends is started again after ``--restart-pause`` seconds;
* ``--users`` (10) sessions alternate between the Tokenize page (replace the text, commit with
  Ctrl+Enter, wait until the metrics and the chips show the new text) and the Decode page
  (replace the IDs, commit, wait until the IDs and their chips show), switching pages through
  the sidebar every few updates, with a random pause of up to ``--think`` seconds in between.

An update's time runs from the Ctrl+Enter to the moment the page shows the new result, measured
with the browser's own clock (``performance.now()``, checked every 25 ms). A session "saw an
error" if the page showed a Streamlit exception box or an error alert (a MutationObserver
catches even one that a polled fragment replaces at once), raised a page error,
logged a console error that is not known noise, or an update did not appear within
``--update-timeout`` seconds (a frozen session). The script prints a table and exits 1 if any
session saw an error or the server logged a traceback (2 if the setup itself failed).

Bounded in time: ``--duration`` (default 60 s, at most 600 s) of measurement, at most
``--max-updates`` per session, a hard wall-clock cap on the whole run, loopback only.

    .venv/bin/python benchmarks/load_test.py [--duration 60] [--users 10] [--train-mb 8]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from core.train.builtin_corpus import BUILTIN_SEPARATOR, builtin_corpus_text  # noqa: E402
from deploy.launch import start_streamlit, stop  # noqa: E402
from tests.browser.conftest import _BENIGN_CONSOLE, CHROMIUM, CHROMIUM_ARGS  # noqa: E402

DOCS_EN = REPO.parent / "shared" / "corpora" / "docs-en.txt.gz"
MAX_DURATION_S = 600
SERVER_START_TIMEOUT_S = 120
SETUP_TIMEOUT_MS = 180_000  # first page loads while two trainings start on 2 cores
UPDATES_PER_PAGE = 3  # updates on one page before switching to the other
GPT2_MAX_ID = 50_256  # Decode IDs stay inside GPT-2's vocab (no out-of-vocab error alert)

_APP = '[data-testid="stApp"]'

# Installed in every page before Streamlit loads: remembers every exception box or error alert
# that appears, even one a polled fragment replaces half a second later.
_ERROR_RECORDER = """(() => {
  window.__tpErrors = [];
  const sel = '[data-testid="stException"], [data-testid="stAlertContentError"]';
  const seen = new WeakSet();
  new MutationObserver(() => {
    for (const el of document.querySelectorAll(sel)) {
      if (seen.has(el)) continue;
      seen.add(el);
      window.__tpErrors.push((el.innerText || '').trim().slice(0, 300));
    }
  }).observe(document, {childList: true, subtree: true});
})();"""

# performance.now() once the Tokenize page shows `chars` characters and as many chips as its
# "Tokens" metric (bounded by the page's chip limit); false before.
_TOKENIZE_DONE = """([chars, maxChips]) => {
  const metric = (name) => {
    for (const m of document.querySelectorAll('.tp-stat')) {
      const label = m.querySelector('.tp-stat-label');
      const value = m.querySelector('.tp-stat-value');
      if (label && value && label.innerText.trim() === name) return value.innerText.trim();
    }
    return null;
  };
  if (metric("Characters") !== chars) return false;
  const tokens = parseInt((metric("Tokens") || "").replace(/,/g, ""), 10);
  const box = document.querySelector('.tp-chips');
  if (!box || !(tokens >= 0)) return false;
  if (box.querySelectorAll('.tp-chip').length !== Math.min(tokens, maxChips)) return false;
  return performance.now();
}"""

# performance.now() once the Decode page shows `n` IDs and an ID chip row whose last chip is
# #n-1 with the last ID typed; false before.
_DECODE_DONE = """([n, lastTitle]) => {
  for (const m of document.querySelectorAll('.tp-stat')) {
    const label = m.querySelector('.tp-stat-label');
    const value = m.querySelector('.tp-stat-value');
    if (label && value && label.innerText.trim() === "IDs" && value.innerText.trim() !== n)
      return false;
  }
  for (const box of document.querySelectorAll('.tp-chips')) {
    const chips = box.querySelectorAll('.tp-chip');
    if (chips.length && (chips[chips.length - 1].getAttribute('title') || '').startsWith(lastTitle))
      return performance.now();
  }
  return false;
}"""


# ---- the server ---------------------------------------------------------------------------


def start_server(workdir: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """``streamlit run app.py`` on a free 127.0.0.1 port with an empty library, once healthy
    (:func:`deploy.launch.start_streamlit`); (proc, url, log)."""
    library = workdir / "library"
    library.mkdir()
    log = workdir / "server.log"
    env = dict(os.environ, TOKPLAY_LIBRARY_DIR=str(library))
    server = start_streamlit(env=env, log=log, timeout=SERVER_START_TIMEOUT_S)
    return server.process, server.url, log


def report_server_log(log: Path) -> int:
    """Print the server's tracebacks (how many of each final error line, and the first one);
    return how many there were."""
    lines = log.read_text(errors="replace").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        print("server log: no tracebacks")
        return 0
    blocks = []
    for start in starts:
        end = start + 1
        while end < len(lines) and lines[end].startswith((" ", "\t")):
            end += 1
        blocks.append(lines[start : end + 1])
    kinds: dict[str, int] = {}
    for block in blocks:
        where = next((ln.strip() for ln in reversed(block) if ln.strip().startswith("File \"/work")
                      or "pages/" in ln), "")
        key = f"{block[-1].strip()[:160]}  [{where[:120]}]"
        kinds[key] = kinds.get(key, 0) + 1
    print(f"server log: {len(starts)} traceback(s):")
    for key, n in kinds.items():
        print(f"  {n} x {key}")
    print("  the first in full:")
    print("\n".join("    " + line for line in blocks[0][:40]))
    return len(starts)


def training_corpus(workdir: Path, megabytes: float) -> Path | None:
    """The first ``megabytes`` of docs-en as a .txt file to upload; None: use the built-in one."""
    if megabytes <= 0 or not DOCS_EN.is_file():
        return None
    with gzip.open(DOCS_EN, "rb") as fh:
        data = fh.read(int(megabytes * 1024 * 1024))
    data = data[: data.rfind(b"\n") + 1]  # whole lines: never a cut UTF-8 character
    path = workdir / "docs-en-slice.txt"
    path.write_bytes(data)
    return path


# ---- sessions -----------------------------------------------------------------------------


@dataclass
class Session:
    name: str
    page: object
    errors: list[str] = field(default_factory=list)
    tokenize_ms: list[float] = field(default_factory=list)
    decode_ms: list[float] = field(default_factory=list)
    switch_ms: list[float] = field(default_factory=list)
    progress: list[tuple[float, str, float]] = field(default_factory=list)  # (t, phase, value)
    restarts: int = 0  # trainers: trainings started again after one ended
    final_status: str = ""

    async def check(self) -> None:
        """Record exception boxes and error alerts shown since the last check (even briefly)."""
        seen = await self.page.evaluate(  # type: ignore[attr-defined]
            "() => (window.__tpErrors || []).splice(0)")
        for text in seen:
            message = f"error element: {text}"
            if message not in self.errors:
                self.errors.append(message)


async def wait_idle(page: object, timeout_ms: int) -> None:
    """Connected and no script run in progress (as tests/browser/conftest.wait_for_app)."""
    await page.wait_for_selector(f'{_APP}[data-test-connection-state="CONNECTED"]', timeout=timeout_ms)  # type: ignore[attr-defined]
    await page.wait_for_selector(f'{_APP}[data-test-script-state="notRunning"]', timeout=timeout_ms)  # type: ignore[attr-defined]


async def open_page(session: Session, base: str, path: str, timeout_ms: int) -> None:
    page = session.page
    await page.goto(f"{base}/{path}", wait_until="domcontentloaded", timeout=timeout_ms)  # type: ignore[attr-defined]
    await wait_idle(page, timeout_ms)


async def switch_page(session: Session, base: str, path: str, textarea: str, timeout_ms: int) -> None:
    """Go to ``path`` through the sidebar (same session); a fresh load if there is no link."""
    page = session.page
    t0 = time.perf_counter()
    link = page.locator(f'.st-key-ui-nav a[href$="/{path}"]')  # type: ignore[attr-defined]
    if await link.count():
        await link.first.click()
    else:
        await page.goto(f"{base}/{path}", wait_until="domcontentloaded")  # type: ignore[attr-defined]
    await page.wait_for_selector(textarea, timeout=timeout_ms)  # type: ignore[attr-defined]
    await wait_idle(page, timeout_ms)
    session.switch_ms.append((time.perf_counter() - t0) * 1000)


async def commit(page: object, selector: str, value: str, predicate: str, arg: object,
                 timeout_ms: int) -> float:
    """Replace a text area's value, press Ctrl+Enter, return ms until ``predicate`` holds."""
    box = page.locator(selector).first  # type: ignore[attr-defined]
    await box.fill(value)
    t0 = await page.evaluate("performance.now()")  # type: ignore[attr-defined]
    await box.press("Control+Enter")
    handle = await page.wait_for_function(predicate, arg=arg, polling=25, timeout=timeout_ms)  # type: ignore[attr-defined]
    return float(await handle.json_value()) - float(t0)


def starts_on_tokenize(session: Session) -> bool:
    return session.name[-1] in "13579"  # odd users start on Tokenize, even ones on Decode


async def user(session: Session, base: str, corpus: str, deadline: float, args: argparse.Namespace,
               rng: random.Random) -> None:
    """Alternate Tokenize and Decode updates until the deadline or ``--max-updates``."""
    timeout_ms = int(args.update_timeout * 1000)
    tok_area = 'textarea[aria-label="Text"]'
    dec_area = 'textarea[aria-label="Token IDs"]'
    last_len = -1
    updates = 0
    on_tokenize = starts_on_tokenize(session)
    try:
        while time.monotonic() < deadline and updates < args.max_updates:
            if updates and updates % UPDATES_PER_PAGE == 0:
                on_tokenize = not on_tokenize
                if on_tokenize:
                    await switch_page(session, base, "Tokenize", tok_area, timeout_ms)
                else:
                    await switch_page(session, base, "Decode", dec_area, timeout_ms)
            if on_tokenize:
                length = rng.randint(args.min_chars, args.max_chars)
                if length == last_len:  # a new length, so the old result cannot pass as new
                    length += 1
                last_len = length
                start = rng.randrange(0, len(corpus) - length)
                text = corpus[start : start + length]
                ms = await commit(session.page, tok_area, text, _TOKENIZE_DONE,
                                  [f"{len(text):,}", args.max_chips], timeout_ms)
                session.tokenize_ms.append(ms)
            else:
                n = rng.randint(20, 400)
                ids = [rng.randrange(0, GPT2_MAX_ID) for _ in range(n)]
                ms = await commit(session.page, dec_area, ", ".join(map(str, ids)), _DECODE_DONE,
                                  [f"{n:,}", f"#{n - 1} · ID {ids[-1]}"], timeout_ms)
                session.decode_ms.append(ms)
            updates += 1
            await session.check()
            await asyncio.sleep(rng.uniform(0.0, args.think))
    except Exception as err:  # noqa: BLE001 - a timeout here is a frozen session: report it
        session.errors.append(f"{type(err).__name__}: {str(err).splitlines()[0][:300]}")
        await session.check()


_MERGES_RE = re.compile(r"Merges ([\d,]+) / ([\d,]+)")
_COUNT_RE = re.compile(r"Counting pre-tokens.*?(\d+)%")


async def train_progress(session: Session) -> tuple[str, str | None, float]:
    """The trainer session's status line, its phase ("counting"/"merging") and value."""
    bars = session.page.locator('[data-testid="stProgress"]')  # type: ignore[attr-defined]
    text = " ".join(await bars.all_inner_texts()) if await bars.count() else ""
    if match := _MERGES_RE.search(text):
        return text.strip(), "merging", float(match.group(1).replace(",", ""))
    if match := _COUNT_RE.search(text):
        return text.strip(), "counting", float(match.group(1))
    return text.strip(), None, 0.0


async def start_training(session: Session, base: str, vocab_size: int, upload: Path | None) -> None:
    page = session.page
    await open_page(session, base, "Train", SETUP_TIMEOUT_MS)
    if upload is not None:
        await page.get_by_text("Upload text files").click()  # type: ignore[attr-defined]
        await wait_idle(page, SETUP_TIMEOUT_MS)
        # the Train page's corpus uploader (the sidebar has a tokenizer uploader too)
        dropzone = page.locator('[data-testid="stHorizontalBlock"] [data-testid="stFileUploaderDropzoneInput"]')  # type: ignore[attr-defined]
        await dropzone.first.set_input_files(str(upload))
        await page.get_by_text(upload.name).first.wait_for(timeout=SETUP_TIMEOUT_MS)  # type: ignore[attr-defined]
        await wait_idle(page, SETUP_TIMEOUT_MS)
    vocab = page.locator('input[aria-label="Vocab size"]')  # type: ignore[attr-defined]
    await vocab.fill(str(vocab_size))
    await vocab.press("Enter")
    await page.wait_for_timeout(500)  # type: ignore[attr-defined]
    await wait_idle(page, SETUP_TIMEOUT_MS)
    start = page.get_by_role("button", name="Start training")  # type: ignore[attr-defined]
    await start.click()
    await page.wait_for_selector('[data-testid="stProgress"]', timeout=SETUP_TIMEOUT_MS)  # type: ignore[attr-defined]
    await session.check()


async def watch_training(session: Session, stop: asyncio.Event, t_zero: float,
                         restart_pause: float) -> None:
    """Sample the trainer's progress every second until ``stop``; start a new training
    ``restart_pause`` seconds after one ends (a user who looked at the result)."""
    button = session.page.get_by_role("button", name="Start training")  # type: ignore[attr-defined]
    ended_at: float | None = None
    try:
        while True:
            status, phase, value = await train_progress(session)
            if phase is not None:
                session.progress.append((time.monotonic() - t_zero, phase, value))
            session.final_status = status or session.final_status
            await session.check()
            if stop.is_set():
                break
            if await button.count() and await button.is_enabled():
                ended_at = ended_at or time.monotonic()
                if time.monotonic() - ended_at >= restart_pause:
                    session.restarts += 1
                    ended_at = None
                    await button.click()
            try:
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            except asyncio.TimeoutError:
                pass
    except Exception as err:  # noqa: BLE001
        session.errors.append(f"{type(err).__name__}: {str(err).splitlines()[0][:300]}")


def progress_summary(samples: list[tuple[float, str, float]]) -> tuple[int, float, bool]:
    """(merges learned, counting percent gained, progressed at all) over the samples; a drop
    in the merge count means a new training started.

    >>> progress_summary([(0, "counting", 10), (1, "counting", 60), (2, "merging", 100),
    ...                   (3, "merging", 300), (4, "merging", 20)])
    (320, 50.0, True)
    """
    merges, counted = 0, 0.0
    for (_, p0, v0), (_, p1, v1) in zip(samples, samples[1:]):
        if p1 == "merging":
            merges += int(v1 - v0) if p0 == "merging" and v1 >= v0 else int(v1)
        elif p0 == "counting" and v1 >= v0:
            counted += v1 - v0
    return merges, counted, merges > 0 or counted > 0


# ---- the run ------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100).

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([1.0, 2.0, 3.0, 4.0], 95)
    (2.0, 4.0)
    """
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def row(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:<22}{0:>8}{'-':>10}{'-':>10}{'-':>10}{'-':>10}"
    return (f"{name:<22}{len(values):>8}{percentile(values, 50):>10.0f}"
            f"{percentile(values, 95):>10.0f}{max(values):>10.0f}"
            f"{sum(values) / len(values):>10.0f}")


async def run(args: argparse.Namespace, base: str, upload: Path | None) -> int:
    from playwright.async_api import async_playwright

    corpus = builtin_corpus_text().replace(BUILTIN_SEPARATOR, "\n")
    rng = random.Random(args.seed)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                           headless=True)
        sessions: list[Session] = []

        async def new_session(name: str) -> Session:
            context = await browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(SETUP_TIMEOUT_MS)
            await context.add_init_script(_ERROR_RECORDER)
            page = await context.new_page()
            session = Session(name=name, page=page)
            page.on("pageerror", lambda exc: session.errors.append(f"pageerror: {exc}"))
            page.on("console", lambda msg: msg.type == "error"
                    and not _BENIGN_CONSOLE.search(msg.text)
                    and session.errors.append(f"console: {msg.text[:300]}"))
            sessions.append(session)
            return session

        t_setup = time.monotonic()
        trainers = [await new_session(f"trainer-{i + 1}") for i in range(args.trainings)]
        await asyncio.gather(*(start_training(s, base, args.vocab_size, upload) for s in trainers))
        users = [await new_session(f"user-{i + 1:02d}") for i in range(args.users)]
        await asyncio.gather(*(  # users arrive together
            open_page(s, base, "Tokenize" if starts_on_tokenize(s) else "Decode", SETUP_TIMEOUT_MS)
            for s in users
        ))
        print(f"setup: {len(trainers)} trainings started, {len(users)} sessions open "
              f"in {time.monotonic() - t_setup:.1f} s", flush=True)

        stop = asyncio.Event()
        t_zero = time.monotonic()
        deadline = t_zero + args.duration
        watchers = [asyncio.create_task(watch_training(s, stop, t_zero, args.restart_pause))
                    for s in trainers]
        await asyncio.gather(*(
            user(s, base, corpus, deadline, args, random.Random(rng.random())) for s in users
        ))
        window = time.monotonic() - t_zero
        stop.set()
        await asyncio.gather(*watchers)
        for s in sessions:
            await s.check()
        await browser.close()

    tok = [ms for s in users for ms in s.tokenize_ms]
    dec = [ms for s in users for ms in s.decode_ms]
    nav = [ms for s in users for ms in s.switch_ms]
    what = f"{upload.stat().st_size / 2**20:.1f} MB of docs-en" if upload else "built-in corpus"
    print()
    print(f"Load test: {len(users)} sessions (Tokenize + Decode, GPT-2) + {len(trainers)} "
          f"trainings ({what}, vocab {args.vocab_size:,}), {window:.0f} s window, "
          f"{os.cpu_count()} CPUs, load average before {args.load_before}")
    print(f"{'':<22}{'updates':>8}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}{'mean ms':>10}")
    print(row("tokenize update", tok))
    print(row("decode update", dec))
    print(row("page switch (sidebar)", nav))
    print()
    print(f"{'session':<12}{'tokenize':>9}{'decode':>8}{'errors':>8}")
    for s in users:
        print(f"{s.name:<12}{len(s.tokenize_ms):>9}{len(s.decode_ms):>8}{len(s.errors):>8}")
    print()
    for s in trainers:
        merges, counted, moved = progress_summary(s.progress)
        span = s.progress[-1][0] - s.progress[0][0] if len(s.progress) > 1 else 0.0
        print(f"{s.name}: {'progressed' if moved else 'DID NOT PROGRESS'} over {span:.0f} s: "
              f"counting +{counted:.0f}%, {merges:,} merges learned "
              f"({merges / span if span else 0:,.0f}/s), {s.restarts} restart(s); "
              f"last status {s.final_status!r}")
    bad = [s for s in sessions if s.errors]
    print()
    if bad:
        print(f"ERRORS: {len(bad)} session(s) saw an error")
        for s in bad:
            for e in dict.fromkeys(s.errors):
                print(f"  {s.name}: {e}")
        return 1
    print(f"no session saw an error ({len(sessions)} sessions checked for stException, error "
          "alerts, page errors, console errors, frozen updates)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0,
                        help=f"measurement seconds (at most {MAX_DURATION_S})")
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--trainings", type=int, default=2)
    parser.add_argument("--train-mb", type=float, default=8.0,
                        help="MB of docs-en each trainer uploads (0: the built-in corpus)")
    parser.add_argument("--vocab-size", type=int, default=50_000,
                        help="large, so the trainings keep running through the test")
    parser.add_argument("--restart-pause", type=float, default=2.0,
                        help="seconds a trainer looks at a finished training before the next")
    parser.add_argument("--max-updates", type=int, default=300, help="per session")
    parser.add_argument("--min-chars", type=int, default=200)
    parser.add_argument("--max-chars", type=int, default=2000)
    parser.add_argument("--think", type=float, default=1.0,
                        help="a user waits up to this many seconds between updates")
    parser.add_argument("--update-timeout", type=float, default=60.0,
                        help="an update not shown after this many seconds is a frozen session")
    parser.add_argument("--max-chips", type=int, default=6000, help="ui.chips.MAX_CHIPS")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    args.duration = max(1.0, min(args.duration, MAX_DURATION_S))
    args.load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    if not CHROMIUM.exists():
        print(f"chromium not found at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    # hard cap: setup + measurement + reporting, whatever happens in the browser
    hard_cap = args.duration + 2 * SETUP_TIMEOUT_MS / 1000 + 120
    with tempfile.TemporaryDirectory(prefix="tokplay-load-") as tmp:
        upload = training_corpus(Path(tmp), args.train_mb)
        proc, base, log = start_server(Path(tmp))
        print(f"server: {base}", flush=True)
        try:
            code = asyncio.run(asyncio.wait_for(run(args, base, upload), timeout=hard_cap))
        except asyncio.TimeoutError:
            print(f"ABORTED: the run exceeded its hard cap of {hard_cap:.0f} s", file=sys.stderr)
            code = 2
        finally:
            stop(proc)
            tracebacks = report_server_log(log)
        if tracebacks and code == 0:
            print(f"FAIL: the server logged {tracebacks} traceback(s) (an exception in some "
                  "session's script run, even if no browser check caught it on screen)")
            code = 1
        return code


if __name__ == "__main__":
    sys.exit(main())

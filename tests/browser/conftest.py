"""Fixtures for the real-browser tests: one `streamlit run` server, one chromium, helpers.

Every test in this folder is marked ``browser`` and ``xdist_group("browser")`` (added here at
collection), so under ``pytest -n 2 --dist loadgroup`` they all run in one worker, sharing one
server and one browser. Each test gets a fresh browser context (a new Streamlit session).

Environment knobs:

* ``TOKPLAY_SCREENSHOT_DIR``: where :meth:`AppBrowser.screenshot` writes (default: a pytest
  tmp dir; set it to e.g. ``docs/screenshots`` to refresh the README images on purpose).
* The server gets its own empty saved-tokenizer library (``TOKPLAY_LIBRARY_DIR``); the GPT
  presets come from the files the package ships (``TIKTOKEN_CACHE_DIR`` is removed).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from deploy import launch

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT_S = 90
#: How long one Streamlit script run may take before a helper gives up (ms).
RUN_TIMEOUT_MS = 60_000

_HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before xdist's loadgroup reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test in tests/browser: ``browser`` + one xdist group (one server, one worker)."""
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.xdist_group("browser"))


# ---- the server ----------------------------------------------------------------------


def _log_tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


@dataclass(frozen=True)
class StreamlitServer:
    url: str  # e.g. "http://127.0.0.1:54321" (no trailing slash)
    library_dir: Path
    log: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, n: int = 40) -> str:
        return _log_tail(self.log, n)


def start_streamlit(cwd: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`streamlit run app.py` in ``cwd`` on a free loopback port, once healthy: (process, URL),
    through :func:`deploy.launch.start_streamlit` (no file watcher: other engineers edit files
    while tests run). The GPT presets come from the files the package ships. The process leads
    its own group, so :func:`deploy.launch.stop` ends it and its training workers.
    """
    env = {k: v for k, v in env.items() if k != "TIKTOKEN_CACHE_DIR"}
    try:
        server = launch.start_streamlit(cwd=cwd, env=env, log=log,
                                        timeout=SERVER_START_TIMEOUT_S)
    except launch.ServerError as err:
        pytest.fail(f"streamlit did not start: {err}")
    return server.process, server.url


@contextlib.contextmanager
def served_app(workdir: Path, env: dict[str, str]) -> Iterator[StreamlitServer]:
    """The app started with ``env`` and its own library in ``workdir`` (the log there too);
    stopped on leaving."""
    library_dir = workdir / "library"
    library_dir.mkdir(exist_ok=True)
    log = workdir / "server.log"
    proc, url = start_streamlit(REPO, dict(env, TOKPLAY_LIBRARY_DIR=str(library_dir)), log)
    try:
        yield StreamlitServer(url=url, library_dir=library_dir, log=log, process=proc)
    finally:
        launch.stop(proc)


@pytest.fixture(scope="session")
def streamlit_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    """`streamlit run app.py` on a free loopback port, with its own library dir; stopped at the end."""
    with served_app(tmp_path_factory.mktemp("streamlit-server"), dict(os.environ)) as server:
        yield server


# ---- the browser ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Headless Debian chromium through Playwright's sync API (skips only if it is absent)."""
    if not CHROMIUM.exists():
        message = (f"chromium not found at {CHROMIUM}: install it with 'make browser' "
                   "(apt-get install chromium) to run the real-browser tests")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + "; CI installs it, so this is an error", pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    configured = os.environ.get("TOKPLAY_SCREENSHOT_DIR")
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("screenshots")


# ---- helpers -------------------------------------------------------------------------


# Console noise chromium/Streamlit produce on any healthy page; not app errors.
_BENIGN_CONSOLE = re.compile(r"favicon|Failed to load resource.*404|net::ERR_|WebSocket", re.I)


@dataclass
class _ScriptRuns:
    """What the browser and the server said to each other over Streamlit's websocket.

    Every script run the browser asks for is a ``rerun_script`` BackMsg; every run the server
    ends is a ``script_finished`` ForwardMsg. A test that waits for "the answer to what I just
    did" waits for this bookkeeping, never for a time window.
    """

    requested: bool = False  # a rerun was sent and no run has finished after it yet
    finished: int = 0  # script runs (or fragment runs) finished, in all
    full_runs: int = 0  # whole-script runs finished (what a widget change or a page load makes)
    fragment_runs: int = 0  # fragment runs finished (a widget inside an st.fragment, polling)

    def on_sent(self, payload: bytes | str) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        if isinstance(payload, bytes):
            msg = BackMsg.FromString(payload)
            if msg.WhichOneof("type") == "rerun_script":
                self.requested = True

    def on_received(self, payload: bytes | str) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        if isinstance(payload, bytes):
            msg = ForwardMsg.FromString(payload)
            if msg.WhichOneof("type") == "script_finished" and (
                msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN
            ):
                # subtle: runs are answered in order and coalesced, so the first run to end
                # after a request answers every request sent before it
                self.requested = False
                self.finished += 1
                if msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                    self.full_runs += 1
                elif msg.script_finished == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                    self.fragment_runs += 1

    def attach(self, page: object) -> None:
        def on_websocket(ws: object) -> None:
            ws.on("framesent", self.on_sent)  # type: ignore[attr-defined]
            ws.on("framereceived", self.on_received)  # type: ignore[attr-defined]

        page.on("websocket", on_websocket)  # type: ignore[attr-defined]


def click_until(target: Any, arrived: Callable[[], bool], what: str, *, tries: int = 3) -> None:
    """Click ``target`` until ``arrived()`` (a page condition) holds, polled for up to a
    third of RUN_TIMEOUT_MS after each click. subtle: a click can land on an element the
    page is redrawing (a running training's fragment reruns the sidebar every 200 ms; a
    loaded machine stretches each redraw) and be lost, as a user's would; they click again.
    Only for clicks whose repetition changes nothing (opening a page, picking a model)."""
    for _ in range(tries):
        target.click()
        deadline = time.monotonic() + RUN_TIMEOUT_MS / 3000
        while time.monotonic() < deadline:
            if arrived():
                return
            time.sleep(0.1)
    raise AssertionError(f"{what}: still not there after {tries} clicks")


def wait_for_app(page: object, runs: _ScriptRuns, *, timeout_ms: int = RUN_TIMEOUT_MS,
                 after: int | None = None, fragments: bool = False) -> None:
    """Wait until every script run the browser asked for has finished and the page is idle.

    ``after``: also wait until more than this many whole-script runs have finished (a page
    load or a widget change always runs the script, but the browser may not have asked yet
    when this is called).
    """
    deadline = time.monotonic() + timeout_ms / 1000
    app = '[data-testid="stApp"]'
    page.wait_for_selector(f'{app}[data-test-connection-state="CONNECTED"]', timeout=timeout_ms)  # type: ignore[attr-defined]
    def done() -> int:  # the runs that count as "the answer"
        return runs.full_runs + (runs.fragment_runs if fragments else 0)

    while runs.requested or (after is not None and done() <= after):
        if time.monotonic() > deadline:
            raise AssertionError(f"no script run finished within {timeout_ms} ms")
        page.wait_for_timeout(20)  # type: ignore[attr-defined]  # lets Playwright deliver frames
    page.wait_for_selector(f'{app}[data-test-script-state="notRunning"]', timeout=timeout_ms)  # type: ignore[attr-defined]
    page.wait_for_selector('[data-testid="stStatusWidgetRunningIcon"]', state="detached", timeout=timeout_ms)  # type: ignore[attr-defined]
    # subtle: the run is over, but a widget whose code chunk the browser is still fetching
    # shows a placeholder (stSkeleton) until it arrives; a new browser context fetches them all
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=timeout_ms
    )


@dataclass
class AppBrowser:
    """One fresh Streamlit session in its own browser context, plus error collectors."""

    page: object  # playwright.sync_api.Page
    base_url: str
    screenshot_dir: Path
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    runs: _ScriptRuns = field(default_factory=_ScriptRuns)

    @classmethod
    def open(cls, context: object, base_url: str, screenshot_dir: Path) -> AppBrowser:
        """A page in ``context`` with every listener attached (errors, dialogs, script runs)."""
        page = context.new_page()  # type: ignore[attr-defined]
        helper = cls(page=page, base_url=base_url, screenshot_dir=screenshot_dir)
        helper.runs.attach(page)
        page.on("console", lambda msg: msg.type == "error" and helper.console_errors.append(msg.text))
        page.on("pageerror", lambda exc: helper.page_errors.append(f"pageerror: {exc}"))

        def on_dialog(dialog: object) -> None:
            helper.dialogs.append(f"{dialog.type}: {dialog.message}")  # type: ignore[attr-defined]
            dialog.dismiss()  # type: ignore[attr-defined]

        page.on("dialog", on_dialog)
        return helper

    def url(self, path: str = "") -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def goto(self, path: str = "", *, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
        """Open ``path`` (e.g. ``"Tokenize"`` or ``"Decode?ids=1"``) and wait for its run."""
        before = self.runs.full_runs
        self.page.goto(self.url(path), wait_until="domcontentloaded")  # type: ignore[attr-defined]
        self.page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)  # type: ignore[attr-defined]
        wait_for_app(self.page, self.runs, timeout_ms=timeout_ms, after=before)

    def wait(self, *, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
        """Wait for the runs already asked for (none: returns once idle). After an interaction
        that must rerun the script, use :meth:`rerun` instead: the browser may not have
        asked yet."""
        wait_for_app(self.page, self.runs, timeout_ms=timeout_ms)

    @contextmanager
    def rerun(self, *, timeout_ms: int = RUN_TIMEOUT_MS) -> Iterator[None]:
        """``with app.rerun(): box.press("Control+Enter")``: do something that reruns the
        script, then wait for a run that finished after it: the whole script, or the
        ``st.fragment`` holding the widget (Tokenize's text box reruns only its fragment)."""
        before = self.runs.full_runs + self.runs.fragment_runs
        yield
        wait_for_app(self.page, self.runs, timeout_ms=timeout_ms, after=before, fragments=True)

    def screenshot(self, name: str, *, full_page: bool = True) -> Path:
        path = self.screenshot_dir / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
        self.page.screenshot(path=str(path), full_page=full_page)  # type: ignore[attr-defined]
        return path

    def exceptions(self) -> list[str]:
        """Texts of Streamlit exception boxes on the page (a traceback shown to the user)."""
        return list(self.page.locator('[data-testid="stException"]').all_inner_texts())  # type: ignore[attr-defined]

    def errors(self) -> list[str]:
        """Page exceptions, console errors that are not known noise, and exception boxes."""
        console = [e for e in self.console_errors if not _BENIGN_CONSOLE.search(e)]
        return self.page_errors + console + [f"stException: {e}" for e in self.exceptions()]

    def assert_healthy(self) -> None:
        problems = self.errors()
        if problems:
            shot = self.screenshot("failure")
            raise AssertionError(f"page errors ({shot}):\n" + "\n".join(problems))


@contextmanager
def browser_session(browser: object, base_url: str, screenshot_dir: Path) -> Iterator[AppBrowser]:
    """A fresh browser context (= a new Streamlit session) on ``base_url``; closed after."""
    context = browser.new_context(  # type: ignore[attr-defined]
        accept_downloads=True, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        yield AppBrowser.open(context, base_url, screenshot_dir)
    finally:
        context.close()


@pytest.fixture
def app(browser: object, streamlit_server: StreamlitServer, screenshot_dir: Path) -> Iterator[AppBrowser]:
    """A fresh browser context (= a new Streamlit session) on the test server."""
    with browser_session(browser, streamlit_server.url, screenshot_dir) as helper:
        yield helper

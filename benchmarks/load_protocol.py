"""Load test without browsers: Streamlit's own websocket protocol, closed loop, no think time.

benchmarks/load_test.py drives headless chromium on the same cores as the server, so its
latencies mostly measure the browsers. This client speaks the protocol the browser speaks
(Streamlit 1.67, ``streamlit/web/server/starlette/starlette_websocket.py`` and
``streamlit/runtime/app_session.py``):

* one websocket per session on ``/_stcore/stream``, subprotocol ``streamlit`` (the header's
  second and third entries, XSRF token and existing session ID, are left out: no auth cookie,
  a new session; a client without an ``Origin`` header is accepted);
* a ``BackMsg.rerun_script`` (``ClientState``) with the page's ``query_string``, the page
  chosen by ``page_name`` (its URL path, e.g. ``Tokenize``) on the first run and by the
  ``page_script_hash`` of the server's ``new_session`` afterwards, as the browser does; no
  ``cached_message_hashes``, so the server sends every ForwardMsg in full (no ``ref_hash``);
* then ForwardMsgs until the ``script_finished`` that carries the run's ID
  (``metadata.run.script_run_id``, given by its ``new_session``); ``FINISHED_EARLY_FOR_RERUN``
  (an ``st.rerun``) waits for the run that follows.

Each measured session connects, does the page's first run (not timed), then loops with no
think time: a rerun with a fresh query string (``tok=gpt2&text=<N fresh characters>`` on
Tokenize, ``tok=gpt2&ids=<N/4 random GPT-2 IDs>`` on Decode,
``tok=gpt2&tok=cl100k_base&text=...`` on Compare), timed from the send to its
``script_finished``. A rerun is an error if it showed an exception element, an error alert,
a compile error, did not finish within ``--run-timeout`` seconds, or did not show what the page
should (Tokenize: the "Characters" metric equal to the text's length and a "Tokens" metric;
Decode: the "IDs" metric equal to the number of IDs; Compare: a table).

"With 2 trainings": two more sessions open Train, and send one rerun with the widget states a
click sends (the "Vocab size" number input, the "Speed" radio, the "Start training" button's
trigger, their IDs read from the page's first run), on the built-in corpus. They then keep
polling the page's fragments (``auto_rerun`` ForwardMsgs: a fragment rerun every ``interval``
seconds, ``is_auto_rerun``), as a browser watching its training does. After the measurement
they press "Cancel" the same way.

Bounded: ``--seconds`` (at most 120) per cell, at most ``--max-reruns`` reruns per cell, each
rerun at most ``--run-timeout`` seconds, a hard wall-clock cap on the whole run; loopback only
(its own server on 127.0.0.1, or ``--url`` of one on 127.0.0.1/localhost).

    .venv/bin/python benchmarks/load_protocol.py [--pages Tokenize,Decode,Compare]
        [--sessions 1,5,10,20] [--trainings 0,2] [--seconds 10] [--chars 60] [--repo DIR]

The client shares the machine's cores with the server: the table gives its own CPU use
(``client CPU %``, of one core) and the server's with its training workers (``server CPU %``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DEFAULT = Path(__file__).resolve().parent.parent
if str(REPO_DEFAULT) not in sys.path:  # run as a script: benchmarks/ is on the path
    sys.path.insert(0, str(REPO_DEFAULT))

from deploy.launch import healthy, start_streamlit, stop  # noqa: E402
PAGES = ("Tokenize", "Decode", "Compare")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_SECONDS = 120.0
SERVER_START_TIMEOUT_S = 120.0
SETUP_TIMEOUT_S = 180.0  # a session's first run (cold caches, trainings starting)
GPT2_MAX_ID = 50_256
STREAM_PATH = "/_stcore/stream"
TRAIN_VOCAB = 50_000  # TOKPLAY_MAX_VOCAB's default: the largest a training may ask for

# Fresh text: words cycled from a fixed pool (ASCII, so characters == bytes == the metric).
_WORDS = (
    "the", "tokenizer", "merges", "frequent", "byte", "pairs", "into", "new", "tokens",
    "while", "a", "team", "of", "users", "types", "text", "into", "the", "playground", "and",
    "compares", "how", "many", "pieces", "each", "model", "needs", "for", "the", "same",
    "sentence", "about", "rivers", "mountains", "numbers", "2024", "emails", "and", "source",
    "code",
)


# ---- pure helpers (tests/test_load_protocol.py) -------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no values.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([1.0, 2.0, 3.0, 4.0], 95)
    (2.0, 4.0)
    """
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def parse_counts(text: str) -> list[int]:
    """``"1,5, 10"`` -> [1, 5, 10] (each at least 0, order kept, duplicates dropped)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        n = int(part)
        if n < 0:
            raise ValueError(f"not a count: {part!r}")
        if n not in out:
            out.append(n)
    if not out:
        raise ValueError(f"no counts in {text!r}")
    return out


def parse_pages(text: str) -> list[str]:
    """``"tokenize,Decode"`` -> ["Tokenize", "Decode"] (only the pages this test knows)."""
    known = {p.lower(): p for p in PAGES}
    out: list[str] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part.lower() not in known:
            raise ValueError(f"unknown page {part!r} (known: {', '.join(PAGES)})")
        if known[part.lower()] not in out:
            out.append(known[part.lower()])
    if not out:
        raise ValueError(f"no pages in {text!r}")
    return out


def loopback_urls(url: str) -> tuple[str, str]:
    """(http base, websocket stream URL) of a server on this machine; ValueError otherwise.

    >>> loopback_urls("http://localhost:8501/")
    ('http://localhost:8501', 'ws://localhost:8501/_stcore/stream')
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{url!r}: an http:// URL is expected")
    host = (parts.hostname or "").lower()
    if host not in LOOPBACK_HOSTS:
        raise ValueError(f"{url!r}: only a server on this machine (127.0.0.1, localhost)")
    base_path = parts.path.rstrip("/")
    http = f"{parts.scheme}://{parts.netloc}{base_path}"
    ws_scheme = "wss" if parts.scheme == "https" else "ws"
    return http, f"{ws_scheme}://{parts.netloc}{base_path}{STREAM_PATH}"


def make_text(n_chars: int, session: int, iteration: int) -> str:
    """Exactly ``n_chars`` ASCII characters, different for every (session, iteration): a
    prefix naming both, then words of the pool from a position that depends on them.

    >>> t = make_text(60, 3, 7); len(t), t.startswith("s3 i7 ")
    (60, True)
    """
    prefix = f"s{session} i{iteration} "
    words: list[str] = []
    i = (session * 7919 + iteration * 104_729) % len(_WORDS)
    length = len(prefix)
    while length < n_chars:
        word = _WORDS[i % len(_WORDS)]
        words.append(word)
        length += len(word) + 1
        i += 1
    return (prefix + " ".join(words))[:n_chars].ljust(n_chars, ".")


def make_ids(n: int, rng: random.Random) -> list[int]:
    """``n`` random GPT-2 token IDs (all inside its vocab: no out-of-vocab error alert)."""
    return [rng.randrange(0, GPT2_MAX_ID + 1) for _ in range(max(1, n))]


def query_string(params: list[tuple[str, str]]) -> str:
    """URL query as the playground writes it (``ui.links.query_string``: %20 for spaces).

    >>> query_string([("tok", "gpt2"), ("tok", "cl100k_base"), ("text", "a b&c")])
    'tok=gpt2&tok=cl100k_base&text=a%20b%26c'
    """
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


@dataclass(frozen=True)
class Request:
    """One rerun of a page: its query string and what the page must then show."""

    query: str
    metrics: tuple[tuple[str, str], ...] = ()  # (metric label, exact value)
    need_metrics: tuple[str, ...] = ()  # labels that must be present
    need_table: bool = False


def page_request(page: str, n_chars: int, session: int, iteration: int,
                 rng: random.Random) -> Request:
    """The fresh rerun of ``page`` for one session's ``iteration``.

    >>> page_request("Decode", 60, 0, 0, random.Random(1)).metrics
    (('IDs', '15'),)
    """
    if page == "Tokenize":
        text = make_text(n_chars, session, iteration)
        return Request(query_string([("tok", "gpt2"), ("text", text)]),
                       metrics=(("Characters", f"{len(text):,}"),), need_metrics=("Tokens",))
    if page == "Decode":
        ids = make_ids(max(1, n_chars // 4), rng)  # about n_chars characters of GPT-2 text
        return Request(query_string([("tok", "gpt2"), ("ids", ", ".join(map(str, ids)))]),
                       metrics=(("IDs", f"{len(ids):,}"),))
    if page == "Compare":
        text = make_text(n_chars, session, iteration)
        return Request(query_string([("tok", "gpt2"), ("tok", "cl100k_base"), ("text", text)]),
                       need_table=True)
    raise ValueError(f"unknown page {page!r}")


def content_problems(req: Request, metrics: dict[str, str], element_types: set[str]) -> list[str]:
    """What the page should have shown for ``req`` and did not ([] when all is there).

    >>> content_problems(Request("q", metrics=(("IDs", "3"),)), {"IDs": "2"}, set())
    ["metric 'IDs' shows '2', expected '3'"]
    """
    problems = []
    for label, want in req.metrics:
        got = metrics.get(label)
        if got != want:
            problems.append(f"metric {label!r} shows {got!r}, expected {want!r}")
    for label in req.need_metrics:
        if label not in metrics:
            problems.append(f"no metric {label!r}")
    if req.need_table and not element_types & {"dataframe", "table", "arrow_data_frame"}:
        problems.append("no table")
    return problems


@dataclass
class Cell:
    """One measurement: a page, a number of trainings and of sessions."""

    page: str
    trainings: int
    sessions: int
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    elapsed_s: float = 0.0
    client_cpu: float = float("nan")  # share of one core, percent
    server_cpu: float = float("nan")
    messages: list[str] = field(default_factory=list)  # distinct error messages

    @property
    def rate(self) -> float:
        return len(self.latencies_ms) / self.elapsed_s if self.elapsed_s > 0 else 0.0


def _fmt(value: float, spec: str) -> str:
    return "-" if math.isnan(value) else format(value, spec)


def format_table(cells: list[Cell]) -> str:
    """The markdown table of ``cells``.

    >>> print(format_table([Cell("Tokenize", 0, 1, [80.0, 90.0], 0, 2.0)]))
    | page | trainings | sessions | reruns/s | p50 ms | p95 ms | errors | reruns | client CPU % | server CPU % |
    |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|
    | Tokenize | 0 | 1 | 1.0 | 80 | 90 | 0 | 2 | - | - |
    """
    lines = [
        ("| page | trainings | sessions | reruns/s | p50 ms | p95 ms | errors | reruns "
         "| client CPU % | server CPU % |"),
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.page} | {c.trainings} | {c.sessions} | {c.rate:.1f} "
            f"| {_fmt(percentile(c.latencies_ms, 50), ',.0f')} "
            f"| {_fmt(percentile(c.latencies_ms, 95), ',.0f')} | {c.errors} "
            f"| {len(c.latencies_ms)} | {_fmt(c.client_cpu, '.0f')} | {_fmt(c.server_cpu, '.0f')} |"
        )
    return "\n".join(lines)


# ---- the protocol -------------------------------------------------------------------------


@dataclass
class RunResult:
    ms: float = 0.0
    status: str = ""
    errors: list[str] = field(default_factory=list)
    metrics: dict[str, str] = field(default_factory=dict)
    element_types: set[str] = field(default_factory=set)
    messages: int = 0
    nbytes: int = 0


class ProtocolError(Exception):
    pass


class Session:
    """One Streamlit session over one websocket; a reader task dispatches every ForwardMsg."""

    def __init__(self, ws_url: str, page: str, name: str) -> None:
        self.ws_url = ws_url
        self.page = page
        self.name = name
        self.ws: Any = None
        self.page_script_hash = ""
        self.query = ""
        self.widgets: dict[str, tuple[str, Any]] = {}  # label -> (element type, proto)
        self.widget_fragments: dict[str, str] = {}  # label -> the fragment drawing it ("" none)
        self.progress_text = ""
        self.background_errors: list[str] = []
        self.auto_reruns: dict[str, asyncio.Task[None]] = {}  # fragment id -> poller
        self.keep_widgets: list[Any] = []  # WidgetState protos sent with every rerun
        self.closed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()
        # the run being waited for
        self._waiter: asyncio.Future[RunResult] | None = None
        self._want_fragment = False
        self._run_id: str | None = None
        self._result: RunResult | None = None

    async def open(self) -> None:
        from websockets.asyncio.client import connect

        self.ws = await connect(self.ws_url, subprotocols=["streamlit"], max_size=None,  # type: ignore[list-item]
                                open_timeout=30, close_timeout=5)
        self._reader = asyncio.create_task(self._read(), name=f"read-{self.name}")

    async def close(self) -> None:
        for task in self.auto_reruns.values():
            task.cancel()
        self.auto_reruns.clear()
        if self.ws is not None:
            with contextlib.suppress(Exception):  # closing anyway
                await asyncio.wait_for(self.ws.close(), timeout=5)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader

    # -- sending

    async def _send_rerun(self, query: str, widget_states: list[Any], fragment_id: str = "",
                          is_auto_rerun: bool = False) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = query
        if self.page_script_hash:
            cs.page_script_hash = self.page_script_hash
        else:
            cs.page_name = self.page
        for ws in widget_states:
            cs.widget_states.widgets.add().CopyFrom(ws)
        if fragment_id:
            cs.fragment_id = fragment_id
        cs.is_auto_rerun = is_auto_rerun
        async with self._send_lock:
            await self.ws.send(msg.SerializeToString())

    async def run(self, query: str, timeout: float, widget_states: list[Any] | None = None,
                  *, fragment_id: str = "") -> RunResult:
        """Rerun the page with ``query`` (and ``widget_states`` besides the kept ones); the
        result once its run finished. Raises asyncio.TimeoutError / ProtocolError."""
        if self._waiter is not None:
            raise ProtocolError("one run at a time per session")
        if self.closed.is_set():
            raise ProtocolError("the websocket is closed")
        loop = asyncio.get_running_loop()
        self.query = query
        self._waiter = loop.create_future()
        self._want_fragment = bool(fragment_id)
        self._run_id = None
        self._result = RunResult()
        t0 = time.perf_counter()
        try:
            await self._send_rerun(query, [*self.keep_widgets, *(widget_states or [])],
                                   fragment_id)
            result = await asyncio.wait_for(asyncio.shield(self._waiter), timeout)
        finally:
            self._waiter = None
            self._result = None
        result.ms = (time.perf_counter() - t0) * 1000
        return result

    async def _auto_rerun(self, fragment_id: str, interval: float) -> None:
        """What the browser does on an ``auto_rerun``: rerun the fragment every interval."""
        while not self.closed.is_set():
            await asyncio.sleep(interval)
            try:
                await self._send_rerun(self.query, list(self.keep_widgets), fragment_id, True)
            except Exception as err:  # noqa: BLE001 - the connection is gone
                self.background_errors.append(f"auto rerun: {type(err).__name__}: {err}")
                return

    # -- receiving

    async def _read(self) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        try:
            async for data in self.ws:
                if isinstance(data, str):
                    raise ProtocolError("text frame from the server")
                msg = ForwardMsg()
                msg.ParseFromString(data)
                self._handle(msg, len(data))
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - ends the session; the waiter learns why
            self._fail(f"connection: {type(err).__name__}: {err}")
        else:
            self._fail("connection closed by the server")
        finally:
            self.closed.set()

    def _fail(self, why: str) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(ProtocolError(why))
        else:
            self.background_errors.append(why)

    def _error(self, text: str) -> None:
        if self._result is not None and self._run_id is not None:
            self._result.errors.append(text)
        else:
            self.background_errors.append(text)

    def _handle(self, msg: Any, nbytes: int) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        kind = msg.WhichOneof("type")
        res = self._result
        if res is not None:
            res.messages += 1
            res.nbytes += nbytes
        run = msg.metadata.run if msg.metadata.HasField("run") else None
        if kind == "new_session":
            is_fragment = bool(run and run.fragment_ids)
            if not is_fragment:
                for task in self.auto_reruns.values():  # a full run registers them again
                    task.cancel()
                self.auto_reruns.clear()
            if (res is not None and self._run_id is None and is_fragment == self._want_fragment
                    and run is not None):
                self._run_id = run.script_run_id
        elif kind == "navigation":
            # pages/ apps run through st.navigation: the page actually shown is named here
            # (new_session carries the main script's hash), as the browser reads it
            if msg.navigation.page_script_hash:
                self.page_script_hash = msg.navigation.page_script_hash
        elif kind == "script_finished":
            status = ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)
            mine = res is not None and self._run_id is not None and (
                run is None or run.script_run_id == self._run_id)
            if not mine:
                return
            if msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                self._run_id = None  # st.rerun(): the next full run is the one waited for
                return
            if msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                res.errors.append("compile error")
            if run is None:
                res.errors.append("script_finished without a run ID (a BackMsg failed)")
            res.status = status
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_result(res)
        elif kind == "delta":
            delta = msg.delta
            if delta.WhichOneof("type") != "new_element":
                return
            el = delta.new_element
            etype = el.WhichOneof("type") or ""
            if res is not None:
                res.element_types.add(etype)
            if etype == "exception":
                self._error(f"exception: {el.exception.type}: {el.exception.message[:200]}")
            elif etype == "alert" and el.alert.format == 1:  # Alert.ERROR
                self._error(f"error alert: {el.alert.body[:200]}")
            elif etype == "metric":
                if res is not None:
                    res.metrics[el.metric.label] = el.metric.body
            elif etype == "progress":
                self.progress_text = el.progress.text
            elif etype in ("button", "number_input", "radio", "selectbox", "text_input",
                           "text_area", "checkbox", "toggle"):
                widget = getattr(el, etype)
                self.widgets[widget.label] = (etype, widget)
                self.widget_fragments[widget.label] = delta.fragment_id
        elif kind == "session_event":
            if msg.session_event.WhichOneof("type") == "script_compilation_exception":
                self._error("script compilation exception: "
                            f"{msg.session_event.script_compilation_exception.message[:200]}")
        elif kind == "page_not_found":
            self._error(f"page not found: {msg.page_not_found.page_name!r}")
        elif kind == "ref_hash":
            self._error("ref_hash message (the client declared no cached messages)")
        elif kind == "auto_rerun":
            frag, interval = msg.auto_rerun.fragment_id, msg.auto_rerun.interval
            if frag in self.auto_reruns:
                self.auto_reruns[frag].cancel()
            self.auto_reruns[frag] = asyncio.get_running_loop().create_task(
                self._auto_rerun(frag, max(0.05, interval)))
        elif kind == "stop_auto_rerun":
            for frag in msg.stop_auto_rerun.fragment_ids:
                task = self.auto_reruns.pop(frag, None)
                if task is not None:
                    task.cancel()


# ---- typing: what a keystroke pause sends (ui.live_input commits the text box) ---------------

#: The text box each page's typing commits (its label).
TEXT_BOXES = {"Tokenize": "Text", "Compare": "Text", "Decode": "Token IDs"}


async def type_text(s: Session, req: Request, timeout: float) -> RunResult:
    """Commit a new value of the page's text box as the browser does after a typing pause:
    the widget's new state, and the fragment that draws the box (only it reruns), with the
    session's address unchanged. The text comes from ``req``'s query (its ``text``/``ids``)."""
    import urllib.parse

    label = TEXT_BOXES[s.page]
    if label not in s.widgets:
        raise ProtocolError(f"{s.page} shows no text box labelled {label!r}")
    _, box = s.widgets[label]
    values = urllib.parse.parse_qs(req.query)
    value = (values.get("text") or values.get("ids") or [""])[0]
    query = s.query  # the address stays; the page itself writes the new one
    return await s.run(query, timeout, [_widget_state(box.id, string_value=value)],
                       fragment_id=s.widget_fragments.get(label, ""))


# ---- trainings ------------------------------------------------------------------------------


def _widget_state(widget_id: str, **value: Any) -> Any:
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    ws = WidgetState(id=widget_id)
    for k, v in value.items():
        setattr(ws, k, v)
    return ws


async def start_training(ws_url: str, name: str, vocab: int, speed: str) -> Session:
    """A session on Train that started a training (built-in corpus) and keeps polling it."""
    s = Session(ws_url, "Train", name)
    await s.open()
    first = await s.run("", SETUP_TIMEOUT_S)
    if first.errors:
        raise ProtocolError(f"{name}: Train's first run: {first.errors[0]}")
    missing = [w for w in ("Vocab size", "Speed", "Start training") if w not in s.widgets]
    if missing:
        raise ProtocolError(f"{name}: Train shows no {', '.join(missing)} widget")
    _, vocab_w = s.widgets["Vocab size"]
    _, speed_w = s.widgets["Speed"]
    _, start_w = s.widgets["Start training"]
    options = list(speed_w.options)
    if speed not in options:
        raise ProtocolError(f"{name}: no speed {speed!r} on Train (it offers {options})")
    if vocab_w.data_type == 0:  # NumberInput.INT
        vocab_state = _widget_state(vocab_w.id, int_value=vocab)
    else:
        vocab_state = _widget_state(vocab_w.id, double_value=float(vocab))
    # a radio's state is its option's label (string_value) in Streamlit 1.67
    s.keep_widgets = [vocab_state, _widget_state(speed_w.id, string_value=speed)]
    started = await s.run("", SETUP_TIMEOUT_S,
                          widget_states=[_widget_state(start_w.id, trigger_value=True)])
    if started.errors:
        raise ProtocolError(f"{name}: starting the training: {started.errors[0]}")
    if "progress" not in started.element_types and "Cancel" not in s.widgets:
        raise ProtocolError(f"{name}: the training did not start (no progress bar)")
    return s


async def stop_training(s: Session) -> None:
    """Press Cancel (ends the training, keeps nothing), then close the session."""
    try:
        if "Cancel" in s.widgets and not s.closed.is_set():
            _, cancel = s.widgets["Cancel"]
            await s.run(s.query, 60, widget_states=[_widget_state(cancel.id, trigger_value=True)])
    except Exception as err:  # noqa: BLE001 - the server is stopped afterwards anyway
        print(f"{s.name}: could not cancel its training: {type(err).__name__}: {err}",
              file=sys.stderr)
    finally:
        await s.close()


# ---- the server -----------------------------------------------------------------------------


def start_server(repo: Path, workdir: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """``streamlit run app.py`` in ``repo`` on a free 127.0.0.1 port, with an empty library,
    once healthy (:func:`deploy.launch.start_streamlit`: no file watcher, its own group)."""
    library = workdir / "library"
    library.mkdir()
    log = workdir / "server.log"
    # PYTHONPATH: `core` and `ui` come from `repo` even if another checkout is installed
    # editable in this venv (its finder comes after sys.path, but be explicit).
    env = dict(os.environ, TOKPLAY_LIBRARY_DIR=str(library), PYTHONPATH=str(repo))
    server = start_streamlit(cwd=repo, env=env, log=log, timeout=SERVER_START_TIMEOUT_S)
    return server.process, server.url, log


def group_cpu_seconds(pgid: int | None) -> float:
    """CPU seconds used so far by the live processes of process group ``pgid`` (Linux)."""
    if pgid is None:
        return float("nan")
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 13 and int(fields[2]) == pgid:  # pgrp, then utime, stime
            total += int(fields[11]) + int(fields[12])
    return total / tick


def report_server_log(log: Path | None) -> int:
    """Print how many tracebacks the server logged (and the last line of the first)."""
    if log is None or not log.exists():
        return 0
    lines = log.read_text(errors="replace").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        print("server log: no tracebacks")
        return 0
    end = starts[0] + 1
    while end < len(lines) and lines[end].startswith((" ", "\t")):
        end += 1
    last = lines[end] if end < len(lines) else ""
    print(f"server log: {len(starts)} traceback(s); the first ends with: {last[:300]}")
    return len(starts)


# ---- the measurement ------------------------------------------------------------------------


async def measure(ws_url: str, cell: Cell, args: argparse.Namespace, pgid: int | None) -> None:
    """One cell: open the sessions (first runs not timed), then the closed loop."""
    sessions = [Session(ws_url, cell.page, f"{cell.page}-{i}") for i in range(cell.sessions)]
    rngs = [random.Random(args.seed * 1000 + i) for i in range(cell.sessions)]
    ok: list[Session] = []

    def note(text: str) -> None:
        cell.errors += 1
        if text not in cell.messages:
            cell.messages.append(text)

    async def open_one(i: int, s: Session) -> None:
        try:
            await s.open()
            req = page_request(cell.page, args.chars, i, 0, rngs[i])
            res = await s.run(req.query, SETUP_TIMEOUT_S)
        except Exception as err:  # noqa: BLE001
            note(f"session setup: {type(err).__name__}: {err}")
            return
        problems = res.errors + content_problems(req, res.metrics, res.element_types)
        if problems:
            note(f"first run: {problems[0]}")
        ok.append(s)

    await asyncio.gather(*(open_one(i, s) for i, s in enumerate(sessions)))
    started = 0
    t_start = time.perf_counter()
    deadline = t_start + args.seconds
    cpu0, srv0 = time.process_time(), group_cpu_seconds(pgid)

    async def loop(i: int, s: Session) -> None:
        nonlocal started
        iteration = 1
        while time.perf_counter() < deadline and started < args.max_reruns:
            started += 1
            req = page_request(cell.page, args.chars, i, iteration, rngs[i])
            iteration += 1
            try:
                if args.mode == "typing":
                    res = await type_text(s, req, args.run_timeout)
                else:
                    res = await s.run(req.query, args.run_timeout)
            except asyncio.TimeoutError:
                note(f"rerun did not finish within {args.run_timeout:.0f} s")
                return  # a frozen session: no more from it
            except Exception as err:  # noqa: BLE001
                note(f"{type(err).__name__}: {err}")
                return
            problems = res.errors + content_problems(req, res.metrics, res.element_types)
            if problems:
                note(problems[0])
            else:
                cell.latencies_ms.append(res.ms)

    index = {id(s): i for i, s in enumerate(sessions)}
    await asyncio.gather(*(loop(index[id(s)], s) for s in ok))
    cell.elapsed_s = time.perf_counter() - t_start
    wall = cell.elapsed_s
    cell.client_cpu = 100 * (time.process_time() - cpu0) / wall
    cell.server_cpu = 100 * (group_cpu_seconds(pgid) - srv0) / wall
    await asyncio.gather(*(s.close() for s in sessions))
    for s in sessions:
        for err in s.background_errors:
            if not err.startswith("connection"):
                note(err)


async def run_all(args: argparse.Namespace, http: str, ws_url: str, pgid: int | None
                  ) -> list[Cell]:
    cells: list[Cell] = []
    trainers: list[Session] = []
    try:
        for n_train in args.trainings:
            while len(trainers) > n_train:
                await stop_training(trainers.pop())
            while len(trainers) < n_train:
                t0 = time.monotonic()
                trainers.append(await start_training(ws_url, f"trainer-{len(trainers) + 1}",
                                                     args.train_vocab, args.train_speed))
                print(f"# {trainers[-1].name}: training started in {time.monotonic() - t0:.1f} s",
                      file=sys.stderr, flush=True)
            if trainers:  # measure while they merge, not while they count pre-tokens
                t0 = time.monotonic()
                while (time.monotonic() - t0 < SETUP_TIMEOUT_S
                       and not all(t.progress_text.startswith("Merges") for t in trainers)):
                    await asyncio.sleep(0.5)
                print(f"# trainings merging after {time.monotonic() - t0:.1f} s more: "
                      + "; ".join(repr(t.progress_text[:60]) for t in trainers),
                      file=sys.stderr, flush=True)
            for page in args.pages:
                for n in args.sessions:
                    cell = Cell(page, n_train, n)
                    await measure(ws_url, cell, args, pgid)
                    cells.append(cell)
                    progress = "; ".join(f"{t.name}: {t.progress_text[:70]!r}" for t in trainers)
                    print(f"# {page} trainings={n_train} sessions={n}: {len(cell.latencies_ms)} "
                          f"reruns, {cell.rate:.1f}/s, p50 "
                          f"{_fmt(percentile(cell.latencies_ms, 50), '.0f')} ms, "
                          f"{cell.errors} errors" + (f" [{progress}]" if progress else ""),
                          file=sys.stderr, flush=True)
                    for t in trainers:
                        if t.closed.is_set():
                            raise ProtocolError(f"{t.name}: its session closed: "
                                                f"{t.background_errors[-1:]}")
                    await asyncio.sleep(args.pause)
    finally:
        for t in trainers:
            for err in dict.fromkeys(t.background_errors):
                print(f"# {t.name}: {err}", file=sys.stderr)
        await asyncio.gather(*(stop_training(t) for t in trainers))
    return cells


def main(argv: list[str] | None = None) -> int:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--sessions", default="1,5,10,20", help="concurrent sessions per cell")
    parser.add_argument("--trainings", default="0,2", help="trainings running during a cell")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help=f"measurement seconds per cell (at most {MAX_SECONDS:.0f})")
    parser.add_argument("--max-reruns", type=int, default=2000, help="per cell")
    parser.add_argument("--chars", type=int, default=60,
                        help="characters of text per rerun (Decode: chars/4 IDs)")
    parser.add_argument("--run-timeout", type=float, default=60.0,
                        help="a rerun not finished after this many seconds is an error")
    parser.add_argument("--train-vocab", type=int, default=TRAIN_VOCAB)
    parser.add_argument("--train-speed", default="5 merges/s",
                        help="a label of Train's Speed radio (slow: the trainings keep running)")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between cells")
    parser.add_argument("--repo", type=Path, default=REPO_DEFAULT,
                        help="the checkout whose app.py to serve (default: this one)")
    parser.add_argument("--url", help="a running server on this machine instead of a new one")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--mode", choices=("link", "typing"), default="link",
                        help="link: each rerun opens a new address (a whole-page run); "
                             "typing: each rerun commits the page's text box as a typing pause "
                             "does (only the fragment drawing it reruns, where there is one)")
    args = parser.parse_args(argv)
    try:
        args.pages = parse_pages(args.pages)
        args.sessions = [n for n in parse_counts(args.sessions) if n > 0]
        args.trainings = parse_counts(args.trainings)
        if args.url:
            loopback_urls(args.url)
    except ValueError as err:
        parser.error(str(err))
    args.seconds = max(0.5, min(args.seconds, MAX_SECONDS))
    args.max_reruns = max(1, args.max_reruns)
    args.chars = max(1, min(args.chars, 5000))
    n_cells = len(args.pages) * len(args.sessions) * len(args.trainings)
    hard_cap = (n_cells * (args.seconds + args.run_timeout + args.pause + 30)
                + len(args.trainings) * 2 * SETUP_TIMEOUT_S + SETUP_TIMEOUT_S)
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())

    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    with tempfile.TemporaryDirectory(prefix="tokplay-loadproto-") as tmp:
        try:
            if args.url:
                http, ws_url = loopback_urls(args.url)
                if not healthy(http):
                    print(f"no healthy Streamlit server at {http}", file=sys.stderr)
                    return 2
                where = http
            else:
                repo = args.repo.resolve()
                proc, http, log = start_server(repo, Path(tmp))
                http, ws_url = loopback_urls(http)
                where = f"{http} serving {repo}"
            print(f"# server: {where}", file=sys.stderr, flush=True)
            pgid = proc.pid if proc is not None else None
            try:
                cells = asyncio.run(asyncio.wait_for(run_all(args, http, ws_url, pgid),
                                                     timeout=hard_cap))
            except asyncio.TimeoutError:
                print(f"ABORTED: the run exceeded its hard cap of {hard_cap:.0f} s",
                      file=sys.stderr)
                return 2
            except ProtocolError as err:
                print(f"FAILED: {err}", file=sys.stderr)
                return 2
        finally:
            if proc is not None:
                stop(proc)
        tracebacks = report_server_log(log)

    print()
    print(f"Protocol-level load test: closed loop, no think time, {args.chars}-character "
          f"texts (Decode: {max(1, args.chars // 4)} IDs), GPT-2; {args.seconds:.0f} s per cell; "
          f"trainings: built-in corpus, vocab {args.train_vocab:,}, {args.train_speed!r}; "
          f"{os.cpu_count()} CPUs, load average before {load_before}")
    print()
    print(format_table(cells))
    messages = [(c, m) for c in cells for m in c.messages]
    if messages:
        print()
        print("errors (first of each kind per cell):")
        for c, m in messages:
            print(f"- {c.page}/{c.trainings}/{c.sessions}: {m[:300]}")
    bad = sum(c.errors for c in cells)
    return 1 if bad or tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())

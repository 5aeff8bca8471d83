"""A Streamlit client without a browser: one ``Session`` per websocket, as the browser speaks
the protocol (Streamlit 1.67, ``streamlit/web/server/starlette/starlette_websocket.py`` and
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

A session also polls the fragments the server asks it to (``auto_rerun``), as a browser
watching a training does. Loopback only (:func:`loopback_urls`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from tests.stats import figures_in

__all__ = [
    "LOOPBACK_HOSTS",
    "STREAM_PATH",
    "ProtocolError",
    "RunResult",
    "Session",
    "loopback_urls",
    "widget_state",
]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
STREAM_PATH = "/_stcore/stream"


#: How Train's progress line starts (``ui.train_live.progress_line``: the label of a number
#: widget drawn above the bar, which has no text of its own).
PROGRESS_LINES = ("Downloading the corpus", "Counting pre-tokens", "Merges ")


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


@dataclass
class RunResult:
    """What one run of a page showed and cost (time, messages, bytes)."""

    ms: float = 0.0
    status: str = ""
    errors: list[str] = field(default_factory=list)
    metrics: dict[str, str] = field(default_factory=dict)
    element_types: set[str] = field(default_factory=set)
    messages: int = 0
    nbytes: int = 0


class ProtocolError(Exception):
    """The server broke the protocol, closed the session, or a run could not be asked for."""


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
            elif etype == "html":  # figures (ui.stat_row) and tables (ui.html_table) among them
                if res is not None:
                    res.metrics.update((f.label, f.value) for f in figures_in(el.html.body))
                    if "<table" in el.html.body:
                        res.element_types.add("html_table")
            elif etype == "progress" and el.progress.text:
                self.progress_text = el.progress.text
            elif etype in ("button", "number_input", "radio", "selectbox", "text_input",
                           "text_area", "checkbox", "toggle"):
                widget = getattr(el, etype)
                if etype == "number_input" and widget.label.startswith(PROGRESS_LINES):
                    self.progress_text = widget.label  # Train's progress line (ui.train_live)
                    return
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


def widget_state(widget_id: str, **value: Any) -> Any:
    """A ``WidgetState`` proto: the value a click or an edit of widget ``widget_id`` sends."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    ws = WidgetState(id=widget_id)
    for k, v in value.items():
        setattr(ws, k, v)
    return ws

"""One Streamlit server on a free loopback port: started, waited for, stopped.

The one home of the free port, the health wait and the process-group stop that the browser
tests, the benchmarks, ``docs/screenshots.py`` and ``deploy/serve.py`` share. Standard
library only (no pytest), so every script can import it::

    with streamlit_server(env=dict(os.environ, TOKPLAY_LIBRARY_DIR=tmp)) as server:
        urllib.request.urlopen(server.url)

A server is ready when ``/_stcore/health`` answers, not after a fixed sleep. It leads its
own process group, so :func:`stop` also ends the training workers it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "APP_ENTRY",
    "HEALTH_PATH",
    "NO_FILE_WATCHER",
    "REPO",
    "START_TIMEOUT_S",
    "Server",
    "ServerError",
    "free_port",
    "healthy",
    "start_streamlit",
    "stop",
    "streamlit_command",
    "streamlit_server",
    "wait_healthy",
]

REPO = Path(__file__).resolve().parent.parent
HEALTH_PATH = "/_stcore/health"
START_TIMEOUT_S = 90.0
#: Others may edit the checkout while a server runs: no watcher, no reruns on save.
NO_FILE_WATCHER = ("--server.fileWatcherType", "none")
#: What ``make run`` serves: app.py as Streamlit's ASGI app, with deploy.base_hint's middleware.
APP_ENTRY = "deploy/asgi.py"


class ServerError(RuntimeError):
    """A server ended, or did not answer its health check in time, before it was ready."""


class Server(NamedTuple):
    url: str  # "http://127.0.0.1:54321", no trailing slash
    process: subprocess.Popen[bytes]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def healthy(url: str) -> bool:
    """Whether the Streamlit server at ``url`` (no trailing slash) answers its health check."""
    try:
        with urllib.request.urlopen(url + HEALTH_PATH, timeout=2) as reply:  # noqa: S310
            return reply.status == 200
    except OSError:  # URLError, refused, reset, timed out
        return False


def _log_tail(log: Path | None, n: int = 40) -> str:
    if log is None:
        return ""
    try:
        return "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "\n(no log)"


def wait_healthy(url: str, procs: Iterable[subprocess.Popen[bytes]] = (), *,
                 timeout: float = START_TIMEOUT_S, log: Path | None = None) -> None:
    """Poll ``url``'s health check until it answers. :class:`ServerError` (ending with the
    last lines of ``log``) when one of ``procs`` ends first or ``timeout`` seconds pass."""
    procs = list(procs)
    deadline = time.monotonic() + timeout
    while not healthy(url):
        ended = [p for p in procs if p.poll() is not None]
        if ended:
            raise ServerError(f"a process ended (code {ended[0].returncode}) before {url} "
                              f"answered{_log_tail(log)}")
        if time.monotonic() > deadline:
            raise ServerError(f"{url} did not answer within {timeout:.0f} s{_log_tail(log)}")
        time.sleep(0.25)  # polling: the wait ends on the answer, not on a guess


def streamlit_command(port: int, *, app: str | os.PathLike[str] = APP_ENTRY,
                      python: str = sys.executable, extra: Sequence[str] = (),
                      warm: bool = False) -> list[str]:
    """``streamlit run`` of ``app`` on 127.0.0.1:``port``, headless, without usage stats;
    ``warm``: through the checkout's ``deploy/warm_start.py`` (run it in the checkout: the
    caches are filled as soon as the server is up)."""
    start = ["deploy/warm_start.py"] if warm else ["-m", "streamlit"]
    return [python, *start, "run", str(app),
            "--server.headless=true", "--browser.gatherUsageStats=false",
            "--server.port", str(port), "--server.address", "127.0.0.1", *extra]  # fmt: skip


def start_streamlit(*, cwd: Path = REPO, env: Mapping[str, str] | None = None,
                    log: Path | None = None, timeout: float = START_TIMEOUT_S,
                    warm: bool = False) -> Server:
    """``streamlit run`` of ``cwd``'s :data:`APP_ENTRY` (``app.py`` in a folder without one:
    a bare app, an older checkout) on a free loopback port, returned once it answers.

    ``env``: its environment (default: this process's); ``log``: where its output goes
    (appended; default: nowhere). It leads its own process group: :func:`stop` ends it and
    its training workers. :class:`ServerError` when it does not come up (it is stopped).
    ``warm``: started as ``make run`` starts it (:func:`streamlit_command`).
    """
    port = free_port()
    env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
    with open(log, "ab") if log is not None else contextlib.nullcontext(subprocess.DEVNULL) as out:
        proc = subprocess.Popen(  # noqa: S603
            streamlit_command(port, app=APP_ENTRY if (cwd / APP_ENTRY).exists() else "app.py",
                              extra=NO_FILE_WATCHER, warm=warm), cwd=cwd, env=env, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", proc)
    try:
        wait_healthy(server.url, [proc], timeout=timeout, log=log)
    except BaseException:
        stop(proc)
        raise
    return server


@contextlib.contextmanager
def streamlit_server(*, cwd: Path = REPO, env: Mapping[str, str] | None = None,
                     log: Path | None = None,
                     timeout: float = START_TIMEOUT_S) -> Iterator[Server]:
    """:func:`start_streamlit` for a ``with`` block; the server is stopped at its end."""
    server = start_streamlit(cwd=cwd, env=env, log=log, timeout=timeout)
    try:
        yield server
    finally:
        stop(server.process)


def _signal(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """``sig`` to ``proc``'s process group (``proc`` leads it), else to ``proc`` alone."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:  # not a group leader (HAProxy), or the whole group is gone
        if proc.poll() is None:
            proc.send_signal(sig)
    except PermissionError:
        pass


def stop(*procs: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """Stop ``procs`` and what they started: SIGTERM to each one's process group, up to
    ``timeout`` seconds to exit, then SIGKILL to whatever is left of the groups (training
    workers share their server's group and may outlive it)."""
    for proc in procs:
        if proc.poll() is None:
            _signal(proc, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    for proc in procs:
        _signal(proc, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)

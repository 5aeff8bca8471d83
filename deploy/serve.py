"""Run N Streamlit processes behind HAProxy on one host: ``make serve WORKERS=N``.

One Streamlit process runs every session's script under one GIL, so one process tops out
whatever the cores (issue 14). This starts ``--workers`` processes on loopback ports and
HAProxy (Debian's ``haproxy``; ``make serve`` installs it) on ``--bind``:``--port`` in front,
with the configuration in ``deploy/haproxy.cfg``:

- sticky sessions by cookie (a browser stays on the process that holds its session), round
  robin for new browsers, websockets proxied, dead processes taken out by health checks;
- every process shares the library folder (``TOKPLAY_LIBRARY_DIR`` or the default), so saved
  tokenizers, stored link texts and workspaces (``ws=``) open on any process, and the limit on
  concurrent trainings (``TOKPLAY_MAX_TRAININGS``) holds across all of them;
- one cookie secret for all processes (Streamlit signs its XSRF cookie with it);
- no listing of the host's GGUF models (``ui.local_models``) unless the operator sets
  ``TOKPLAY_LOCAL_MODELS=1``, which this then says at start: every browser user would see
  (and open by name) the models of this machine's Ollama and LM Studio.

Ctrl+C (or SIGTERM) stops HAProxy and every process.

    python deploy/serve.py --workers 2 --port 8501
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: deploy/ is on the path, the repo is not
    sys.path.insert(0, str(REPO))

from deploy.launch import (  # noqa: E402
    APP_ENTRY,
    NO_FILE_WATCHER,
    ServerError,
    free_port,
    stop,
    streamlit_command,
    wait_healthy,
)

TEMPLATE = Path(__file__).resolve().parent / "haproxy.cfg"
#: ui.local_models.ENV_ENABLE (not imported: this script runs without Streamlit loaded).
LOCAL_MODELS_ENV = "TOKPLAY_LOCAL_MODELS"


def find_haproxy() -> str | None:
    """The haproxy binary (Debian puts it in /usr/sbin, often not on a user's PATH)."""
    return shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)),
        None)


def render_config(*, bind: str, port: int, worker_ports: list[int]) -> str:
    """deploy/haproxy.cfg with its ``${...}`` values filled in.

    >>> cfg = render_config(bind="0.0.0.0", port=8501, worker_ports=[8601, 8602])
    >>> "bind 0.0.0.0:8501" in cfg, cfg.count("check cookie w")
    (True, 2)
    """
    servers = "\n".join(f"    server w{i} 127.0.0.1:{p} check cookie w{i}"
                        for i, p in enumerate(worker_ports, 1))
    return (TEMPLATE.read_text(encoding="utf-8")
            .replace("${BIND}", bind).replace("${PORT}", str(port))
            .replace("${SERVERS}", servers))


def local_models_warning(env: Mapping[str, str]) -> str | None:
    """The line said at start when the operator turned the local GGUF listing on.

    >>> local_models_warning({}) is None, local_models_warning({"TOKPLAY_LOCAL_MODELS": "0"})
    (True, None)
    >>> local_models_warning({"TOKPLAY_LOCAL_MODELS": "1"})[:40]
    'TOKPLAY_LOCAL_MODELS=1: every browser us'
    """
    if env.get(LOCAL_MODELS_ENV, "").strip().lower() not in {"1", "true", "yes", "on"}:
        return None
    return (f"{LOCAL_MODELS_ENV}=1: every browser user of this server sees the GGUF models "
            "of this machine's Ollama and LM Studio folders and can open them by name")


def start_workers(n: int, *, cookie_secret: str, python: str) -> tuple[list[subprocess.Popen[bytes]], list[int]]:
    procs, ports = [], []
    for _ in range(n):
        port = free_port()
        # No file watcher: a served checkout does not change under its users, and Streamlit's
        # watcher looks over the imported modules after each script run (the single-process
        # benchmarks, deploy.launch.start_streamlit, run without it too).
        cmd = streamlit_command(port, app=REPO / APP_ENTRY, python=python, warm=True,
                                extra=NO_FILE_WATCHER)
        env = dict(os.environ, STREAMLIT_SERVER_COOKIE_SECRET=cookie_secret)  # no CLI flag for it
        procs.append(subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True))  # noqa: S603
        ports.append(port)
    return procs, ports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WORKERS", "2")))
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--bind", default="0.0.0.0", help="address HAProxy listens on")  # noqa: S104
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    haproxy = find_haproxy()
    if haproxy is None:
        print("haproxy is not installed: run `make serve` (it installs Debian's haproxy) or "
              "`sudo apt-get install haproxy`.", file=sys.stderr)
        return 2
    warning = local_models_warning(os.environ)
    if warning:
        print(warning, file=sys.stderr)
    procs, ports = start_workers(args.workers, cookie_secret=secrets.token_hex(32),
                                 python=sys.executable)
    proxy: subprocess.Popen[bytes] | None = None

    def on_signal(signum: int, frame: object) -> None:  # noqa: ARG001
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        for port in ports:
            wait_healthy(f"http://127.0.0.1:{port}", procs, timeout=120)
        folder = Path(tempfile.mkdtemp(prefix="tokplay-serve-"))
        config = folder / "haproxy.cfg"
        config.write_text(render_config(bind=args.bind, port=args.port, worker_ports=ports),
                          encoding="utf-8")
        proxy = subprocess.Popen([haproxy, "-f", str(config), "-db"])  # noqa: S603
        host = "127.0.0.1" if args.bind in ("0.0.0.0", "::") else args.bind  # noqa: S104
        wait_healthy(f"http://{host}:{args.port}", [*procs, proxy], timeout=120)
        print(f"Tokenizer Playground: http://{host}:{args.port} ({args.workers} Streamlit "
              f"processes on ports {', '.join(map(str, ports))} behind HAProxy)", flush=True)
        while all(p.poll() is None for p in [*procs, proxy]):
            time.sleep(0.5)
        print("a process ended: stopping the others", file=sys.stderr)
        return 1
    except ServerError as err:  # the processes write their logs to this terminal
        print(f"{err}; see the log above", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop(*[p for p in [proxy] if p is not None], *procs)


if __name__ == "__main__":
    raise SystemExit(main())

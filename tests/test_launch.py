"""deploy/launch.py: the free port, the health wait and the process-group stop that tests,
benchmarks, docs/screenshots.py and deploy/serve.py share (no Streamlit here: the browser
tests start real servers with it)."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from deploy.launch import ServerError, free_port, healthy, stop, streamlit_command, wait_healthy


def test_it_needs_only_the_standard_library():
    """Benchmarks, docs scripts and deploy/serve.py import it without pytest or the app's
    libraries."""
    code = ("import sys; import deploy.launch; "
            "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)"
            " - {'deploy', '__main__'}))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent, check=True)
    assert out.stdout.strip() == "[]"


def test_free_port_is_free_on_loopback():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # nothing holds it


def test_the_command_is_headless_on_loopback():
    cmd = streamlit_command(8765, extra=("--server.fileWatcherType", "none"))
    assert cmd[:5] == [sys.executable, "-m", "streamlit", "run", "deploy/asgi.py"]
    assert {"--server.headless=true", "--browser.gatherUsageStats=false"} <= set(cmd)
    assert cmd[cmd.index("--server.port") + 1] == "8765"
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"


def _health_server(port: int) -> subprocess.Popen[bytes]:
    """A stand-in for Streamlit that answers 200 on /_stcore/health after half a second."""
    code = textwrap.dedent(f"""
        import http.server, time
        time.sleep(0.5)
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200 if self.path == "/_stcore/health" else 404)
                self.end_headers()
            def log_message(self, *args):
                pass
        http.server.HTTPServer(("127.0.0.1", {port}), H).serve_forever()
    """)
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def test_wait_healthy_polls_until_the_answer():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    assert not healthy(url)
    proc = _health_server(port)
    try:
        start = time.monotonic()
        wait_healthy(url, [proc], timeout=30)
        assert healthy(url) and time.monotonic() - start < 30
    finally:
        stop(proc)
    assert proc.returncode is not None


def test_wait_healthy_says_when_the_process_ended(tmp_path: Path):
    log = tmp_path / "server.log"
    log.write_text("Traceback: the reason\n")
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(ServerError, match=r"ended \(code 3\)[\s\S]*the reason"):
        wait_healthy(f"http://127.0.0.1:{free_port()}", [proc], timeout=30, log=log)
    with pytest.raises(ServerError, match="did not answer within 0 s"):
        wait_healthy(f"http://127.0.0.1:{free_port()}", [], timeout=0.1)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_stop_ends_the_group_even_what_ignores_sigterm(tmp_path: Path):
    """A training worker shares its server's group; one that ignores SIGTERM is killed too."""
    pid_file = tmp_path / "worker.pid"
    worker = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    leader = (f"import subprocess, sys, time, pathlib; "
              f"p = subprocess.Popen([sys.executable, '-c', {worker!r}]); "
              f"pathlib.Path({str(pid_file)!r}).write_text(str(p.pid)); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", leader], start_new_session=True)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    worker_pid = int(pid_file.read_text())
    time.sleep(0.3)  # the worker has set its SIGTERM handler
    stop(proc, timeout=2)
    assert proc.returncode is not None
    deadline = time.monotonic() + 10
    while _alive(worker_pid):
        assert time.monotonic() < deadline, "the worker outlived stop()"
        time.sleep(0.05)


def test_stop_reaches_a_process_that_leads_no_group():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # like HAProxy
    stop(proc)
    assert proc.returncode is not None

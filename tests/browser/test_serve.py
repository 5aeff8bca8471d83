"""``make serve WORKERS=N`` (deploy/serve.py): N Streamlit processes behind HAProxy.

A link made in a session on one process opens, in a browser sent to the other process, on
the same tokenizer with the same IDs: both processes share the library folder, where the
workspace (``ws=``) lives. The proxy keeps each browser on its process (uploads included).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import serve
from deploy.launch import free_port, stop
from tests.browser.conftest import REPO, RUN_TIMEOUT_MS, browser_session
from tests.browser.test_sharing import (
    address,
    chip_ids,
    picked_tokenizer,
    upload_tokenizer,
    write_pickles,
)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


def _need_haproxy() -> str:
    found = serve.find_haproxy()
    if found is None:
        message = "haproxy is not installed (make test installs it: `make proxy`)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``deploy/serve.py --workers 2`` on a free port, with its own empty library."""
    _need_haproxy()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKPLAY_", "TIKTOKEN_"))}
    env["TOKPLAY_LIBRARY_DIR"] = str(tmp_path_factory.mktemp("served-library"))
    log = tmp_path_factory.mktemp("serve-log") / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(  # noqa: S603
            [sys.executable, str(REPO / "deploy" / "serve.py"), "--workers", "2",
             "--port", str(port), "--bind", "127.0.0.1"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while "behind HAProxy" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            pytest.fail(f"make serve did not come up:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)
    yield url
    stop(proc)


def _worker_of(app: object) -> str:
    cookies = app.page.context.cookies()  # type: ignore[attr-defined]
    return next(c["value"] for c in cookies if c["name"] == "TOKPLAY_WORKER")


def test_new_browsers_are_spread_over_the_processes(served: str) -> None:
    seen = set()
    for _ in range(4):
        with urllib.request.urlopen(served + "/", timeout=10) as reply:  # noqa: S310
            seen.add(re.search(r"TOKPLAY_WORKER=(w\d)", reply.headers["Set-Cookie"]).group(1))
    assert seen == {"w1", "w2"}


def test_streamlit_static_files_come_from_haproxy_cache_and_pages_do_not(served: str) -> None:
    """A new visitor fetches dozens of Streamlit's hashed scripts: HAProxy keeps them
    (deploy/haproxy.cfg) and answers from memory (an ``age`` header), the same bytes as the
    file; the page itself always reaches a worker."""
    import streamlit

    js = Path(streamlit.__file__).parent / "static" / "static" / "js"
    script = min(js.glob("Selectbox.*.js"))

    def fetch(path: str) -> tuple[bytes, dict[str, str]]:
        with urllib.request.urlopen(served + path, timeout=10) as reply:  # noqa: S310
            return reply.read(), {k.lower(): v for k, v in reply.headers.items()}

    first, _ = fetch(f"/static/js/{script.name}")
    again, headers = fetch(f"/static/js/{script.name}")
    assert first == again == script.read_bytes()
    assert "age" in headers, headers  # from HAProxy's cache, not from a worker
    for _ in range(2):
        _, page_headers = fetch("/")
        assert "age" not in page_headers and "TOKPLAY_WORKER=" in page_headers["set-cookie"]


def test_a_link_made_on_one_process_opens_on_the_other(
        served: str, browser: object, screenshot_dir: Path, tmp_path: Path) -> None:
    vocab_pkl, merges_pkl, tok = write_pickles(tmp_path, 300)
    with browser_session(browser, served, screenshot_dir) as first:
        first.goto("Tokenize")
        upload_tokenizer(first, [vocab_pkl, merges_pkl])  # an upload: must stay on its process
        first.page.locator(".tp-chips").first.wait_for()
        first.wait()
        label, ids = picked_tokenizer(first), chip_ids(first)
        from ui.state import SAMPLE_TEXT

        assert [int(i) for i in ids] == tok.encode(SAMPLE_TEXT)  # the uploaded tokenizer's IDs
        link = address(first)
        assert "ws=" in link, link
        home = _worker_of(first)
        first.assert_healthy()

    other = "w2" if home == "w1" else "w1"
    with browser_session(browser, served, screenshot_dir) as second:
        second.page.context.add_cookies([{"name": "TOKPLAY_WORKER", "value": other,
                                          "url": served}])
        second.goto(link[len(served) + 1:])
        second.page.locator(".tp-chips").first.wait_for(timeout=RUN_TIMEOUT_MS)
        assert _worker_of(second) == other  # really the other process
        assert picked_tokenizer(second) == label
        assert chip_ids(second) == ids
        second.assert_healthy()

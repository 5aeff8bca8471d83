"""deploy.base_hint: the HTML of a page's URL gets the script that tells Streamlit's frontend
where its server is; every other request passes through as it was. (What the browser then
does with it: tests/browser/test_deep_links.py.)"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from deploy.base_hint import PAGE_PATHS, BaseUrlHint, hint_script, page_path
from ui.site import PAGES

INDEX = b"<!doctype html><html><head><meta charset='utf-8'></head><body>app</body></html>"


class FakeApp:
    """An ASGI app that records the scope it got and answers with ``chunks`` of a body."""

    def __init__(self, chunks: list[bytes], content_type: bytes = b"text/html; charset=utf-8",
                 status: int = 200) -> None:
        self.chunks, self.content_type, self.status = chunks, content_type, status
        self.scope: dict[str, Any] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scope = dict(scope)
        size = sum(map(len, self.chunks))
        await send({"type": "http.response.start", "status": self.status, "headers": [
            (b"content-type", self.content_type), (b"content-length", str(size).encode()),
            (b"etag", b'"abc"'), (b"cache-control", b"no-cache")]})
        for i, chunk in enumerate(self.chunks):
            await send({"type": "http.response.body", "body": chunk,
                        "more_body": i < len(self.chunks) - 1})


def serve(app: FakeApp, path: str, method: str = "GET") -> tuple[dict[bytes, bytes], bytes, FakeApp]:
    """``path`` through the middleware: (response headers, body, the app as called)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [
        (b"host", b"h"), (b"accept-encoding", b"gzip"), (b"if-none-match", b'"abc"')]}
    # (a thread of its own: another test may have left an event loop running on this one)
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, BaseUrlHint(app)(scope, receive, send)).result()
    start, *bodies = sent
    assert start["type"] == "http.response.start"
    return dict(start["headers"]), b"".join(m.get("body", b"") for m in bodies), app


def test_every_page_but_home_is_hinted() -> None:
    assert PAGE_PATHS == tuple(p.url_path for p in PAGES[1:])
    assert all(page_path(f"/{p}") and page_path(f"/x/{p}/") for p in PAGE_PATHS)
    assert not any(map(page_path, ["/", "", "/_stcore/health", "/static/js/index.js",
                                   "/Evaluate/_stcore/health", "/NoSuchPage"]))


@pytest.mark.parametrize("chunks", [[INDEX], [INDEX[:20], INDEX[20:41], INDEX[41:]]])
def test_a_pages_html_gets_the_script_first_in_its_head_whole_and_uncompressed(chunks: list[bytes]) -> None:
    headers, body, app = serve(FakeApp(chunks), "/Evaluate")
    assert body == INDEX.replace(b"<head>", b"<head>" + hint_script().encode())
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b"etag" not in headers  # the file's tag does not name this body
    assert headers[b"cache-control"] == b"no-cache"
    asked = dict(app.scope["headers"])
    assert b"accept-encoding" not in asked and b"if-none-match" not in asked
    assert asked[b"host"] == b"h"


@pytest.mark.parametrize(("path", "method", "content_type"), [
    ("/", "GET", b"text/html"), ("/_stcore/health", "GET", b"text/plain"),
    ("/static/js/x.js", "GET", b"text/javascript"), ("/Evaluate", "HEAD", b"text/html"),
    ("/Evaluate", "GET", b"application/json")])
def test_everything_else_passes_through(path: str, method: str, content_type: bytes) -> None:
    headers, body, app = serve(FakeApp([INDEX], content_type), path, method)
    assert body == INDEX
    assert headers[b"content-length"] == str(len(INDEX)).encode()
    if not (path == "/Evaluate" and method == "GET"):  # not a page's HTML: asked as it was
        assert dict(app.scope["headers"])[b"accept-encoding"] == b"gzip"
        assert headers[b"etag"] == b'"abc"'


def test_a_page_without_a_head_is_sent_as_it_came() -> None:
    headers, body, _ = serve(FakeApp([b"<p>no head</p>"]), "/Tokenize")
    assert body == b"<p>no head</p>" and headers[b"content-length"] == b"14"

"""Tell Streamlit's frontend where its server is, so a deep link asks once (ASGI middleware
for ``deploy/asgi.py``; no Streamlit import).

subtle: why. Streamlit's frontend does not know where its server is: opened at a deep link
such as ``/Evaluate``, it first asks ``/Evaluate/_stcore/health`` (the server might live
under that path), gets a 404, waits 100 ms (its retry back-off) and only then asks
``/_stcore/health``. A new visitor of any page but Home waited for that: a first view of
0.8-1.0 s came 10-85 ms sooner without it (2 cores, servers side by side, 8 rounds; Home and
a bare page are served at ``/`` and ask once). The frontend reads where its server is
from ``window.__streamlit.BACKEND_BASE_URL`` when the page defines it (Streamlit's own
setting for hosts that embed it), and then asks once. So the HTML of a page's URL gets a
one-line script that defines it as the URL without the page's name: computed in the browser
from ``location``, so it stays right behind a proxy that serves the app under a prefix.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Iterable, MutableMapping
from typing import Any

from ui.site import PAGES

__all__ = ["PAGE_PATHS", "BaseUrlHint", "hint_script", "page_path"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The pages served at a path of their own (Home is ``/``: the frontend asks once there).
PAGE_PATHS = tuple(p.url_path for p in PAGES if p.url_path)
#: Request headers dropped on a page's HTML: the body must arrive whole and uncompressed to
#: take the script (gzip would save ~5 KB of an 8 KB page), never as a 304 of another body.
_DROPPED_REQUEST = {b"accept-encoding", b"if-none-match", b"if-modified-since", b"range"}
#: Response headers that describe the body before the script went in.
_DROPPED_RESPONSE = {b"content-length", b"etag", b"last-modified", b"accept-ranges"}


def hint_script(pages: Iterable[str] = PAGE_PATHS) -> str:
    r"""The ``<script>`` that sets ``window.__streamlit.BACKEND_BASE_URL`` to the page's URL
    without its last segment when that segment names one of ``pages`` (else nothing: the
    frontend finds its server as before).

    >>> print(hint_script(["Tokenize"]).replace(";", ";\n"))
    <script>(function(){var s=location.pathname.replace(/\/+$/,"").split("/");
    if(["Tokenize"].indexOf(s[s.length-1])<0)return;
    s.pop();
    window.__streamlit={BACKEND_BASE_URL:location.origin+s.join("/")+"/"};
    })();
    </script>
    """
    names = json.dumps(list(pages))
    return ('<script>(function(){var s=location.pathname.replace(/\\/+$/,"").split("/");'
            f'if({names}.indexOf(s[s.length-1])<0)return;s.pop();'
            'window.__streamlit={BACKEND_BASE_URL:location.origin+s.join("/")+"/"};})();'
            '</script>')


def page_path(path: str, pages: Collection[str] = PAGE_PATHS) -> bool:
    """Whether a request for ``path`` asks for a page's HTML (its last segment is a page's).

    >>> page_path("/Evaluate"), page_path("/play/Evaluate/"), page_path("/"), page_path("/_stcore/health")
    (True, True, False, False)
    """
    return path.rstrip("/").rsplit("/", 1)[-1] in pages


class BaseUrlHint:
    """ASGI middleware: the HTML of a page's URL (a GET of :func:`page_path`) gets
    :func:`hint_script` at the start of its ``<head>``. Every other request, and a page's
    response that is not HTML with a ``<head>``, passes through untouched."""

    def __init__(self, app: ASGIApp, *, pages: Iterable[str] = PAGE_PATHS) -> None:
        self.app = app
        self.pages = tuple(pages)
        self.script = hint_script(self.pages).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope.get("method") != "GET"
                or not page_path(scope.get("path", ""), self.pages)):
            await self.app(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() not in _DROPPED_REQUEST]
        await self.app({**scope, "headers": headers}, receive, _Injecting(send, self.script))


class _Injecting:
    """A ``send`` that holds the response until its body is whole, then sends it with the
    script in its ``<head>`` (when it is HTML and has one) and the new length."""

    def __init__(self, send: Send, script: bytes) -> None:
        self.send = send
        self.script = script
        self.start: Message | None = None
        self.body: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.start = message
            return
        if message["type"] != "http.response.body" or self.start is None:
            await self.send(message)
            return
        self.body.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        body = b"".join(self.body)
        headers = list(self.start.get("headers", []))
        content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
        if content_type.startswith(b"text/html") and b"<head>" in body:
            body = body.replace(b"<head>", b"<head>" + self.script, 1)
            headers = [(k, v) for k, v in headers if k.lower() not in _DROPPED_RESPONSE]
            headers.append((b"content-length", str(len(body)).encode()))
        await self.send({**self.start, "headers": headers})
        await self.send({"type": "http.response.body", "body": body})



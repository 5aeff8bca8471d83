"""Links that reopen the same view: each page's state lives in the URL (``st.query_params``).

How it works
------------
- :func:`apply_url` (called by ``ui.page.setup`` before any widget) reads the page's query
  parameters and, once per distinct URL, copies them into the persistent session values of
  ``ui.state`` (``ui.active``, ``tok.text``, ``dec.ids``, ...), validating each one. A bad
  parameter becomes a note ("what was wrong, what the page shows instead"), never an error.
- :func:`share` (called by each page under its title) writes the current view back to
  ``st.query_params``, so the address bar always names the view, and shows the full link on
  one line with a copy button (``ui.copy_line``): one click copies it.

Where the rest lives
--------------------
- ``ui.url_params``: the parameters (``tok``, ``text``, ``ids``, ``word``, ...), one row of
  ``PARAMS`` each, with their table; adding one is one row there.
- ``ui.link_targets``: the saved tokenizers (``lib:<ID>``) and stored long texts (``@<ID>``)
  a link can name.
- here: the flow between the URL and the session, the two parameters that are not rows
  (``page``: Home opens the page it names, for static hosts; ``ws``: the session's
  workspace, ``ui.workspace``), the full link and the share widgets. The names pages and
  tests use from the two modules above are importable from here too.

Tokenizers trained or uploaded in a session are kept in its workspace, so a link names them
by label next to ``ws=``; the workspace expires (``ui.workspace``), the library keeps them for
good (the "Save to library" box offers it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import urllib.parse

import streamlit as st

from ui import keys, limits, runtime, site, state, widgets
from ui.link_targets import link_name, resolve_tokenizer, shown, text_for_link
from ui.url_params import PAGE_PARAMS, params_of, parse_flag

__all__ = [
    "PAGE_PARAM",
    "PAGE_PARAMS",
    "PAGE_PATHS",
    "PUBLIC_URL_ENV",
    "apply_url",
    "follow_page_param",
    "link_name",
    "note",
    "page_url",
    "parse_flag",
    "query_string",
    "refresh",
    "resolve_tokenizer",
    "share",
    "share_plain",
    "shown",
    "text_for_link",
    "view_params",
    "write_url",
]

#: The workspace parameter (``ui.workspace``): on every page, written by ``ui.workspace.save``.
WS_PARAM = "ws"
#: Home's parameter naming the page to open (``?page=Tokenize&text=...``): static hosts.
PAGE_PARAM = "page"

#: Page title (as given to ``ui.page.setup``) -> URL path (Streamlit's rule: no number).
PAGE_PATHS: dict[str, str] = {p.title: p.url_path for p in site.PAGES}
#: Environment variable: the address teammates use (e.g. ``http://gpu-box:8501``), for when
#: the browser's own address (``localhost``) is not reachable by others.
PUBLIC_URL_ENV = "TOKPLAY_PUBLIC_URL"


# ---------------------------------------------------------------------------------------------
# The URL and its notes


def query_string(params: dict[str, str | list[str]]) -> str:
    """URL query for ``params`` (lists become repeated keys), ``%20`` for spaces.

    >>> query_string({"tok": ["GPT-2 (gpt2)", "lib:0123456789abcdef"], "text": "a b&c"})
    'tok=GPT-2%20%28gpt2%29&tok=lib%3A0123456789abcdef&text=a%20b%26c'
    """
    return urllib.parse.urlencode(params, doseq=True, quote_via=urllib.parse.quote)


def _digest(items: list[tuple[str, tuple[str, ...]]]) -> str:
    h = hashlib.sha256()
    for key, values in sorted(items):
        for v in values:
            h.update(key.encode("utf-8", "replace") + b"\0" + v.encode("utf-8", "replace") + b"\1")
    return h.hexdigest()


def _url_items(page: str) -> list[tuple[str, tuple[str, ...]]]:
    query = st.query_params
    present = set(query)  # one read of the address; each lookup through the proxy costs
    return [(k, tuple(query.get_all(k))) for k in PAGE_PARAMS.get(page, ()) if k in present]


def note(page: str, message: str) -> None:
    """Queue a note about the URL for ``page`` (shown once, beside the link). ``message`` is
    Markdown: a value from the link goes in through :func:`shown` (a code span), a label, a
    file name or an error's words through ``ui.display.escaped``, so each shows literally."""
    _note(page, message)


def _note(page: str, message: str) -> None:
    st.session_state.setdefault(keys.LINKS_NOTES, {}).setdefault(page, []).append(message)


def follow_page_param() -> None:
    """On Home: open the page a ``page=`` parameter names, with the link's other parameters.

    The static build needs it: a static host has one page (``index.html``), so its links
    say ``/?page=Tokenize&text=...`` instead of ``/Tokenize?text=...`` (and the build's
    ``Tokenize/index.html`` redirects there). An unknown page becomes a note on Home.
    """
    name = st.query_params.get(PAGE_PARAM)
    if name is None:
        return
    rest = {k: st.query_params.get_all(k) for k in st.query_params if k != PAGE_PARAM}
    target = next((p for p in site.PAGES if p.url_path and p.url_path.lower() == name.lower()),
                  None)
    if target is None:
        del st.query_params[PAGE_PARAM]
        _note("Home", f"the link names the page {shown(name)}, which does not exist: this is "
                      "the home page")
        return
    st.switch_page(target.script, query_params=rest)


# ---------------------------------------------------------------------------------------------
# URL -> session (once per distinct URL)


def apply_url(page: str) -> None:
    """Seed the page's session values from its query parameters (before any widget runs).

    Runs its checks once per distinct URL: after :func:`share` wrote the view back, the
    address bar matches what was written and the user's later widget changes win.
    """
    if page not in PAGE_PARAMS:
        return
    items = _url_items(page)
    digest = _digest(items)
    seen: dict[str, str] = st.session_state.setdefault(keys.LINKS_SEEN, {})
    if seen.get(page) == digest:
        return
    # subtle: a run asked for before the browser got the previous run's address still
    # carries that older address (live typing commits while runs are on their way); it is
    # this session's own view, not a link, and applying it would undo the newer text.
    if digest in st.session_state.get(keys.LINKS_WRITTEN, {}).get(page, ()):
        return
    seen[page] = digest
    given = dict(items)
    for param in params_of(page):
        values = given.get(param.name)
        if not values:
            continue
        try:
            problem = param.apply(page, param.keys[page], values)
        except Exception as err:  # noqa: BLE001 - a link must never crash the page
            problem = f"the `{param.name}` parameter could not be used ({type(err).__name__})"
        if problem:
            _note(page, problem)


# ---------------------------------------------------------------------------------------------
# Session -> URL


def view_params(page: str, *, explicit: bool = True) -> tuple[dict[str, str | list[str]], list[str]]:
    """The query parameters naming this session's view of ``page``, and notes about what a
    link cannot carry (an unsaved tokenizer, a text that cannot be stored).

    ``explicit=False`` leaves out values a fresh session shows anyway (the sample text, the
    GPT-2 preset, the default word / IDs / token): the address bar of a page opened plainly
    stays plain, and the link still opens the same view in a new session.
    """
    link, bar, notes = _views(page)
    return (link if explicit else bar), notes


def _views(page: str) -> tuple[dict[str, str | list[str]], dict[str, str | list[str]], list[str]]:
    """The link's parameters, the address bar's (``explicit=False``) and the notes, from one
    pass over the session (each value read and formatted once)."""
    link: dict[str, str | list[str]] = {}
    bar: dict[str, str | list[str]] = {}
    notes: list[str] = []
    for param in params_of(page):
        key = param.keys[page]
        value = param.value(key)
        if value is None:
            continue
        default = value == param.default(key)
        if default and not param.in_full_link:
            continue
        url_value, more = param.format(value)
        if url_value is not None:
            link[param.name] = url_value
            if not default:
                bar[param.name] = url_value
        notes.extend(more)
    return link, bar, notes


#: Addresses written per page that a late run may still carry (each run writes at most one).
_WRITTEN_KEPT = 8


def write_url(page: str, params: dict[str, str | list[str]]) -> None:
    """Make the address bar show ``params`` (only when they differ: no needless updates)."""
    items = [(k, tuple(v) if isinstance(v, list) else (v,)) for k, v in params.items()]
    items = [(k, v) for k, v in items if v]
    digest = _digest(items)
    current = _url_items(page)
    ws_id = st.session_state.get(keys.WS_ID)
    if _digest(current) != digest or st.query_params.get(WS_PARAM) != ws_id or any(
            k not in PAGE_PARAMS.get(page, ()) and k != WS_PARAM for k in st.query_params):
        url = {k: list(v) if len(v) > 1 else v[0] for k, v in items}
        if ws_id:
            url[WS_PARAM] = ws_id  # the session's workspace (ui.workspace) stays in the URL
        st.query_params.from_dict(url)
    st.session_state.setdefault(keys.LINKS_SEEN, {})[page] = digest
    history = st.session_state.setdefault(keys.LINKS_WRITTEN, {})
    kept = tuple(d for d in history.get(page, ()) if d != digest)
    history[page] = (*kept[-(_WRITTEN_KEPT - 1):], digest)


def refresh(page: str) -> None:
    """Write the view to the address bar again after the page changed a value mid-run (e.g.
    Tokenize picking a new default word for a new text)."""
    write_url(page, view_params(page, explicit=False)[0])


def page_url(page: str, params: dict[str, str | list[str]] | None = None) -> str:
    """The full link to ``page`` with ``params``.

    The base is ``$TOKPLAY_PUBLIC_URL`` if set, else the address this browser uses
    (``st.context.url``), else a path relative to the server (in tests).
    """
    path = PAGE_PATHS.get(page, "")
    params = {k: v for k, v in (params or {}).items() if v}
    if st.session_state.get(keys.WS_ID) and WS_PARAM not in params:
        params[WS_PARAM] = st.session_state[keys.WS_ID]
    query = query_string(params)
    public = os.environ.get(PUBLIC_URL_ENV, "").strip()
    if public:
        base = public.rstrip("/")
    else:
        try:
            base = (st.context.url or "").split("?")[0].split("#")[0].rstrip("/")
        except Exception:  # noqa: BLE001 - no browser context (bare mode)
            base = ""
        for known in PAGE_PATHS.values():
            if known and base.endswith("/" + known):
                base = base[: -len(known) - 1]
                break
    if path and not runtime.keeps_work():
        # the static build: a static host serves one page, so the link names the page in
        # its query (Home opens it: follow_page_param)
        return f"{base}/?{query_string({PAGE_PARAM: path, **params})}"
    url = f"{base}/{path}" if path else f"{base}/"
    return f"{url}?{query}" if query else url


# ---------------------------------------------------------------------------------------------
# The share widgets


def share(page: str) -> str:
    """Notes about the link this page was opened with, the URL write-back, and the link
    itself, ready to copy in one click. Call it once the page's view is settled (under the
    title, or into a container drawn there); returns the link."""
    for message in st.session_state.get(keys.LINKS_NOTES, {}).pop(page, []):
        st.warning(f"Link problem: {message}", icon="🔗")
    params, bar, notes = _views(page)
    write_url(page, bar)
    link = page_url(page, params)
    stored = "@" in str(params.get("text", "")) + str(params.get("ids", ""))
    unsaved = [label for label in _linked_labels(page) if link_name(label) is None
               and label in state.session_tokenizers()]
    help = ("Copy it with the button at its right (shown on hover). Opening it in a new "
            "browser shows the same tokenizer, text and selection."
            + (" Long texts are stored on the server (`@<ID>` in the link)." if stored else ""))
    # what the link leaves out goes in a popover at the row's right (a container only then:
    # a rerun pays per element)
    leaves_out = bool(notes or unsaved)
    with (st.container(horizontal=True, vertical_alignment="center", gap="small")
          if leaves_out else contextlib.nullcontext()):
        widgets.copy_row("🔗 Link to this view", link, key=f"links-{page}", help=help)
        if leaves_out:
            with st.popover("What it leaves out", icon="ℹ️",
                            help="What a teammate opening this link would not see."):
                for note in notes:
                    st.info(note, icon="ℹ️")
                if unsaved:
                    widgets.save_to_library(unsaved[0], key=f"links.{page}.save")
    return link


def _linked_labels(page: str) -> list[str]:
    if page == "Compare":
        return list(state.value(keys.CMP_TOKENIZERS) or [])
    if page == "Evaluate":
        return list(state.value(keys.EVA_TOKENIZERS) or [])
    return [state.current_label()] if page in PAGE_PARAMS else []


def share_plain(page: str) -> str:
    """The link, ready to copy in one click, for pages without a tokenizer to show (Home,
    Train): their few parameters (Train's ``corpus``) are written back and carried."""
    for message in st.session_state.get(keys.LINKS_NOTES, {}).pop(page, []):
        st.warning(f"Link problem: {message}", icon="🔗")
    params: dict[str, str | list[str]] = {}
    if page in PAGE_PARAMS:
        params, bar, _ = _views(page)
        write_url(page, bar)
    link = page_url(page, params)
    kept = (f"It carries your work (`ws=`): your tokenizers, the last training and the corpus, "
            f"kept {limits.workspace_max_days()} days after last use." if runtime.keeps_work()
            else runtime.NO_SERVER_NOTE)
    widgets.copy_row("🔗 Link to this page", link, key=f"links-{page}",
                     help="Copy it with the button at its right (shown on hover). " + kept)
    return link

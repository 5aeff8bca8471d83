"""Links that reopen the same view: each page's state lives in the URL (``st.query_params``).

How it works
------------
- :func:`apply_url` (called by ``ui.page.setup`` before any widget) reads the page's query
  parameters and, once per distinct URL, copies them into the persistent session values of
  ``ui.state`` (``ui.active``, ``tok.text``, ``dec.ids``, ...), validating each one. A bad
  parameter becomes a note ("what was wrong, what the page shows instead"), never an error.
- :func:`share` (called by each page under its title) writes the current view back to
  ``st.query_params``, so the address bar always names the view, and shows the full link on
  one line with Streamlit's own copy button (``st.code``): one click copies it.

Parameters
----------
=========  =======================  =====================================================
name       pages                    value
=========  =======================  =====================================================
tok        all but Train and Home   a preset/baseline label ("GPT-2 (gpt2)"), a preset name
                                    ("gpt2"), or a saved tokenizer ``lib:<16 hex>``;
                                    Compare repeats it (``tok=A&tok=B``)
text       Tokenize, Compare,       the text, or ``@<16 hex>``: a long text stored on the
           Replay                   server (``TokenizerLibrary.save_text``)
ids        Decode                   the IDs as typed (or ``@<id>`` when long)
word       Tokenize                 the pre-token of the "why this split" trace
tab        Tokenize                 the open tab: ``pre``, ``why`` or ``export``
show_ids   Tokenize                 ``1`` / ``0`` (IDs inline)
gpt2       Tokenize                 ``1`` / ``0`` (GPT-2 byte view)
q          Vocabulary               the search text
order      Vocabulary               one of ``ui.cache.VOCAB_ORDERS``
token      Vocabulary               the selected token ID
k          Replay                   the step: how many of the tokenizer's merges are applied
page       Home                     a page's URL path (``Tokenize``): open that page with
                                    the other parameters. The static build's links use it,
                                    as a static host serves one page (``index.html``)
ws         every page               the session's workspace snapshot (``ui.workspace``):
                                    its trained and uploaded tokenizers, last training and
                                    corpus; written by ``ui.workspace.save``, not a PARAMS row
=========  =======================  =====================================================

Each parameter is one row of :data:`PARAMS` (name, pages and session keys, how a link's
value is checked in, how the session's value is written out, its default): adding one is one
row, plus its ``apply`` function if no existing one fits.

Tokenizers trained or uploaded in a session are kept in its workspace, so a link names them
by label next to ``ws=``; the workspace expires (``ui.workspace``), the library keeps them for
good (the "Save to library" box offers it).
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui import keys, limits, site, state

#: The workspace parameter (``ui.workspace``): on every page, written by ``ui.workspace.save``.
WS_PARAM = "ws"
#: Home's parameter naming the page to open (``?page=Tokenize&text=...``): static hosts.
PAGE_PARAM = "page"

#: ``apply(page, session key, values)``: check a link's values into the session; a note if not.
Applier = Callable[[str, str, tuple[str, ...]], "str | None"]

#: Page title (as given to ``ui.page.setup``) -> URL path (Streamlit's rule: no number).
PAGE_PATHS: dict[str, str] = {p.title: p.url_path for p in site.PAGES}
#: Environment variable: the address teammates use (e.g. ``http://gpu-box:8501``), for when
#: the browser's own address (``localhost``) is not reachable by others.
PUBLIC_URL_ENV = "TOKPLAY_PUBLIC_URL"

_MAX_LABEL_CHARS = 300
_MAX_WORD_CHARS = 200
_MAX_TEXT_IDS = 32
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


# ---------------------------------------------------------------------------------------------
# Small pure helpers


def shown(value: str, *, limit: int = 60) -> str:
    """A URL value made safe to show inside a message (markdown code span, shortened).

    >>> shown("../../etc/passwd")
    '`../../etc/passwd`'
    >>> shown("a`b\\n" + "x" * 100, limit=12)
    "`a'b?xxxx…` (104 characters)"
    """
    clean = "".join("?" if (ord(c) < 32 or ord(c) == 127) else c for c in value)
    clean = clean.replace("`", "'")
    if len(clean) <= limit:
        return f"`{clean}`"
    return f"`{clean[: limit - 4]}…` ({len(value):,} characters)"


def parse_flag(value: str) -> bool | None:
    """``"1"``/``"true"``/``"on"`` -> True, ``"0"``/``"false"``/``"off"`` -> False, else None.

    >>> parse_flag("1"), parse_flag("Off"), parse_flag("maybe")
    (True, False, None)
    """
    v = value.strip().lower()
    return True if v in _TRUE else False if v in _FALSE else None


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
    keys = PAGE_PARAMS.get(page, ())
    return [(k, tuple(st.query_params.get_all(k))) for k in keys if k in st.query_params]


def note(page: str, message: str) -> None:
    """Queue a note about the URL for ``page`` (shown once, beside the link)."""
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
# Tokenizers in links


def link_name(label: str) -> str | None:
    """What a link calls the tokenizer ``label``: presets and baselines by label, saved ones
    as ``lib:<ID>``, the session's own by label when its workspace keeps them (the link's
    ``ws=`` reopens them: ``ui.workspace``); None for one that cannot be linked."""
    if label in state.PRESET_LABELS or label in state.BASELINE_LABELS:
        return label
    entry_id = state.saved_id(label)
    if entry_id is not None:
        return f"lib:{entry_id}"
    if label in st.session_state.get(keys.WS_RECIPES, {}) and st.session_state.get(keys.WS_ID):
        return label  # kept in the session's workspace: the link's ws= brings it along
    return None


def resolve_tokenizer(name: str) -> tuple[str | None, str | None]:
    """The picker label a link's ``tok`` value names, or ``(None, reason)``.

    Accepts a preset or baseline label, a preset name (``gpt2``), ``lib:<ID>`` of a saved
    tokenizer, and (for a session reopening its own link) a label of this session.
    """
    if len(name) > _MAX_LABEL_CHARS:
        return None, f"the tokenizer name in the link is {len(name):,} characters long"
    if name.startswith("lib:"):
        from core.errors import InvalidIdError, UnknownIdError
        from core.library import validate_id

        from ui import cache

        try:
            entry_id = validate_id(name[4:])
            if not cache.library_exists():
                raise UnknownIdError(f"no saved tokenizer with ID {entry_id}")
            entry = cache.library().get(entry_id)
        except InvalidIdError:
            return None, (f"{shown(name)} is not a valid saved-tokenizer ID (`lib:` and 16 "
                          "characters 0-9, a-f): check that the link was copied completely")
        except UnknownIdError:
            return None, (f"the saved tokenizer {shown(name)} is not in this server's library "
                          "(it may have been deleted)")
        except Exception as err:  # noqa: BLE001 - damaged entry, unreadable library
            return None, f"the saved tokenizer {shown(name)} cannot be opened: {err}"
        label = state.library_label(entry)
        if label not in state.available_tokenizers():
            cache.forget_library_entries()  # saved by another session moments ago
        return label, None
    if name in state.PRESET_LABELS or name in state.BASELINE_LABELS:
        return name, None
    for label, preset in state.PRESET_LABELS.items():
        if name == preset:
            return label, None
    if name in state.session_tokenizers():
        return name, None
    return None, (f"the link names the tokenizer {shown(name)}, which this server does not "
                  "know. Tokenizers trained or uploaded in another browser session stay in "
                  "that session: its owner can save it to the library (📚) and share a new "
                  "link, which names it `lib:<ID>`")


# ---------------------------------------------------------------------------------------------
# Texts in links


def _text_from_link(value: str, *, what: str) -> tuple[str | None, str | None]:
    """A ``text``/``ids`` value: the text itself or ``@<ID>`` of a stored text."""
    if value.startswith("@"):
        from core.errors import InvalidIdError, UnknownIdError
        from core.library import validate_id

        from ui import cache

        try:
            text_id = validate_id(value[1:])
            if not cache.library_exists():
                raise UnknownIdError(text_id)
            return cache.library().load_text(text_id), None
        except InvalidIdError:
            return None, (f"the link's {what} {shown(value)} is not a valid stored-text ID "
                          "(`@` and 16 characters 0-9, a-f)")
        except UnknownIdError:
            return None, (f"the link's {what} {shown(value)} is not stored on this server "
                          "(another server's link, or its library was reset)")
        except Exception as err:  # noqa: BLE001
            return None, f"the link's {what} {shown(value)} cannot be read: {err}"
    return value, None


def text_for_link(text: str) -> tuple[str | None, str | None]:
    """The ``text`` value a link carries: the text, or ``@<ID>`` after storing a long text on
    the server; ``(None, reason)`` if it cannot be stored."""
    if len(urllib.parse.quote(text, safe="")) <= limits.url_text_chars():
        return text, None
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    known: dict[str, str] = st.session_state.setdefault(keys.LINKS_TEXT_IDS, {})
    if key not in known:
        from ui import cache

        try:
            text_id = cache.library().save_text(text)
        except Exception as err:  # noqa: BLE001 - LibraryError: size limit, unwritable folder
            return None, f"the text is too long for a link and cannot be stored here ({err})"
        if len(known) >= _MAX_TEXT_IDS:
            known.pop(next(iter(known)))
        known[key] = text_id
    return "@" + known[key], None


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
    for param in _params_of(page):
        values = given.get(param.name)
        if not values:
            continue
        try:
            problem = param.apply(page, param.keys[page], values)
        except Exception as err:  # noqa: BLE001 - a link must never crash the page
            problem = f"the `{param.name}` parameter could not be used ({type(err).__name__})"
        if problem:
            _note(page, problem)


def _apply_tok(page: str, key: str, values: tuple[str, ...]) -> str | None:
    if key == keys.CMP_TOKENIZERS:
        labels, problems = [], []
        for name in values[:8]:
            label, problem = resolve_tokenizer(name)
            if label is not None and label not in labels:
                labels.append(label)
            elif problem:
                problems.append(problem)
        if len(values) > 8:
            problems.append(f"the link names {len(values)} tokenizers; Compare shows at most 4")
        if labels:
            state.set_value(key, labels[:4])
        if problems:
            return "; ".join(problems) + ". Comparing the others."
        return None
    label, problem = resolve_tokenizer(values[-1])
    if label is None:
        fallback = state.active_label() or state.available_tokenizers()[0]
        return f"{problem[0].upper()}{problem[1:]}. Showing “{fallback}” instead."  # type: ignore[index]
    state.set_active(label)
    return None


def _apply_long(key: str, values: tuple[str, ...], *, what: str, previous: str, cap: int,
                cut_note: Callable[[int, int], str],
                cut: Callable[[str, int], str] = lambda text, cap: text[:cap]) -> str | None:
    """A ``text`` / ``ids`` value (the text itself, or ``@<ID>`` of a stored one) into
    ``key``, at most ``cap`` characters (``cut`` shortens it); ``cut_note(length, kept)``
    says what was cut."""
    raw = values[-1]
    text, problem = _text_from_link(raw[: limits.MAX_PARAM_CHARS], what=what)
    if text is None:
        return f"{problem[0].upper()}{problem[1:]}. Showing {previous} instead."  # type: ignore[index]
    kept = cut(text, cap) if len(text) > cap else text
    state.set_value(key, kept)
    if len(raw) > limits.MAX_PARAM_CHARS or len(text) > cap:
        stored = raw.startswith("@")  # then the length that matters is the stored text's
        return cut_note(len(text) if stored else len(raw), len(kept))
    return None


def cut_at_id_boundary(text: str, cap: int) -> str:
    """At most ``cap`` characters of an ID list, never ending inside an ID.

    >>> cut_at_id_boundary("1, 22, 333", 8), cut_at_id_boundary("1, 22, 333", 7)
    ('1, 22', '1, 22, ')
    """
    head = text[:cap]
    if 0 < cap < len(text) and text[cap - 1] not in _ID_SEPARATORS \
            and text[cap] not in _ID_SEPARATORS:  # the cut falls inside an ID: drop it
        head = head[: max(head.rfind(c) for c in _ID_SEPARATORS) + 1].rstrip(_ID_SEPARATORS)
    return head


_ID_SEPARATORS = " ,\n\t[]"


def _apply_text(page: str, key: str, values: tuple[str, ...]) -> str | None:
    return _apply_long(
        key, values, what="text", cap=limits.max_text_chars(),
        previous="your previous text" if state.value(key) is not None else "the sample text",
        cut_note=lambda n, kept: (f"The link's text has {n:,} characters; this server keeps "
                                  f"the first {kept:,} (TOKPLAY_MAX_TEXT_CHARS)."))


def _apply_ids(page: str, key: str, values: tuple[str, ...]) -> str | None:
    max_ids = limits.max_ids()
    return _apply_long(
        key, values, what="IDs", cut=cut_at_id_boundary,
        cap=max_ids * 12,  # generous: up to 11 digits and a separator per ID
        previous=("your previous IDs" if state.value(key) is not None
                  else "the IDs of the Tokenize page's text"),
        cut_note=lambda n, kept: (
            f"The link's ID list is {n:,} characters long; only its first {kept:,} characters "
            f"(whole IDs) are used. This server decodes at most {max_ids:,} IDs "
            "(TOKPLAY_MAX_IDS)."))


def _apply_word(page: str, key: str, values: tuple[str, ...]) -> str | None:
    word = values[-1]
    if len(word) > _MAX_WORD_CHARS:
        return (f"The link's word {shown(word)} is longer than any pre-token shown here; "
                "tracing the longest word of the text instead.")
    state.set_value(key, word)
    return None


def _flag(what: str) -> Applier:
    def apply(page: str, key: str, values: tuple[str, ...]) -> str | None:
        flag = parse_flag(values[-1])
        if flag is None:
            return (f"The link's {what} setting {shown(values[-1])} is not 1 or 0; "
                    "keeping the current setting.")
        state.set_value(key, flag)
        return None

    return apply


def _apply_query(page: str, key: str, values: tuple[str, ...]) -> str | None:
    q = values[-1]
    if len(q) > _MAX_WORD_CHARS:
        return f"The link's search {shown(q)} is too long (at most {_MAX_WORD_CHARS}); ignored."
    state.set_value(key, q)
    return None


#: Tokenize's tabs as links name them (``tab=why``).
TAB_NAMES: dict[str, str] = dict(zip(("pre", "why", "export"), keys.TOK_TABS, strict=True))


def _apply_tab(page: str, key: str, values: tuple[str, ...]) -> str | None:
    if values[-1] not in TAB_NAMES:
        return (f"The link's tab {shown(values[-1])} is not one of {', '.join(TAB_NAMES)}; "
                "showing the pre-tokens.")
    state.set_value(key, TAB_NAMES[values[-1]])
    return None


def _tab_name(label: Any) -> str:
    return next((name for name, tab in TAB_NAMES.items() if tab == label), "pre")


def _apply_order(page: str, key: str, values: tuple[str, ...]) -> str | None:
    from ui.cache import VOCAB_ORDERS

    if values[-1] not in VOCAB_ORDERS:
        return (f"The link's order {shown(values[-1])} is not one of "
                f"{', '.join(VOCAB_ORDERS)}; keeping the current order.")
    state.set_value(key, values[-1])
    return None


def _apply_token(page: str, key: str, values: tuple[str, ...]) -> str | None:
    raw = values[-1].strip()
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 12):
        return (f"The link's token {shown(values[-1])} is not a token ID (a whole number "
                "0 or more); showing the current token instead.")
    state.set_value(key, int(raw))
    return None


def _apply_step(page: str, key: str, values: tuple[str, ...]) -> str | None:
    raw = values[-1].strip()
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 9):
        return (f"The link's step {shown(values[-1])} is not a number of merges (a whole "
                "number 0 or more); showing the current step instead.")
    state.set_value(key, int(raw))  # the page checks it against the tokenizer's merges
    return None


# ---------------------------------------------------------------------------------------------
# Session -> URL


def current_label() -> str:
    """The tokenizer the single-tokenizer pages show (what their picker will choose)."""
    return state.active_label() or state.available_tokenizers()[0]


#: What a fresh session shows when a parameter is absent (the address bar leaves these out).
DEFAULT_TOKENIZER = "GPT-2 (gpt2)"
DEFAULT_COMPARE = ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)", "Word-level baseline",
                   "Char-level baseline"]


def _tok_value(key: str) -> str | list[str]:
    return list(state.value(key) or []) if key == keys.CMP_TOKENIZERS else current_label()


def _tok_default(key: str) -> str | list[str]:
    return DEFAULT_COMPARE if key == keys.CMP_TOKENIZERS else DEFAULT_TOKENIZER


def _format_tok(value: str | list[str]) -> tuple[str | list[str] | None, list[str]]:
    labels = value if isinstance(value, list) else [value]
    names = [link_name(label) for label in labels]
    notes = [_unsaved_note(label) for label, name in zip(labels, names) if name is None]
    found = [n for n in names if n is not None]
    return (found if isinstance(value, list) else (found[0] if found else None)), notes


def _format_text(value: str) -> tuple[str | None, list[str]]:
    url_value, problem = text_for_link(value)
    return url_value, [problem[0].upper() + problem[1:] + "."] if problem else []


def _plain(convert: Callable[[Any], str]) -> Callable[[Any], tuple[str, list[str]]]:
    return lambda value: (convert(value), [])


@dataclass(frozen=True)
class UrlParam:
    """One URL parameter, everything about it in one row of :data:`PARAMS`.

    ``keys`` maps each page that uses the parameter to the session value it fills; ``apply``
    checks a link's values into that session value (a note when it cannot); ``value`` and
    ``default`` give the session's current value and what a fresh session shows; ``format``
    turns the value into the URL's (plus notes on what a link cannot carry). A value equal
    to its default is left out of the address bar, and also out of the copied link unless
    ``in_full_link``.
    """

    name: str
    keys: dict[str, str]
    apply: Applier
    value: Callable[[str], Any]
    default: Callable[[str], Any]
    format: Callable[[Any], tuple[str | list[str] | None, list[str]]] = _plain(str)
    in_full_link: bool = True


#: Every URL parameter, in the order they are read (``tok`` first: later checks, such as the
#: word or the token ID, are made against its tokenizer) and written.
PARAMS: tuple[UrlParam, ...] = (
    UrlParam("tok", {"Tokenize": keys.ACTIVE, "Decode": keys.ACTIVE, "Vocabulary": keys.ACTIVE,
                     "Compare": keys.CMP_TOKENIZERS, "Replay": keys.ACTIVE},
             _apply_tok, _tok_value, _tok_default, _format_tok),
    UrlParam("text", {"Tokenize": keys.TOK_TEXT, "Compare": keys.CMP_TEXT,
                      "Replay": keys.REP_TEXT}, _apply_text,
             lambda key: state.SAMPLE_TEXT if state.value(key) is None else state.value(key),
             lambda key: state.SAMPLE_TEXT, _format_text),
    UrlParam("ids", {"Decode": keys.DEC_IDS}, _apply_ids, state.value,
             lambda key: state.value(keys.DEC_IDS_DEFAULT), _format_text),
    UrlParam("word", {"Tokenize": keys.TOK_WORD}, _apply_word, lambda key: state.value(key) or None,
             lambda key: state.value(keys.TOK_WORD_DEFAULT)),
    UrlParam("show_ids", {"Tokenize": keys.TOK_SHOW_IDS}, _flag("IDs inline"),
             lambda key: state.value(key, True), lambda key: True,
             _plain(lambda v: "1" if v else "0"), in_full_link=False),
    UrlParam("gpt2", {"Tokenize": keys.TOK_GPT2_VIEW}, _flag("file spelling (GPT-2 byte view)"),
             lambda key: state.value(key, False), lambda key: False,
             _plain(lambda v: "1" if v else "0"), in_full_link=False),
    UrlParam("special", {"Tokenize": keys.TOK_ADD_SPECIAL}, _flag("model's special tokens"),
             lambda key: state.value(key, False), lambda key: False,
             _plain(lambda v: "1" if v else "0")),
    UrlParam("q", {"Vocabulary": keys.VOC_SEARCH}, _apply_query,
             lambda key: state.value(key) or "", lambda key: "", in_full_link=False),
    UrlParam("tab", {"Tokenize": keys.TOK_TAB}, _apply_tab,
             lambda key: _tab_name(state.value(key)), lambda key: "pre", in_full_link=False),
    UrlParam("order", {"Vocabulary": keys.VOC_ORDER}, _apply_order,
             lambda key: state.value(key, "ID"), lambda key: "ID", in_full_link=False),
    UrlParam("token", {"Vocabulary": keys.VOC_TOKEN}, _apply_token, state.value,
             lambda key: state.value(keys.VOC_TOKEN_DEFAULT), _plain(lambda v: str(int(v)))),
    UrlParam("k", {"Replay": keys.REP_STEP}, _apply_step, state.value, lambda key: 0,
             _plain(lambda v: str(int(v)))),
)

#: Parameters each page reads and writes (from :data:`PARAMS`).
PAGE_PARAMS: dict[str, tuple[str, ...]] = {
    page: tuple(p.name for p in PARAMS if page in p.keys)
    for page in ("Tokenize", "Decode", "Vocabulary", "Compare", "Replay")
}


def _params_of(page: str) -> list[UrlParam]:
    return [p for p in PARAMS if page in p.keys]


def view_params(page: str, *, explicit: bool = True) -> tuple[dict[str, str | list[str]], list[str]]:
    """The query parameters naming this session's view of ``page``, and notes about what a
    link cannot carry (an unsaved tokenizer, a text that cannot be stored).

    ``explicit=False`` leaves out values a fresh session shows anyway (the sample text, the
    GPT-2 preset, the default word / IDs / token): the address bar of a page opened plainly
    stays plain, and the link still opens the same view in a new session.
    """
    params: dict[str, str | list[str]] = {}
    notes: list[str] = []
    for param in _params_of(page):
        key = param.keys[page]
        value = param.value(key)
        if value is None:
            continue
        if value == param.default(key) and not (explicit and param.in_full_link):
            continue
        url_value, more = param.format(value)
        if url_value is not None:
            params[param.name] = url_value
        notes.extend(more)
    return params, notes


def _unsaved_note(label: str) -> str:
    from ui import runtime

    if not runtime.keeps_work():
        return (f"“{label}” lives only in this browser tab, so the link cannot name it (a "
                "teammate would see the default tokenizer): the static version has no "
                "library. Send its files instead (Train's downloads, Tokenize's Export).")
    return (f"“{label}” lives only in your browser session, so the link cannot name it (a "
            "teammate would see the default tokenizer). Save it to the library to share it.")


#: Addresses written per page that a late run may still carry (each run writes at most one).
_WRITTEN_KEPT = 8


def write_url(page: str, params: dict[str, str | list[str]]) -> None:
    """Make the address bar show ``params`` (only when they differ: no needless updates)."""
    items = [(k, tuple(v) if isinstance(v, list) else (v,)) for k, v in params.items()]
    items = [(k, v) for k, v in items if v]
    current = _url_items(page)
    ws_id = st.session_state.get(keys.WS_ID)
    if _digest(current) != _digest(items) or st.query_params.get(WS_PARAM) != ws_id or any(
            k not in PAGE_PARAMS.get(page, ()) and k != WS_PARAM for k in st.query_params):
        url = {k: list(v) if len(v) > 1 else v[0] for k, v in items}
        if ws_id:
            url[WS_PARAM] = ws_id  # the session's workspace (ui.workspace) stays in the URL
        st.query_params.from_dict(url)
    st.session_state.setdefault(keys.LINKS_SEEN, {})[page] = _digest(items)
    history = st.session_state.setdefault(keys.LINKS_WRITTEN, {})
    kept = tuple(d for d in history.get(page, ()) if d != _digest(items))
    history[page] = (*kept[-(_WRITTEN_KEPT - 1):], _digest(items))


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
    from ui import runtime

    if path and not runtime.keeps_work():
        # the static build: a static host serves one page, so the link names the page in
        # its query (Home opens it: follow_page_param)
        return f"{base}/?{query_string({PAGE_PARAM: path, **params})}"
    url = f"{base}/{path}" if path else f"{base}/"
    return f"{url}?{query}" if query else url


def share(page: str) -> str:
    """Notes about the link this page was opened with, the URL write-back, and the link
    itself, ready to copy in one click. Call it once the page's view is settled (under the
    title, or into a container drawn there); returns the link."""
    for message in st.session_state.get(keys.LINKS_NOTES, {}).pop(page, []):
        st.warning(f"Link problem: {message}", icon="🔗")
    params, notes = view_params(page)
    write_url(page, view_params(page, explicit=False)[0])
    link = page_url(page, params)
    stored = "@" in str(params.get("text", "")) + str(params.get("ids", ""))
    unsaved = [label for label in _linked_labels(page) if link_name(label) is None
               and label in state.session_tokenizers()]
    from ui import widgets

    row = widgets.copy_row(
        "🔗 Link to this view", link, key=f"links-{page}",
        help="Copy it with the button at its right (shown on hover). Opening it in a new "
             "browser shows the same tokenizer, text and selection."
             + (" Long texts are stored on the server (`@<ID>` in the link)." if stored else ""))
    if notes or unsaved:
        with row, st.popover("What it leaves out", icon="ℹ️",
                             help="What a teammate opening this link would not see."):
            for note in notes:
                st.info(note, icon="ℹ️")
            if unsaved:
                widgets.save_to_library(unsaved[0], key=f"links.{page}.save")
    return link


def _linked_labels(page: str) -> list[str]:
    if page == "Compare":
        return list(state.value(keys.CMP_TOKENIZERS) or [])
    return [current_label()] if page in PAGE_PARAMS else []


def share_plain(page: str) -> str:
    """The link, ready to copy in one click, for pages without view state (Home, Train)."""
    from ui import widgets

    for message in st.session_state.get(keys.LINKS_NOTES, {}).pop(page, []):
        st.warning(f"Link problem: {message}", icon="🔗")
    from ui import runtime

    link = page_url(page)
    kept = (f"It carries your work (`ws=`): your tokenizers, the last training and the corpus, "
            f"kept {limits.workspace_max_days()} days after last use." if runtime.keeps_work()
            else runtime.NO_SERVER_NOTE)
    widgets.copy_row("🔗 Link to this page", link, key=f"links-{page}",
                     help="Copy it with the button at its right (shown on hover). " + kept)
    return link


__all__ = [
    "PAGE_PARAM",
    "PAGE_PARAMS",
    "PAGE_PATHS",
    "PUBLIC_URL_ENV",
    "apply_url",
    "current_label",
    "follow_page_param",
    "link_name",
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

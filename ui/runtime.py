"""Where the playground runs: on a Streamlit server, or in a browser tab (the static build).

The static build (``make static``, ``deploy/static.py``) runs these same pages with stlite:
Streamlit on Pyodide, inside the visitor's browser tab. Three things a server has are
missing there, and each page asks this module instead of finding out by crashing:

- **threads and processes.** Pyodide cannot start either, so training runs in the page
  itself, a slice at a time (:mod:`training.inpage`), instead of in worker processes
  (:mod:`training.manager`);
- **a disk that outlives the tab.** Files live in the tab's memory, so there is no library
  of saved tokenizers and no workspace (``ws=``): a link carries the view (preset, text, IDs),
  and a reload starts fresh;
- **sqlite3** (a separate Pyodide package): core's library says so itself.

``TOKPLAY_RUNTIME=browser`` makes a server behave as the static build does (no library, no
workspaces, training in the page): the tests use it to run the browser's code paths in
CPython, with threads, multiprocessing and sqlite3 blocked as in Pyodide; it is also a quick
way to preview the static version with ``make run``.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading

import streamlit as st

#: The environment variable that makes a server behave as the static build.
RUNTIME_ENV = "TOKPLAY_RUNTIME"

#: What pages say where the library or a workspace would be.
NO_SERVER_NOTE = (
    "This is the static version of the playground: it runs in your browser tab, with no "
    "server. Nothing is saved for later (no library, no `ws=` in links): download the files "
    "you want to keep, and a reload starts fresh."
)


def in_browser() -> bool:
    """True in the static build (Pyodide), or when ``TOKPLAY_RUNTIME=browser`` asks a server
    to behave as it."""
    return sys.platform == "emscripten" or os.environ.get(RUNTIME_ENV, "").strip() == "browser"


@functools.cache  # the installed Streamlit's signature: the same for every session
def html_runs_scripts() -> bool:
    """Whether this Streamlit's ``st.html`` runs the scripts it is given (1.5x and later; the
    static build's stlite has an older one): the copy buttons (``ui.copy_line``), the page
    menu (``ui.page_menu``) and live typing (``ui.live_input``) are plain scripts there."""
    return "unsafe_allow_javascript" in inspect.signature(st.html).parameters


def can_start_threads() -> bool:
    """True where Python can start a thread (never under Pyodide: "can't start new thread")."""
    try:
        thread = threading.Thread(target=int, name="tokplay-probe", daemon=True)
        thread.start()
    except RuntimeError:
        return False
    thread.join()
    return True


def training_in_page() -> bool:
    """True when trainings must run in the page's own thread (:mod:`training.inpage`): in the
    browser, or wherever worker processes or a manager thread cannot start."""
    if in_browser():
        return True
    try:
        import _multiprocessing  # noqa: F401 - only asking whether it exists
    except ImportError:
        return True
    return not can_start_threads()


def keeps_work() -> bool:
    """True when the server keeps work for reloads and links (the library, workspaces)."""
    return not in_browser()


__all__ = ["NO_SERVER_NOTE", "RUNTIME_ENV", "can_start_threads", "in_browser", "keeps_work",
           "training_in_page"]

"""The first line of every page: page config, session defaults, the work a URL names
(``ui.workspace``), the link's view, the sidebar.

Pages read like a short script: ``setup("Tokenize")``, then widgets, cached core calls
(:mod:`ui.cache`), and rendering (:mod:`ui.chips`, :mod:`ui.charts`).
"""

from __future__ import annotations

# subtle: import numpy and pandas here, before any session draws. Streamlit imports them
# lazily the first time a session draws a table; plotly (the charts' library then) looked
# them up in sys.modules without importing them, so another session's chart drawn during that
# first import found a half-loaded module and raised (seen by benchmarks/load_test.py). Every
# page imports this module before drawing anything, so every thread waits on Python's import
# lock instead (anything else that peeks into sys.modules is safe too).
import numpy  # noqa: F401
import pandas  # noqa: F401
import streamlit as st

from ui import links, serving, state, widgets, workspace

APP_NAME = "Tokenizer Playground"


def setup(title: str, *, icon: str = "🧩") -> None:
    """Page config, session defaults, the URL's view (before any widget reads the session
    values), and the shared sidebar."""
    st.set_page_config(page_title=f"{title} · {APP_NAME}", page_icon=icon, layout="wide")
    serving.prepare_process()  # once per process: TCP_NODELAY on the server's sockets
    if title == "Home":
        links.follow_page_param()  # ?page=Tokenize&...: the static build's links
    state.init_session()
    for note in workspace.restore():  # a reload or a link: bring the work back first
        links.note(title, note)
    links.apply_url(title)
    widgets.sidebar(title)
    workspace.save()

"""Streamlit helpers shared by the pages (the only place, besides pages, that imports streamlit).

Every page starts with ``ui.setup("<title>")``; pages then read widgets, call the cached helpers
in :mod:`ui.cache` (which call core), and render with :mod:`ui.chips` and plotly.
"""

from __future__ import annotations

# subtle: import numpy here, at server start, before any session runs. Streamlit imports it
# lazily the first time a session draws a table; plotly looks it up in sys.modules without
# importing it, so another session's chart drawn during that first import found a half-loaded
# numpy and raised (seen by benchmarks/load_test.py). Python's import lock makes everyone wait.
import numpy  # noqa: F401
import streamlit as st

from ui import links as links
from ui import state as state
from ui import widgets as widgets

APP_NAME = "Tokenizer Playground"


def setup(title: str, *, icon: str = "🧩") -> None:
    """The first line of every page: page config, session defaults, the shared sidebar."""
    st.set_page_config(page_title=f"{title} · {APP_NAME}", page_icon=icon, layout="wide")
    state.init_session()
    links.apply_url(title)  # a link's view, before any widget reads the session values
    widgets.sidebar()

"""Streamlit helpers shared by the pages (the only place, besides pages, that imports streamlit).

Every page starts with ``ui.setup("<title>")``; pages then read widgets, call the cached helpers
in :mod:`ui.cache` (which call core), and render with :mod:`ui.chips` and plotly.
"""

from __future__ import annotations

# subtle: import numpy and pandas here, before any session draws. Streamlit imports them
# lazily the first time a session draws a table; plotly looks them up in sys.modules without
# importing them, so another session's chart drawn during that first import found a
# half-loaded module and raised (seen by benchmarks/load_test.py). Importing them up front
# makes every thread wait on Python's import lock instead.
import numpy  # noqa: F401
import pandas  # noqa: F401
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

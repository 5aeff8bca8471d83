"""The playground as Streamlit's ASGI app (``st.App``): what ``make run`` and ``make serve``
start (``streamlit run deploy/asgi.py``).

It is ``app.py`` with its ``pages/``, served as ``streamlit run app.py`` serves them, plus one
middleware: :class:`deploy.base_hint.BaseUrlHint`, which tells the browser where the server
is, so that a new visitor's deep link (``/Evaluate``) does not wait 100 ms for a probe of
``/Evaluate/_stcore/health`` first. ``streamlit run app.py`` still works without it.
"""

import sys
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # `streamlit run deploy/asgi.py` puts deploy/ on the path
    sys.path.insert(0, str(REPO))

from deploy.base_hint import BaseUrlHint  # noqa: E402

# Streamlit finds the app by reading this file: a module-level `app = st.App(...)`.
app = st.App(REPO / "app.py", middleware=[Middleware(BaseUrlHint)])

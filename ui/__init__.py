"""The Streamlit side of the playground: what pages share.

Streamlit modules: :mod:`ui.page` (``setup``, the first line of every page), :mod:`ui.state`
(session values), :mod:`ui.links` (views in URLs), :mod:`ui.widgets` (pickers, loader,
sidebar), :mod:`ui.cache` (bounded caches around core).

Streamlit-free modules (importable without streamlit, numpy or pandas; tests check it):
:mod:`ui.keys` (session key names), :mod:`ui.limits` (server limits and form checks),
:mod:`ui.display` (user text as literal Markdown, merge numbers),
:mod:`ui.chips` (HTML of token chips). The training managers live in the top-level
``training`` package (no Streamlit); :mod:`ui.training` holds the server's one manager.
"""

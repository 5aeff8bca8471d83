"""Every block of HTML the pages draw goes through :func:`draw`: ``st.html``, body as is.

``st.html`` dedents and strips a ``str`` body before it sends it (``textwrap.dedent``: two
regexes tried at every character), which costs as much as the rest of the call on a row of
chips (0.115 against 0.057 ms for 4 KB) and four times the rest on a chart's SVG (2.3 against
0.5 ms for 124 KB, every poll of a live chart). A body handed over through ``_repr_html_`` is
sent as it is. Ours need neither step: they begin with a tag and end with one, so dedenting
and stripping them changed nothing.
"""

from __future__ import annotations

from typing import Literal

import streamlit as st

__all__ = ["draw"]


class _AsIs:
    """An HTML body that ``st.html`` takes as it is (its ``_repr_html_``, as for a notebook)."""

    __slots__ = ("body",)

    def __init__(self, body: str) -> None:
        self.body = body

    def _repr_html_(self) -> str:
        return self.body


def draw(body: str, *, unsafe_allow_javascript: bool = False,
         width: int | Literal["stretch", "content"] = "stretch") -> None:
    """``st.html(body, ...)`` without its dedent and strip (see the module docstring)."""
    st.html(_AsIs(body), unsafe_allow_javascript=unsafe_allow_javascript, width=width)

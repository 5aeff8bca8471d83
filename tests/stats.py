"""Reading the rows of figures the pages draw (``ui.stat_row``: one ``st.html`` per row) from
an AppTest run or from an element's HTML, as a reader of the page sees them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, NamedTuple


class Figure(NamedTuple):
    """One figure as shown: its label, value, help text ("" if none) and delta ("" if none)."""

    label: str
    value: str
    help: str = ""
    delta: str = ""


def figures_in(body: str) -> list[Figure]:
    """The figures of one ``st.html`` body ([] when it is not a row of figures)."""
    if not body.startswith('<div class="tp-stats"'):
        return []
    root = ET.fromstring(f"<root>{body}</root>")  # well-formed: every text is escaped
    out = []
    for cell in root.iter("div"):
        if cell.get("class") != "tp-stat":
            continue
        parts = {e.get("class"): e for e in cell.iter()}
        label = parts["tp-stat-label"]
        mark = parts.get("tp-help")
        delta = parts.get("tp-stat-delta")
        out.append(Figure(label.text or "", parts["tp-stat-value"].text or "",
                          "" if mark is None else mark.get("title", ""),
                          "" if delta is None else delta.text or ""))
    return out


def stats(at: Any) -> list[Figure]:
    """Every figure on an AppTest's page, in page order."""
    return [f for element in at.get("html") for f in figures_in(element.proto.body)]

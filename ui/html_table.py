"""Small read-only tables (Compare's numbers, Evaluate's, Decode's pieces) as plain HTML.

Streamlit's ``st.dataframe`` is a data grid drawn on a canvas: a new visitor's browser
fetches and compiles about a megabyte of scripts for it (the grid, Arrow) before the page
counts as drawn, for tables of a few rows (``benchmarks/bench_app.py --parts first``). A
table of at most a few hundred rows needs none of it: this is one ``<table>`` through
``st.html``, every cell escaped (tokens and labels are user text), numbers right-aligned, in
a box that scrolls past ``max_height`` pixels with its header kept in view.

The Vocabulary page lists its tokens this way too, a page of rows at a time: a table can name
the number input a click on a row types the row's ID into (``pick``; the script is
:mod:`ui.row_pick`'s), and its headers can carry help (``help``).

>>> markup = table_html([{"token": "<b>", "count": 1234}])
>>> "<td>&lt;b&gt;</td>" in markup, '<td class="tp-num">1,234</td>' in markup
(True, True)
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ui import html_block

__all__ = ["NAMES", "cell_text", "show", "table_html"]

_CSS = """<style>
.tp-table-box{overflow:auto;border:1px solid #e6e9f0;border-radius:.5rem}
.tp-table{border-collapse:separate;border-spacing:0;width:100%;font-size:.875rem;color:#1f2430}
.tp-table th{position:sticky;top:0;background:#f7f8fb;text-align:left;font-weight:600;
 color:#5a6275;border-bottom:1px solid #dde1ea;padding:.3rem .6rem;white-space:nowrap}
.tp-table td{border-bottom:1px solid #eef0f5;padding:.25rem .6rem;white-space:pre;
 font-variant-numeric:tabular-nums}
.tp-table tr:last-child td{border-bottom:none}
.tp-table .tp-num{text-align:right}
.tp-table th[title]{cursor:help;text-decoration:underline dotted #9aa0b4}
[data-pick-into] tbody tr{cursor:pointer}
[data-pick-into] tbody tr:hover td{background:#f0f2ff}
</style>"""


#: Columns of numbers that name things (an ID, a position): no thousands separators.
NAMES = frozenset({"ID", "#"})


def cell_text(value: Any, *, grouped: bool = True) -> str:
    """What a cell shows: ints with thousands separators (``grouped``), floats as given,
    nothing for None.

    >>> cell_text(50257), cell_text(50257, grouped=False), cell_text(3.25), cell_text(None)
    ('50,257', '50257', '3.25', '')
    """
    if value is None or (isinstance(value, float) and value != value):  # None, NaN
        return ""
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, int) and grouped:
        return f"{value:,}"
    return str(value)


def _numeric(rows: Sequence[Mapping[str, Any]], column: str) -> bool:
    """Whether every value of ``column`` is a number (or empty): then it is right-aligned."""
    values = [r.get(column) for r in rows]
    return any(v is not None for v in values) and all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values)


def table_html(rows: Sequence[Mapping[str, Any]], *, max_height: int = 420,
               help: Mapping[str, str] | None = None,
               pick: tuple[str, str] | None = None) -> str:
    """The HTML of ``rows`` (dicts sharing the first row's keys, which head the columns), every
    header and cell escaped; past ``max_height`` pixels the box scrolls. Columns in
    :data:`NAMES` (IDs) show their numbers without separators. ``help``: a column's hover
    text. ``pick``: (column, the CSS class of a number input): each row carries its value of
    that column, for :mod:`ui.row_pick` to type into the input on a click.

    >>> html = table_html([{"ID": 7}], help={"ID": "the token's ID"}, pick=("ID", "st-key-x"))
    >>> '<div class="tp-table-box" data-pick-into="st-key-x"' in html, '<tr data-pick="7">' in html
    (True, True)
    """
    columns = list(rows[0]) if rows else []
    numeric = {c for c in columns if _numeric(rows, c)}
    tips = help or {}

    def cls(column: str) -> str:
        return ' class="tp-num"' if column in numeric else ""

    def tip(column: str) -> str:
        return f' title="{html.escape(tips[column])}"' if column in tips else ""

    def row_start(row: Mapping[str, Any]) -> str:
        if pick is None:
            return "<tr>"
        return f'<tr data-pick="{html.escape(cell_text(row.get(pick[0]), grouped=False))}">'

    head = "".join(f"<th{cls(c)}{tip(c)}>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        row_start(r)
        + "".join(f"<td{cls(c)}>{html.escape(cell_text(r.get(c), grouped=c not in NAMES))}"
                  "</td>" for c in columns)
        + "</tr>"
        for r in rows
    )
    into = f' data-pick-into="{html.escape(pick[1])}"' if pick is not None else ""
    return (f'<div class="tp-table-box"{into} style="max-height:{int(max_height)}px">'
            f'<table class="tp-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            f"</table></div>{_CSS}")


def show(rows: Sequence[Mapping[str, Any]], *, max_height: int = 420,
         help: Mapping[str, str] | None = None, pick: tuple[str, str] | None = None) -> None:
    """Draw ``rows`` as a table (see :func:`table_html`)."""
    html_block.draw(table_html(rows, max_height=max_height, help=help, pick=pick), width="stretch")

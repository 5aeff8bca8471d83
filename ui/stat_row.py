"""A row of figures, each a label over a big number as ``st.metric`` draws it, as ONE
``st.html`` block.

subtle: why not ``st.metric``. Four metrics in ``st.columns(4)`` are nine elements on every
rerun (a row, four columns, four metrics), and a new visitor's browser fetches the metric's
script and its number formatters (numbro and others, about 50 KB) and renders each one
before the page is drawn. The figures here are strings the server has already formatted, so
one block of HTML draws them, with the same look: the label (its help on a "?" on hover),
the value, and an optional small change under it.

Tests read a row with ``tests.stats.stats``: each figure is a ``div.tp-stat`` holding a
``.tp-stat-label`` and a ``.tp-stat-value``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from ui import html_block
from ui.copy_line import HELP_CSS, help_mark

__all__ = ["Stat", "row_html", "show"]


@dataclass(frozen=True)
class Stat:
    """One figure: its ``label``, its ``value`` as shown (already formatted: ``"1,234"``),
    a ``help`` text on hover, and a ``delta`` shown small under the value (``"+1"``)."""

    label: str
    value: str
    help: str | None = None
    delta: str | None = None


# as wide columns as st.columns(4) gives on a page, wrapping on a narrow screen
_CSS = f"""<style>
.tp-stats{{display:grid;grid-template-columns:repeat(auto-fit,minmax(8.5rem,1fr));gap:1rem}}
.tp-stat{{min-width:0}}
.tp-stat-label{{font-size:.875rem;min-height:1.5rem;display:flex;align-items:center}}
.tp-stat-value{{font-size:2.25rem;line-height:1.3;white-space:nowrap;overflow:hidden;
 text-overflow:ellipsis}}
.tp-stat-delta{{display:inline-block;font-size:.875rem;padding:0 .45rem;border-radius:.5rem;
 background:rgba(49,51,63,.08);color:rgba(49,51,63,.75)}}
{HELP_CSS}
</style>"""


def row_html(stats: Sequence[Stat], *, key: str) -> str:
    """The row of ``stats`` as HTML (every text escaped); ``key`` names it (``data-key``) for
    a page's tests and styles.

    >>> row = row_html([Stat("Tokens", "1,234"), Stat("<b>", "2", help="h", delta="+1")], key="k")
    >>> row.startswith('<div class="tp-stats" data-key="k"><div class="tp-stat">')
    True
    >>> '<div class="tp-stat-value">1,234</div>' in row, "&lt;b&gt;" in row, "<b>" in row
    (True, True, False)
    """
    cells = []
    for s in stats:
        hint = help_mark(s.help) if s.help else ""
        delta = f'<div class="tp-stat-delta">{html.escape(s.delta)}</div>' if s.delta else ""
        cells.append(f'<div class="tp-stat"><div class="tp-stat-label">{html.escape(s.label)}'
                     f'{hint}</div><div class="tp-stat-value">{html.escape(s.value)}</div>'
                     f'{delta}</div>')
    return f'<div class="tp-stats" data-key="{html.escape(key)}">{"".join(cells)}</div>{_CSS}'


def show(stats: Sequence[Stat], *, key: str) -> None:
    """Draw :func:`row_html` as one element."""
    html_block.draw(row_html(stats, key=key), width="stretch")

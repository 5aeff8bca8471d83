"""The pages' plotly charts: layout settings and figures built from plain rows. plotly is
imported by :func:`_plotly` on the first figure only, so this module imports without plotly,
numpy or Streamlit (training workers and tools import it).

>>> integer_axis(257, 258)["dtick"]
1
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ui import display, limits

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["CHART_POINTS", "hover_text", "integer_axis", "merge_length_figure", "thin",
           "training_figures"]

#: plotly gets at most this many points per trace.
CHART_POINTS = 1500
_MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}
_CURSOR = "#e45756"


def integer_axis(low: float, high: float, *, max_ticks: int = 8) -> dict[str, Any]:
    """Plotly axis settings with ticks on whole numbers only, for integer quantities (vocab
    sizes, merge ranks, token lengths, counts): plotly's own ticks fall on fractions such as
    257.2 when the range is small.

    The step is the smallest of 1, 2, 5, 10, 20, 50, ... that gives at most ``max_ticks``
    ticks between ``low`` and ``high``.

    >>> integer_axis(0, 3)
    {'tick0': 0, 'dtick': 1, 'tickformat': ',d'}
    >>> integer_axis(256, 2000)["dtick"], integer_axis(0, 50_000)["dtick"]
    (500, 10000)
    """
    span = max(high - low, 1)
    step, scale = 1, 1
    while span / step > max_ticks:
        for factor in (2, 5, 10):
            step = factor * scale
            if span / step <= max_ticks:
                break
        scale *= 10
    return {"tick0": 0, "dtick": step, "tickformat": ",d"}


def thin(rows: Sequence[Any], limit: int = CHART_POINTS) -> list[Any]:
    """At most ``limit`` rows, evenly spread, always keeping the newest.

    >>> thin(list(range(10)), 4)
    [0, 2, 5, 9]
    """
    if len(rows) <= limit:
        return list(rows)
    step = len(rows) / limit
    return [rows[int(i * step)] for i in range(limit - 1)] + [rows[-1]]


def hover_text(token: bytes) -> str:
    """A token for a plotly hover label, which reads ``<b>``, ``<br>`` and the like as markup:
    :func:`ui.limits.readable_token`, HTML-escaped (plotly shows ``&lt;`` as ``<``).

    >>> hover_text(b"<br>&")
    '&lt;br&gt;&amp;'
    """
    return html.escape(limits.readable_token(token), quote=False)


def training_figures(rows: Sequence[Any], base_vocab_size: int, *,
                     cursor: int | None = None) -> tuple[go.Figure, go.Figure]:
    """The Train page's two charts from its merge rows (``training.snapshot.MergeRow``:
    rank, count, token, pair, vocab size, seconds): the count of each new merge over its
    number (``ui.display.merge_number``), and the vocab size over time. ``cursor``: a step
    ``k`` (merges done, 0 to ``len(rows)``) marked on both, at merge k, as the Replay page
    does.
    """
    go = _plotly()
    shown = thin(rows)
    numbers = [display.merge_number(r[0]) for r in shown]
    counts = go.Figure(go.Scattergl(
        x=numbers, y=[r[1] for r in shown], mode="markers",
        marker={"size": 4, "color": "#4c78a8"},
        text=[hover_text(r[2]) for r in shown],
        hovertemplate="merge %{x:,}<br>count %{y:,}<br>%{text}<extra></extra>",
    ))  # fmt: skip
    counts.update_layout(
        title="Count of each new merge", xaxis_title="merge number",
        yaxis_title="pair count",
        xaxis=integer_axis(numbers[0], numbers[-1]) if shown else {},
        yaxis={"type": "log", "dtick": 1, "tickformat": "~s"}, height=320, margin=_MARGIN,
        showlegend=False,
    )  # fmt: skip
    times = [0.0] + [r[5] for r in shown]
    sizes = [base_vocab_size] + [r[4] for r in shown]
    growth = go.Figure(go.Scatter(x=times, y=sizes, mode="lines", line={"color": "#f58518"}))
    growth.update_layout(
        title="Vocab size over time", xaxis_title="seconds since start", yaxis_title="vocab size",
        yaxis=integer_axis(base_vocab_size, sizes[-1]), height=320, margin=_MARGIN,
        showlegend=False,
    )  # fmt: skip
    if cursor is not None and rows:
        k = max(0, min(cursor, len(rows)))
        row = rows[k - 1] if k else None
        if row is not None:
            counts.add_vline(x=display.merge_number(row[0]), line={"color": _CURSOR, "width": 2})
            counts.add_trace(go.Scatter(
                x=[display.merge_number(row[0])], y=[row[1]], mode="markers", showlegend=False,
                marker={"size": 11, "color": _CURSOR, "symbol": "diamond"},
                hovertemplate=f"step {k:,}<br>count %{{y:,}}<extra></extra>"))  # fmt: skip
        at, size = (row[5], row[4]) if row is not None else (0.0, base_vocab_size)
        growth.add_vline(x=at, line={"color": _CURSOR, "width": 2})
        growth.add_trace(go.Scatter(
            x=[at], y=[size], mode="markers", showlegend=False,
            marker={"size": 11, "color": _CURSOR, "symbol": "diamond"},
            hovertemplate=f"step {k:,}<br>vocab size %{{y:,}}<extra></extra>"))  # fmt: skip
    return counts, growth


def merge_length_figure(lengths: Sequence[int], *, cursor: int | None = None) -> go.Figure:
    """What is known of any merge list without its training: the length in bytes of the
    token each merge makes, over its number (``lengths[r]`` for the merge at rank ``r``,
    merge ``r + 1``); ``cursor``: a step ``k`` (merges done), marked at merge k, the one
    it adds."""
    go = _plotly()
    ranks = thin(range(len(lengths)))
    fig = go.Figure(go.Scattergl(
        x=[display.merge_number(r) for r in ranks], y=[lengths[r] for r in ranks],
        mode="markers", marker={"size": 4, "color": "#4c78a8"},
        hovertemplate="merge %{x:,}<br>%{y} bytes<extra></extra>",
    ))  # fmt: skip
    fig.update_layout(
        title="Length of each new token", xaxis_title="merge number",
        yaxis_title="bytes", xaxis=integer_axis(1, max(len(lengths), 2)),
        yaxis=integer_axis(0, max(lengths, default=1)), height=320, margin=_MARGIN,
        showlegend=False,
    )  # fmt: skip
    if cursor is not None and 0 < cursor <= len(lengths):
        fig.add_vline(x=cursor, line={"color": _CURSOR, "width": 2})
        fig.add_trace(go.Scatter(
            x=[cursor], y=[lengths[cursor - 1]], mode="markers", showlegend=False,
            marker={"size": 11, "color": _CURSOR, "symbol": "diamond"},
            hovertemplate=f"step {cursor:,}<br>%{{y}} bytes<extra></extra>"))  # fmt: skip
    return fig


def _plotly() -> ModuleType:
    """``plotly.graph_objects``, imported on the first figure (see the module's note)."""
    import plotly.graph_objects  # only to draw: workers and tools import this without plotly

    return plotly.graph_objects

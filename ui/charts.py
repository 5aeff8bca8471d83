"""The pages' charts, drawn on the server as SVG: small pure functions from plain rows to one
string of HTML (:func:`show` puts it on the page with ``st.html``).

subtle: why an SVG picture with an HTML layer over it. Streamlit's chart elements fetch a big
frontend script the first time a page draws one (PlotlyChart 4.7 MB, GraphVizChart 0.8 MB):
seconds before a new visitor's first view of every page with a chart. An SVG string costs
nothing to fetch, but ``st.html`` sanitizes with DOMPurify's HTML profile, which strips
``<svg>``, and inline SVG through ``st.markdown(..., unsafe_allow_html=True)`` goes through
rehype-raw: a 0.19 MB script to fetch, and an HTML parser in JavaScript, slow on a chart of
thousands of points. So the picture is an ``<img>`` of the SVG as a ``data:`` URI (the
browser draws it natively, and nothing in it can run), and the hover labels, which an image
cannot have, are a layer of small HTML elements placed over it in percent of the picture:
an ``<i>`` per point, a ``<b>`` per bar, each with its ``title`` and its numbers in
``data-x`` and ``data-y`` (tests read those). Every text goes through :func:`_esc`.

subtle: the layer has at most :data:`HOVER_POINTS` targets per chart, however many points
the picture draws. Each target is an element that the browser sanitizes, builds and lays
out: a layer of 1,500 dots (Replay's merge lengths) cost a new visitor about 0.26 s against
0.03 s for 300 (a page of that chart alone, 2 cores; about 0.17 ms a target), and targets
a few pixels apart cover each other anyway: only the top one could be hovered. A line keeps
at most one target per target width of the plot (:func:`_line_targets`).

Each chart is a ``<div class="tp-chart" data-chart="ID">``: picture, layer, then the legend.
The output is well-formed XML. Nothing here imports Streamlit until :func:`show` (training
workers and tools import this module).

Where the ticks go is :mod:`ui.chart_ticks`.
"""

from __future__ import annotations

import html
import math
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ui import display, limits
from ui.chart_ticks import compact, integer_ticks, log_ticks, nice_ticks, tick_step

__all__ = ["CHART_POINTS", "COLOURS", "CURSOR", "HOVER_POINTS", "PRIMARY", "Axis", "Bars",
           "Cursor", "Series", "bar_chart", "compact", "integer_ticks", "log_ticks", "merge_length_chart",
           "nice_ticks", "show", "thin", "tick_step", "token_length_chart", "training_charts",
           "xy_chart"]

#: A chart draws at most this many points per series.
CHART_POINTS = 1500
#: A chart's hover layer holds at most about this many targets, shared among its series
#: (:func:`_shares`; every series keeps its first and newest point).
HOVER_POINTS = 200
#: A hover target's width in px (``_LAYER_CSS``): a line keeps at most one target per this
#: much of the plot's width (:func:`_line_targets`).
_TARGET_PX = 9
#: The theme's colours (``.streamlit/config.toml``): primary, the step cursor, text.
PRIMARY = "#5b6cf0"
CURSOR = "#e45756"
TEXT = "#1f2430"
_MUTED = "#5c6373"  # tick labels
_GRID = "#e8eaf1"
_AXIS = "#9aa0b4"
#: Series colours in order (no red: red is the cursor).
COLOURS: tuple[str, ...] = (PRIMARY, "#f58518", "#54a24b", "#b279a2", "#4c78a8", "#9d755d",
                            "#eeca3b", "#72b7b2", "#ff9da6", "#79706e")
_FONT = 11  # tick labels (px in the viewBox)
_CHAR = 6.2  # the width of an average character at _FONT: labels are laid out without measuring
_LABEL_CHARS = 24  # a category label longer than this is cut (the bars' hover labels say it whole)


# ---------------------------------------------------------------------------------------------
# Thinning


def thin(rows: Sequence[Any], limit: int = CHART_POINTS) -> list[Any]:
    """At most ``limit`` rows, evenly spread, always keeping the newest.

    >>> thin(list(range(10)), 4)
    [0, 2, 5, 9]
    """
    if len(rows) <= limit:
        return list(rows)
    step = len(rows) / limit
    return [rows[int(i * step)] for i in range(limit - 1)] + [rows[-1]]


def _shares(lengths: Sequence[int], budget: int = HOVER_POINTS) -> list[int]:
    """How many hover targets each series gets: ``budget`` shared as evenly as the series'
    lengths allow (a short series keeps all its points and leaves the rest to the others);
    a series with points gets at least 1.

    >>> _shares([1, 1000, 1000], 301), _shares([5, 5], 300)
    ([1, 150, 150], [5, 5])
    """
    shares = [0] * len(lengths)
    left = budget
    by_length = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for done, i in enumerate(by_length):
        shares[i] = min(lengths[i], max(1, left // (len(by_length) - done)))
        left -= shares[i]
    return shares


# ---------------------------------------------------------------------------------------------
# What a chart is made of


@dataclass(frozen=True)
class Axis:
    """An axis: its title, and how its values are spaced. ``integer``: whole-number ticks
    (:func:`integer_ticks`); ``number``: :func:`nice_ticks`; ``log``: :func:`log_ticks`
    (values above 0 only). ``from_zero``: the axis starts at 0 whatever the values."""

    title: str
    kind: Literal["integer", "number", "log"] = "number"
    from_zero: bool = False


@dataclass(frozen=True)
class Series:
    """A named set of points ``(x, y, hover label)``, drawn as dots, a line or diamonds (the
    hover layer keeps a share of the points: :data:`HOVER_POINTS`). Series with the same
    name share a colour and one entry in the legend; ``colour`` None takes the next of
    :data:`COLOURS`."""

    name: str
    points: Sequence[tuple[float, float, str]]
    mode: Literal["markers", "lines", "diamonds"] = "markers"
    colour: str | None = None


@dataclass(frozen=True)
class Bars:
    """One named group member of a bar chart: a value (or None: no bar) and a hover label
    per category."""

    name: str
    values: Sequence[float | None]
    labels: Sequence[str]
    colour: str | None = None


@dataclass(frozen=True)
class Cursor:
    """A step marked on a chart: a vertical line at ``x`` and a diamond at ``(x, y)``."""

    x: float
    y: float
    label: str


@dataclass(frozen=True)
class _Scale:
    """Where an axis's values go: ``low`` and ``high`` are its ends, ``ticks`` its marks."""

    low: float
    high: float
    ticks: list[float]
    labels: list[str]
    log: bool = False

    def fraction(self, value: float) -> float:
        """How far along the axis ``value`` lies: 0 at ``low``, 1 at ``high``."""
        if self.log:
            value = max(value, self.low)
            return (math.log10(value) - math.log10(self.low)) / (
                math.log10(self.high) - math.log10(self.low))
        return (value - self.low) / (self.high - self.low)


def _scale(axis: Axis, values: Iterable[float]) -> _Scale:
    if axis.kind == "log":
        positive = [v for v in values if v > 0] or [1.0]
        low, high = min(positive) / 1.25, max(positive) * 1.25  # room for the end points
        ticks = log_ticks(low, high)
        return _Scale(low, high, ticks, [compact(t) for t in ticks], log=True)
    numbers = [*values, *([0.0] if axis.from_zero else [])] or [0.0, 1.0]
    low, high = min(numbers), max(numbers)
    if axis.kind == "integer":
        whole = integer_ticks(low, high)
        return _Scale(whole[0], whole[-1], [float(t) for t in whole], [f"{t:,}" for t in whole])
    ticks = nice_ticks(low, high)
    return _Scale(ticks[0], ticks[-1], ticks, [_decimal(t) for t in ticks])


def _decimal(value: float) -> str:
    """A real tick's label: thousands separated, no trailing zeros.

    >>> _decimal(0.0), _decimal(1.5), _decimal(12500.0), _decimal(0.05)
    ('0', '1.5', '12,500', '0.05')
    """
    label = f"{value:,.6f}"
    return label.rstrip("0").rstrip(".") if "." in label else label


# ---------------------------------------------------------------------------------------------
# Drawing


def _esc(text: str) -> str:
    r"""Text for the chart's HTML and SVG: escaped, quotes included, line breaks as
    character references (an attribute keeps them; a hover label is several lines).

    >>> _esc('<b> & "a"\n')
    '&lt;b&gt; &amp; &quot;a&quot;&#10;'
    """
    return html.escape(text, quote=True).replace("\r", "&#13;").replace("\n", "&#10;")


def _num(value: float) -> str:
    """A coordinate in the viewBox (one decimal is finer than a pixel)."""
    return f"{value:.1f}"


def _data(value: float) -> str:
    """A value for a ``data-`` attribute, exact for whole numbers.

    >>> _data(3.0), _data(2.5), _data(1 / 3)
    ('3', '2.5', '0.333333')
    """
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def _colours(names: Iterable[str]) -> dict[str, str]:
    """A colour per distinct name, in order of first appearance."""
    distinct = list(dict.fromkeys(names))
    return {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(distinct)}


def _legend(entries: Mapping[str, tuple[str, str]]) -> str:
    """An HTML legend (it wraps long names, which SVG text cannot): name -> (colour, mode)."""
    if len(entries) < 2:
        return ""
    items = []
    for name, (colour, mode) in entries.items():
        swatch = ("width:.55rem;height:.55rem;transform:rotate(45deg)" if mode == "diamonds"
                  else "width:.9rem;height:.2rem" if mode == "lines"
                  else "width:.7rem;height:.7rem;border-radius:2px")
        items.append(f'<span class="tp-key" data-name="{_esc(name)}"><span style="display:'
                     f'inline-block;{swatch};background:{colour};margin-right:.35rem;'
                     f'vertical-align:middle"></span>{_esc(name)}</span>')
    return ('<div class="tp-legend" style="display:flex;flex-wrap:wrap;gap:.15rem 1rem;'
            f'font-size:.8rem;color:{TEXT};margin:.15rem 0 .6rem">{"".join(items)}</div>')


#: The hover layer's look, sent with each chart (a few hundred bytes): a point's target is a
#: circle a little wider than its dot, a diamond's a little wider than the diamond; what the
#: pointer is over gets a ring (points) or a shade (bars).
_LAYER_CSS = (
    "<style>.tp-plot{position:relative}.tp-plot>img{display:block;width:100%}"
    ".tp-plot i{position:absolute;width:9px;height:9px;margin:-4.5px 0 0 -4.5px;"
    "border-radius:50%}.tp-plot i.tp-d{width:13px;height:13px;margin:-6.5px 0 0 -6.5px}"
    f".tp-plot i:hover{{box-shadow:0 0 0 2px {TEXT}}}"
    ".tp-plot b{position:absolute}.tp-plot b:hover{background:rgba(31,36,48,.2)}</style>")
#: An SVG in an ``<img>`` cannot use the page's web font: common system ones (names without
#: spaces: the picture's attributes are in single quotes, and CSS reads an unquoted "Sans 3" as
#: an error that drops the whole list).
_FONTS = "Helvetica,Arial,sans-serif"


def _picture(width: int, height: int, body: str, title: str) -> str:
    """The SVG drawing as an ``<img>`` (a ``data:`` URI). Attributes take single quotes (text
    holds none raw: :func:`_esc` writes them as references), so the URI needs few escapes.

    >>> img = _picture(10, 5, '<rect width="3"/>', "a")
    >>> img.startswith('<img src="data:image/svg+xml,%3Csvg '), "%3Crect width='3'/%3E" in img
    (True, True)
    """
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'font-family="{_FONTS}" font-size="{_FONT}" fill="{TEXT}">{body}</svg>')
    uri = urllib.parse.quote(svg.replace('"', "'"), safe=" '=/:,.;()-_!*~")
    return f'<img src="data:image/svg+xml,{uri}" alt="{_esc(title)}"/>'


def _at(value: float, size: int) -> str:
    """A place in the hover layer: percent of the picture's width or height.

    >>> _at(190, 760), _at(1, 3)
    ('25%', '33.33%')
    """
    return f"{100 * value / size:.2f}".rstrip("0").rstrip(".") + "%"


def _frame(chart_id: str, title: str, width: int, height: int, body: str, layer: str,
           legend: str = "") -> str:
    # as wide as its column (the picture scales), but at most 1.3 times its drawn size: on a
    # wide screen a chart stays a chart, not a poster
    plot = f'<div class="tp-plot">{_picture(width, height, body, title)}{layer}</div>'
    return (f'<div class="tp-chart" data-chart="{_esc(chart_id)}" '
            f'style="max-width:{round(width * 1.3)}px">{_LAYER_CSS}{plot}{legend}</div>')


@dataclass(frozen=True)
class _Box:
    """The plot area inside the viewBox."""

    left: float
    top: float
    right: float
    bottom: float


def _margins(width: int, height: int, title: str, y: _Scale, *, bottom: float = 40,
             right: float = 16) -> _Box:
    widest = max((len(label) for label in y.labels), default=1)
    left = 22 + widest * _CHAR + 6  # the y title (turned), then the tick labels
    return _Box(left, 30 if title else 10, width - right, height - bottom)


def _axes(box: _Box, title: str, x_title: str, y_title: str, y: _Scale,
          x_ticks: Sequence[tuple[float, str]], *, x_turned: bool = False,
          x_grid: bool = False) -> str:
    """Title, grid, the two axis lines, tick labels and axis titles (none on a turned x axis:
    its names say what they are)."""
    out = []
    if title:
        out.append(f'<text class="tp-title" x="{_num(box.left)}" y="18" font-size="14" '
                   f'font-weight="600">{_esc(title)}</text>')
    for tick, label in zip(y.ticks, y.labels, strict=True):
        at = box.bottom - y.fraction(tick) * (box.bottom - box.top)
        out.append(f'<line x1="{_num(box.left)}" x2="{_num(box.right)}" y1="{_num(at)}" '
                   f'y2="{_num(at)}" stroke="{_GRID}"/>')
        out.append(f'<text class="tp-ytick" data-value="{_data(tick)}" x="{_num(box.left - 6)}" '
                   f'y="{_num(at)}" dy="0.32em" text-anchor="end" fill="{_MUTED}">'
                   f'{_esc(label)}</text>')
    for at, label in x_ticks:
        if x_grid:
            out.append(f'<line x1="{_num(at)}" x2="{_num(at)}" y1="{_num(box.top)}" '
                       f'y2="{_num(box.bottom)}" stroke="{_GRID}"/>')
        if x_turned:  # long category names: turned, ending under their bars
            out.append(f'<text class="tp-xtick" x="{_num(at)}" y="{_num(box.bottom + 12)}" '
                       f'text-anchor="end" fill="{_MUTED}" transform="rotate(-35 {_num(at)} '
                       f'{_num(box.bottom + 12)})">{_esc(label)}</text>')
        else:
            out.append(f'<text class="tp-xtick" x="{_num(at)}" y="{_num(box.bottom + 15)}" '
                       f'text-anchor="middle" fill="{_MUTED}">{_esc(label)}</text>')
    out.append(f'<path d="M{_num(box.left)} {_num(box.top)}V{_num(box.bottom)}H{_num(box.right)}" '
               f'fill="none" stroke="{_AXIS}"/>')
    if x_title and not x_turned:
        out.append(f'<text class="tp-xtitle" x="{_num((box.left + box.right) / 2)}" '
                   f'y="{_num(box.bottom + 34)}" text-anchor="middle" font-size="12">'
                   f'{_esc(x_title)}</text>')
    if y_title:
        middle = (box.top + box.bottom) / 2
        out.append(f'<text class="tp-ytitle" x="12" y="{_num(middle)}" text-anchor="middle" '
                   f'font-size="12" transform="rotate(-90 12 {_num(middle)})">'
                   f'{_esc(y_title)}</text>')
    return "".join(out)


def _diamond(x: float, y: float, size: float) -> str:
    return (f"M{_num(x)} {_num(y - size)}L{_num(x + size)} {_num(y)}L{_num(x)} "
            f"{_num(y + size)}L{_num(x - size)} {_num(y)}Z")


def xy_chart(chart_id: str, series: Sequence[Series], *, x: Axis, y: Axis, title: str = "",
             cursor: Cursor | None = None, width: int = 420, height: int = 300) -> str:
    """A chart of points over two numeric axes (one or more named series, with a legend when
    there are several), and a ``cursor``. Series longer than :data:`CHART_POINTS` are thinned
    (:func:`thin`); the hover labels, to :data:`HOVER_POINTS` for the whole chart, and a
    line's to one per target width (:func:`_line_targets`).

    >>> chart = xy_chart("demo", [Series("a", [(1, 2, "one"), (3, 4, "<b>")])],
    ...                  x=Axis("x", "integer"), y=Axis("y", "integer"))
    >>> chart.startswith('<div class="tp-chart" data-chart="demo"'), 'title="&lt;b&gt;"' in chart
    (True, True)
    """
    shown = [Series(s.name, thin(s.points), s.mode, s.colour) for s in series]
    extra = [cursor] if cursor is not None else []
    sx = _scale(x, [p[0] for s in shown for p in s.points] + [c.x for c in extra])
    sy = _scale(y, [p[1] for s in shown for p in s.points] + [c.y for c in extra])
    right = max(16.0, len(sx.labels[-1]) * _CHAR / 2 + 4) if sx.labels else 16.0
    box = _margins(width, height, title, sy, right=right)

    def at(px: float, py: float) -> tuple[float, float]:
        return (box.left + sx.fraction(px) * (box.right - box.left),
                box.bottom - sy.fraction(py) * (box.bottom - box.top))

    def layer_at(cx: float, cy: float) -> str:
        return f"left:{_at(cx, width)};top:{_at(cy, height)}"

    x_ticks = [(at(t, sy.low)[0], label) for t, label in zip(sx.ticks, sx.labels, strict=True)]
    parts = [_axes(box, title, x.title, y.title, sy, x_ticks, x_grid=True)]
    layer = []
    auto = _colours(s.name for s in shown if s.colour is None)
    legend: dict[str, tuple[str, str]] = {}
    line_cap = _line_targets(box.right - box.left)
    for s, hovered in zip(shown, _shares([len(s.points) for s in shown]), strict=True):
        if s.mode == "lines":
            hovered = min(hovered, line_cap)
        colour = s.colour or auto[s.name]
        legend.setdefault(s.name, (colour, s.mode))
        drawn, targets = _series(s, colour, at, layer_at, hovered)
        parts.append(drawn)
        layer.append(targets)
    if cursor is not None:
        cx, cy = at(cursor.x, cursor.y)
        parts.append(f'<line x1="{_num(cx)}" x2="{_num(cx)}" y1="{_num(box.top)}" '
                     f'y2="{_num(box.bottom)}" stroke="{CURSOR}" stroke-width="2"/>'
                     f'<path d="{_diamond(cx, cy, 6)}" fill="{CURSOR}"/>')
        layer.append(f'<div class="tp-cursor" data-x="{_data(cursor.x)}" '
                     f'data-y="{_data(cursor.y)}"><i class="tp-d" style="{layer_at(cx, cy)}" '
                     f'title="{_esc(cursor.label)}"></i></div>')
    return _frame(chart_id, title, width, height, "".join(parts), "".join(layer),
                  _legend(legend))


def _line_targets(plot_width: float) -> int:
    """How many hover targets a line across a plot ``plot_width`` px wide keeps: one per
    target width (its points spread along x: closer targets cover one another, and each
    costs a new visitor about 0.17 ms all the same).

    >>> _line_targets(690), _line_targets(5)
    (77, 2)
    """
    return max(2, math.ceil(plot_width / _TARGET_PX))


def _series(s: Series, colour: str, at: Any, layer_at: Any, hovered: int) -> tuple[str, str]:
    """One series: what the picture draws (its line, then its dots or diamonds, each kind as
    one path), and ``hovered`` of its points as hover targets (:func:`thin`), in order."""
    points = [(at(px, py), px, py, label) for px, py, label in s.points]
    if s.mode == "lines":
        path = " ".join(f"{_num(cx)},{_num(cy)}" for (cx, cy), *_ in points)
        drawn = (f'<polyline class="tp-series" points="{path}" fill="none" stroke="{colour}" '
                 'stroke-width="2"/>')
    elif s.mode == "diamonds":
        diamonds = "".join(_diamond(cx, cy, 6) for (cx, cy), *_ in points)
        drawn = f'<path class="tp-series" d="{diamonds}" fill="{colour}"/>'
    else:  # a dot is a line of length 0 with round ends: 12 bytes instead of a <circle>
        dots = "".join(f"M{_num(cx)} {_num(cy)}h0" for (cx, cy), *_ in points)
        drawn = (f'<path class="tp-series" d="{dots}" stroke="{colour}" stroke-width="5" '
                 'stroke-linecap="round"/>')
    if not points:
        drawn = ""
    kind = ' class="tp-d"' if s.mode == "diamonds" else ""
    targets = "".join(f'<i{kind} style="{layer_at(cx, cy)}" data-x="{_data(px)}" '
                      f'data-y="{_data(py)}" title="{_esc(label)}"></i>'
                      for (cx, cy), px, py, label in thin(points, hovered))
    return drawn, (f'<div class="tp-series" data-name="{_esc(s.name)}" data-mode="{s.mode}" '
                   f'data-n="{len(points)}" data-colour="{colour}">{targets}</div>')


def bar_chart(chart_id: str, categories: Sequence[str], bars: Sequence[Bars], *, y: Axis,
              x_title: str = "", title: str = "", labelled: Sequence[int] | None = None,
              line_at: float | None = None, width: int = 760, height: int = 340) -> str:
    """Bars per category, grouped side by side when there are several :class:`Bars` (a
    legend names them). ``labelled``: the categories whose name is written under the axis
    (default all; names too wide for their place are turned, and cut when long);
    ``line_at``: a dotted level line (parity 1.0). The value axis starts at 0.

    >>> chart = bar_chart("demo", ["1", "2"], [Bars("n", [3, None], ["three", "none"])],
    ...                   y=Axis("count", "integer"))
    >>> chart.count("<b "), 'data-x="1" data-y="3"' in chart
    (1, True)
    """
    values = [v for b in bars for v in b.values if v is not None]
    sy = _scale(Axis(y.title, y.kind, from_zero=True),
                values + ([line_at] if line_at is not None else []))
    shown = list(range(len(categories))) if labelled is None else list(labelled)
    room = (width - 80) / max(len(shown), 1)  # about the width each written name gets
    turned = max((len(categories[i]) for i in shown), default=0) * _CHAR > room - 4
    names = {i: _cut(categories[i]) if turned else categories[i] for i in shown}
    widest = max((len(n) for n in names.values()), default=0)
    bottom = (widest * _CHAR * 0.58 + 24) if turned else 40  # sin(35°) of the longest name
    box = _margins(width, height, title, sy, bottom=bottom)
    slot = (box.right - box.left) / max(len(categories), 1)
    group = slot * (0.85 if len(bars) == 1 else 0.8)
    each = group / max(len(bars), 1)
    x_ticks = [(box.left + (i + 0.5) * slot, names[i]) for i in shown]
    parts = [_axes(box, title, x_title, y.title, sy, x_ticks, x_turned=turned)]
    colours = _colours(b.name for b in bars if b.colour is None)
    legend: dict[str, tuple[str, str]] = {}

    def height_of(value: float) -> float:
        return sy.fraction(value) * (box.bottom - box.top)

    layer = []
    for j, b in enumerate(bars):
        colour = b.colour or colours[b.name]
        legend.setdefault(b.name, (colour, "bars"))
        rects, targets = [], []
        for i, (value, label) in enumerate(zip(b.values, b.labels, strict=True)):
            if value is None:
                continue
            left, wide = box.left + i * slot + (slot - group) / 2 + j * each, max(each - 1, 1)
            tall = height_of(value)
            rects.append(f'<rect x="{_num(left)}" y="{_num(box.bottom - tall)}" '
                         f'width="{_num(wide)}" height="{_num(tall)}"/>')
            targets.append(f'<b style="left:{_at(left, width)};top:{_at(box.bottom - tall, height)};'
                           f'width:{_at(wide, width)};height:{_at(tall, height)}" '
                           f'data-x="{_esc(categories[i])}" data-y="{_data(value)}" '
                           f'title="{_esc(label)}"></b>')
        parts.append(f'<g fill="{colour}">{"".join(rects)}</g>')
        layer.append(f'<div class="tp-series" data-name="{_esc(b.name)}" data-colour="{colour}">'
                     f'{"".join(targets)}</div>')
    if line_at is not None:
        level = box.bottom - height_of(line_at)
        parts.append(f'<line class="tp-level" data-y="{_data(line_at)}" x1="{_num(box.left)}" '
                     f'x2="{_num(box.right)}" y1="{_num(level)}" y2="{_num(level)}" '
                     f'stroke="{TEXT}" stroke-dasharray="3 3"/>')
    return _frame(chart_id, title, width, height, "".join(parts), "".join(layer),
                  _legend(legend))


def _cut(name: str) -> str:
    """A category name short enough to write under its bars.

    >>> _cut("a" * 30)
    'aaaaaaaaaaaaaaaaaaaaaaa…'
    """
    return name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"


def show(chart: str) -> None:
    """Draw a chart of this module (see the module's note for why ``st.html``)."""
    from ui import html_block  # only to draw: workers and tools import this module without it

    html_block.draw(chart)


# ---------------------------------------------------------------------------------------------
# The pages' charts


def _plural(n: int, word: str) -> str:
    """A count and its noun.

    >>> _plural(1, "byte"), _plural(1234, "token")
    ('1 byte', '1,234 tokens')
    """
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def token_length_chart(counts: Mapping[int, int]) -> str:
    """The Vocabulary page's bars: how many tokens have each length in bytes.

    >>> 'data-x="2" data-y="5"' in token_length_chart({1: 256, 2: 5})
    True
    """
    lengths = range(min(counts, default=0), max(counts, default=0) + 1)
    ticks = [t for t in integer_ticks(lengths[0], lengths[-1]) if t in lengths]
    bars = Bars("tokens", [counts.get(n) for n in lengths],
                [f"{_plural(counts.get(n, 0), 'token')} of {_plural(n, 'byte')}" for n in lengths],
                colour=PRIMARY)
    return bar_chart("voc.lengths", [str(n) for n in lengths], [bars],
                     y=Axis("tokens", "integer"), x_title="token length (bytes)",
                     labelled=[lengths.index(t) for t in ticks], width=420, height=320)


def training_charts(rows: Sequence[Any], base_vocab_size: int, *, cursor: int | None = None,
                    key: str = "train.chart") -> tuple[str, str]:
    """The two charts of a training from its merge rows (``training.snapshot.MergeRow``:
    rank, count, token, pair, vocab size, seconds): the count of each new merge over its
    number (``ui.display.merge_number``), on a log scale, and the vocab size over time.
    ``cursor``: a step ``k`` (merges done, 0 to ``len(rows)``) marked on both, at merge k, as
    the Replay page does. Their IDs: ``key`` + ``.counts`` and ``.growth``.
    """
    shown = thin(rows)
    number = display.merge_number
    counts = [(number(r[0]), r[1], f"merge {number(r[0]):,}\ncount {r[1]:,}\n"
               f"{limits.readable_token(r[2])}") for r in shown]
    growth = [(0.0, base_vocab_size, f"start\nvocab size {base_vocab_size:,}")] + [
        (r[5], r[4], f"{r[5]:.2f} s\nvocab size {r[4]:,}") for r in shown]
    count_mark = size_mark = None
    if cursor is not None and rows:
        k = max(0, min(cursor, len(rows)))
        row = rows[k - 1] if k else None
        if row is not None:
            count_mark = Cursor(number(row[0]), row[1], f"step {k:,}\ncount {row[1]:,}")
        at, size = (row[5], row[4]) if row is not None else (0.0, base_vocab_size)
        size_mark = Cursor(at, size, f"step {k:,}\nvocab size {size:,}")
    return (
        xy_chart(f"{key}.counts", [Series("count", counts, colour=PRIMARY)],
                 x=Axis("merge number", "integer"), y=Axis("pair count", "log"),
                 title="Count of each new merge", cursor=count_mark),
        xy_chart(f"{key}.growth", [Series("vocab size", growth, "lines", colour="#f58518")],
                 x=Axis("seconds since start", from_zero=True), y=Axis("vocab size", "integer"),
                 title="Vocab size over time", cursor=size_mark),
    )


def merge_length_chart(lengths: Sequence[int], *, cursor: int | None = None) -> str:
    """What is known of any merge list without its training: the length in bytes of the
    token each merge makes, over its number (``lengths[r]`` for the merge at rank ``r``,
    merge ``r + 1``); ``cursor``: a step ``k`` (merges done), marked at merge k, the one
    it adds.

    >>> 'data-x="2" data-y="3"' in merge_length_chart([2, 3], cursor=2)
    True
    """
    ranks = thin(range(len(lengths)))
    points = [(display.merge_number(r), lengths[r],
               f"merge {display.merge_number(r):,}\n{_plural(lengths[r], 'byte')}") for r in ranks]
    mark = None
    if cursor is not None and 0 < cursor <= len(lengths):
        mark = Cursor(cursor, lengths[cursor - 1],
                      f"step {cursor:,}\n{_plural(lengths[cursor - 1], 'byte')}")
    return xy_chart("rep.chart.lengths", [Series("length", points, colour=PRIMARY)],
                    x=Axis("merge number", "integer"), y=Axis("bytes", "integer", from_zero=True),
                    title="Length of each new token", cursor=mark, width=760, height=300)

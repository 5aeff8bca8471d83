"""Reading what the pages draw as charts (``ui.charts``) and merge trees (``ui.chips``) in
AppTest runs: both are well-formed XML, so ElementTree reads them (and a chart that is not
well-formed fails the test that reads it). A chart is an ``st.html``: an ``<img>`` of its SVG
(:func:`picture` reads it back) and a layer of hover targets that carry its numbers."""

from __future__ import annotations

import re
import urllib.parse
import xml.etree.ElementTree as ET
from typing import Any

_URI = "data:image/svg+xml,"
_SVG = "{http://www.w3.org/2000/svg}"


def charts(at: Any) -> dict[str, ET.Element]:
    """The charts on the page: ``data-chart`` ID -> the chart's element, in page order."""
    found = {}
    for element in at.get("html"):
        body = element.proto.body
        if body.startswith('<div class="tp-chart"'):
            chart = ET.fromstring(body)
            found[chart.attrib["data-chart"]] = chart
    return found


def chart(at: Any, chart_id: str) -> ET.Element:
    """The one chart named ``chart_id`` (fails when it is missing)."""
    drawn = charts(at)
    assert chart_id in drawn, f"no chart {chart_id!r} among {sorted(drawn)}"
    return drawn[chart_id]


def picture(element: ET.Element) -> ET.Element:
    """The chart's SVG drawing, read back from its ``<img>``'s ``data:`` URI (namespace
    dropped from the tags, so ``iter("text")`` finds its texts)."""
    (img,) = element.iter("img")
    src = img.attrib["src"]
    assert src.startswith(_URI)
    svg = ET.fromstring(urllib.parse.unquote(src[len(_URI):]))
    for e in svg.iter():
        e.tag = e.tag.removeprefix(_SVG)
    return svg


def _series(element: ET.Element, series: str | None = None) -> list[ET.Element]:
    return [d for d in element.iter("div") if d.get("class") == "tp-series"
            and series in (None, d.get("data-name"))]


def points(element: ET.Element, series: str | None = None) -> list[tuple[float, float, str]]:
    """``(x, y, hover label)`` of every point of a chart (or of one named series)."""
    return [(float(i.attrib["data-x"]), float(i.attrib["data-y"]), i.get("title", ""))
            for group in _series(element, series) for i in group.iter("i")]


def plot_width(element: ET.Element) -> float:
    """The width of the chart's plot area in the picture's units: its axes' path, ``M left
    top V bottom H right``."""
    (d,) = [m for e in picture(element).iter("path")
            if (m := re.fullmatch(r"M([\d.]+) [\d.]+V[\d.]+H([\d.]+)", e.get("d", "")))]
    return float(d[2]) - float(d[1])


def drawn(element: ET.Element) -> list[int]:
    """How many points the picture draws for each series, in order (the hover layer may hold
    fewer: ``ui.charts.HOVER_POINTS``): a line's vertices, dots or diamonds."""
    counts = []
    for shape in picture(element).iter():
        if shape.get("class") != "tp-series":
            continue
        if shape.tag == "polyline":
            counts.append(len(shape.attrib["points"].split()))
        else:
            d = shape.attrib["d"]
            counts.append(d.count("h0") if shape.get("stroke-linecap") == "round" else d.count("Z"))
    return counts


def bars(element: ET.Element) -> list[tuple[str, str, float, str]]:
    """``(series name, category, value, hover label)`` of every bar of a bar chart."""
    return [(group.attrib["data-name"], b.attrib["data-x"], float(b.attrib["data-y"]),
             b.get("title", "")) for group in _series(element) for b in group.iter("b")]


def cursor(element: ET.Element) -> tuple[float, float, str] | None:
    """Where the step cursor is: ``(x, y, hover label)``, or None."""
    for group in element.iter("div"):
        if group.get("class") == "tp-cursor":
            mark = group.find("i")
            return (float(group.attrib["data-x"]), float(group.attrib["data-y"]),
                    "" if mark is None else mark.get("title", ""))
    return None


def ticks(element: ET.Element, axis: str) -> list[str]:
    """The tick labels of axis ``"x"`` or ``"y"``, as written in the picture."""
    return [t.text or "" for t in picture(element).iter("text")
            if t.get("class") == f"tp-{axis}tick"]


def merge_trees(at: Any) -> list[list[tuple[str, str]]]:
    """Every merge tree drawn (``st.html``): its boxes in order, parents before children,
    each ``(token as shown, "ID n · merge #m")``."""
    trees = []
    for element in at.get("html"):
        body = element.proto.body
        if 'class="tp-mtree"' in body:
            root = ET.fromstring(f"<root>{body}</root>")
            trees.append([(box.findtext("code") or "", box.findtext("span") or "")
                          for box in root.iter("div") if "tp-mt-box" in box.get("class", "")])
    return trees

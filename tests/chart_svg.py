"""Reading what the pages draw as SVG charts (``ui.charts``) and merge trees (``ui.chips``)
in AppTest runs: both are well-formed XML, so ElementTree reads them (and a chart that is
not well-formed fails the test that reads it)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any


def charts(at: Any) -> dict[str, ET.Element]:
    """The charts on the page: ``data-chart`` ID -> the chart's element, in page order."""
    found = {}
    for element in at.markdown:
        body = element.proto.body
        if body.startswith('<div class="tp-chart"'):
            assert element.proto.allow_html  # drawn as HTML, not shown as Markdown text
            chart = ET.fromstring(body)
            found[chart.attrib["data-chart"]] = chart
    return found


def chart(at: Any, chart_id: str) -> ET.Element:
    """The one chart named ``chart_id`` (fails when it is missing)."""
    drawn = charts(at)
    assert chart_id in drawn, f"no chart {chart_id!r} among {sorted(drawn)}"
    return drawn[chart_id]


def points(element: ET.Element, series: str | None = None) -> list[tuple[float, float, str]]:
    """``(x, y, hover label)`` of every point of a chart (or of one named series)."""
    out = []
    for group in element.iter("g"):
        if group.get("class") != "tp-series" or series not in (None, group.get("data-name")):
            continue
        for shape in group:
            if shape.get("class") == "tp-point":
                out.append((float(shape.attrib["data-x"]), float(shape.attrib["data-y"]),
                            shape.findtext("title") or ""))
    return out


def bars(element: ET.Element) -> list[tuple[str, str, float, str]]:
    """``(series name, category, value, hover label)`` of every bar of a bar chart."""
    out = []
    for group in element.iter("g"):
        if group.get("class") == "tp-series":
            out += [(group.attrib["data-name"], rect.attrib["data-x"], float(rect.attrib["data-y"]),
                     rect.findtext("title") or "") for rect in group.iter("rect")]
    return out


def cursor(element: ET.Element) -> tuple[float, float, str] | None:
    """Where the step cursor is: ``(x, y, hover label)``, or None."""
    for group in element.iter("g"):
        if group.get("class") == "tp-cursor":
            return (float(group.attrib["data-x"]), float(group.attrib["data-y"]),
                    group.findtext("path/title") or "")
    return None


def ticks(element: ET.Element, axis: str) -> list[str]:
    """The tick labels of axis ``"x"`` or ``"y"``, as written."""
    return [t.text or "" for t in element.iter("text") if t.get("class") == f"tp-{axis}tick"]


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

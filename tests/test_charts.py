"""ui.charts: the pages' SVG charts. Ticks on whole numbers, hover labels that show any token
literally, thinning of long trainings, the step cursor, and no markup but the chart's own,
in the HTML and in the picture."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.chart_svg import bars, cursor, drawn, picture, plot_width, points, ticks
from ui import charts
from ui.limits import readable_token

#: Tokens that are markup, entities, Streamlit Markdown or control bytes somewhere.
HOSTILE = [b"<>", b"&amp;", b"<script>alert(1)</script>", b"\"' onload=alert(2) x=\"",
           b":material/home: :smile: $x$", b"\n\r\t", b"\xff\xfe", b"]]> <!-- -->", b"**"]
#: The chart's HTML (picture, hover layer, legend) and its SVG picture.
HTML_TAGS = {"div", "span", "img", "i", "b", "style"}
SVG_TAGS = {"svg", "g", "rect", "path", "line", "polyline", "text"}


def rows_of(tokens: list[bytes]) -> list[tuple]:
    """Merge rows as the Train page keeps them: rank, count, token, pair, vocab size, seconds."""
    return [(i, 1000 - i, t, (t[:1], t[1:]), 257 + i, 0.01 * (i + 1))
            for i, t in enumerate(tokens)]



def parse(chart: str) -> ET.Element:
    """The chart's element, after checking that it holds only a chart's markup."""
    element = ET.fromstring(chart)  # well-formed: nothing in a label opened an element
    assert {e.tag for e in element.iter()} <= HTML_TAGS
    assert [s.text for s in element.iter("style")] == [charts._LAYER_CSS[7:-8]]
    svg = picture(element)
    assert {e.tag for e in svg.iter()} <= SVG_TAGS
    for e in (*element.iter(), *svg.iter()):
        assert not [a for a in e.attrib if a.startswith("on")], (e.tag, e.attrib)
    return element


# ---- ticks -----------------------------------------------------------------------------------


def test_integer_ticks_are_whole_numbers_1_2_5_steps_apart() -> None:
    assert charts.integer_ticks(0, 3) == [0, 1, 2, 3]
    assert charts.integer_ticks(257, 258) == [257, 258]
    assert charts.integer_ticks(5, 5) == [5, 6]  # one value: still an axis
    assert charts.integer_ticks(1, 143) == list(range(0, 161, 20))
    assert charts.integer_ticks(256, 2000) == [0, 500, 1000, 1500, 2000]
    assert charts.integer_ticks(1, 50_000) == list(range(0, 50_001, 10_000))
    assert [charts.tick_step(s) for s in (1, 8, 9, 16, 17, 40, 41, 80, 81)] == [
        1, 1, 2, 2, 5, 5, 10, 10, 20]


def test_real_and_log_ticks() -> None:
    assert charts.nice_ticks(0, 4.31) == [0, 1, 2, 3, 4, 5]
    assert charts.nice_ticks(0, 0.35) == [0, 0.1, 0.2, 0.3, 0.4]
    assert charts.nice_ticks(2, 2) == [2, 2.5]  # one value: still an axis
    assert charts.log_ticks(3, 40) == [5, 10, 20]
    assert charts.log_ticks(1, 10) == [1, 2, 5, 10]
    assert charts.log_ticks(200, 120_000) == [1000, 10_000, 100_000]
    assert charts.log_ticks(1, 1e9) == [1, 100, 10_000, 1e6, 1e8]  # every other power
    assert [charts.compact(v) for v in (1, 10, 1000, 25_000, 2e6)] == ["1", "10", "1k", "25k", "2M"]


def test_training_charts_write_whole_number_ticks() -> None:
    counts, growth = (parse(c) for c in charts.training_charts(rows_of([b"a"] * 143), 257))
    assert ticks(counts, "x") == [str(t) for t in range(0, 161, 20)]  # merge numbers
    assert ticks(counts, "y") == ["1k"]  # counts 858 to 1,000, on a log axis
    assert ticks(growth, "y") == [str(t) for t in range(240, 401, 20)]  # vocab sizes 257-400
    assert ticks(growth, "x") == ["0", "0.5", "1", "1.5"]  # seconds
    lengths = parse(charts.token_length_chart({1: 256, 2: 7, 3: 3}))
    assert ticks(lengths, "x") == ["1", "2", "3"] and ticks(lengths, "y")[-1] == "300"


# ---- labels: every token literally ------------------------------------------------------------


def test_hover_labels_show_hostile_tokens_literally() -> None:
    counts, _ = charts.training_charts(rows_of(HOSTILE), 257)
    shown = points(parse(counts))
    assert [label for _, _, label in shown] == [
        f"merge {i + 1}\ncount {1000 - i:,}\n{readable_token(t)}" for i, t in enumerate(HOSTILE)]
    assert shown[0][2].endswith("\n<>") and shown[1][2].endswith("\n&amp;")
    assert 'title="merge 1&#10;count 1,000&#10;&lt;&gt;"' in counts


def test_names_and_categories_show_literally() -> None:
    name = "<b>x</b> & :smile: $1$"
    chart = charts.bar_chart("t", [name, "plain"], [charts.Bars(name, [1.5, None], ["a", "b"]),
                                                    charts.Bars("two", [2, 3], ["c", "d"])],
                             y=charts.Axis("y"), line_at=1.0)
    element = parse(chart)
    assert ticks(element, "x") == [name, "plain"]
    assert [b[:3] for b in bars(element)] == [(name, name, 1.5), ("two", name, 2), ("two", "plain", 3)]
    legend = [key.attrib["data-name"] for key in element.iter("span")
              if key.get("class") == "tp-key"]
    assert legend == [name, "two"]
    (level,) = [e for e in picture(element).iter("line") if e.get("class") == "tp-level"]
    assert level.attrib["data-y"] == "1"


def test_token_length_bars_say_how_many_tokens_of_how_many_bytes() -> None:
    element = parse(charts.token_length_chart({1: 256, 2: 1234, 4: 1}))
    assert bars(element) == [("tokens", "1", 256, "256 tokens of 1 byte"),
                             ("tokens", "2", 1234, "1,234 tokens of 2 bytes"),
                             ("tokens", "4", 1, "1 token of 4 bytes")]  # no bar at 3 bytes


# ---- thinning and the cursor ------------------------------------------------------------------


def test_a_long_training_is_thinned_keeping_the_first_and_newest_merges() -> None:
    rows = rows_of([b"ab"] * 5000)
    counts, growth = (parse(c) for c in charts.training_charts(rows, 257))
    assert drawn(counts) == drawn(growth) == [charts.CHART_POINTS]
    xs = [x for x, _, _ in points(counts)]  # the hover layer: fewer, the ends kept
    assert len(xs) == charts.HOVER_POINTS and xs[0] == 1 and xs[-1] == 5000
    assert xs == sorted(set(xs))
    sizes = [y for _, y, _ in points(growth)]  # from the start (0 s) to the newest merge
    # a line: one target per target width of its plot (narrower than the dots' share)
    assert len(sizes) == charts._line_targets(plot_width(growth)) < charts.HOVER_POINTS
    assert sizes[0] == 257 and sizes[-1] == 257 + 4999
    lengths = parse(charts.merge_length_chart([2] * 5000))
    assert drawn(lengths) == [charts.CHART_POINTS]
    assert len(points(lengths)) == charts.HOVER_POINTS


def test_the_hover_layer_is_shared_among_series_and_short_ones_keep_every_point() -> None:
    long = [(i, i % 7, f"long {i}") for i in range(1, 1001)]
    element = parse(charts.xy_chart("demo", [
        charts.Series("a", long, mode="lines"), charts.Series("b", long),
        charts.Series("whole", [(1000, 3, "whole")], mode="diamonds")],
        x=charts.Axis("x", "integer"), y=charts.Axis("y")))
    assert drawn(element) == [1000, 1000, 1]  # the picture draws every point
    hovered = {name: points(element, name) for name in ("a", "b", "whole")}
    # the budget shared evenly (the diamond keeps its point), then the line capped at one
    # target per target width of the plot
    assert [len(p) for p in hovered.values()] == [charts._line_targets(plot_width(element)),
                                                  charts.HOVER_POINTS // 2, 1]
    assert hovered["a"][0][2] == "long 1" and hovered["a"][-1][2] == "long 1000"
    assert hovered["whole"] == [(1000, 3, "whole")]


def _cursor_line_x(element: ET.Element) -> float:
    """Where the cursor's line is drawn, in percent of the picture's width (its hover mark
    is at the same place)."""
    svg = picture(element)
    width = float(svg.attrib["viewBox"].split()[2])
    (line,) = [e for e in svg.iter("line") if e.get("stroke") == charts.CURSOR]
    assert line.attrib["x1"] == line.attrib["x2"]
    (group,) = [g for g in element.iter("div") if g.get("class") == "tp-cursor"]
    mark = group.find("i")
    assert mark is not None
    x = 100 * float(line.attrib["x1"]) / width
    assert _left(mark) == pytest.approx(x, abs=0.01)
    return x


def _left(mark: ET.Element) -> float:
    return float(mark.attrib["style"].split("left:")[1].split("%")[0])


def _point_x(element: ET.Element, x: float) -> float:
    """Where the hover target of the point at ``x`` is, in percent of the picture's width."""
    (dot,) = [i for i in element.iter("i") if i.get("data-x") == str(x)]
    return _left(dot)


@pytest.mark.parametrize("k", [1, 37, 100])
def test_the_cursor_marks_merge_k_at_its_point(k: int) -> None:
    rows = rows_of([b"t"] * 100)
    counts, growth = (parse(c) for c in charts.training_charts(rows, 257, cursor=k))
    assert cursor(counts) == (k, 1001 - k, f"step {k}\ncount {1001 - k:,}")
    assert _cursor_line_x(counts) == pytest.approx(_point_x(counts, k), abs=0.01)
    assert cursor(growth) == (pytest.approx(0.01 * k), 256 + k, f"step {k}\nvocab size {256 + k}")
    lengths = parse(charts.merge_length_chart(list(range(1, 101)), cursor=k))
    assert cursor(lengths) == (k, k, f"step {k}\n{k} byte" + ("s" if k > 1 else ""))
    assert _cursor_line_x(lengths) == pytest.approx(_point_x(lengths, k), abs=0.01)


def test_step_0_marks_the_start_and_no_merge() -> None:
    counts, growth = (parse(c) for c in charts.training_charts(rows_of([b"t"] * 5), 257, cursor=0))
    assert cursor(counts) is None and cursor(growth) == (0, 257, "step 0\nvocab size 257")
    assert cursor(parse(charts.merge_length_chart([2, 3], cursor=0))) is None
    assert cursor(parse(charts.training_charts(rows_of([b"t"] * 5), 257)[0])) is None


def test_charts_carry_their_ids_and_a_legend_only_for_several_series() -> None:
    counts, growth = charts.training_charts(rows_of([b"t"]), 257, key="rep.chart")
    assert parse(counts).attrib["data-chart"] == "rep.chart.counts"
    assert parse(growth).attrib["data-chart"] == "rep.chart.growth"
    assert 'class="tp-legend"' not in counts
    two = charts.xy_chart("c", [charts.Series("a", [(1, 1, "")], "lines"),
                                charts.Series("b", [(2, 2, "")]),
                                charts.Series("a", [(3, 3, "")], "diamonds")],
                          x=charts.Axis("x", "log"), y=charts.Axis("y"))
    element = parse(two)
    colours = {g.attrib["data-name"]: g.attrib["data-colour"] for g in element.iter("div")
               if g.get("class") == "tp-series" and g.get("data-mode") != "diamonds"}
    (diamond,) = [g for g in element.iter("div") if g.get("data-mode") == "diamonds"]
    assert colours == {"a": charts.COLOURS[0], "b": charts.COLOURS[1]}
    assert diamond.attrib["data-colour"] == colours["a"]  # one name, one colour, one legend key
    assert two.count('class="tp-key"') == 2
    assert parse(charts.xy_chart("e", [], x=charts.Axis("x"), y=charts.Axis("y")))  # no data

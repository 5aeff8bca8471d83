"""ui.display: user text as Markdown that renders literally, and merges numbered from 1.

CommonMark's own rules are checked with markdown-it-py (a CommonMark parser); what Streamlit
adds on top (emoji, ``:color[...]``, ``$math$``, ``:material/...:``, GitHub's autolinks) was
checked in chromium and is kept by tests/browser/test_literal_tokens.py.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from core.train import train_bpe
from ui import charts, display, site
from ui.display import code_span, escaped, merge_number, merge_table
from ui.limits import readable_token
from tests.chart_svg import chart, points
from tests.stats import stats

#: The syntax issue 27 lists: each must show as itself.
SYNTAX = ["**", "~~", "##", "__", ">", "*", "`", "$x$", ":smile:", "<b>", "&amp;", "[a](b)",
          "\\", ":red[x]", "~~~~", "> q", "- item", "1. item", "---", "|a|b|"]


def _inline(markdown: str) -> str:
    """``markdown`` rendered by a CommonMark parser, as inline HTML."""
    import markdown_it  # the dev extra installs it: a CommonMark oracle, never skipped
    return markdown_it.MarkdownIt("commonmark").renderInline(markdown)


def _html(text: str) -> str:
    """``text`` as markdown-it writes literal text in HTML."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


# ---- code_span --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "markdown"), [
    ("##", "`##`"),
    ("a`b", "``a`b``"),  # a run of one backtick inside: a fence of two
    ("a``b`c", "```a``b`c```"),  # the longest run decides
    ("`", "`` ` ``"),  # starts and ends with a backtick: padded
    ("`x", "`` `x ``"),  # starts with one
    ("x`", "`` x` ``"),  # ends with one
    ("``x``", "``` ``x`` ```"),
    (" a ", "`  a  `"),  # a space at both ends: padded, or the renderer would strip them
    (" a", "` a`"),
    ("   ", "`   `"),  # only spaces: kept as they are
    ("", ""),
    ("a\nb\r\nc", "`a↵b↵c`"),  # line breaks as the playground shows them
])
def test_code_span_edge_cases(text: str, markdown: str) -> None:
    assert code_span(text) == markdown


@pytest.mark.parametrize("text", [*SYNTAX, "a`b", "`", "``x", "x`", "x``y``z", " `a` ", " a "])
def test_code_span_renders_exactly_the_text(text: str) -> None:
    assert _inline(code_span(text)) == f"<code>{_html(text)}</code>"


def test_code_span_cuts_streamlits_icon_prefix_at_its_colon() -> None:
    """Streamlit rewrites ``:material/`` in the raw Markdown, code spans included."""
    markdown = code_span("a:material/home:")
    assert ":material/" not in markdown
    assert _inline(markdown) == "<code>a</code>:<code>material/home:</code>"


@given(st.text(st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",))))
def test_any_text_is_one_code_span_of_itself(text: str) -> None:
    if ":material/" in text or not text:
        return
    assert _inline(code_span(text)) == f"<code>{_html(text)}</code>"


# ---- escaped --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [*SYNTAX, "GPT-2 (gpt2)", "vocab.pkl + merges.pkl", "a_b_c"])
def test_escaped_renders_exactly_the_text(text: str) -> None:
    assert _inline(escaped(text)) == _html(text)


@pytest.mark.parametrize("text", ["see https://x.org", "www.x.org", "me@x.org", "a :streamlit:"])
def test_escaped_puts_what_no_escape_stops_in_a_code_span(text: str) -> None:
    assert escaped(text) == code_span(text)


@given(st.text(st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",))))
def test_any_text_escaped_renders_as_itself(text: str) -> None:
    assert _inline(escaped(text)) in (_html(text), f"<code>{_html(text)}</code>")


# ---- merge numbers and the Train table ------------------------------------------------------


def test_merges_are_numbered_from_one() -> None:
    assert [merge_number(rank) for rank in range(3)] == [1, 2, 3]


def test_merge_table_cells_are_code_spans() -> None:
    rows = [(0, 9, b"##", (b"#", b"#"), 257, 0.1), (1, 5, b" `>", (b" `", b">"), 258, 0.2)]
    assert merge_table(rows) == [
        {"merge": 1, "token": "`##`", "left": "`#`", "right": "`#`", "count": 9,
         "bytes (hex)": "23 23"},
        {"merge": 2, "token": "``·`>``", "left": "`` ·` ``", "right": "`>`", "count": 5,
         "bytes (hex)": "20 60 3e"},
    ]


def test_chart_hover_text_is_html_escaped() -> None:
    counts, _ = charts.training_charts([(0, 3, b"<b>&", (b"<b>", b"&"), 257, 0.1)], 257)
    assert 'title="merge 1&#10;count 3&#10;&lt;b&gt;&amp;"' in counts
    assert [(x, y, label) for x, y, label in points(ET.fromstring(counts))] == [
        (1, 3, "merge 1\ncount 3\n<b>&")]


# ---- the Train page (AppTest): its table is built by merge_table ------------------------------

ITEMS = ["**", "~~", "##", "__", ">>", "``", "\\\\", "$$", "<>", "::", "&&", "||"]
CORPUS = "".join(f"{item}\n" * (100 - 5 * k) for k, item in enumerate(ITEMS))
TRAIN = str(Path(__file__).resolve().parent.parent / site.page("Train").script)


@pytest.mark.xdist_group("jobs")  # starts a training worker
def test_train_table_shows_markdown_tokens_as_code_spans() -> None:
    _, merges = train_bpe([CORPUS], 400, ["<|endoftext|>"])
    at = AppTest.from_file(TRAIN, default_timeout=60)
    at.run()
    at.radio[0].set_value("Upload text files").run()
    at.file_uploader(key="train.uploads").set_value(
        [("syntax.txt", CORPUS.encode(), "text/plain")]).run()
    at.number_input[0].set_value(400).run()
    at.button(key="train.start").click().run()
    deadline = time.monotonic() + 120
    while not any(m.label == "Merges" for m in stats(at)):  # the results: the training ended
        assert time.monotonic() < deadline, "the training did not end in time"
        assert not at.exception, at.exception
        time.sleep(0.2)
        at.run()
    assert not at.exception, at.exception
    table = at.table[0].value
    assert list(table["merge"]) == list(range(len(merges), 0, -1))  # newest first, from 1
    for column, part in (("token", lambda a, b: a + b), ("left", lambda a, b: a),
                         ("right", lambda a, b: b)):
        expected = [code_span(readable_token(part(a, b))) for a, b in reversed(merges)]
        assert list(table[column]) == expected, column
    assert table["token"].iloc[-1] == "`**`" and table["left"].iloc[-1] == "`*`"
    hovers = [label for _, _, label in points(chart(at, "train.chart.counts"))]
    assert any(label.endswith("\n<>") for label in hovers)  # the token <> in the chart's hover

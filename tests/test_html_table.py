"""ui.html_table: small read-only tables as escaped HTML."""

from __future__ import annotations

from tests.html_tables import parse
from ui.html_table import cell_text, table_html

ROWS = [
    {"tokenizer": "<b>mine</b> & co", "ID": 50256, "tokens": 12345, "bytes / token": 4.125,
     "round trip": "✓", "note": None},
    {"tokenizer": "plain", "ID": 7, "tokens": 3, "bytes / token": 1.0, "round trip": "✗ lossy",
     "note": "' \" </td><script>"},
]


def test_a_table_reads_back_as_its_rows() -> None:
    (rows,) = parse(table_html(ROWS))
    assert rows == [{**r, "note": r["note"] or ""} for r in ROWS]  # (an empty text cell: "")


def test_every_cell_and_header_is_escaped() -> None:
    markup = table_html([{"<i>col</i>": "<script>alert(1)</script>"}])
    assert "<script>alert" not in markup and "<i>" not in markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup and "&lt;i&gt;col&lt;/i&gt;" in markup


def test_numbers_are_right_aligned_and_ids_have_no_separators() -> None:
    markup = table_html(ROWS)
    assert '<th class="tp-num">tokens</th>' in markup and "<th>tokenizer</th>" in markup
    assert '<td class="tp-num">12,345</td>' in markup  # a count: grouped
    assert '<td class="tp-num">50256</td>' in markup  # an ID: as written elsewhere
    assert "<th>note</th>" in markup  # text and empty cells: not a number column


def test_cell_text() -> None:
    assert [cell_text(v) for v in (1234567, 0.5, None, float("nan"), False, "x")] == [
        "1,234,567", "0.5", "", "", "✗", "x"]


def test_an_empty_table_has_no_columns_and_the_box_height_is_an_int() -> None:
    assert parse(table_html([])) == [[]]
    assert 'style="max-height:200px"' in table_html(ROWS, max_height="200")  # type: ignore[arg-type]

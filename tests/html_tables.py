"""What an AppTest page shows in its HTML tables (``ui.html_table``): rows of dicts.

Cells of right-aligned (number) columns come back as ``int`` or ``float`` (thousands
separators removed), an empty one as ``None``; other cells as the text a reader sees.
"""

from __future__ import annotations

import html
import re
from typing import Any

_TABLE = re.compile(r'<table class="tp-table">(.*?)</table>', re.S)
_HEAD = re.compile(r"<th( class=\"tp-num\")?(?: title=\"[^\"]*\")?>(.*?)</th>", re.S)
_ROW = re.compile(r"<tr(?: data-pick=\"[^\"]*\")?>(.*?)</tr>", re.S)
_CELL = re.compile(r"<td( class=\"tp-num\")?>(.*?)</td>", re.S)


def _value(text: str, numeric: bool) -> Any:
    if not numeric:
        return text
    if not text:
        return None
    plain = text.replace(",", "")
    return float(plain) if any(c in plain for c in ".eE") or plain in ("inf", "-inf") else int(plain)


def parse(markup: str) -> list[list[dict[str, Any]]]:
    """Every ``ui.html_table`` table in ``markup``, as rows of ``{column: value}``."""
    found = []
    for table in _TABLE.finditer(markup):
        head, _, body = table[1].partition("</thead>")
        columns = [(html.unescape(m[2]), bool(m[1])) for m in _HEAD.finditer(head)]
        rows = []
        for row in _ROW.finditer(body):
            cells = [html.unescape(m[2]) for m in _CELL.finditer(row[1])]
            assert len(cells) == len(columns), "a row with a cell too many or too few"
            rows.append({name: _value(cell, numeric)
                         for (name, numeric), cell in zip(columns, cells, strict=True)})
        found.append(rows)
    return found


def tables(where: Any) -> list[list[dict[str, Any]]]:
    """Every HTML table in ``where`` (an ``AppTest`` or one of its blocks), in page order."""
    return [t for element in where.get("html") for t in parse(element.proto.body)]

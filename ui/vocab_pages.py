"""The Vocabulary page's list of tokens, a page of :data:`ui.limits.VOCAB_PAGE_ROWS` rows at
a time: how many pages, which rows, what the caption and the column headers say. The rows
come from :func:`ui.cache.vocab_table` (already searched and ordered); the page draws them
with :mod:`ui.html_table`.

>>> count(0), count(200), count(201), count(50_257)
(1, 1, 2, 252)
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ui import display
from ui.limits import VOCAB_PAGE_ROWS

__all__ = ["caption", "column_help", "count", "rows"]

#: Columns a model without a merge list (WordPiece, SentencePiece BPE) leaves out.
_MERGE_COLUMNS = ("merge", "left", "right")


def count(matching: int) -> int:
    """How many pages ``matching`` tokens fill (at least one, empty or not)."""
    return max(1, math.ceil(matching / VOCAB_PAGE_ROWS))


def caption(matching: int, page: int, *, clickable: bool) -> str:
    """What the list's caption says: how many match, which are shown, how to pick one.

    >>> caption(50_257, 2, clickable=True)
    '50,257 token(s) match; tokens 201–400 are listed (page 2 of 252). Click a row to pick its token.'
    >>> caption(3, 1, clickable=False)
    '3 token(s) match. Type a token ID below to pick it.'
    """
    first = (page - 1) * VOCAB_PAGE_ROWS
    last = min(matching, first + VOCAB_PAGE_ROWS)
    listed = (f"; tokens {first + 1:,}–{last:,} are listed (page {page:,} of {count(matching):,})"
              if matching > VOCAB_PAGE_ROWS else "")
    how = "Click a row to pick its token." if clickable else "Type a token ID below to pick it."
    return f"{matching:,} token(s) match{listed}. {how}"


def rows(table: pd.DataFrame, page: int, *, merges: bool) -> list[dict[str, Any]]:
    """The rows of ``page`` (from 1) as dicts, empty cells as None; without the merge columns
    when the model lists no merges (``merges`` False); a score to 4 decimals.

    >>> t = pd.DataFrame({"ID": [0, 1], "merge": pd.array([None, 1], dtype="Int64")})
    >>> rows(t, 1, merges=True), rows(t, 1, merges=False)
    ([{'ID': 0, 'merge': None}, {'ID': 1, 'merge': 1}], [{'ID': 0}, {'ID': 1}])
    """
    start = (page - 1) * VOCAB_PAGE_ROWS
    shown = table.iloc[start:start + VOCAB_PAGE_ROWS]
    if not merges:
        shown = shown.drop(columns=[c for c in _MERGE_COLUMNS if c in shown.columns])
    out = []
    for record in shown.to_dict("records"):
        row = {k: (None if v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v)
               for k, v in record.items()}
        score = row.get("score")
        if isinstance(score, float):
            row["score"] = round(score, 4)
        out.append(row)
    return out


def column_help(leaf: str) -> dict[str, str]:
    """The column headers' hover texts (``leaf``: what the model builds from, e.g. "byte")."""
    return {
        "len": "length in bytes",
        "merge": f"The merge that made it: {display.MERGE_NUMBERING} (empty: a {leaf} or a "
                 "special token)",
        "left": "first part of the merge",
        "right": "second part of the merge",
        "score": "The piece's score (a log-probability): the best split of a text is the one "
                 "whose scores add up highest",
    }

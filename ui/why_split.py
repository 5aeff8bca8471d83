"""The Tokenize page's "Why this split" for Unigram models: the best path and the next best.

A Unigram model (T5, ALBERT, XLM-R) learns no merges, so there is no merge trace to show.
It cuts a text into the pieces whose scores add up highest; this tab shows that best path,
each piece with its score, and the next best path: its score, how far below it is, and
where it would cut the text otherwise. The HTML comes from :func:`ui.chips.paths_html`.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from core.interface import ScoredTokenizer
from ui import cache, chips, display, html_block, keys, state, widgets

__all__ = ["unigram_paths"]


def unigram_paths(tok_key: str, words: Sequence[str], tok: ScoredTokenizer, *,
                  gpt2_view: bool) -> None:
    """The picker of pre-tokens (the same state as the merge trace's) and the paths of the
    one picked (``tok``: a tokenizer whose ``capabilities.scores`` is set)."""
    word = st.selectbox("Pre-token", list(words), format_func=chips.label_text,
                        **state.bind(keys.TOK_WORD))
    try:
        paths = cache.split_paths(tok_key, word, tok)
    except Exception as err:  # noqa: BLE001 - shown, not raised
        widgets.show_error(err, what="Cannot find the best path of this pre-token")
        return
    shown = display.escaped(chips.label_text(word))
    st.caption(f"A Unigram model learns no merges: every piece has a score (a log-probability) "
               f"and “{shown}” is cut into the pieces whose scores add up highest. Below: that "
               "best path, each piece with its score, then the next best way to cut it and "
               "where it differs (outlined).")
    html_block.draw(chips.paths_html(paths, gpt2_view=gpt2_view))

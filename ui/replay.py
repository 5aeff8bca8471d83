"""The Replay page's view: a tokenizer after its first ``k`` merges, on a sample text.

The page (``pages/6_Replay.py``) reads the widgets and calls :func:`stage`, directly while
paused (so each change reruns the whole page and the link follows it) and as a fragment
rerun every tick while playing. The work is core's (:mod:`core.explain.replay`), through the bounded
caches of :mod:`ui.cache`; everything drawn as HTML is escaped.
"""

from __future__ import annotations

import html
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import streamlit as st

from core.engine.tokenizer import Tokenizer
from core.explain.replay import TextReplay, merge_at
from ui import cache, charts, chips, html_block, keys, limits, stat_row, state, widgets
from ui.stat_row import Stat

__all__ = ["MAX_TEXT_CHARS", "SPEEDS", "STEP_BY", "check_step", "next_step", "previous_step",
           "stage", "text_too_long"]

#: Longest sample text replayed (characters): every step redraws all of its chips.
MAX_TEXT_CHARS = min(5_000, cache.MAX_TEXT_CHARS)
#: How far one press of ▶/◀ or one tick of play moves: label -> merges (0: to the next
#: step that changes the text).
STEP_BY: dict[str, int] = {"merges this text uses": 0, "1 merge": 1, "10 merges": 10,
                           "100 merges": 100, "1,000 merges": 1000}
#: Play speeds: label -> seconds per tick.
SPEEDS: dict[str, float] = {"slow": 1.0, "normal": 0.5, "fast": 0.25}


def text_too_long(n_chars: int) -> str | None:
    """The message for a sample text over :data:`MAX_TEXT_CHARS`, or None.

    >>> text_too_long(10) is None
    True
    """
    if n_chars <= MAX_TEXT_CHARS:
        return None
    return (f"This text has {n_chars:,} characters; Replay shows the first {MAX_TEXT_CHARS:,} "
            "(every step redraws all of them). The 🔤 Tokenize page takes longer texts.")


def next_step(k: int, n: int, changes: Sequence[int], by: int) -> int:
    """The step after ``k`` (of ``0..n``): ``by`` merges on, or with ``by == 0`` the next
    step that changes the text (``n`` when none is left).

    >>> next_step(3, 10, [2, 5, 7], 0), next_step(7, 10, [2, 5, 7], 0), next_step(8, 10, [], 5)
    (5, 10, 10)
    """
    if by > 0:
        return min(k + by, n)
    i = bisect_right(changes, k)
    return changes[i] if i < len(changes) else n


def previous_step(k: int, changes: Sequence[int], by: int) -> int:
    """The step before ``k``: ``by`` merges back, or the previous step that changes the text
    (0 when none is left).

    >>> previous_step(5, [2, 5, 7], 0), previous_step(2, [2, 5, 7], 0), previous_step(3, [], 10)
    (2, 0, 0)
    """
    if by > 0:
        return max(k - by, 0)
    i = bisect_left(changes, k)
    return changes[i - 1] if i > 0 else 0


def check_step(n: int) -> None:
    """Keep the session's step within ``0..n`` (a link or another tokenizer may have left
    it outside), saying what is shown instead."""
    k = state.value(keys.REP_STEP, 0)
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        state.set_value(keys.REP_STEP, 0)
    elif k > n:
        st.warning(f"Step {k:,} is past this tokenizer's last step ({n:,} merges); showing "
                   f"step {n:,}, the whole tokenizer.", icon="🎞️")
        state.set_value(keys.REP_STEP, n)


def _toggle_play(n: int) -> None:
    playing = not state.value(keys.REP_PLAYING, False)
    if playing and state.value(keys.REP_STEP, 0) >= n:
        state.set_value(keys.REP_STEP, 0)  # play from the start again
    state.set_value(keys.REP_PLAYING, playing)


def stage(label: str, key: str, tok: Tokenizer, text: str, *, by: int, playing: bool) -> None:
    """Controls, numbers, chips and charts of step ``k`` (the session's ``rep.step``);
    while ``playing``, first move ``k`` one tick on (and stop at the end)."""
    n = len(tok.merges)
    replay = cache.replay(key, text, tok)
    k = state.value(keys.REP_STEP, 0)
    if playing:
        if k >= n:  # the last tick drew the end: stop the ticks (a full rerun drops run_every)
            state.set_value(keys.REP_PLAYING, False)
            st.rerun()
        k = next_step(k, n, replay.steps, by)
        state.set_value(keys.REP_STEP, k)
    controls = st.columns([2, 1, 1, 11], vertical_alignment="bottom")
    if controls[0].button("⏸ Pause" if playing else "▶ Play", key="rep.play", type="primary",
                          width="stretch",
                          help="Advance the step automatically (speed and stride above)."):
        _toggle_play(n)
        st.rerun()
    if controls[1].button("◀", key="rep.back", help="Back one stride", disabled=k <= 0):
        state.set_value(keys.REP_STEP, previous_step(k, replay.steps, by))
        st.rerun()
    if controls[2].button("▶", key="rep.next", help="On one stride", disabled=k >= n):
        state.set_value(keys.REP_STEP, next_step(k, n, replay.steps, by))
        st.rerun()
    with controls[3]:
        k = st.slider("Merges applied (step k)", 0, n, **state.bind(keys.REP_STEP, 0),
                      help="Step k: the tokenizer made of the bytes, the special tokens and "
                           "its first k merges. Click the handle, then use the arrow keys.")
    _numbers(tok, key, replay, k, n)
    details, made = cache.replay_step(key, text, k, tok)
    if not text:
        st.info("Type a sample text above to watch its tokens merge.")
    else:
        html_block.draw(chips.chips_html(details.tokens, text=text, show_ids=True,
                                 limit=chips.MAX_CHIPS, highlight=made))
        if made:
            st.caption(f"Outlined: the {len(made):,} token(s) that merge {k:,} made in this text.")
        elif k:
            st.caption(f"Merge {k:,} does not occur in this text; its tokens are those of the "
                       "last merge that did.")
        widgets.copy_row(f"🔢 IDs at step {k:,}", ", ".join(str(t.id) for t in details.tokens),
                         key="rep-ids", help="Exactly what the tokenizer built from the bytes, "
                         "the special tokens and the first k merges gives.")
    _charts(label, key, tok, k, n)


def _numbers(tok: Tokenizer, key: str, replay: TextReplay, k: int, n: int) -> None:
    sizes = cache.replay_sizes(key, tok)
    ids = replay.ids(k)
    changed = bisect_right(replay.steps, k)
    stat_row.show([
        Stat(f"Step (of {n:,})", f"{k:,}", help="Merges applied so far."),
        Stat("Vocab size", f"{sizes[k]:,}", delta=f"{sizes[k] - sizes[k - 1]:+,}" if k else None),
        Stat("Tokens in the text", f"{len(ids):,}",
             help="Step 0: one token per byte (and one per special token)."),
        Stat("Merges that changed it", f"{changed:,} of {k:,}",
             help=f"Of the first k merges, those that change this text "
                  f"({len(replay.steps):,} of all {n:,})."),
    ], key="rep-stats")
    added = merge_at(tok, k)
    if added is None:
        line = "Step 0: only the 256 bytes and the special tokens. Move the slider or press ▶ Play."
        body = html.escape(line)
    else:
        (a, b), new_id = added
        body = (f"Merge {k:,} adds <b>{_token(a + b)}</b> (ID {new_id:,}) = {_token(a)} + "
                f"{_token(b)}")
    html_block.draw(f'<div class="tp-replay-merge">{body}</div>')


def _token(token: bytes) -> str:
    return f'<code>{html.escape(limits.readable_token(token))}</code>'


def _charts(label: str, key: str, tok: Tokenizer, k: int, n: int) -> None:
    rows = state.training_rows(label)
    if rows and len(rows) == n:
        base = len(tok.vocab) - n
        counts, growth = charts.training_charts(rows, base, cursor=k, key="rep.chart")
        left, right = st.columns(2)
        with left:
            charts.show(counts)
        with right:
            charts.show(growth)
        st.caption("This session's training of the tokenizer; the red mark is step k.")
        return
    charts.show(cache.merge_length_chart(key, k, tok))
    st.caption("Its training was not recorded in this session (a preset, a loaded file or a "
               "saved tokenizer), so this shows what the merge list itself tells: the length "
               "of the token each merge makes. The red mark is step k. Train a tokenizer on "
               "the 🏋️ Train page to see its pair counts and timing here.")

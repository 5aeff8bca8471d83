"""Train: a byte-level BPE tokenizer on the built-in corpus, uploaded text, a corpus on the
server or a Hugging Face dataset file, watched live.

The training itself runs in a worker process owned by the server-wide ``TrainingManager``
(``training.manager``, ``training.worker``); this page only submits a job, keeps its ID in
``st.session_state`` and polls the manager from a fragment. So training keeps going while the
user visits other pages. The corpus choice is ``ui.train_corpus``, the live view
``ui.train_live``, the result ``ui.train_results``.
"""

from __future__ import annotations

import streamlit as st

from ui import display, html_block, keys, limits, links, state, train_form, workspace
from ui.page import setup
from ui.train_corpus import corpus_section
from ui.train_live import ECHO_STYLE, POLL_SECONDS, control_state, draw_charts, draw_controls, \
    draw_table, live_view
from ui.train_results import draw_results
from ui.training import training_manager
from ui.widgets import show_error

setup("Train")


def settings_section() -> tuple[int, list[str], str, float] | None:
    """Vocab size, special tokens, pattern and speed; None (after a message) when unusable."""
    defaults = train_form.DEFAULTS
    # subtle: no min_value / max_value. With bounds, Streamlit's browser side refuses an
    # out-of-range entry with its own message and keeps sending the last valid value, so
    # Start trained a size the box no longer showed. Unbounded, every entry reaches us, and
    # limits.vocab_size_problem says what the range is (and Start stays off) until it fits.
    vocab_size = int(st.number_input(
        "Vocab size", step=100,
        help=f"256 bytes + special tokens + merges: from 257 (with one special token) to "
             f"{limits.max_vocab_size():,} here (TOKPLAY_MAX_VOCAB).",
        **state.bind(keys.TRAIN_VOCAB_SIZE, defaults[keys.TRAIN_VOCAB_SIZE]),
    ))
    specials_text = st.text_input(
        "Special tokens", help="Separated by commas or new lines. They are never split or merged.",
        **state.bind(keys.TRAIN_SPECIALS, defaults[keys.TRAIN_SPECIALS]),
    )
    # (a radio, not a selectbox: three options, and the page fetches no dropdown code)
    pattern = st.radio(
        "Pre-tokenizer pattern", train_form.PATTERNS, horizontal=True,
        help="The regex that cuts text into pre-tokens before any merge (GPT-2, GPT-4, GPT-4o).",
        **state.bind(keys.TRAIN_PATTERN, defaults[keys.TRAIN_PATTERN]),
    )
    speed = st.radio(
        "Speed", list(train_form.SPEEDS), horizontal=True,
        **state.bind(keys.TRAIN_SPEED, defaults[keys.TRAIN_SPEED]),
        help="Slow motion, to watch each merge appear: the built-in corpus trains in about a "
             "second at full speed. Counting pre-tokens always runs at full speed.",
    )
    specials = limits.parse_special_tokens(specials_text)
    problem = limits.vocab_size_problem(vocab_size, len(specials))
    if problem:
        st.error(display.message(problem), icon="⚠️")
        return None
    return vocab_size, specials, pattern, train_form.SPEEDS.get(speed, 0.0)


# ---------------------------------------------------------------------------------------------
# The page

st.title("🏋️ Train a tokenizer")
st.caption(
    "Byte-level BPE: start from the 256 bytes, repeatedly merge the most frequent adjacent pair. "
    "Watch the merges arrive; training keeps running if you visit another page."
)
link_row = st.container()  # the link, once the corpus choice below has settled (corpus=)
html_block.draw(ECHO_STYLE)

if (announce := st.session_state.pop(keys.TRAIN_TOAST, None)) is not None:
    st.toast(f"“{display.escaped(announce)}” is now your active tokenizer", icon="✅")

manager = training_manager()
job_id: str | None = st.session_state.get(keys.TRAIN_JOB)
snap = None
if job_id is not None:
    try:
        snap = manager.snapshot(job_id)
    except KeyError:
        st.session_state.pop(keys.TRAIN_JOB, None)
        job_id = None
running = snap is not None and not snap.done
kept_result = None  # the last training, reopened from the workspace (a reload, a link)
if snap is None and (record := st.session_state.get(keys.TRAIN_RECORD)):
    own = state.session_tokenizers().get(record.get("label") or "")
    kept_result = workspace.record_snapshot(own["tok"] if own else None)

corpus_col, settings_col = st.columns([3, 2], gap="large")
with corpus_col:
    corpus = corpus_section()
with settings_col:
    settings = settings_section()
with link_row:
    links.share_plain("Train")

if st.button("Start training", type="primary", icon="🚀", key="train.start",
             disabled=running or corpus is None or settings is None,
             help="One training per session at a time." if running else None) and (
    corpus is not None and settings is not None
):
    source, name = corpus
    vocab_size, specials, pattern, pace = settings
    try:
        new_id = manager.submit(source, vocab_size=vocab_size, special_tokens=specials,
                                pattern=pattern, corpus_name=name, pace=pace)
    except Exception as err:  # noqa: BLE001 - shown, never a traceback
        show_error(err, what="Could not start the training")
    else:
        if job_id is not None:
            manager.forget(job_id)  # the previous finished job: free its memory now
        st.session_state[keys.TRAIN_JOB] = new_id
        st.rerun()

if job_id is not None:
    st.divider()
    st.subheader("Training")
    if snap is not None:
        draw_controls(snap, manager)
    fragment = st.fragment(live_view, run_every=POLL_SECONDS if running else None)
    fragment(job_id, control_state(snap))
    if snap is not None and snap.done:
        draw_results(snap)
elif kept_result is not None:
    st.divider()
    st.subheader("Last training")
    st.caption("Reopened from your workspace (the link's `ws=`): charts, result and downloads.")
    if kept_result.rows:
        draw_charts(kept_result)
        draw_table(kept_result)
    draw_results(kept_result)

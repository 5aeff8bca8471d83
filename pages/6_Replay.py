"""Replay: watch a tokenizer's vocabulary grow, merge by merge, on a sample text."""

import streamlit as st

from core.explain.replay import replay_problem
from ui.page import setup
from ui import display, keys, links, live_input, replay, state, widgets

setup("Replay")

st.title("🎞️ Replay")
st.caption("A BPE tokenizer learns one merge at a time. Step k is the tokenizer made of the "
           "256 bytes, the special tokens and its first k merges: slide or play through the "
           "steps and watch the sample text's tokens merge. Replay is for merge-based models; "
           "a Unigram model (T5, ALBERT, XLM-R) has piece scores instead, shown on 📖 "
           "Vocabulary and in 🔤 Tokenize's “Why this split”.")
link_slot = st.container()  # the link, drawn once the step is checked against the tokenizer

top = st.columns([2, 1, 1], vertical_alignment="bottom")
with top[0]:
    label = widgets.tokenizer_picker("rep.tokenizer")
with top[1]:
    stride = st.selectbox("Stride", list(replay.STEP_BY),
                          **state.bind(keys.REP_STRIDE, "merges this text uses"),
                          help="How far ▶ Play, ◀ and ▶ move: to the next merge that changes "
                               "this text, or a fixed number of merges.")
with top[2]:
    speed = st.segmented_control("Speed", list(replay.SPEEDS), required=True,
                                 **state.bind(keys.REP_SPEED, "normal"))

text = live_input.text_area("Sample text", keys.REP_TEXT, state.SAMPLE_TEXT, height=110,
                            help=f"Up to {replay.MAX_TEXT_CHARS:,} characters. Updates as you "
                                 "type.")
if too_long := replay.text_too_long(len(text)):
    st.warning(too_long)
    text = text[: replay.MAX_TEXT_CHARS]

loaded = widgets.load_tokenizer(label)
if loaded is None:
    with link_slot:
        links.share("Replay")
    st.stop()
label, tok = loaded
if problem := replay_problem(tok):
    with link_slot:
        links.share("Replay")
    st.info(display.message(problem), icon="🎞️")  # (a kind may quote the file: '</w>')
    if tok.capabilities.scores:
        st.caption("This is a Unigram model: it learned no merges, only a score per piece, and "
                   "cuts a text into the pieces whose scores add up highest. Replay is for "
                   "merge-based models; see the scores on 📖 Vocabulary and the best path "
                   "against the next best in 🔤 Tokenize's “Why this split”.")
    st.stop()
replay.check_step(len(tok.merges))
with link_slot:
    links.share("Replay")

playing = bool(state.value(keys.REP_PLAYING, False))
view = st.fragment(replay.stage, run_every=replay.SPEEDS.get(speed, 0.5)) if playing \
    else replay.stage
view(label, state.tokenizer_key(label), tok, text, by=replay.STEP_BY.get(stride, 0),
     playing=playing)

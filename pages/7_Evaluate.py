"""Evaluate: how well tokenizers compress texts, by language and by vocab size."""

import streamlit as st

from ui.page import setup
from ui import evaluate, keys, links, live_input, state, widgets

setup("Evaluate")

st.title("📏 Evaluate")
st.caption("Bytes, characters and words per token for each tokenizer on each text (CS336's "
           "compression ratio), the same text in 16 languages, compression as the vocabulary "
           "grows merge by merge, and which tokens a text uses. Long texts run in the "
           "background.")
link_slot = st.container()

if state.value(keys.EVA_TOKENIZERS) is None:
    state.set_value(keys.EVA_TOKENIZERS, [x for x in [state.active_label(), *evaluate.DEFAULT_TOKENIZERS]
                                          if x in state.available_tokenizers()][:2])
labels = widgets.tokenizer_multi_picker(keys.EVA_TOKENIZERS, default=evaluate.DEFAULT_TOKENIZERS,
                                        max_selections=evaluate.MAX_TOKENIZERS)
if state.value(keys.EVA_SOURCES) is None:
    state.set_value(keys.EVA_SOURCES, evaluate.DEFAULT_SOURCES)
sources = evaluate.texts_picker()
if "typed" in sources:
    live_input.text_area("Your text", keys.EVA_TEXT, state.SAMPLE_TEXT, height=100)
with link_slot:
    links.share("Evaluate")

tokenizers = {}
for label in labels:
    loaded = widgets.load_tokenizer(label, fallback=False)
    if loaded is not None:
        tokenizers[label] = loaded[1]

snaps = evaluate.results(tokenizers, sources)
st.subheader("Compression per text")
done = evaluate.table(snaps)
st.subheader("Compression against vocab size")
evaluate.curve_view(tokenizers, done)
st.subheader("By language (parallel set)")
evaluate.parity_view(tokenizers)
st.subheader("Which tokens the text uses")
evaluate.tokens_view(tokenizers, sources, done)

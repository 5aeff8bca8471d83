"""Tokenizer Playground: the Home page (what the playground shows, and a one-click start).

Run with ``streamlit run app.py``; the other pages live in ``pages/`` (Streamlit's automatic
navigation, so every page has its own URL).
"""

import streamlit as st

from ui.page import setup
from ui import cache, chips, html_block, links, site, state, widgets

setup("Home")

TRAIN = site.page("Train").script
TOKENIZE = site.page("Tokenize").script
DEMO = "Tokenizers don't see words: they see merged bytes. 🧩"


st.title("🧩 Tokenizer Playground")
links.share_plain("Home")
st.markdown(
    "A hands-on look at **byte-level BPE**, the tokenizer family behind GPT-2 and GPT-4:\n"
    "- **🏋️ Train** one on your own text and watch merges appear, most frequent pair first.\n"
    "- **🔤 Tokenize** text into colour-coded tokens, with bytes, pre-tokens and the merges "
    "that made each word.\n"
    "- **🔢 Decode** IDs back to text, and see where broken UTF-8 turns into �.\n"
    "- **📖 Vocabulary** lists every token with its merge tree; **⚖️ Compare** puts your "
    "tokenizer next to GPT-2, GPT-4 and word- or character-level baselines."
)

with st.container(border=True):
    st.markdown("**Start in one click**")
    st.caption(f"Trains a {cache.QUICK_VOCAB:,}-token tokenizer on the built-in corpus "
               "(docstrings of Python's standard library, no download), then opens Tokenize.")
    if st.button("⚡ Train on the built-in corpus and tokenize", type="primary"):
        try:
            widgets.use_builtin_tokenizer()
        except Exception as err:  # noqa: BLE001 - shown, not raised
            widgets.show_error(err, what="Quick start")
        else:
            st.switch_page(TOKENIZE)

c1, c2 = st.columns(2)
with c1:
    st.page_link(TRAIN, label="Train with your own corpus and settings", icon="🏋️")
with c2:
    st.page_link(TOKENIZE, label="Or tokenize with GPT-2 / GPT-4 right away", icon="🔤")

with st.container(border=True):
    st.markdown("**What it looks like**: one sentence through GPT-2 "
                "(hover a chip for its ID and bytes)")
    try:
        demo_tok = state.get_tokenizer("GPT-2 (gpt2)")
        details = cache.encode_details(state.tokenizer_key("GPT-2 (gpt2)"), DEMO, demo_tok)
    except Exception:  # noqa: BLE001 - the demo is optional (e.g. tiktoken files missing)
        st.caption("The GPT-2 preset is not available here; pick a tokenizer on 🔤 Tokenize.")
    else:
        html_block.draw(chips.chips_html(details.tokens, text=DEMO, show_ids=True))
        st.caption(f"{details.n_chars} characters, {details.n_bytes} bytes → "
                   f"{details.n_tokens} tokens. The emoji is 4 bytes that GPT-2 splits into "
                   "pieces that are not characters on their own (framed).")

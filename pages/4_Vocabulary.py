"""Vocabulary: every token with its bytes, merge rank and parts (or its score, for Unigram
models); a token's merge tree. Its captions follow the tokenizer's kind (ui.kinds)."""

import streamlit as st

from ui.page import setup
from ui import cache, charts, display, html_table, keys, kinds, limits, links, merge_tree
from ui import html_block, row_pick, stat_row, state, vocab_pages, widgets
from ui.stat_row import Stat

setup("Vocabulary")

st.title("📖 Vocabulary")
caption = st.empty()  # what the vocabulary holds: it depends on the tokenizer picked below
links.share("Vocabulary")

label = widgets.tokenizer_picker("voc.tokenizer")
loaded = widgets.load_tokenizer(label)
if loaded is None:
    st.stop()
label, tok = loaded
if not tok.capabilities.details:
    caption.caption("Every token a tokenizer knows, with its bytes and how it was made.")
    st.info("This page shows the vocabularies of BPE, Unigram and WordPiece models (bytes, "
            "merges or scores). Pick your trained tokenizer, a preset or a loaded model; the "
            "baselines are compared on the ⚖️ Compare page.")
    st.stop()
key = state.tokenizer_key(label)
kind = kinds.kind_of(tok.capabilities)
caption.caption(kind.vocabulary)
scored = tok.capabilities.scores  # Unigram: pieces have scores, not merges
merged = tok.capabilities.merges  # BPE: a token has a merge tree
if scored:
    st.info("A Unigram model (T5, ALBERT, XLM-R…) learns no merges: each piece has a score, a "
            "log-probability, and a text is cut into the pieces whose scores add up highest. "
            "The score column shows them; “Why this split” on 🔤 Tokenize shows the sums.")

n_merges = len(tok.merges)  # once: a pipeline tokenizer spells its merge list out per read
stat_row.show([
    Stat("Tokens", f"{len(tok.vocab):,}"),
    # Unigram, WordPiece, or BPE whose merges follow the pieces' scores (SentencePiece): its kind
    Stat("Merges", f"{n_merges:,}") if n_merges else Stat("Model", tok.kind),
    Stat("Special tokens", f"{len(tok.special_tokens or []):,}"),
    Stat("Longest token", f"{max(cache.length_counts(key, tok), default=0)} bytes"),
], key="voc-stats")

c_search, c_order, c_page = st.columns([3, 1, 1])
with c_search:
    query = st.text_input("Search", placeholder="a piece of text, e.g. ing, or an ID",
                          **state.bind(keys.VOC_SEARCH, ""))
with c_order:
    orders = cache.vocab_orders(tok, n_merges=n_merges)
    if state.value(keys.VOC_ORDER, "ID") not in orders:  # (an order of another tokenizer)
        state.set_value(keys.VOC_ORDER, "ID")
    order = st.selectbox("Order", orders, **state.bind(keys.VOC_ORDER, "ID"))
try:
    table = cache.vocab_table(key, query, tok, order=order)
except Exception as err:  # noqa: BLE001
    widgets.show_error(err, what="Cannot list the vocabulary")
    st.stop()
with c_page:
    pages = vocab_pages.count(len(table))
    listing = (key, query, order)  # another list starts at its first page
    if state.value(keys.VOC_PAGE_OF) != listing or not 1 <= state.value(keys.VOC_PAGE, 1) <= pages:
        state.set_value(keys.VOC_PAGE, 1)
        state.set_value(keys.VOC_PAGE_OF, listing)
    page = st.number_input("Page", min_value=1, max_value=pages, step=1,
                           help=f"{limits.VOCAB_PAGE_ROWS:,} tokens a page, in the order chosen",
                           **state.bind(keys.VOC_PAGE, 1))
st.caption(vocab_pages.caption(len(table), int(page), clickable=row_pick.clickable()))
html_table.show(vocab_pages.rows(table, int(page), merges=bool(n_merges)), max_height=390,
                help=vocab_pages.column_help(kind.leaf),
                pick=("ID", row_pick.into(keys.VOC_TOKEN)))
row_pick.enable()

left, right = st.columns(2, gap="large")
with left:
    st.subheader("Merge tree" if merged else "Piece")
    ids = sorted(tok.vocab)
    state.set_value(keys.VOC_TOKEN_DEFAULT, ids[-1] if ids else None)  # a link may leave it out
    wanted = state.value(keys.VOC_TOKEN)
    if ids and wanted is not None and not ids[0] <= wanted <= ids[-1]:
        st.warning(f"Token ID {wanted:,} is outside this vocabulary ({ids[0]} … {ids[-1]:,}); "
                   f"showing the last token, {ids[-1]:,}, instead.")
        state.set_value(keys.VOC_TOKEN, ids[-1])
    token_id = st.number_input("Token ID", min_value=min(ids, default=0),
                               max_value=max(ids, default=0), step=1,
                               **state.bind(keys.VOC_TOKEN, ids[-1] if ids else 0))
    if token_id in tok.vocab:
        token = tok.vocab[token_id]
        spelled = (f"{display.spelling_name(tok.capabilities.byte_level)} "
                   f"{display.code_span(tok.id_to_piece(token_id))}")
        st.markdown(f"**{len(token)} byte(s)** · hex `{token.hex(' ')}` · {spelled}")
        if scored:
            score = tok.score(int(token_id))
            st.markdown("score " + (f"**{score:.4f}**" if score is not None else "none (an "
                                    "added token: matched before the model runs)"))
        elif merged:
            try:
                tree = cache.merge_tree(key, int(token_id), tok)
                html_block.draw(merge_tree.merge_tree_html(tree, leaf=kind.leaf))
            except Exception as err:  # noqa: BLE001
                widgets.show_error(err, what="Cannot draw the merge tree")
    else:
        st.warning(f"ID {token_id} is not in this vocabulary.")

with right:
    st.subheader("Token lengths")
    charts.show(charts.token_length_chart(cache.length_counts(key, tok)))

with st.expander("⬇️ Export this tokenizer"):
    widgets.export_buttons(tok, key="voc.export")

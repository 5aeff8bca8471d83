"""Vocabulary: every token with its bytes, merge rank and parts (or its score, for Unigram
models); a token's merge tree. Its captions follow the tokenizer's kind (ui.kinds)."""

import streamlit as st

from ui.page import setup
from ui import cache, charts, display, keys, kinds, limits, links, merge_tree, stat_row, state
from ui import widgets
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
    Stat("Longest token", f"{max(map(len, tok.vocab.values()), default=0)} bytes"),
], key="voc-stats")

c_search, c_order = st.columns([3, 1])
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
shown = table.head(limits.VOCAB_TABLE_ROWS)
listed = (f"; the first {len(shown):,} are listed (search, or change the order, for the others)"
          if len(shown) < len(table) else "")
st.caption(f"{len(table):,} token(s) match{listed}. Click a column header to sort, a row to select it.")
# the merge columns; hidden (None) when the model lists no merges: WordPiece, SentencePiece BPE
merge_columns = {
    "merge": st.column_config.NumberColumn(
        format="%d", help=f"The merge that made it: {display.MERGE_NUMBERING} (empty: a "
                          f"{kind.leaf} or a special token)"),
    "left": st.column_config.TextColumn(help="first part of the merge"),
    "right": st.column_config.TextColumn(help="second part of the merge"),
} if n_merges else dict.fromkeys(("merge", "left", "right"))
picked = st.dataframe(
    shown, hide_index=True, width="stretch", height=390, key="voc.table",
    on_select="rerun", selection_mode="single-cell",  # a click anywhere in a row selects it
    placeholder="",  # a byte or special token has no merge or parts: a blank cell
    column_config={
        "ID": st.column_config.NumberColumn(format="%d"),
        "len": st.column_config.NumberColumn(help="length in bytes"),
        **merge_columns,
        "score": st.column_config.NumberColumn(
            format="%.4f", help="The piece's score (a log-probability): the best split of a "
                                "text is the one whose scores add up highest"),
    },
)
rows = [row for row, _ in picked.selection.cells] if picked is not None else []
selected = int(shown.iloc[rows[0]]["ID"]) if rows and rows[0] < len(shown) else None
if selected is not None and selected != state.value(keys.VOC_PICKED):
    # a new click (not the selection still standing from an earlier run, which would undo a
    # token typed below or opened from a link)
    state.set_value(keys.VOC_PICKED, selected)
    if selected != state.value(keys.VOC_TOKEN):
        state.set_value(keys.VOC_TOKEN, selected)
        st.rerun()  # so the link (drawn above) names the clicked token

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
                st.html(merge_tree.merge_tree_html(tree, leaf=kind.leaf))
            except Exception as err:  # noqa: BLE001
                widgets.show_error(err, what="Cannot draw the merge tree")
    else:
        st.warning(f"ID {token_id} is not in this vocabulary.")

with right:
    st.subheader("Token lengths")
    charts.show(charts.token_length_chart(cache.length_counts(key, tok)))

with st.expander("⬇️ Export this tokenizer"):
    widgets.export_buttons(tok, key="voc.export")

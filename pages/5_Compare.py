"""Compare: the same text through two to four tokenizers, side by side."""

import streamlit as st

from core.explain.compare import boundaries, differing_regions, tokenization_stats

from ui.page import setup
from ui import (cache, chips, display, html_block, html_table, keys, limits, links, live_input, model_picker,
                state, widgets)

setup("Compare")

st.title("⚖️ Compare")
st.caption("The same text through two to four tokenizers: how many tokens each needs, how many "
           "bytes each token carries, and where they cut the text differently.")

defaults = list(dict.fromkeys(
    [state.current_label(), "GPT-4 (cl100k_base)", "Word-level baseline",
     "Char-level baseline"]))[:4]
if state.value(keys.CMP_TOKENIZERS) is None:
    state.set_value(keys.CMP_TOKENIZERS, [x for x in defaults if x in state.available_tokenizers()])
model_picker.compare_adder(keys.CMP_TOKENIZERS)  # any Hugging Face model by its ID
labels = widgets.tokenizer_multi_picker(keys.CMP_TOKENIZERS, default=defaults)


@st.fragment
def text_and_results(labels: list[str]) -> None:
    """The text box and everything computed from it: typing (ui.live_input) reruns only
    this fragment. The link is drawn here too, so it follows the text."""
    with st.container():
        links.share("Compare")
    text = live_input.text_area("Text", keys.CMP_TEXT, state.SAMPLE_TEXT, height=120)
    if too_long := limits.text_too_long(len(text), limit=cache.MAX_TEXT_CHARS, what="compares"):
        st.warning(too_long)
        text = text[: cache.MAX_TEXT_CHARS]
    if len(labels) < 2:
        st.info("Pick at least two tokenizers to compare.")
        return

    results = {}  # label -> (tokenizer, details or None, coverage)
    for label in labels:
        loaded = widgets.load_tokenizer(label, fallback=False)
        if loaded is None:
            continue
        tok = loaded[1]
        key = state.tokenizer_key(label)
        try:
            details = cache.encode_details(key, text, tok) if tok.capabilities.details else None
            cov = cache.coverage(key, text, tok)
        except Exception as err:  # noqa: BLE001
            widgets.show_error(err, what=f"“{display.escaped(label)}” cannot encode this text")
            continue
        results[label] = (tok, details, cov)

    rows = []
    for label, (tok, details, cov) in results.items():
        stats = tokenization_stats(text, cov.n_tokens, n_unknown=cov.n_unknown)
        rows.append({
            "tokenizer": label,
            "kind": tok.kind,
            "vocab size": tok.n_vocab,
            "tokens": stats.n_tokens,
            "chars / token": round(stats.chars_per_token, 2),
            "bytes / token": round(stats.bytes_per_token, 2),
            "unknown tokens": stats.n_unknown,
            "unknown rate": f"{stats.unknown_rate:.1%}",
            "round trip": "✓" if cov.round_trip else "✗ lossy",
        })
    html_table.show(rows)
    byte_level_bpe = any(tok.capabilities.byte_level for tok, _, _ in results.values())
    if any(r["unknown tokens"] for r in rows) and byte_level_bpe:
        st.caption("Why byte-level BPE won: the baselines turn anything they did not see in "
                   "training into <|unk|> and cannot give the text back; byte-level BPE starts "
                   "from all 256 bytes, so every text round-trips.")

    cols = st.columns(len(results) or 1)
    for col, (label, (tok, details, cov)) in zip(cols, results.items()):
        with col:
            st.markdown(f"**{display.escaped(label)}** · {cov.n_tokens:,} tokens")
            if details is not None:
                html_block.draw(chips.chips_html(details.tokens, text=text, show_ids=False,
                                         limit=chips.MAX_CHIPS))
            else:
                key = state.tokenizer_key(label)
                html_block.draw(chips.word_chips_html(cache.baseline_pieces(key, text, tok),
                                              cache.encode(key, text, tok), unk_id=tok.unk_id,
                                              show_ids=False))

    byte_level = {label: d for label, (_, d, _) in results.items() if d is not None}
    st.subheader("Where the boundaries differ")
    if len(byte_level) < 2:
        st.info("Boundaries are compared between byte-level BPE tokenizers: pick at least two "
                "(the baselines drop whitespace, so their pieces do not line up with the text).")
    else:
        cuts = {label: boundaries((t.start, t.end) for t in d.tokens)
                for label, d in byte_level.items()}
        regions = differing_regions(text, cuts, limit=300)
        if not regions:
            st.success("These tokenizers cut this text at exactly the same places.")
        else:
            st.caption(f"{len(regions)}{'+' if len(regions) == 300 else ''} place(s) where they cut "
                       "differently (between places where all of them cut):")
            html_block.draw(chips.regions_html(regions, list(byte_level)))


text_and_results(labels)

"""Tokenize: text in, colour-coded token chips out (with counts, pre-tokens and merge traces)."""

import streamlit as st

from ui import cache, chips, display, keys, kinds, limits, links, live_input, state, widgets
from ui import chat, html_block, model_picker, stat_row, why_split
from ui.page import setup
from ui.stat_row import Stat

setup("Tokenize")

IDS_HELP = ("Copy them with the button at their right (shown on hover), and paste them on the "
            "🔢 Decode page to go back to text.")

st.title("🔤 Tokenize")
st.caption("Type text and see how a tokenizer cuts it. Hover a chip for its ID and bytes.")
top = st.columns([2, 1, 1, 1], vertical_alignment="bottom")
with top[0]:
    label = model_picker.tokenizer_picker("tok.tokenizer")  # Hub models too (🤗)
with top[1]:
    show_ids = st.toggle("IDs inline", **state.bind(keys.TOK_SHOW_IDS, True))
with top[2]:
    gpt2_view = st.toggle("File spelling (Ġ, ▁, ##)", **state.bind("tok.gpt2_view", False),
                          help="Show tokens as the tokenizer's own files spell them: GPT-2's "
                               "byte view (Ġ for a space, Ċ for a newline) for byte-level BPE; "
                               "▁ for a space, <0x0A> for a byte-fallback token, ## for a "
                               "word's continuation in SentencePiece and WordPiece models; "
                               "the Hugging Face course's Ġ and Ċ for the char-level baseline.")
with top[3]:
    st.caption(display.escaped(state.describe(label)))  # names files and corpora: user text



@st.fragment
def text_and_tokens(label: str, show_ids: bool, gpt2_view: bool) -> None:
    """The text box and everything computed from it. A fragment: typing (ui.live_input
    commits the box after a short pause) reruns only this, not the sidebar, the pickers or
    the page's setup. The link is drawn here too, so it follows the text."""
    link_slot = st.container()  # the link, drawn once the traced word is settled
    text = live_input.text_area("Text", keys.TOK_TEXT, state.SAMPLE_TEXT, height=150,
                               help=f"Up to {cache.MAX_TEXT_CHARS:,} characters. Updates as you "
                                    "type.")
    if too_long := limits.text_too_long(len(text), limit=cache.MAX_TEXT_CHARS):
        st.warning(too_long)
        text = text[: cache.MAX_TEXT_CHARS]

    loaded = widgets.load_tokenizer(label)
    if loaded is None:
        with link_slot:
            links.share("Tokenize")
        return
    label, tok = loaded
    key = state.tokenizer_key(label)

    details = None
    if tok.capabilities.details:
        template = tok.template
        add_special = bool(template) and st.toggle(
            f"Add the model's special tokens: {display.code_span(template.text)}" if template
            else "",
            **state.bind(keys.TOK_ADD_SPECIAL, False),
            help="What the model's own library adds with add_special_tokens=True (Hugging Face's "
                 "default) or bos=True: the BOS/EOS template. Off: the text's tokens alone, as "
                 "tiktoken's encode and sentencepiece's encode give them.")
        try:
            details = cache.encode_details(key, text, tok, add_special_tokens=add_special)
        except Exception as err:  # noqa: BLE001
            widgets.show_error(err, what="Cannot tokenize")

    # The pre-token "Why this split" traces: the user's while the text still has it, else the
    # longest (what a fresh session shows, so a link may leave it out); none without a trace.
    words = chips.distinct_pretokens(text, details.pretokens, limit=500) if details else []
    state.set_value(keys.TOK_WORD_DEFAULT, max(words, key=len) if words else None)
    if state.value(keys.TOK_WORD) not in words:
        state.set_value(keys.TOK_WORD, state.value(keys.TOK_WORD_DEFAULT))
    with link_slot:
        links.share("Tokenize")  # now: the link names the word traced below, never a stale one

    if not tok.capabilities.details:
        # Baselines: word- or character-level, with an unknown token instead of bytes.
        try:
            ids = cache.encode(key, text, tok)
            # what the text is made of (·, ↵ as everywhere); the course's own Ġ spelling on request
            pieces = ([tok.id_to_piece(i) for i in ids] if gpt2_view
                      else cache.baseline_pieces(key, text, tok))
            cov = cache.coverage(key, text, tok)
        except Exception as err:  # noqa: BLE001 - shown, not raised
            widgets.show_error(err, what="Cannot tokenize")
            return
        stat_row.show([Stat("Tokens", f"{cov.n_tokens:,}"), Stat("Characters", f"{cov.n_chars:,}"),
                       Stat("Unknown tokens", f"{cov.n_unknown:,}",
                            help="Tokens that became <|unk|>."),
                       Stat("Round trip", "✓ exact" if cov.round_trip else "✗ lossy")],
                      key="tok-stats")
        html_block.draw(chips.word_chips_html(pieces, ids, unk_id=tok.unk_id,
                                      show_ids=show_ids))
        widgets.copy_row("🔢 IDs", ", ".join(map(str, ids)), key="tok-ids",
                         help=IDS_HELP)
        st.info("This baseline maps unseen words or characters to one unknown token, so decoding "
                "loses them. Byte-level BPE starts from all 256 bytes and can encode any text: "
                "compare them side by side on the ⚖️ Compare page.")
        return
    if details is None:
        return

    stat_row.show([Stat("Tokens", f"{details.n_tokens:,}"),
                   Stat("Characters", f"{details.n_chars:,}"),
                   Stat("Bytes (UTF-8)", f"{details.n_bytes:,}"),
                   Stat("Characters per token",
                        f"{details.n_chars / details.n_tokens:.2f}" if details.n_tokens else "–")],
                  key="tok-stats")

    if not text:
        st.info("Type some text above to see its tokens.")
    else:
        html_block.draw(chips.chips_html(details.tokens, text=text, show_ids=show_ids, gpt2_view=gpt2_view,
                                 limit=chips.MAX_CHIPS))
        if details.n_tokens > chips.MAX_CHIPS:
            st.caption(f"Showing the first {chips.MAX_CHIPS:,} of {details.n_tokens:,} tokens.")
        if any(t.partial for t in details.tokens):
            st.caption("Dashed chips hold part of a UTF-8 character; the orange frame groups the "
                       "tokens that make the character shown at its left.")
        widgets.copy_row("🔢 IDs", ", ".join(str(t.id) for t in details.tokens), key="tok-ids",
                         help=IDS_HELP)

    # lazy tabs: a rerun builds only the open one (the export and the trace cost the most)
    tab_pre, tab_why, tab_export = st.tabs(keys.TOK_TABS, key=keys.TOK_TAB, on_change="rerun")
    kind = kinds.kind_of(tok.capabilities)  # what the captions say depends on the model

    if tab_pre.open:
      with tab_pre:
          st.caption(kind.pretokens.format(n=f"{len(details.pretokens):,}"))
          html_block.draw(chips.pretokens_html(text, details.pretokens[: chips.MAX_CHIPS]))

    if tab_why.open:
      with tab_why:
          if not words:
              st.info("Type some text to see why it is split this way.")
          elif tok.capabilities.scores:  # Unigram: the best path by scores, no merges
              why_split.unigram_paths(key, words, tok, gpt2_view=gpt2_view)
          elif not tok.capabilities.merges:  # WordPiece: the longest match, nothing to trace
              st.info(kind.no_trace)
          else:
              word = st.selectbox("Pre-token", words, format_func=chips.label_text,
                                  **state.bind(keys.TOK_WORD))
              try:
                  steps = cache.merge_trace(key, word, tok)
              except Exception as err:  # noqa: BLE001
                  widgets.show_error(err, what="Cannot trace this pre-token")
              else:
                  shown = display.escaped(chips.label_text(word))
                  st.caption(kinds.trace_caption(kind, shown, len(steps),
                                                 listed=bool(tok.merges)))
                  html_block.draw(chips.trace_html(word, steps, gpt2_view=gpt2_view, first=kind.first))

    if tab_export.open:
      with tab_export:
          widgets.export_buttons(tok, key="tok.export", cache_key=key)


if chat.is_chat():  # Text | Chat: a conversation through the model's chat template
    chat.chat_mode(label, show_ids, gpt2_view)
else:
    text_and_tokens(label, show_ids, gpt2_view)

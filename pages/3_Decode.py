"""Decode: IDs in, text out, with every U+FFFD traced back to the IDs that made it."""

import streamlit as st

from core.explain.compare import first_difference
from core.engine.details import parse_ids
from core.interface import TokenizerInterface

from ui.page import setup
from ui import cache, chips, copy_line, html_block, html_table, keys, links, live_input, stat_row
from ui import state, widgets
from ui.display import escaped
from ui.stat_row import Stat

setup("Decode")

st.title("🔢 Decode")
st.caption("Paste token IDs (spaces, commas, or a JSON list) and see the text they decode to. "
           "Bytes that are not valid UTF-8 become U+FFFD (�), highlighted with the IDs behind it.")

label = widgets.tokenizer_picker("dec.tokenizer")
loaded = widgets.load_tokenizer(label)
if loaded is None:
    st.stop()
label, tok = loaded
key = state.tokenizer_key(label)


def use_tokenize_text() -> None:
    """Fill the box with the IDs of the Tokenize page's text (under the chosen tokenizer)."""
    text = state.value(keys.TOK_TEXT, state.SAMPLE_TEXT)[: cache.MAX_TEXT_CHARS]
    try:
        ids = cache.encode(key, text, tok)
    except Exception:  # noqa: BLE001 - leave the box as it is
        return
    state.set_value(keys.DEC_IDS, ", ".join(map(str, ids)))


if state.value(keys.DEC_IDS) is None:  # first visit: start from the Tokenize page's text
    use_tokenize_text()
try:  # what a fresh session shows for this tokenizer: a link may leave it out
    state.set_value(keys.DEC_IDS_DEFAULT, ", ".join(map(str, cache.encode(key, state.SAMPLE_TEXT, tok))))
except Exception:  # noqa: BLE001 - then links always carry the IDs
    state.set_value(keys.DEC_IDS_DEFAULT, None)
@st.fragment
def ids_and_text(key: str, tok: TokenizerInterface) -> None:
    """The ID box and everything decoded from it: typing (ui.live_input) reruns only this
    fragment. The link is drawn here too, so it follows the IDs."""
    links.share("Decode")
    raw = live_input.text_area(
        "Token IDs", keys.DEC_IDS, "", height=110,
        help="Example: 15496 11 995 — or [15496, 11, 995]. Try [255] to see a byte that is not "
             "UTF-8 on its own. Updates as you type.")
    st.button("Use the IDs of the Tokenize page's text", on_click=use_tokenize_text)

    ids, problems = parse_ids(raw)
    if problems:
        shown = "\n".join(f"- {escaped(p.message)}" for p in problems[:20])
        more = f"\n- … and {len(problems) - 20} more" if len(problems) > 20 else ""
        st.warning(f"{len(problems)} item(s) are not token IDs and were skipped:\n{shown}{more}")
    if len(ids) > cache.MAX_IDS:
        st.warning(f"{len(ids):,} IDs given; only the first {cache.MAX_IDS:,} are decoded "
                   "(server limit TOKPLAY_MAX_IDS).")
        ids = ids[: cache.MAX_IDS]
    if not ids:
        st.info("Enter at least one token ID.")
        return

    if not tok.capabilities.details:
        text = tok.decode([i for i in ids if 0 <= i < tok.n_vocab])
        st.markdown("**Decoded text**")
        html_block.draw(chips.decoded_text_html(text, [], ids))
        st.info("This baseline works on words or characters, not bytes: there are no byte-level "
                "details to show.")
        return

    try:
        details = cache.decode_details(key, tuple(ids), tok)
    except Exception as err:  # noqa: BLE001
        widgets.show_error(err, what="Cannot decode")
        return

    n_oov = sum(p.out_of_vocab for p in details.pieces)
    stat_row.show([Stat("IDs", f"{len(ids):,}"), Stat("Characters", f"{len(details.text):,}"),
                   Stat("U+FFFD", f"{len(details.replacements):,}",
                        help="Replacement characters: bytes that are not valid UTF-8 on their own."),
                   Stat("Outside the vocab", f"{n_oov:,}")], key="dec-stats")
    if n_oov:
        st.error(f"{n_oov} ID(s) are not in this tokenizer's vocabulary "
                 f"(0 … {tok.n_vocab - 1:,}); each decodes to U+FFFD and is marked ∅ below.")

    st.markdown("**Decoded text**")
    html_block.draw(chips.decoded_text_html(details.text, details.replacements, ids))
    st.markdown("**The IDs**")
    html_block.draw(chips.id_chips_html(details.pieces, details.replacements, limit=chips.MAX_CHIPS))
    if details.replacements:
        st.caption("Each numbered � shares its colour and number with the IDs whose bytes made it.")

    table = st.expander("Table of IDs, bytes and pieces", key="dec.table", on_change="rerun")
    if table.open:  # lazy: the table is built only while it is open
        with table:
            html_table.show(chips.pieces_table(details.pieces))

    if st.button("🔁 Check the round trip", help="Encode the decoded text again and compare IDs."):
        again = cache.encode(key, details.text, tok)
        where = first_difference(ids, again)
        if where is None:
            st.success(f"Round trip OK: encoding the text gives the same {len(ids):,} IDs.")
        else:
            st.warning(
                f"Not a round trip: re-encoding gives {len(again):,} IDs and they differ from "
                f"position {where + 1}. Either the IDs were not what this tokenizer would produce "
                "(another tokenizer, or a different split of the same text), or they contain "
                "bytes that are not valid UTF-8 and were replaced by U+FFFD.")
            copy_line.show(", ".join(map(str, again[:500])), wrap=True)


ids_and_text(key, tok)

"""AppTest for Home, Tokenize, Decode, Vocabulary and Compare: no exception, the key widgets,
the right numbers, clear messages on bad input, and uploads through the file uploader."""

from __future__ import annotations

from tests.markdown_text import shown

from collections import Counter
from pathlib import Path
import re

import pytest

from streamlit.testing.v1 import AppTest

from core.formats.presets import load_preset
from core.engine.tokenizer import Tokenizer
from core.train import train_bpe
from ui.state import fingerprint
from ui.site import page
from tests.chart_svg import bars, chart, merge_trees, ticks
from tests.copy_lines import copy_lines
from tests.html_tables import tables
from tests.stats import stats

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

REPO = Path(__file__).resolve().parent.parent
HOME = str(REPO / "app.py")
TOKENIZE = page("Tokenize").script
DECODE = page("Decode").script
VOCAB = page("Vocabulary").script
COMPARE = page("Compare").script

CORPUS = (
    "the cat sat on the mat. the dog sat on the log. "
    "tokenizers split text into tokens; the tokens become numbers.\n"
) * 20
INJECTION = "<img src=x onerror=alert(1)>"
SPECIAL = "<|endoftext|>"


def make_tokenizer(vocab_size: int = 300) -> Tokenizer:
    vocab, merges = train_bpe([CORPUS], vocab_size, [SPECIAL])
    return Tokenizer(vocab, merges, [SPECIAL], name=f"test-{vocab_size}")


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return make_tokenizer()


def open_page(page: str | None, *tokenizers: tuple[str, Tokenizer]) -> AppTest:
    """An AppTest on ``page`` with ``tokenizers`` already in the session (first one active)."""
    at = AppTest.from_file(HOME, default_timeout=120)
    if tokenizers:
        at.session_state["ui.tokenizers"] = {
            label: {"tok": t, "source": "test", "fingerprint": fingerprint(t)}
            for label, t in tokenizers
        }
        at.session_state["ui.active"] = tokenizers[0][0]
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    for m in stats(at):
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r}: {[m.label for m in stats(at)]}")


def all_html(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html"))


# ---- Home ------------------------------------------------------------------------------------


def test_home_renders_with_quick_start() -> None:
    at = open_page(None)
    assert at.title[0].value == "🧩 Tokenizer Playground"
    assert any("built-in corpus" in b.label for b in at.button)


def test_home_quick_start_trains_and_opens_tokenize() -> None:
    at = open_page(None)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    active = at.session_state["ui.active"]
    assert active.startswith("built-in corpus")
    tok = at.session_state["ui.tokenizers"][active]["tok"]
    assert len(tok.vocab) == 1000
    assert at.title[0].value == "🔤 Tokenize"


# ---- A default that cannot be loaded -----------------------------------------------------------


@pytest.mark.parametrize("page", [TOKENIZE, DECODE, VOCAB])
def test_a_default_that_cannot_load_falls_back_with_one_line(monkeypatch, page: str) -> None:
    from core.errors import PlaygroundError
    from ui import cache

    def broken(name: str) -> Tokenizer:
        raise PlaygroundError(f"the files of {name} are damaged")

    monkeypatch.setattr(cache, "preset", broken)
    at = open_page(page)  # a fresh session: its default is GPT-2
    assert not at.error, [e.value for e in at.error]
    (warning,) = [w.value for w in at.warning if "cannot be loaded" in w.value]
    # the label is Markdown-escaped (ui.display.escaped): it shows as “GPT-2 (gpt2)”
    assert warning.startswith("“GPT\\-2 \\(gpt2\\)” cannot be loaded (the files of gpt2 are "
                              "damaged)")
    assert "Load tokenizer files" in warning
    active = at.session_state["ui.active"]
    assert active.startswith("built-in corpus")
    assert len(at.session_state["ui.tokenizers"][active]["tok"].vocab) == 1000
    at.run()  # the next run shows the fallback as the chosen tokenizer, with no warning
    assert not at.exception and not at.error
    assert not [w for w in at.warning if "cannot be loaded" in w.value]


def test_compare_leaves_out_a_tokenizer_that_cannot_load(monkeypatch) -> None:
    from core.errors import PlaygroundError
    from ui import cache

    def broken(name: str) -> Tokenizer:
        if name == "cl100k_base":
            raise PlaygroundError("damaged")
        return load_preset(name)

    monkeypatch.setattr(cache, "preset", broken)
    at = open_page(COMPARE)
    at.session_state["cmp.tokenizers"] = ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)",
                                          "GPT-4o (o200k_base)"]
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(w.value == "“GPT\\-4 \\(cl100k\\_base\\)” is left out: damaged"  # escaped
               for w in at.warning)


# ---- Tokenize --------------------------------------------------------------------------------


def test_tokenize_counts_match_core(tok: Tokenizer) -> None:
    at = open_page(TOKENIZE, ("mine", tok))
    text = "the cat sat on the mat, 日本!"
    at.text_area[0].set_value(text).run()
    assert not at.exception
    ids = tok.encode(text)
    assert metric(at, "Tokens") == f"{len(ids):,}"
    assert metric(at, "Characters") == f"{len(text):,}"
    assert metric(at, "Bytes (UTF-8)") == f"{len(text.encode()):,}"
    html = all_html(at)
    for i in ids:
        assert f"<sub>{i}</sub>" in html
    assert "tp-grp" in html  # 日本 is not in the tiny vocab: partial UTF-8 tokens grouped


def test_tokenize_escapes_injection() -> None:
    # A tokenizer in which INJECTION is ONE token: split over many chips, "<img" would never
    # appear in one piece and this test would pass without any escaping.
    from tests.test_escaping import attack_tokenizer

    attack = attack_tokenizer()
    assert len(attack.encode(INJECTION)) == 1
    at = open_page(TOKENIZE, ("attack", attack))
    at.text_area[0].set_value(INJECTION).run()
    html = all_html(at)
    assert "<img" not in html and "onerror=alert(1)>" not in html
    assert "&lt;" in html and "&gt;" in html
    assert "&lt;img·src=x·onerror=alert(1)&gt;" in html  # the one chip, escaped
    assert metric(at, "Characters") == f"{len(INJECTION):,}"


def test_tokenize_text_limit_message(tok: Tokenizer) -> None:
    from ui.cache import MAX_TEXT_CHARS

    at = open_page(TOKENIZE, ("mine", tok))
    at.text_area[0].set_value("a" * (MAX_TEXT_CHARS + 5)).run()
    assert not at.exception
    assert any("first" in w.value and f"{MAX_TEXT_CHARS:,}" in w.value for w in at.warning)
    assert metric(at, "Characters") == f"{MAX_TEXT_CHARS:,}"


def open_tab(at: AppTest, index: int) -> None:
    """Open one of Tokenize's lazy tabs (only the open one is built), as a click does."""
    from ui import keys

    at.session_state[keys.TOK_TAB] = keys.TOK_TABS[index]
    at.run()


def test_tokenize_builds_only_the_open_tab(tok: Tokenizer) -> None:
    at = open_page(TOKENIZE, ("mine", tok))
    assert not at.get("download_button")
    open_tab(at, 2)
    assert at.get("download_button")


def test_tokenize_gpt2_view_and_merge_trace(tok: Tokenizer) -> None:
    at = open_page(TOKENIZE, ("mine", tok))
    open_tab(at, 1)
    at.text_area[0].set_value(" the cat\n").run()
    at.toggle(key="_w.tok.gpt2_view").set_value(True).run()
    assert not at.exception
    html = all_html(at)
    assert "Ġthe" in html and "Ċ" in html
    at.selectbox(key="_w.tok.word").set_value(" the").run()
    assert not at.exception
    html = all_html(at)
    # the trace of " the", GPT-2 form; merges numbered from 1 (ranks 0 and 3)
    assert "#1 · Ġ + t" in html and "#4 · Ġt + he" in html


def test_tokenize_word_baseline(tok: Tokenizer) -> None:
    at = open_page(TOKENIZE, ("mine", tok))
    at.selectbox(key="tok.tokenizer").set_value("Word-level baseline").run()
    assert not at.exception
    at.text_area[0].set_value("zxqv wibble").run()
    assert not at.exception
    assert metric(at, "Unknown tokens") == "2"


def test_tokenize_ids_are_on_the_page_ready_to_copy(tok: Tokenizer) -> None:
    """One click copies the IDs: they are a copy line under the chips (``ui.copy_line``'s
    copy button), not inside a tab that must be opened first."""
    at = open_page(TOKENIZE, ("mine", tok))
    text = "the cat sat on the mat."
    at.text_area[0].set_value(text).run()
    assert not at.exception
    (wraps,) = [w for t, w in copy_lines(at.main) if t == ", ".join(map(str, tok.encode(text)))]
    assert not wraps
    assert "🔢 IDs" not in [t.label for t in at.tabs]


def test_tokenize_why_this_split_names_a_zero_width_joiner() -> None:
    """The caption quotes the pre-token as text, never as Python's repr (``\\u200d``)."""
    at = open_page(TOKENIZE)
    open_tab(at, 1)
    at.text_area[0].set_value("hi 👨\u200d👩\u200d👧").run()
    assert not at.exception
    assert at.selectbox(key="_w.tok.word").value == " 👨\u200d👩\u200d👧"
    (caption,) = [c.value for c in at.caption if c.value.startswith("Start from the bytes")]
    assert caption.startswith("Start from the bytes of “·👨⟨ZWJ⟩👩⟨ZWJ⟩👧” and apply")
    assert "\\u" not in caption and "'" not in caption


@pytest.mark.parametrize("page_script", [TOKENIZE, COMPARE])
def test_char_baseline_shows_whitespace_as_every_other_view(page_script: str) -> None:
    """The char-level baseline's chips show · and ↵ like every other view, not the course's
    Ġ and Ċ (which Tokenize's "File spelling" toggle still offers)."""
    text = "a b\nc"
    at = open_page(page_script)
    if page_script == TOKENIZE:
        at.selectbox(key="tok.tokenizer").set_value("Char-level baseline").run()
    else:
        at.multiselect[0].set_value(["GPT-2 (gpt2)", "Char-level baseline"]).run()
    at.text_area[0].set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    html = all_html(at)
    baseline = html.split("Char-level")[-1] if page_script == COMPARE else html
    assert ">·b" in baseline or ">·<" in baseline
    assert ">↵" in baseline
    assert "Ġ" not in baseline and "Ċ" not in baseline
    if page_script == TOKENIZE:
        at.toggle(key="_w.tok.gpt2_view").set_value(True).run()
        assert "Ġ" in all_html(at) and "Ċ" in all_html(at)


# ---- Decode ----------------------------------------------------------------------------------


def test_decode_invalid_byte_highlighted(tok: Tokenizer) -> None:
    at = open_page(DECODE, ("mine", tok))
    bad = next(i for i, b in tok.vocab.items() if b == b"\xff")
    at.text_area[0].set_value(f"[{bad}]").run()
    assert not at.exception
    assert metric(at, "U+FFFD") == "1"
    html = all_html(at)
    assert 'class="tp-fffd"' in html and f"ID {bad}" in html


def test_decode_flags_bad_items_and_oov(tok: Tokenizer) -> None:
    at = open_page(DECODE, ("mine", tok))
    at.text_area[0].set_value("1, x, 3, 999999").run()
    assert not at.exception
    assert any("item 2" in w.value for w in at.warning)
    assert metric(at, "Outside the vocab") == "1"
    assert any("not in this tokenizer's vocabulary" in e.value for e in at.error)


def test_decode_round_trip(tok: Tokenizer) -> None:
    at = open_page(DECODE, ("mine", tok))
    ids = tok.encode("the dog sat on the log.")
    at.text_area[0].set_value(" ".join(map(str, ids))).run()
    assert tok.decode(ids) in all_html(at)
    next(b for b in at.button if "round trip" in b.label).click().run()
    assert not at.exception
    assert any("Round trip OK" in s.value for s in at.success)


def test_decode_empty_input_message(tok: Tokenizer) -> None:
    at = open_page(DECODE, ("mine", tok))
    at.text_area[0].set_value("   ").run()
    assert not at.exception
    assert any("at least one token ID" in i.value for i in at.info)


# ---- Vocabulary ------------------------------------------------------------------------------


def test_vocabulary_table_search_and_tree(tok: Tokenizer) -> None:
    at = open_page(VOCAB, ("mine", tok))
    assert metric(at, "Tokens") == f"{len(tok.vocab):,}"
    at.text_input(key="_w.voc.search").set_value("the").run()
    assert not at.exception
    (table,) = tables(at)
    assert len(table) > 0 and all("the" in row["token"] for row in table)
    the_id = next(i for i, b in tok.vocab.items() if b == b" the")
    at.number_input(key="_w.voc.token").set_value(the_id).run()
    assert not at.exception
    (tree,) = merge_trees(at)
    assert tree[0] == ("·the", f"ID {the_id} · merge #{tok.merge_tree(the_id).rank + 1}")
    t_id = next(i for i, b in tok.vocab.items() if b == b"t")
    assert ("t", f"ID {t_id} · byte") in tree and len(tree) == 7  # " the" down to 4 bytes
    lengths = {int(x): n for _, x, n, _ in bars(chart(at, "voc.lengths"))}
    assert lengths == Counter(len(t) for t in tok.vocab.values())  # a bar per length
    at.text_input(key="_w.voc.search").set_value("").run()
    at.selectbox(key="_w.voc.order").set_value("newest merges first").run()
    assert not at.exception
    (table,) = tables(at)
    assert table[0]["merge"] == len(tok.merges)  # merges are numbered from 1


def test_vocabulary_length_chart_has_whole_number_ticks(tok: Tokenizer) -> None:
    """Token lengths and token counts are whole numbers: no tick at 2.5 bytes or 7.5 tokens."""
    at = open_page(VOCAB, ("mine", tok))
    lengths = chart(at, "voc.lengths")
    for axis in ("x", "y"):
        written = ticks(lengths, axis)
        assert written and all(t.replace(",", "").isdigit() for t in written), written
    counts = [int(t.replace(",", "")) for t in ticks(lengths, "y")]
    assert counts[0] == 0 and len({b - a for a, b in zip(counts, counts[1:])}) == 1, counts
    hovers = [label for _, _, _, label in bars(lengths)]
    assert "256 tokens of 1 byte" in hovers, hovers  # the 256 bytes


def test_vocabulary_rows_name_their_ids_for_a_click_to_type_into_token_id(tok: Tokenizer) -> None:
    """The list is an HTML table (no data grid to fetch): each row carries its token's ID and
    the table names the "Token ID" box, where ui.row_pick's script types the ID of a clicked
    row (the browser test clicks one); the cells a byte has no value for are blank."""
    from ui import row_pick

    at = open_page(VOCAB, ("mine", tok))
    assert not at.exception and not at.dataframe
    markup = next(h.proto.body for h in at.get("html") if 'class="tp-table"' in h.proto.body)
    assert 'data-pick-into="st-key-_w-voc-token"' in markup
    (table,) = tables(at)
    picks = re.findall(r'<tr data-pick="(\d+)">', markup)
    assert [int(p) for p in picks] == [row["ID"] for row in table] == sorted(tok.vocab)[:len(table)]
    assert table[0]["merge"] in (None, "") and table[0]["left"] == ""  # byte 0: blank cells
    assert ">None<" not in markup and ">&lt;NA&gt;<" not in markup
    scripts = [h.proto for h in at.get("html") if h.proto.body == row_pick.SCRIPT]
    assert len(scripts) == 1 and scripts[0].unsafe_allow_javascript
    assert any("Click a row to pick its token." in c.value for c in at.caption)


# ---- Compare ---------------------------------------------------------------------------------


def test_compare_two_trained_and_baseline(tok: Tokenizer) -> None:
    bigger = make_tokenizer(400)
    at = open_page(COMPARE, ("small", tok), ("big", bigger))
    at.multiselect[0].set_value(["small", "big", "Word-level baseline"]).run()
    assert not at.exception
    at.text_area[0].set_value("the tokenizers sat on the mat.").run()
    assert not at.exception
    (rows,) = tables(at)
    assert [r["tokenizer"] for r in rows] == ["small", "big", "Word-level baseline"]
    assert rows[0]["tokens"] == len(tok.encode("the tokenizers sat on the mat."))
    assert "tp-regions" in all_html(at) or any("same places" in s.value for s in at.success)


def test_compare_says_why_byte_level_bpe_won_only_when_one_is_compared() -> None:
    why = "Why byte-level BPE won"
    at = open_page(COMPARE)
    at.text_area[0].set_value("zxqv wibble 日本").run()  # unknown to both baselines
    at.multiselect[0].set_value(["Word-level baseline", "Char-level baseline"]).run()
    assert not at.exception
    assert sum(r["unknown tokens"] for r in tables(at)[0]) > 0
    assert not [c for c in at.caption if why in c.value]
    at.multiselect[0].set_value(["GPT-2 (gpt2)", "Word-level baseline"]).run()
    assert not at.exception
    assert [c for c in at.caption if why in c.value]


def test_compare_needs_two(tok: Tokenizer) -> None:
    at = open_page(COMPARE, ("mine", tok))
    at.multiselect[0].set_value(["mine"]).run()
    assert any("at least two" in i.value for i in at.info)


@pytest.mark.parametrize("how", ["clear all", "remove one by one"])
def test_compare_stays_empty_once_cleared(how: str) -> None:
    # Issue 27: "Clear all", or removing the last tokenizer, used to snap back to the default four.
    at = open_page(COMPARE)
    if how == "clear all":
        at.multiselect[0].set_value([]).run()
    else:
        while picks := at.multiselect[0].value:
            at.multiselect[0].unselect(picks[-1]).run()
            assert at.multiselect[0].value == picks[:-1]
    for _ in range(2):
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.multiselect[0].value == []
        assert not tables(at)
        assert any("Pick" in i.value and "tokenizers" in i.value for i in at.info)
    at.switch_page(TOKENIZE).run()
    at.switch_page(COMPARE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect[0].value == []
    assert not tables(at)


# ---- Uploads (sidebar loader) ------------------------------------------------------------------


def open_loader(at: AppTest) -> None:
    """Open the sidebar's "Load tokenizer files" expander (lazy: its widgets exist only while
    it is open), as a click on it does."""
    assert not at.sidebar.get("file_uploader"), "the closed loader must build no widgets"
    at.session_state["ui.loader"] = True
    at.run()


def test_upload_pickles_becomes_active(tok: Tokenizer) -> None:
    from core.formats import tokenizer_to_pickles

    files = tokenizer_to_pickles(tok)
    at = open_page(TOKENIZE)
    open_loader(at)
    uploader = at.sidebar.get("file_uploader")[0]
    uploader.set_value([(name, data, "application/octet-stream") for name, data in files.items()])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    active = at.session_state["ui.active"]
    loaded = at.session_state["ui.tokenizers"][active]["tok"]
    assert loaded.vocab == tok.vocab and loaded.merges == tok.merges


def test_upload_malicious_pickle_shows_error() -> None:
    import pickle

    class Evil:
        def __reduce__(self):  # noqa: ANN204
            return (print, ("pwned",))

    at = open_page(TOKENIZE)
    open_loader(at)
    uploader = at.sidebar.get("file_uploader")[0]
    uploader.set_value([("vocab.pkl", pickle.dumps(Evil()), "application/octet-stream"),
                        ("merges.pkl", pickle.dumps([]), "application/octet-stream")])
    at.run()
    assert not at.exception
    assert at.error, "a malicious pickle must produce a clear error"
    assert at.session_state["ui.tokenizers"] == {}


def test_tokenize_export_offers_pickles(tok: Tokenizer) -> None:
    at = open_page(TOKENIZE, ("mine", tok))
    open_tab(at, 2)
    labels = [b.label for b in at.get("download_button")]
    assert any("vocab.pkl" in x for x in labels) and any("merges.pkl" in x for x in labels)


def test_decode_bad_item_message_has_its_position(tok: Tokenizer) -> None:
    at = open_page(DECODE, ("mine", tok))
    at.text_area[0].set_value("[1, 2, \"abc\", -4]").run()
    warning = next(shown(w.value) for w in at.warning if "not token IDs" in w.value)
    assert "item 3 'abc'" in warning and "item 4 '-4'" in warning


# ---- Export: a format that cannot be written is named, with the reason -------------------------


def test_tokenize_export_warns_about_a_format_it_cannot_write(monkeypatch) -> None:
    """A failing exporter (here .tiktoken) gives a warning naming the file and the reason; the
    other downloads are still offered. Self-contained: its own tokenizer and AppTest."""
    from pathlib import Path as _Path

    from streamlit.testing.v1 import AppTest as _AppTest

    from core.errors import FormatError
    from core.formats import tiktoken_file
    from core.engine.tokenizer import Tokenizer as _Tokenizer
    from core.train import train_bpe as _train_bpe
    from ui import widgets
    from ui.state import fingerprint as _fingerprint

    def broken(tokenizer: _Tokenizer) -> bytes:
        raise FormatError("merge 3 (b'a', b'b'): its token's ID is not larger than its parts' IDs.")

    monkeypatch.setattr(tiktoken_file, "tokenizer_to_tiktoken", broken)
    widgets._export.clear()  # a cached export of an equal tokenizer would hide the failure
    corpus = "export me: the cat sat on the mat, the dog sat on the log.\n" * 20
    vocab, merges = _train_bpe([corpus], 290, ["<|endoftext|>"])
    tok = _Tokenizer(vocab, merges, ["<|endoftext|>"], name="export-test")
    at = _AppTest.from_file(str(_Path(__file__).resolve().parent.parent / "app.py"),
                            default_timeout=120)
    at.session_state["ui.tokenizers"] = {
        "export-test": {"tok": tok, "source": "test", "fingerprint": _fingerprint(tok), "meta": {}}}
    at.session_state["ui.active"] = "export-test"
    at.switch_page(page("Tokenize").script)
    at.session_state["tok.tab"] = "⬇️ Export"  # a lazy tab: only the open one is built
    at.run()
    widgets._export.clear()  # do not leave the failing export cached for later tests
    assert not at.exception, [e.value for e in at.exception]
    warnings = [shown(w.value) for w in at.warning if "tiktoken" in w.value]  # as read
    assert warnings == [
        ("export-test.tiktoken (tiktoken rank file) is not offered: merge 3 (b'a', b'b'): its "
         "token's ID is not larger than its parts' IDs. The other downloads are complete.")]
    labels = sorted(b.label for b in at.get("download_button"))
    assert labels == sorted(f"⬇️ {name}" for name in
                            ("vocab.pkl", "merges.pkl", "encoder.json", "vocab.bpe", "tokenizer.json"))


def test_vocabulary_sends_a_page_of_rows_at_a_time_and_says_so() -> None:
    # GPT-2's 50,257 rows were 5.2 MB on every run of the page: a page of rows goes, in the
    # order chosen; the "Page" box, search and the order reach the rest
    from ui.limits import VOCAB_PAGE_ROWS

    at = open_page(VOCAB)  # the default tokenizer: GPT-2
    assert not at.exception
    (table,) = tables(at)
    assert [row["ID"] for row in table] == list(range(VOCAB_PAGE_ROWS))
    pages = -(-50_257 // VOCAB_PAGE_ROWS)
    assert any(f"50,257 token(s) match; tokens 1–{VOCAB_PAGE_ROWS:,} are listed (page 1 of "
               f"{pages:,})" in c.value for c in at.caption)
    at.number_input(key="_w.voc.page").set_value(pages).run()  # the last page: what is left
    (table,) = tables(at)
    assert [row["ID"] for row in table] == list(range((pages - 1) * VOCAB_PAGE_ROWS, 50_257))
    at.selectbox(key="_w.voc.order").set_value("newest merges first").run()
    assert at.number_input(key="_w.voc.page").value == 1  # another list: its first page
    assert tables(at)[0][0]["ID"] == 50_255  # the others by the order: the last merge
    at.text_input(key="_w.voc.search").set_value("ization").run()
    (table,) = tables(at)
    assert 0 < len(table) < VOCAB_PAGE_ROWS and all("ization" in r["token"] for r in table)
    assert not any("are listed" in c.value for c in at.caption)

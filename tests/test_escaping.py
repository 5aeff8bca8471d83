"""Escaping in every HTML view, tested with attacks that stay in ONE token (chip, row, step).

An attack split over many chips proves nothing: ``<img`` never appears in one piece, so the
tests pass with the escaping removed. Here a byte-level BPE tokenizer is trained so that each
attack string is a single token; each view is then rendered (pure function and page) and must
show the attack escaped inside one chip, with no markup of its own reaching the HTML.

Attacks: ``ATTACK`` (an ``<img onerror>``), ``ATTACK2`` (quotes, ampersand, closing tags and
a ``<script>``), ``SPECIAL_ATTACK`` (a special token, shown from its text, not its bytes) and
``GROUP_ATTACK`` (followed by ``你`` it is cut inside the character, so its chips are grouped
under a frame whose ``title=`` and label carry the user's text: the attribute context).
"""

from __future__ import annotations

import functools
import html
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
import regex
from streamlit.testing.v1 import AppTest

from core.engine.bytes_unicode import to_gpt2_str
from core.engine.tokenizer import Tokenizer
from core.train import train_bpe
from tests.chart_svg import picture
from tests.html_tables import parse as parse_tables, tables
from ui import chips, copy_line, live_input, merge_tree, page_menu, row_pick, site
from ui.display import escaped
from ui.site import page
from ui.state import fingerprint

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

ATTACK = "<img src=x onerror=alert(1)>"
ATTACK2 = "\"'& </div><script>alert(2)</script>"
SPECIAL_ATTACK = "<svg onload=alert(3)>"
GROUP_ATTACK = ATTACK + '" onmouseover="alert(4)'
GROUP_TEXT = GROUP_ATTACK + "你"  # tokens: GROUP_ATTACK + b"\xe4\xbd", then b"\xa0"
# One pre-token per attack (the longer GROUP_ATTACK first), then whitespace runs and words.
PATTERN = "|".join(regex.escape(a) for a in (GROUP_ATTACK + "你", GROUP_ATTACK, ATTACK, ATTACK2))
PATTERN += r"|\s+|[^\s]+"
TEXT = f"hi {ATTACK} there {ATTACK2} {SPECIAL_ATTACK} {GROUP_TEXT} end"
ATTACK_LABEL = "attack <b>tok</b> & co"  # a tokenizer label is user text too (file names)

REPO = Path(__file__).resolve().parent.parent
HOME = str(REPO / "app.py")
TOKENIZE = page("Tokenize").script
DECODE = page("Decode").script
VOCAB = page("Vocabulary").script
COMPARE = page("Compare").script

#: Tags and attributes our views write; anything else in the output came from user text.
OUR_TAGS = {"style", "div", "span", "sub", "sup", "br", "table", "thead", "tbody", "tr", "th",
            "td", "code"}
OUR_ATTRS = {"class", "style", "title", "data-key", "aria-label", "role",  # (a copy row's)
             "data-pick", "data-pick-into"}  # (Vocabulary's list: ui.row_pick)
#: Raw pieces of the attacks that must never reach the HTML unescaped.
RAW = ("<img", "<script", "</script", "</div><script", "<svg", ATTACK, ATTACK2, SPECIAL_ATTACK,
       'onmouseover="alert')


@functools.cache
def attack_tokenizer() -> Tokenizer:
    """A byte-level BPE tokenizer, trained here, in which each attack string is one token.

    ``GROUP_ATTACK`` gets two more merges (with the first two bytes of ``你``) after training,
    so ``GROUP_TEXT`` encodes as a token ending inside a character plus the character's last
    byte: two partial-UTF-8 tokens grouped under one frame.
    """
    corpus = f"{ATTACK} {ATTACK2} {GROUP_ATTACK} hello world\n" * 50
    vocab, merges = train_bpe([corpus], 256 + 1 + 300, [SPECIAL_ATTACK], pattern=PATTERN)
    nxt = max(vocab) + 1
    for a, b in ((GROUP_ATTACK.encode(), b"\xe4"), (GROUP_ATTACK.encode() + b"\xe4", b"\xbd")):
        merges.append((a, b))
        vocab[nxt] = a + b
        nxt += 1
    tok = Tokenizer(vocab, merges, [SPECIAL_ATTACK], pattern=PATTERN, name="attack")
    for attack in (ATTACK, ATTACK2, GROUP_ATTACK, SPECIAL_ATTACK):
        ids = tok.encode(attack)
        assert len(ids) == 1, (attack, ids)
        assert tok.vocab[ids[0]] == attack.encode()
    assert [tok.vocab[i] for i in tok.encode(GROUP_TEXT)] == [
        GROUP_ATTACK.encode() + b"\xe4\xbd", b"\xa0"]
    return tok


def attack_id(tok: Tokenizer, attack: str = ATTACK) -> int:
    """The ID of the single token ``attack`` is."""
    (token_id,) = tok.encode(attack)
    return token_id


@functools.cache
def plain_tokenizer() -> Tokenizer:
    """A small GPT-2-pattern tokenizer that cuts the attacks into many tokens (for Compare)."""
    corpus = "the cat sat on the mat. the dog sat on the log. hello world.\n" * 20
    vocab, merges = train_bpe([corpus], 300)
    return Tokenizer(vocab, merges, name="plain")


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    """The attack tokenizer; each attack is exactly one token with exactly its bytes."""
    t = attack_tokenizer()
    for attack in (ATTACK, ATTACK2):
        ids = t.encode(attack)
        assert len(ids) == 1 and t.vocab[ids[0]] == attack.encode(), ids
    return t


# ---- checking markup -------------------------------------------------------------------------


class _Elements(HTMLParser):
    """Every element of a piece of HTML as [tag, attrs, own text] (text unescaped)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[list] = []
        self._open: list[list] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = [tag, dict(attrs), ""]
        self.elements.append(element)
        if tag not in ("br",):
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][2] += data


def elements(markup: str) -> list[list]:
    parser = _Elements()
    parser.feed(markup)
    parser.close()
    return parser.elements


def assert_only_our_markup(markup: str) -> None:
    """No tag, attribute or raw attack piece in ``markup`` that came from user text."""
    for raw in RAW:
        assert raw not in markup, f"raw {raw!r} in the HTML"
    for tag, attrs, _ in elements(markup):
        assert tag in OUR_TAGS, f"<{tag}> is not one of our tags"
        assert set(attrs) <= OUR_ATTRS, f"<{tag}> has attributes {sorted(attrs)}"


#: The elements of a chart (ui.charts): HTML around an <img> of its SVG, and that SVG.
CHART_TAGS = {"div", "span", "img", "i", "b", "style"}
CHART_SVG_TAGS = {"svg", "g", "rect", "path", "line", "polyline", "text"}


def assert_only_chart_markup(markup: str) -> None:
    """A chart: only the chart's own elements (one ``<img>``, of its SVG picture), no event
    handler, no raw attack piece, in the HTML or in the picture."""
    assert markup.count("<img") == 1, "an <img> that is not the chart's picture"
    svg = picture(ET.fromstring(markup))
    decoded = ET.tostring(svg, encoding="unicode")
    for raw in RAW:
        if raw != "<img":
            assert raw not in markup, f"raw {raw!r} in the chart"
        if raw != "<svg":
            assert raw not in decoded, f"raw {raw!r} in the chart's picture"
    assert decoded.count("<svg") == 1, "an <svg> in the picture that is not its root"
    for tag, attrs, _ in elements(markup):
        assert tag in CHART_TAGS, f"<{tag}> is not one of a chart's tags"
        assert not [a for a in attrs if a.startswith("on")], f"<{tag}> has {sorted(attrs)}"
    for e in svg.iter():
        assert e.tag in CHART_SVG_TAGS, f"<{e.tag}> is not one of a chart picture's tags"
        assert not [a for a in e.attrib if a.startswith("on")], f"<{e.tag}> has {e.attrib}"


def assert_in_one_chip(markup: str, label: str, *, cls: str = "tp-chip") -> list:
    """``label`` (what the chip displays) is in ``markup`` escaped, never raw, and is the whole
    text of one element of class ``cls``; returns that element."""
    assert html.escape(label, quote=True) in markup, f"escaped {label!r} not in the HTML"
    assert label not in markup, f"raw {label!r} in the HTML"
    hits = [e for e in elements(markup) if cls in e[1].get("class", "").split() and e[2] == label]
    assert hits, f"no single {cls} element shows {label!r}"
    return hits[0]


def shown(token: str, *, gpt2_view: bool = False) -> str:
    """What a chip shows for the token whose text is ``token``."""
    return chips.token_label(token.encode(), gpt2_view=gpt2_view)


# ---- pure functions --------------------------------------------------------------------------


@pytest.mark.parametrize("show_ids", [True, False])
@pytest.mark.parametrize("gpt2_view", [False, True])
def test_chips_escape_a_whole_token(tok: Tokenizer, show_ids: bool, gpt2_view: bool) -> None:
    """Token chips (Tokenize, Compare, Home): each attack token is one escaped chip, its
    title= carries its ID and bytes; a special token shows its text, escaped."""
    details = tok.encode_details(TEXT)
    out = chips.chips_html(details.tokens, text=TEXT, show_ids=show_ids, gpt2_view=gpt2_view)
    assert_only_our_markup(out)
    for attack in (ATTACK, ATTACK2):
        chip = assert_in_one_chip(out, shown(attack, gpt2_view=gpt2_view))
        token_id = attack_id(tok, attack)
        index = next(t.index for t in details.tokens if t.id == token_id)
        assert chip[1]["title"] == (f"ID {token_id} · #{index} · "
                                    f"bytes {attack.encode().hex(' ')}")
        assert (f"<sub>{token_id}</sub>" in out) is show_ids
    # a special token shows its text as it is (spaces too), escaped
    special = assert_in_one_chip(out, SPECIAL_ATTACK)
    assert "tp-special" in special[1]["class"]
    if not gpt2_view:
        assert "&lt;img·src=x·onerror=alert(1)&gt;" in out
        assert "&quot;&#x27;&amp;·&lt;/div&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in out


def test_chips_partial_group_frame_escapes_title_and_label(tok: Tokenizer) -> None:
    """The frame around partial-UTF-8 tokens puts the user's text in an attribute (title=)
    and in its label: quotes must not end the attribute."""
    details = tok.encode_details(GROUP_TEXT)
    assert [t.partial for t in details.tokens] == [True, True]
    out = chips.chips_html(details.tokens, text=GROUP_TEXT)
    assert_only_our_markup(out)
    frame = next(e for e in elements(out) if e[1].get("class") == "tp-grp")
    assert frame[1]["title"] == f"2 tokens make “{chips.visible(GROUP_TEXT)}”"  # one attribute, whole text
    assert_in_one_chip(out, chips.visible(GROUP_TEXT), cls="tp-grp-char")
    assert_in_one_chip(out, shown(GROUP_ATTACK) + "\\xe4\\xbd")


def test_pretokens_escape_a_whole_pretoken(tok: Tokenizer) -> None:
    """The Tokenize page's pre-token chips."""
    details = tok.encode_details(TEXT)
    out = chips.pretokens_html(TEXT, details.pretokens)
    assert_only_our_markup(out)
    for attack in (ATTACK, ATTACK2, SPECIAL_ATTACK, GROUP_TEXT):
        assert_in_one_chip(out, chips.visible(attack))


@pytest.mark.parametrize("gpt2_view", [False, True])
@pytest.mark.parametrize("attack", [ATTACK, ATTACK2], ids=["img", "script"])
def test_merge_trace_escapes_steps_and_pairs(tok: Tokenizer, attack: str, gpt2_view: bool) -> None:
    """The "why this split" trace: the parts after each merge (the last row is the attack as
    one chip) and the "#rank · left + right" label of each merge."""
    steps = tok.merge_trace(attack)
    assert steps and steps[-1].after == [attack.encode()]  # the last row: one chip, the attack
    out = chips.trace_html(attack, steps, gpt2_view=gpt2_view)
    assert_only_our_markup(out)
    assert_in_one_chip(out, shown(attack, gpt2_view=gpt2_view))
    ranks = [e for e in elements(out) if e[1].get("class") == "tp-rank"]
    assert len(ranks) == len(steps) + 1
    for step, rank in zip(steps, ranks[1:], strict=True):
        a, b = (chips.token_label(p, gpt2_view=gpt2_view) for p in step.pair)
        label = f"#{step.rank + 1} · {a} + {b}"  # merges are numbered from 1
        assert rank[2] == label
        assert html.escape(label, quote=True) in out
    # the last pair holds every character of the attack (split in two): escaped, never raw
    a, b = (chips.token_label(p, gpt2_view=gpt2_view) for p in steps[-1].pair)
    assert f"{a} + {b}" not in out


def test_decode_views_escape_a_whole_token(tok: Tokenizer) -> None:
    """The Decode page's decoded text (escaped character by character, U+FFFD marked) and
    its ID chips."""
    group_id = tok.encode(GROUP_TEXT)[0]  # GROUP_ATTACK and half of 你: decodes with a U+FFFD
    ids = [attack_id(tok, ATTACK), attack_id(tok, ATTACK2), group_id]
    details = tok.decode_details(ids)
    text_out = chips.decoded_text_html(details.text, details.replacements, ids)
    assert_only_our_markup(text_out)
    assert html.escape(ATTACK + ATTACK2 + GROUP_ATTACK) in text_out
    box = next(e for e in elements(text_out) if e[1].get("class") == "tp-text")
    assert box[2] == ATTACK + ATTACK2 + GROUP_ATTACK  # U+FFFD is in its own span
    ids_out = chips.id_chips_html(details.pieces, details.replacements)
    assert_only_our_markup(ids_out)
    for attack in (ATTACK, ATTACK2):
        assert_in_one_chip(ids_out, shown(attack))
    assert_in_one_chip(ids_out, shown(GROUP_ATTACK) + "\\xe4\\xbd")


def test_word_chips_escape_a_whole_piece() -> None:
    """The baselines' chips (Tokenize, Compare): pieces are strings, one chip each."""
    out = chips.word_chips_html([ATTACK, ATTACK2, "<|unk|>"], [5, 6, 0], unk_id=0)
    assert_only_our_markup(out)
    assert_in_one_chip(out, chips.visible(ATTACK))
    assert_in_one_chip(out, chips.visible(ATTACK2))


def test_regions_escape_text_pieces_and_names(tok: Tokenizer) -> None:
    """Compare's "where the boundaries differ" table: the text, each tokenizer's pieces and
    the tokenizers' names (labels are user text: file names)."""
    from core.explain.compare import boundaries, differing_regions

    cuts = {name: boundaries((t.start, t.end) for t in t_.encode_details(TEXT).tokens)
            for name, t_ in ((ATTACK_LABEL, tok), ("plain", plain_tokenizer()))}
    regions = differing_regions(TEXT, cuts)
    out = chips.regions_html(regions, list(cuts))
    assert_only_our_markup(out)
    assert "<b>tok</b>" not in out and html.escape(ATTACK_LABEL) in out
    for attack in (ATTACK, ATTACK2):
        assert_in_one_chip(out, chips.visible(attack))  # the attack tokenizer's piece
        region = next(r for r in regions if attack in r.text)  # the text column
        assert f"<code>{html.escape(chips.visible(region.text))}</code>" in out


def tree_labels(markup: str) -> list[str]:
    """Each box of a merge tree (``ui.merge_tree``): its token as shown, a line
    break, its ID line; after checking that the markup is only ours."""
    assert_only_our_markup(markup)
    found = elements(markup)
    tokens = [text for tag, attrs, text in found if tag == "code"]
    ids = [text for tag, attrs, text in found if attrs.get("class") == "tp-mt-id"]
    assert len(tokens) == len(ids) == sum("tp-mt-box" in a.get("class", "") for _, a, _ in found)
    return [f"{t}\n{i}" for t, i in zip(tokens, ids, strict=True)]


@pytest.mark.parametrize("attack", [ATTACK, ATTACK2], ids=["img", "script"])
def test_merge_tree_escapes_a_whole_token(tok: Tokenizer, attack: str) -> None:
    """The Vocabulary page's merge tree is HTML: each token is one escaped box label."""
    token_id = attack_id(tok, attack)
    tree = tok.merge_tree(token_id)
    labels = tree_labels(merge_tree.merge_tree_html(tree))
    assert labels[0] == f"{shown(attack)}\nID {token_id} · merge #{tree.rank + 1}"


# ---- pages (AppTest) -------------------------------------------------------------------------


def open_page(page: str, *tokenizers: tuple[str, Tokenizer]) -> AppTest:
    """An AppTest on ``page`` with ``tokenizers`` in the session (the first one active)."""
    at = AppTest.from_file(HOME, default_timeout=120)
    at.session_state["ui.tokenizers"] = {
        label: {"tok": t, "source": "test", "fingerprint": fingerprint(t)}
        for label, t in tokenizers
    }
    at.session_state["ui.active"] = tokenizers[0][0]
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page_html(at: AppTest) -> list[str]:
    """The body of every ``st.html`` on the page, after checking that no markdown allowed to
    hold HTML carries user text."""
    assert not at.exception, [e.value for e in at.exception]
    for m in (*at.markdown, *at.caption):
        if m.proto.allow_html:
            for raw in RAW:
                assert raw not in m.proto.body, f"HTML-enabled markdown holds {raw!r}"
    bodies = []
    for h in at.get("html"):
        if h.proto.body.startswith('<div class="tp-chart"'):
            assert_only_chart_markup(h.proto.body)  # a chart: its own <img> of its SVG
        else:
            bodies.append(without_our_scripts(h.proto.body))
    for body in bodies:
        assert_only_our_markup(body)
    return bodies


def without_our_scripts(body: str) -> str:
    """An ``st.html`` body without the scripts and buttons that are constants of ours: a copy
    line's (``ui.copy_line``: a link, IDs), and the whole live-typing block
    (``ui.live_input``), row-pick block (``ui.row_pick``) and page menu (``ui.page_menu``),
    which hold no user text; any other
    script or button is still reported."""
    if body.startswith('<span class="tp-live-input">'):  # live typing: constant but its box
        box = re.search(r'"box_class": "([^"]+)"', body)
        assert box and body == live_input._block_html(box[1]), "another live-typing block"
        return ""
    if body == row_pick.SCRIPT:  # a click on a row types its ID: a constant, no user text
        return ""
    if body.startswith('<nav class="tp-nav"'):  # the menu: the same constant for every session
        assert body in {page_menu.html_menu(page.title) for page in site.PAGES}, "another menu"
        return ""
    if copy_line._JS not in body:
        return body
    assert body.count(copy_line._JS) == 1, "a copy line with two scripts"
    button = re.search(r'<button type="button" class="tp-copy-button"[^>]*>.*?</button>', body)
    assert button, "a copy line without its button"
    return body.replace(copy_line._JS, "").replace(button[0], "")


def uses_class(markup: str, cls: str) -> bool:
    """``markup`` has an element of class ``cls`` (the CSS block names every class)."""
    return any(cls in e[1].get("class", "").split() for e in elements(markup))


def one_view(bodies: list[str], marker: str) -> str:
    """The single ``st.html`` body containing ``marker`` (a class name of that view)."""
    hits = [b for b in bodies if uses_class(b, marker)]
    assert len(hits) == 1, f"{len(hits)} views contain {marker!r}"
    return hits[0]


def test_tokenize_page_escapes_chips_pretokens_and_trace(tok: Tokenizer) -> None:
    """Tokenize: chips (IDs inline or not, GPT-2 view or not), pre-tokens and the trace of
    each attack, all in one run of the page."""
    at = open_page(TOKENIZE, ("attack", tok))
    at.text_area[0].set_value(TEXT).run()
    for show_ids, gpt2_view in ((True, False), (False, True)):
        at.toggle(key="_w.tok.show_ids").set_value(show_ids).run()
        at.toggle(key="_w.tok.gpt2_view").set_value(gpt2_view).run()
        for attack in (ATTACK, ATTACK2):
            # Tokenize's tabs are lazy (only the open one is built): the trace, then the
            # pre-tokens, each checked in its own run
            at.session_state["tok.tab"] = "🔍 Why this split"
            at.run()
            at.selectbox(key="_w.tok.word").set_value(attack).run()
            trace = one_view(page_html(at), "tp-rank")
            at.session_state["tok.tab"] = "✂️ Pre-tokens"
            at.run()
            bodies = page_html(at)
            pre = [b for b in bodies if 'title="pre-token #' in b]
            assert len(pre) == 1
            chip_views = [b for b in bodies if 'title="ID ' in b]
            assert len(chip_views) == 1
            for a in (ATTACK, ATTACK2):
                assert_in_one_chip(chip_views[0], shown(a, gpt2_view=gpt2_view))
                assert_in_one_chip(pre[0], chips.visible(a))
                assert (f"<sub>{attack_id(tok, a)}</sub>" in chip_views[0]) is show_ids
            assert_in_one_chip(chip_views[0], SPECIAL_ATTACK)
            assert_in_one_chip(trace, shown(attack, gpt2_view=gpt2_view))
            last = tok.merge_trace(attack)[-1]
            pair = " + ".join(chips.token_label(p, gpt2_view=gpt2_view) for p in last.pair)
            assert html.escape(f"#{last.rank + 1} · {pair}") in trace and pair not in trace


def test_decode_page_escapes_text_and_id_chips(tok: Tokenizer) -> None:
    """Decode: the attacks' IDs give the attacks back as text, escaped, and one chip each."""
    at = open_page(DECODE, ("attack", tok))
    ids = [attack_id(tok, ATTACK), attack_id(tok, ATTACK2)]
    at.text_area[0].set_value(", ".join(map(str, ids))).run()
    bodies = page_html(at)
    text_view = one_view(bodies, "tp-text")
    box = next(e for e in elements(text_view) if e[1].get("class") == "tp-text")
    assert box[2] == ATTACK + ATTACK2
    assert html.escape(ATTACK + ATTACK2) in text_view
    id_view = one_view(bodies, "tp-chip")
    for attack in (ATTACK, ATTACK2):
        assert_in_one_chip(id_view, shown(attack))
    assert not tables(at)  # the table's expander is lazy: built only while open
    at.session_state["dec.table"] = True
    at.run()
    table = one_view(page_html(at), "tp-table")  # HTML (ui.html_table): escaped, only ours
    assert [r["piece"] for r in parse_tables(table)[0]] == [shown(ATTACK), shown(ATTACK2)]


def test_compare_page_escapes_chips_regions_and_labels(tok: Tokenizer) -> None:
    """Compare: the attack tokenizer (its label holds markup too) against a plain one."""
    at = open_page(COMPARE, (ATTACK_LABEL, tok), ("plain", plain_tokenizer()))
    at.multiselect[0].set_value([ATTACK_LABEL, "plain"]).run()
    at.text_area[0].set_value(TEXT).run()
    bodies = page_html(at)
    regions = one_view(bodies, "tp-regions")
    assert html.escape(ATTACK_LABEL) in regions and "<b>tok</b>" not in regions
    numbers = one_view(bodies, "tp-table")  # the numbers table (ui.html_table)
    assert [r["tokenizer"] for r in parse_tables(numbers)[0]] == [ATTACK_LABEL, "plain"]
    chip_views = [b for b in bodies if 'title="ID ' in b]
    assert len(chip_views) == 2
    attack_view = next(b for b in chip_views if html.escape(shown(ATTACK)) in b)
    for attack in (ATTACK, ATTACK2):
        assert_in_one_chip(attack_view, shown(attack))
        assert_in_one_chip(regions, chips.visible(attack))
    assert_in_one_chip(attack_view, SPECIAL_ATTACK)
    names = [m.proto for m in at.markdown if "tokens" in m.proto.body]
    # the label as literal Markdown (ui.display.escaped: no `<b>` markup, no `&` entity)
    assert any(escaped(ATTACK_LABEL) in p.body and not p.allow_html for p in names)


def test_vocabulary_page_escapes_row_and_merge_tree(tok: Tokenizer) -> None:
    """Vocabulary: the attack's row (an HTML table), its GPT-2 form (markdown without HTML)
    and its merge tree (HTML)."""
    at = open_page(VOCAB, ("attack", tok))
    at.text_input(key="_w.voc.search").set_value("alert(").run()
    page_html(at)
    (table,) = tables(at)  # HTML: the token escaped, read back as the text a reader sees
    rows = {row["ID"]: row for row in table}
    for attack in (ATTACK, ATTACK2, GROUP_ATTACK):
        assert rows[attack_id(tok, attack)]["token"] == chips.visible(attack)
    for attack in (ATTACK, ATTACK2):
        token_id = attack_id(tok, attack)
        at.number_input(key="_w.voc.token").set_value(token_id).run()
        bodies = page_html(at)
        assert any(to_gpt2_str(attack.encode()) in m.proto.body and not m.proto.allow_html
                   for m in at.markdown)
        labels = tree_labels(one_view(bodies, "tp-mtree"))
        rank = tok.merge_tree(token_id).rank
        assert labels[0] == f"{shown(attack)}\nID {token_id} · merge #{rank + 1}"


# ---- alerts: messages that quote user text (IDs typed, link values, file names) -------------

MD_ATTACK = "**bold** [link](javascript:alert(5)) :red[red] $x$ <b>b</b>"


def test_decode_warning_quotes_bad_items_literally(tok: Tokenizer) -> None:
    """Decode lists the items that are not IDs: each as the user typed it, not as Markdown."""
    at = open_page(DECODE, ("attack", tok))
    at.text_area[0].set_value(f"12 {MD_ATTACK}").run()
    bodies = [w.proto.body for w in at.warning]
    assert any("are not token IDs" in b for b in bodies), bodies
    body = next(b for b in bodies if "are not token IDs" in b)
    for word in ("**bold**", "[link](javascript:alert(5))", ":red[red]", "$x$", "<b>b</b>"):
        assert word not in body, (word, body)
    assert "\\*\\*bold\\*\\*" in body and "\\[link\\]" in body


def test_show_error_quotes_the_error_literally() -> None:
    """Errors from core name user files and ids: ui.widgets.show_error shows them literally."""
    from core.errors import FormatError
    from ui.display import message

    script = (
        "from core.errors import FormatError\n"
        "from ui.widgets import show_error\n"
        f"show_error(FormatError({MD_ATTACK + ' is not a tokenizer file'!r}))\n"
    )
    at = AppTest.from_string(script, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    (body,) = [e.proto.body for e in at.error]
    assert body == message(str(FormatError(MD_ATTACK + " is not a tokenizer file")))
    assert "**bold**" not in body


# ---- alerts: link notes, labels, errors and Decode's bad items, each shown literally ---------
# A note is Markdown: a link's value goes in as a code span (ui.link_targets.shown, made by
# ui.display.code_span), a label, a file name or an error's words escaped (ui.display.escaped).

MD_LABEL = "**bold**<b>x</b> $x$ :red[r] [l](javascript:alert(6)).json"  # a file name, say
LINK_VALUES = ["**bold**<b>x</b>", "$x$", ":material/home: :smile:", "a`b `` c"]


def link_problems(at: AppTest) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [w.proto.body for w in at.warning if w.proto.body.startswith("Link problem: ")]


def open_link(page_script: str, params: dict[str, str],
              *tokenizers: tuple[str, Tokenizer]) -> AppTest:
    """``page_script`` opened with the query ``params``, ``tokenizers`` in the session."""
    at = AppTest.from_file(HOME, default_timeout=120)
    if tokenizers:
        at.session_state["ui.tokenizers"] = {
            label: {"tok": t, "source": "test", "fingerprint": fingerprint(t)}
            for label, t in tokenizers}
        at.session_state["ui.active"] = tokenizers[0][0]
    at.run()
    at.switch_page(page_script)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    return at


@pytest.mark.parametrize("value", LINK_VALUES)
def test_link_problem_shows_the_value_and_the_fallback_label_literally(
        tok: Tokenizer, value: str) -> None:
    """``tok=`` names no tokenizer: the note quotes the value (a code span that holds it
    exactly: backticks, ``:material/`` and all) and the tokenizer shown instead (a label
    the user chose, escaped)."""
    from ui.display import code_span

    at = open_link(TOKENIZE, {"tok": value}, (MD_LABEL, tok))
    (body,) = link_problems(at)
    assert f"the tokenizer {code_span(value)}, which this server does not know" in body
    assert body.endswith(f"Showing “{escaped(MD_LABEL)}” instead.")
    assert MD_LABEL not in body


def test_link_note_keeps_a_value_as_typed() -> None:
    """Evaluate's ``src=`` names a text the server does not keep: its name shows as typed
    (a note's first letter is upper-cased, never the rest)."""
    from ui.display import code_span

    at = open_link(page("Evaluate").script, {"src": "file:0123:MyNotes **B**.TXT"})
    (body,) = link_problems(at)
    assert body.startswith(f"Link problem: The text {code_span('MyNotes **B**.TXT')}: ")


def test_link_conversation_note_shows_the_role_literally(tok: Tokenizer) -> None:
    role = "**wizard** $x$ <b>"
    at = open_link(TOKENIZE, {"mode": "chat", "chat": f'[["{role}", "hi"]]'}, ("attack", tok))
    (body,) = link_problems(at)
    assert f"message 1 has the role “{escaped(role)}”" in body and role not in body


def test_unlinkable_tokenizer_note_shows_its_label_literally(tok: Tokenizer) -> None:
    """The link's "What it leaves out" names the session's tokenizer: a label, escaped."""
    at = open_link(TOKENIZE, {}, (MD_LABEL, tok))
    notes = [i.proto.body for i in at.info if "lives only in" in i.proto.body]
    assert notes and all(n.startswith(f"“{escaped(MD_LABEL)}” lives only in") for n in notes)


def test_a_tokenizer_that_cannot_load_is_named_with_its_reason_literally(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from core.errors import PlaygroundError
    from ui import cache

    reason = "the file **gpt2** $x$ <b>.tiktoken is damaged"

    def broken(name: str) -> Tokenizer:
        raise PlaygroundError(reason)

    monkeypatch.setattr(cache, "preset", broken)
    at = AppTest.from_file(HOME, default_timeout=120)
    at.run()
    at.switch_page(DECODE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (body,) = [w.proto.body for w in at.warning if "cannot be loaded" in w.proto.body]
    assert f"cannot be loaded ({escaped(reason)})" in body and reason not in body


def test_reopened_work_names_the_failure_literally(monkeypatch: pytest.MonkeyPatch) -> None:
    """A link's workspace (``ws=``) holds a tokenizer that cannot be rebuilt: the note
    quotes the label and the loader's error (which names the user's file) literally."""
    from ui import workspace

    error = "**my** file $x$.json is damaged"

    def broken(recipe: str) -> Tokenizer:
        raise ValueError(error)

    monkeypatch.setattr(workspace, "_rebuild", broken)  # (the script imports this module)
    script = (
        "import streamlit as st\n"
        "from ui import workspace\n"
        "for note in workspace._restore_tokenizers([{'label': '*a*', 'recipe': {}}]):\n"
        "    st.warning(note)\n"
    )
    at = AppTest.from_string(script, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    (body,) = [w.proto.body for w in at.warning]
    assert body == f"“{escaped('*a*')}” could not be reopened ({escaped(error)})."


def test_export_failures_show_their_reason_literally() -> None:
    from ui.display import message

    failure = "**x**.tiktoken (tiktoken rank file) is not offered: token `a` $b$ <b>"
    script = ("from ui.widgets import show_export_failures\n"
              f"show_export_failures([{failure!r}], others=False)\n")
    at = AppTest.from_string(script, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [w.proto.body for w in at.warning] == [message(failure) + "."]


def test_decode_bad_items_from_the_brief_show_literally(tok: Tokenizer) -> None:
    from tests.markdown_text import shown as read

    at = open_page(DECODE, ("attack", tok))
    at.text_area[0].set_value("12 <b>x</b> [](javascript:alert(1)) $x$").run()
    (body,) = [w.proto.body for w in at.warning if "are not token IDs" in w.proto.body]
    assert read(body) == ("3 item(s) are not token IDs and were skipped:\n"
                          "- item 2 '<b>x</b>' is not an integer\n"
                          "- item 3 '[](javascript:alert(1))' is not an integer\n"
                          "- item 4 '$x$' is not an integer")
    for raw in ("<b>", "[](", "$x$"):
        assert raw not in body


# ---- alerts: a file name in the uploader's note, the Train and Replay pages' messages ------


def test_an_unknown_rank_file_is_named_literally_in_the_pattern_note() -> None:
    """A rank file we do not know needs a pattern: the note names the user's file."""
    import base64

    from core.errors import PatternNeededError
    from ui.display import message

    name = MD_LABEL.replace(".json", ".tiktoken")
    ranks = "\n".join(f"{base64.b64encode(bytes([i])).decode()} {i}" for i in range(256))
    at = AppTest.from_string("from ui.widgets import tokenizer_uploader\n"
                             "tokenizer_uploader('up')\n", default_timeout=60).run()
    at.file_uploader(key="up").set_value([(name, ranks.encode(), "text/plain")]).run()
    assert not at.exception, [e.value for e in at.exception]
    (body,) = [w.proto.body for w in at.warning]
    with pytest.raises(PatternNeededError) as err:
        from core.formats.detect import load_tokenizer_files

        load_tokenizer_files({name: ranks.encode()})
    assert body == f"{message(str(err.value))} Pick it under **Pre-tokenizer pattern** above."
    assert body.startswith(escaped(name)) and name not in body


class _OneJob:
    """A training manager holding one ended job (the Train page reads only these)."""

    def __init__(self, snap: object) -> None:
        self.snap = snap

    def snapshot(self, job_id: str) -> object:
        return self.snap

    def status(self, job_id: str) -> str:
        return self.snap.status  # type: ignore[attr-defined]

    def advance(self, job_id: str, budget: float = 0.0) -> None:
        pass


@pytest.mark.parametrize("status", ["failed", "stopped"])
def test_train_shows_a_jobs_error_and_notes_literally(
        status: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A training's error and notes are core's words, which may quote a special token or a
    file: shown literally."""
    from tests.markdown_text import shown as read
    from training.snapshot import JobSnapshot
    from ui import keys, training

    words = f"special token {MD_ATTACK!r} is listed twice"
    snap = JobSnapshot(
        job_id="j", status=status, queue_position=None, vocab_size=256, special_tokens=(),
        pattern="gpt2", corpus_name="c", corpus_bytes=1, rows=(), count_progress=None,
        vocab={i: bytes([i]) for i in range(256)}, merges=[], stop_reason=None,
        messages=(words,), error=words)
    monkeypatch.setattr(training, "training_manager", lambda: _OneJob(snap))
    at = AppTest.from_file(str(REPO / page("Train").script), default_timeout=60)
    at.session_state[keys.TRAIN_JOB] = "j"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    alerts = at.error if status == "failed" else at.info
    (body,) = [a.proto.body for a in alerts if "listed twice" in a.proto.body]
    assert read(body) == words and "**bold**" not in body


def test_replay_names_a_kind_that_quotes_the_file_literally() -> None:
    """Replay refuses a tokenizer with no merge order, naming its kind, which may quote the
    file (a tokenizer.json's end-of-word suffix)."""
    from core.pipeline.hf import pipeline_from_hf_json
    from tests.markdown_text import shown as read

    suffix = "**w** $x$"
    doc = {"model": {"type": "BPE", "end_of_word_suffix": suffix, "merges": ["a b"],
                     "vocab": {"a": 0, "b": 1, "ab": 2}}}
    tok = pipeline_from_hf_json(doc, name="tokenizer.json")
    assert suffix in tok.kind
    at = open_page(page("Replay").script, ("suffix", tok))
    (body,) = [i.proto.body for i in at.info if "no merge order" in i.proto.body]
    assert f"this one is a {tok.kind}. Its tokens" in read(body) and suffix not in body

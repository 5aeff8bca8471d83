"""ui/chips.py: token chips are escaped HTML with visible whitespace, hex on hover, partial
UTF-8 groups, and U+FFFD linked to the IDs that made it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest

from ui import chips, merge_tree

INJECTION = "<img src=x onerror=alert(1)>"


@dataclass(frozen=True)
class Span:  # same fields as core.engine.details.TokenSpan
    index: int
    id: int
    token: bytes
    start: int
    end: int
    text: str
    is_special: bool = False
    partial: bool = False
    group: int = 0
    pretoken: int = 0


@dataclass(frozen=True)
class Piece:  # same fields as core.engine.details.DecodedPiece
    index: int
    id: int
    token: bytes | None
    hex: str
    text: str
    out_of_vocab: bool = False


def spans_for(text: str) -> list[Span]:
    """One span per character (a stand-in for a real encoding)."""
    return [Span(i, 100 + i, ch.encode(), i, i + 1, ch, group=i) for i, ch in enumerate(text)]


def body(markup: str) -> str:
    """The markup without its CSS block."""
    return re.sub(r"<style>.*?</style>", "", markup, flags=re.S).strip()


def user_text_outside_tags(markup: str) -> str:
    """The markup with the CSS block and every tag removed: only text content remains."""
    return re.sub(r"<[^>]*>", "", body(markup))


def test_injection_is_escaped_in_chips() -> None:
    span = Span(0, 7, INJECTION.encode(), 0, len(INJECTION), INJECTION)
    out = chips.chips_html([span], text=INJECTION)
    assert "<img" not in out
    assert "&lt;img·src=x·onerror=alert(1)&gt;" in out  # spaces made visible


@pytest.mark.parametrize("show_ids", [True, False])
@pytest.mark.parametrize("gpt2_view", [True, False])
def test_no_raw_angle_bracket_from_user_text(show_ids: bool, gpt2_view: bool) -> None:
    # Real spans from a tokenizer in which INJECTION and ATTACK2 are ONE token each: split
    # over one chip per character, "<img" never appears in one piece, escaped or not.
    from tests.test_escaping import ATTACK2, attack_tokenizer

    text = INJECTION + ' "quoted" & \'single\' ' + ATTACK2  # ATTACK2: "'& </div><script>…
    tokens = attack_tokenizer().encode_details(text).tokens
    assert {INJECTION.encode(), ATTACK2.encode()} <= {t.token for t in tokens}
    out = chips.chips_html(tokens, text=text, show_ids=show_ids, gpt2_view=gpt2_view)
    # Every tag left in the output is one of ours.
    tags = set(re.findall(r"<\s*/?\s*([a-zA-Z]+)", body(out)))
    assert tags <= {"div", "span", "sub", "br"}
    assert "<" not in user_text_outside_tags(out)
    assert "<script" not in out and "<img" not in out


def test_attribute_values_are_escaped() -> None:
    text = '" onmouseover="alert(1)'
    span = Span(0, 1, text.encode(), 0, len(text), text, is_special=True)
    out = chips.chips_html([span], text=text)
    assert 'onmouseover="' not in out
    assert "&quot;" in out


def test_whitespace_is_visible_and_newline_breaks_line() -> None:
    text = "a b\tc\n"
    out = chips.chips_html(spans_for(text), text=text, show_ids=False)
    content = user_text_outside_tags(out)
    assert content == "a·b→c↵"
    assert out.count("<br>") == 1


def test_ids_inline_and_hex_on_hover() -> None:
    span = Span(0, 464, b" the", 0, 4, " the")
    out = chips.chips_html([span], text=" the", show_ids=True)
    assert "<sub>464</sub>" in out
    assert "bytes 20 74 68 65" in out
    assert "<sub>" not in chips.chips_html([span], text=" the", show_ids=False)


def test_gpt2_view_shows_g_dot() -> None:
    span = Span(0, 262, b" the\n", 0, 5, " the\n")
    assert "Ġthe" in chips.chips_html([span], text=" the\n", gpt2_view=True)
    assert "·the↵" in chips.chips_html([span], text=" the\n", gpt2_view=False)


def test_partial_tokens_grouped_under_their_character() -> None:
    # "你" is e4 bd a0: two tokens, neither a whole character.
    text = "你!"
    spans = [
        Span(0, 1, b"\xe4\xbd", 0, 1, "", partial=True, group=0),
        Span(1, 2, b"\xa0", 0, 1, "", partial=True, group=0),
        Span(2, 3, b"!", 1, 2, "!", group=1),
    ]
    out = chips.chips_html(spans, text=text)
    assert out.count('class="tp-grp"') == 1
    assert body(out).count("tp-partial") == 2
    group = out[out.index('class="tp-grp"'):]
    assert "你" in group.split("</span></span>")[0]
    assert "\\xe4\\xbd" in out  # partial bytes shown as escapes
    assert "2 tokens make" in out


def test_special_token_distinct() -> None:
    span = Span(0, 0, b"<|endoftext|>", 0, 13, "<|endoftext|>", is_special=True)
    out = chips.chips_html([span], text="<|endoftext|>")
    assert "tp-special" in out
    assert "&lt;|endoftext|&gt;" in out


def test_limit_caps_chips() -> None:
    text = "x" * 50
    out = chips.chips_html(spans_for(text), text=text, limit=10)
    assert out.count('class="tp-chip"') == 10


def test_decoded_text_highlights_fffd_with_ids() -> None:
    out = chips.decoded_text_html("a\ufffd<b>", [(1, [1])], [97, 255, 60])
    assert body(out).count("tp-fffd") == 1
    assert "ID 255" in out
    assert "&lt;b&gt;" in out and "<b>" not in out


def test_id_chips_share_replacement_number_and_flag_oov() -> None:
    pieces = [
        Piece(0, 97, b"a", "61", "a"),
        Piece(1, 255, b"\xff", "ff", "\ufffd"),
        Piece(2, 10**6, None, "", "\ufffd", out_of_vocab=True),
    ]
    out = chips.id_chips_html(pieces, [(1, [1]), (2, [2])])
    assert "not in the vocabulary" in out
    assert "makes U+FFFD #1" in out
    assert "<sup>1</sup>" in out and "<sup>2</sup>" in out


def test_word_chips_escape_and_mark_unknown() -> None:
    out = chips.word_chips_html([INJECTION, "<|unk|>"], [3, 0], unk_id=0)
    assert "<img" not in out
    assert "tp-oov" in out


def test_regions_and_pretokens_escape() -> None:
    @dataclass
    class Region:
        text: str
        pieces: dict[str, list[str]]

    out = chips.regions_html([Region(INJECTION, {"a": [INJECTION], "b": ["<", "img"]})],
                             ["a", "<b>"])
    assert "<img" not in out and "<b>" not in out
    out = chips.pretokens_html(INJECTION, [(0, 4), (4, len(INJECTION))])
    assert "<img" not in out


def test_merge_tree_escapes_quotes_and_markup() -> None:
    @dataclass
    class Node:
        id: int
        token: bytes
        rank: int | None = None
        left: Node | None = None
        right: Node | None = None
        special: bool = False

    tree = Node(300, b'"\\<', 0, Node(34, b'"'), Node(92, b"\\<"))
    out = merge_tree.merge_tree_html(tree)
    assert out.count('class="tp-mt-box') == 3
    assert '<code>&quot;\\&lt;</code><span class="tp-mt-id">ID 300 · merge #1</span>' in out


def test_control_bytes_shown_as_escapes() -> None:
    assert chips.token_label(b"\x00\x1b\x7f") == "\\x00\\x1b\\x7f"
    assert chips.token_label(b"\r\n") == "␍↵"


# ---- exact markup (mutation testing: every class, title, colour, label and tag counts) -----------


class _Markup(HTMLParser):
    """Markup as a list of start tags (attributes sorted), end tags and text, entities
    resolved: equal lists render the same (tag-name case and attribute order aside)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.items.append(("<", tag, tuple(sorted(attrs))))

    def handle_endtag(self, tag: str) -> None:
        self.items.append(("/", tag))

    def handle_data(self, data: str) -> None:
        self.items.append(("text", data))


def markup(html_text: str) -> list[tuple]:
    parser = _Markup()
    parser.feed(html_text)
    parser.close()
    return parser.items


def assert_same_markup(out: str, expected_body: str) -> None:
    """``out`` is the CSS block followed by exactly ``expected_body`` (escaping included:
    a raw ``<`` from user text would parse as a tag)."""
    assert markup(out) == markup(chips.CSS + expected_body)


PARTIAL = " · partial UTF-8: not a whole character on its own"


def group_spans() -> list[Span]:
    """ "a你!\n<|x|>": a chip, 你 cut in two partial tokens (a group not at the start), a
    chip ending in a newline, a special token."""
    return [
        Span(0, 97, b"a", 0, 1, "a", group=0),
        Span(1, 300, b"\xe4\xbd", 1, 2, "\ufffd", partial=True, group=1),
        Span(2, 301, b"\xa0", 1, 2, "\ufffd", partial=True, group=1),
        Span(3, 33, b"!\n", 2, 4, "!\n", group=2),
        Span(4, 256, b"<|x|>", 4, 9, "<|x|>", is_special=True, group=3),
    ]


def test_chips_exact_markup_with_group_special_and_default_ids() -> None:
    out = chips.chips_html(group_spans(), text="a你!\n<|x|>")  # show_ids defaults to True
    assert_same_markup(out, (
        '<div class="tp-chips">'
        '<span class="tp-chip" style="background:#cfe8ff" title="ID 97 · #0 · bytes 61">'
        "a<sub>97</sub></span>"
        '<span class="tp-grp" title="2 tokens make “你”"><span class="tp-grp-char">你</span>'
        f'<span class="tp-chip tp-partial" style="background:#ffe0b3" '
        f'title="ID 300 · #1 · bytes e4 bd{PARTIAL}">\\xe4\\xbd<sub>300</sub></span>'
        f'<span class="tp-chip tp-partial" style="background:#d4f5d0" '
        f'title="ID 301 · #2 · bytes a0{PARTIAL}">\\xa0<sub>301</sub></span>'
        "</span>"
        '<span class="tp-chip" style="background:#ffd6e0" title="ID 33 · #3 · bytes 21 0a">'
        "!↵<sub>33</sub></span><br>"
        '<span class="tp-chip tp-special" '
        'title="ID 256 · #4 · bytes 3c 7c 78 7c 3e · special token">'
        "&lt;|x|&gt;<sub>256</sub></span>"
        "</div>"
    ))


def test_chips_gpt2_view_reaches_grouped_chips_and_no_text_gives_generic_frame() -> None:
    out = chips.chips_html(group_spans(), show_ids=False, gpt2_view=True)  # no text given
    assert_same_markup(out, (
        '<div class="tp-chips">'
        '<span class="tp-chip" style="background:#cfe8ff" title="ID 97 · #0 · bytes 61">a</span>'
        '<span class="tp-grp" title="partial UTF-8 group">'
        f'<span class="tp-chip tp-partial" style="background:#ffe0b3" '
        f'title="ID 300 · #1 · bytes e4 bd{PARTIAL}">ä½</span>'
        f'<span class="tp-chip tp-partial" style="background:#d4f5d0" '
        f'title="ID 301 · #2 · bytes a0{PARTIAL}">ł</span>'
        "</span>"
        '<span class="tp-chip" style="background:#ffd6e0" title="ID 33 · #3 · bytes 21 0a">'
        "!Ċ</span><br>"
        '<span class="tp-chip tp-special" '
        'title="ID 256 · #4 · bytes 3c 7c 78 7c 3e · special token">'
        "&lt;|x|&gt;</span>"
        "</div>"
    ))


def test_chips_group_of_three_partial_tokens_holds_exactly_those_three() -> None:
    # 🙂 is f0 9f 99 82, cut into three tokens; "!" after it is not part of the frame
    text = "🙂!"
    spans = [
        Span(0, 300, b"\xf0\x9f", 0, 1, "\ufffd", partial=True, group=0),
        Span(1, 301, b"\x99", 0, 1, "\ufffd", partial=True, group=0),
        Span(2, 302, b"\x82", 0, 1, "\ufffd", partial=True, group=0),
        Span(3, 33, b"!", 1, 2, "!", group=1),
    ]
    out = chips.chips_html(spans, text=text, show_ids=False)
    frame, _, rest = body(out).partition("</span></span>")
    assert frame.count('class="tp-chip tp-partial"') == 3
    assert "3 tokens make “🙂”" in frame
    assert rest == ('<span class="tp-chip" style="background:#ffd6e0" '
                    'title="ID 33 · #3 · bytes 21">!</span></div>')


def test_a_zero_width_joiner_frame_is_labelled_by_name() -> None:
    """GPT-2 cuts 👨‍👩‍👧 into one frame per character: the frames of the two zero-width joiners
    (U+200D, which draws nothing) say "⟨ZWJ⟩" instead of an empty label, and no title holds a
    Python escape."""
    from core.formats.presets import load_preset

    text = "family 👨\u200d👩\u200d👧"
    out = chips.chips_html(load_preset("gpt2").encode_details(text).tokens, text=text)
    labels = re.findall(r'<span class="tp-grp-char">([^<]*)</span>', out)
    assert labels == ["·👨", "⟨ZWJ⟩", "👩", "⟨ZWJ⟩", "👧"]
    titles = re.findall(r'<span class="tp-grp" title="([^"]*)"', out)
    assert titles == ["2 tokens make “·👨”", "2 tokens make “⟨ZWJ⟩”", "2 tokens make “👩”",
                      "2 tokens make “⟨ZWJ⟩”", "2 tokens make “👧”"]
    assert "\\u" not in out


def test_label_text_names_what_draws_nothing_and_keeps_the_rest() -> None:
    assert chips.label_text(" 👨\u200d👩\n") == "·👨⟨ZWJ⟩👩↵"
    assert chips.label_text("a\u200bb\u00ad\ufeff") == "a⟨ZWSP⟩b⟨SHY⟩⟨BOM⟩"
    assert chips.label_text("\u200c\u200e\u200f\u2060\ufe0e") == "⟨ZWNJ⟩⟨LRM⟩⟨RLM⟩⟨WJ⟩⟨VS15⟩"
    assert chips.label_text("\ufe01\U000e0100\u2066") == "⟨U+FE01⟩⟨U+E0100⟩⟨U+2066⟩"
    assert chips.label_text("é日本\u0301") == "é日本\u0301"  # a combining accent draws: kept
    assert chips.label_text("<b>") == "<b>"  # not HTML: the callers escape it


def test_word_chips_exact_markup_unknown_and_limit() -> None:
    out = chips.word_chips_html(["a b", "<|unk|>", "c"], [5, 0, 7], unk_id=0, limit=2)
    assert_same_markup(out, (
        '<div class="tp-chips">'
        '<span class="tp-chip" style="background:#cfe8ff" title="ID 5">a·b<sub>5</sub></span>'
        '<span class="tp-chip tp-oov" title="ID 0 · unknown: this text is lost">'
        "&lt;|unk|&gt;<sub>0</sub></span>"
        "</div>"
    ))
    assert_same_markup(chips.word_chips_html(["a"], [1], show_ids=False), (
        '<div class="tp-chips">'
        '<span class="tp-chip" style="background:#cfe8ff" title="ID 1">a</span></div>'
    ))
    assert chips.word_chips_html(["a"] * 3, [1] * 3, limit=None).count('<span class="tp-chip') == 3


def test_distinct_pretokens_stop_at_the_limit() -> None:
    words = [f"w{i}" for i in range(600)]
    text = "".join(words)
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w)
    assert chips.distinct_pretokens(text, spans) == words[:500]  # the default limit
    assert chips.distinct_pretokens(text, spans, limit=3) == words[:3]
    assert chips.distinct_pretokens("a a b", [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)],
                                    limit=3) == ["a", " ", "b"]


def test_pretokens_exact_markup() -> None:
    out = chips.pretokens_html("a\n<b", [(0, 2), (2, 4)])
    assert_same_markup(out, (
        '<div class="tp-chips">'
        '<span class="tp-chip" style="background:#cfe8ff" title="pre-token #0: characters 0–2">'
        "a↵</span><br>"
        '<span class="tp-chip" style="background:#ffe0b3" title="pre-token #1: characters 2–4">'
        "&lt;b</span>"
        "</div>"
    ))


def test_pieces_exact_markup_highlight_and_default_view() -> None:
    out = chips.pieces_html([b" a", b"<c"], highlight=1)
    assert markup(out) == markup(
        '<span class="tp-chip" style="background:#cfe8ff" title="bytes 20 61">·a</span>'
        '<span class="tp-chip tp-new" style="background:#ffe0b3" title="bytes 3c 63">&lt;c</span>'
    )


def trace_tokenizer():
    from core.engine.tokenizer import Tokenizer

    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc", 258: b"\xef\xbf"}
    return Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c"), (b"\xef", b"\xbf")])


def test_trace_exact_markup_highlights_the_new_part() -> None:
    steps = trace_tokenizer().merge_trace(" cabc")
    assert [s.after for s in steps] == [[b" ", b"c", b"ab", b"c"], [b" ", b"c", b"abc"]]

    def row(label: str, parts: list[tuple[str, str, bool]], title: str = "") -> str:
        chips_ = "".join(
            f'<span class="tp-chip{" tp-new" if new else ""}" '
            f'style="background:{chips.PALETTE[k]}" title="bytes {hx}">{text}</span>'
            for k, (text, hx, new) in enumerate(parts)
        )
        rank = f'<span class="tp-rank" title="{title}">' if title else '<span class="tp-rank">'
        return f'<div class="tp-step">{rank}{label}</span>{chips_}</div>'

    def expected(sp: str) -> str:
        return (
            '<div class="tp-chips">'
            + row("bytes", [(sp, "20", False), ("c", "63", False), ("a", "61", False),
                            ("b", "62", False), ("c", "63", False)])
            + row("#1 · a + b", [(sp, "20", False), ("c", "63", False), ("ab", "61 62", True),
                                 ("c", "63", False)], "merge 1")  # merges count from 1
            + row("#2 · ab + c", [(sp, "20", False), ("c", "63", False),
                                  ("abc", "61 62 63", True)], "merge 2")
            + "</div>"
        )

    assert_same_markup(chips.trace_html(" cabc", steps), expected("·"))  # default: not GPT-2
    assert_same_markup(chips.trace_html(" cabc", steps, gpt2_view=True), expected("Ġ"))


def test_trace_without_merges_starts_from_the_utf8_bytes() -> None:
    out = chips.trace_html("é", [])
    assert_same_markup(out, (
        '<div class="tp-chips"><div class="tp-step"><span class="tp-rank">bytes</span>'
        '<span class="tp-chip" style="background:#cfe8ff" title="bytes c3">\\xc3</span>'
        '<span class="tp-chip" style="background:#ffe0b3" title="bytes a9">\\xa9</span>'
        "</div></div>"
    ))


def test_trace_of_a_lone_surrogate_starts_from_the_bytes_bpe_saw() -> None:
    # encode (and merge_trace) turn a lone surrogate into U+FFFD's bytes ef bf bd
    steps = trace_tokenizer().merge_trace("\ud800")
    assert steps[0].before == [b"\xef", b"\xbf", b"\xbd"]
    out = chips.trace_html("\ud800", steps)
    first = body(out).split("</div>")[0]
    assert first.count('class="tp-chip"') == 3 and 'title="bytes bd"' in first


def test_regions_exact_markup() -> None:
    @dataclass
    class Region:
        text: str
        pieces: dict[str, list[str]]

    out = chips.regions_html([Region("a b", {"x": ["a", " b"], "y": ["a b"]})], ["x", "y", "z"])
    assert_same_markup(out, (
        '<table class="tp-regions"><thead><tr><th>text</th><th>x</th><th>y</th><th>z</th>'
        "</tr></thead><tbody>"
        "<tr><td><code>a·b</code></td>"
        '<td class="tp-chips"><span class="tp-chip" style="background:#cfe8ff">a</span>'
        '<span class="tp-chip" style="background:#ffe0b3">·b</span></td>'
        '<td class="tp-chips"><span class="tp-chip" style="background:#cfe8ff">a·b</span></td>'
        '<td class="tp-chips"></td>'
        "</tr></tbody></table>"
    ))


def test_decoded_text_exact_markup_numbers_colours_and_ids() -> None:
    # U+FFFD #1 from piece 0; a U+FFFD that was in the text (no replacement: plain); U+FFFD #2
    # from pieces 2 and 3, where piece 3 has no ID in the list
    out = chips.decoded_text_html("\ufffda\ufffdb\ufffd", [(0, [0]), (4, [2, 3])], [999, 97, 228])
    assert_same_markup(out, (
        '<div class="tp-text">'
        '<span class="tp-fffd" style="background:#ffb4b4" title="U+FFFD #1 from #0 (ID 999)">'
        "\ufffd<sup>1</sup></span>"
        "a\ufffdb"
        '<span class="tp-fffd" style="background:#ffd08a" title="U+FFFD #2 from #2 (ID 228), #3">'
        "\ufffd<sup>2</sup></span>"
        "</div>"
    ))


def test_id_chips_exact_markup_and_limit() -> None:
    pieces = [
        Piece(0, 97, b"a", "61", "a"),
        Piece(1, 228, b"\xe4", "e4", "\ufffd"),
        Piece(2, 999, None, "", "\ufffd", out_of_vocab=True),
        Piece(3, 98, b"b", "62", "b"),
    ]
    out = chips.id_chips_html(pieces, [(1, [1]), (2, [2])], limit=3)
    assert_same_markup(out, (
        '<div class="tp-chips">'
        '<span class="tp-chip" style="background:#cfe8ff" title="#0 · ID 97 · bytes 61">'
        "a<sub>97</sub></span>"
        '<span class="tp-chip" style="background:#ffb4b4" '
        'title="#1 · ID 228 · makes U+FFFD #1 · bytes e4">\\xe4<sub>228</sub><sup>1</sup></span>'
        '<span class="tp-chip tp-oov" title="#2 · ID 999 · not in the vocabulary">'
        "∅<sub>999</sub><sup>2</sup></span>"
        "</div>"
    ))
    assert chips.id_chips_html(pieces, []).count('<span class="tp-chip') == 4  # no limit


def test_pieces_table_exact_rows() -> None:
    rows = chips.pieces_table([Piece(0, 32, b" ", "20", " "),
                               Piece(1, 999, None, "", "\ufffd", out_of_vocab=True)])
    assert rows == [
        {"#": 0, "ID": 32, "bytes": "20", "piece": "·", "GPT-2 form": "Ġ"},
        {"#": 1, "ID": 999, "bytes": "", "piece": "∅ not in vocab", "GPT-2 form": ""},
    ]


@dataclass
class Node:  # same fields as core.engine.details.MergeNode
    id: int
    token: bytes
    rank: int | None = None
    left: Node | None = None
    right: Node | None = None
    special: bool = False


def test_merge_tree_html_exact() -> None:
    out = merge_tree.merge_tree_html(Node(300, b"ab", 0, Node(97, b"a"), Node(98, b"b")))
    tree, css = out.split("<style>")
    assert tree == (
        # the font size fitting 11.0 em (two leaves of 5.3 em) in the column's width
        '<div class="tp-mtree">'
        '<div class="tp-mt-node" style="font-size:clamp(9px,calc(100cqw / 11.0),14px)">'
        '<div class="tp-mt-box tp-mt-merge" title="bytes 61 62"><code>ab</code>'
        '<span class="tp-mt-id">ID 300 · merge #1</span></div>'  # rank 0: merge 1
        '<div class="tp-mt-kids">'
        '<div class="tp-mt-node"><div class="tp-mt-box" title="bytes 61"><code>a</code>'
        '<span class="tp-mt-id">ID 97 · byte</span></div></div>'
        '<div class="tp-mt-node"><div class="tp-mt-box" title="bytes 62"><code>b</code>'
        '<span class="tp-mt-id">ID 98 · byte</span></div></div>'
        "</div></div></div>")
    assert ".tp-mt-merge{background:#cfe8ff}" in css  # a merged token's colour


def test_merge_tree_draws_at_most_200_nodes_by_default() -> None:
    tree = Node(97, b"a")
    for i in range(150):  # 301 nodes, each merge's left part the one before
        tree = Node(1000 + i, b"a" * (i + 2), i, tree, Node(97, b"a"))
    out = merge_tree.merge_tree_html(tree)
    assert out.count('class="tp-mt-box') == 200
    assert "… and 101 more node(s), not drawn" in out
    ids = re.findall(r"ID (\d+) ·", out)
    assert ids[:3] == ["1149", "1148", "1147"]  # parents first, left parts before right
    three = merge_tree.merge_tree_html(tree, max_nodes=3)
    assert re.findall(r"ID (\d+) ·", three) == ["1149", "1148", "1147"]
    assert "298 more" in three
    assert "more node" not in merge_tree.merge_tree_html(Node(97, b"a"))

"""ui/chips.py: token chips are escaped HTML with visible whitespace, hex on hover, partial
UTF-8 groups, and U+FFFD linked to the IDs that made it."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from ui import chips

INJECTION = "<img src=x onerror=alert(1)>"


@dataclass(frozen=True)
class Span:  # same fields as core.details.TokenSpan
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
class Piece:  # same fields as core.details.DecodedPiece
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


def test_merge_tree_dot_escapes_quotes() -> None:
    @dataclass
    class Node:
        id: int
        token: bytes
        rank: int | None = None
        left: Node | None = None
        right: Node | None = None

    tree = Node(300, b'"\\', 0, Node(34, b'"'), Node(92, b"\\"))
    dot = chips.merge_tree_dot(tree)
    assert dot.count("->") == 2
    assert 'label="\\"\\\\\\nID 300' in dot


def test_control_bytes_shown_as_escapes() -> None:
    assert chips.token_label(b"\x00\x1b\x7f") == "\\x00\\x1b\\x7f"
    assert chips.token_label(b"\r\n") == "␍↵"

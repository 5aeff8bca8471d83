"""tokplay_native.pretok (through core.engine.pretoken_split): the built-in patterns' cuts in C
give exactly ``regex``'s findall, on every code point and on generated text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import native
from core.engine import pretoken_split
from core.engine.pretokenize import PATTERNS, compile_pattern
from core.engine.tokenizer import Tokenizer

pytestmark = pytest.mark.skipif(native.pretok is None, reason="tokplay_native.pretok not built")

NAMES = ["gpt2", "cl100k", "llama3", "o200k", "tekken"]

#: Characters where the patterns' alternatives meet: every kind of whitespace, \r and \n, the
#: contractions' letters in both cases and the long s (U+017F, an s to `(?i)`), letters of
#: each case (Lu, Ll, Lt, Lm, Lo), marks (Mn, Mc, Me), numbers (Nd, Nl, No), '/', punctuation,
#: symbols, emoji, controls, a lone surrogate.
TRICKY = list(" \t\n\r\x0b\x0c\x1c\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000'sStTdDmMlLvVeErRſK"
              "aZéÉǅʰ日本ㅎ한\u0301\u0903\u20dd\u064b09٣Ⅻ½/.,!?-_\"#😀\u200d\U000e0041\x00\x7f\ud800")


def regex_cut(name: str, text: str) -> list[str]:
    return compile_pattern(name).findall(text)


def c_cut(name: str, text: str) -> list[str]:
    split = pretoken_split.splitter(name)
    assert split is not None
    return split(text)


@pytest.mark.parametrize("name", NAMES)
def test_every_code_point_in_a_row_and_in_contexts(name: str) -> None:
    """All of Unicode (surrogates included): once in order (long runs of one class), and
    each code point between the characters its class meets (a contraction's quote and
    letters, spaces, a line break, a number)."""
    everything = "".join(map(chr, range(0x110000)))
    assert c_cut(name, everything) == regex_cut(name, everything)
    for lo in range(0, 0x110000, 0x20000):
        chars = map(chr, range(lo, min(lo + 0x20000, 0x110000)))
        text = "".join(f"'{c}e {c}{c}\n {c}'ll7{c} \t" for c in chars)
        assert c_cut(name, text) == regex_cut(name, text), hex(lo)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=400, deadline=None)
@given(text=st.text(st.one_of(st.sampled_from(TRICKY), st.characters()), max_size=40))
def test_generated_text_cuts_as_regex(name: str, text: str) -> None:
    assert c_cut(name, text) == regex_cut(name, text)


def test_only_the_built_in_patterns_have_a_c_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NAMES:
        assert pretoken_split.splitter(name) is not None
        assert pretoken_split.splitter(PATTERNS[name]) is not None  # the regex itself
    assert pretoken_split.splitter(r"\w+|\s+") is None
    monkeypatch.setattr(native, "pretok", None)  # not built, or TOKPLAY_NATIVE=0
    assert pretoken_split.splitter("o200k") is None
    tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="o200k")
    assert tok.encode("日本 wörld") == list("日本 wörld".encode())  # `regex` cuts then


def test_a_block_is_filled_when_a_text_first_uses_it() -> None:
    pretok = native.pretok
    table = pretoken_split.CharClasses({name: getattr(pretok, name) for name in "LNSUW"})
    filled = []

    def fill(block: int) -> None:
        filled.append(block)
        table.fill(block)

    cut = pretok.Splitter(pretok.O200K, table.classes, table.known, fill)
    assert cut("abc") == ["abc"] and filled == [0]  # block 0 (U+0000..U+00FF) first
    assert cut("abc 日本 日") == ["abc", " 日本", " 日"]
    assert filled == [0, 0x65, 0x67]  # 日 (U+65E5) is in block 0x65, 本 (U+672C) in 0x67
    assert [b for b, k in enumerate(table.known) if k] == [0, 0x65, 0x67]
    assert cut("本日") == ["本日"] and len(filled) == 3  # known: not filled again
    assert table.classes[ord("A")] == pretok.L | pretok.U and table.classes[ord(" ")] == pretok.S


def test_the_splitter_checks_its_arguments() -> None:
    pretok = native.pretok
    with pytest.raises(ValueError, match="no pattern number 9"):
        pretok.Splitter(9, bytearray(0x110000), bytearray(0x1100), print)
    with pytest.raises(ValueError, match="0x110000"):
        pretok.Splitter(pretok.GPT2, bytearray(10), bytearray(0x1100), print)
    with pytest.raises(TypeError, match="fill must be callable"):
        pretok.Splitter(pretok.GPT2, bytearray(0x110000), bytearray(0x1100), None)
    cut = pretok.Splitter(pretok.GPT2, bytearray(0x110000), bytearray(0x1100), lambda b: None)
    with pytest.raises(TypeError):
        cut(b"bytes")
    with pytest.raises(RuntimeError, match=r"fill\(0\) left its block unknown"):
        cut("abc")


def test_a_pickled_tokenizer_cuts_in_c_where_it_lands() -> None:
    import pickle

    from core.formats.presets import load_preset

    tok = load_preset("gpt2")
    again = pickle.loads(pickle.dumps(tok))
    assert again._text._split is not None
    text = "Grüße, 世界! I'll  go\n\n"
    assert again.encode(text) == tok.encode(text)

"""core.pipeline.normalizers against Hugging Face ``tokenizers`` (the oracle).

Both sides read the same JSON. Compared: the normalized text (``normalize_str``) and each
output character's span against HF's alignment, read from an encoding with one token per
character. Inputs: fixed edge cases (many scripts, combining marks, compatibility characters,
whitespace and control characters), arbitrary Unicode (hypothesis), and every code point at
once for the Unicode tables the module carries.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.pipeline import normalizers as N
from core.pipeline import unicode_tables
from core.pipeline.piece import Piece, Span
from tests.conftest import need_module

EDGE_TEXTS = [
    "",
    " ",
    "Hello world",
    "  leading and trailing  ",
    "DON'T stop, I'LL go! don't",
    "Héllo Wörld café naïve",
    "e\u0301 a\u0308\u0323 \u1e9b\u0323 q\u0307\u0323 \u0315\u0301x",
    "İstanbul ß ẞ ﬁ ﬀ ﬃ Ａｂｃ ①② ㍿ ¼",
    "ΑΣ ὈΔΥΣΣΕΎΣ σς Ǆǅǆ ǰ",
    "中文字符 日本語 ひらがな カタカナ ｶﾞ ㋿",
    "한국어 텍스트 \u1100\u1161\u11a8 \u1100\u1161",
    "العربية مرحبا ﷺ",
    "हिन्दी देवनागरी क़",
    "ภาษาไทย ำ",
    "👩‍👩‍👧 👍🏽 🇫🇷 🏳️‍🌈",
    "tab\there\nnew\r\nline\x0b\x0c",
    "\u3000wide\u3000space\u00a0nbsp\u2009thin\u202f\u205f",
    "ctrl\x00\x01\x1c\x7f\x85\u200b\u200d\ufeff\ufffd\ue000",
    "12345 ٣٤٥ ²³ Ⅻ ½",
    "aaa" + " " * 40 + "b\t\t\t\n\n",
    "▁already▁metaspace ▁",
    "ĠÃ© byte chars Ċ",
    "\U0001fbf5\U00011935\U00011930 \u1c89 \U00010d50 new in Unicode 13-16",
    "<0x41> ## </w> <s> [CLS]",
    "x--y..z!! xxaxx abab",
    "\u0f73\u0f75 \u0344 \u0340\u0341 \u0cca \u0cc6\u0cc2",
    "a\u1dfa\u0301 e\u0898\u0301 \u0301\u1abf",  # marks newer than HF's tables
    "\u00d9\u07eb \u07eb\u00d9\u07eb\u07eb\u0315 \u01d8\u0323\u0344",  # decomposed + marks
    "\x1c\u3000 ends with what only Python calls space \x1f\x85",
]

#: Unicode text for hypothesis: anything but surrogates, with the tricky characters boosted.
TRICKY = (
    " \t\n\r\u3000\u00a0\u2028\x85\x00\x1c\u200b\ufeff\ufffd▁Ġ'"
    "\u0301\u0308\u0323\u0315\u0345\u0334\u3099\u309a\u0cc2\u1161\u11a8\u1100"
    "eaAİIßΣσﬁＡ①ẞ中한ｶﾞ\u0f73\u0344\U00011935\U00011930\U0001fbf5\u1c89\u1dfa\u0898"
)
CHARS = st.one_of(st.characters(exclude_categories=("Cs",)), st.sampled_from(TRICKY))
TEXT = st.text(CHARS, max_size=40)


@pytest.fixture(scope="module")
def tk() -> Any:
    return need_module("tokenizers")


def hf_tokenizer(tk: Any, **components: Any) -> Any:
    """A Hugging Face tokenizer with the given JSON components (and a trivial model)."""
    doc: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
    }
    doc.update(components)
    return tk.Tokenizer.from_str(json.dumps(doc))


def hf_alignments(tk: Any, normalizer: Any, text: str) -> tuple[str, list[Span]]:
    """HF's normalized text and, per character, its original span: a BPE model whose vocab is
    the normalized characters (no merges) makes one token per character."""
    normalized = normalizer.normalize_str(text)
    vocab = {ch: i for i, ch in enumerate(sorted(set(normalized)))}
    tokenizer = tk.Tokenizer(tk.models.BPE(vocab=vocab, merges=[]))
    tokenizer.normalizer = normalizer
    encoding = tokenizer.encode(text, add_special_tokens=False)
    assert "".join(encoding.tokens) == normalized
    offsets: list[Span] = []
    for token, offset in zip(encoding.tokens, encoding.offsets):
        offsets.extend([(offset[0], offset[1])] * len(token))
    return normalized, offsets


def bert(clean: bool, chinese: bool, strip: bool | None, lower: bool) -> dict[str, Any]:
    return {
        "type": "BertNormalizer",
        "clean_text": clean,
        "handle_chinese_chars": chinese,
        "strip_accents": strip,
        "lowercase": lower,
    }


def replace(kind: str, pattern: str, content: str) -> dict[str, Any]:
    return {"type": "Replace", "pattern": {kind: pattern}, "content": content}


# name -> (JSON, spans equal HF's alignments exactly, first char's start agrees with HF's)
CONFIGS: dict[str, tuple[dict[str, Any], bool, bool]] = {
    "NFC": ({"type": "NFC"}, False, True),
    "NFD": ({"type": "NFD"}, True, True),
    "NFKC": ({"type": "NFKC"}, False, True),
    "NFKD": ({"type": "NFKD"}, True, True),
    "Lowercase": ({"type": "Lowercase"}, True, True),
    "Strip": ({"type": "Strip", "strip_left": True, "strip_right": True}, True, True),
    "Strip-left": (
        {"type": "Strip", "strip_left": True, "strip_right": False},
        True,
        True,
    ),
    "Strip-right": (
        {"type": "Strip", "strip_left": False, "strip_right": True},
        True,
        True,
    ),
    "StripAccents": ({"type": "StripAccents"}, True, True),
    "NFD+StripAccents": (
        {
            "type": "Sequence",
            "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}],
        },
        True,
        True,
    ),
    "Prepend": ({"type": "Prepend", "prepend": "▁"}, False, True),
    "Prepend-long": ({"type": "Prepend", "prepend": "<<>>"}, False, True),
    "Replace-space": (replace("String", " ", "▁"), True, True),
    "Replace-ab": (replace("String", "ab", "X"), False, False),
    "Replace-delete": (replace("String", "a", ""), True, True),
    "Replace-spaces": (replace("Regex", " {2,}", " "), False, False),
    "Replace-empty-matches": (replace("Regex", "x*", "-"), False, True),
    "Replace-empty-string": (replace("String", "", "-"), False, True),
    "Replace-whitespace": (replace("Regex", r"\s+", "_"), False, False),
    "Bert": (bert(True, True, None, True), False, True),
    "Bert-cased": (bert(True, True, None, False), False, True),
    "Bert-strip-only": (bert(False, False, True, False), True, True),
    "Bert-clean-lower": (bert(True, False, False, True), True, True),
    "Nmt": ({"type": "Nmt"}, True, True),
    "ByteLevel": ({"type": "ByteLevel"}, True, True),
    "Llama2": (
        {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                replace("String", " ", "▁"),
            ],
        },
        False,
        True,
    ),
    "NFKC+Lowercase+Strip": (
        {
            "type": "Sequence",
            "normalizers": [
                {"type": "NFKC"},
                {"type": "Lowercase"},
                {"type": "Strip", "strip_left": True, "strip_right": True},
            ],
        },
        False,
        True,
    ),
}


def ours_from(obj: dict[str, Any]) -> N.Normalizer:
    normalizer = N.normalizer_from_json(obj)
    assert normalizer is not None
    return normalizer


def check(tk: Any, config: str, text: str) -> None:
    """Our normalizer equals HF's on ``text``: same text, and spans that are HF's alignments
    (exact configs), or contain them, or (inserted characters) sit inside them."""
    obj, exact, same_start = CONFIGS[config]
    ours = ours_from(obj)
    hf = hf_tokenizer(tk, normalizer=obj).normalizer
    out = ours.normalize(Piece.of(text))
    normalized, offsets = hf_alignments(tk, hf, text)
    assert out.text == normalized, (config, text)
    assert len(out.spans) == len(out.text)
    for i, ((s, e), (hs, he)) in enumerate(zip(out.spans, offsets)):
        if exact:
            assert (s, e) == (hs, he), (config, text, i)
        elif s == e:
            assert hs <= s <= he, (config, text, i, (s, e), (hs, he))
        else:
            assert s <= hs and he <= e, (config, text, i, (s, e), (hs, he))
    if same_start and out.text:
        # what Metaspace(prepend_scheme="first") looks at
        assert (out.spans[0][0] == 0) == (offsets[0][0] == 0), (config, text)


@pytest.mark.parametrize("config", CONFIGS)
def test_edge_texts_match_hf(tk: Any, config: str) -> None:
    for text in EDGE_TEXTS:
        check(tk, config, text)


@pytest.mark.parametrize("config", CONFIGS)
@settings(max_examples=60, deadline=None)
@given(text=TEXT)
def test_arbitrary_text_matches_hf(tk: Any, config: str, text: str) -> None:
    check(tk, config, text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.sampled_from(TRICKY), max_size=12))
def test_combining_sequences_match_hf(tk: Any, text: str) -> None:
    # marks, jamo and characters newer than HF's tables, densely: reordering and composition
    for config in ("NFC", "NFD", "NFKC", "NFKD", "Bert"):
        check(tk, config, text)


#: Characters a normalizer removes (marks, controls, a deleted "a") at the start, between
#: words, several in a row, after whitespace, at the end.
REMOVED_TEXTS = [
    "\u07eb\u0301x",
    "\u00d9\u07eb \u00e9\u0308\u0301y",
    "b\x00\x01a\u0301\u0315 aa\u0300\tz",
    " \u0301\u0308 \x7fa",
    "q\u00c5\u20dd\u0903\u200ba",
]


@pytest.mark.parametrize(
    "config",
    ["StripAccents", "NFD+StripAccents", "Bert-strip-only", "Bert-clean-lower"]
    + ["Replace-delete", "Nmt", "NFD", "NFKD"],
)
def test_removed_characters_take_their_spans_with_them(tk: Any, config: str) -> None:
    # Hugging Face's filter: what is kept keeps its own alignment, nothing is merged
    assert CONFIGS[config][1]  # an exact config
    for text in REMOVED_TEXTS:
        check(tk, config, text)


# ---- spans ----------------------------------------------------------------------------------


def test_spans_cover_what_each_character_came_from() -> None:
    out = N.NFKC().normalize(Piece.of("xﬁe\u0301"))
    assert out.text == "xfié"
    assert out.spans == [(0, 1), (1, 2), (1, 2), (2, 4)]


def test_offsets_carry_through_a_piece_not_at_zero() -> None:
    out = N.Sequence((N.Prepend("▁"), N.Lowercase())).normalize(
        Piece.of("AB", offset=7)
    )
    assert (out.text, out.spans) == ("▁ab", [(7, 7), (7, 8), (8, 9)])


def test_prepend_leaves_empty_text_alone() -> None:
    assert N.Prepend("▁").normalize(Piece.of("")).text == ""


def test_replace_content_covers_the_whole_match() -> None:
    out = N.Replace(N.Pattern.regex(" {2,}"), " ").normalize(Piece.of("a   b"))
    assert (out.text, out.spans) == ("a b", [(0, 1), (1, 4), (4, 5)])


# ---- Unicode tables, over every code point ----------------------------------------------------

ALL_CHARS = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]


def every_char(sep: str) -> str:
    """Every code point but ``sep``, separated by ``sep`` (which nothing combines with)."""
    return sep + sep.join(ch for ch in ALL_CHARS if ch != sep) + sep


def per_char_diff(ours: str, theirs: str, sep: str) -> list[str]:
    """The characters whose results differ, for the failure message (as a table to paste)."""
    chars = [ch for ch in ALL_CHARS if ch != sep]
    a, b = ours.split(sep)[1:-1], theirs.split(sep)[1:-1]
    if len(a) != len(b):
        return ["(results do not line up)"]
    return [
        f"{ord(c):04X}: ours {x!r}, HF {y!r}" for c, x, y in zip(chars, a, b) if x != y
    ]


@pytest.mark.parametrize(
    "config",
    ["NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "Bert-clean-lower"],
)
def test_unicode_tables_match_hf_on_every_code_point(tk: Any, config: str) -> None:
    obj = CONFIGS[config][0]
    sep = "a" if config.startswith("Bert") else "\x01"  # Bert drops \x01
    text = every_char(sep)
    ours = ours_from(obj).normalize(Piece.of(text)).text
    theirs = hf_tokenizer(tk, normalizer=obj).normalizer.normalize_str(text)
    assert ours == theirs, per_char_diff(ours, theirs, sep)[:50]


def test_bert_accent_table_matches_hf_on_every_code_point(tk: Any) -> None:
    obj = bert(False, False, True, False)
    chars = [
        ch for ch in ALL_CHARS if ch != "a" and unicodedata.normalize("NFD", ch) == ch
    ]
    text = "a" + "a".join(chars) + "a"
    ours = ours_from(obj).normalize(Piece.of(text)).text
    theirs = hf_tokenizer(tk, normalizer=obj).normalizer.normalize_str(text)
    assert ours == theirs


# ---- patterns: the Oniguruma dialect ----------------------------------------------------------

PATTERN_CASES = [
    (r"a$", "a\nba"),  # Ruby: $ is end of line
    (r"^b", "a\nb"),
    (r"\p{N}{1,3}+", "12345 1"),  # Ruby: {1,3}+ repeats
    (r"\p{N}{2}+", "12345"),
    (r"x*", "axxb"),  # empty matches next to a match are skipped
    (r"\w*", "ab cd"),
    (r"", "abc"),
    (r"(?<=a)", "aab"),
    (r"\h+", "a1 g"),
    (r"b\Z", "ab\nab\n"),
    (r"b\z", "ab\nab"),
    (r"(?m)a.b", "a\nb"),
    (r"\R", "a\r\nb\nc"),
    (r"\x{61}", "abc"),
    (r"(?<n>a)\k<n>", "aab"),
    (r"[[:alpha:]]+", "ab1é"),
    (r"\p{^L}+", "ab12é"),
    (r"(?i:'s|'t)", "IT'S it's"),
    (r"[^\s\p{L}\p{N}]+", "a!? b…c"),
    (r"[a[bc]]+", "abcd"),
    (r" ?[^(\s|[.,!?…。，、।۔،])]+", "hi, you. ok…"),  # BLOOM's
]


@pytest.mark.parametrize(("regex", "text"), PATTERN_CASES)
def test_regex_matches_like_oniguruma(tk: Any, regex: str, text: str) -> None:
    split = {
        "type": "Split",
        "pattern": {"Regex": regex},
        "behavior": "Isolated",
        "invert": False,
    }
    theirs = [
        s
        for s, _ in hf_tokenizer(
            tk, pre_tokenizer=split
        ).pre_tokenizer.pre_tokenize_str(text)
    ]
    pattern = N.Pattern.regex(regex)
    ours = [text[s:e] for s, e, _ in pattern.find_matches(text) if e > s]
    assert ours == theirs


def test_replace_with_empty_regex_matches_hf(tk: Any) -> None:
    for regex in ("", "x*", "(?=b)", r"\b"):
        obj = replace("Regex", regex, "-")
        hf = hf_tokenizer(tk, normalizer=obj).normalizer
        for text in ("", "axxb", "ab cd", "bbb"):
            ours = ours_from(obj).normalize(Piece.of(text))
            assert ours.text == hf.normalize_str(text), (regex, text)


def test_unsupported_regex_syntax_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="intersection"):
        N.Pattern.regex("[a-z&&[^b]]")
    with pytest.raises(FormatError, match="cannot be compiled"):
        N.Pattern.regex("(")


# ---- tokenizer.json -------------------------------------------------------------------------


def test_null_is_no_normalizer() -> None:
    assert N.normalizer_from_json(None) is None


def test_a_broken_precompiled_charsmap_is_named_in_the_error() -> None:
    # (a working one: tests/pipeline/test_unigram.py, against tokenizers)
    charsmap = (  # the first bytes of a real one: its trie runs past the end
        "ALQCAACEAAAAAACAAQAAgMz8AgC4BQAAhyIAgMzkAgC4PQAAeyIAgMzsAgC4BQAAiyIAgMw8"
    )
    obj = {"type": "Precompiled", "precompiled_charsmap": charsmap}
    with pytest.raises(FormatError, match="trie size .* is broken"):
        N.normalizer_from_json(obj)
    nested = {"type": "Sequence", "normalizers": [{"type": "NFKC"}, obj]}
    with pytest.raises(FormatError, match="item 2: the normalization rule"):
        N.normalizer_from_json(nested)


def test_empty_precompiled_charsmap_is_identity() -> None:
    # (Hugging Face panics on it; SentencePiece reads it as "no normalization")
    norm = N.normalizer_from_json({"type": "Precompiled", "precompiled_charsmap": ""})
    assert norm is not None
    assert norm.normalize(Piece.of("ﬁ Ａ")).text == "ﬁ Ａ"


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"type": "Nope"}, "normalizer type 'Nope' is not supported yet"),
        ({"strip_left": True}, "normalizer type None is not supported yet"),
        ({"type": "Strip", "strip_left": True}, "'strip_right' is missing"),
        (
            {"type": "Strip", "strip_left": 1, "strip_right": True},
            "should be true or false",
        ),
        ({"type": "Prepend", "prepend": None}, "'prepend' should be a string"),
        (
            {"type": "Replace", "pattern": {"Glob": "*"}, "content": ""},
            '{"String": "..."}',
        ),
        (
            {"type": "Replace", "pattern": {"Regex": "("}, "content": ""},
            "cannot be compiled",
        ),
        ({"type": "BertNormalizer", "lowercase": True}, "'clean_text' is missing"),
        ({"type": "Sequence"}, "'normalizers' is missing"),
        ([], "should be a JSON object or null"),
    ],
)
def test_bad_json_is_a_format_error(obj: Any, message: str) -> None:
    with pytest.raises(
        FormatError, match=message.replace("(", r"\(").replace("{", r"\{")
    ):
        N.normalizer_from_json(obj)


def test_strip_accents_null_follows_lowercase() -> None:
    cased = N.normalizer_from_json(bert(True, True, None, False))
    assert cased is not None and cased.normalize(Piece.of("Café")).text == "Café"
    uncased = N.normalizer_from_json(bert(True, True, None, True))
    assert uncased is not None and uncased.normalize(Piece.of("Café")).text == "cafe"


# ─── the quick check for characters newer than Unicode 16 ──────────────────────────────

_NEWER_EDGES = "".join(
    chr(int(bound, 16) + delta)
    for item in unicode_tables.NEWER_THAN_ONIG_RANGES.split()
    for bound in item.split("-")
    for delta in (-1, 0, 1)
) + "\u0295\u0296a é東😀\U0010ffff"


@settings(max_examples=500)
@given(text=st.text(st.sampled_from(_NEWER_EDGES), max_size=6) | st.text(max_size=20))
def test_the_quick_check_is_the_regex(text: str) -> None:
    """has_newer_than_unicode_16 (two `re` classes) answers as NEWER_THAN_UNICODE_16 does,
    on every range's edges and on arbitrary text."""
    want = unicode_tables.NEWER_THAN_UNICODE_16.search(text) is not None
    assert unicode_tables.has_newer_than_unicode_16(text) == want
    for c in _NEWER_EDGES:
        assert unicode_tables.has_newer_than_unicode_16(c) == (
            unicode_tables.NEWER_THAN_UNICODE_16.search(c) is not None
        ), hex(ord(c))

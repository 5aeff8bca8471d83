"""core.pipeline.pre_tokenizers against Hugging Face ``tokenizers`` (the oracle).

Both sides read the same JSON. Compared: ``pre_tokenize_str`` (each piece and its offsets;
with no normalizer HF's offsets are positions in the input, as our spans are) on fixed edge
cases and arbitrary Unicode, the character classes over every code point, and the way a
whole tokenizer runs pre-tokenizers between added tokens (``prepend_scheme: "first"``,
ByteLevel's prefix space), read from a HF encoding with one token per character.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.pipeline import normalizers as N
from core.pipeline import pre_tokenizers as P
from core.pipeline.piece import Piece, Span
from tests.conftest import need_module
from tests.pipeline.test_normalizers import EDGE_TEXTS, TEXT, every_char, hf_tokenizer


@pytest.fixture(scope="module")
def tk() -> Any:
    return need_module("tokenizers")


GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
    r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
O200K = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
DEEPSEEK = (
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CJK_RUNS = "[一-龥\u3040-ゟ゠-ヿ]+"
BLOOM = r" ?[^(\s|[.,!?…。，、।۔،])]+"
BEHAVIORS = [
    "Removed",
    "Isolated",
    "MergedWithPrevious",
    "MergedWithNext",
    "Contiguous",
]


def split(
    kind: str, pattern: str, behavior: str = "Isolated", invert: bool = False
) -> dict:
    return {
        "type": "Split",
        "pattern": {kind: pattern},
        "behavior": behavior,
        "invert": invert,
    }


def byte_level(prefix: bool, use_regex: bool = True) -> dict:
    return {
        "type": "ByteLevel",
        "add_prefix_space": prefix,
        "trim_offsets": True,
        "use_regex": use_regex,
    }


def metaspace(scheme: str, split: bool = True, replacement: str = "▁") -> dict:
    return {
        "type": "Metaspace",
        "replacement": replacement,
        "prepend_scheme": scheme,
        "split": split,
    }


def sequence(*items: dict) -> dict:
    return {"type": "Sequence", "pretokenizers": list(items)}


CONFIGS: dict[str, dict[str, Any]] = {
    "ByteLevel": byte_level(True),
    "ByteLevel-no-prefix": byte_level(False),
    "ByteLevel-no-regex": byte_level(True, use_regex=False),
    **{f"Metaspace-{s}": metaspace(s) for s in ("always", "first", "never")},
    "Metaspace-first-nosplit": metaspace("first", split=False),
    "Metaspace-underscore": metaspace("always", replacement="_"),
    "Metaspace-legacy": {
        "type": "Metaspace",
        "replacement": "▁",
        "add_prefix_space": True,
    },
    "Whitespace": {"type": "Whitespace"},
    "WhitespaceSplit": {"type": "WhitespaceSplit"},
    "BertPreTokenizer": {"type": "BertPreTokenizer"},
    "Digits": {"type": "Digits", "individual_digits": False},
    "Digits-individual": {"type": "Digits", "individual_digits": True},
    **{f"Punctuation-{b}": {"type": "Punctuation", "behavior": b} for b in BEHAVIORS},
    "CharDelimiterSplit": {"type": "CharDelimiterSplit", "delimiter": "-"},
    "FixedLength": {"type": "FixedLength", "length": 3},
    **{f"Split-dash-{b}": split("String", "-", b) for b in BEHAVIORS},
    **{f"Split-space-inverted-{b}": split("String", " ", b, True) for b in BEHAVIORS},
    **{f"Split-digits-{b}": split("Regex", r"\d+", b) for b in BEHAVIORS},
    "Split-gpt2": split("Regex", GPT2),
    "Split-gpt2-removed-inverted": split("Regex", GPT2, "Removed", True),
    "Split-llama3": split("Regex", LLAMA3),
    "Split-qwen2": split("Regex", QWEN2),
    "Split-o200k": split("Regex", O200K),
    "Split-bloom": split("Regex", BLOOM, "Isolated"),
    "Split-empty-matches": split("Regex", r"x*", "MergedWithNext"),
    "Llama3": sequence(split("Regex", LLAMA3), byte_level(False, use_regex=False)),
    "DeepSeek": sequence(
        split("Regex", r"\p{N}{1,3}"),
        split("Regex", CJK_RUNS),
        split("Regex", DEEPSEEK),
        byte_level(False, use_regex=False),
    ),
    "StarCoder": sequence(
        {"type": "Digits", "individual_digits": True}, byte_level(False)
    ),
    "WhitespaceSplit+Metaspace-first": sequence(
        {"type": "WhitespaceSplit"}, metaspace("first")
    ),
    "Punctuation+Metaspace-first": sequence(
        {"type": "Punctuation", "behavior": "Isolated"}, metaspace("first")
    ),
}

MORE_EDGE_TEXTS = [
    "I'M HERE, 'S 'T 'Re 've",
    "a-b--c---",
    "x-",
    "-x",
    "100000 tokens, 3.14159, ٣٤٥٦, ²³",
    "line\n\n  indented\r\n\tTab",
    "   ",
    "a  b   c",
    "¿Qué? ¡Sí! «quotes» „more“ …",
    "中文。日本語、한국어！",
    "under_score snake_case CamelCase",
    "emoji🙂mid 🙂 word",
]


def same_pieces(
    ours: list[tuple[str, Span]], theirs: list[tuple[str, Span]], *, cover: bool = False
) -> bool:
    """Equal pieces and spans, except that a piece made only of inserted characters (a
    prefix space or ``"▁"`` alone) has an empty span where HF borrows the next character's;
    with ``cover`` (after a normalizer), our span may also be wider than HF's (a composed or
    decomposed character covers all it came from, see core.pipeline.normalizers)."""
    if [t for t, _ in ours] != [t for t, _ in theirs]:
        return False
    return all(
        (s, e) == (hs, he)
        or (s == e and hs <= s <= he)
        or (cover and s <= hs and he <= e)
        for (_, (s, e)), (_, (hs, he)) in zip(ours, theirs)
    )


def ours_from(obj: dict[str, Any]) -> P.PreTokenizer:
    pre_tokenizer = P.pre_tokenizer_from_json(obj)
    assert pre_tokenizer is not None
    return pre_tokenizer


def check(tk: Any, config: str, text: str) -> None:
    obj = CONFIGS[config]
    ours = ours_from(obj)
    hf = hf_tokenizer(tk, pre_tokenizer=obj).pre_tokenizer
    got = [(p.text, p.span) for p in ours.split([Piece.of(text)])]
    theirs = hf.pre_tokenize_str(text)
    assert same_pieces(got, theirs), (config, text, got, theirs)


@pytest.mark.parametrize("config", CONFIGS)
def test_edge_texts_match_hf(tk: Any, config: str) -> None:
    for text in EDGE_TEXTS + MORE_EDGE_TEXTS:
        check(tk, config, text)


@pytest.mark.parametrize("config", CONFIGS)
@settings(max_examples=60, deadline=None)
@given(text=TEXT)
def test_arbitrary_text_matches_hf(tk: Any, config: str, text: str) -> None:
    check(tk, config, text)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(st.sampled_from(" \n\t\r'-_xX1٣!?。中é▁\u3000sStTmdlrev"), max_size=30)
)
def test_dense_delimiters_match_hf(tk: Any, text: str) -> None:
    # few distinct characters, so apostrophes, runs of spaces and delimiters collide often
    for config in (
        "ByteLevel",
        "Split-llama3",
        "Split-o200k",
        "Metaspace-first",
        "Split-dash-MergedWithNext",
        "Punctuation-Contiguous",
        "Whitespace",
    ):
        check(tk, config, text)


def test_pieces_keep_spans_from_where_they_start() -> None:
    pieces = P.Metaspace().split([Piece.of("a b", offset=10)])
    assert [(p.text, p.spans) for p in pieces] == [
        ("▁a", [(10, 10), (10, 11)]),
        ("▁b", [(11, 12), (12, 13)]),
    ]


def test_byte_level_byte_chars_keep_their_characters_span() -> None:
    (piece,) = P.ByteLevel(add_prefix_space=False).split([Piece.of("中")])
    assert (piece.text, piece.spans) == ("ä¸Ń", [(0, 1)] * 3)


# ---- the tokenizer around it: segments between added tokens ----------------------------------

ADDED = ["<x>", "<s>", "[SEP]"]
_ADDED_RE = re.compile(
    "|".join(re.escape(t) for t in sorted(ADDED, key=len, reverse=True))
)

# name -> (normalizer JSON or None, pre-tokenizer JSON or None)
PIPELINES: dict[str, tuple[dict | None, dict | None]] = {
    "Metaspace-first": (None, metaspace("first")),
    "Strip+Metaspace-first": (
        {"type": "Strip", "strip_left": True, "strip_right": True},
        metaspace("first"),
    ),
    "Lowercase+Metaspace-always": ({"type": "Lowercase"}, metaspace("always")),
    "Metaspace-first-nosplit": (None, metaspace("first", split=False)),
    "WhitespaceSplit+Metaspace-first": (
        None,
        CONFIGS["WhitespaceSplit+Metaspace-first"],
    ),
    "Replace+Metaspace-first": (
        {"type": "Replace", "pattern": {"String": "a"}, "content": ""},
        metaspace("first"),
    ),
    "ByteLevel": (None, byte_level(True)),
    "NFKC+Llama3": ({"type": "NFKC"}, CONFIGS["Llama3"]),
    "Bert": (
        {
            "type": "BertNormalizer",
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": None,
            "lowercase": True,
        },
        {"type": "BertPreTokenizer"},
    ),
    "Llama2-normalizer": (
        {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            ],
        },
        None,
    ),
}


def our_pre_tokens(text: str, pipeline: str) -> list[tuple[str, Span]]:
    """What the tokenizer assembler does: cut at added tokens, then normalize and pre-tokenize
    each segment on its own, with spans in the whole text."""
    normalizer = N.normalizer_from_json(PIPELINES[pipeline][0])
    pre_tokenizer = P.pre_tokenizer_from_json(PIPELINES[pipeline][1])
    out: list[tuple[str, Span]] = []

    def segment(start: int, end: int) -> None:
        if start == end:
            return
        piece = Piece.of(text[start:end], offset=start)
        if normalizer is not None:
            piece = normalizer.normalize(piece)
        if not piece.text:
            return
        pieces = [piece] if pre_tokenizer is None else pre_tokenizer.split([piece])
        out.extend((p.text, p.span) for p in pieces)

    pos = 0
    for m in _ADDED_RE.finditer(text):
        segment(pos, m.start())
        out.append((m.group(), m.span()))
        pos = m.end()
    segment(pos, len(text))
    return out


def hf_pre_tokens(
    tk: Any, text: str, pipeline: str, chars: set[str]
) -> list[tuple[str, Span]]:
    """HF's pieces, read from an encoding whose model makes one token per character:
    ``word_ids`` group the tokens of each piece, added tokens have none."""
    normalizer, pre_tokenizer = PIPELINES[pipeline]
    base = hf_tokenizer(tk, normalizer=normalizer, pre_tokenizer=pre_tokenizer)
    vocab = {"[UNK]": 0, **{ch: i + 1 for i, ch in enumerate(sorted(chars))}}
    tokenizer = tk.Tokenizer(tk.models.BPE(vocab=vocab, merges=[], unk_token="[UNK]"))
    tokenizer.normalizer = base.normalizer
    tokenizer.pre_tokenizer = base.pre_tokenizer
    tokenizer.add_special_tokens([tk.AddedToken(t, normalized=False) for t in ADDED])
    encoding = tokenizer.encode(text, add_special_tokens=False)
    out: list[tuple[str, Span]] = []
    last = object()
    for token, word, (start, end) in zip(
        encoding.tokens, encoding.word_ids, encoding.offsets
    ):
        if word is not None and word == last:
            text_so_far, (s, e) = out[-1]
            out[-1] = (text_so_far + token, (min(s, start), max(e, end)))
        else:
            out.append((token, (start, end)))
        last = word
    return out


def check_pipeline(tk: Any, pipeline: str, text: str) -> None:
    ours = our_pre_tokens(text, pipeline)
    chars = {ch for piece, _ in ours for ch in piece}
    theirs = hf_pre_tokens(tk, text, pipeline, chars)
    assert same_pieces(ours, theirs, cover=True), (pipeline, text, ours, theirs)


SEGMENT_TEXTS = [
    "hello<x>world",
    "<x>hello",
    "<s>a b",
    " hello<x> world",
    "  hello",
    " <x>a",
    "  <x>  a",
    "a<s>b<s><s>c",
    "Hello [SEP] there",
    "ab<x>ba",
    "",
    "<s>",
]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_segments_between_added_tokens_match_hf(tk: Any, pipeline: str) -> None:
    for text in SEGMENT_TEXTS + EDGE_TEXTS:
        check_pipeline(tk, pipeline, text)


@pytest.mark.parametrize("pipeline", PIPELINES)
@settings(max_examples=40, deadline=None)
@given(
    parts=st.lists(st.one_of(TEXT, st.sampled_from(ADDED + [" ", "  a"])), max_size=6)
)
def test_arbitrary_segments_match_hf(tk: Any, pipeline: str, parts: list[str]) -> None:
    check_pipeline(tk, pipeline, "".join(parts))


def test_first_scheme_prepends_only_at_the_very_start() -> None:
    assert [t for t, _ in our_pre_tokens("<s>a b", "Metaspace-first")] == [
        "<s>",
        "a",
        "▁b",
    ]
    assert [t for t, _ in our_pre_tokens("a<s>b", "Metaspace-first")] == [
        "▁a",
        "<s>",
        "b",
    ]
    assert [t for t, _ in our_pre_tokens("  hi", "Strip+Metaspace-first")] == ["hi"]
    assert [t for t, _ in our_pre_tokens("a<s>b", "ByteLevel")] == ["Ġa", "<s>", "Ġb"]


# ---- character classes, over every code point -------------------------------------------------

CLASSES = [
    r"\p{L}",
    r"\p{N}",
    r"\s",
    r"\w",
    r"\d",
    r"\p{Lu}",
    r"\p{Ll}",
    r"\p{Lt}",
    r"\p{Lm}",
    r"\p{Lo}",
    r"\p{M}",
    r"\p{P}",
    r"\p{S}",
    r"\p{Han}",
    r"\p{Cn}",
]
CLASS_CONFIGS = {
    "WhitespaceSplit": {"type": "WhitespaceSplit"},
    "Punctuation": {"type": "Punctuation", "behavior": "Isolated"},
    "Digits": {"type": "Digits", "individual_digits": True},
    "Whitespace": {"type": "Whitespace"},
    "Regex \\b": split("Regex", r"\b"),
    **{f"Regex {cls}+": split("Regex", cls + "+") for cls in CLASSES},
}


@pytest.mark.parametrize("config", CLASS_CONFIGS)
def test_character_classes_match_hf_on_every_code_point(tk: Any, config: str) -> None:
    # all of Unicode in one string: a character classified differently moves a piece's edge
    obj = CLASS_CONFIGS[config]
    text = every_char("")
    ours = [(p.text, p.span) for p in ours_from(obj).split([Piece.of(text)])]
    theirs = hf_tokenizer(tk, pre_tokenizer=obj).pre_tokenizer.pre_tokenize_str(text)
    if ours != theirs:
        edges = {s for _, (s, _) in ours} ^ {s for _, (s, _) in theirs}
        pytest.fail(
            f"{config}: differs at {sorted(f'{ord(text[i]):04X}' for i in edges)[:40]}"
        )


# ---- tokenizer.json -------------------------------------------------------------------------


def test_null_is_no_pre_tokenizer() -> None:
    assert P.pre_tokenizer_from_json(None) is None


def test_legacy_metaspace_add_prefix_space_false_means_never() -> None:
    obj = {"type": "Metaspace", "replacement": "▁", "add_prefix_space": False}
    ours = P.pre_tokenizer_from_json(obj)
    assert ours == P.Metaspace(prepend_scheme="never")


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"type": "UnicodeScripts"},
            "pre_tokenizer type 'UnicodeScripts' is not supported",
        ),
        ({"type": "ByteLevel", "trim_offsets": True}, "'add_prefix_space' is missing"),
        (
            {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Isolated"},
            "'invert'",
        ),
        (split("Regex", "a", "Sideways"), "behavior 'Sideways' is not one of"),
        (split("Regex", "[a-z&&[^b]]"), "intersection"),
        ({"type": "Metaspace", "replacement": "▁▁"}, "single character"),
        (
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"},
            "'first'",
        ),
        ({"type": "CharDelimiterSplit", "delimiter": ""}, "single character"),
        ({"type": "FixedLength", "length": 0}, "at least 1"),
        ({"type": "Digits"}, "'individual_digits' is missing"),
        (
            sequence({"type": "Whitespace"}, {"type": "Nope"}),
            "item 2: pre_tokenizer type 'Nope'",
        ),
        ("ByteLevel", "should be a JSON object or null"),
    ],
)
def test_bad_json_is_a_format_error(obj: Any, message: str) -> None:
    with pytest.raises(FormatError, match=re.escape(message)):
        P.pre_tokenizer_from_json(obj)

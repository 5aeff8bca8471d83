"""core.pipeline.decoders against Hugging Face ``tokenizers`` (the oracle).

Both sides read the same JSON and decode the same token strings; compared: the text, and
the chain itself (each decoder followed by a ``Replace`` that marks where every string of
the chain starts). Tokens: fixed edge cases, arbitrary Unicode strings, and random bytes
spelled as byte-level or ``<0x..>`` tokens (for the U+FFFD rules).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.engine.bytes_unicode import to_gpt2_str
from core.errors import FormatError
from core.pipeline import decoders as D
from tests.conftest import need_module
from tests.pipeline.test_normalizers import CHARS, hf_tokenizer


@pytest.fixture(scope="module")
def tk() -> Any:
    return need_module("tokenizers")


def replace(kind: str, pattern: str, content: str) -> dict[str, Any]:
    return {"type": "Replace", "pattern": {kind: pattern}, "content": content}


def metaspace(scheme: str, replacement: str = "▁") -> dict[str, Any]:
    return {
        "type": "Metaspace",
        "replacement": replacement,
        "prepend_scheme": scheme,
        "split": True,
    }


def strip(content: str, start: int, stop: int) -> dict[str, Any]:
    return {"type": "Strip", "content": content, "start": start, "stop": stop}


BYTE_LEVEL = {
    "type": "ByteLevel",
    "add_prefix_space": True,
    "trim_offsets": True,
    "use_regex": True,
}
LLAMA2 = {
    "type": "Sequence",
    "decoders": [
        replace("String", "▁", " "),
        {"type": "ByteFallback"},
        {"type": "Fuse"},
        strip(" ", 1, 0),
    ],
}

CONFIGS: dict[str, dict[str, Any]] = {
    "ByteLevel": BYTE_LEVEL,
    "ByteFallback": {"type": "ByteFallback"},
    **{f"Metaspace-{s}": metaspace(s) for s in ("always", "first", "never")},
    "Metaspace-underscore": metaspace("always", "_"),
    "Metaspace-legacy": {
        "type": "Metaspace",
        "replacement": "▁",
        "add_prefix_space": True,
    },
    "WordPiece": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "WordPiece-raw": {"type": "WordPiece", "prefix": "##", "cleanup": False},
    "WordPiece-no-prefix": {"type": "WordPiece", "prefix": "", "cleanup": True},
    "BPEDecoder": {"type": "BPEDecoder", "suffix": "</w>"},
    "BPEDecoder-empty": {"type": "BPEDecoder", "suffix": ""},
    "Fuse": {"type": "Fuse"},
    "Strip": strip(" ", 1, 0),
    "Strip-both": strip("▁", 2, 1),
    "Replace": replace("String", "▁", " "),
    "Replace-regex": replace("Regex", r"\s+", " "),
    "Replace-empty-matches": replace("Regex", "x*", "-"),
    "CTC": {
        "type": "CTC",
        "pad_token": "<pad>",
        "word_delimiter_token": "|",
        "cleanup": True,
    },
    "CTC-raw": {
        "type": "CTC",
        "pad_token": "<pad>",
        "word_delimiter_token": "|",
        "cleanup": False,
    },
    "Llama2": LLAMA2,
    "Sequence-nested": {
        "type": "Sequence",
        "decoders": [
            {"type": "ByteFallback"},
            {"type": "Sequence", "decoders": [metaspace("first")]},
        ],
    },
}

EDGE_TOKENS = [
    [],
    [""],
    ["", ""],
    ["▁Hello", "▁world", "!"],
    ["▁▁a▁", "▁b", "▁"],
    ["Hello", "Ġw", "Ã¶", "rld", "Ġâ"],
    ["Ġ", "Ċ", "ĉ", "<|endoftext|>", "▁", "中"],
    ["<0xE4>", "<0xB8>", "<0xAD>", "x", "<0xE4>", "<0xB8>", "<0x41>"],
    ["<0x+F>", "<0x0f>", "<0xzz>", "<0x4>", "<0x é>", "<0xé>", "<0x41 >"],
    ["un", "##believ", "##able", "!", "i", "do", "n't", "'", "s", " .", "##"],
    ["hel", "lo</w>", "you</w>", "</w></w>"],
    ["h", "h", "<pad>", "e", "|", "|", "l", "l", "<pad>", "l", "o", " ,", "n't"],
    ["  a  ", " b", "▁▁c▁▁", "xxaxx", "a\t\n b"],
    ["DON", "'", "T", "I", "'m", " 's", " do not", " ' "],
]


def with_marks(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` followed by a Replace that puts U+001E at the start of each chain string."""
    return {"type": "Sequence", "decoders": [obj, replace("Regex", r"\A", "\x1e")]}


def check(tk: Any, config: str, tokens: list[str]) -> None:
    for obj in (CONFIGS[config], with_marks(CONFIGS[config])):
        ours = D.decoder_from_json(obj)
        hf = hf_tokenizer(tk, decoder=obj).decoder
        try:
            expected = hf.decode(tokens)
        except BaseException as err:  # a Rust panic is a BaseException in Python
            if type(err).__name__ != "PanicException":
                raise
            assume(False)  # Hugging Face cannot decode these tokens at all (see Strip)
            return
        assert D.decode_tokens(ours, tokens) == expected, (config, tokens)


@pytest.mark.parametrize("config", CONFIGS)
def test_edge_tokens_match_hf(tk: Any, config: str) -> None:
    for tokens in EDGE_TOKENS:
        if config.startswith("Strip") and any(set(t) <= set(" ▁") for t in tokens):
            continue  # Hugging Face panics on tokens that are all stripped characters
        check(tk, config, tokens)


TOKEN = st.one_of(
    st.text(CHARS, max_size=8),
    st.sampled_from(
        ["▁", "##", "</w>", "<pad>", "|", "Ġ", "<0x41>", "<0xE4>", " ", ""]
    ),
)


@pytest.mark.parametrize("config", CONFIGS)
@settings(max_examples=60, deadline=None)
@given(tokens=st.lists(TOKEN, max_size=8))
def test_arbitrary_tokens_match_hf(tk: Any, config: str, tokens: list[str]) -> None:
    check(tk, config, tokens)


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(st.binary(min_size=1, max_size=4), max_size=10), extra=st.booleans()
)
def test_byte_level_invalid_utf8_matches_hf(
    tk: Any, chunks: list[bytes], extra: bool
) -> None:
    tokens = [to_gpt2_str(chunk) for chunk in chunks] + (["▁中"] if extra else [])
    check(tk, "ByteLevel", tokens)


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(
        st.one_of(
            st.binary(min_size=1, max_size=1).map(lambda b: f"<0x{b[0]:02X}>"),
            st.sampled_from(["a", "▁b", "<0x+A>", "<0xzz>", "<0x4>"]),
        ),
        max_size=10,
    )
)
def test_byte_fallback_runs_match_hf(tk: Any, parts: list[str]) -> None:
    check(tk, "ByteFallback", parts)
    check(tk, "Llama2", parts)


def test_no_decoder_joins_with_spaces() -> None:
    assert D.decode_tokens(None, ["a", "b"]) == "a b"


def test_strip_never_crosses_where_hugging_face_panics() -> None:
    assert D.Strip("▁", start=1, stop=1).decode_chain(["▁", "", "▁a▁"]) == ["", "", "a"]


# ---- tokenizer.json -------------------------------------------------------------------------


def test_null_is_no_decoder() -> None:
    assert D.decoder_from_json(None) is None


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"type": "Nope"}, "decoder type 'Nope' is not supported yet"),
        ({"type": "WordPiece"}, "'prefix' is missing"),
        ({"type": "ByteLevel"}, "'add_prefix_space' is missing"),
        ({"type": "Strip", "content": "ab", "start": 1, "stop": 0}, "single character"),
        ({"type": "Strip", "content": " ", "start": -1, "stop": 0}, "not be negative"),
        (
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": 1},
            "should be a string",
        ),
        (replace("Regex", "(", ""), "cannot be compiled"),
        (
            {"type": "Sequence", "decoders": [{"type": "Fuse"}, {}]},
            "item 2: decoder type None",
        ),
        (["Fuse"], "should be a JSON object or null"),
    ],
)
def test_bad_json_is_a_format_error(obj: Any, message: str) -> None:
    with pytest.raises(FormatError, match=message.replace("(", r"\(")):
        D.decoder_from_json(obj)

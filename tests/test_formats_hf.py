"""Hugging Face tokenizer.json: what we write loads in `tokenizers` with the same IDs, what
`tokenizers` writes loads here, bad files say what is wrong and where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from core.errors import FormatError
from core.formats import dumps_hf_json, loads_gpt2, loads_hf_json
from core.engine.pretokenize import CL100K_PATTERN
from tests.test_formats_gpt2 import _find_gpt2_files, bpe_models

import tokenizers

TEXTS = [
    "Hello, world! This is a test.",
    "<|endoftext|>Special tokens<|endoftext|> in the middle <|endoftext|>",
    "line one\nline two\n\n\nline five\r\n",
    "multiple   spaces    and\ttabs\t\t here   ",
    "unicode: héllo wörld naïve café, Ελληνικά, русский, 日本語のテキスト, 한국어",
    "emoji 🤖🎉👩‍👩‍👧 and flags 🇮🇹",
    "numbers 1234567 3.14159 and code: def f(x): return x**2  # comment",
    "don't I'll we've they're it's",
    "",
    " ",
]


@pytest.fixture(scope="module")
def gpt2_model(tiktoken_cache: Path) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[str]]:
    return loads_gpt2(*_find_gpt2_files(tiktoken_cache))


def test_genuine_gpt2_export_matches_tiktoken_in_hf(gpt2_model) -> None:  # noqa: ANN001
    import tiktoken

    vocab, merges, specials = gpt2_model
    hf = tokenizers.Tokenizer.from_str(dumps_hf_json(vocab, merges, specials))
    enc = tiktoken.get_encoding("gpt2")
    for text in TEXTS:
        assert hf.encode(text).ids == enc.encode(text, allowed_special="all"), text
        assert hf.decode(enc.encode(text, allowed_special="all"), skip_special_tokens=False) == text


def test_genuine_gpt2_export_round_trip(gpt2_model) -> None:  # noqa: ANN001
    vocab, merges, specials = gpt2_model
    assert loads_hf_json(dumps_hf_json(vocab, merges, specials)) == (vocab, merges, specials, "gpt2")


def _hf_trained(pattern_regex: str | None = None) -> tokenizers.Tokenizer:
    from tokenizers import Regex, decoders, models, pre_tokenizers

    tok = tokenizers.Tokenizer(models.BPE())
    if pattern_regex is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(pattern_regex), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    tok.decoder = decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|pad|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TEXTS * 20, trainer)
    return tok


def test_loads_a_tokenizer_trained_by_hf() -> None:
    hf = _hf_trained()
    vocab, merges, specials, pattern = loads_hf_json(hf.to_str())
    assert pattern == "gpt2"
    assert specials == ["<|endoftext|>", "<|pad|>"]
    assert vocab[0] == b"<|endoftext|>" and vocab[1] == b"<|pad|>"
    assert len(vocab) == hf.get_vocab_size()
    assert set(vocab.values()) >= {bytes([b]) for b in range(256)}
    # writing it back gives a tokenizer.json that HF encodes identically
    again = tokenizers.Tokenizer.from_str(dumps_hf_json(vocab, merges, specials))
    for text in TEXTS:
        assert again.encode(text).ids == hf.encode(text).ids


def test_loads_hf_split_pattern_and_merges_as_strings() -> None:
    hf = _hf_trained(CL100K_PATTERN)
    doc = json.loads(hf.to_str())
    doc["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in doc["model"]["merges"]]
    vocab, merges, _, pattern = loads_hf_json(json.dumps(doc))
    assert pattern == "cl100k"
    assert (vocab, merges) == loads_hf_json(hf.to_str())[:2]


def test_export_with_custom_pattern_round_trips_and_loads_in_hf() -> None:
    vocab = {0: b"<|endoftext|>", **{1 + b: bytes([b]) for b in range(256)}, 257: b"ab"}
    merges = [(b"a", b"b")]
    text = dumps_hf_json(vocab, merges, ["<|endoftext|>"], pattern=r"\p{L}+|\s+|[^\s\p{L}]+")
    assert loads_hf_json(text) == (vocab, merges, ["<|endoftext|>"], r"\p{L}+|\s+|[^\s\p{L}]+")
    hf = tokenizers.Tokenizer.from_str(text)
    assert hf.encode("ab ab<|endoftext|>").ids == [257, 1 + 32, 257, 0]


def test_special_token_spelled_like_an_ordinary_token_is_refused() -> None:
    vocab = {0: "é".encode(), 1: b"\xe9"}  # 'é' is also how the byte map spells byte 0xE9
    with pytest.raises(FormatError, match="special token 'é' is spelled like ordinary token ID 1"):
        dumps_hf_json(vocab, [], ["é"])


def test_special_token_missing_from_vocab_is_refused() -> None:
    with pytest.raises(FormatError, match="special token '<s>' is not in the vocab"):
        dumps_hf_json({0: b"a"}, [], ["<s>"])


def _doc(**changes: object) -> str:
    doc = json.loads(dumps_hf_json({0: b"a", 1: b"b", 2: b"ab", 3: b"<s>"}, [(b"a", b"b")], ["<s>"]))
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = doc
        for key in parents:
            target = target[key]
        target[leaf] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{nope", "tokenizer.json: not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        ('{"a": 1}', 'tokenizer.json: no "model" section'),
        (_doc(model__type="WordPiece"), "tokenizer.json: model type is 'WordPiece'; only BPE"),
        (_doc(model__continuing_subword_prefix="##"), "tokenizer.json: model.continuing_subword_prefix is '##'"),
        (_doc(normalizer={"type": "NFC"}), "tokenizer.json: normalizer 'NFC' changes the text"),
        (_doc(pre_tokenizer={"type": "Whitespace"}), "tokenizer.json: pre_tokenizer 'Whitespace' is not supported"),
        (_doc(pre_tokenizer={"type": "ByteLevel", "add_prefix_space": True, "use_regex": True}), "tokenizer.json: pre_tokenizer ByteLevel has add_prefix_space=true"),
        (_doc(pre_tokenizer=None), "tokenizer.json: pre_tokenizer is None"),
        (_doc(model__vocab={"a": 0, "b": 1, "ab": 2, "中": 4}), "tokenizer.json: model.vocab['中']: '中' contains '中' (U+4E2D)"),
        (_doc(model__vocab={"a": 0, "b": "1"}), "tokenizer.json: model.vocab['b'] is '1', not an int ID"),
        (_doc(model__merges=["a b", "ab"]), "tokenizer.json: model.merges[1] is 'ab'; expected \"left right\""),
        (_doc(model__merges=["a b", "b a"]), "tokenizer.json: model.merges[1] (b'b', b'a'): b'ba' is not in the vocab"),
        (_doc(model__merges=[["a", "b"], ["a", "b"]]), "tokenizer.json: merge 1 (b'a', b'b') repeats merge 0"),
        (_doc(added_tokens=[{"content": 3}]), "tokenizer.json: added_tokens[0] needs a string content and an int id"),
    ],
)
def test_bad_files_say_what_and_where(text: str, message: str) -> None:
    with pytest.raises(FormatError) as info:
        loads_hf_json(text)
    assert str(info.value).startswith(message)


@settings(max_examples=40, deadline=None, database=None)
@given(bpe_models())
def test_round_trip_property(model: tuple[dict[int, bytes], list[tuple[bytes, bytes]]]) -> None:
    vocab, merges = model
    assert loads_hf_json(dumps_hf_json(vocab, merges)) == (vocab, merges, [], "gpt2")

"""core.pipeline.models against the models of Hugging Face ``tokenizers``.

The oracle is ``tokenizers.models.*.tokenize(word)``, fed the very same vocab and merges:
models trained by ``tokenizers``' own trainers on the built-in corpus (BPE with a
``##`` prefix, with a ``</w>`` suffix, byte-level BPE, WordPiece) and the Llama 2 / Mistral
vocab (byte fallback), compared on corpus words, edge-case words and arbitrary text.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine import bpe
from core.train.builtin_corpus import builtin_corpus_text
from core.errors import FormatError, PlaygroundError
from core.pipeline.models import (
    BPEModel,
    WordLevelModel,
    WordPieceModel,
    model_from_json,
)
from tests.conftest import need_module

# Words the trained vocabularies mostly lack: other scripts, emoji sequences, digits,
# marks, a long word (past WordPiece's 100-character limit).
EDGE_WORDS = [
    "",
    "a",
    "the",
    "DON'T",
    "don't",
    "naïve",
    "Ünïcödé",
    "日本語のテキスト",
    "Здравствуйте",
    "مرحبا",
    "שָׁלוֹם",
    "👨‍👩‍👧‍👦",
    "🏳️‍🌈",
    "e\u0301\u0302",
    "1234567890",
    "3.14159",
    "\t\n\r",
    "▁▁▁▁",
    "x" * 150,
    "ab" * 300,
    "internationalization",
    "\u200b\u200d",
    "<unk>",
    "[UNK]",
    "<0x41>",
]

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=60
)
TEXT_LIKELY = st.text(
    alphabet=st.sampled_from("abcdefghilmnorstu ABCTE.,'-0123é日🤗\n"), max_size=60
)


def corpus_words(limit: int = 3000) -> list[str]:
    seen: dict[str, None] = {}
    for word in builtin_corpus_text()[:400_000].split():
        seen.setdefault(word, None)
        if len(seen) >= limit:
            break
    return list(seen)


# ----------------------------------------------------------------------------------------
# Oracles
# ----------------------------------------------------------------------------------------


def train(kind: str, **options: Any) -> dict[str, Any]:
    """The ``model`` section of a tokenizer trained by ``tokenizers`` on the corpus."""
    tk = need_module("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    corpus = builtin_corpus_text()[:300_000]
    if kind == "wordpiece":
        tok = tk.Tokenizer(models.WordPiece(unk_token="[UNK]", **options))
        trainer = trainers.WordPieceTrainer(
            vocab_size=3000, special_tokens=["[UNK]"], show_progress=False
        )
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    elif kind == "bytelevel":
        tok = tk.Tokenizer(models.BPE(**options))
        trainer = trainers.BpeTrainer(
            vocab_size=1500,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        affixes = {
            k: v
            for k, v in options.items()
            if k in ("continuing_subword_prefix", "end_of_word_suffix")
        }
        tok = tk.Tokenizer(models.BPE(unk_token="[UNK]", **options))
        trainer = trainers.BpeTrainer(
            vocab_size=2000, special_tokens=["[UNK]"], show_progress=False, **affixes
        )
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([corpus], trainer)
    return json.loads(tok.to_str())["model"]


def hf_model(section: dict[str, Any]) -> Any:
    """The same model section loaded by ``tokenizers``."""
    tk = need_module("tokenizers")
    doc = {"version": "1.0", "added_tokens": [], "model": section}
    return tk.Tokenizer.from_str(json.dumps(doc)).model


def llama_section() -> dict[str, Any]:
    """The Llama 2 / Mistral 7B v0.1 BPE model section, as ``transformers`` converts the
    SentencePiece file shipped in ``mistral_common``."""
    need_module("sentencepiece")
    need_module("mistral_common")
    convert = need_module("transformers.convert_slow_tokenizer")
    from importlib import resources

    from tokenizers.models import BPE

    path = resources.files("mistral_common").joinpath("data", "tokenizer.model.v1")
    extracted = convert.SentencePieceExtractor(str(path)).extract(BPE)
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": "<unk>",
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": True,
        "byte_fallback": True,
        "ignore_merges": False,
        "vocab": extracted["vocab"],
        "merges": [list(pair) for pair in extracted["merges"]],
    }


SECTIONS: dict[str, Any] = {
    "bpe-prefix": lambda: train("bpe", continuing_subword_prefix="##"),
    "bpe-suffix": lambda: train("bpe", end_of_word_suffix="</w>"),
    "bpe-prefix-fuse": lambda: train(
        "bpe", continuing_subword_prefix="##", fuse_unk=True
    ),
    "bytelevel": lambda: train("bytelevel"),
    "bytelevel-ignore-merges": lambda: train("bytelevel", ignore_merges=True),
    "wordpiece": lambda: train("wordpiece"),
    "llama": llama_section,
}


@pytest.fixture(scope="module", params=sorted(SECTIONS))
def pair(request: pytest.FixtureRequest) -> tuple[str, Any, Any]:
    """(name, our model, the oracle's model) for the same model section."""
    section = SECTIONS[request.param]()
    return request.param, model_from_json(section), hf_model(section)


def byte_offsets(word: str, start: int, end: int) -> tuple[int, int]:
    return len(word[:start].encode()), len(word[:end].encode())


def check_word(ours: Any, oracle: Any, word: str) -> None:
    got = ours.tokenize(word)
    expected = oracle.tokenize(word)
    assert [t[0] for t in got] == [t.id for t in expected], word
    # offsets are comparable when each character started as one part of its own: HF
    # counts a byte-fallback token as one byte and a dropped character as none, and
    # lists a pending unknown token after the bytes that fell back behind it
    symbols = getattr(ours, "_symbols", None)
    in_order = all(a[2] <= b[1] for a, b in itertools.pairwise(got))
    if in_order and (symbols is None or len(symbols(word)[0]) == len(word)):
        assert [byte_offsets(word, s, e) for _, s, e in got] == [
            t.offsets for t in expected
        ], word


# ----------------------------------------------------------------------------------------
# Against the oracle
# ----------------------------------------------------------------------------------------


def test_corpus_and_edge_words_match(pair: tuple[str, Any, Any]) -> None:
    _name, ours, oracle = pair
    words = corpus_words() + EDGE_WORDS
    for word in words:
        check_word(ours, oracle, word)
    # and every word again from the cache
    for word in words[:200]:
        check_word(ours, oracle, word)


def test_words_with_spaces_inside_match(pair: tuple[str, Any, Any]) -> None:
    # without a pre-tokenizer a model sees whole lines (Llama's Metaspace split=False)
    _name, ours, oracle = pair
    text = builtin_corpus_text()[:20_000].replace(" ", "▁")
    for line in text.splitlines()[:300]:
        check_word(ours, oracle, line)
    check_word(ours, oracle, text[:5000])  # long: cut where no token can span
    if isinstance(ours, BPEModel) and ours._cuttable:
        # the cut path and the plain (heap) path agree, offsets included
        for sample in (text[:5000], "▁".join(EDGE_WORDS) * 3):
            assert ours._tokenize_long(sample) == list(ours._tokenize_word(sample))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_arbitrary_text_matches(pair: tuple[str, Any, Any], text: str) -> None:
    _name, ours, oracle = pair
    check_word(ours, oracle, text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT_LIKELY)
def test_likely_text_matches(pair: tuple[str, Any, Any], text: str) -> None:
    _name, ours, oracle = pair
    check_word(ours, oracle, text)


# ----------------------------------------------------------------------------------------
# BPE details, each against the oracle on a tiny hand-made vocab
# ----------------------------------------------------------------------------------------

TINY = {"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "bc": 5, "abc": 6}


def both(vocab: dict[str, int], merges: list[tuple[str, str]], **options: Any) -> tuple:
    section = {"type": "BPE", "vocab": vocab, "merges": [list(m) for m in merges]}
    section.update(options)
    return model_from_json(section), hf_model(section)


@pytest.mark.parametrize(
    ("options", "word"),
    [
        ({"unk_token": "<unk>"}, "abzzc"),
        ({"unk_token": "<unk>", "fuse_unk": True}, "abzzcz"),
        ({"unk_token": "<unk>", "fuse_unk": True}, "zzz"),
        ({}, "azzbc"),  # no unknown token: Hugging Face drops the characters
        ({"ignore_merges": True}, "abc"),
        ({"ignore_merges": True}, "abcabc"),
        ({}, "abcabc"),
        ({}, "aaabbbccc"),
    ],
)
def test_unknown_and_ignore_merges_match(options: dict[str, Any], word: str) -> None:
    ours, oracle = both(TINY, [("b", "c"), ("a", "b"), ("a", "bc")], **options)
    check_word(ours, oracle, word)


def test_ignore_merges_takes_the_whole_word_first() -> None:
    # merges could never build "abc" from "ab" + "c" here, but the word is a token
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}
    ours, oracle = both(vocab, [("a", "b")], ignore_merges=True)
    assert [t[0] for t in ours.tokenize("abc")] == [4]
    check_word(ours, oracle, "abc")
    plain, oracle = both(vocab, [("a", "b")])
    assert [t[0] for t in plain.tokenize("abc")] == [3, 2]
    check_word(plain, oracle, "abc")


def test_rank_order_not_list_position_decides() -> None:
    # (b, c) ranks before (a, b): "abc" -> a + bc, though "ab" comes first in the text
    ours, oracle = both(TINY, [("b", "c"), ("a", "b"), ("a", "bc")])
    assert [t[0] for t in ours.tokenize("abcab")] == [6, 4]
    check_word(ours, oracle, "abcab")


def test_a_repeated_merge_keeps_its_last_rank() -> None:
    # ("a", "b") listed at ranks 0 and 2: Hugging Face's map keeps rank 2, so (b, c)
    # (rank 1) goes first
    merges = [("a", "b"), ("b", "c"), ("a", "b"), ("a", "bc")]
    ours, oracle = both(TINY, merges)
    check_word(ours, oracle, "abc")
    assert [t[0] for t in ours.tokenize("abc")] == [6]


def test_prefix_is_dropped_from_the_right_part_of_a_merge() -> None:
    vocab = {"u": 0, "##n": 1, "un": 2, "##a": 3, "##b": 4, "##ab": 5, "unab": 6}
    merges = [("u", "##n"), ("##a", "##b"), ("un", "##ab")]
    ours, oracle = both(vocab, merges, continuing_subword_prefix="##")
    assert ours.tokenize("unab") == [(6, 0, 4)]
    check_word(ours, oracle, "unab")


def test_suffix_marks_the_last_character() -> None:
    vocab = {"a": 0, "b": 1, "b</w>": 2, "ab</w>": 3, "ab": 4}
    merges = [("a", "b</w>"), ("a", "b")]
    ours, oracle = both(vocab, merges, end_of_word_suffix="</w>")
    for word in ["ab", "abab", "ba", "b"]:
        check_word(ours, oracle, word)
    assert [t[0] for t in ours.tokenize("abab")] == [4, 3]


def test_byte_fallback_needs_every_byte() -> None:
    # "é" is C3 A9: only C3 exists, so é is unknown, while "A" (41) falls back
    vocab = {"<unk>": 0, "a": 1, "<0xC3>": 2, "<0x41>": 3}
    ours, oracle = both(vocab, [], unk_token="<unk>", byte_fallback=True)
    for word in ["aé", "éAé", "aAa", "éé", "éaé"]:
        check_word(ours, oracle, word)
    assert [t[0] for t in ours.tokenize("aé")] == [1, 0]


def test_byte_fallback_lands_before_a_pending_unknown_token() -> None:
    # Hugging Face keeps an unknown token pending while bytes fall back after it
    vocab = {"<unk>": 0, "a": 1, "<0x41>": 3}
    ours, oracle = both(vocab, [], unk_token="<unk>", byte_fallback=True, fuse_unk=True)
    check_word(ours, oracle, "éAé")
    assert [t[0] for t in ours.tokenize("éAé")] == [3, 0]


def test_heap_and_list_merges_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    ours, oracle = both(TINY, [("b", "c"), ("a", "b"), ("a", "bc")])
    word = "abcabcbcababcc" * 40  # longer than the list path takes
    check_word(ours, oracle, word)
    ids, spans = ours._symbols(word)
    monkeypatch.setattr(bpe, "LONG_WORD", len(ids))  # the list path, however long the word
    runs = []
    for heap in (True, False):
        log: list[tuple[int, int, int]] = []
        kept = list(spans)
        merged = bpe.merge(list(ids), ours._ranks, ours._merged, log=log, spans=kept, heap=heap)
        runs.append((merged, log, kept))
    assert runs[0] == runs[1]


def test_trace_replays_tokenize() -> None:
    section = train("bpe", continuing_subword_prefix="##")
    model = model_from_json(section)
    for word in corpus_words(300):
        steps = model.trace(word)
        tokens = [model.id_to_token(i) for i, _, _ in model.tokenize(word)]
        start = [model.id_to_token(i) for i in model._symbols(word)[0]]
        assert (list(steps[-1].after) if steps else start) == tokens
        for step in steps:
            assert step.before[step.position] == step.left
            assert step.before[step.position + 1] == step.right
            assert step.after[step.position] == step.merged
            assert len(step.after) == len(step.before) - 1


def test_trace_steps_are_single_merges() -> None:
    model = BPEModel({"a": 0, "b": 1, "ab": 2, "abab": 3}, [("a", "b"), ("ab", "ab")])
    steps = model.trace("abab")
    assert [(s.left, s.right, s.merged, s.position) for s in steps] == [
        ("a", "b", "ab", 0),
        ("a", "b", "ab", 1),
        ("ab", "ab", "abab", 0),
    ]
    assert steps[0].before == ("a", "b", "a", "b")
    assert steps[-1].after == ("abab",)
    assert BPEModel({"ab": 0}, [], ignore_merges=True).trace("ab") == []


def test_cache_is_bounded() -> None:
    model = BPEModel(TINY, [("a", "b")], unk_token="<unk>", cache_size=10)
    for k in range(100):
        model.tokenize("ab" + "c" * (k % 37) + "x" * (k // 37))
    assert len(model._cache) <= 10
    assert model.tokenize("abc") == [(4, 0, 2), (3, 2, 3)]
    long_word = "ab" * 200
    model.tokenize(long_word)
    assert long_word not in model._cache


# ----------------------------------------------------------------------------------------
# WordPiece and WordLevel details
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "word", ["unaffable", "unable", "una", "x", "affable", "un" * 60, "ununaff"]
)
def test_wordpiece_greedy_longest_match(word: str) -> None:
    vocab = {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "##a": 4, "##un": 5, "u": 6}
    section = {
        "type": "WordPiece",
        "vocab": vocab,
        "unk_token": "[UNK]",
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": 100,
    }
    check_word(model_from_json(section), hf_model(section), word)


def test_wordpiece_limit_and_unknown_are_whole_word() -> None:
    m = WordPieceModel({"[UNK]": 0, "a": 1, "##a": 2}, max_input_chars_per_word=3)
    assert m.tokenize("aaa") == [(1, 0, 1), (2, 1, 2), (2, 2, 3)]
    assert m.tokenize("aaaa") == [(0, 0, 4)]
    assert m.tokenize("aab") == [(0, 0, 3)]


def test_wordlevel_matches() -> None:
    section = {
        "type": "WordLevel",
        "vocab": {"<unk>": 0, "hi": 1},
        "unk_token": "<unk>",
    }
    ours, oracle = model_from_json(section), hf_model(section)
    for word in ["hi", "ho", "日本", "hi hi"]:
        check_word(ours, oracle, word)


def test_missing_unknown_token_is_a_clear_error() -> None:
    with pytest.raises(PlaygroundError, match="unknown token"):
        WordPieceModel({"a": 0}).tokenize("b")
    with pytest.raises(PlaygroundError, match="unknown token"):
        WordLevelModel({"a": 0}).tokenize("b")
    with pytest.raises(PlaygroundError, match="unknown token"):
        BPEModel({"a": 0}, [], unk_token="<unk>").tokenize("b")


# ----------------------------------------------------------------------------------------
# Reading model sections
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "message"),
    [
        # (Unigram models load: tests/pipeline/test_unigram.py; these are broken ones)
        ({"type": "Unigram", "vocab": [["a", "x"]]}, "model.vocab\\[0\\]"),
        ({"vocab": [["a", 0.0]], "unk_id": 3}, "unk_id 3 is past the end"),
        ({"type": "WordPiece", "vocab": [["a", 0.0]]}, "only a Unigram model"),
        ({"type": "Nope"}, "BPE, Unigram, WordPiece"),
        ({"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1}, "dropout"),
        ({"type": "BPE", "vocab": {"a": 0}, "merges": ["a a a"]}, "merges\\[0\\]"),
        (
            {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]},
            "'b'.*not in model.vocab",
        ),
        ({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}, "makes 'ab'"),
        ({"type": "BPE", "vocab": {"a": -1}, "merges": []}, "not a token ID"),
        ({"type": "BPE", "vocab": {"a": 0}}, "merges must be a list"),
        ({"type": "WordPiece", "vocab": "x"}, "model.vocab must be an object"),
        ("BPE", "not an object"),
    ],
)
def test_bad_sections_name_the_problem(section: Any, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        model_from_json(section, name="t.json")


def test_untyped_sections_are_guessed_like_hugging_face() -> None:
    assert isinstance(model_from_json({"vocab": {"a": 0}, "merges": []}), BPEModel)
    wordpiece = {"vocab": {"a": 0}, "max_input_chars_per_word": 5}
    assert isinstance(model_from_json(wordpiece), WordPieceModel)
    assert isinstance(model_from_json({"vocab": {"a": 0}}), WordLevelModel)


def test_dropout_zero_and_merge_pairs_are_accepted() -> None:
    section = {"type": "BPE", "vocab": TINY, "merges": [["a", "b"]], "dropout": 0.0}
    assert model_from_json(section).tokenize("ab") == [(4, 0, 2)]

"""One door for every tokenizer (core.interface): every tokenizer class satisfies
``TokenizerInterface``, each capability it declares is something it can do, and its
``fingerprint()`` changes with whatever changes its output, and with nothing else."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest

from core.explain.baselines import CharBPETokenizer, WordTokenizer
from core.engine.bytes_unicode import to_gpt2_str
from core.engine.fingerprint import fingerprint_of
from core.formats.detect import export_all, load_tokenizer_files
from core.interface import Capabilities, DetailedTokenizer, ScoredTokenizer, TokenizerInterface
from core.services.library import TokenizerLibrary
from core.pipeline.decoders import WordPiece as WordPieceDecoder
from core.pipeline.hf import pipeline_from_hf_json
from core.pipeline.models import BPEModel, WordLevelModel
from core.pipeline.normalizers import Lowercase, NFC
from core.pipeline.pre_tokenizers import Whitespace, WhitespaceSplit
from core.pipeline.sentencepiece import SentencePieceDecoder, sentencepiece_tokenizer
from core.pipeline.tokenizer import AddedToken, PipelineTokenizer
from core.formats.presets import load_preset
from core.explain.replay import TextReplay, replay_problem
from core.engine.template import Template
from core.engine.tokenizer import Tokenizer
from core.train import train_bpe
from tests.conftest import need_module

CORPUS = ("the cat sat on the mat. the dog sat on the log. tokenizers split text; "
          "naïve café 日本 🧩\n") * 10
SPECIAL = "<|endoftext|>"
TEXT = "the cat sat, naïve 日本 🧩 zxqv"
NASTY = "Hi\tthere\r\n  ünïcödé 日本語 🧩👩‍👩‍👧 \x00\x7f\u200b e\u0301 " + SPECIAL


# ---- one tokenizer of every class and kind ------------------------------------------------


def _trained() -> Tokenizer:
    vocab, merges = train_bpe([CORPUS], 320, [SPECIAL])
    return Tokenizer(vocab, merges, [SPECIAL], name="trained")


def _hf(doc: dict[str, Any]) -> PipelineTokenizer:
    return pipeline_from_hf_json(doc, name="tokenizer.json")


WORD_LEVEL_DOC = {
    "model": {"type": "WordLevel", "unk_token": "<unk>",
              "vocab": {"<unk>": 0, "hi": 1, "Hi": 2, "the": 3, "cat": 4}},
    "pre_tokenizer": {"type": "Whitespace"},
}
WORD_PIECE_DOC = {
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "the": 3, "cat": 4, "s": 5,
                        "##at": 6, "na": 7, "##ive": 8}},
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                   "strip_accents": None, "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "added_tokens": [
        {"id": i, "content": t, "special": True, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False} for i, t in ((1, "[CLS]"), (2, "[SEP]"))],
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
}
BPE_DOC = {
    "model": {"type": "BPE", "unk_token": "<unk>", "merges": ["t h", "th e", "c a", "ca t"],
              "vocab": {"<unk>": 0, "t": 1, "h": 2, "e": 3, "c": 4, "a": 5, "s": 6,
                        "th": 7, "the": 8, "ca": 9, "cat": 10}},
    "pre_tokenizer": {"type": "Whitespace"},
}


def _mistral() -> PipelineTokenizer:
    need_module("mistral_common")
    data = resources.files("mistral_common").joinpath("data", "tokenizer.model.v1").read_bytes()
    return sentencepiece_tokenizer(data, name="tokenizer.model.v1")


def _unigram() -> PipelineTokenizer:
    from tests.pipeline.test_unigram import trained

    return sentencepiece_tokenizer(trained("nmt_nfkc"), name="spiece.model")


CASES: dict[str, Callable[[], Any]] = {
    "byte-level BPE, trained": _trained,
    "byte-level BPE, GPT-2 preset": lambda: load_preset("gpt2"),
    "byte-level BPE by rank, GPT-4 preset": lambda: load_preset("cl100k_base"),
    "pipeline, WordLevel": lambda: _hf(WORD_LEVEL_DOC),
    "pipeline, WordPiece": lambda: _hf(WORD_PIECE_DOC),
    "pipeline, BPE": lambda: _hf(BPE_DOC),
    "pipeline, SentencePiece BPE": _mistral,
    "pipeline, SentencePiece Unigram": _unigram,
    "baseline, word-level": lambda: WordTokenizer.train(CORPUS),
    "baseline, char-level BPE": lambda: CharBPETokenizer.train(CORPUS, 60),
}


@functools.cache
def _built(case: str) -> Any:
    return CASES[case]()


@pytest.fixture(params=list(CASES))
def tok(request: pytest.FixtureRequest) -> Any:
    return _built(request.param)


# ---- the door ------------------------------------------------------------------------------


def test_every_tokenizer_is_behind_the_one_door(tok: Any) -> None:
    assert isinstance(tok, TokenizerInterface)
    assert isinstance(tok.capabilities, Capabilities)
    assert isinstance(tok.name, str) and tok.kind and isinstance(tok.kind, str)
    ids = tok.encode(TEXT)
    assert ids and all(isinstance(i, int) and 0 <= i < tok.n_vocab for i in ids)
    assert isinstance(tok.decode(ids), str)
    wrapped = tok.encode(TEXT, add_special_tokens=True)
    assert wrapped == tok.template.apply(ids)
    assert tok.unk_id is None or 0 <= tok.unk_id < tok.n_vocab
    assert all(isinstance(tok.id_to_piece(i), str) and tok.id_to_piece(i) for i in ids)
    assert tok.id_to_piece(tok.n_vocab + 10) == ""
    fingerprint = tok.fingerprint()
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint)
    assert tok.fingerprint() is fingerprint  # computed once, kept on the object


def test_the_door_is_exported_by_core() -> None:
    import core

    assert core.TokenizerInterface is TokenizerInterface
    assert core.DetailedTokenizer is DetailedTokenizer
    assert core.Capabilities is Capabilities


def test_tokenizers_of_different_content_have_different_fingerprints() -> None:
    fingerprints = {case: _built(case).fingerprint() for case in CASES}
    assert len(set(fingerprints.values())) == len(fingerprints), fingerprints


# ---- each declared capability is something the tokenizer can do -------------------------


def test_details_promise_the_detailed_interface(tok: Any) -> None:
    assert tok.capabilities.details == isinstance(tok, DetailedTokenizer)
    if not tok.capabilities.details:
        return
    ids = tok.encode(TEXT)
    details = tok.encode_details(TEXT)
    assert [t.id for t in details.tokens] == ids
    assert tok.decode_details(ids).text == tok.decode(ids)
    with_template = tok.encode_details(TEXT, add_special_tokens=True)
    assert [t.id for t in with_template.tokens] == tok.encode(TEXT, add_special_tokens=True)
    assert isinstance(tok.merge_trace("the"), list)
    assert tok.merge_tree(ids[0]) is not None
    assert all(isinstance(b, bytes) for b in list(tok.vocab.values())[:1000])
    assert all(isinstance(a, bytes) and isinstance(b, bytes) for a, b in tok.merges[:1000])
    assert isinstance(tok.pattern, str) and isinstance(tok.special_tokens, list)


def test_scores_promise_scores_and_best_paths(tok: Any) -> None:
    if not tok.capabilities.scores:
        return
    assert isinstance(tok, ScoredTokenizer) and tok.capabilities.details
    assert not tok.capabilities.replay and tok.merges == []
    ids = tok.encode(TEXT)
    assert all(isinstance(tok.score(i), float) for i in ids)
    paths = tok.split_paths(TEXT)
    assert [n.id for p in paths for n in p.best.nodes if not n.unknown] == [
        i for i in ids if i != tok.model.unk_id]


def test_merges_promise_a_merge_trace_and_trees(tok: Any) -> None:
    words = TEXT.split()
    if not tok.capabilities.merges:  # whole pieces (or no details at all): nothing merged
        if tok.capabilities.details:
            assert all(tok.merge_trace(w) == [] for w in words)
            assert all(tok.merge_tree(i).rank is None for i in tok.encode(TEXT))
        return
    assert tok.capabilities.details and not tok.capabilities.scores
    assert any(tok.merge_trace(w) for w in words)
    assert any(tok.merge_tree(i).rank is not None for i in tok.encode(TEXT))


def test_byte_level_promises_any_text_and_the_gpt2_spelling(tok: Any) -> None:
    if not tok.capabilities.byte_level:
        return
    assert tok.unk_id is None
    for text in (NASTY, TEXT, "\U0010fffd" * 3):
        assert tok.decode(tok.encode(text)) == text
    for token_id in tok.encode(NASTY):
        assert tok.id_to_piece(token_id) == to_gpt2_str(tok.vocab[token_id])


def test_replay_promises_a_replay_that_ends_at_the_tokenizer(tok: Any) -> None:
    if not tok.capabilities.replay:
        assert replay_problem(tok) is not None
        return
    assert replay_problem(tok) is None
    if tok.by_rank:
        return  # (a full replay of 100k derived merges is test_replay's business)
    replay = TextReplay(tok, TEXT)
    assert replay.ids(len(tok.merges)) == tok.encode(TEXT)


def test_export_promises_a_file_that_loads_back(tok: Any) -> None:
    if not tok.capabilities.export:
        return
    exported = export_all(tok)
    (name,) = [n for n in exported if n.endswith(".tiktoken")]
    back = load_tokenizer_files({name: exported[name]}, pattern=tok.pattern,
                                special_tokens=list(tok.special_tokens))
    ordinary = TEXT.replace(SPECIAL, "")
    assert back.encode(ordinary) == tok.encode(ordinary)


def test_save_promises_the_same_tokenizer_back_from_the_library(tok: Any, tmp_path) -> None:
    if not tok.capabilities.save:
        return
    library = TokenizerLibrary(tmp_path)
    entry = library.save(tok.vocab, tok.merges, name="t", pattern=tok.pattern,
                         special_tokens=list(tok.special_tokens))
    vocab, merges, specials, pattern = library.load(entry.id)
    back = Tokenizer(vocab, merges, specials or None, pattern=pattern)  # as ui.cache loads it
    assert back.fingerprint() == tok.fingerprint()
    assert back.encode(NASTY) == tok.encode(NASTY)


def test_what_the_library_would_lose_is_not_promised() -> None:
    trained = _trained()
    base = {i: bytes([i]) for i in range(256)}
    assert trained.capabilities.save
    assert not load_preset("cl100k_base").capabilities.save  # ranks
    assert not load_preset("gpt2").capabilities.save  # ignore_merges, as tiktoken
    assert not Tokenizer(base, [], template=Template((1,), (), "x $A")).capabilities.save
    assert not Tokenizer(base, [], specials_in_text=False).capabilities.save


def test_a_pipelines_capabilities_come_from_its_model_and_no_loader_sets_them(tok: Any) -> None:
    """A PipelineTokenizer works its capabilities out in one place, from its model (merges
    for BPE, scores for Unigram) and chat template: a loader cannot set or replace them."""
    if not isinstance(tok, PipelineTokenizer):
        return
    declared = tok.model.capabilities
    assert (tok.capabilities.merges, tok.capabilities.scores) == (declared.merges, declared.scores)
    with pytest.raises(AttributeError):
        tok.capabilities = Capabilities(details=True)
    assert (tok.capabilities.merges, tok.capabilities.scores) == (declared.merges, declared.scores)


# ---- the fingerprint: everything that changes the output, and nothing else -----------------


def _pipeline(**changes: Any) -> PipelineTokenizer:
    parts: dict[str, Any] = {
        "model": WordLevelModel({"<unk>": 0, "hi": 1, "Hi": 2}),
        "pre_tokenizer": Whitespace(),
    }
    parts.update(changes)
    return PipelineTokenizer(**parts)


def test_pipelines_differing_by_one_stage_have_different_fingerprints() -> None:
    base = _pipeline()
    variants = {
        "normalizer": _pipeline(normalizer=Lowercase()),
        "another normalizer": _pipeline(normalizer=NFC()),
        "pre-tokenizer": _pipeline(pre_tokenizer=WhitespaceSplit()),
        "vocab": _pipeline(model=WordLevelModel({"<unk>": 0, "hi": 2, "Hi": 1})),
        "unknown token": _pipeline(model=WordLevelModel({"<unk>": 0, "hi": 1, "Hi": 2},
                                                        unk_token="Hi")),
        "decoder": _pipeline(decoder=WordPieceDecoder()),
        "template": _pipeline(template=Template((1,), (), "hi $A")),
        "added token": _pipeline(added_tokens=[AddedToken("[X]")]),
        "special added token": _pipeline(added_tokens=[AddedToken("[X]", special=True)]),
        "model": _pipeline(model=BPEModel({"<unk>": 0, "hi": 1, "Hi": 2}, [],
                                          unk_token="<unk>")),
    }
    seen = {base.fingerprint(): "base"}
    for what, tok in variants.items():
        assert tok.fingerprint() not in seen, (what, seen.get(tok.fingerprint()))
        seen[tok.fingerprint()] = what
    # the bug this fixes: the same vocab, a Lowercase normalizer, other IDs
    assert (base.encode("Hi"), variants["normalizer"].encode("Hi")) == ([2], [1])


def test_equal_pipelines_have_equal_fingerprints_whatever_built_them() -> None:
    from_file = _hf(BPE_DOC)
    model = BPE_DOC["model"]
    in_code = PipelineTokenizer(
        model=BPEModel(model["vocab"], [tuple(m.split()) for m in model["merges"]],
                       unk_token="<unk>"),
        pre_tokenizer=Whitespace(), name="in code", kind="another description",
    )
    assert in_code.fingerprint() == from_file.fingerprint()
    from_file.encode(CORPUS)  # a warm cache is not content
    assert _hf(BPE_DOC).fingerprint() == from_file.fingerprint()


def test_sentencepiece_decoders_differing_by_their_default_type_differ() -> None:
    table = {"<s>": 3, "<unk>": 2}  # CONTROL, UNKNOWN: what control={"<s>"} builds
    implicit = SentencePieceDecoder(control={"<s>"})
    explicit = SentencePieceDecoder(piece_type=dict(table))
    assert implicit.piece_type == explicit.piece_type
    assert implicit.decode(["▁x"]) != explicit.decode(["▁x"])
    assert fingerprint_of(implicit) != fingerprint_of(explicit)


def test_byte_level_fingerprints_follow_every_setting() -> None:
    vocab, merges = train_bpe([CORPUS], 300, [SPECIAL])
    base = Tokenizer(vocab, merges, [SPECIAL])
    variants = {
        "merges": Tokenizer(vocab, merges[:-1], [SPECIAL]),
        "merge order": Tokenizer(vocab, merges[1:] + merges[:1], [SPECIAL]),
        "specials": Tokenizer(vocab, merges, [SPECIAL, "<|pad|>"]),
        "pattern": Tokenizer(vocab, merges, [SPECIAL], pattern="cl100k"),
        "template": Tokenizer(vocab, merges, [SPECIAL], template=Template((0,), (), "x $A")),
        "ignore_merges": Tokenizer(vocab, merges, [SPECIAL], ignore_merges=True),
        "specials_in_text": Tokenizer(vocab, merges, [SPECIAL], specials_in_text=False),
        "by rank": Tokenizer(vocab, None, [SPECIAL]),
    }
    seen = {base.fingerprint(): "base"}
    for what, tok in variants.items():
        assert tok.fingerprint() not in seen, (what, seen.get(tok.fingerprint()))
        seen[tok.fingerprint()] = what
    same = Tokenizer(dict(vocab), list(merges), [SPECIAL], name="another name", cache_size=0)
    assert same.fingerprint() == base.fingerprint()


def test_a_rank_tokenizers_fingerprint_does_not_depend_on_derived_merges() -> None:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"}
    shown, fresh = Tokenizer(vocab, None), Tokenizer(vocab, None)
    assert shown.merges  # derives them
    assert shown.fingerprint() == fresh.fingerprint()


def test_baseline_fingerprints_follow_their_vocabulary() -> None:
    assert WordTokenizer.train("a b").fingerprint() == WordTokenizer.train("b a").fingerprint()
    assert WordTokenizer.train("a b").fingerprint() != WordTokenizer.train("a c").fingerprint()
    char = CharBPETokenizer.train(CORPUS, 60)
    assert char.fingerprint() != CharBPETokenizer.train(CORPUS, 61).fingerprint()
    assert char.fingerprint() != CharBPETokenizer.train(CORPUS, 60, unk_token=None).fingerprint()

"""The pipeline's typed seams: every model satisfies :class:`Model` (and the narrower
protocols its ``capabilities`` declare), every post-processor :class:`PostProcessor`, and a
:class:`PipelineTokenizer`'s capabilities follow from its model, set by no one else."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from typing import Any, Protocol

import pytest

import core.pipeline.models
import core.pipeline.sentencepiece
from core.interface import Capabilities
from core.pipeline import post_processors
from core.pipeline.hf import pipeline_from_hf_json
from core.pipeline.models import (
    BPEModel,
    BPEStep,
    MergeModel,
    Model,
    ModelCapabilities,
    ScoredModel,
    WordLevelModel,
    WordPieceModel,
)
from core.pipeline.models.unigram import SplitPaths, UnigramModel
from core.pipeline.post_processors import PostProcessor
from core.pipeline.sentencepiece.bpe import SentencePieceBPE
from core.pipeline.sentencepiece.proto import NORMAL, UNKNOWN, ProtoPiece
from core.pipeline.tokenizer import PipelineTokenizer

_SPM_PIECES = [ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1), ProtoPiece("b", -2),
               ProtoPiece("ab", -3)]  # fmt: skip
_UNIGRAM_PIECES = [("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -1.5)]

#: A small instance of every model class, by name.
MODELS: dict[str, Callable[[], Model]] = {
    "BPE": lambda: BPEModel({"a": 0, "b": 1, "ab": 2, "<unk>": 3}, [("a", "b")],
                            unk_token="<unk>"),
    "BPE from merge IDs": lambda: BPEModel(
        {"a": 0, "b": 1, "ab": 2}, [("a", "b")], merge_tables=({(0, 1): 0}, {0: 2})),
    "WordPiece": lambda: WordPieceModel({"[UNK]": 0, "a": 1, "##b": 2, "ab": 3}),
    "WordLevel": lambda: WordLevelModel({"<unk>": 0, "ab": 1}),
    "Unigram": lambda: UnigramModel(_UNIGRAM_PIECES, unk_id=0),
    "SentencePiece Unigram": lambda: UnigramModel(
        _UNIGRAM_PIECES, unk_id=0, flavour="sentencepiece",
        types=[UNKNOWN, NORMAL, NORMAL, NORMAL]),
    "SentencePiece BPE": lambda: SentencePieceBPE(_SPM_PIECES),
}  # fmt: skip


def members(protocol: type) -> set[str]:
    """The names a protocol declares (its own and its bases'): annotated attributes,
    properties and public methods."""
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass in (object, Protocol) or not getattr(klass, "_is_protocol", False):
            continue
        names |= set(vars(klass).get("__annotations__", {}))
        names |= {n for n, v in vars(klass).items()
                  if (callable(v) or isinstance(v, property)) and not n.startswith("_")}
    return names


def missing(obj: object, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks (a method must be callable)."""
    methods = {n for n in members(protocol) if callable(getattr(protocol, n, None))}
    return sorted(
        name for name in members(protocol)
        if not hasattr(obj, name) or (name in methods and not callable(getattr(obj, name)))
    )  # fmt: skip


def _classes_with(package: Any, method: str) -> set[type]:
    """Every class defined in ``package``'s modules that has ``method`` (protocols aside)."""
    found: set[type] = set()
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for _, klass in inspect.getmembers(module, inspect.isclass):
            if (klass.__module__ == module.__name__ and callable(getattr(klass, method, None))
                    and not getattr(klass, "_is_protocol", False)):
                found.add(klass)
    return found


def test_the_protocol_check_names_what_is_missing() -> None:
    class NoWordLoop:
        kind, vocab, byte_fallback, capabilities = "x", {}, False, ModelCapabilities()

        def tokenize(self, text: str) -> list[tuple[int, int, int]]:
            return []

        encode_word = id_to_token = token_to_id = get_vocab_size = clear_cache = tokenize
        encode_words = None  # not a method

    assert missing(NoWordLoop(), Model) == ["encode_words"]
    assert {"tokenize", "encode_words", "vocab", "capabilities"} <= members(Model)
    assert members(MergeModel) - members(Model) == {"merges", "continuing_subword_prefix",
                                                    "trace"}  # fmt: skip
    assert members(ScoredModel) - members(Model) == {"score", "split_paths"}


def test_every_model_class_is_tested_here() -> None:
    classes = (_classes_with(core.pipeline.models, "tokenize")
               | _classes_with(core.pipeline.sentencepiece, "tokenize"))  # fmt: skip
    assert classes == {type(make()) for make in MODELS.values()}


@pytest.mark.parametrize("name", MODELS)
def test_every_model_satisfies_the_model_protocol(name: str) -> None:
    model = MODELS[name]()
    assert missing(model, Model) == [] and isinstance(model, Model)
    assert isinstance(model.kind, str) and model.kind
    assert model.byte_fallback is False
    words = ["ab", "", "ba", "abab"]
    for word in words:
        tokens = model.tokenize(word)
        assert model.encode_word(word) == [t[0] for t in tokens]
        for token_id, _, _ in tokens:
            token = model.id_to_token(token_id)
            assert token is not None and model.token_to_id(token) == token_id
    out = [99]
    model.encode_words(words, out)
    assert out == [99] + [i for w in words for i in model.encode_word(w)]
    assert model.get_vocab_size() == len(model.vocab) > 0
    assert model.id_to_token(-1) is None and model.token_to_id("zz") is None
    model.clear_cache()
    assert model.encode_word("ab") == [t[0] for t in model.tokenize("ab")]


@pytest.mark.parametrize("name", MODELS)
def test_a_model_declares_exactly_the_narrower_protocols_it_satisfies(name: str) -> None:
    model = MODELS[name]()
    declared = model.capabilities
    assert isinstance(declared, ModelCapabilities)
    assert declared.merges == (missing(model, MergeModel) == [])
    assert declared.scores == (missing(model, ScoredModel) == [])
    if declared.merges:
        assert isinstance(model, MergeModel)
        assert all(isinstance(step, BPEStep) for step in model.trace("abab"))
        assert model.trace("ab")[-1].after == ("ab",)
    if declared.scores:
        assert isinstance(model, ScoredModel)
        assert model.score(1) == -1.0 and model.score(99) is None
        assert isinstance(model.split_paths("ab"), SplitPaths)


@pytest.mark.parametrize("name", MODELS)
def test_a_pipelines_capabilities_follow_from_its_model(name: str) -> None:
    model = MODELS[name]()
    tok = PipelineTokenizer(model=model)
    declared = model.capabilities
    assert tok.capabilities == Capabilities(details=True, merges=declared.merges,
                                            scores=declared.scores)  # fmt: skip
    assert tok.kind == model.kind
    assert (tok.merge_trace("ab") != []) is declared.merges
    assert (tok.split_paths("ab") != []) is declared.scores
    assert (tok.score(1) is not None) is declared.scores


def test_capabilities_are_set_once_by_the_tokenizer_not_by_a_loader() -> None:
    doc = {"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]}}
    tok = pipeline_from_hf_json(doc)
    assert tok.capabilities == Capabilities(details=True, scores=True)
    with pytest.raises(AttributeError):
        tok.capabilities = Capabilities(details=True)  # type: ignore[misc]
    assert tok.capabilities == Capabilities(details=True, scores=True)


# ---- post-processors --------------------------------------------------------------------

_SPECIALS = {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]}}
#: One section of every type the reader supports.
POST_PROCESSORS = {
    "TemplateProcessing": {"type": "TemplateProcessing", "single": "[CLS] $A",
                           "special_tokens": _SPECIALS},
    "BertProcessing": {"type": "BertProcessing", "cls": ["[CLS]", 1], "sep": ["[SEP]", 2]},
    "RobertaProcessing": {"type": "RobertaProcessing", "cls": ["<s>", 0], "sep": ["</s>", 2],
                          "trim_offsets": True, "add_prefix_space": True},
    "ByteLevel": {"type": "ByteLevel"},
    "Sequence": {"type": "Sequence", "processors": [{"type": "ByteLevel"}]},
}  # fmt: skip


def test_every_post_processor_type_is_tested_here() -> None:
    assert set(POST_PROCESSORS) == set(post_processors._READERS)


@pytest.mark.parametrize("kind", POST_PROCESSORS)
def test_every_post_processor_satisfies_the_protocol(kind: str) -> None:
    processor = post_processors._processor(POST_PROCESSORS[kind], "t.json", None)
    assert missing(processor, PostProcessor) == [] and isinstance(processor, PostProcessor)
    assert processor.process([(None,)], False) == [(None,)]


def test_every_post_processor_class_is_read_from_some_type() -> None:
    classes = {c for _, c in inspect.getmembers(post_processors, inspect.isclass)
               if c.__module__ == post_processors.__name__ and callable(getattr(c, "process", None))
               and c is not PostProcessor}  # fmt: skip
    made = {type(post_processors._processor(obj, "t.json", None))
            for obj in POST_PROCESSORS.values()}  # fmt: skip
    assert classes == made

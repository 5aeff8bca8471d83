"""What every model here shares: the :class:`Model` protocol (with :class:`MergeModel` and
:class:`ScoredModel` for what only some offer, declared by :class:`ModelCapabilities`), the
token triple, the word cache, the vocab reversed.

>>> cache = WordCache(lambda word: ((len(word), 0, len(word)),), maxsize=2)
>>> cache["hi"], cache["you"], len(cache)
(((2, 0, 2),), ((3, 0, 3),), 2)
>>> cache["again"]; len(cache)   # full: cleared wholesale, then this word kept
((5, 0, 5),)
1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard, runtime_checkable

from core.errors import PlaygroundError
from core.pipeline.models.unigram_paths import SplitPaths

__all__ = [
    "BPEStep",
    "VocabLookup",
    "DEFAULT_CACHE_SIZE",
    "MAX_CACHED_WORD",
    "MergeModel",
    "Model",
    "ModelCapabilities",
    "ScoredModel",
    "Token",
    "WordCache",
    "is_merge_model",
    "is_scored_model",
    "missing_unk",
    "reverse_vocab",
]


#: One token of a word: ``(id, start, end)``, character offsets into the word.
Token = tuple[int, int, int]

#: Entries in each model's word cache (cleared wholesale when full, as in
#: :class:`core.engine.tokenizer.Tokenizer`; ~100 bytes an entry).
DEFAULT_CACHE_SIZE = 1 << 16
#: Longer words are not cached. Hugging Face uses 256 *bytes* (``MAX_LENGTH``); a
#: SentencePiece-style tokenizer with no pre-tokenizer sends whole lines here, and those
#: rarely repeat.
MAX_CACHED_WORD = 256


# ----------------------------------------------------------------------------------------
# The Model protocol: what the pipeline asks of every model
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCapabilities:
    """What a model offers beyond :class:`Model`, declared as a tokenizer declares its
    :class:`core.interface.Capabilities`: callers ask ``model.capabilities``, never probe.
    :class:`core.pipeline.tokenizer.PipelineTokenizer` derives its own flags of the same
    names from these.

    ``merges``: it is a :class:`MergeModel` (BPE: tokens made by merges, which ``trace``
    shows); ``scores``: it is a :class:`ScoredModel` (Unigram: a score per piece, and "why
    this split" as the best path against the next best).

    >>> ModelCapabilities(merges=True)
    ModelCapabilities(merges=True, scores=False)
    """

    merges: bool = False
    scores: bool = False


@dataclass(frozen=True)
class BPEStep:
    """One merge BPE made in a word: ``left`` + ``right`` -> ``merged`` (merge ``rank``)
    at part ``position``; ``before``/``after``: the word's parts around the merge."""

    rank: int
    left: str
    right: str
    merged: str
    position: int
    before: tuple[str, ...]
    after: tuple[str, ...]


@runtime_checkable
class Model(Protocol):
    """What every pipeline model offers (``BPEModel``, ``WordPieceModel``,
    ``WordLevelModel``, ``UnigramModel``, ``SentencePieceBPE``): the stage that turns one
    word (a pre-token) into tokens, as Hugging Face's ``Model`` trait.

    (Its attributes are read-only here: a model may compute them, or keep them in its class.)
    """

    @property
    def kind(self) -> str:
        """What it is, for display (``"WordPiece"``, ``"BPE (byte fallback)"``)."""
        ...

    @property
    def vocab(self) -> Mapping[str, int]:
        """Token string -> ID."""
        ...

    @property
    def byte_fallback(self) -> bool:
        """Whether a character missing from the vocab becomes its UTF-8 bytes as ``<0xNN>``
        tokens (so such a token stands for one byte)."""
        ...

    @property
    def capabilities(self) -> ModelCapabilities:
        """Which of the narrower protocols it also satisfies."""
        ...

    def tokenize(self, text: str) -> list[Token]:
        """``(id, start, end)`` of each token of one word, offsets in characters of it."""
        ...

    def encode_word(self, word: str) -> list[int]:
        """``[t[0] for t in self.tokenize(word)]``, without spans (from a word cache)."""
        ...

    def encode_words(self, words: list[str], out: list[int]) -> None:
        """``out += self.encode_word(w)`` for each non-empty word: encoding's inner loop."""
        ...

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of an ID, or ``None``."""
        ...

    def token_to_id(self, token: str) -> int | None:
        """The ID of a token string, or ``None``."""
        ...

    def get_vocab_size(self) -> int:
        """How many entries the vocab has (Hugging Face's ``get_vocab_size``)."""
        ...

    def clear_cache(self) -> None:
        """Forget cached words (e.g. to time a cold encode)."""
        ...


@runtime_checkable
class MergeModel(Model, Protocol):
    """A model whose ``capabilities.merges`` is set (BPE): its tokens are made by merges.

    """

    @property
    def merges(self) -> Sequence[tuple[str, str]]:
        """``(left, right)`` in rank order (empty when the pieces' scores order the merges:
        SentencePiece BPE)."""
        ...

    @property
    def continuing_subword_prefix(self) -> str | None:
        """What ``right`` carries and the merged token drops (``"##"``), or ``None``."""
        ...

    def trace(self, text: str) -> list[BPEStep]:
        """The merges made in one word, in order."""
        ...


@runtime_checkable
class ScoredModel(Model, Protocol):
    """A model whose ``capabilities.scores`` is set (Unigram): a score per piece, and the
    best path of a word against the next best."""

    def score(self, token_id: int) -> float | None:
        """The piece's score (a log-probability), ``None`` outside the vocabulary."""
        ...

    def split_paths(self, text: str) -> SplitPaths:
        """The best path of one word and its runner-up."""
        ...


def is_merge_model(model: Model) -> TypeGuard[MergeModel]:
    """Whether ``model`` declares itself a :class:`MergeModel` (no attribute is probed).

    >>> from core.pipeline.models import WordLevelModel
    >>> is_merge_model(WordLevelModel({"<unk>": 0}))
    False
    """
    return model.capabilities.merges


def is_scored_model(model: Model) -> TypeGuard[ScoredModel]:
    """Whether ``model`` declares itself a :class:`ScoredModel` (no attribute is probed)."""
    return model.capabilities.scores


class VocabLookup:
    """The look-ups every Hugging Face model answers the same way, from its ``vocab``
    (token -> ID) and ``_id_to_token`` (:func:`reverse_vocab`), and the word loop of
    ``encode_words`` over its ``encode_word``.

    >>> class M(VocabLookup):
    ...     vocab, _id_to_token = {"a": 0}, {0: "a"}
    >>> M().id_to_token(0), M().token_to_id("b")
    ('a', None)
    """

    vocab: dict[str, int]
    _id_to_token: dict[int, str]
    encode_word: Callable[[str], list[int]]  # (each model's own)

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of an ID, or ``None``."""
        return self._id_to_token.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        """The ID of a token string, or ``None``."""
        return self.vocab.get(token)

    def get_vocab_size(self) -> int:
        """How many entries ``vocab`` has (Hugging Face's ``get_vocab_size``)."""
        return len(self.vocab)

    def encode_words(self, words: list[str], out: list[int]) -> None:
        """``out += self.encode_word(w)`` for each non-empty word.

        >>> from core.pipeline.models import WordLevelModel
        >>> out = [7]; WordLevelModel({"<unk>": 0, "hi": 1}).encode_words(["hi", "", "yo"], out)
        >>> out
        [7, 1, 0]
        """
        encode_word = self.encode_word
        for word in words:
            if word:
                out += encode_word(word)


class WordCache(dict):
    """``dict`` of word -> tokens (or token IDs: a model keeps one cache of each) that
    computes misses and clears itself when full. Misses are computed by ``__missing__``,
    so ``map(cache.__getitem__, words)`` runs in C for every word already seen."""

    __slots__ = ("_compute", "_maxsize")

    def __init__(self, compute: Callable[[str], tuple[Any, ...]], maxsize: int) -> None:
        super().__init__()
        self._compute = compute
        self._maxsize = maxsize

    def __missing__(self, word: str) -> tuple[Any, ...]:
        value = self._compute(word)
        self.keep(word, value)
        return value

    def keep(self, word: str, value: tuple[Any, ...]) -> None:
        """Remember ``value`` for ``word`` if the word is short enough (clearing the cache
        first when it is full)."""
        if len(word) <= MAX_CACHED_WORD and self._maxsize:
            if len(self) >= self._maxsize:
                self.clear()
            self[word] = value


def reverse_vocab(vocab: Mapping[str, int]) -> dict[int, str]:
    """ID -> token. If two strings share an ID (a malformed file) the first one wins;
    Hugging Face keeps an arbitrary one.

    >>> reverse_vocab({"a": 0, "b": 1}), reverse_vocab({"a": 0, "b": 0})
    ({0: 'a', 1: 'b'}, {0: 'a'})
    """
    out = dict(zip(vocab.values(), vocab.keys()))  # (one C pass, the usual case)
    if len(out) == len(vocab):
        return out
    out = {}
    for token, token_id in vocab.items():
        out.setdefault(token_id, token)
    return out


def missing_unk(unk: str | None, model: str) -> PlaygroundError:
    return PlaygroundError(
        f"this {model} tokenizer needs its unknown token {unk!r} for this text, but the "
        "vocab does not have it (Hugging Face fails the same way); add it to model.vocab"
    )

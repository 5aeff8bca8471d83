"""What every model here shares: the token triple, the word cache, the vocab reversed.

>>> cache = WordCache(lambda word: ((len(word), 0, len(word)),), maxsize=2)
>>> cache["hi"], cache["you"], len(cache)
(((2, 0, 2),), ((3, 0, 3),), 2)
>>> cache["again"]; len(cache)   # full: cleared wholesale, then this word kept
((5, 0, 5),)
1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from core.errors import PlaygroundError

__all__ = [
    "VocabLookup",
    "DEFAULT_CACHE_SIZE",
    "MAX_CACHED_WORD",
    "Model",
    "Token",
    "WordCache",
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


Model = Any  # BPEModel | WordPieceModel | WordLevelModel, or any object with tokenize()
# (and optionally encode_word)


class VocabLookup:
    """The two look-ups every Hugging Face model answers the same way, from its ``vocab``
    (token -> ID) and ``_id_to_token`` (:func:`reverse_vocab`).

    >>> class M(VocabLookup):
    ...     vocab, _id_to_token = {"a": 0}, {0: "a"}
    >>> M().id_to_token(0), M().token_to_id("b")
    ('a', None)
    """

    vocab: dict[str, int]
    _id_to_token: dict[int, str]

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of an ID, or ``None``."""
        return self._id_to_token.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        """The ID of a token string, or ``None``."""
        return self.vocab.get(token)


class WordCache(dict):  # type: ignore[type-arg]
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

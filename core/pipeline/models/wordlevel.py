"""Hugging Face's ``WordLevel`` model: the whole word is a token, or it is the unknown token.

>>> WordLevelModel({"<unk>": 0, "hi": 1}).tokenize("yo")
[(0, 0, 2)]
"""

from __future__ import annotations

from collections.abc import Mapping

from core.pipeline.models.base import (
    ModelCapabilities,
    Token,
    VocabLookup,
    missing_unk,
    reverse_vocab,
)

__all__ = ["WordLevelModel"]


class WordLevelModel(VocabLookup):
    """Hugging Face's ``WordLevel`` model: each word is one token, or ``unk_token``.

    >>> m = WordLevelModel({"<unk>": 0, "hi": 1})
    >>> m.tokenize("hi"), m.tokenize("yo")
    ([(1, 0, 2)], [(0, 0, 2)])
    """

    kind = "WordLevel"
    byte_fallback = False  # (no byte tokens)
    capabilities = ModelCapabilities()  # whole vocab entries: no merges, no scores

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "<unk>") -> None:
        self.vocab: dict[str, int] = dict(vocab)
        self.unk_token = unk_token
        self._id_to_token = reverse_vocab(self.vocab)

    def tokenize(self, text: str) -> list[Token]:
        """``[(id, 0, len(text))]``: the word's token, or the unknown token."""
        if not text:
            return []
        token_id = self.vocab.get(text)
        if token_id is None:
            token_id = self.vocab.get(self.unk_token)
            if token_id is None:
                raise missing_unk(self.unk_token, "WordLevel")
        return [(token_id, 0, len(text))]

    def encode_word(self, word: str) -> list[int]:
        """``[t[0] for t in self.tokenize(word)]``. No word cache: the vocab look-up is
        already one dict look-up per word, which is all a cache would be.

        >>> WordLevelModel({"<unk>": 0, "hi": 1}).encode_word("hi")
        [1]
        """
        if not word:
            return []
        token_id = self.vocab.get(word)
        if token_id is None:
            token_id = self.vocab.get(self.unk_token)
            if token_id is None:
                raise missing_unk(self.unk_token, "WordLevel")
        return [token_id]

    def clear_cache(self) -> None:
        """Nothing to forget (there is no word cache); here so every model has it."""

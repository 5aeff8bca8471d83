"""Hugging Face's ``WordLevel`` model: the whole word is a token, or it is the unknown token.

>>> WordLevelModel({"<unk>": 0, "hi": 1}).tokenize("yo")
[(0, 0, 2)]
"""

from __future__ import annotations

from collections.abc import Mapping

from core.pipeline.models.base import Token, VocabLookup, missing_unk, reverse_vocab

__all__ = ["WordLevelModel"]


class WordLevelModel(VocabLookup):
    """Hugging Face's ``WordLevel`` model: each word is one token, or ``unk_token``.

    >>> m = WordLevelModel({"<unk>": 0, "hi": 1})
    >>> m.tokenize("hi"), m.tokenize("yo")
    ([(1, 0, 2)], [(0, 0, 2)])
    """

    kind = "WordLevel"

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

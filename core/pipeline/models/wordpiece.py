"""Hugging Face's ``WordPiece`` model (BERT): greedy longest-match-first.

A word with any piece missing, or longer than ``max_input_chars_per_word``, is the unknown
token as a whole.

>>> WordPieceModel({"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3}).tokenize("unaffable")
[(1, 0, 2), (2, 2, 5), (3, 5, 9)]
"""

from __future__ import annotations

from collections.abc import Mapping

from core.pipeline.models.base import (
    DEFAULT_CACHE_SIZE,
    ModelCapabilities,
    Token,
    VocabLookup,
    WordCache,
    missing_unk,
    reverse_vocab,
)

__all__ = ["WordPieceModel"]


class WordPieceModel(VocabLookup):
    """Hugging Face's ``WordPiece`` model (BERT): from the start of the word, the longest
    vocab entry that matches (``continuing_subword_prefix`` before every piece but the
    first), then again from where it ended. A word with a piece that matches nothing, or
    of more than ``max_input_chars_per_word`` characters, is ``unk_token`` as a whole.

    >>> m = WordPieceModel({"[UNK]": 0, "a": 1, "##b": 2}, max_input_chars_per_word=3)
    >>> m.tokenize("ab"), m.tokenize("abbb"), m.tokenize("ba")
    ([(1, 0, 1), (2, 1, 2)], [(0, 0, 4)], [(0, 0, 2)])
    """

    kind = "WordPiece"
    byte_fallback = False  # (no byte tokens)
    capabilities = ModelCapabilities()  # whole vocab entries: no merges, no scores

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self.vocab: dict[str, int] = dict(vocab)
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        self._id_to_token = reverse_vocab(self.vocab)
        # no piece is longer than the longest token: start each search there, not at
        # the end of a long word
        self._longest = max(map(len, self.vocab), default=0)
        # two bounded caches: word -> tokens (spans, for the pages) and word -> IDs (encode)
        self._cache = WordCache(self._tokenize_word, max(0, int(cache_size)))
        self._ids = WordCache(self._word_ids, max(0, int(cache_size)))

    def clear_cache(self) -> None:
        """Forget cached words."""
        self._cache.clear()
        self._ids.clear()

    def tokenize(self, text: str) -> list[Token]:
        """``(id, start, end)`` of each piece of one word, in characters of ``text``."""
        if not text:
            return []
        return list(self._cache[text])

    def encode_word(self, word: str) -> list[int]:
        """The IDs of one word's pieces: ``[t[0] for t in self.tokenize(word)]``, from a
        cache of their own.

        >>> WordPieceModel({"[UNK]": 0, "un": 1, "##aff": 2}).encode_word("unaff")
        [1, 2]
        """
        return list(self._ids[word]) if word else []

    def _word_ids(self, word: str) -> tuple[int, ...]:
        # a word that is a token itself (most words of a BERT vocab): one look-up, which
        # is also the first one the greedy loop would try
        if len(word) <= self.max_input_chars_per_word:
            whole = self.vocab.get(word)
            if whole is not None:
                return (whole,)
        return tuple(token_id for token_id, _, _ in self._tokenize_word(word))

    def _unk(self, n: int) -> tuple[Token, ...]:
        unk_id = self.vocab.get(self.unk_token)
        if unk_id is None:
            raise missing_unk(self.unk_token, "WordPiece")
        return ((unk_id, 0, n),)

    def _tokenize_word(self, word: str) -> tuple[Token, ...]:
        n = len(word)
        if n > self.max_input_chars_per_word:
            return self._unk(n)
        vocab = self.vocab
        prefix = self.continuing_subword_prefix
        out: list[Token] = []
        start = 0
        while start < n:
            end = min(n, start + self._longest)
            while end > start:
                piece = word[start:end]
                token_id = vocab.get(prefix + piece if start else piece)
                if token_id is not None:
                    out.append((token_id, start, end))
                    break
                end -= 1
            else:
                return self._unk(n)
            start = end
        return tuple(out)

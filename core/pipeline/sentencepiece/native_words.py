"""SentencePiece BPE's words in C, where tokplay_native was built: the pre-token loop of
:meth:`core.pipeline.sentencepiece.bpe.SentencePieceBPE.encode_words`.

Per word, the pure path is a cache look-up, else BPE over the word's characters and each
symbol's ID (``<unk>`` spelled as byte pieces under byte fallback). ``tokplay_native.bpe``'s
``SpmWords`` does the same over the model's own dicts, and ``encode_words`` runs the whole
loop, cache included, so a typed sentence costs one call instead of one per word. Any word
it does not take (a user-defined piece's first character, over 256 characters, a lone
surrogate) goes to the model's own :meth:`encode_word`; models it cannot serve at all take
the pure loop: NaN scores (the heap-only order), UNUSED pieces (words are not independent)
and ``<unk>`` without byte fallback (runs of it merge across a word's symbols).
tests/test_native_bpe.py checks both paths give the same IDs and keep the same cache.
"""

from __future__ import annotations

from typing import Any, Protocol

from core import native

__all__ = ["NATIVE_WORDS", "encode_words"]

#: The attribute of a model holding its SpmWords (built on first use; not pickled).
NATIVE_WORDS = "_native_words"
#: Words longer than this many characters are not cached (SentencePieceBPE's own rule).
CACHE_WORD = 256
#: Entries a model's word cache holds before it is cleared (SentencePieceBPE's own rule).
CACHE_MAX = 200_000


class _Model(Protocol):
    """What :func:`encode_words` reads of a SentencePieceBPE."""

    vocab: dict[str, int]
    unk_id: int
    byte_fallback: bool
    _heap_only: bool
    _has_unused: bool
    _merge_rank: Any
    _byte_ids: list[int]
    _user_first: frozenset[str]
    _ids_cache: dict[str, tuple[int, ...]]

    def encode_word(self, text: str) -> list[int]: ...


def encode_words(model: _Model, words: list[str], out: list[int]) -> None:
    """``out += model.encode_word(w)`` for each non-empty word, in C where it can be."""
    fast = _native_words(model)
    if fast is None:
        for word in words:
            if word:
                out += model.encode_word(word)
        return
    native.bpe.encode_words(  # type: ignore[union-attr]
        words, model._ids_cache, fast, lambda word: tuple(model.encode_word(word)),
        CACHE_WORD, CACHE_MAX, out,
    )  # fmt: skip


def _native_words(model: _Model) -> Any:
    """The model's ``SpmWords`` (made on first use), or None for the pure path."""
    fast = native.bpe
    if fast is None or model._heap_only or model._has_unused or not model.byte_fallback:
        return None
    words = model.__dict__.get(NATIVE_WORDS)
    if words is None:
        try:
            words = fast.SpmWords(
                model._merge_rank, model.vocab, unk=model.unk_id, byte_ids=model._byte_ids,
                user_first="".join(sorted(model._user_first)),
            )  # fmt: skip
        except (TypeError, ValueError, OverflowError):  # a piece with a lone surrogate, say
            words = False
        setattr(model, NATIVE_WORDS, words)
    return words or None

"""SentencePiece BPE's words in C, where tokplay_native was built: the pre-token loop of
:meth:`core.pipeline.sentencepiece.bpe.SentencePieceBPE.encode_words`.

Per word, the pure path is a cache look-up, else BPE over the word's characters and each
symbol's ID (``<unk>`` spelled as byte pieces under byte fallback). ``tokplay_native.bpe``'s
``SpmWords`` does the same over one C table (each piece's rank and ID), built straight from
the model's piece columns by ``spm_words`` (:func:`columns_words`: no dict is made, so a
model loads without its Python tables), else from its dicts; ``encode_words`` runs the
whole loop, cache included, so a typed sentence costs one call instead of one per word. Any word
it does not take (a user-defined piece's first character, over 256 characters, a lone
surrogate) goes to the model's own :meth:`encode_word`; models it cannot serve at all take
the pure loop: NaN scores (the heap-only order), UNUSED pieces (words are not independent)
and ``<unk>`` without byte fallback (runs of it merge across a word's symbols).
tests/test_native_bpe.py checks both paths give the same IDs and keep the same cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from core.engine.bpe import (
    encode_words as _c_words,
    kept_table,
    spm_dict_words,
    spm_words,
    spm_words_raw,
)
from core.pipeline.sentencepiece.normalizer import PrefixMatcher
from core.pipeline.sentencepiece.packed import PieceColumns

__all__ = [
    "NATIVE_WORDS",
    "clear_cache",
    "columns_words",
    "encode_text",
    "encode_words",
    "packed_words",
]

#: The attribute of a model holding its SpmWords (built on first use; not pickled).
NATIVE_WORDS = "_native_words"
#: Words longer than this many characters are not cached (by SentencePieceBPE too).
CACHE_WORD = 256
#: Entries a model's word cache holds before it is cleared (by SentencePieceBPE too).
CACHE_MAX = 200_000
#: SentencePieceBPE.words splits a word longer than this many characters further (by its
#: bigrams): :func:`encode_text` hands such texts to the word loop.
LONG_WORD = 64


class _Model(Protocol):
    """What :func:`encode_words` reads of a SentencePieceBPE."""

    unk_id: int
    byte_fallback: bool
    _heap_only: bool
    _has_unused: bool
    _user_first: frozenset[str]
    _matcher: PrefixMatcher
    user_defined: list[str]
    _ids_cache: dict[str, tuple[int, ...]]

    def words(self, text: str) -> list[str]: ...

    # (read-only: the model makes these on first use)
    @property
    def _tokens(self) -> list[str]: ...
    @property
    def scores(self) -> list[float]: ...
    @property
    def _cut(self) -> Any: ...
    @property
    def types(self) -> list[int]: ...
    @property
    def _vocab(self) -> dict[str, int]: ...
    @property
    def _merge_rank(self) -> Any: ...
    @property
    def _byte_ids(self) -> list[int]: ...

    def encode_word(self, text: str) -> list[int]: ...


def encode_words(model: _Model, words: list[str], out: list[int]) -> None:
    """``out += model.encode_word(w)`` for each non-empty word, in C where it can be."""
    fast = _native_words(model)
    if fast is None:
        for word in words:
            if word:
                out += model.encode_word(word)
        return
    _c_words(words, model._ids_cache, fast, _fallback(model, fast), CACHE_WORD, CACHE_MAX, out)


def encode_text(model: _Model, text: str, out: list[int]) -> None:
    """``encode_words(model, model.words(text), out)``, in one C pass where it can be: the
    word cutter gives where the words start (``CharCuts.bounds``), and ``SpmWords`` encodes
    each from the text itself, with a word cache of its own keyed by the word's UTF-8. So
    no str is made for a word the table takes, nor a tuple to keep it: on a cold CPU cache
    those allocations cost more than the merges (a 50 KB mix of scripts: a third of the
    time). Long words (which :meth:`SentencePieceBPE.words` splits further) and models
    without the C twin take :func:`encode_words`."""
    fast = _native_words(model) if text else None
    bounds = getattr(model._cut, "bounds", None) if fast is not None else None
    if fast is not None and bounds is not None:
        at, longest = bounds(text)
        if longest <= LONG_WORD:
            fast.encode_bounds(text, at, _fallback(model, fast), CACHE_WORD, out)
            return
    encode_words(model, model.words(text), out)


def clear_cache(model: _Model) -> None:
    """Forget the words the model's C table kept (:func:`encode_text`), if it has one."""
    fast = getattr(model, "__dict__", {}).get(NATIVE_WORDS)
    if fast:
        fast.clear_cache()


def _fallback(model: _Model, fast: Any) -> Callable[[str], tuple[int, ...]]:
    """The IDs of a word the C loop hands back. One that only *starts* like a user-defined
    piece somewhere (a "[" in Mistral's models, whose user pieces are "[INST]"...) but holds
    none is plain BPE over its characters: the table's, without the model's Python loop."""
    search = model._matcher.regex.search if model._matcher.regex is not None else None

    def compute(word: str) -> tuple[int, ...]:
        if search is not None and search(word) is None:
            ids = fast.plain_ids(word)
            if ids is not None:
                return ids
        return tuple(model.encode_word(word))

    return compute


def columns_words(
    texts: list[str],
    scores: list[float],
    types: list[int],
    *,
    unk: int,
    byte_fallback: bool,
    user_defined: Iterable[str],
) -> Any:
    """An ``SpmWords`` straight from a model's piece columns, or None where there is none
    to build: no C twin, a NaN score among the pieces merged into (the heap-only order),
    columns of other types, a text with a lone surrogate. Raises ValueError when a text is
    empty or spelled twice, which the loader refuses (it names the piece itself).

    >>> table = columns_words(["<unk>", "a", "b", "ab"], [0.0, -1.0, -1.0, -3.0], [2, 1, 1, 1],
    ...                       unk=0, byte_fallback=False, user_defined=[])
    >>> table is None or table.piece_id("ab") == 3
    True
    """
    if not type(texts) is type(scores) is type(types) is list:
        return None
    firsts = "".join(sorted({s[:1] for s in user_defined}))
    try:
        return spm_words(
            texts, scores, types, unk=unk, byte_fallback=byte_fallback, user_first=firsts
        )
    except (TypeError, OverflowError):
        return None


def packed_words(
    packed: PieceColumns, *, unk: int, byte_fallback: bool, user_defined: Iterable[str]
) -> Any:
    """:func:`columns_words` from a parsed file's packed pieces
    (:mod:`core.pipeline.sentencepiece.packed`): the table from the file's bytes, with no
    str made. The same answers and errors.

    >>> from core.pipeline.sentencepiece.packed import PieceColumns
    >>> cols = PieceColumns.pack(["<unk>", "a", "b", "ab"], [0.0, -1.0, -1.0, -3.0], [2, 1, 1, 1])
    >>> table = packed_words(cols, unk=0, byte_fallback=False, user_defined=[])
    >>> table is None or table.piece_id("ab") == 3
    True
    """
    firsts = "".join(sorted({s[:1] for s in user_defined}))
    try:
        return spm_words_raw(
            packed.buf, packed.spans, packed.scores, packed.types,
            unk=unk, byte_fallback=byte_fallback, user_first=firsts,
        )  # fmt: skip
    except OverflowError:  # (an unk beyond 64 bits: the dicts decide)
        return None


def _native_words(model: _Model) -> Any:
    """The model's ``SpmWords`` (made on first use), or None for the pure path."""
    if model._has_unused or not model.byte_fallback:
        return None
    return kept_table(model, NATIVE_WORDS, _build_words, model)


def _build_words(model: _Model) -> Any:
    """``SpmWords`` from the model's columns, else (no NaN score) from its dicts; False
    when it cannot hold them."""
    try:
        words = columns_words(
            model._tokens, model.scores, model.types, unk=model.unk_id,
            byte_fallback=True, user_defined=model.user_defined,
        )  # fmt: skip
    except ValueError:  # (a text spelled twice: the dicts say which ID wins)
        words = None
    if words is None and not model._heap_only:
        words = _dict_words(model)
    return words or False


def _dict_words(model: _Model) -> Any:
    """``SpmWords`` over the model's dicts; False when it cannot hold them."""
    try:
        return spm_dict_words(
            model._merge_rank, model._vocab, unk=model.unk_id, byte_ids=model._byte_ids,
            user_first="".join(sorted(model._user_first)),
        )  # fmt: skip
    except (TypeError, ValueError, OverflowError):  # a piece with a lone surrogate, say
        return False

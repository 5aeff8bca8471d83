"""Encoding to IDs only, on plain strings: the fast path of
:meth:`core.pipeline.tokenizer.PipelineTokenizer.encode`.

The page needs each token's span in the text the user typed, so the pipeline's stages work
on :class:`~core.pipeline.piece.Piece` objects (a span per character). ``encode`` needs no
span: each stage's str method (``normalize_str``, ``split_str``, ``encode_word``, with the
models' word caches) gives the same words and IDs at a fraction of the cost. A stage without
one falls back to its Piece method, and a pre-tokenizer whose words depend on where a piece
starts in the original text keeps the Piece path unless that offset is known (no
normalizer). tests/pipeline/test_fast_encode_*.py check both paths give the same IDs.

>>> from core.pipeline.models import WordLevelModel
>>> from core.pipeline.tokenizer import PipelineTokenizer
>>> encode_ids(PipelineTokenizer(model=WordLevelModel({"<unk>": 0, "hi": 1})), "hi")
[1]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from core.pipeline.added_tokens import AddedToken, added_cuts
from core.pipeline.models.base import Model
from core.pipeline.piece import Piece
from core.pipeline.pre_tokenizers import (
    Metaspace,
    Sequence as PreSequence,
    split_text,
    uses_offsets,
)

__all__ = ["EncodePlan", "encode_ids", "encode_plan"]

#: ``plan(text) -> IDs``: one tokenizer's encode, its stages looked up once.
EncodePlan = Callable[[str], list[int]]


class PipelineTokenizer(Protocol):
    """What the fast path reads of a :class:`core.pipeline.tokenizer.PipelineTokenizer`
    (a protocol: that module calls this one, so this one does not import it)."""

    normalizer: Any
    pre_tokenizer: Any
    model: Model
    _plain_matcher: Any
    _normalized_matcher: Any

    @property
    def _added(self) -> Mapping[int, AddedToken]: ...

    def _encode_ids_pieces(self, text: str) -> list[int]: ...


def encode_ids(tok: PipelineTokenizer, text: str) -> list[int]:
    """``tok.encode(text)`` without the template: :func:`encode_plan`'s function, run once.

    A tokenizer keeps its plan (``PipelineTokenizer._encode_plan``, dropped when a stage is
    replaced), so a call costs the stages' own work and little else."""
    return encode_plan(tok)(text)


def encode_plan(tok: PipelineTokenizer) -> EncodePlan:
    """``tok.encode`` without the template, as a function of the text: PipelineTokenizer.
    _segments' walk on plain strings, IDs only, with every stage's method looked up here,
    once. Each stage's str method when it has one, else its Piece method, so any stage
    still works. A pre-tokenizer whose words depend on where a piece starts (Metaspace
    "first": Mistral's and Llama 2's tokenizer.json) stays on strings when there is no
    normalizer, so a piece's place in ``text`` is its original offset: each piece is split
    by :func:`split_text` at its start.

    subtle: the plan binds the stages' methods, not their settings' values, so a stage
    changed in place still encodes as it now says; a stage *replaced* needs a new plan.
    """
    pre = tok.pre_tokenizer
    positional = _positional(pre)
    if positional and not (tok.normalizer is None and _knows_offsets(pre)):
        return tok._encode_ids_pieces
    normalize, split = _str_stages(tok)
    # the model's own word loop (in C for SentencePiece BPE): ``out += encode_word(w)`` for
    # each non-empty word
    encode_word, encode_words = tok.model.encode_word, tok.model.encode_words
    plain, normalized = tok._plain_matcher, tok._normalized_matcher
    if plain.empty and normalized.empty and not positional and split:
        return _plain_plan(normalize, _split_encode(pre, tok.model, split, encode_words))
    added = tok._added

    def plan(text: str) -> list[int]:
        ids: list[int] = []
        for start, stop, part_added in added_cuts(text, plain, added):
            if part_added is not None:
                ids.append(part_added)
                continue
            part = text[start:stop]
            if normalize is not None:
                part = normalize(part)
                if not part:
                    continue
            for sub_start, sub_stop, sub_added in added_cuts(part, normalized, added):
                if sub_added is not None:
                    ids.append(sub_added)
                    continue
                sub = part[sub_start:sub_stop]
                if split is None:
                    ids.extend(encode_word(sub))
                    continue
                if positional:
                    words = split_text(pre, sub, start=start + sub_start)
                else:
                    words = split(sub)
                encode_words(words, ids)
        return ids

    return plan


def _split_encode(
    pre_tokenizer: Any,
    model: Model,
    split: Callable[[str], list[str]],
    encode_words: Callable[[list[str], list[int]], None],
) -> Callable[[str, list[int]], None]:
    """``encode_words(split(text), out)`` as one function: the pre-tokenizer's own
    ``encode_str`` when it cuts the words of this very model (SentencePiece's words, in one
    C pass that makes no str per word), else the two calls.

    >>> f = _split_encode(None, None, str.split, lambda words, out: out.extend(map(len, words)))
    >>> out = []; f("hi you", out); out
    [2, 3]
    """
    own = getattr(pre_tokenizer, "encode_str", None)
    if own is not None and getattr(pre_tokenizer, "model", None) is model:
        return own

    def split_encode(text: str, out: list[int]) -> None:
        encode_words(split(text), out)

    return split_encode


def _plain_plan(
    normalize: Callable[[str], str] | None,
    split_encode: Callable[[str, list[int]], None],
) -> EncodePlan:
    """:func:`encode_plan`'s loop with no added token to look for (no cut to make) and a
    model with its own word loop: normalize, then split and encode the words.

    >>> plan = _plain_plan(str.upper, lambda text, out: out.extend(map(len, text.split())))
    >>> plan("hi you"), plan("")
    ([2, 3], [])
    """
    if normalize is None:

        def plan(text: str) -> list[int]:
            ids: list[int] = []
            if text:
                split_encode(text, ids)
            return ids

        return plan

    def normalized_plan(text: str) -> list[int]:
        ids: list[int] = []
        if text:
            text = normalize(text)
            if text:
                split_encode(text, ids)
        return ids

    return normalized_plan


def _positional(pre_tokenizer: Any) -> bool:
    """Whether ``pre_tokenizer``'s words may depend on where a piece starts in the whole
    text (``Metaspace(prepend_scheme="first")``; any pre-tokenizer without ``split_str``
    unless it says ``positional = False``): then encoding keeps the Piece path.

    >>> from core.pipeline.pre_tokenizers import Metaspace
    >>> _positional(None), _positional(Metaspace()), _positional(Metaspace(prepend_scheme="first"))
    (False, False, True)
    """
    if pre_tokenizer is None:
        return False
    declared = getattr(pre_tokenizer, "positional", None)
    if isinstance(declared, bool):
        return declared
    if getattr(pre_tokenizer, "split_str", None) is None:
        return True
    return uses_offsets(pre_tokenizer)


def _knows_offsets(pre_tokenizer: Any) -> bool:
    """Whether :func:`split_text` splits a piece at a given offset without Pieces' help
    where it matters: a Metaspace, or a Sequence of known steps (one of them a Metaspace).

    >>> from core.pipeline.pre_tokenizers import Metaspace
    >>> _knows_offsets(Metaspace(prepend_scheme="first")), _knows_offsets(object())
    (True, False)
    """
    if isinstance(pre_tokenizer, PreSequence):
        return all(
            isinstance(p, Metaspace) or not uses_offsets(p) for p in pre_tokenizer.pre_tokenizers
        )
    return isinstance(pre_tokenizer, Metaspace)


def _str_stages(
    tok: PipelineTokenizer,
) -> tuple[Callable[[str], str] | None, Callable[[str], list[str]] | None]:
    """The normalizer's and pre-tokenizer's protocol str methods (see :func:`encode_ids`),
    each falling back to its Piece method; no normalizer or pre-tokenizer gives ``None``.
    (The model's are :class:`~core.pipeline.models.base.Model`'s ``encode_word(s)``.)"""
    normalizer, pre_tokenizer = tok.normalizer, tok.pre_tokenizer
    normalize = split = None
    if normalizer is not None:
        normalize = getattr(normalizer, "normalize_str", None)
        if normalize is None:

            def normalize(text: str) -> str:
                return normalizer.normalize(Piece.of(text)).text

    if pre_tokenizer is not None:
        split = getattr(pre_tokenizer, "split_str", None)
        if split is None:

            def split(text: str) -> list[str]:
                return [p.text for p in pre_tokenizer.split([Piece.of(text)])]

    return normalize, split

"""A GGUF vocab whose BPE runs over characters (Gemma 4's ``gemma4``), read a whole column
at a time: the pipeline's BPE model straight from its merges' IDs.

Gemma 4 holds 262,144 tokens and 514,906 merges, each merge a ``"left right"`` string.
Splitting each merge into a pair, then looking its parts and their join up among the
tokens (three strs, three hashes and three probes of a 262k-entry dict per merge) was most
of a load. Here :func:`merge_id_columns` finds every merge's IDs at once: from the bytes, in
C, where :func:`~core.formats.gguf.read_gguf_metadata` kept the tokens and merges packed
(:class:`~core.formats.gguf.GGUFStrings`) and ``tokplay_native.tables`` is built (no str per
merge); else from lists, a whole list at a time. :func:`bpe_model_of` builds the model from
those IDs, its ``(left, right) -> rank`` table in one presized pass. Both answer None
wherever the careful route of :mod:`core.formats.gguf_vocab` has something to say (an empty
token, one spelled twice, a merge that names no token), and that route then reads the
merges one by one, errors included. The model is the same either way (vocab, merges,
ranks, fingerprint: tests/test_formats_gguf_bpe.py).

>>> from core.formats.gguf import GGUFStrings
>>> tokens, merges = GGUFStrings.pack(["a", "b", "ab", "▁"]), GGUFStrings.pack(["a b"])
>>> merge_id_columns(tokens, merges)
([0], [1], [2])
>>> model = bpe_model_of(tokens, merges, {"type": "BPE"})
>>> model.encode_word("abba"), model.merges
([2, 1, 0], [('a', 'b')])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.engine.vocab_index import IdColumns, packed_merge_ids, pair_ranks, reads_packed
from core.formats.gguf import GGUFStrings
from core.pipeline.models import BPEModel
from core.pipeline.models.from_json import bpe_model_from_tables
from core.pipeline.sentencepiece.packed import has_repeats

__all__ = [
    "PACKED_KINDS",
    "bpe_model_of",
    "in_c",
    "merge_id_columns",
    "pair_ranks",
]

#: The ``tokenizer.ggml.model`` kinds whose arrays a tokenizer load reads packed: llama's
#: pieces (:mod:`core.formats.gguf_packed`) and gemma4's tokens and merges (this module).
PACKED_KINDS = frozenset({"llama", "gemma4"})

Columns = tuple[list[int], list[int], list[int]]


def merge_id_columns(
    tokens: Sequence[str], merges: Sequence[str], ids: list[int] | None = None
) -> Columns | None:
    """``(lefts, rights, made)``: each merge cut as llama.cpp cuts it (at the first space
    after its first character), its two parts and their join as token IDs (the items of
    ``ids``, ``range(len(tokens))`` unless given: a vocab's own ints, shared). None when a
    token is empty or spelled twice, or a merge has no such space or names no token.

    In C for packed columns where ``tokplay_native.tables`` is built (the same answer).

    >>> merge_id_columns(["a", " ", " a", "a "], ["  a", "a  "])  # (a part may be a space)
    ([1, 0], [0, 1], [2, 3])
    >>> merge_id_columns(["a", "aa"], [" a a"]), merge_id_columns(["a", "a"], [])  # (" a" no token; "a" twice)
    (None, None)
    """
    ids = list(range(len(tokens))) if ids is None else ids
    if in_c(tokens, merges):
        packed = (tokens.buf, tokens.spans), (merges.buf, merges.spans)  # type: ignore[attr-defined]
        return packed_merge_ids(*packed, ids)
    texts = list(tokens)
    if "" in texts or has_repeats(texts):
        return None
    vocab = dict(zip(texts, ids))
    halves = " ".join(merges).split(" ")
    if len(halves) == 2 * len(merges):  # (one space each: a whole list at a time)
        # subtle: a merge that starts with its space cuts after it in the loop below, here
        # before it; either way it names no token (no token is empty), so both answer None
        return _whole_columns(vocab, halves[::2], halves[1::2])
    lefts, rights, made = [], [], []
    for merge in merges:
        cut = merge.find(" ", 1)
        left, right = merge[:cut], merge[cut + 1 :]
        found = (vocab.get(left), vocab.get(right), vocab.get(left + right))
        if cut < 0 or None in found:
            return None
        lefts.append(found[0])
        rights.append(found[1])
        made.append(found[2])
    return lefts, rights, made  # type: ignore[return-value]


def _whole_columns(vocab: dict[str, int], lefts: list[str], rights: list[str]) -> Columns | None:
    try:
        made = list(map(vocab.__getitem__, map(str.__add__, lefts, rights)))
        return list(map(vocab.__getitem__, lefts)), list(map(vocab.__getitem__, rights)), made
    except KeyError:
        return None


def in_c(tokens: Sequence[str], merges: Sequence[str]) -> bool:
    """Whether :func:`merge_id_columns` reads these in C: both packed, and
    ``tokplay_native.tables`` built.

    >>> in_c(["a"], ["a a"])
    False
    """
    both = isinstance(tokens, GGUFStrings) and isinstance(merges, GGUFStrings)
    return both and reads_packed()


def bpe_model_of(
    tokens: Sequence[str], merges: Sequence[str], settings: dict[str, Any], *,
    name: str = "model.gguf",
) -> BPEModel | None:  # fmt: skip
    """The BPE model of ``tokens`` and ``merges`` (packed, or lists) with the model
    ``settings`` of a ``tokenizer.json`` (no vocab or merges), or None where
    :func:`merge_id_columns` answers None."""
    texts = tokens.tolist() if isinstance(tokens, GGUFStrings) else list(tokens)
    vocab = dict(zip(texts, range(len(texts))))
    if len(vocab) != len(texts):  # (a token spelled twice: the careful route names it)
        return None
    # (the merge columns hold the vocab's own ints: 262k fewer objects)
    columns = merge_id_columns(tokens, merges, list(vocab.values()))
    if columns is None:
        return None
    lefts, rights, made = columns
    tables = (pair_ranks(lefts, rights), made)
    return bpe_model_from_tables(settings, vocab, IdColumns(lefts, rights), tables, name=name)

"""A Hugging Face BPE model's merges in C, where tokplay_native was built: the merge loop
of :meth:`core.pipeline.models.BPEModel.encode_word` on a new word.

The pure path is :func:`core.engine.bpe.merge` over the word's starting IDs, ranking each pair in
the model's ``(left, right) -> rank`` dict (a tuple made per look-up). ``tokplay_native.bpe``'s
``PairTable`` holds the same merges in one C hash table (made on the model's first new word,
~0.1 s for Gemma's 515,000 merges) and runs the same loop with no object per look-up: the
same joins in the same order, so the same IDs (tests/pipeline/test_native_merges.py).
Models it cannot hold (a float rank, an ID past 2**32) and words longer than
:data:`core.engine.bpe._LONG` parts (the heap's) keep :func:`~core.engine.bpe.merge`.

>>> from core.pipeline.models import BPEModel
>>> model = BPEModel({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
>>> merge_ids(model, [0, 1, 1, 0, 1])
[2, 1, 2]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from core.engine.bpe import kept_table, merge, pair_table

__all__ = ["NATIVE_MERGES", "merge_ids"]

#: The attribute of a model holding its PairTable (False: none can be made); not pickled.
NATIVE_MERGES = "_native_merges"
#: Parts beyond this go to core.engine.bpe.merge's heap (the C loop rescans its ranks: n^2).
_LONGEST = 256
#: The byte IDs of a model over strings (:func:`_table`).
_NO_BYTES = [0] * 256


class _Model(Protocol):
    """What :func:`merge_ids` reads of a BPEModel."""

    _ranks: dict[tuple[int, int], int]
    _merged: Sequence[int] | Mapping[int, int]


def merge_ids(model: _Model, ids: list[int]) -> list[int]:
    """``core.engine.bpe.merge(ids, model._ranks, model._merged)``, in C where it can be."""
    if 1 < len(ids) <= _LONGEST:
        table = _table(model)
        if table is not None:
            return table.merge(ids)
    return merge(ids, model._ranks, model._merged)


def _table(model: _Model) -> Any:
    """The model's ``PairTable`` (made on first use), or None for the pure path."""
    # (byte_ids serve PairTable.encode over bytes, which a model over strings never calls)
    return kept_table(model, NATIVE_MERGES, pair_table, model._ranks, model._merged, _NO_BYTES)

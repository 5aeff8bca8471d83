"""The optional compiled helpers (the ``tokplay_native`` package), when they were built.

core is pure Python so that it runs anywhere; where a loop is the whole cost, a C twin in
``tokplay_native`` runs it instead, with the same result on every input (tests/test_native.py
checks each pair). Each name here is that module, or ``None`` where it was not built (no C
compiler, Pyodide) or ``TOKPLAY_NATIVE=0`` was set: callers then take the pure path.

Callers read the attribute when they run (``native.bpe``), never bind it at import time, so
that a test can set it to ``None`` to run the pure path.

>>> bpe is None or callable(bpe.merge_joined)
True
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["bpe", "normalize", "spm", "status", "tables", "train", "unigram"]


def _load(name: str) -> ModuleType | None:
    if os.environ.get("TOKPLAY_NATIVE", "1") == "0":
        return None
    try:
        return importlib.import_module(f"tokplay_native.{name}")
    except ImportError:  # not built here (no compiler, Pyodide): the pure twin runs
        return None


#: The BPE merge loop (:func:`core.bpe.merge`'s two hot cases).
bpe: ModuleType | None = _load("bpe")
#: Training's merge loop (:mod:`core.train_merge`).
train: ModuleType | None = _load("train")
#: Unigram's Viterbi pass (:mod:`core.pipeline.unigram`).
unigram: ModuleType | None = _load("unigram")
#: Loading a merge list: splitting the merges, indexing the pairs (:mod:`core.vocab_index`).
tables: ModuleType | None = _load("tables")
#: A SentencePiece model's readers (:mod:`core.pipeline.sentencepiece.proto`, GGUF strings).
spm: ModuleType | None = _load("spm")
#: A char map applied to a text (``normalize_str`` in :mod:`core.pipeline.sentencepiece.normalizer`
#: and :mod:`core.pipeline.precompiled`).
normalize: ModuleType | None = _load("normalize")


def status() -> dict[str, bool]:
    """Which compiled helpers this process uses (the benchmarks print it).

    >>> sorted(status())
    ['bpe', 'normalize', 'spm', 'tables', 'train', 'unigram']
    """
    return {"bpe": bpe is not None, "normalize": normalize is not None, "spm": spm is not None,
            "tables": tables is not None, "train": train is not None,
            "unigram": unigram is not None}  # fmt: skip

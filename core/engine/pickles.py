"""CS336 ``vocab.pkl`` / ``merges.pkl``: plain pickles of the data contract, loaded safely.

``vocab.pkl`` holds ``dict[int, bytes]`` and ``merges.pkl`` holds ``list[tuple[bytes, bytes]]``,
as written by ``pickle.dump`` in the CS336 reference code. Loading goes through
:mod:`core.engine.safe_pickle`, so an uploaded pickle can never run code.

>>> vocab, merges = {0: b"a", 1: b"b", 2: b"ab"}, [(b"a", b"b")]
>>> loads_vocab(dumps_vocab(vocab)) == vocab and loads_merges(dumps_merges(merges)) == merges
True
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.engine.safe_pickle import (
    safe_loads,
    validate_merges,
    validate_merges_in_vocab,
    validate_vocab,
)
from core.errors import FormatError

# Protocol 4 is what Python 3.8+ writes by default for pickle.dump; readable by any Python 3.4+.
_PROTOCOL = 4


def dumps_vocab(vocab: Mapping[int, bytes]) -> bytes:
    """Pickle a vocab as a plain ``dict[int, bytes]`` (what ``pickle.load`` gives back)."""
    return pickle.dumps({int(i): bytes(t) for i, t in vocab.items()}, protocol=_PROTOCOL)


def dumps_merges(merges: Sequence[tuple[bytes, bytes]]) -> bytes:
    """Pickle merges as a plain ``list[tuple[bytes, bytes]]`` in rank order."""
    return pickle.dumps([(bytes(a), bytes(b)) for a, b in merges], protocol=_PROTOCOL)


def loads_vocab(data: bytes, *, name: str = "vocab.pkl") -> dict[int, bytes]:
    """Load a vocab pickle safely and check its shape; errors start with ``name``."""
    return validate_vocab(safe_loads(data, name=name), name=name)


def loads_merges(data: bytes, *, name: str = "merges.pkl") -> list[tuple[bytes, bytes]]:
    """Load a merges pickle safely and check its shape; errors start with ``name``."""
    return validate_merges(safe_loads(data, name=name), name=name)


def loads_pickles(
    vocab_data: bytes,
    merges_data: bytes,
    *,
    vocab_name: str = "vocab.pkl",
    merges_name: str = "merges.pkl",
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Load both pickles and check they belong together (every merge's parts and result are
    in the vocab)."""
    vocab = loads_vocab(vocab_data, name=vocab_name)
    merges = loads_merges(merges_data, name=merges_name)
    validate_merges_in_vocab(vocab, merges, name=merges_name)
    return vocab, merges


def _read(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise FormatError(f"{os.fspath(path)}: cannot read the file ({err.strerror})") from None


def load_pickles(
    vocab_path: str | os.PathLike[str], merges_path: str | os.PathLike[str]
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Read ``vocab.pkl`` and ``merges.pkl`` from disk (safely) and return ``(vocab, merges)``."""
    return loads_pickles(
        _read(vocab_path),
        _read(merges_path),
        vocab_name=Path(vocab_path).name,
        merges_name=Path(merges_path).name,
    )


def save_pickles(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    vocab_path: str | os.PathLike[str],
    merges_path: str | os.PathLike[str],
) -> None:
    """Write ``vocab.pkl`` and ``merges.pkl`` the way the CS336 reference code does."""
    Path(vocab_path).write_bytes(dumps_vocab(vocab))
    Path(merges_path).write_bytes(dumps_merges(merges))

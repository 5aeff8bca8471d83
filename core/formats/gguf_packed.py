"""A GGUF ``llama`` vocab's pieces as the file holds them: SentencePiece's packed columns,
straight from the metadata's arrays, with no str or float object per token.

:func:`~core.formats.gguf.read_gguf_metadata` with ``packed=True`` keeps the tokens as
:class:`~core.formats.gguf.GGUFStrings` (the array's bytes and where each token lies) and
the scores and token types as ``array.array``s. :func:`packed_pieces` turns those into the
:class:`~core.pipeline.sentencepiece.packed.PieceColumns` that a SentencePiece load builds
its C encode table from, so a 32,000-token vocab loads without 32,000 strs (they are made
on first read, by the pages that show pieces or decode). It answers None wherever the list
route of :mod:`core.formats.gguf_vocab` has something to decide (no C, scores that are not
float32 and get rounded there, a type beyond a byte, an array too short or of another
type), and that route then runs as it always has, errors included.

>>> from core.formats.gguf import read_gguf_metadata, write_gguf
>>> blob = write_gguf({"tokenizer.ggml.tokens": ["<unk>", "▁a"],
...                    "tokenizer.ggml.scores": [0.0, -1.5], "tokenizer.ggml.token_type": [2, 9]})
>>> cols = packed_pieces(read_gguf_metadata(blob, packed=True))
>>> cols is None or (cols.texts_of([1]), cols.types, cols.lists()[1]) == (
...     ["▁a"], b"\\x02\\x09", [0.0, -1.5])
True
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

from core.formats.gguf import GGUFMetadata, GGUFStrings
from core.pipeline.sentencepiece.packed import PieceColumns, float32_doubles, reads_packed

__all__ = ["packed_pieces", "score_doubles", "type_bytes"]

_KEY = "tokenizer.ggml."
_INTEGERS = frozenset("bBhHiIlLqQ")  # array typecodes of the GGUF integer types


def packed_pieces(meta: GGUFMetadata) -> PieceColumns | None:
    """``tokenizer.ggml.tokens``, ``scores`` and ``token_type`` of ``meta`` (read with
    ``packed=True``) as packed columns: the tokens' spans, the scores as doubles (0.0 where
    the file has none), the types one byte each (the file's value where it is 0..255,
    one outside 1..6 where it is not); None where the list route must decide.
    """
    tokens = meta.get(_KEY + "tokens")
    if not isinstance(tokens, GGUFStrings) or not reads_packed():
        return None
    n = len(tokens)
    types, scores = meta.get(_KEY + "token_type"), meta.get(_KEY + "scores")
    codes = b"\x01" * n if types is None else type_bytes(types, n)
    if scores is None:
        doubles: bytes | None = bytes(8 * n)  # (0.0 is all zero bits)
    elif meta.types.get(_KEY + "scores") == "array[float32]":
        doubles = score_doubles(scores, n)
    else:  # (int32 or float64: rounded to float32 there)
        doubles = None
    if codes is None or doubles is None:
        return None
    return PieceColumns(tokens.buf, tokens.spans, doubles, codes)


def type_bytes(types: Any, n: int) -> bytes | None:
    """The first ``n`` of an integer array as one byte each, found by slicing its bytes
    (no int object made): each value's low byte, when every value fits a byte (a negative
    int8 reads as its two's complement: outside 1..6 either way); else None.

    >>> type_bytes(array("i", [1, 6, 3, 0]), 3), type_bytes(array("i", [1, 300]), 2)
    (b'\\x01\\x06\\x03', None)
    >>> type_bytes([1, 2], 2) is None, type_bytes(array("b", [1]), 2) is None
    (True, True)
    """
    if not isinstance(types, array) or types.typecode not in _INTEGERS or len(types) < n:
        return None
    raw = memoryview(types)[:n].tobytes()
    size = types.itemsize
    if size == 1:
        return raw
    low = raw[0 if sys.byteorder == "little" else size - 1 :: size]
    if raw.count(0) - low.count(0) != n * (size - 1):  # (a higher byte is set somewhere)
        return None
    return low


def score_doubles(scores: Any, n: int) -> bytes | None:
    """The first ``n`` of a float32 array as native doubles (each the same value), in C;
    None without C or for anything but a float32 array that long.

    >>> found = score_doubles(array("f", [0.5, -1.5, 2.0]), 2)
    >>> found is None or array("d", found).tolist() == [0.5, -1.5]
    True
    """
    if not isinstance(scores, array) or scores.typecode != "f" or len(scores) < n:
        return None
    return float32_doubles(memoryview(scores)[:n])

"""A GGUF ``llama`` or ``t5`` vocab as a SentencePiece ``.model``: the ModelProto bytes.

llama.cpp's converter copies a SentencePiece model's pieces, scores and piece types into
GGUF (``tokenizer.ggml.tokens``/``scores``/``token_type``; the token types *are*
SentencePiece's piece types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
6 byte) and its normalizer settings into ``add_space_prefix``, ``remove_extra_whitespaces``
and ``precompiled_charsmap``. Writing them back as a ModelProto lets the GGUF go through the
same loader as a ``tokenizer.model`` (:func:`core.pipeline.sentencepiece.sentencepiece_tokenizer`),
and the ``sentencepiece`` library itself can load the very same bytes.

The protobuf wire format, just enough of it: a key varint ``field << 3 | wire_type``, then
a varint (type 0), four little-endian bytes (type 5, a ``float``) or a varint length and
the bytes (type 2, strings and sub-messages).

>>> from core.pipeline.sentencepiece import sentencepiece_tokenizer
>>> pieces = [SpmPiece("<unk>", 0.0, 2), SpmPiece("▁", -1.0, 1), SpmPiece("a", -2.0, 1),
...           SpmPiece("▁a", -1.5, 1)]
>>> sentencepiece_tokenizer(model_proto_bytes(pieces, model_type=BPE_MODEL, unk_id=0)).encode("a a")
[3, 3]
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["BPE_MODEL", "UNIGRAM_MODEL", "SpmPiece", "model_proto_bytes"]

UNIGRAM_MODEL, BPE_MODEL = 1, 2  # TrainerSpec.ModelType
_BYTE = 6


class SpmPiece(NamedTuple):
    """One ``ModelProto.SentencePiece``: its text, score and type (1..6)."""

    piece: str
    score: float
    type: int


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32s are written as 10-byte two's complement
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _blob(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _float(number: int, value: float) -> bytes:
    return _varint(number << 3 | 5) + struct.pack("<f", value)


def model_proto_bytes(
    pieces: Sequence[SpmPiece],
    *,
    model_type: int,
    unk_id: int,
    bos_id: int = -1,
    eos_id: int = -1,
    pad_id: int = -1,
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = False,
    escape_whitespaces: bool = True,
    precompiled_charsmap: bytes = b"",
) -> bytes:
    """A serialized ``ModelProto`` (``sentencepiece_model.proto``) with these pieces and
    settings. ``byte_fallback`` is on when there are byte pieces; the BOS/EOS/UNK/PAD pieces
    are named after the pieces at those IDs (SentencePiece finds BOS by name)."""
    out = bytearray()
    for p in pieces:
        body = _blob(1, p.piece.encode("utf-8")) + _float(2, p.score)
        if p.type != 1:  # NORMAL is the proto2 default: written only when it differs
            body += _int(3, p.type)
        out += _blob(1, body)

    def name_of(i: int) -> str | None:
        return pieces[i].piece if 0 <= i < len(pieces) else None

    trainer = _int(3, model_type) + _int(4, len(pieces))
    trainer += _int(35, int(any(p.type == _BYTE for p in pieces)))
    for number, value in ((40, unk_id), (41, bos_id), (42, eos_id), (43, pad_id)):
        trainer += _int(number, value if name_of(value) is not None else -1)
    for number, value in ((45, unk_id), (46, bos_id), (47, eos_id), (48, pad_id)):
        piece = name_of(value)
        if piece is not None:
            trainer += _blob(number, piece.encode("utf-8"))
    out += _blob(2, trainer)
    normalizer = _blob(1, b"identity" if not precompiled_charsmap else b"precompiled")
    if precompiled_charsmap:
        normalizer += _blob(2, precompiled_charsmap)
    normalizer += _int(3, int(add_dummy_prefix)) + _int(4, int(remove_extra_whitespaces))
    normalizer += _int(5, int(escape_whitespaces))
    out += _blob(3, normalizer)
    return bytes(out)

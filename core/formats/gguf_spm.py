"""A GGUF ``llama`` or ``t5`` vocab as a SentencePiece ``.model``: a ModelProto, or its bytes.

llama.cpp's converter copies a SentencePiece model's pieces, scores and piece types into
GGUF (``tokenizer.ggml.tokens``/``scores``/``token_type``; the token types *are*
SentencePiece's piece types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
6 byte) and its normalizer settings into ``add_space_prefix``, ``remove_extra_whitespaces``
and ``precompiled_charsmap``. Writing them back as a ModelProto lets the GGUF go through the
same loader as a ``tokenizer.model`` (:func:`core.pipeline.sentencepiece.sentencepiece_tokenizer`),
and the ``sentencepiece`` library itself can load the very same bytes. To load it we skip the
bytes: :func:`model_proto` builds the parsed ``ModelProto`` those bytes read back as (a
250,000-piece vocab would otherwise be written and read again, field by field, in Python);
:func:`packed_model_proto` builds it around pieces kept packed, with no list made at all.

The protobuf wire format, just enough of it: a key varint ``field << 3 | wire_type``, then
a varint (type 0), four little-endian bytes (type 5, a ``float``) or a varint length and
the bytes (type 2, strings and sub-messages).

>>> from core.pipeline.sentencepiece import sentencepiece_tokenizer
>>> pieces = [SpmPiece("<unk>", 0.0, 2), SpmPiece("▁", -1.0, 1), SpmPiece("a", -2.0, 1),
...           SpmPiece("▁a", -1.5, 1)]
>>> sentencepiece_tokenizer(model_proto_bytes(pieces, model_type=BPE_MODEL, unk_id=0)).encode("a a")
[3, 3]
>>> from core.pipeline.sentencepiece import tokenizer_from_proto
>>> tokens, scores, types = map(list, zip(*pieces))
>>> tokenizer_from_proto(model_proto(tokens, scores, types, model_type=BPE_MODEL, unk_id=0)).encode("a a")
[3, 3]
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Callable, Sequence
from typing import NamedTuple

from core.pipeline.sentencepiece.packed import PieceColumns, keep_packed
from core.pipeline.sentencepiece.proto import ModelProto, NormalizerSpec, TrainerSpec
from core.pipeline.sentencepiece.tables import type_codes

__all__ = [
    "BPE_MODEL",
    "UNIGRAM_MODEL",
    "SpmPiece",
    "model_proto",
    "model_proto_bytes",
    "packed_model_proto",
]

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


_PIECE_TYPES = frozenset(range(1, 7))
_PIECE_TYPE_BYTES = bytes(_PIECE_TYPES)


def model_proto(
    tokens: Sequence[str],
    scores: Sequence[float],
    types: Sequence[int],
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
    float32: bool = False,
) -> ModelProto:
    """The ``ModelProto`` that :func:`model_proto_bytes` (with the pieces given as three
    columns) parses back as, built directly: scores rounded to float32, a type outside
    1..6 read as NORMAL, the special pieces named as there. ``float32``: every score is a
    float32 value already (a GGUF's float32 array), so the rounding is skipped.

    >>> m = model_proto(["<unk>", "a"], [0.0, 0.1], [2, 9], model_type=BPE_MODEL, unk_id=0)
    >>> m.pieces[1], m.trainer_spec.unk_piece, m.trainer_spec.bos_id
    (ProtoPiece(piece='a', score=0.10000000149011612, type=1), '<unk>', -1)
    """
    n = len(tokens)
    if float32:
        floats = list(scores)
    else:
        floats = array("f", scores).tolist()
        if any(map(math.isinf, floats)):  # (a finite score past float32 fails as struct does)
            floats = [struct.unpack("<f", struct.pack("<f", s))[0] for s in scores]
    kinds = list(types)
    codes = type_codes(kinds)
    if codes is None or codes.translate(None, _PIECE_TYPE_BYTES):  # (a type outside 1..6:
        kinds = [k if k in _PIECE_TYPES else 1 for k in kinds]  # parse_model_proto: NORMAL)
        codes = None
    byte_fallback = _BYTE in kinds if codes is None else _BYTE in codes
    trainer, normalizer = _specs(
        n, tokens.__getitem__, model_type=model_type, byte_fallback=byte_fallback,
        ids=(unk_id, bos_id, eos_id, pad_id), add_dummy_prefix=add_dummy_prefix,
        remove_extra_whitespaces=remove_extra_whitespaces,
        escape_whitespaces=escape_whitespaces, precompiled_charsmap=precompiled_charsmap,
    )  # fmt: skip
    return ModelProto(list(tokens), floats, kinds, trainer, normalizer)


def packed_model_proto(
    pieces: PieceColumns,
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
) -> ModelProto:
    """:func:`model_proto` for pieces kept packed (:mod:`core.pipeline.sentencepiece.packed`;
    their scores float32 values already, their types 1..6): the same ModelProto, its three
    columns made on first read, so a loader that needs no list makes none.

    >>> pieces = PieceColumns.pack(["<unk>", "a"], [0.0, 0.5], [2, 1])
    >>> m = packed_model_proto(pieces, model_type=BPE_MODEL, unk_id=0)
    >>> m.packed is pieces, m.trainer_spec.unk_piece, m.trainer_spec.byte_fallback
    (True, '<unk>', False)
    >>> m == model_proto(["<unk>", "a"], [0.0, 0.5], [2, 1], model_type=BPE_MODEL, unk_id=0)
    True
    """
    trainer, normalizer = _specs(
        len(pieces), lambda i: pieces.texts_of([i])[0], model_type=model_type,
        byte_fallback=_BYTE in pieces.types, ids=(unk_id, bos_id, eos_id, pad_id),
        add_dummy_prefix=add_dummy_prefix, remove_extra_whitespaces=remove_extra_whitespaces,
        escape_whitespaces=escape_whitespaces, precompiled_charsmap=precompiled_charsmap,
    )  # fmt: skip
    proto = ModelProto([], [], [], trainer, normalizer)
    keep_packed(proto, pieces)
    return proto


def _specs(
    n: int,
    text_of: Callable[[int], str],
    *,
    model_type: int,
    byte_fallback: bool,
    ids: tuple[int, int, int, int],
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
    precompiled_charsmap: bytes,
) -> tuple[TrainerSpec, NormalizerSpec]:
    """The trainer and normalizer specs of ``n`` pieces: the special pieces (UNK, BOS, EOS,
    PAD ``ids``) named by ``text_of(id)`` where in range, else -1, as
    :func:`model_proto_bytes` writes them."""
    trainer = TrainerSpec(model_type=model_type, vocab_size=n, byte_fallback=byte_fallback)
    for what, value in zip(("unk", "bos", "eos", "pad"), ids):
        named = 0 <= value < n
        setattr(trainer, f"{what}_id", value if named else -1)
        if named:
            setattr(trainer, f"{what}_piece", text_of(value))
    normalizer = NormalizerSpec(
        name="precompiled" if precompiled_charsmap else "identity",
        precompiled_charsmap=bytes(precompiled_charsmap),
        add_dummy_prefix=add_dummy_prefix,
        remove_extra_whitespaces=remove_extra_whitespaces,
        escape_whitespaces=escape_whitespaces,
    )
    return trainer, normalizer

"""A SentencePiece ``.model`` file read without protobuf: just enough of the wire format.

A ``.model`` file is one serialized ``ModelProto`` message (``sentencepiece_model.proto``,
proto2). Its wire format is a sequence of fields, each a key varint ``field_number << 3 |
wire_type`` followed by the value: wire type 0 a varint, 1 eight little-endian bytes,
2 a varint length and that many bytes (strings and sub-messages), 5 four bytes (``float``).
We read the fields SentencePiece needs for encoding and decoding, skip every other one (as
protobuf does, so files from newer versions load), and raise :class:`FormatError` saying
where the bytes stop making sense.

>>> blob = bytes([0x0A, 0x09, 0x0A, 0x02]) + "▁a".encode()[:2] + bytes([0x15, 0, 0, 0x80, 0xBF])
>>> parse_model_proto(blob).pieces  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
core.errors.FormatError: tokenizer.model: byte 4: pieces[0].piece is not valid UTF-8; ...
>>> blob = bytes([0x0A, 0x0A, 0x0A, 0x03]) + "▁".encode() + bytes([0x15, 0, 0, 0x80, 0xBF, 0x18, 1])
>>> parse_model_proto(blob).pieces
[ProtoPiece(piece='▁', score=-1.0, type=1)]
>>> parse_model_proto(blob).trainer_spec.model_type   # absent: proto2 default UNIGRAM
1
"""

from __future__ import annotations

import operator
import re
import struct
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress
from typing import Any

from core.errors import FormatError
from core.pipeline.sentencepiece.packed import (
    LazyColumn,
    PieceColumns,
    keep_packed,
    read_columns,
    read_fields,
    read_pieces,
    reads_packed,
)

__all__ = [
    "BPE",
    "BYTE",
    "BYTE_PIECES",
    "CHAR",
    "CONTROL",
    "NORMAL",
    "SPACE",
    "UNIGRAM",
    "UNKNOWN",
    "UNUSED",
    "USER_DEFINED",
    "WORD",
    "byte_piece",
    "ModelProto",
    "NormalizerSpec",
    "ProtoPiece",
    "TrainerSpec",
    "parse_model_proto",
    "piece_columns",
    "sniff_model_proto",
    "split_ids",
]

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4

# How pieces are spelled in every .model file: the normalizer writes SPACE for a space,
# the model and decoder name byte pieces <0x00>..<0xFF> (byte_fallback).
SPACE = "\u2581"  # ▁ LOWER ONE EIGHTH BLOCK: SentencePiece's visible space


def byte_piece(b: int) -> str:
    """The piece that stands for byte ``b``.

    >>> byte_piece(10)
    '<0x0A>'
    """
    return f"<0x{b:02X}>"


#: byte piece -> its byte
BYTE_PIECES = {byte_piece(b): b for b in range(256)}

_NOT_SPM = "this does not look like a SentencePiece model (.model) file"


@dataclass(frozen=True)
class ProtoPiece:
    """One ``ModelProto.SentencePiece``: the piece, its score (a float32) and its type."""

    piece: str
    score: float = 0.0
    type: int = NORMAL


@dataclass
class TrainerSpec:
    """The ``TrainerSpec`` fields that matter once a model is trained (proto2 defaults)."""

    model_type: int = UNIGRAM
    vocab_size: int = 8000
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    split_digits: bool = False
    split_by_whitespace: bool = True
    byte_fallback: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"
    unk_surface: str = " \u2047 "
    control_symbols: list[str] = field(default_factory=list)
    user_defined_symbols: list[str] = field(default_factory=list)


@dataclass
class NormalizerSpec:
    """``NormalizerSpec``: the normalization rule (a compiled char map) and space handling."""

    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    normalization_rule_tsv: str = ""


@dataclass
class ModelProto:
    """A parsed ``.model`` file. ``denormalizer_spec`` is None when the file has none.

    The pieces are kept as three columns by ID (``piece_texts``, ``piece_scores``,
    ``piece_types``): a model of 250,000 pieces then costs three lists, not 250,000 objects.
    :attr:`pieces` gives them as :class:`ProtoPiece` objects, built on each call.

    >>> ModelProto(["<unk>", "a"], [0.0, -1.5], [UNKNOWN, NORMAL]).pieces[1]
    ProtoPiece(piece='a', score=-1.5, type=1)
    """

    piece_texts: list[str] = field(default_factory=list)
    piece_scores: list[float] = field(default_factory=list)
    piece_types: list[int] = field(default_factory=list)
    trainer_spec: TrainerSpec = field(default_factory=TrainerSpec)
    normalizer_spec: NormalizerSpec = field(default_factory=NormalizerSpec)
    denormalizer_spec: NormalizerSpec | None = None
    self_test_samples: list[tuple[str, str]] = field(default_factory=list)

    #: the pieces as the file holds them (:mod:`core.pipeline.sentencepiece.packed`) while
    #: no column has been read, else None: a loader that needs no list reads these
    packed: PieceColumns | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def pieces(self) -> list[ProtoPiece]:
        """The pieces by ID, as objects (a new list each time: the columns are the data)."""
        return list(map(ProtoPiece, self.piece_texts, self.piece_scores, self.piece_types))

    def piece_count(self) -> int:
        """How many pieces (without unpacking them)."""
        packed = self.packed
        return len(self.piece_types) if packed is None else len(packed)


# (the columns unpack on first read; set after the class is made, so the dataclass's own
# __init__, __eq__ and __repr__ go through them)
for _column in ("piece_texts", "piece_scores", "piece_types"):
    _lazy = LazyColumn()
    _lazy.__set_name__(ModelProto, _column)
    setattr(ModelProto, _column, _lazy)


def piece_columns(
    pieces: ModelProto | Sequence[ProtoPiece],
) -> tuple[list[str], list[float], list[int]]:
    """The texts, scores and types of ``pieces`` (a :class:`ModelProto`, or objects with
    ``piece``, ``score`` and ``type`` such as :class:`ProtoPiece` or protobuf's own).

    >>> piece_columns([ProtoPiece("<unk>", 0.0, UNKNOWN), ProtoPiece("a", -1.0)])
    (['<unk>', 'a'], [0.0, -1.0], [2, 1])
    """
    if isinstance(pieces, ModelProto):
        return pieces.piece_texts, pieces.piece_scores, pieces.piece_types
    return (
        [p.piece for p in pieces],
        [p.score for p in pieces],
        [p.type for p in pieces],
    )


def split_ids(tokens: list[str], chosen: list[bool]) -> tuple[dict[str, int], dict[str, int]]:
    """``token -> ID`` for the tokens ``chosen`` marks and for the others, each keeping a
    token's first ID should it be spelled twice (SentencePiece's maps, filled in ID order).
    Built by whole-list operations; the loop runs only when some token is spelled twice.

    >>> split_ids(["<unk>", "a", "b", "a"], [False, True, True, True])
    ({'a': 1, 'b': 2}, {'<unk>': 0})
    """
    others = list(map(operator.not_, chosen))
    ids = range(len(tokens))
    first = dict(zip(compress(tokens, chosen), compress(ids, chosen)))
    second = dict(zip(compress(tokens, others), compress(ids, others)))
    if len(first) + len(second) != len(tokens):  # a token spelled twice: its first ID wins
        first, second = {}, {}
        for i, (token, pick) in enumerate(zip(tokens, chosen)):
            (first if pick else second).setdefault(token, i)
    return first, second


class _Broken(Exception):
    """Raised inside the reader; turned into a FormatError naming the file and byte."""

    def __init__(self, at: int, what: str) -> None:
        super().__init__(what)
        self.at, self.what = at, what


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    start, result, shift = pos, 0, 0
    while True:
        if pos >= end:
            raise _Broken(
                start, "a varint runs past the end of its message (truncated file?)"
            )
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Broken(start, "a varint longer than 10 bytes")


def _field(buf: bytes, pos: int, end: int) -> tuple[int, int, Any, int]:
    """The field whose key starts at ``pos``: ``(field_number, wire_type, value, next)``,
    ``next`` where the one after it starts; ``(0, 3, None, next)`` for a group (skipped).

    ``value`` is an int for wire types 0, 1, 5 and a ``(start, stop)`` pair for type 2.
    """
    at = pos
    key, pos = _varint(buf, pos, end)
    number, wire = key >> 3, key & 7
    if number == 0:
        raise _Broken(at, "a field numbered 0")
    if wire == 0:
        value, pos = _varint(buf, pos, end)
        return number, 0, value, pos
    if wire == 1:
        if pos + 8 > end:
            raise _Broken(at, "an 8-byte field runs past the end of its message")
        return number, 1, int.from_bytes(buf[pos : pos + 8], "little"), pos + 8
    if wire == 5:
        if pos + 4 > end:
            raise _Broken(at, "a 4-byte field runs past the end of its message")
        return number, 5, int.from_bytes(buf[pos : pos + 4], "little"), pos + 4
    if wire == 2:
        length, pos = _varint(buf, pos, end)
        if pos + length > end:
            raise _Broken(
                at, f"field {number} says {length} bytes follow, more than are left"
            )
        return number, 2, (pos, pos + length), pos + length
    if wire == 3:
        return 0, 3, None, _skip_group(buf, pos, end, number, at)
    # 4 (an end-group without a start) or 6, 7 (do not exist)
    raise _Broken(at, f"field {number} has wire type {wire}, which protobuf never writes")


def _fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, Any, int]]:
    """Yield ``(field_number, wire_type, value, at)`` for each field of ``buf[pos:end]``
    (see :func:`_field`); ``at`` is the byte offset of the field's key. Groups are skipped.
    """
    found, pos = read_fields(buf, pos, end)  # (what C reads cleanly; the rest, errors, below)
    yield from found
    while pos < end:
        at = pos
        number, wire, value, pos = _field(buf, pos, end)
        if wire != 3:
            yield number, wire, value, at


def _skip_group(buf: bytes, pos: int, end: int, number: int, at: int) -> int:
    depth = [number]
    while depth:
        if pos >= end:
            raise _Broken(at, f"group {number} is never closed")
        key_at = pos
        key, pos = _varint(buf, pos, end)
        n, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(buf, pos, end)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            pos += length
        elif wire == 3:
            depth.append(n)
        elif wire == 4 and n == depth[-1]:
            depth.pop()
        else:
            raise _Broken(key_at, f"a malformed group (field {n}, wire type {wire})")
        if pos > end:
            raise _Broken(key_at, "a group runs past the end of its message")
    return pos


def _int32(value: int) -> int:
    """A varint read as protobuf's int32/enum: the low 32 bits, two's complement."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _text(buf: bytes, span: tuple[int, int], what: str) -> str:
    try:
        return buf[span[0] : span[1]].decode("utf-8")
    except UnicodeDecodeError:
        raise _Broken(span[0], f"{what} is not valid UTF-8") from None


def _float32(bits: int) -> float:
    return struct.unpack("<f", bits.to_bytes(4, "little"))[0]


def _expect(wire: int, want: int) -> bool:
    """Protobuf keeps a field whose wire type does not match its declaration as an unknown
    field (skipped); we do the same."""
    return wire == want


def _parse_piece(buf: bytes, start: int, end: int, index: int) -> ProtoPiece:
    piece, score, kind = "", 0.0, NORMAL
    for number, wire, value, _ in _fields(buf, start, end):
        if number == 1 and _expect(wire, 2):
            piece = _text(buf, value, f"pieces[{index}].piece")
        elif number == 2 and _expect(wire, 5):
            score = _float32(value)
        elif number == 3 and _expect(wire, 0) and 1 <= _int32(value) <= 6:
            # (proto2: an enum value the schema does not know goes to unknown fields)
            kind = _int32(value)
    return ProtoPiece(piece, score, kind)


# ─── pieces in bulk ─────────────────────────────────────────────────────────────────────
#
# A .model file is mostly pieces, and protobuf writes nearly every one alike: key 0x0A, a
# one-byte length, then the piece (0x0A, a one-byte length, UTF-8), the score (0x15, a
# float32) and, unless NORMAL, the type (0x18, one byte 1..6). A run of such pieces is found
# by one regex and taken apart by C loops (findall, join, decode, array) instead of a Python
# loop per field. A piece found this way holds exactly the fields _parse_piece would read,
# because both lengths are checked against what the regex matched; anything else (a long
# piece, a piece holding byte 0x15, invalid UTF-8, other fields) ends the run and is read by
# _parse_piece, which also gives its error.

_ONE_PIECE = (
    rb"\x0a([\x00-\x7f])\x0a([\x00-\x7f])([^\x15]{0,127})"  # key, size; key, length, text
    rb"\x15([\s\S]{4})(?:\x18([\x01-\x06]))?"  # score; type
)
_PIECE = re.compile(_ONE_PIECE)
_PIECE_RUN = re.compile(rb"(?:" + re.sub(rb"\((?!\?)", b"(?:", _ONE_PIECE) + rb")+")
#: a matched piece's message length less its text's (by how many type bytes it has): 7
#: for the text's and the score's keys and lengths, 9 with a type
_EXTRA = bytes([7, 9]) + bytes(254)
_TYPE_OF = {b"": NORMAL, **{bytes([t]): t for t in range(1, 7)}}


def _bulk_pieces(buf: bytes, pos: int, model: ModelProto) -> int:
    """Read the run of plainly written pieces that starts at ``pos`` (if any) into
    ``model``'s columns; return where the pieces read end (``pos`` when none)."""
    run = _PIECE_RUN.match(buf, pos)
    if run is None:
        return pos
    found = _PIECE.findall(buf, pos, run.end())
    sizes, lengths, texts, scores, types = map(list, zip(*found))
    text_lengths = bytes(map(len, texts))
    extra = bytes(map(len, types)).translate(_EXTRA)
    bad = min(
        _first_difference(b"".join(lengths), text_lengths),
        _first_difference(b"".join(sizes), bytes(map(operator.add, text_lengths, extra))),
    )
    # (from piece `bad` on the regex matched pieces written otherwise: keep those before)
    del texts[bad:], scores[bad:], types[bad:], sizes[bad:]
    try:
        # NUL cannot be inside a multi-byte character: the joined bytes decode exactly when
        # every piece does
        joined = b"\x00".join(texts).decode("utf-8")
        words = joined.split("\x00")
        if len(words) != len(texts):  # a piece holds a NUL itself
            words = [t.decode("utf-8") for t in texts]
    except UnicodeDecodeError:
        bad = next(i for i, t in enumerate(texts) if t.decode(errors="replace").encode() != t)
        del texts[bad:], scores[bad:], types[bad:], sizes[bad:]
        words = [t.decode("utf-8") for t in texts]
    floats = array("f", b"".join(scores))
    if sys.byteorder == "big":  # pragma: no cover
        floats.byteswap()
    model.piece_texts += words
    model.piece_scores += floats.tolist()
    model.piece_types += map(_TYPE_OF.__getitem__, types)
    return pos + sum(b"".join(sizes)) + 2 * len(sizes)  # (each: key, length, message)


def _native_pieces(buf: bytes, pos: int, model: ModelProto) -> int:
    """:func:`_bulk_pieces` by ``tokplay_native.spm``: every piece from ``pos`` on that it
    reads cleanly, in one C pass (it stops where :func:`_parse_piece` would raise, or
    before a piece written unusually, which the loop of :func:`parse_model_proto` reads)."""
    if model.packed is None and not model.piece_types:
        # (the usual case, every piece in one run: kept packed, the lists made on first read)
        spans, floats, codes, after = read_columns(buf, pos)
        if after != pos:
            keep_packed(model, PieceColumns(buf, spans, floats, codes))
        return int(after)
    texts, scores, types, after = read_pieces(buf, pos)
    if model.piece_texts:
        model.piece_texts += texts
        model.piece_scores += scores
        model.piece_types += types
    else:  # (the usual case: every piece in one run, taken as it is)
        model.piece_texts, model.piece_scores, model.piece_types = texts, scores, types
    return int(after)


def _first_difference(a: bytes, b: bytes) -> int:
    """The first index where ``a`` and ``b`` (of one length) differ, else their length;
    found by halving, so each step is one comparison in C.

    >>> _first_difference(b"abcd", b"abxd"), _first_difference(b"ab", b"ab")
    (2, 2)
    """
    if a == b:
        return len(a)
    lo, hi = 0, len(a)  # a[:lo] == b[:lo]; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


#: TrainerSpec's repeated strings: control_symbols (30), user_defined_symbols (31).
_TRAINER_LIST_BYTES = bytes((30, 31))
_TRAINER_INTS = {3: "model_type", 4: "vocab_size", 40: "unk_id", 41: "bos_id", 42: "eos_id",
                 43: "pad_id"}  # fmt: skip
_TRAINER_BOOLS = {24: "treat_whitespace_as_suffix", 26: "allow_whitespace_only_pieces",
                  25: "split_digits", 22: "split_by_whitespace", 35: "byte_fallback"}  # fmt: skip
_TRAINER_STRS = {45: "unk_piece", 46: "bos_piece", 47: "eos_piece", 48: "pad_piece",
                 44: "unk_surface"}  # fmt: skip


def _parse_trainer(buf: bytes, start: int, end: int, spec: TrainerSpec) -> None:
    lists = {30: spec.control_symbols, 31: spec.user_defined_symbols}
    # C reads what it reads cleanly (nothing without it), the list fields as strs, taken in
    # bulk (Mistral's ~750 control symbols); each list keeps the file's order, errors come after
    found, start = read_fields(buf, start, end, _TRAINER_LIST_BYTES)
    for number, symbols in lists.items():
        symbols += [v for n, w, v, _ in found if n == number and w == 2]
    found = [f for f in found if f[0] not in lists]
    for number, wire, value, _ in chain(found, _fields(buf, start, end)):
        into = lists.get(number)
        if into is not None and wire == 2:
            try:
                into.append(buf[value[0] : value[1]].decode("utf-8"))
            except UnicodeDecodeError:
                what = f"trainer_spec field {number} is not valid UTF-8"
                raise _Broken(value[0], what) from None
        elif number in _TRAINER_INTS and _expect(wire, 0):
            if number == 3 and not 1 <= _int32(value) <= 4:
                continue  # unknown enum value: protobuf leaves the field as it was
            setattr(spec, _TRAINER_INTS[number], _int32(value))
        elif number in _TRAINER_BOOLS and _expect(wire, 0):
            setattr(spec, _TRAINER_BOOLS[number], value != 0)
        elif number in _TRAINER_STRS and _expect(wire, 2):
            setattr(
                spec,
                _TRAINER_STRS[number],
                _text(buf, value, f"trainer_spec field {number}"),
            )


def _parse_normalizer(
    buf: bytes, start: int, end: int, spec: NormalizerSpec, what: str
) -> None:
    for number, wire, value, _ in _fields(buf, start, end):
        if number == 1 and _expect(wire, 2):
            spec.name = _text(buf, value, f"{what}.name")
        elif number == 2 and _expect(wire, 2):
            spec.precompiled_charsmap = bytes(buf[value[0] : value[1]])
        elif number == 3 and _expect(wire, 0):
            spec.add_dummy_prefix = value != 0
        elif number == 4 and _expect(wire, 0):
            spec.remove_extra_whitespaces = value != 0
        elif number == 5 and _expect(wire, 0):
            spec.escape_whitespaces = value != 0
        elif number == 6 and _expect(wire, 2):
            spec.normalization_rule_tsv = _text(
                buf, value, f"{what}.normalization_rule_tsv"
            )


def _parse_self_test(
    buf: bytes, start: int, end: int, out: list[tuple[str, str]]
) -> None:
    for number, wire, value, _ in _fields(buf, start, end):
        if number == 1 and _expect(wire, 2):
            sample = ["", ""]
            for n, w, v, _ in _fields(buf, value[0], value[1]):
                if n in (1, 2) and _expect(w, 2):
                    sample[n - 1] = _text(buf, v, "self_test_data sample")
            out.append((sample[0], sample[1]))


def parse_model_proto(data: bytes, *, name: str = "tokenizer.model") -> ModelProto:
    """Parse a serialized ``ModelProto`` (the bytes of a SentencePiece ``.model`` file).

    Only the wire format is checked here (plus UTF-8 in strings); what the fields *mean*
    (one ``<unk>``, 256 byte pieces, ...) is checked by :mod:`core.pipeline.sentencepiece.load`.
    A sub-message that appears twice is merged, as protobuf does.
    """
    buf = bytes(data)
    model = ModelProto()
    pos, end = 0, len(buf)
    bulk = _native_pieces if reads_packed() else _bulk_pieces
    try:
        while pos < end:
            if buf[pos] == 0x0A:  # a piece: the plain ones in bulk
                after = bulk(buf, pos, model)
                if after != pos:
                    pos = after
                    continue
            number, wire, value, pos = _field(buf, pos, end)
            if number == 1 and _expect(wire, 2):
                piece = _parse_piece(buf, value[0], value[1], len(model.piece_texts))
                model.piece_texts.append(piece.piece)
                model.piece_scores.append(piece.score)
                model.piece_types.append(piece.type)
            elif number == 2 and _expect(wire, 2):
                _parse_trainer(buf, value[0], value[1], model.trainer_spec)
            elif number == 3 and _expect(wire, 2):
                _parse_normalizer(
                    buf, value[0], value[1], model.normalizer_spec, "normalizer_spec"
                )
            elif number == 4 and _expect(wire, 2):
                _parse_self_test(buf, value[0], value[1], model.self_test_samples)
            elif number == 5 and _expect(wire, 2):
                if model.denormalizer_spec is None:
                    model.denormalizer_spec = NormalizerSpec()
                spec = model.denormalizer_spec
                _parse_normalizer(buf, value[0], value[1], spec, "denormalizer_spec")
    except _Broken as err:
        raise FormatError(f"{name}: byte {err.at}: {err.what}; {_NOT_SPM}") from None
    return model


_OTHER_MODEL_FIELDS = frozenset(n << 3 | 2 for n in (2, 3, 4, 5))


def sniff_model_proto(data: bytes, pieces: int = 3) -> bool:
    """Cheap check: do the first bytes parse as ``pieces`` SentencePiece entries (field 1,
    each holding a non-empty UTF-8 piece and a float32 score), or as fewer followed by
    another ``ModelProto`` field (a tiny model)?

    >>> sniff_model_proto(b'{"model": {}}'), sniff_model_proto(b"")
    (False, False)
    """
    buf = bytes(data[:4096])
    pos, seen = 0, 0
    try:
        while seen < pieces:
            key, pos = _varint(buf, pos, len(buf))
            if key != (1 << 3 | 2):
                return seen > 0 and key in _OTHER_MODEL_FIELDS
            length, pos = _varint(buf, pos, len(buf))
            if length > 1024 or pos + length > len(buf):
                return False
            piece = _parse_piece(buf, pos, pos + length, seen)
            found = [n for n, w, _, _ in _fields(buf, pos, pos + length)]
            if not piece.piece or 2 not in found or not set(found) <= {1, 2, 3}:
                return False
            pos += length
            seen += 1
    except _Broken:
        return False
    return True

"""A ``.model`` file's pieces as the file holds them, until some page needs them as lists.

Opening a model should cost what encoding needs, nothing more. Encoding a SentencePiece BPE
model needs one C table (``tokplay_native.bpe.spm_words_raw``), and that table is built
straight from the file's bytes; the three Python lists of 32,000 texts, scores and types
(most of a load's time: one str and one float per piece) are wanted only by the pages that
show pieces or decode. So where ``tokplay_native.spm`` is built, the parser keeps the pieces
packed (:class:`PieceColumns`: where each text lies in the file, the scores, the types) and
:class:`ModelProto`'s three columns make their lists from it on first read
(:class:`LazyColumn`). Without C, the parser makes the lists at once, as before; either way
a column reads the same.

>>> cols = PieceColumns.pack(["<unk>", "▁a"], [0.0, -1.5], [2, 1])
>>> len(cols), cols.texts_of([1]), cols.types, cols.lists()
(2, ['▁a'], b'\\x02\\x01', (['<unk>', '▁a'], [0.0, -1.5], [2, 1]))
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

from core import native

__all__ = ["LazyColumn", "PieceColumns", "pack_texts", "span_texts"]

#: A text's place in a packed buffer: its start and length, native int64s (as
#: tokplay_native.spm's columns() and gguf_spans() write them).
SPAN = struct.Struct("=qq")


def pack_texts(texts: list[str]) -> tuple[bytes, bytes]:
    """``texts`` packed: their UTF-8 one after another, and each one's span in it (for
    tests and docs: the readers pack straight from a file).

    >>> buf, spans = pack_texts(["▁a", "b"])
    >>> buf, list(SPAN.iter_unpack(spans))
    (b'\\xe2\\x96\\x81ab', [(0, 4), (4, 1)])
    """
    blobs = [t.encode("utf-8") for t in texts]
    starts = [0]
    for blob in blobs:
        starts.append(starts[-1] + len(blob))
    return b"".join(blobs), b"".join(SPAN.pack(s, len(b)) for s, b in zip(starts, blobs))


def span_texts(buf: bytes, spans: bytes, ids: list[int] | None = None) -> list[str]:
    """The strs of packed ``spans`` into ``buf`` (of those at ``ids`` alone, when given):
    in C where it was built, else one by one (the same strs).

    >>> span_texts(*pack_texts(["▁a", "b", "c"])), span_texts(*pack_texts(["x", "y"]), [1])
    (['▁a', 'b', 'c'], ['y'])
    """
    spm = native.spm
    if spm is not None:
        args = (buf, spans) if ids is None else (buf, spans, ids)
        return spm.texts(*args)  # type: ignore[no-any-return]
    at_ids = (SPAN.unpack_from(spans, SPAN.size * i) for i in ids or ())
    pairs = SPAN.iter_unpack(spans) if ids is None else at_ids
    return [buf[at : at + n].decode("utf-8") for at, n in pairs]


class PieceColumns:
    """Pieces by ID, packed: ``spans`` (native int64 pairs: where each text's UTF-8 starts in
    ``buf``, and its length; checked valid UTF-8 by the reader), ``scores`` (native doubles)
    and ``types`` (one byte each, 1..6): ``tokplay_native.spm.columns``' answer."""

    __slots__ = ("buf", "spans", "scores", "types")

    def __init__(self, buf: bytes, spans: bytes, scores: bytes, types: bytes) -> None:
        self.buf, self.spans, self.scores, self.types = buf, spans, scores, types

    @classmethod
    def pack(cls, texts: list[str], scores: list[float], types: list[int]) -> PieceColumns:
        """Columns packed from lists (for tests and docs: a parser packs from the file)."""
        buf, spans = pack_texts(texts)
        return cls(buf, spans, array("d", scores).tobytes(), bytes(types))

    def __len__(self) -> int:
        return len(self.types)

    def texts_of(self, ids: list[int]) -> list[str]:
        """The texts of some pieces alone (the few a load reads: ``<unk>``, byte pieces,
        control pieces), by ID."""
        return span_texts(self.buf, self.spans, ids)

    def lists(self) -> tuple[list[str], list[float], list[int]]:
        """The three columns as the lists a ModelProto holds."""
        scores = array("d")
        scores.frombytes(self.scores)
        return span_texts(self.buf, self.spans), scores.tolist(), list(self.types)

    def __reduce__(self) -> Any:  # (pickles as its four bytes objects)
        return PieceColumns, (self.buf, self.spans, self.scores, self.types)


class LazyColumn:
    """One of :class:`ModelProto`'s piece columns (``piece_texts``, ``piece_scores``,
    ``piece_types``): a plain list, made with the other two from the packed pieces
    (``proto.packed``) on first read or write, so the three always agree in length."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, proto: Any, owner: type | None = None) -> Any:
        if proto is None:
            return self
        found = proto.__dict__.get(self.slot)
        if found is None:
            unpack(proto)
            found = proto.__dict__[self.slot]
        return found

    def __set__(self, proto: Any, value: list[Any]) -> None:
        unpack(proto)
        proto.__dict__[self.slot] = value


_SLOTS = ("_piece_texts", "_piece_scores", "_piece_types")


def unpack(proto: Any) -> None:
    """Make ``proto``'s three column lists from its packed pieces, if they are still packed.

    subtle: a model is shared by every session's thread, so two may read a column first at
    once. The lists are put in place before the packed pieces are let go (each step one
    dict operation), so a reader finds one or the other, never neither; two threads that
    both unpack make equal lists, and the first one kept wins."""
    state = proto.__dict__
    packed = state.get("packed")
    if packed is not None:
        for slot, column in zip(_SLOTS, packed.lists()):
            state.setdefault(slot, column)
        state.pop("packed", None)


def keep_packed(proto: Any, packed: PieceColumns) -> None:
    """Let ``proto`` (with no pieces yet) hold ``packed`` as its pieces, unpacked on first read."""
    for slot in _SLOTS:
        proto.__dict__.pop(slot, None)
    proto.__dict__["packed"] = packed


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
from collections.abc import Sequence
from typing import Any

from core import native

__all__ = ["LazyColumn", "PieceColumns", "char_cuts", "char_ranges_in_c", "first_repeat", "has_repeats",
           "float32_doubles", "gguf_spans", "gguf_strings", "kept_charsmap", "pack_texts",
           "piece_chars_in_c", "piece_tables_in_c", "read_columns", "read_fields", "read_pieces",
           "reads_packed", "span_texts"]  # fmt: skip

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


def span_texts(buf: bytes | memoryview, spans: bytes, ids: list[int] | None = None) -> list[str]:
    """The strs of packed ``spans`` into ``buf`` (of those at ``ids`` alone, when given):
    in C where it was built, else one by one (the same strs).

    >>> span_texts(*pack_texts(["▁a", "b", "c"])), span_texts(*pack_texts(["x", "y"]), [1])
    (['▁a', 'b', 'c'], ['y'])
    """
    spm = native.spm
    if spm is not None:
        args = (buf, spans) if ids is None else (buf, spans, ids)
        return spm.texts(*args)
    at_ids = (SPAN.unpack_from(spans, SPAN.size * i) for i in ids or ())
    pairs = SPAN.iter_unpack(spans) if ids is None else at_ids
    return [str(buf[at : at + n], "utf-8") for at, n in pairs]


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



# ----------------------------------------------------------------------------------------
# The C readers (tokplay_native.spm, tokplay_native.normalize): one home
# ----------------------------------------------------------------------------------------
# SentencePiece's loops over a model's pieces and bytes (the .model parser, GGUF's string
# arrays, the piece tables, the word cutter, the char map) run in C where it was built. Each
# function below answers what its pure caller would (the same values), or "nothing done"
# (None, or nothing read) where C was not built (or a test set ``core.native.spm`` or
# ``core.native.normalize`` to None: read at each call): the caller's own code goes on.


def reads_packed() -> bool:
    """Whether SentencePiece pieces and GGUF strings are read into packed columns (only C
    reads them so; without it the readers make their lists at once)."""
    return native.spm is not None


def read_columns(buf: bytes, pos: int) -> tuple[bytes, bytes, bytes, int]:
    """Packed ``(spans, scores, types, after)`` of the ``.model`` pieces from ``pos`` on
    that C reads cleanly (:func:`reads_packed` only)."""
    return native.spm.columns(buf, pos)  # type: ignore[union-attr]


def read_pieces(buf: bytes, pos: int) -> tuple[list[str], list[float], list[int], int]:
    """:func:`read_columns` as lists (texts, scores, types) (:func:`reads_packed` only)."""
    return native.spm.pieces(buf, pos)  # type: ignore[union-attr]


def read_fields(buf: bytes, pos: int, end: int, *lists: bytes) -> tuple[list[Any], int]:
    """The protobuf fields of ``buf[pos:end]`` that C reads cleanly, as ``(number, wire,
    value, at)``, and where it stopped (``lists``: field numbers read as strs); ``([], pos)``
    without C."""
    spm = native.spm
    return ([], pos) if spm is None else spm.fields(buf, pos, end, *lists)


def gguf_strings(buf: bytes, pos: int, stop: int, count: int, big: bool) -> tuple[list[str], int]:
    """Up to ``count`` GGUF strings (u64 length, UTF-8) from ``buf[pos:stop]`` that C reads
    cleanly, and where it stopped; ``([], pos)`` without C."""
    spm = native.spm
    return ([], pos) if spm is None else spm.gguf_strings(buf, pos, stop, count, big)


def gguf_spans(buf: bytes, pos: int, stop: int, count: int, big: bool) -> tuple[bytes, int]:
    """:func:`gguf_strings` packed: the strings' spans (checked valid UTF-8) and where it
    stopped (:func:`reads_packed` only)."""
    return native.spm.gguf_spans(buf, pos, stop, count, big)  # type: ignore[union-attr]


def float32_doubles(floats: memoryview) -> bytes | None:
    """float32s as native doubles (each the same value) in C; None without it."""
    spm = native.spm
    return None if spm is None else spm.float32_doubles(floats)


def first_repeat(texts: list[str]) -> int | None:
    """The index of the first text spelled before, -1 for none; None without C or for an
    item that is no exact str (the caller's set decides)."""
    spm = native.spm
    if spm is None:
        return None
    try:
        return int(spm.first_repeat(texts))
    except TypeError:
        return None


def has_repeats(texts: Sequence[str]) -> bool:
    """Whether some text is spelled twice (``len(set(texts)) != len(texts)``); one C pass
    where ``tokplay_native.spm`` is built, which hashes no str (a fresh one's SipHash is
    most of what the set costs, and nothing else needs it where C encodes).

    >>> has_repeats(["a", "b"]), has_repeats(["a", "b", "a"])
    (False, True)
    """
    found = first_repeat(texts) if type(texts) is list else None
    if found is not None:
        return found >= 0
    return len(set(texts)) != len(texts)  # (no C, or an item that is no exact str)


def piece_tables_in_c(texts: list[str], scores: list[float], types: list[int]) -> Any:
    """``(vocab, ranks)`` of :func:`core.pipeline.sentencepiece.tables.piece_tables` in one
    C pass; None without C, for a text spelled twice or an item of another type."""
    spm = native.spm
    if spm is None:
        return None
    try:
        return spm.tables(texts, scores, types)
    except TypeError:
        return None


def piece_chars_in_c(pieces: Any) -> tuple[set[str], set[str], set[str]] | None:
    """:func:`core.pipeline.sentencepiece.cuts.piece_chars` in one C pass; None without C."""
    spm = native.spm
    if spm is None:
        return None
    used, before, after = spm.piece_chars(pieces)
    return used, before, after


def char_ranges_in_c(chars: set[str]) -> str | None:
    """:func:`core.pipeline.sentencepiece.cuts._char_ranges` in one C pass (thousands of
    characters in CJK vocabs); None without C."""
    spm = native.spm
    return None if spm is None else str(spm.char_ranges(chars))


def char_cuts(pieces: list[str] | PieceColumns) -> Any:
    """C's word cutter (``CharCuts``) over the pieces that may be merged into (their texts,
    or a file's packed pieces while they are packed, cut to those by type); None without C.
    """
    spm = native.spm
    if spm is None:
        return None
    if isinstance(pieces, PieceColumns):
        return spm.char_cuts(pieces.buf, pieces.spans, pieces.types)
    return spm.char_cuts(pieces)


def kept_charsmap(owner: Any, blob: bytes, symbols: frozenset[str]) -> Any:
    """A char map (``precompiled_charsmap``'s bytes) in C with these user-defined pieces
    (``tokplay_native.normalize.CharsMap``), kept at ``owner._native`` as ``(symbols, map)``
    (built again for other symbols); None while C is off (read at each call), or for a map
    it leaves to the pure code (an empty trie, replacements that are not UTF-8)."""
    module = native.normalize
    if module is None:
        return None
    found = owner._native
    if found is None or (found[0] is not symbols and found[0] != symbols):
        try:
            built = module.CharsMap(blob, sorted(symbols))
        except ValueError:
            built = None
        found = owner._native = (symbols, built)
    return found[1]

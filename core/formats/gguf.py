"""GGUF files (llama.cpp, Ollama, LM Studio): the header and metadata, never the tensors.

A GGUF file (``ggml/docs/gguf.md``, llama.cpp's ``gguf-py`` reader) starts::

    "GGUF"  u32 version (2 or 3)  u64 tensor_count  u64 kv_count
    kv_count times:  string key  u32 value_type  value
    ... tensor infos, then the tensors (the bulk of the file: not read here)

A string is a u64 byte length and that many UTF-8 bytes; an array is a u32 element type,
a u64 count and the elements. Numbers are little-endian (a big-endian file is recognised by
its version and read too). Every length and count is checked against the bytes left before
anything is allocated, so a truncated or hostile file costs one :class:`FormatError` line,
and a 5 GB model costs its header (read incrementally from a path, a chunk at a time).

>>> blob = write_gguf({"general.name": "toy", "tokenizer.ggml.tokens": ["a", "b"]})
>>> meta = read_gguf_metadata(blob)
>>> meta.version, meta.fields["general.name"], meta.fields["tokenizer.ggml.tokens"]
(3, 'toy', ['a', 'b'])
>>> read_gguf_metadata(blob[:50])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
core.errors.FormatError: model.gguf: the file ends at byte 50, inside metadata key 'general.name'...
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, overload

from core.errors import FormatError
from core.pipeline.sentencepiece.packed import (
    SPAN,
    gguf_spans,
    gguf_strings,
    pack_texts,
    reads_packed,
    span_texts,
)

__all__ = [
    "GGUF_MAGIC",
    "MAX_METADATA_BYTES",
    "GGUFMetadata",
    "GGUFStrings",
    "looks_like_gguf",
    "read_gguf_metadata",
    "write_gguf",
]

GGUF_MAGIC = b"GGUF"
#: The metadata of real models is a few MB (a 262k-token vocab with scores and merges is
#: about 10 MB); more than this is refused rather than held in memory.
MAX_METADATA_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20  # bytes read from a file at a time

# GGUFValueType -> (struct code, size in bytes); STRING = 8 and ARRAY = 9 are handled apart
_SCALARS: dict[int, tuple[str, int]] = {
    0: ("B", 1), 1: ("b", 1), 2: ("H", 2), 3: ("h", 2), 4: ("I", 4), 5: ("i", 4),
    6: ("f", 4), 7: ("?", 1), 10: ("Q", 8), 11: ("q", 8), 12: ("d", 8),
}  # fmt: skip
_STRING, _ARRAY = 8, 9
_TYPE_NAMES = {
    0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32",
    7: "bool", 8: "string", 9: "array", 10: "uint64", 11: "int64", 12: "float64",
}  # fmt: skip


#: The metadata key naming the tokenizer's kind (``read_gguf_metadata``'s ``packed`` reads it).
MODEL_KEY = "tokenizer.ggml.model"


@dataclass
class GGUFMetadata:
    """What a GGUF file says about itself: its version, tensor count and key/value pairs.

    ``fields`` maps each key to a Python value (``str``, ``int``, ``float``, ``bool`` or a
    list of one of those); ``types`` keeps each key's GGUF type name (``"array[int32]"``).
    """

    version: int
    tensor_count: int
    fields: dict[str, Any] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    name: str = "model.gguf"

    def get(self, key: str, default: Any = None) -> Any:
        """``fields.get(key, default)``."""
        return self.fields.get(key, default)


def looks_like_gguf(data: bytes) -> bool:
    """The bytes start with GGUF's magic.

    >>> looks_like_gguf(b"GGUF\\x03\\x00\\x00\\x00"), looks_like_gguf(b"{}")
    (True, False)
    """
    return data[:4] == GGUF_MAGIC


class GGUFStrings(Sequence[str]):
    """A string array read with ``packed=True``: the array's bytes and where each string
    lies in them (``spans``: native int64 pairs, start and length, checked valid UTF-8 by
    the reader), with no str made until one is read. A vocab's 32,000 tokens then cost
    two bytes objects; the strs are made in C, all at once by :meth:`tolist` (or on each
    iteration), or one by one by indexing.

    >>> words = GGUFStrings.pack(["▁a", "b"])
    >>> len(words), words[1], words[-2], words.tolist(), list(words[::-1])
    (2, 'b', '▁a', ['▁a', 'b'], ['b', '▁a'])
    """

    __slots__ = ("buf", "spans")

    def __init__(self, buf: bytes, spans: bytes) -> None:
        self.buf, self.spans = buf, spans

    @classmethod
    def pack(cls, texts: Sequence[str]) -> GGUFStrings:
        """Strings packed from a list (for tests and docs: the reader packs from the file)."""
        return cls(*pack_texts(list(texts)))

    def __len__(self) -> int:
        return len(self.spans) // SPAN.size

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return self.tolist()[index]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("GGUFStrings index out of range")
        return span_texts(self.buf, self.spans, [i])[0]

    def __iter__(self) -> Iterator[str]:
        return iter(self.tolist())

    def tolist(self) -> list[str]:
        """Every string, as a new list (as ``array.tolist``)."""
        return span_texts(self.buf, self.spans)

    def __repr__(self) -> str:
        return f"GGUFStrings({len(self):,} strings)"


class _Source:
    """Bytes read front to back from memory or a file, each read checked against the end.

    A file is read a chunk at a time into a small window, so the tensors after the header
    are never read."""

    def __init__(self, data: bytes | None, file: IO[bytes] | None, size: int, name: str,
                 limit: int) -> None:  # fmt: skip
        self.buf = data if data is not None else b""
        self.base = 0  # file offset of buf[0]
        self.pos = 0  # offset in buf
        self.file, self.size, self.name, self.limit = file, size, name, limit
        self.where = "the header"

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def left(self) -> int:
        return self.size - self.offset

    def take(self, n: int) -> bytes:
        """The next ``n`` bytes; a FormatError names the byte where the file ends."""
        if n > self.left():
            raise FormatError(
                f"{self.name}: the file ends at byte {self.size:,}, inside {self.where} "
                f"(needs {n:,} more bytes at byte {self.offset:,}); is it truncated?"
            )
        if self.offset + n > self.limit:
            raise FormatError(
                f"{self.name}: the metadata runs past {self.limit // (1 << 20):,} MB (at "
                f"{self.where}); real models need a few MB, so this file is refused"
            )
        if self.pos + n > len(self.buf):
            self._refill(n)
        view = self.buf[self.pos : self.pos + n]
        self.pos += n
        return view

    def _refill(self, n: int) -> None:
        assert self.file is not None  # in memory, take() already checked the end
        parts = [self.buf[self.pos :]]
        have, want = len(parts[0]), max(n, _CHUNK)
        while have < want:  # a read may return less than asked (and a file may shrink)
            more = self.file.read(want - have)
            if not more:
                break
            parts.append(more)
            have += len(more)
        if have < n:
            raise FormatError(
                f"{self.name}: the file ended at byte {self.base + self.pos + have:,}, before "
                f"its size said ({self.size:,} bytes); was it changed while being read?"
            )
        self.base += self.pos
        self.buf, self.pos = b"".join(parts), 0


class _Reader:
    def __init__(self, src: _Source, order: str) -> None:
        self.src, self.order = src, order
        self.element_type = _STRING  # of the last array read
        self.packed = False  # arrays as the file holds them (read_gguf_metadata's packed)

    def scalar(self, code: str, size: int) -> Any:
        return struct.unpack(self.order + code, self.src.take(size))[0]

    def u32(self) -> int:
        return int(self.scalar("I", 4))

    def u64(self) -> int:
        return int(self.scalar("Q", 8))

    def string(self) -> str:
        at = self.src.offset
        n = self.u64()
        if n > self.src.left():
            raise FormatError(
                f"{self.src.name}: a string at byte {at:,} ({self.src.where}) claims {n:,} "
                f"bytes but only {self.src.left():,} are left; the file is damaged"
            )
        raw = self.src.take(n)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            raise FormatError(
                f"{self.src.name}: the string at byte {at:,} ({self.src.where}) is not "
                "valid UTF-8; GGUF strings are UTF-8"
            ) from None

    def value(self, vtype: int, *, in_array: bool = False) -> Any:
        if vtype in _SCALARS:
            return self.scalar(*_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY and not in_array:
            return self.array()
        what = "a nested array" if vtype == _ARRAY else f"value type {vtype}"
        raise FormatError(
            f"{self.src.name}: {self.src.where} has {what}, which GGUF does not define; "
            "the file is damaged or from an unknown GGUF version"
        )

    def array(self) -> list[Any] | array[Any] | GGUFStrings:
        etype = self.u32()
        count = self.u64()
        if etype not in _SCALARS and etype != _STRING:
            self.value(etype, in_array=True)  # raises: a nested array or an unknown type
        self.element_type = etype
        # the smallest element this type can be: a count beyond what is left is a lie
        smallest = 8 if etype == _STRING else _SCALARS.get(etype, ("", 1))[1]
        if count * smallest > self.src.left():
            raise FormatError(
                f"{self.src.name}: {self.src.where} claims {count:,} elements but only "
                f"{self.src.left():,} bytes are left; the file is damaged"
            )
        if etype in _SCALARS and etype != 7:
            code, size = _SCALARS[etype]
            items = array(code)
            if items.itemsize != size:  # a platform whose C types differ: one at a time
                return [self.value(etype, in_array=True) for _ in range(count)]
            items.frombytes(self.src.take(count * size))
            if self.order == ">" and size > 1:
                items.byteswap()
            return items if self.packed else items.tolist()
        if etype == _STRING:
            return self.packed_strings(count) if self.packed else self.strings(count)
        return [self.value(etype, in_array=True) for _ in range(count)]

    def packed_strings(self, count: int) -> GGUFStrings | list[str]:
        """``count`` strings as :class:`GGUFStrings` when ``tokplay_native.spm`` reads them
        all cleanly from the buffer (a file's window grown to hold them), else as
        :meth:`strings` reads them (a list, the same strs or the same error), taking over the
        ones read here."""
        src = self.src
        if not count or not reads_packed():
            return self.strings(count)
        while True:
            buf, pos = src.buf, src.pos
            stop = min(len(buf), src.limit - src.base)
            spans, end = gguf_spans(buf, pos, stop, count, self.order == ">")
            read = len(spans) // SPAN.size
            # a file is read a window at a time: the window doubles while the next string
            # runs past it but not past the file's end or the limit (a 262k vocab is ~3 MB)
            reach = min(src.size, src.limit) - src.base
            if read == count or src.file is None or len(buf) >= reach:
                break
            if not self._past_window(end, stop, reach):
                break
            src._refill(min(2 * (len(buf) - pos), reach - pos))
        src.pos = end
        if read == count:  # (a copy: a tokenizer keeps it, never a whole model file)
            return GGUFStrings(buf[pos:end], spans)
        # (the rest runs past the buffer's end, or is damaged: strings() goes on from there)
        first = span_texts(memoryview(buf)[pos:end], spans)
        return first + self.strings(count - read)

    def _past_window(self, at: int, stop: int, reach: int) -> bool:
        """Whether the string at ``buf[at]`` runs past ``stop`` (the window) but not past
        ``reach`` (a damaged one, or one that is whole, is left to :meth:`strings`)."""
        buf = self.src.buf
        if at + 8 > stop:
            return at + 8 <= reach
        end = at + 8 + struct.unpack_from(self.order + "Q", buf, at)[0]
        return stop < end <= reach

    def strings(self, count: int) -> list[str]:
        """``count`` strings: a fast path for vocab and merges (hundreds of thousands of
        short strings) while they lie whole in the buffer, else :meth:`string` with its
        checks and messages."""
        src, out = self.src, list[str]()
        unpack, append = struct.Struct(self.order + "Q").unpack_from, out.append
        while len(out) < count:
            buf, pos = src.buf, src.pos
            stop = min(len(buf), src.limit - src.base)
            # the same loop in C where built (it stops where this one would; else reads none)
            found, pos = gguf_strings(buf, pos, stop, count - len(out), self.order == ">")
            out += found
            try:
                for _ in range(count - len(out)):  # (a bare loop: a third faster than a while)
                    start = pos + 8
                    end = start + unpack(buf, pos)[0]
                    if end > stop:
                        break
                    append(buf[start:end].decode())
                    pos = end
            except (UnicodeDecodeError, struct.error):
                pass  # string() below says where (or reads on past the buffer)
            src.pos = pos
            if len(out) < count:
                append(self.string())
        return out


def _header(rd: _Reader) -> tuple[int, int, int]:
    src = rd.src
    if bytes(src.take(4)) != GGUF_MAGIC:
        raise FormatError(
            f"{src.name}: not a GGUF file (it does not start with the bytes 'GGUF')"
        )
    raw = bytes(src.take(4))
    version = struct.unpack("<I", raw)[0]
    if version & 0xFFFF == 0:  # written on a big-endian machine: every number is swapped
        rd.order, version = ">", struct.unpack(">I", raw)[0]
    if version not in (2, 3):
        hint = " (GGUF v1 files predate llama.cpp's 2023 format; re-convert it)" if version == 1 else ""
        raise FormatError(
            f"{src.name}: GGUF version {version}; the playground reads versions 2 and 3{hint}"
        )
    tensors, kvs = rd.u64(), rd.u64()
    # a key/value pair takes at least 13 bytes (key length, type, a one-byte value)
    if kvs * 13 > src.left():
        raise FormatError(
            f"{src.name}: the header claims {kvs:,} metadata entries but only "
            f"{src.left():,} bytes follow; the file is damaged"
        )
    return version, tensors, kvs


def _read(src: _Source, packed: bool | frozenset[str]) -> GGUFMetadata:
    rd = _Reader(src, "<")
    version, tensors, kvs = _header(rd)
    meta = GGUFMetadata(version, tensors, name=src.name)
    for index in range(kvs):
        rd.packed = packed if isinstance(packed, bool) else meta.fields.get(MODEL_KEY) in packed
        src.where = f"metadata entry {index}"
        key = rd.string()
        src.where = f"metadata key {key!r}"
        if key in meta.fields:
            raise FormatError(f"{src.name}: metadata key {key!r} appears twice")
        vtype = rd.u32()
        value = rd.value(vtype)
        meta.fields[key] = value
        name = _TYPE_NAMES[vtype]
        if vtype == _ARRAY:
            name = f"array[{_TYPE_NAMES[rd.element_type]}]"
        meta.types[key] = name
    return meta


def read_gguf_metadata(
    source: bytes | bytearray | memoryview | str | os.PathLike[str] | IO[bytes],
    *,
    name: str | None = None,
    max_metadata_bytes: int = MAX_METADATA_BYTES,
    packed: bool | frozenset[str] = False,
) -> GGUFMetadata:
    """The header and metadata of a GGUF file, from its bytes (an upload), a path or an open
    binary file (seekable).

    A path or file is read incrementally: only the header and metadata, never the tensors. Raises
    :class:`FormatError` (one line) for a wrong magic, an unknown version, a truncated file,
    a length or count that runs past the end, or metadata over ``max_metadata_bytes``.

    ``packed``: arrays as the file holds them, for a loader that reads them a whole column at
    a time (:mod:`core.formats.gguf_packed`): numbers as ``array.array`` (bools as lists),
    strings as :class:`GGUFStrings` where ``tokplay_native.spm`` is built and the array is
    read cleanly (from a file, a window grown to hold it), else lists. The same values, the
    same errors. A set of tokenizer kinds: the arrays after a ``tokenizer.ggml.model`` of one
    of them are read packed (:data:`~core.formats.gguf_bpe.PACKED_KINDS`: a loader that
    makes every str anyway would only pay for the extra pass).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        src = _Source(data, None, len(data), name or "model.gguf", max_metadata_bytes)
        return _read(src, packed)
    if hasattr(source, "read"):  # an open binary file (an upload's file object)
        fh: Any = source
        size = fh.seek(0, os.SEEK_END)
        fh.seek(0)
        return _read(_Source(None, fh, size, name or "model.gguf", max_metadata_bytes), packed)
    path = os.fspath(source)
    label = name or os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            return _read(_Source(None, fh, size, label, max_metadata_bytes), packed)
    except OSError as err:
        raise FormatError(f"{label}: cannot read the file ({err.strerror or err})") from None


# ---------------------------------------------------------------------------------------------
# Writing (metadata only): for tests and for vocab-only files made from other formats
# ---------------------------------------------------------------------------------------------


def _type_of(value: Any) -> int:
    if isinstance(value, bool):
        return 7
    if isinstance(value, int):
        return 5 if -(2**31) <= value < 2**31 else 11
    if isinstance(value, float):
        return 6
    if isinstance(value, str):
        return _STRING
    if isinstance(value, (list, tuple, bytes)):
        return _ARRAY
    raise TypeError(f"no GGUF type for {type(value).__name__}")


def _pack(vtype: int, value: Any) -> bytes:
    if vtype == _STRING:
        raw = value.encode("utf-8")
        return struct.pack("<Q", len(raw)) + raw
    if vtype == _ARRAY and isinstance(value, bytes):  # array[uint8], as a char map is
        return struct.pack("<IQ", 0, len(value)) + value
    if vtype == _ARRAY:
        etype = _type_of(value[0]) if value else _STRING
        if etype == 5 and any(not -(2**31) <= v < 2**31 for v in value):
            etype = 11
        body = b"".join(_pack(etype, v) for v in value)
        return struct.pack("<IQ", etype, len(value)) + body
    return struct.pack("<" + _SCALARS[vtype][0], value)


def write_gguf(
    fields: Mapping[str, Any], *, types: Mapping[str, int] | None = None, version: int = 3
) -> bytes:
    """A tensor-less GGUF file holding ``fields`` (Python values: bool -> bool, int ->
    int32, float -> float32, str -> string, bytes -> array of uint8, list -> array of its
    first element's type);
    ``types`` overrides a scalar key's GGUF type number (e.g. ``{"general.alignment": 4}``).

    >>> write_gguf({"a": 1})[:8]
    b'GGUF\\x03\\x00\\x00\\x00'
    """
    out = [GGUF_MAGIC, struct.pack("<IQQ", version, 0, len(fields))]
    for key, value in fields.items():
        vtype = (types or {}).get(key, _type_of(value))
        out.append(_pack(_STRING, key) + struct.pack("<I", vtype) + _pack(vtype, value))
    return b"".join(out)

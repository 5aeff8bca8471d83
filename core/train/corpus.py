"""Reading training corpora: chunking at safe boundaries and strict UTF-8 decoding with offsets.

A big corpus is never held as one string. :func:`find_chunk_boundaries` seeks to
approximate offsets and moves forward to a *safe* boundary, one where cutting the text
cannot change how it is split into special tokens and pre-tokens:

1. the start of a special token (preferred, as in the CS336 handout), or
2. when no special token is near (or the corpus has none): a space byte that follows a
   character that is not whitespace (``b"x y"`` -> cut before ``b" y"``; the same after
   ``я``, ``日`` or ``é``: :data:`core.engine.pretokenize.SAFE_CUT_BYTES`). No pre-token of
   the GPT-2, cl100k or o200k pattern contains a non-space character followed by a space,
   so every pre-token stays whole.

Either way a candidate is rejected when a special token occurrence straddles it.
Boundaries are always at ASCII bytes, so each chunk is whole UTF-8 characters and can be
decoded on its own; a decoding error names the byte offset in the whole file.

>>> data = b"first document<|endoftext|>second document"
>>> find_safe_boundary(data, 0, [b"<|endoftext|>"])
14
>>> find_safe_boundary("без специальных".encode(), 0, [])  # after a letter that is not ASCII
6
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterable, Iterator, Sequence

from core.engine.pretokenize import SAFE_CUT_BYTES
from core.errors import CorpusError

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "blank_corpus_problem",
    "decode_chunk",
    "file_texts",
    "find_chunk_boundaries",
    "find_safe_boundary",
    "iter_byte_chunks",
    "iter_text_chunks",
    "read_chunk",
]

#: Bytes per chunk: big enough to keep process-pool overhead low, small enough that a
#: worker's pre-token list (about 60 bytes per pre-token) stays near 60 MB.
DEFAULT_CHUNK_SIZE = 1 << 20

_WINDOW = 1 << 16  # bytes read per look-ahead while searching for a boundary
_LOOK_BEHIND = 3  # SAFE_CUT_BYTES looks at the (up to) 3 bytes of the character before a space
_ERRORS = ("strict", "replace")


def _covered(data: bytes, pos: int, specials: Sequence[bytes]) -> bool:
    """True when some occurrence of a special token starts before ``pos`` and ends after it.

    >>> _covered(b"a<|x|>b", 3, [b"<|x|>"])
    True
    >>> _covered(b"a<|x|>b", 1, [b"<|x|>"])
    False
    """
    for sp in specials:
        lo = max(0, pos - len(sp) + 1)
        i = data.find(sp, lo, pos + len(sp) - 1)
        while i != -1 and i < pos:
            if i + len(sp) > pos:
                return True
            i = data.find(sp, i + 1, pos + len(sp) - 1)
    return False


def find_safe_boundary(data: bytes, start: int, specials: Sequence[bytes]) -> int | None:
    """First safe cut position ``>= start`` in ``data`` (see the module docstring), or None.

    Positions too close to either end of ``data`` to rule out a straddling special token
    are not returned; the caller gives more context and tries again.

    >>> find_safe_boundary(b"abcd<|s|>efgh", 0, [b"<|s|>"])
    4
    >>> find_safe_boundary(b"hello  world", 0, [])  # cut before "  world"
    5
    >>> find_safe_boundary(b"a\\n  b", 0, []) is None  # a space after whitespace: unsafe
    True
    """
    longest = max((len(s) for s in specials), default=1)
    limit = len(data) - longest  # subtle: beyond here a special could still straddle the cut
    # ... and before here one could start out of sight, or the character before a space
    # (up to _LOOK_BEHIND bytes: SAFE_CUT_BYTES checks that it is no whitespace) be cut off
    start = max(start, longest - 1, _LOOK_BEHIND)
    # 1. the start of a special token (the earliest one found)
    best: int | None = None
    for sp in specials:
        i = data.find(sp, start)
        while i != -1 and i <= limit and _covered(data, i, specials):
            i = data.find(sp, i + 1)
        if i != -1 and i <= limit and (best is None or i < best):
            best = i
    if best is not None:
        return best
    # 2. a space after a character that is not whitespace
    for m in SAFE_CUT_BYTES.finditer(data, start):
        i = m.start()
        if i > limit:
            break
        if not _covered(data, i, specials):
            return i
    return None


def find_chunk_boundaries(
    path: str | os.PathLike[str],
    *,
    special_tokens: Sequence[str] = (),
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> list[int]:
    """Byte offsets ``[0, b1, ..., size]`` cutting the file into chunks of about ``chunk_size``.

    Seeks to ``k * chunk_size`` and reads forward until a safe boundary; a stretch without
    any safe boundary simply makes a longer chunk.
    """
    specials = [s.encode("utf-8") for s in special_tokens]
    size = os.path.getsize(path)
    bounds = [0]
    keep = max((len(s) for s in specials), default=1)
    with open(path, "rb") as fh:
        target = chunk_size
        while target < size:
            # subtle: context to see a special straddling `target`, and the character before it
            base = max(0, target - keep - _LOOK_BEHIND)
            fh.seek(base)
            buf = b""
            found: int | None = None
            while found is None:
                more = fh.read(_WINDOW)
                if not more:
                    break
                # a sliding window: keep only enough old bytes to see a special split across reads
                drop = max(0, len(buf) - 2 * keep - _LOOK_BEHIND)
                base += drop
                buf = buf[drop:] + more
                found = find_safe_boundary(buf, max(0, target - base), specials)
            if found is None:
                break
            cut = base + found
            if cut > bounds[-1]:
                bounds.append(cut)
            target = max(cut + 1, bounds[-1] + chunk_size)
    bounds.append(size)
    return bounds


def decode_chunk(data: bytes, *, offset: int = 0, errors: str = "strict", source: str = "the corpus") -> str:
    """Decode UTF-8; on bad bytes raise :class:`CorpusError` naming the byte offset.

    ``offset`` is where ``data`` starts in the whole file, so the message points at the
    right place. ``errors="replace"`` turns bad bytes into U+FFFD instead.

    >>> decode_chunk(b"caf\\xc3\\xa9")
    'café'
    >>> decode_chunk(b"ab\\xff", errors="replace")
    'ab\\ufffd'
    """
    if errors not in _ERRORS:
        raise CorpusError(f"errors must be 'strict' or 'replace', not {errors!r}")
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as err:
        bad = data[err.start : err.start + 4].hex(" ")
        raise CorpusError(
            f"{source} is not valid UTF-8: bad byte(s) {bad} at byte offset {offset + err.start} "
            f"({err.reason}). Re-save it as UTF-8, or train with errors='replace' "
            "(CLI: --errors replace) to replace bad bytes with U+FFFD."
        ) from None


def read_chunk(path: str | os.PathLike[str], start: int, end: int, *, errors: str = "strict") -> str:
    """Read and decode the bytes ``[start, end)`` of a file (one chunk)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    return decode_chunk(data, offset=start, errors=errors, source=os.fspath(path))


def iter_byte_chunks(
    stream: object, *, special_tokens: Sequence[str] = (), chunk_size: int = DEFAULT_CHUNK_SIZE
) -> Iterator[tuple[int, bytes]]:
    """A binary stream (e.g. ``gzip.open(path)``) as ``(offset, chunk)`` pairs, each chunk cut
    at a safe boundary, so it can be decoded and pre-tokenized on its own.

    For streams that cannot seek. Holds at most about two chunks at a time (a stretch
    without any safe place makes a longer chunk, as in :func:`find_chunk_boundaries`).

    >>> import io
    >>> list(iter_byte_chunks(io.BytesIO(b"one two three"), chunk_size=4))
    [(0, b'one'), (3, b' two'), (7, b' three')]
    """
    read = stream.read  # type: ignore[attr-defined]
    specials = [s.encode("utf-8") for s in special_tokens]
    buf = b""
    offset = 0  # stream offset of buf[0]
    while True:
        more = read(chunk_size)
        if not more:
            break
        buf += more
        if len(buf) < chunk_size:
            continue
        cut = find_safe_boundary(buf, chunk_size // 2, specials)
        if cut is None:
            continue
        yield offset, buf[:cut]
        offset += cut
        buf = buf[cut:]
    if buf:
        yield offset, buf


def iter_text_chunks(
    stream: object,
    *,
    special_tokens: Sequence[str] = (),
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    errors: str = "strict",
    source: str = "the corpus",
) -> Iterator[str]:
    """:func:`iter_byte_chunks`, decoded: a bad byte names its offset in the stream."""
    for offset, data in iter_byte_chunks(stream, special_tokens=special_tokens, chunk_size=chunk_size):
        yield decode_chunk(data, offset=offset, errors=errors, source=source)


# ---------------------------------------------------------------------------------------------
# A corpus with nothing to learn from


def blank_corpus_problem(texts: Iterable[str], *, name: str = "The uploaded text") -> str | None:
    """The message for a corpus that is empty or only whitespace, else None: the one rule
    for the Train page and the command line (training it would give 256 bytes and no merge,
    or merges of blanks).

    Stops at the first text that is not blank, so ``texts`` may stream a big file
    (:func:`file_texts`).

    >>> blank_corpus_problem(["", " \\n\\t"])
    'The uploaded text is empty (only whitespace): add some text to learn from.'
    >>> blank_corpus_problem(["  ", "a"]) is None
    True
    """
    if any(text.strip() for text in texts):
        return None
    return f"{name} is empty (only whitespace): add some text to learn from."


def file_texts(path: str | os.PathLike[str], *, chunk_size: int = DEFAULT_CHUNK_SIZE
               ) -> Iterator[str]:
    """A file's text one chunk at a time, bad UTF-8 as U+FFFD (for looking, not training:
    training reports bad bytes with their offset).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(delete=False) as fh:
    ...     _ = fh.write("a é".encode())
    >>> list(file_texts(fh.name, chunk_size=3)), os.remove(fh.name)
    (['a ', 'é'], None)
    """
    # subtle: incremental, so a character cut in two by the chunk size decodes whole
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    with open(path, "rb") as fh:
        while data := fh.read(chunk_size):
            yield decoder.decode(data)
    if tail := decoder.decode(b"", final=True):  # an unfinished character at the end: U+FFFD
        yield tail

"""What the command line reads: the tokenizer ``-t`` names, and texts (files or stdin).

``-t`` takes, in this order of trial:

1. a preset name: ``gpt2``, ``cl100k_base``, ``o200k_base``;
2. a path: one tokenizer file (``tokenizer.json``, ``tokenizer.model``, a ``.tiktoken`` rank
   file, ...), several joined by commas (``vocab.pkl,merges.pkl``), or a folder (every file
   directly in it: a downloaded model's folder, or every file the Train page downloads);
   read through :mod:`core.formats`' safe loaders. One tokenizer in several formats opens
   the one that says most (``tokenizer.json`` first: :data:`core.formats.detect.PRECEDENCE`),
   and the source line names the files not read;
3. a Hugging Face Hub ID ``org/name`` (``org/name@revision`` for a branch, tag or commit),
   through :func:`core.services.hub.from_pretrained`.

The sources themselves (what each kind is, how it loads) live in :mod:`core.services.sources`.

>>> looks_like_hub_id("Qwen/Qwen3-8B"), looks_like_hub_id("models/vocab.pkl")
(True, False)
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import IO

from core.errors import PlaygroundError
from core.interface import TokenizerInterface
from core.services import sources
from core.services.sources import looks_like_hub_id

__all__ = ["load_tokenizer", "looks_like_hub_id", "read_text"]


def load_tokenizer(spec: str) -> tuple[TokenizerInterface, str]:
    """The tokenizer ``-t spec`` names (:func:`core.services.sources.from_spec`), and where it
    came from in a few words."""
    source = sources.from_spec(spec)
    return source.load(sources.CORE), source.origin()


def read_text(stream: IO[bytes], *, source: str, errors: str = "strict",
              chunk_size: int = 1 << 20) -> Iterator[str]:
    """A binary stream's UTF-8 text, chunk by chunk. Bad bytes raise one line naming their
    byte offset (``errors="strict"``) or become U+FFFD (``"replace"``).

    >>> import io
    >>> list(read_text(io.BytesIO("aé".encode()), source="x", chunk_size=2))
    ['a', 'é']
    >>> list(read_text(io.BytesIO(b"ab\\xff"), source="in.txt"))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.errors.PlaygroundError: in.txt is not UTF-8 text: byte ff at byte offset 2 (invalid start
    byte). Re-save it as UTF-8, or pass --errors replace to read bad bytes as U+FFFD.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    offset = 0  # bytes read before this chunk
    while True:
        data = stream.read(chunk_size)
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as err:
            held = len(err.object) - len(data)  # bytes the decoder kept from the last chunk
            bad = err.object[err.start:err.end].hex(" ")
            raise PlaygroundError(
                f"{source} is not UTF-8 text: byte {bad} at byte offset "
                f"{offset - held + err.start} ({err.reason}). Re-save it as UTF-8, or pass "
                "--errors replace to read bad bytes as U+FFFD.") from None
        if text:
            yield text
        if not data:
            return
        offset += len(data)

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

>>> looks_like_hub_id("Qwen/Qwen3-8B"), looks_like_hub_id("models/vocab.pkl")
(True, False)
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterator, Mapping
from typing import IO, TYPE_CHECKING

from core.errors import PlaygroundError

if TYPE_CHECKING:
    from core.formats.detect import FileSet
    from core.interface import TokenizerInterface

__all__ = ["load_tokenizer", "looks_like_hub_id", "read_text"]

#: Largest tokenizer file read (a Llama 4 tokenizer.json is ~30 MB; GGUF files hold weights).
MAX_FILE_BYTES = 512 * 1000 * 1000
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?")
_FILE_SUFFIXES = (".pkl", ".json", ".model", ".tiktoken", ".bpe", ".txt", ".gguf", ".gz")


def looks_like_hub_id(spec: str) -> bool:
    """True for ``org/name`` (and ``org/name@rev``) that is not spelled like a file path."""
    name = spec.split("@", 1)[0]
    return bool(_HUB_ID.fullmatch(spec)) and not name.lower().endswith(_FILE_SUFFIXES)


def _read_files(paths: list[str]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in paths:
        if os.path.isdir(path):
            inside = sorted(os.path.join(path, n) for n in os.listdir(path))
            files.update(_read_files([p for p in inside if os.path.isfile(p)]))
            continue
        if not os.path.isfile(path):
            raise PlaygroundError(f"tokenizer file {path!r} not found")
        if os.path.getsize(path) > MAX_FILE_BYTES:
            raise PlaygroundError(f"tokenizer file {path!r} is larger than "
                                  f"{MAX_FILE_BYTES // 1_000_000:,} MB: is it a model's weights?")
        with open(path, "rb") as fh:
            files[os.path.basename(path)] = fh.read()
    return files


def _files_source(files: Mapping[str, bytes], found: FileSet) -> str:
    """Which files were read, for ``inspect``'s source line.

    >>> from core.formats import FileSet
    >>> found = FileSet("hf", {"tokenizer": "tokenizer.json"},
    ...                 other_formats=["vocab.pkl", "merges.pkl"])
    >>> _files_source(dict.fromkeys(["tokenizer.json", "vocab.pkl", "merges.pkl"], b""), found)
    'files tokenizer.json (the same tokenizer in other formats, not read: vocab.pkl, merges.pkl)'
    """
    read = ", ".join(sorted(n for n in files if n not in found.other_formats))
    if not found.other_formats:
        return f"files {read}"
    return (f"files {read} (the same tokenizer in other formats, not read: "
            f"{', '.join(found.other_formats)})")


def load_tokenizer(spec: str) -> tuple[TokenizerInterface, str]:
    """The tokenizer ``-t spec`` names, and where it came from in a few words."""
    from core.formats.presets import PRESETS, load_preset

    spec = spec.strip()
    if not spec:
        raise PlaygroundError("-t is empty: give a preset (gpt2, cl100k_base, o200k_base), a "
                              "tokenizer file or a Hub ID org/name")
    if spec in PRESETS:
        return load_preset(spec), f"preset {spec} (OpenAI's files, shipped with the package)"
    paths = [p for p in spec.split(",") if p]
    if "," in spec or any(os.path.exists(p) for p in paths) or not looks_like_hub_id(spec):
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise PlaygroundError(
                f"unknown tokenizer {spec!r}: {missing[0]!r} is not a file, and -t takes a "
                f"preset ({', '.join(PRESETS)}), tokenizer file(s) (vocab.pkl,merges.pkl; "
                "tokenizer.json; ...) or a Hub ID org/name")
        from core.formats import identify_files, load_tokenizer_files

        files = _read_files(paths)
        if not files:
            raise PlaygroundError(f"no files in {spec!r}: give the tokenizer's files")
        found = identify_files(files)
        return load_tokenizer_files(files, found=found), _files_source(files, found)
    repo, _, revision = spec.partition("@")
    from core.services.hub import from_pretrained

    tok = from_pretrained(repo, revision=revision or None)
    return tok, f"Hugging Face Hub {repo}" + (f" at {revision}" if revision else "")


def read_text(stream: IO[bytes], *, source: str, errors: str = "strict",
              chunk_size: int = 1 << 20) -> Iterator[str]:
    """A binary stream's UTF-8 text, chunk by chunk. Bad bytes raise one line naming their
    byte offset (``errors="strict"``) or become U+FFFD (``"replace"``).

    >>> import io
    >>> list(read_text(io.BytesIO("aé".encode()), source="x", chunk_size=2))
    ['a', 'é']
    >>> list(read_text(io.BytesIO(b"ab\\xff"), source="in.txt"))
    Traceback (most recent call last):
    ...
    core.errors.PlaygroundError: in.txt is not UTF-8 text: byte ff at byte offset 2 (invalid start byte). Re-save it as UTF-8, or pass --errors replace to read bad bytes as U+FFFD.
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

"""Where a corpus lives: the paths, folders, globs and ``hf://datasets/...`` addresses a training
is given, as the local files to read, in the order given.

- a file: itself, whatever its name (read by its suffix: :func:`core.train.corpus_readers.file_kind`);
- a folder: its corpus files (``.txt``, ``.gz``, ``.zst``, ``.parquet``) at any depth, sorted,
  hidden ones left out;
- a glob (``texts/*.txt``; ``**`` for any depth): its matches, sorted; a folder among them
  gives its corpus files;
- ``hf://datasets/ORG/NAME/PATH``: fetched once into the Hugging Face cache
  (:mod:`core.train.hub_datasets`).

A file named twice is read once. Every refusal is one line: a missing file, a glob that
matches nothing, a folder without corpus files, a file that cannot be read.

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> for name in ("b.txt", "a.txt.gz", "notes.md"):
...     open(os.path.join(folder, name), "wb").close()
>>> [os.path.basename(p) for p in find_corpus_files([folder]).paths]
['a.txt.gz', 'b.txt']
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.errors import CorpusError
from core.train.corpus_readers import CORPUS_SUFFIXES, CorpusFiles, is_corpus_name
from core.train.hub_datasets import fetch_dataset_files, is_hub_url

if TYPE_CHECKING:
    from core.train.count import ProgressCallback

__all__ = ["find_corpus_files"]

_GLOB_CHARS = frozenset("*?[")
_SUFFIXES = ", ".join(CORPUS_SUFFIXES)


def find_corpus_files(
    sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *, text_column: str = "text",
    on_progress: ProgressCallback | None = None,
) -> CorpusFiles:
    """The local files ``sources`` name (see the module docstring), checked to be readable.

    ``on_progress("downloading", done, total)``: bytes fetched from the Hub, if any.
    """
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    paths: dict[str, str] = {}  # real path -> the path as found (first spelling kept)
    for source in (os.fspath(s) for s in sources):
        found = (fetch_dataset_files(source, on_progress=on_progress) if is_hub_url(source)
                 else _local_files(source))
        for path in found:
            paths.setdefault(os.path.realpath(path), path)
    for path in paths.values():
        _check_readable(path)
    return CorpusFiles(tuple(paths.values()), text_column)


def _local_files(source: str) -> list[str]:
    if os.path.isfile(source):
        return [source]
    if os.path.isdir(source):
        return _folder_files(source)
    if not _GLOB_CHARS.intersection(source):
        raise CorpusError(f"corpus file {source!r} not found")
    matches = sorted(glob.glob(source, recursive=True))
    if not matches:
        raise CorpusError(f"no file matches {source!r}: check the pattern ('**' for any depth)")
    files = []
    for match in matches:
        files.extend(_folder_files(match, allow_empty=True) if os.path.isdir(match) else [match])
    if not files:
        raise CorpusError(f"{source!r} matches only folders without corpus files ({_SUFFIXES})")
    return files


def _folder_files(folder: str, *, allow_empty: bool = False) -> list[str]:
    """A folder's corpus files at any depth, sorted folder by folder."""
    found = []

    def refuse(err: OSError) -> None:
        raise CorpusError(f"cannot read folder {err.filename or folder!r}: "
                          f"{(err.strerror or str(err)).lower()}")

    for root, dirs, files in os.walk(folder, onerror=refuse):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(root, name)
            if is_corpus_name(os.path.relpath(path, folder)):
                found.append(path)
    if not found and not allow_empty:
        raise CorpusError(f"folder {folder!r} has no corpus files ({_SUFFIXES}; hidden ones "
                          "aside): give the files themselves, or a folder that holds some")
    return found


def _check_readable(path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        reason = (err.strerror or str(err)).lower()
        raise CorpusError(f"cannot read corpus file {path!r} ({reason}): check its permissions") from None

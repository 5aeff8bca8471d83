"""Corpora on the server's own disk, in folders its operator lists (``TOKPLAY_CORPUS_DIRS``).

Whoever starts the server decides: ``TOKPLAY_CORPUS_DIRS=/data/corpora:/srv/owt`` (folders
separated by ``:``) lists their corpus files (``.txt``, ``.gz``, ``.zst``, ``.parquet`` at any
depth, hidden ones left out: ``core.train.corpus_readers.is_corpus_name``) on the Train page;
unset, the default, it lists none. A corpus is named by its path inside its folder
(``owt/train.txt``; the first folder wins a name two share), in the picker and in links
(``Train?corpus=owt/train.txt``). A name is only ever looked up in the server's own list: a
link naming a path, or a name not listed, is "not available on this server", and nothing
outside the folders is listed or read (a symlink that leads out of its folder is left out).

The file is trained where it lies: the training worker reads it, never a copy
(``training.inputs.CorpusSource``). This module keeps no per-user state.

>>> looks_like_path("/etc/passwd"), looks_like_path("../x"), looks_like_path("owt/train.txt")
(True, True, False)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import streamlit as st

from core.errors import CorpusError
from core.train.corpus_readers import CorpusFiles, file_items, file_kind, is_corpus_name
from training.inputs import CorpusSource
from ui import runtime

__all__ = ["ENV_DIRS", "ServerCorpus", "corpora", "corpus_source", "from_link", "listing_on",
           "looks_like_path", "problem"]

#: The server-side setting: folders of corpus files, separated by ``:``.
ENV_DIRS = "TOKPLAY_CORPUS_DIRS"
_MAX_LISTED = 2000  # a folder of millions of shards lists its first ones (sorted)
_MAX_NAME_CHARS = 500
_SNIFF_BYTES = 64 << 10  # what a look at a text file reads (binary data shows at once)
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


@dataclass(frozen=True)
class ServerCorpus:
    """A listed corpus file: its name (path inside its folder), real path and size."""

    name: str
    path: str
    size: int


def listing_on() -> bool:
    """Whether whoever started the server listed corpus folders (never in the static build:
    a browser tab has no disk to list)."""
    return bool(os.environ.get(ENV_DIRS, "").strip()) and not runtime.in_browser()


def looks_like_path(name: str) -> bool:
    """An absolute or home path, a drive, or a ``..`` step: a link trying to name a file."""
    return (name.startswith(("/", "~", "\\")) or _DRIVE.match(name) is not None
            or ".." in name.replace("\\", "/").split("/"))


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def _folder_corpora(folder: str) -> Iterator[ServerCorpus]:
    """The corpus files of one listed folder, sorted; symlinked folders are not entered and a
    symlinked file counts only if it stays inside the folder."""
    root = os.path.realpath(os.path.expanduser(folder))
    for here, dirs, files in os.walk(root):  # (followlinks=False)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file in sorted(files):
            name = os.path.relpath(os.path.join(here, file), root).replace(os.sep, "/")
            real = os.path.realpath(os.path.join(here, file))
            if is_corpus_name(name) and _inside(real, root) and os.path.isfile(real):
                yield ServerCorpus(name, real, os.path.getsize(real))


@st.cache_data(ttl=60, max_entries=4, show_spinner=False)
def _scan(dirs: str) -> dict[str, ServerCorpus]:
    """Name -> corpus for the folders ``dirs`` (looked at again at most once a minute)."""
    found: dict[str, ServerCorpus] = {}
    for folder in filter(None, (d.strip() for d in dirs.split(os.pathsep))):
        for corpus in _folder_corpora(folder):
            if len(found) >= _MAX_LISTED:
                return found
            found.setdefault(corpus.name, corpus)
    return found


def corpora() -> dict[str, ServerCorpus]:
    """This server's corpora by name: none unless ``TOKPLAY_CORPUS_DIRS`` is set."""
    return _scan(os.environ.get(ENV_DIRS, "")) if listing_on() else {}


def from_link(value: str) -> tuple[str | None, str | None]:
    """A link's ``corpus=<name>``: ``(name, None)`` when this server lists it, else ``(None,
    why)``. Only looked up in the list: a path is never opened.

    >>> from_link("/etc/passwd")[1]
    'is not available on this server: links name a corpus as the list shows it, never by a path'
    """
    if len(value) <= _MAX_NAME_CHARS and value in corpora():
        return value, None
    if looks_like_path(value):
        return None, ("is not available on this server: links name a corpus as the list shows "
                      "it, never by a path")
    if not listing_on():
        return None, f"is not available on this server: it lists no corpora ({ENV_DIRS})"
    return None, "is not available on this server: no corpus of that name in its list"


def _listed(name: str) -> ServerCorpus:
    """The listed corpus ``name``, checked to be still there and still inside its folder."""
    corpus = corpora().get(name)
    if corpus is None:
        raise CorpusError(f"No corpus named {name[:_MAX_NAME_CHARS]!r} on this server: pick one "
                          "from the list.")
    if not os.path.isfile(corpus.path) or os.path.realpath(corpus.path) != corpus.path:
        _scan.clear()  # gone since it was listed: the picker stops offering it
        raise CorpusError(f"The corpus {name!r} is no longer on this server: pick another.")
    return corpus


@st.cache_data(max_entries=64, show_spinner=False)
def _sniff(path: str, size: int, mtime_ns: int, name: str, text_column: str) -> str | None:
    """What makes a corpus file unusable at a first look, or None: binary data at its start
    (a plain file), a missing text column (Parquet). Keyed by the file's version."""
    kind = file_kind(path)
    try:
        if kind == "parquet":
            file_items(CorpusFiles([path], text_column))  # its metadata only
        elif kind == "text":
            with open(path, "rb") as fh:
                head = fh.read(_SNIFF_BYTES)
            if (nul := head.find(b"\0")) >= 0:
                return (f"{name} looks like a binary file, not text: a NUL byte at byte offset "
                        f"{nul:,}. Pick a plain UTF-8 text file.")
            try:
                head.decode("utf-8")
            except UnicodeDecodeError as err:
                if err.start < len(head) - 3:  # (not a character cut by the look's end)
                    return (f"{name} is not UTF-8 text: bad byte(s) "
                            f"{head[err.start:err.start + 4].hex(' ')} at byte offset "
                            f"{err.start:,}. Pick a UTF-8 text file.")
    except (CorpusError, OSError) as err:
        return str(err).replace(path, name)
    return None


def problem(name: str, text_column: str = "text") -> str | None:
    """Why the listed corpus ``name`` cannot train, at a first look (one line), or None."""
    try:
        corpus = _listed(name)
        stat = os.stat(corpus.path)
    except CorpusError as err:
        return str(err)
    except OSError as err:
        return f"Cannot read the corpus {name!r} ({(err.strerror or str(err)).lower()})."
    return _sniff(corpus.path, stat.st_size, stat.st_mtime_ns, name, text_column)


def corpus_source(name: str, text_column: str = "text") -> CorpusSource:
    """What a training reads for the listed corpus ``name``: its file, where it lies."""
    corpus = _listed(name)
    return CorpusSource((corpus.path,), text_column, size=corpus.size,
                        names={corpus.path: name})

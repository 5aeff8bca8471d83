"""Workspaces: a session's work kept on the server under an ID a URL can carry.

A reload, or a teammate opening a link, starts a new browser session. What the old one had
(trained and uploaded tokenizers, the active one, the last training, the uploaded corpus) is
written here as *immutable, content-addressed* files, and the URL carries the ID of the
session's newest snapshot (``?ws=<16 hex>``). Opening that URL copies the snapshot into the
new session; a change writes a new snapshot with a new ID, so a shared link always opens
exactly what it showed when it was copied and nobody's change alters anyone else's link.

What is stored
--------------
Everything is a *blob*: bytes named by the first 16 hex digits of their SHA-256, gzipped on
disk as ``<root>/<id>.gz``. A snapshot is a small JSON blob (a *manifest*) naming other
blobs: a trained tokenizer's canonical JSON (never a pickle), an uploaded tokenizer's files
as uploaded (loaded back through ``core.formats``' safe loaders), training rows, corpus
texts. Blobs shared by several snapshots are stored once. Each manifest carries a random
``salt``, so its ID cannot be guessed from the files it names.

Bounds
------
``max_age_days`` (default 30): a blob not written or read for that long is deleted.
``max_bytes`` (default 1 GB): past it, the least recently used blobs go first. Blobs used
in the last ``grace_seconds`` (10 minutes) are never deleted, so a snapshot being written
or opened stays whole; the folder can exceed ``max_bytes`` by what was used in that window.
A link whose snapshot (or one of its blobs) is gone opens a fresh session with a note.

Safety across processes
-----------------------
Files are written to a temporary name and renamed (atomic on POSIX); two processes writing
the same ID write the same bytes. Reads check the hash, so a damaged file is reported, not
trusted. No lock and no database are needed.

>>> import tempfile
>>> store = WorkspaceStore(tempfile.mkdtemp())
>>> blob_id = store.put(b"hello")
>>> store.get(blob_id), len(blob_id)
(b'hello', 16)
>>> store.get_json(store.put_json({"a": [1, 2]}))
{'a': [1, 2]}
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from core.errors import InvalidIdError, LibraryStorageError, UnknownIdError

__all__ = [
    "DEFAULT_MAX_AGE_DAYS",
    "DEFAULT_MAX_BYTES",
    "WorkspaceStore",
    "blob_id_of",
    "is_blob_id",
]

DEFAULT_MAX_BYTES = 1_000_000_000
DEFAULT_MAX_AGE_DAYS = 30.0
_GRACE_SECONDS = 600.0
_PRUNE_EVERY_SECONDS = 60.0
_ID_RE = re.compile(r"[0-9a-f]{16}")
_TMP_PREFIX = ".tmp-"


def blob_id_of(data: bytes) -> str:
    """The ID of ``data``: the first 16 hex digits of its SHA-256.

    >>> blob_id_of(b"hello")
    '2cf24dba5fb0a30e'
    """
    return hashlib.sha256(data).hexdigest()[:16]


def is_blob_id(text: object) -> bool:
    """True for a well-formed ID (16 characters 0-9, a-f), the only thing used as a path.

    >>> is_blob_id("2cf24dba5fb0a30e"), is_blob_id("../etc/passwd"), is_blob_id(None)
    (True, False, False)
    """
    return isinstance(text, str) and _ID_RE.fullmatch(text) is not None


class WorkspaceStore:
    """Content-addressed, gzipped blobs in one folder, bounded in age and total size."""

    def __init__(self, root: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_age_days: float = DEFAULT_MAX_AGE_DAYS,
                 grace_seconds: float = _GRACE_SECONDS) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.max_age_seconds = max_age_days * 86400.0
        self.grace_seconds = grace_seconds
        self._last_prune = 0.0

    def __repr__(self) -> str:
        return f"WorkspaceStore({str(self.root)!r}, max_bytes={self.max_bytes:,})"

    # ---- blobs ---------------------------------------------------------------------------

    def put(self, data: bytes) -> str:
        """Store ``data`` (once: the same bytes give the same ID) and return its ID."""
        blob_id = blob_id_of(data)
        path = self._path(blob_id)
        if path.exists():
            self._touch(path)
        else:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                tmp = self.root / f"{_TMP_PREFIX}{blob_id}-{os.getpid()}-{time.monotonic_ns()}"
                # level 1: a 40 MB corpus compresses in about a second, to about a third
                tmp.write_bytes(gzip.compress(data, compresslevel=1, mtime=0))
                os.replace(tmp, path)
            except OSError as err:
                raise LibraryStorageError(
                    f"cannot write the workspace folder {self.root} ({err.strerror or err}). "
                    "Free some disk space or set TOKPLAY_LIBRARY_DIR to a writable folder."
                ) from None
        self.maybe_prune()
        return blob_id

    def get(self, blob_id: str) -> bytes:
        """The bytes stored under ``blob_id``.

        Raises ``InvalidIdError`` for a malformed ID, ``UnknownIdError`` when it is not (or no
        longer) stored, ``LibraryStorageError`` when the file is damaged.
        """
        if not is_blob_id(blob_id):
            raise InvalidIdError(
                f"{str(blob_id)[:40]!r} is not a workspace ID (16 characters 0-9, a-f): check "
                "that the link was copied completely.")
        path = self._path(blob_id)
        try:
            packed = path.read_bytes()
        except FileNotFoundError:
            raise UnknownIdError(
                f"workspace data {blob_id} is not on this server: it expired (kept "
                f"{self.max_age_seconds / 86400:g} days after last use) or was never here."
            ) from None
        except OSError as err:
            raise LibraryStorageError(f"cannot read {path} ({err.strerror or err}).") from None
        try:
            data = gzip.decompress(packed)
        except (OSError, EOFError, ValueError):
            data = b""
        if blob_id_of(data) != blob_id:
            raise LibraryStorageError(f"workspace data {blob_id} is damaged on disk; it is ignored.")
        self._touch(path)
        return data

    def put_json(self, doc: Any) -> str:
        """Store a JSON document (canonical: sorted keys, compact) and return its ID."""
        return self.put(json.dumps(doc, sort_keys=True, separators=(",", ":"),
                                   ensure_ascii=False).encode("utf-8"))

    def get_json(self, blob_id: str) -> Any:
        """The JSON document stored under ``blob_id`` (errors as :meth:`get`)."""
        data = self.get(blob_id)  # its own errors (unknown, expired, malformed) pass through
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise LibraryStorageError(f"workspace data {blob_id} is not JSON.") from None

    # ---- bounds --------------------------------------------------------------------------

    def usage(self) -> tuple[int, int]:
        """(number of blobs, bytes on disk)."""
        files = self._files()
        return len(files), sum(size for _, size, _ in files)

    def maybe_prune(self) -> None:
        """:meth:`prune`, at most once a minute per store object (a folder scan is not free)."""
        now = time.time()
        if now - self._last_prune >= _PRUNE_EVERY_SECONDS:
            self._last_prune = now
            self.prune(now=now)

    def prune(self, *, now: float | None = None) -> int:
        """Delete expired blobs, then the least recently used ones while over ``max_bytes``.

        Returns how many files were deleted. Blobs used within ``grace_seconds`` stay.
        """
        now = time.time() if now is None else now
        files = sorted(self._files(), key=lambda f: f[2])  # oldest use first
        total = sum(size for _, size, _ in files)
        removed = 0
        for path, size, used in files:
            idle = now - used
            if idle < self.grace_seconds:
                break  # sorted by use: every later file is more recent still
            if idle <= self.max_age_seconds and total <= self.max_bytes:
                break
            try:
                path.unlink()
            except OSError:
                continue
            total -= size
            removed += 1
        return removed

    # ---- internals -----------------------------------------------------------------------

    def _path(self, blob_id: str) -> Path:
        return self.root / f"{blob_id}.gz"  # blob_id matched _ID_RE or came from our hash

    @staticmethod
    def _touch(path: Path) -> None:
        try:
            os.utime(path)  # "last used" is the file's mtime
        except OSError:
            pass  # read-only folder: the data is still good, it only ages sooner

    def _files(self) -> list[tuple[Path, int, float]]:
        out: list[tuple[Path, int, float]] = []
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return out
        for entry in entries:
            name = entry.name
            try:
                stat = entry.stat()
            except OSError:
                continue
            if name.startswith(_TMP_PREFIX):
                # a write that crashed midway; give a live writer time to finish its rename
                if time.time() - stat.st_mtime > self.grace_seconds:
                    try:
                        os.unlink(entry.path)
                    except OSError:
                        pass
                continue
            if name.endswith(".gz") and is_blob_id(name[:-3]):
                out.append((Path(entry.path), stat.st_size, stat.st_mtime))
        return out

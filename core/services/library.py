"""The saved-tokenizer library: tokenizers and long texts kept on the server, named by short IDs.

A teammate who opens a link naming a saved tokenizer gets exactly the same tokenizer, so
entries are *content-addressed*: the ID is the first 16 hex digits of the SHA-256 of the
tokenizer's canonical bytes (vocab, merges, special tokens, pattern: ``core.services.library_json``).
Saving the same tokenizer twice gives the same ID and stores it once. This module is the
store: SQLite for the metadata and the texts, one blob file per tokenizer.

Where it lives
--------------
The folder is chosen in this order:

1. the ``root`` argument of :class:`TokenizerLibrary`;
2. the environment variable ``TOKPLAY_LIBRARY_DIR``;
3. a per-user data folder outside the repository: ``$XDG_DATA_HOME/tokenizer-playground``
   (default ``~/.local/share/tokenizer-playground``) on Linux,
   ``~/Library/Application Support/tokenizer-playground`` on macOS,
   ``%LOCALAPPDATA%\\tokenizer-playground`` on Windows.

Inside it::

    library.sqlite3          metadata (name, corpus, sizes, specials, pattern, date) + saved texts
    blobs/<id>.json          one file per tokenizer: canonical JSON, its SHA-256 prefix is the ID

How it stays consistent
-----------------------
SQLite runs in WAL mode with a busy timeout, and every change happens inside one
``BEGIN IMMEDIATE`` transaction (SQLite's single-writer lock, shared by all processes):

* save: write ``blobs/.tmp-*``, fsync, ``os.replace`` to ``blobs/<id>.json``, insert the row,
  commit. A crash before the commit leaves at most a stray file, never a row without a file.
* delete: remove the row and commit, then (under the lock again) remove the file.
* on open: stray temp files and files without a row are removed (under the lock, so no save
  in progress can be disturbed); rows whose file is missing are reported in
  :attr:`TokenizerLibrary.problems` and left out of :meth:`TokenizerLibrary.list`.

Blob files are still treated as untrusted input: they are plain JSON (never pickles), their
shape is validated on load, and their hash must match their ID.

Backup
------
Copy the whole folder while no save is running (e.g. with the server stopped), or take a
live, consistent copy of the database with ``sqlite3 library.sqlite3 ".backup copy.sqlite3"``
and copy ``blobs/`` afterwards (files are written before their rows, so a backup taken this
way never names a missing file). Restoring is copying the folder back.

>>> import tempfile
>>> lib = TokenizerLibrary(tempfile.mkdtemp())
>>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
>>> entry = lib.save(vocab, [(b"a", b"b")], name="toy", special_tokens=[], pattern="gpt2")
>>> len(entry.id), entry.vocab_size
(16, 257)
>>> lib.load(entry.id)[1]
[(b'a', b'b')]
>>> lib.load_text(lib.save_text("a long text")) == "a long text"
True
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

try:
    import sqlite3
except ImportError:  # Pyodide ships sqlite3 as a separate package
    sqlite3 = None  # type: ignore[assignment]  # TokenizerLibrary() says so

from core.errors import (
    InvalidIdError,
    LibraryError,
    LibraryStorageError,
    UnknownIdError,
)
from core.paths import LIBRARY_ENV_VAR, default_library_dir
from core.services.library_json import (
    ID_LENGTH,
    canonical_pattern,
    content_id,
    tokenizer_from_json,
    tokenizer_json,
    validate_id,
)

__all__ = [
    "DEFAULT_MAX_TEXT_BYTES",
    "ID_LENGTH",
    "LIBRARY_ENV_VAR",
    "Entry",
    "InvalidIdError",
    "LibraryError",
    "LibraryStorageError",
    "TokenizerLibrary",
    "UnknownIdError",
    "default_library_dir",
    "tokenizer_from_json",
    "tokenizer_json",
    "validate_id",
]

#: Environment variable naming the library folder.
#: Default size limit for :meth:`TokenizerLibrary.save_text` (UTF-8 bytes).
DEFAULT_MAX_TEXT_BYTES = 1_000_000

_DB_NAME = "library.sqlite3"
_BLOB_DIR = "blobs"
_TMP_PREFIX = ".tmp-"
_BUSY_TIMEOUT_S = 30.0
_MAX_NAME_CHARS = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokenizers (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    corpus_name    TEXT NOT NULL,
    corpus_size    INTEGER NOT NULL,
    vocab_size     INTEGER NOT NULL,
    n_merges       INTEGER NOT NULL,
    special_tokens TEXT NOT NULL,   -- JSON list of str
    pattern        TEXT NOT NULL,   -- a name from core.engine.pretokenize.PATTERNS or a regex
    created        TEXT NOT NULL    -- UTC ISO 8601
);
CREATE TABLE IF NOT EXISTS texts (
    id      TEXT PRIMARY KEY,
    text    TEXT NOT NULL,
    n_bytes INTEGER NOT NULL,
    created TEXT NOT NULL
);
"""
_COLUMNS = "id, name, corpus_name, corpus_size, vocab_size, n_merges, special_tokens, pattern, created"


# --------------------------------------------------------------------------------------
# Entries and where the library lives
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """Metadata of one saved tokenizer (the vocab and merges come from :meth:`load`)."""

    id: str
    name: str
    corpus_name: str
    corpus_size: int
    vocab_size: int
    n_merges: int
    special_tokens: tuple[str, ...]
    pattern: str
    created: str  # UTC ISO 8601, e.g. "2026-11-22T03:30:00+00:00"


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------------------
# The library
# --------------------------------------------------------------------------------------


class TokenizerLibrary:
    """Saved tokenizers (SQLite metadata + atomically written blob files) and saved texts.

    Safe to share between threads and processes: every call opens its own short-lived
    SQLite connection, and all writes go through SQLite's single-writer lock.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    ) -> None:
        if sqlite3 is None:
            raise LibraryError(
                "the library needs sqlite3, which this Python lacks (Pyodide: load the sqlite3 "
                "package with `await pyodide.loadPackage('sqlite3')`); everything else in core "
                "works without it."
            )
        if root is None:
            root = os.environ.get(LIBRARY_ENV_VAR) or default_library_dir()
        self.root = Path(root).expanduser()
        self.max_text_bytes = max_text_bytes
        self._db_path = self.root / _DB_NAME
        self._blob_dir = self.root / _BLOB_DIR
        try:
            self._blob_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise LibraryError(
                f"cannot create the tokenizer library folder {self.root} ({_reason(err)}); "
                f"set {LIBRARY_ENV_VAR} to a writable folder."
            ) from None
        self._init_db()
        #: Human-readable notes about damaged entries found when the library was opened.
        self.problems: list[str] = self._recover()

    def __repr__(self) -> str:
        return f"TokenizerLibrary({str(self.root)!r})"

    # ---- tokenizers ------------------------------------------------------------------

    def save(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        *,
        name: str,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        corpus_name: str = "",
        corpus_size: int = 0,
    ) -> Entry:
        """Save a tokenizer and return its entry; saving the same content again returns the
        existing entry unchanged (the first name wins)."""
        name = name.strip() if isinstance(name, str) else ""
        if not name:
            raise LibraryError("give the tokenizer a name before saving it.")
        if len(name) > _MAX_NAME_CHARS or len(corpus_name) > _MAX_NAME_CHARS:
            raise LibraryError(f"names are limited to {_MAX_NAME_CHARS} characters; shorten it.")
        if type(corpus_size) is not int or corpus_size < 0:
            raise LibraryError("corpus_size must be a non-negative number of bytes.")
        blob = tokenizer_json(vocab, merges, special_tokens, pattern)  # checks the tokenizer
        pattern = canonical_pattern(pattern)  # as the blob names it: "gpt2", not its regex
        entry_id = content_id(blob)
        path = self._blob_path(entry_id)
        with self._write() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM tokenizers WHERE id = ?", (entry_id,)).fetchone()
            if row is None or not path.is_file():  # also repairs a row whose file was lost
                self._write_blob(path, blob)
            if row is None:
                try:
                    self._insert_row(
                        conn,
                        (
                            entry_id,
                            name,
                            corpus_name,
                            corpus_size,
                            len(vocab),
                            len(merges),
                            json.dumps(list(special_tokens)),
                            pattern,
                            _utc_now(),
                        ),
                    )
                    row = conn.execute(f"SELECT {_COLUMNS} FROM tokenizers WHERE id = ?", (entry_id,)).fetchone()
                    conn.execute("COMMIT")  # here, so that a failed commit is undone below too
                except BaseException:
                    # subtle: still under the writer lock, no other save of this content is
                    # between its file and its row, so the new file can go: no file without a
                    # row is left behind (a crash here still leaves one, removed on next open).
                    with contextlib.suppress(OSError):
                        path.unlink(missing_ok=True)
                    raise
        return _entry(row)

    def list(self) -> list[Entry]:
        """All usable entries, newest first (entries whose file is missing are left out)."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM tokenizers ORDER BY created DESC, rowid DESC"
            ).fetchall()
        return [_entry(row) for row in rows if self._blob_path(row[0]).is_file()]

    def get(self, entry_id: str) -> Entry:
        """The entry for ``entry_id``; raises InvalidIdError / UnknownIdError / LibraryError."""
        entry_id = validate_id(entry_id)
        with self._read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM tokenizers WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise UnknownIdError(
                f"no saved tokenizer with ID {entry_id}; it may have been deleted. "
                "Pick one from the library or train a new one."
            )
        if not self._blob_path(entry_id).is_file():
            raise LibraryError(
                f"saved tokenizer {entry_id} ({row[1]!r}) is damaged: its file is missing from "
                f"{self._blob_dir}. Delete it from the library and save it again."
            )
        return _entry(row)

    def load(
        self, entry_id: str
    ) -> tuple[dict[int, bytes], builtins.list[tuple[bytes, bytes]], builtins.list[str], str]:
        """Return ``(vocab, merges, special_tokens, pattern)`` of a saved tokenizer."""
        entry = self.get(entry_id)
        path = self._blob_path(entry.id)
        try:
            data = path.read_bytes()
        except OSError as err:
            raise LibraryError(
                f"cannot read saved tokenizer {entry.id} from {path} ({_reason(err)}); make the "
                "file readable by the server, or delete the entry and save it again."
            ) from None
        # subtle: the ID is the content hash, so a file edited or corrupted on disk is caught
        # here instead of silently giving a teammate a different tokenizer.
        if content_id(data) != entry.id:
            raise LibraryError(
                f"saved tokenizer file {path.name} does not match its ID (changed on disk?); "
                "delete the entry and save it again."
            )
        return tokenizer_from_json(data, where=path.name)

    def delete(self, entry_id: str) -> None:
        """Remove a saved tokenizer; raises UnknownIdError if there is none with this ID."""
        entry_id = validate_id(entry_id)
        with self._write() as conn:
            if conn.execute("DELETE FROM tokenizers WHERE id = ?", (entry_id,)).rowcount == 0:
                raise UnknownIdError(
                    f"no saved tokenizer with ID {entry_id}; it may have been deleted already."
                )
        # subtle: the file goes in a second transaction. Removing it before the commit could
        # leave a row without its file if we crashed in between; this way a crash leaves only
        # an orphan file, which the next start removes. Holding the write lock guarantees that
        # no concurrent save of the same content is between writing the file and its row.
        # The entry is deleted now: a file that cannot be removed (or a database that fails
        # here) leaves only that orphan file, which the next open removes. No error for that.
        with contextlib.suppress(LibraryError), self._write() as conn:
            if conn.execute("SELECT 1 FROM tokenizers WHERE id = ?", (entry_id,)).fetchone() is None:
                with contextlib.suppress(OSError):
                    self._blob_path(entry_id).unlink(missing_ok=True)

    # ---- texts -----------------------------------------------------------------------

    def save_text(self, text: str) -> str:
        """Store a text too long for a URL; return its ID (the same text gives the same ID)."""
        if not isinstance(text, str):
            raise LibraryError("only text (str) can be saved.")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise LibraryError("the text contains unpaired surrogates; it cannot be saved.") from None
        if len(data) > self.max_text_bytes:
            raise LibraryError(
                f"the text is {len(data):,} bytes; saved texts are limited to "
                f"{self.max_text_bytes:,} bytes. Shorten it."
            )
        text_id = content_id(b"text\0" + data)
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO texts (id, text, n_bytes, created) VALUES (?, ?, ?, ?)",
                (text_id, text, len(data), _utc_now()),
            )
        return text_id

    def load_text(self, text_id: str) -> str:
        """The text saved under ``text_id``; raises InvalidIdError / UnknownIdError."""
        text_id = validate_id(text_id)
        with self._read() as conn:
            row = conn.execute("SELECT text FROM texts WHERE id = ?", (text_id,)).fetchone()
        if row is None:
            raise UnknownIdError(f"no saved text with ID {text_id}; it may have been deleted.")
        return str(row[0])

    validate_id = staticmethod(validate_id)

    # ---- internals -------------------------------------------------------------------

    def _blob_path(self, entry_id: str) -> Path:
        # entry_id has passed validate_id or comes from our own hash: never a path fragment
        return self._blob_dir / f"{entry_id}.json"

    def _connect(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: we issue BEGIN IMMEDIATE ourselves; timeout = busy_timeout
            conn = sqlite3.connect(self._db_path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as err:
            raise self._open_error(err) from None
        try:
            conn.execute("PRAGMA synchronous=FULL")  # per connection: fsync every commit
        except sqlite3.Error as err:
            conn.close()
            raise self._open_error(err) from None
        return conn

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        conn = self._connect()
        try:
            yield conn
        except sqlite3.DatabaseError as err:
            raise LibraryError(
                f"the library database {self._db_path} failed: {err}. Restore it from a backup "
                f"or set {LIBRARY_ENV_VAR} to another folder."
            ) from None
        finally:
            conn.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding SQLite's cross-process writer lock."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                if conn.in_transaction:  # the body may have committed itself (save does)
                    conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back on its own already
                    with contextlib.suppress(sqlite3.Error):  # never hide the first error
                        conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as err:
            raise LibraryError(
                f"the library database {self._db_path} failed: {err}. Check that the server "
                f"can write to {self.root} and the disk has space, or set {LIBRARY_ENV_VAR} "
                "to another folder."
            ) from None
        finally:
            conn.close()

    def _init_db(self) -> None:
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        while True:
            conn = self._connect()
            try:
                # WAL: readers never block the writer; the setting persists in the file.
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)
                return
            except sqlite3.OperationalError as err:
                # subtle: switching to WAL needs an exclusive moment and does not wait on
                # the busy timeout, so processes opening a new library at once retry here.
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise self._open_error(err) from None
            except sqlite3.DatabaseError as err:
                raise self._open_error(err) from None
            finally:
                conn.close()
            time.sleep(0.02)

    def _open_error(self, err: Exception) -> LibraryError:
        return LibraryError(
            f"the library database {self._db_path} cannot be opened ({err}); "
            f"restore it from a backup or point {LIBRARY_ENV_VAR} at another folder."
        )

    def _recover(self) -> builtins.list[str]:  # (``list`` here is the method above)
        """Remove leftovers of interrupted saves/deletes; report rows whose file is missing."""
        problems: list[str] = []
        with self._write() as conn:  # the writer lock: no save is between file and row now
            ids = {row[0]: row[1] for row in conn.execute("SELECT id, name FROM tokenizers")}
            for path in self._blob_dir.iterdir():
                if path.name.startswith(_TMP_PREFIX) or (
                    path.suffix == ".json" and path.stem not in ids
                ):
                    try:
                        path.unlink(missing_ok=True)
                    except OSError as err:  # e.g. a folder, or a read-only library
                        problems.append(
                            f"cannot remove the leftover {path} ({_reason(err)}); it is "
                            "ignored, remove it by hand."
                        )
            for entry_id, name in ids.items():
                if not self._blob_path(entry_id).is_file():
                    problems.append(
                        f"saved tokenizer {entry_id} ({name!r}) has no file in {self._blob_dir}; "
                        "it is hidden from the library. Save it again to repair it, or delete it."
                    )
        return problems

    def _write_blob(self, path: Path, data: bytes) -> None:
        """:meth:`_atomic_write`, with a failure (permissions, full disk, something in the way)
        as a :class:`LibraryStorageError` saying what to do."""
        try:
            self._atomic_write(path, data)
        except OSError as err:
            raise LibraryStorageError(
                f"cannot write the tokenizer file in {self._blob_dir} ({_reason(err)}); make "
                "that folder writable by the server and check the disk has space, or set "
                f"{LIBRARY_ENV_VAR} to a writable folder."
            ) from None

    def _atomic_write(self, path: Path, data: bytes) -> None:
        """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
        tmp = path.with_name(f"{_TMP_PREFIX}{path.stem}-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            with open(tmp, "xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)

    @staticmethod
    def _insert_row(conn: sqlite3.Connection, values: tuple[object, ...]) -> None:
        conn.execute(f"INSERT INTO tokenizers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)


def _entry(row: tuple[object, ...]) -> Entry:
    (entry_id, name, corpus_name, corpus_size, vocab_size, n_merges, specials, pattern, created) = row
    return Entry(
        id=str(entry_id),
        name=str(name),
        corpus_name=str(corpus_name),
        corpus_size=int(corpus_size),  # type: ignore[call-overload]
        vocab_size=int(vocab_size),  # type: ignore[call-overload]
        n_merges=int(n_merges),  # type: ignore[call-overload]
        special_tokens=tuple(json.loads(str(specials))),
        pattern=str(pattern),
        created=str(created),
    )


def _reason(err: OSError) -> str:
    """The OS's words for ``err`` ("Permission denied"), or its text when it has none."""
    return err.strerror or str(err)


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable (POSIX); a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

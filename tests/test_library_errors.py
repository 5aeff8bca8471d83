"""The saved-tokenizer library's error paths (core/services/library.py): a folder it cannot write, a
blob it cannot read, SQLite failing in the middle of a save. Each one must end in a
``LibraryError`` whose message says what to do (never a bare ``OSError`` or
``sqlite3.Error``), and must leave nothing half-done behind: no row without its file, no file
without its row, no temp file.

The tests run as root in CI and in the dev container, where ``chmod`` does not stop writes:
there the unwritable folder is made with a regular file where a folder must be, or by
making ``open`` / ``os.replace`` / ``os.fsync`` fail the way they do on a read-only or full
disk. The real ``chmod`` tests run (and are checked to be meaningful) only as another user.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from core.services import library
from core.errors import PlaygroundError
from core.services.library import LibraryError, TokenizerLibrary, UnknownIdError

SPECIAL = "<|endoftext|>"


def make_tokenizer(extra: bytes = b"") -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """<|endoftext|>, the 256 bytes, then merges spelling ``x`` + ``extra``."""
    vocab = {0: SPECIAL.encode()} | {i + 1: bytes([i]) for i in range(256)}
    merges = [(b"t", b"h"), (b"th", b"e")]
    token = b"x"
    for ch in extra:
        merges.append((token, bytes([ch])))
        token += bytes([ch])
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return vocab, merges


def save(lib: TokenizerLibrary, extra: bytes = b"", name: str = "toy") -> library.Entry:
    vocab, merges = make_tokenizer(extra)
    return lib.save(vocab, merges, name=name, special_tokens=[SPECIAL], pattern="gpt2")


def blob_names(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "blobs").iterdir())


def rows(root: Path) -> list[str]:
    """Tokenizer IDs in the database, read with sqlite3 itself (not through the library)."""
    with sqlite3.connect(root / "library.sqlite3") as conn:
        return sorted(r[0] for r in conn.execute("SELECT id FROM tokenizers"))


def assert_clear(err: BaseException, *needles: str) -> None:
    """A library error the UI shows as it is (``ui.widgets.show_error``): a PlaygroundError,
    with every ``needle`` (what went wrong, what to do) in its message."""
    assert isinstance(err, LibraryError), type(err)
    assert isinstance(err, PlaygroundError)
    message = str(err)
    for needle in needles:
        assert needle in message, (needle, message)
    assert "Traceback" not in message


def permission_denied(path: object = "") -> PermissionError:
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))


def chmod_stops_writes(folder: Path) -> bool:
    """True when a 0o500 folder really refuses a new file (not as root, not on odd mounts)."""
    folder.chmod(0o500)
    try:
        (folder / "probe").write_bytes(b"x")
    except PermissionError:
        return True
    finally:
        folder.chmod(0o700)
    (folder / "probe").unlink()
    return False


# ---- a folder the library cannot write ----------------------------------------------------------


def test_a_library_folder_under_a_regular_file_says_to_set_the_variable(tmp_path: Path) -> None:
    (tmp_path / "not-a-folder").write_text("a file, where the library's parent folder should be")
    with pytest.raises(LibraryError) as info:
        TokenizerLibrary(tmp_path / "not-a-folder" / "library")
    assert_clear(info.value, "cannot create the tokenizer library folder",
                 "Not a directory", "set TOKPLAY_LIBRARY_DIR to a writable folder")


def test_blobs_folder_replaced_by_a_file_gives_a_clear_error_and_no_half_entry(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    kept = save(lib, b"kept")
    (tmp_path / "blobs" / f"{kept.id}.json").unlink()
    (tmp_path / "blobs").rmdir()
    (tmp_path / "blobs").write_text("someone put a file here")
    with pytest.raises(LibraryError) as info:
        save(lib, b"new")
    assert_clear(info.value, f"cannot write the tokenizer file in {tmp_path / 'blobs'}",
                 "Not a directory", "TOKPLAY_LIBRARY_DIR")
    assert rows(tmp_path) == [kept.id]  # no row for the file that was never written


@pytest.mark.parametrize("where", ["open", "os.replace", "os.fsync"])
def test_unwritable_blobs_folder_gives_a_clear_error_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """What a read-only folder does to each step of the atomic write (create the temp file,
    rename it into place, fsync it), simulated because chmod cannot stop root."""
    lib = TokenizerLibrary(tmp_path)
    kept = save(lib, b"kept")
    real_open = open

    def refuse(*args: object, **kwargs: object) -> object:
        raise permission_denied(args[0] if args else "")

    if where == "open":
        def guarded_open(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
            if "x" in mode or "w" in mode:
                raise permission_denied(file)
            return real_open(file, mode, *args, **kwargs)  # type: ignore[call-overload]

        monkeypatch.setattr(library, "open", guarded_open, raising=False)
    elif where == "os.replace":
        monkeypatch.setattr(os, "replace", refuse)
    else:
        monkeypatch.setattr(os, "fsync", refuse)
    with pytest.raises(LibraryError) as info:
        save(lib, b"new")
    assert_clear(info.value, f"cannot write the tokenizer file in {tmp_path / 'blobs'}",
                 "Permission denied", "writable", "TOKPLAY_LIBRARY_DIR")
    monkeypatch.undo()
    assert blob_names(tmp_path) == [f"{kept.id}.json"]  # no temp file, no new blob
    assert rows(tmp_path) == [kept.id]
    assert lib.list() == [kept]
    # once the folder is writable again, the same save works
    entry = save(lib, b"new")
    assert lib.load(entry.id)[:2] == make_tokenizer(b"new")


def test_a_full_disk_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = TokenizerLibrary(tmp_path)

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(LibraryError) as info:
        save(lib)
    assert_clear(info.value, "No space left on device", "space")
    monkeypatch.undo()
    assert blob_names(tmp_path) == [] and rows(tmp_path) == []


def test_read_only_folder_with_chmod(tmp_path: Path) -> None:
    """The real thing, where chmod can stop writes (not as root)."""
    probe = tmp_path / "probe"
    probe.mkdir()
    if not chmod_stops_writes(probe):
        pytest.skip("chmod 0o500 does not stop writes here (running as root): covered by the "
                    "simulated tests above")
    lib = TokenizerLibrary(tmp_path / "lib")
    kept = save(lib, b"kept")
    blobs = tmp_path / "lib" / "blobs"
    blobs.chmod(0o500)
    try:
        with pytest.raises(LibraryError) as info:
            save(lib, b"new")
        assert_clear(info.value, "cannot write the tokenizer file", "TOKPLAY_LIBRARY_DIR")
        assert rows(tmp_path / "lib") == [kept.id]
        assert lib.load(kept.id)[:2] == make_tokenizer(b"kept")  # reading still works
    finally:
        blobs.chmod(0o700)
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        with pytest.raises(LibraryError) as info:
            TokenizerLibrary(parent / "lib")
        assert_clear(info.value, "cannot create the tokenizer library folder",
                     "TOKPLAY_LIBRARY_DIR")
    finally:
        parent.chmod(0o700)


# ---- a blob the library cannot read ------------------------------------------------------------


def test_unreadable_blob_gives_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = TokenizerLibrary(tmp_path)
    entry = save(lib)
    blob = tmp_path / "blobs" / f"{entry.id}.json"
    real_read_bytes = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == blob:
            raise permission_denied(self)
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    with pytest.raises(LibraryError) as info:
        lib.load(entry.id)
    assert_clear(info.value, f"cannot read saved tokenizer {entry.id}", "Permission denied",
                 str(blob))
    assert lib.get(entry.id) == entry  # the metadata is still there
    monkeypatch.undo()
    assert lib.load(entry.id)[:2] == make_tokenizer()


def test_unreadable_blob_with_chmod(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    entry = save(lib)
    blob = tmp_path / "blobs" / f"{entry.id}.json"
    blob.chmod(0)
    try:
        try:
            blob.read_bytes()
        except PermissionError:
            pass
        else:
            pytest.skip("chmod 0 does not stop reads here (running as root): covered above")
        with pytest.raises(LibraryError) as info:
            lib.load(entry.id)
        assert_clear(info.value, f"cannot read saved tokenizer {entry.id}", "Permission denied")
    finally:
        blob.chmod(0o600)


def test_a_folder_in_place_of_a_blob_is_reported_and_saving_again_says_why_it_fails(
    tmp_path: Path,
) -> None:
    lib = TokenizerLibrary(tmp_path)
    entry = save(lib)
    blob = tmp_path / "blobs" / f"{entry.id}.json"
    blob.unlink()
    blob.mkdir()  # e.g. a botched restore
    with pytest.raises(LibraryError) as info:
        lib.load(entry.id)
    assert_clear(info.value, f"saved tokenizer {entry.id}", "is damaged",
                 "Delete it from the library and save it again")
    assert lib.list() == []  # hidden, not a broken row in every picker
    reopened = TokenizerLibrary(tmp_path)  # opening must not trip over the folder either
    assert [p for p in reopened.problems if entry.id in p]
    # "save it again" cannot put the file in place while the folder is there: say so
    with pytest.raises(LibraryError) as info:
        save(reopened)
    assert_clear(info.value, "cannot write the tokenizer file", "Is a directory")
    assert [p.name for p in (tmp_path / "blobs").iterdir() if p.name.startswith(".")] == []
    blob.rmdir()
    assert save(reopened).id == entry.id  # and once it is gone, saving repairs the entry
    assert reopened.load(entry.id)[:2] == make_tokenizer()


def test_leftovers_that_cannot_be_removed_do_not_stop_the_library_opening(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    entry = save(lib)
    (tmp_path / "blobs" / "0123456789abcdef.json").mkdir()  # no row: a leftover
    (tmp_path / "blobs" / ".tmp-0123456789abcdef-1-cafe").mkdir()
    reopened = TokenizerLibrary(tmp_path)
    assert reopened.list() == [entry]
    assert reopened.load(entry.id)[:2] == make_tokenizer()
    assert len(reopened.problems) == 2
    assert all("remove it by hand" in p for p in reopened.problems), reopened.problems


# ---- SQLite failing in the middle of a save -----------------------------------------------------


def test_sqlite_failing_after_the_blob_is_written_leaves_nothing_half_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = TokenizerLibrary(tmp_path)
    kept = save(lib, b"kept")
    written: list[str] = []

    def insert(conn: sqlite3.Connection, values: tuple[object, ...]) -> None:
        written.extend(blob_names(tmp_path))  # the new blob is in place at this point
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(TokenizerLibrary, "_insert_row", staticmethod(insert))
    with pytest.raises(LibraryError) as info:
        save(lib, b"lost")
    assert_clear(info.value, f"the library database {tmp_path / 'library.sqlite3'} failed",
                 "disk I/O error", "TOKPLAY_LIBRARY_DIR")
    lost_id = next(n for n in written if n != f"{kept.id}.json")[: -len(".json")]
    monkeypatch.undo()
    # nothing half-done, in this process, before any reopen could clean up
    assert blob_names(tmp_path) == [f"{kept.id}.json"]  # no blob, no temp file
    assert rows(tmp_path) == [kept.id]  # no row
    assert lib.list() == [kept]
    with pytest.raises(UnknownIdError):
        lib.get(lost_id)
    assert TokenizerLibrary(tmp_path).problems == []
    # and the save simply works the next time
    assert save(lib, b"lost").id == lost_id
    assert lib.load(lost_id)[:2] == make_tokenizer(b"lost")


class _FailingConnection:
    """A sqlite3 connection whose ``execute`` fails on statements starting with ``fail_on``."""

    def __init__(self, conn: sqlite3.Connection, fail_on: str) -> None:
        self._conn, self._fail_on = conn, fail_on

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql.lstrip().upper().startswith(self._fail_on):
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def failing_sql(monkeypatch: pytest.MonkeyPatch, fail_on: str) -> None:
    real_connect = TokenizerLibrary._connect
    monkeypatch.setattr(TokenizerLibrary, "_connect",
                        lambda self: _FailingConnection(real_connect(self), fail_on))


def test_a_failing_commit_leaves_nothing_half_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = TokenizerLibrary(tmp_path)
    kept = save(lib, b"kept")
    failing_sql(monkeypatch, "COMMIT")
    with pytest.raises(LibraryError) as info:
        save(lib, b"lost")
    assert_clear(info.value, "failed", "database or disk is full")
    monkeypatch.undo()
    assert blob_names(tmp_path) == [f"{kept.id}.json"]
    assert rows(tmp_path) == [kept.id]
    assert lib.list() == [kept]


def test_a_failing_text_insert_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = TokenizerLibrary(tmp_path)
    failing_sql(monkeypatch, "INSERT")
    with pytest.raises(LibraryError) as info:
        lib.save_text("a long text for a link")
    assert_clear(info.value, "failed", "database or disk is full")
    monkeypatch.undo()
    with sqlite3.connect(tmp_path / "library.sqlite3") as conn:
        assert conn.execute("SELECT COUNT(*) FROM texts").fetchone() == (0,)


def test_a_failing_delete_keeps_the_entry_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = TokenizerLibrary(tmp_path)
    entry = save(lib)
    failing_sql(monkeypatch, "DELETE")
    with pytest.raises(LibraryError) as info:
        lib.delete(entry.id)
    assert_clear(info.value, "failed", "database or disk is full")
    monkeypatch.undo()
    assert lib.list() == [entry] and blob_names(tmp_path) == [f"{entry.id}.json"]
    assert lib.load(entry.id)[:2] == make_tokenizer()


def test_a_blob_that_cannot_be_removed_after_a_delete_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row is gone (the delete happened); the file is a harmless leftover that the next
    open removes, so the user sees no error."""
    lib = TokenizerLibrary(tmp_path)
    entry = save(lib)
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if self.suffix == ".json":
            raise permission_denied(self)
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    lib.delete(entry.id)
    monkeypatch.undo()
    assert lib.list() == [] and rows(tmp_path) == []
    TokenizerLibrary(tmp_path)  # the next open removes the leftover
    assert blob_names(tmp_path) == []

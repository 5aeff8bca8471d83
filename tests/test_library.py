"""The saved-tokenizer library: round trips, hostile IDs, crash consistency, concurrency."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core import PlaygroundError, TokenizerLibrary
from core.engine.pretokenize import GPT2_PATTERN
from core.services.library import (
    InvalidIdError,
    LibraryError,
    UnknownIdError,
    default_library_dir,
    validate_id,
)

REPO = Path(__file__).resolve().parent.parent


def make_tokenizer(extra: bytes = b"") -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """A small valid tokenizer: <|endoftext|>, the 256 bytes, then merges spelling `extra`."""
    vocab = {0: b"<|endoftext|>"} | {i + 1: bytes([i]) for i in range(256)}
    merges = [(b"t", b"h"), (b"th", b"e")]
    token = b"x"
    for ch in extra:
        merges.append((token, bytes([ch])))
        token += bytes([ch])
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return vocab, merges


def save(lib: TokenizerLibrary, extra: bytes = b"", name: str = "toy", **kw: object):
    vocab, merges = make_tokenizer(extra)
    kw.setdefault("special_tokens", ["<|endoftext|>"])
    kw.setdefault("pattern", "gpt2")
    return lib.save(vocab, merges, name=name, **kw)  # type: ignore[arg-type]


# ---- round trips ---------------------------------------------------------------------


def test_save_then_load_gives_back_the_same_tokenizer(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    vocab, merges = make_tokenizer(b"yz")
    entry = lib.save(
        vocab, merges, name=" my tok ", special_tokens=["<|endoftext|>"], pattern="cl100k",
        corpus_name="docs.txt", corpus_size=1234,
    )
    assert len(entry.id) == 16 and validate_id(entry.id) == entry.id
    assert (entry.name, entry.corpus_name, entry.corpus_size) == ("my tok", "docs.txt", 1234)
    assert (entry.vocab_size, entry.n_merges) == (len(vocab), len(merges))
    assert entry.special_tokens == ("<|endoftext|>",) and entry.pattern == "cl100k"
    assert entry.created.endswith("+00:00")
    assert lib.get(entry.id) == entry
    assert lib.load(entry.id) == (vocab, merges, ["<|endoftext|>"], "cl100k")
    assert lib.list() == [entry]


def test_the_id_is_a_content_hash(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    first = save(lib, name="first")
    again = save(lib, name="second name, same content")
    by_regex = save(lib, pattern=GPT2_PATTERN)  # the same pattern spelled out
    assert again == first and by_regex == first  # idempotent: the first name wins
    assert len(lib.list()) == 1
    assert save(lib, extra=b"q").id != first.id
    assert save(lib, special_tokens=[]).id != first.id
    assert save(lib, pattern="o200k").id != first.id
    # the ID does not depend on the library or the machine
    assert save(TokenizerLibrary(tmp_path / "other")).id == first.id


def test_list_is_newest_first(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    ids = [save(lib, extra=bytes([c]), name=chr(c)).id for c in b"abcde"]
    assert [e.id for e in lib.list()] == ids[::-1]


def test_reopening_the_library_keeps_everything(tmp_path: Path) -> None:
    entry = save(TokenizerLibrary(tmp_path), extra=b"persist")
    text_id = TokenizerLibrary(tmp_path).save_text("kept across restarts ✓")
    reopened = TokenizerLibrary(tmp_path)  # what a server restart does
    assert reopened.problems == []
    assert reopened.list() == [entry]
    assert reopened.load(entry.id)[:2] == make_tokenizer(b"persist")
    assert reopened.load_text(text_id) == "kept across restarts ✓"


def test_root_comes_from_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_LIBRARY_DIR", str(tmp_path / "from-env"))
    assert TokenizerLibrary().root == tmp_path / "from-env"
    assert (tmp_path / "from-env" / "library.sqlite3").is_file()


def test_default_root_is_a_user_data_folder_outside_the_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKPLAY_LIBRARY_DIR", raising=False)
    root = default_library_dir()
    assert root.name == "tokenizer-playground"
    assert REPO not in root.parents


# ---- deleting and unknown IDs --------------------------------------------------------


def test_delete_removes_entry_and_file(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    keep, gone = save(lib, extra=b"k"), save(lib, extra=b"g")
    lib.delete(gone.id)
    assert lib.list() == [keep]
    assert not (tmp_path / "blobs" / f"{gone.id}.json").exists()
    for call in (lib.get, lib.load, lib.delete):
        with pytest.raises(UnknownIdError, match=f"no saved tokenizer with ID {gone.id}; it may have been deleted"):
            call(gone.id)
    assert save(lib, extra=b"g").id == gone.id  # can be saved again


def test_unknown_ids_say_so(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    with pytest.raises(UnknownIdError, match="no saved tokenizer with ID 0123456789abcdef"):
        lib.load("0123456789abcdef")
    with pytest.raises(UnknownIdError, match="no saved text with ID 0123456789abcdef"):
        lib.load_text("0123456789abcdef")


HOSTILE_IDS = [
    "../../etc/passwd",
    "1' OR '1'='1",
    "0123456789abcdef' OR '1'='1",
    "'; DROP TABLE tokenizers; --",
    "0123456789ABCDEF",  # uppercase
    "0123456789abcde",  # too short
    "0123456789abcdef0",  # too long
    "0123456789abcdef\n",
    " 0123456789abcdef",
    "..%2f..%2fetc%2fpasswd",
    "/etc/passwd",
    "0123456789abcdeg",
    "０１２３４５６７８９ａｂｃｄｅｆ",  # full-width digits are not [0-9a-f]
    "",
    "x" * 10_000,
    None,
    123,
]


@pytest.mark.parametrize("bad", HOSTILE_IDS, ids=range(len(HOSTILE_IDS)))
def test_hostile_ids_are_rejected_before_touching_disk_or_database(tmp_path: Path, bad: object) -> None:
    lib = TokenizerLibrary(tmp_path)
    entry = save(lib)
    for call in (lib.get, lib.load, lib.delete, lib.load_text, validate_id):
        with pytest.raises(InvalidIdError, match="is not a valid library ID: an ID is 16 characters 0-9 and a-f"):
            call(bad)  # type: ignore[arg-type]
    assert lib.list() == [entry]  # nothing dropped, nothing deleted


def test_invalid_id_error_is_a_playground_error_with_a_short_message() -> None:
    with pytest.raises(PlaygroundError) as info:
        validate_id("y" * 10_000)
    assert len(str(info.value)) < 250


# ---- bad input to save ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("vocab", "merges", "kw", "message"),
    [
        ({}, [], {}, "vocab must be a non-empty dict"),
        ({0: "a"}, [], {}, "is not a non-negative int ID mapped to bytes"),
        ({"0": b"a"}, [], {}, "is not a non-negative int ID mapped to bytes"),
        ({0: b"a"}, [(b"a",)], {}, "merge 0 is"),
        ({0: b"a"}, [("a", "b")], {}, "merge 0 is"),
        ({0: b"a"}, [], {"name": "  "}, "give the tokenizer a name"),
        ({0: b"a"}, [], {"pattern": "(unclosed"}, "pattern is not a valid regex"),
        ({0: b"a"}, [], {"special_tokens": "<|eot|>"}, "special_tokens must be a list"),
        ({0: b"a"}, [], {"corpus_size": -1}, "corpus_size must be"),
    ],
)
def test_save_rejects_malformed_tokenizers(
    tmp_path: Path, vocab: object, merges: object, kw: dict[str, object], message: str
) -> None:
    lib = TokenizerLibrary(tmp_path)
    kw = {"name": "bad", "special_tokens": [], "pattern": "gpt2"} | kw
    with pytest.raises(LibraryError, match=message):
        lib.save(vocab, merges, **kw)  # type: ignore[arg-type]
    assert lib.list() == []


# ---- atomicity and startup consistency -----------------------------------------------


def test_failure_between_file_and_row_leaves_no_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = TokenizerLibrary(tmp_path)
    kept = save(lib, extra=b"kept")

    def crash(*args: object) -> None:
        raise OSError("simulated crash after the file was written")

    monkeypatch.setattr(TokenizerLibrary, "_insert_row", staticmethod(crash))
    with pytest.raises(OSError, match="simulated crash"):
        save(lib, extra=b"lost")
    monkeypatch.undo()
    assert lib.list() == [kept]  # the row was rolled back: no half entry visible
    reopened = TokenizerLibrary(tmp_path)
    assert reopened.problems == []
    assert sorted(p.name for p in (tmp_path / "blobs").iterdir()) == [f"{kept.id}.json"]
    assert reopened.load(save(reopened, extra=b"lost").id)[:2] == make_tokenizer(b"lost")


def test_failure_while_writing_the_file_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = TokenizerLibrary(tmp_path)

    def broken_replace(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        save(lib)
    monkeypatch.undo()
    assert list((tmp_path / "blobs").iterdir()) == []
    assert lib.list() == []


_CRASHING_CHILD = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {repo!r})
    from core.services.library import TokenizerLibrary
    vocab = {{i: bytes([i]) for i in range(256)}} | {{256: b"ab"}}
    def die(*args):
        os._exit(9)  # a hard crash: no cleanup, no rollback, the transaction is open
    TokenizerLibrary._insert_row = staticmethod(die)
    TokenizerLibrary({root!r}).save(vocab, [(b"a", b"b")], name="crash", special_tokens=[], pattern="gpt2")
    """
)


def test_a_process_killed_mid_save_leaves_the_library_consistent(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    kept = save(lib, extra=b"kept")
    child = subprocess.run(
        [sys.executable, "-c", _CRASHING_CHILD.format(repo=str(REPO), root=str(tmp_path))],
        capture_output=True, text=True, timeout=60,
    )
    assert child.returncode == 9, child.stderr
    # and a half-written temp file, as a crash inside the file write would leave
    (tmp_path / "blobs" / ".tmp-0123456789abcdef-1-abcd").write_bytes(b'{"half": ')
    assert len(list((tmp_path / "blobs").iterdir())) == 3  # kept + orphan blob + old temp file
    reopened = TokenizerLibrary(tmp_path)  # the server restarting
    assert reopened.problems == []
    assert reopened.list() == [kept]
    assert sorted(p.name for p in (tmp_path / "blobs").iterdir()) == [f"{kept.id}.json"]
    # the database is not left locked by the dead process
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    entry = reopened.save(vocab, [(b"a", b"b")], name="after", special_tokens=[], pattern="gpt2")
    assert reopened.load(entry.id)[0] == vocab


def test_a_row_whose_file_vanished_is_reported_hidden_and_repairable(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    ok, broken = save(lib, extra=b"ok"), save(lib, extra=b"broken")
    (tmp_path / "blobs" / f"{broken.id}.json").unlink()
    reopened = TokenizerLibrary(tmp_path)
    assert len(reopened.problems) == 1 and broken.id in reopened.problems[0]
    assert reopened.list() == [ok]
    with pytest.raises(LibraryError, match="is damaged: its file is missing"):
        reopened.load(broken.id)
    assert save(reopened, extra=b"broken") == broken  # saving again repairs it
    assert reopened.load(broken.id)[:2] == make_tokenizer(b"broken")
    assert TokenizerLibrary(tmp_path).problems == []


def test_a_file_changed_on_disk_is_refused(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    entry = save(lib)
    path = tmp_path / "blobs" / f"{entry.id}.json"
    path.write_bytes(path.read_bytes().replace(b'"gpt2"', b'"o200k"'))
    with pytest.raises(LibraryError, match="does not match its ID"):
        lib.load(entry.id)


@pytest.mark.parametrize(
    "blob",
    [
        b"\x80\x04\x95 not json, maybe a pickle",
        b"[]",
        b'{"format": "something-else"}',
        b'{"format": "tokenizer-playground/bpe-v1", "pattern": "gpt2", "special_tokens": [], "vocab": [[0, "zz"]], "merges": []}',
        b'{"format": "tokenizer-playground/bpe-v1", "pattern": "gpt2", "special_tokens": [], "vocab": [["0", "61"]], "merges": []}',
        b'{"format": "tokenizer-playground/bpe-v1", "pattern": "gpt2", "special_tokens": [], "vocab": [], "merges": [["61"]]}',
        b'{"format": "tokenizer-playground/bpe-v1", "pattern": 5, "special_tokens": [], "vocab": [], "merges": []}',
    ],
)
def test_damaged_blobs_give_a_clear_error(blob: bytes) -> None:
    from core.services.library_json import _parse_blob

    with pytest.raises(LibraryError, match="saved tokenizer file x.json is damaged"):
        _parse_blob(blob, "x.json")


# ---- concurrency ---------------------------------------------------------------------


def _save_many(root: str, worker: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    lib = TokenizerLibrary(root)
    barrier.wait(timeout=60)
    for i in range(15):
        save(lib, extra=f"w{worker}-{i}".encode(), name=f"w{worker}-{i}")
        save(lib, extra=b"shared", name=f"shared by {worker}")  # both save this one too
        lib.save_text(f"text {worker} {i}")
        lib.save_text("shared text")


def test_two_processes_saving_at_once_lose_nothing(tmp_path: Path) -> None:
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_save_many, args=(str(tmp_path), w, barrier)) for w in (1, 2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0, 0]

    lib = TokenizerLibrary(tmp_path)
    assert lib.problems == []
    entries = lib.list()
    assert len(entries) == 2 * 15 + 1
    for entry in entries:
        extra = b"shared" if entry.name.startswith("shared by") else entry.name.encode()
        assert lib.load(entry.id)[:2] == make_tokenizer(extra)
    assert len(list((tmp_path / "blobs").iterdir())) == 31
    with sqlite3.connect(tmp_path / "library.sqlite3") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT COUNT(*) FROM texts").fetchone() == (31,)


# ---- saved texts ---------------------------------------------------------------------


def test_texts_round_trip_with_stable_ids(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path)
    text = "naïve café 你好 🧩\n\ttabs <img src=x onerror=alert(1)>" * 100
    text_id = lib.save_text(text)
    assert validate_id(text_id) == text_id
    assert lib.save_text(text) == text_id
    assert lib.load_text(text_id) == text
    assert lib.save_text("") != text_id and lib.load_text(lib.save_text("")) == ""


def test_texts_over_the_size_limit_are_refused(tmp_path: Path) -> None:
    lib = TokenizerLibrary(tmp_path, max_text_bytes=10)
    lib.save_text("0123456789")
    with pytest.raises(LibraryError, match="the text is 11 bytes; saved texts are limited to 10 bytes"):
        lib.save_text("0123456789a")
    with pytest.raises(LibraryError, match="limited to 10 bytes"):
        lib.save_text("ééééé…")  # 13 UTF-8 bytes in 6 characters


def test_processes_opening_a_new_library_at_once_all_succeed(tmp_path: Path) -> None:
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_open_and_save_text, args=(str(tmp_path), barrier)) for _ in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0] * 4
    assert TokenizerLibrary(tmp_path).load_text(TokenizerLibrary(tmp_path).save_text("hi")) == "hi"


def _open_and_save_text(root: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait(timeout=60)
    TokenizerLibrary(root).save_text("hi")


def test_a_database_that_is_not_sqlite_gives_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "library.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(LibraryError, match="cannot be opened .*restore it from a backup"):
        TokenizerLibrary(tmp_path)

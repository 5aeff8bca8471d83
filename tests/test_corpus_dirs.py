"""Server corpora (ui/corpus_dirs.py): the files in the folders ``TOKPLAY_CORPUS_DIRS`` lists,
named by their path inside the folder; nothing outside them is listed, and a link's name is
only looked up in the list, never opened as a path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ui import corpus_dirs

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A listed folder with corpora at two depths, beside files it must never offer."""
    folder = tmp_path / "corpora"
    (folder / "owt").mkdir(parents=True)
    (folder / "owt" / "train.txt").write_text("the cat sat on the mat\n" * 100)
    (folder / "small.txt.gz").write_bytes(b"")
    (folder / "notes.md").write_text("not a corpus suffix")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "x.txt").write_text("hidden")
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "passwords.txt").write_text("hunter2")
    os.symlink(outside / "passwords.txt", folder / "escape.txt")  # a file link leading out
    os.symlink(outside, folder / "linked")  # a folder link leading out
    os.symlink(folder / "owt" / "train.txt", folder / "alias.txt")  # a link that stays inside
    monkeypatch.setenv(corpus_dirs.ENV_DIRS, str(folder))
    corpus_dirs._scan.clear()
    return folder


def test_nothing_is_listed_unless_the_server_lists_folders(shared, monkeypatch):
    monkeypatch.delenv(corpus_dirs.ENV_DIRS)
    assert not corpus_dirs.listing_on() and corpus_dirs.corpora() == {}
    assert corpus_dirs.from_link("owt/train.txt") == (
        None, "is not available on this server: it lists no corpora (TOKPLAY_CORPUS_DIRS)")


def test_the_folders_corpus_files_are_listed_by_name_and_nothing_outside(shared):
    listed = corpus_dirs.corpora()
    assert sorted(listed) == ["alias.txt", "owt/train.txt", "small.txt.gz"]
    train = listed["owt/train.txt"]
    assert train.path == str(shared / "owt" / "train.txt") and train.size == 2300
    assert listed["alias.txt"].path == train.path  # a link inside the folder is fine


def test_a_static_build_lists_none(shared, monkeypatch):
    monkeypatch.setenv("TOKPLAY_RUNTIME", "browser")
    assert corpus_dirs.corpora() == {}


@pytest.mark.parametrize(("value", "why"), [
    *((path, "links name a corpus as the list shows it, never by a path")
      for path in ("/etc/passwd", "../secret/passwords.txt", "owt/../../x", "~/.ssh/id_rsa",
                   "C:/x.txt")),
    *((name, "no corpus of that name in its list")  # links leading out: never listed
      for name in ("escape.txt", "linked/passwords.txt")),
])
def test_a_link_naming_a_path_or_an_unlisted_file_gets_one_line(shared, value, why):
    assert corpus_dirs.from_link(value) == (None, f"is not available on this server: {why}")
    with pytest.raises(Exception, match="No corpus named"):
        corpus_dirs.corpus_source(value)


def test_a_listed_name_is_read_where_it_lies(shared):
    assert corpus_dirs.from_link("owt/train.txt") == ("owt/train.txt", None)
    source = corpus_dirs.corpus_source("owt/train.txt")
    assert source.sources == (str(shared / "owt" / "train.txt"),) and source.size == 2300
    message = f"{source.sources[0]} is not valid UTF-8"
    assert source.shown(message) == "owt/train.txt is not valid UTF-8"


def test_a_listed_file_swapped_for_a_link_out_is_refused(shared, tmp_path):
    """Listed, then replaced by a symlink to a file outside: it is not read through it."""
    assert "owt/train.txt" in corpus_dirs.corpora()
    os.remove(shared / "owt" / "train.txt")
    os.symlink(tmp_path / "secret" / "passwords.txt", shared / "owt" / "train.txt")
    with pytest.raises(Exception, match="no longer on this server"):
        corpus_dirs.corpus_source("owt/train.txt")
    assert "passwords" not in str(corpus_dirs.corpora())  # listed afresh: not there either


def test_binary_data_and_a_missing_parquet_column_are_one_line(shared):
    (shared / "image.txt").write_bytes(b"GIF89a\x00\x01\x02")
    (shared / "latin1.txt").write_bytes("café".encode("latin-1") + b" and more text")
    (shared / "broken.parquet").write_bytes(b"not parquet at all")
    corpus_dirs._scan.clear()
    assert corpus_dirs.problem("image.txt") == (
        "image.txt looks like a binary file, not text: a NUL byte at byte offset 6. Pick a "
        "plain UTF-8 text file.")
    assert corpus_dirs.problem("latin1.txt") == (
        "latin1.txt is not UTF-8 text: bad byte(s) e9 20 61 6e at byte offset 3. Pick a UTF-8 "
        "text file.")
    assert corpus_dirs.problem("broken.parquet").startswith(
        "broken.parquet is not a Parquet file we can read")
    assert str(shared) not in corpus_dirs.problem("broken.parquet")  # the name, never the path
    assert corpus_dirs.problem("owt/train.txt") is None


def test_a_parquet_file_without_the_text_column_names_the_ones_it_has(shared):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"id": [1], "content": ["hello"]}), shared / "rows.parquet")
    corpus_dirs._scan.clear()
    problem = corpus_dirs.problem("rows.parquet")
    assert problem.startswith("rows.parquet has no column 'text'; its columns: id, content.")
    assert corpus_dirs.problem("rows.parquet", "content") is None

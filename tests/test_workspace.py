"""Work that survives a reload or a link: core.services.workspace's store, and ui.workspace through AppTest."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.errors import InvalidIdError, LibraryStorageError, UnknownIdError
from core.services.workspace import WorkspaceStore, blob_id_of, is_blob_id
from ui import keys, site
from tests.copy_lines import copied
from tests.markdown_text import shown as read
from tests.stats import stats

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# core.services.workspace.WorkspaceStore


def test_blobs_round_trip_and_are_named_by_content(tmp_path):
    store = WorkspaceStore(tmp_path)
    first = store.put(b"\x00\xffbytes")
    assert first == blob_id_of(b"\x00\xffbytes") == store.put(b"\x00\xffbytes")
    assert store.get(first) == b"\x00\xffbytes"
    assert store.get_json(store.put_json({"é": [1, None]})) == {"é": [1, None]}
    assert store.usage()[0] == 2


@pytest.mark.parametrize("bad", ["../../etc/passwd", "ABCDEF0123456789", "0" * 15, "", None, 7])
def test_malformed_ids_never_touch_the_disk(tmp_path, bad):
    assert not is_blob_id(bad)
    with pytest.raises(InvalidIdError, match="not a workspace ID"):
        WorkspaceStore(tmp_path).get(bad)  # type: ignore[arg-type]


def test_unknown_and_damaged_blobs_are_reported(tmp_path):
    store = WorkspaceStore(tmp_path)
    with pytest.raises(UnknownIdError, match="expired"):
        store.get("0123456789abcdef")
    blob = store.put(b"good data")
    (tmp_path / f"{blob}.gz").write_bytes(b"not gzip at all")
    with pytest.raises(LibraryStorageError, match="damaged"):
        store.get(blob)


def _age(store: WorkspaceStore, blob: str, seconds: float) -> None:
    path = store.root / f"{blob}.gz"
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_prune_drops_blobs_unused_for_longer_than_the_age_bound(tmp_path):
    store = WorkspaceStore(tmp_path, max_age_days=30)
    old, recent = store.put(b"old"), store.put(b"recent")
    _age(store, old, 31 * 86400)
    _age(store, recent, 29 * 86400)
    assert store.prune() == 1
    with pytest.raises(UnknownIdError):
        store.get(old)
    assert store.get(recent) == b"recent"


def test_prune_keeps_the_total_under_the_size_bound_least_recently_used_first(tmp_path):
    store = WorkspaceStore(tmp_path, max_bytes=10**9, grace_seconds=60)
    blobs = [store.put(os.urandom(1000)) for _ in range(4)]  # random: gzip cannot shrink it
    for age, blob in zip((500, 400, 300, 200), blobs):
        _age(store, blob, age)
    size = store.usage()[1]
    store.max_bytes = size - 1500  # two blobs must go: the two used longest ago
    assert store.prune() == 2
    assert [is_blob_id(b) and (tmp_path / f"{b}.gz").exists() for b in blobs] == [
        False, False, True, True]
    store.get(blobs[2])  # reading counts as use: now the newest


def test_prune_never_drops_what_was_used_within_the_grace_period(tmp_path):
    store = WorkspaceStore(tmp_path, max_bytes=1, grace_seconds=600)
    blob = store.put(b"in use right now")
    assert store.prune() == 0 and store.get(blob) == b"in use right now"


def test_a_crashed_write_leaves_no_blob_and_its_temp_file_is_cleaned(tmp_path):
    store = WorkspaceStore(tmp_path, grace_seconds=60)
    tmp = tmp_path / ".tmp-0123456789abcdef-1-2"
    tmp.write_bytes(b"half")
    store.prune()
    assert tmp.exists()  # a live writer may be about to rename it
    old = time.time() - 120
    os.utime(tmp, (old, old))
    store.prune()
    assert not tmp.exists() and store.usage() == (0, 0)


# ---------------------------------------------------------------------------------------------
# ui.workspace through the pages (AppTest): a "reload" is a new AppTest with the same ?ws=

pytestmark_jobs = pytest.mark.xdist_group("jobs")


def _page(title: str, ws: str | None = None, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / site.page(title).script), default_timeout=60)
    if ws is not None:
        at.query_params["ws"] = ws
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _train(vocab_size: int = 300) -> AppTest:
    at = _page("Train")
    at.number_input[0].set_value(vocab_size).run()
    at.button(key="train.start").click().run()
    deadline = time.monotonic() + 120
    while not any("Training time" in str(m.label) for m in stats(at)):
        assert time.monotonic() < deadline, "training did not end in time"
        time.sleep(0.3)
        at.run()
        assert not at.exception, at.exception
    return at


def _ws(at: AppTest) -> str:
    ws = at.query_params.get("ws")
    ws = ws[0] if isinstance(ws, list) else ws
    assert is_blob_id(ws), at.query_params
    return ws


def _own(at: AppTest) -> dict:
    return at.session_state[keys.TOKENIZERS]


@pytestmark_jobs
def test_a_reload_brings_back_the_trained_tokenizer_its_training_and_the_active_choice():
    trained = _train()
    ws = _ws(trained)
    (label, entry), = _own(trained).items()
    tok = entry["tok"]

    # a reload on another page: the same tokenizer, active, with the same IDs
    reloaded = _page("Vocabulary", ws)
    assert reloaded.session_state[keys.ACTIVE] == label
    again = _own(reloaded)[label]["tok"]
    text = "Hello, world! Tokenizers 🧩 日本語"
    assert again.encode(text) == tok.encode(text) and again.merges == tok.merges
    assert again.special_tokens == tok.special_tokens
    assert _own(reloaded)[label]["meta"]["rows"] == entry["meta"]["rows"]  # replay's charts
    assert _ws(reloaded) == ws  # nothing changed: no new snapshot, the same address

    # the Train page after the job left this server process: result, charts, downloads
    from ui.training import training_manager

    training_manager().forget(trained.session_state[keys.TRAIN_JOB])
    train = _page("Train", ws)
    assert "Last training" in [s.value for s in train.subheader]
    merges = {m.label: m.value for m in stats(train)}
    assert merges["Merges"] == f"{len(tok.merges):,}" and merges["Vocab size"] == f"{len(tok.vocab):,}"
    assert {"vocab.pkl", "merges.pkl"} <= {b.label for b in train.get("download_button")}


@pytestmark_jobs
def test_a_link_made_in_one_session_opens_the_same_tokenizer_in_another():
    trained = _train(280)
    label = trained.session_state[keys.ACTIVE]
    ws = _ws(trained)
    teammate = _page("Vocabulary", ws, tok=label)
    assert teammate.session_state[keys.ACTIVE] == label
    assert not teammate.warning, [w.value for w in teammate.warning]
    link = [text for text in copied(teammate) if "Vocabulary?" in text]
    assert link and f"ws={ws}" in link[0]


def test_uploaded_corpus_stays_when_the_uploader_is_cleared_and_after_a_reload():
    at = _page("Train")
    at.radio[0].set_value("Upload text files").run()
    data = "a small corpus of words, words and more words\n" * 50
    at.file_uploader(key="train.uploads").set_value([("notes.txt", data.encode(), "text/plain")]).run()
    assert "notes.txt" in " ".join(m.value for m in at.markdown)
    # leaving the page drops the uploader's files; the corpus stays
    at.file_uploader(key="train.uploads").set_value([]).run()
    assert "Your corpus" in " ".join(m.value for m in at.markdown)
    assert not at.button(key="train.start").disabled
    ws = _ws(at)

    reloaded = _page("Train", ws)
    reloaded.radio[0].set_value("Upload text files").run()
    assert "notes.txt" in " ".join(m.value for m in reloaded.markdown)
    assert reloaded.session_state[keys.TRAIN_CORPUS]["texts"] == [data]
    reloaded.button(key="train.forget_corpus").click().run()
    assert keys.TRAIN_CORPUS not in reloaded.session_state


@pytest.mark.parametrize("ws", ["0123456789abcdef", "../../etc/passwd", "x" * 500])
def test_a_link_to_missing_or_malformed_work_says_so_and_starts_fresh(ws):
    at = _page("Vocabulary", ws)
    notes = " ".join(read(w.value) for w in at.warning)  # as a reader sees the Markdown
    assert "cannot be reopened" in notes and "starts fresh" in notes
    assert "not JSON" not in notes  # an unknown ID is not a damaged one
    if ws == "0123456789abcdef":
        assert "is not on this server: it expired" in notes
    assert "ws" not in at.query_params


@pytestmark_jobs
def test_a_reload_brings_back_the_whole_train_form_and_start_trains_what_it_shows():
    at = _page("Train")
    at.radio[0].set_value("Upload text files").run()
    data = "the form must come back exactly as it was, words and words\n" * 40
    at.file_uploader(key="train.uploads").set_value([("mine.txt", data.encode(), "text/plain")]).run()
    at.number_input[0].set_value(300).run()
    at.text_input[0].set_value("<|endoftext|>, <|pad|>").run()
    at.radio(key="_w.train.pattern").set_value("o200k").run()
    at.radio(key="_w.train.speed").set_value("20 merges/s").run()
    ws = _ws(at)

    reloaded = _page("Train", ws)  # the uploader is empty after a reload; the corpus is kept
    assert reloaded.radio[0].value == "Upload text files"
    assert reloaded.number_input[0].value == 300
    assert reloaded.text_input[0].value == "<|endoftext|>, <|pad|>"
    assert reloaded.radio(key="_w.train.pattern").value == "o200k"
    assert reloaded.radio(key="_w.train.speed").value == "20 merges/s"
    assert "mine.txt" in " ".join(m.value for m in reloaded.markdown)
    reloaded.button(key="train.start").click().run()
    from ui.training import training_manager

    job = reloaded.session_state[keys.TRAIN_JOB]
    snap = training_manager().snapshot(job)
    assert (snap.corpus_name, snap.vocab_size, snap.special_tokens, snap.pattern) == (
        "mine.txt", 300, ("<|endoftext|>", "<|pad|>"), "o200k")
    training_manager().cancel(job)


def test_an_untouched_form_writes_no_snapshot_and_a_link_cannot_inject_values():
    at = _page("Train")
    assert "ws" not in at.query_params  # defaults only: nothing to keep, no ws= in the URL
    from ui import train_form

    session = {}
    train_form.apply_doc({"vocab_size": "3000", "speed": "warp", "source": ["x"],
                          "specials": "x" * 20_000}, session)
    assert session == train_form.DEFAULTS

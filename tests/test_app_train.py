"""The Train page through streamlit.testing.v1.AppTest: widgets, uploads, limits, a real training."""

from __future__ import annotations

from tests.markdown_text import shown

import random
import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from ui import site
from tests.chart_svg import chart, charts, drawn, plot_width, points, ticks
from ui import charts as charts_module
from tests.copy_lines import copied
from tests.stats import stats

pytestmark = pytest.mark.xdist_group("jobs")  # starts training workers: share one xdist worker

PAGE = str(Path(__file__).resolve().parent.parent / site.page("Train").script)


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def start_button(at: AppTest):
    return at.button(key="train.start")


def upload(at: AppTest, files: list[tuple[str, bytes]]) -> AppTest:
    at.radio[0].set_value("Upload text files").run()
    at.file_uploader(key="train.uploads").set_value(
        [(name, data, "text/plain") for name, data in files]
    ).run()
    assert not at.exception, at.exception
    return at


def texts(elements) -> str:
    return "\n".join(shown(str(e.value)) for e in elements)  # as read, escapes undone


def run_until(at: AppTest, done, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not done(at):
        assert time.monotonic() < deadline, "training did not end in time"
        time.sleep(0.3)
        at.run()
        assert not at.exception, at.exception


def downloads(at: AppTest) -> list[str]:
    return [b.label for b in at.get("download_button")]


def test_page_loads_with_its_widgets():
    at = page()
    assert at.radio[0].value == "Built-in corpus"
    assert at.number_input[0].label == "Vocab size" and at.number_input[0].value == 2000
    assert at.text_input[0].label == "Special tokens" and at.text_input[0].value == "<|endoftext|>"
    assert at.radio(key="_w.train.pattern").options == ["gpt2", "cl100k", "o200k"]
    assert not start_button(at).disabled
    assert "standard library" in texts(at.caption) or "standard-library" in texts(at.caption)


def test_upload_of_a_good_file_shows_name_and_size():
    at = upload(page(), [("notes.txt", b"hello world, hello tokens\n" * 100)])
    shown = texts(at.markdown)
    assert "notes.txt" in shown and "2.6 KB" in shown  # 2,600 bytes: decimal, as the uploader
    assert not at.error
    assert not start_button(at).disabled


def test_non_utf8_file_gets_a_clear_error_and_valid_files_stay_usable():
    at = upload(page(), [("good.txt", b"plain text here"), ("bad.txt", b"abc\xff\xfe rest")])
    error = texts(at.error)
    assert "bad.txt" in error and "not valid UTF-8" in error and "byte offset 3" in error
    assert "good.txt" in texts(at.markdown)
    assert not start_button(at).disabled


def test_binary_file_gets_a_clear_error():
    at = upload(page(), [("image.txt", b"GIF89a\x00\x01\x02")])
    error = texts(at.error)
    assert "image.txt" in error and "binary" in error and "byte offset 6" in error
    assert start_button(at).disabled


def test_empty_corpus_is_refused_with_a_message():
    at = upload(page(), [("empty.txt", b"   \n")])
    assert "empty" in texts(at.warning)
    assert start_button(at).disabled


@pytest.mark.parametrize(("value", "words"), [(5_000_000, "too large"), (100, "too small"),
                                            (0, "too small"), (-5, "too small"),
                                            (20_000_000, "too large")])
def test_absurd_vocab_size_gets_a_message(value, words):
    at = page()
    at.number_input[0].set_value(value).run()
    assert words in texts(at.error)
    assert start_button(at).disabled


def test_the_vocab_box_has_no_range_of_its_own():
    """Streamlit's own bounds (1 to 10,000,000) refused -5 in the browser with their own
    message and kept the last valid value, which Start then trained: the range is ours."""
    box = page().number_input[0]
    assert not box.proto.has_min and not box.proto.has_max


def test_training_on_the_builtin_corpus_ends_and_becomes_active():
    at = page()
    at.number_input[0].set_value(400).run()
    start_button(at).click().run()
    assert not at.exception, at.exception
    assert at.session_state["train.job"]
    run_until(at, lambda a: "merges.pkl" in downloads(a))
    names = downloads(at)
    assert "vocab.pkl" in names and "merges.pkl" in names
    assert any(m.label == "Merges" and m.value == "143" for m in stats(at))  # 400 - 256 - 1
    # charts and the newest-merges table were drawn
    assert list(charts(at)) == ["train.chart.counts", "train.chart.growth"]
    counts, growth = chart(at, "train.chart.counts"), chart(at, "train.chart.growth")
    assert [x for x, _, _ in points(counts)] == list(range(1, 144))  # merges 1 to 143
    # the line draws every step (start, then + 1); its hover targets, one per target width
    assert drawn(growth) == [144]
    sizes = [y for _, y, _ in points(growth)]
    assert len(sizes) == charts_module._line_targets(plot_width(growth)) < 144
    assert sizes[0] == 257 and sizes[-1] == 400 and sizes == sorted(set(sizes))
    for written in (ticks(counts, "x"), ticks(growth, "y")):  # merge numbers, vocab sizes
        assert written and all(t.replace(",", "").isdigit() for t in written), written
    assert len(at.table) == 1
    assert at.session_state["train.done"]
    active = at.session_state["ui.active"]
    assert active and active.startswith("BPE 400")
    assert {"encoder.json", "vocab.bpe"} <= set(downloads(at))  # the other formats core writes


def synthetic_corpus(n_words: int = 300_000) -> bytes:
    """~2 MB of pseudo-random words: many distinct pre-tokens, so training takes seconds."""
    rng = random.Random(0)
    letters = "etaoinshrdlucmfwypvbgk"
    words = ("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(n_words))
    return " ".join(words).encode()


def test_pause_then_stop_keeps_a_partial_tokenizer():
    at = upload(page(), [("random.txt", synthetic_corpus())])
    at.number_input[0].set_value(20_000).run()
    at.radio(key="_w.train.speed").set_value("5 merges/s").run()  # hours: certainly running
    start_button(at).click().run()
    # subtle: the manager is shared by every AppTest in this process (st.cache_resource), so
    # another test's training may hold a slot and this job waits in the queue for a moment
    run_until(at, lambda a: shown_merges(a) >= 1)
    shown = shown_merges(at)
    at.button(key="train.pause").click().run()
    assert at.button(key="train.resume")  # the page offers Resume at once
    assert start_button(at).disabled  # one training per session at a time
    assert shown_merges(at) == shown  # held at the count shown at the click
    at.button(key="train.stop").click().run()
    run_until(at, lambda a: "merges.pkl" in downloads(a))
    assert f"Stopped by request at merge {shown:,} " in texts(at.info)
    assert next(m.value for m in stats(at) if m.label == "Merges") == f"{shown:,}"


def shown_merges(at: AppTest) -> int:
    """The merge count the progress line shows ("Merges N / T"), -1 before merging."""
    for box in at.number_input:
        m = re.search(r"Merges ([\d,]+) / ", box.label)
        if m:
            assert box.value == int(m[1].replace(",", ""))  # the count a click sends back
            return box.value
    return -1


def test_training_survives_a_visit_to_another_page():
    at = AppTest.from_file(str(Path(PAGE).parent.parent / "app.py"), default_timeout=60)
    at.run()
    at.switch_page(site.page("Train").script).run()
    assert not at.exception, at.exception
    at.number_input[0].set_value(3000).run()
    start_button(at).click().run()
    job = at.session_state["train.job"]
    at.switch_page(site.page("Decode").script).run()  # another page while it trains
    assert not at.exception, at.exception
    at.switch_page(site.page("Train").script).run()
    assert at.session_state["train.job"] == job
    assert at.number_input[0].value == 3000  # settings survive navigation too
    run_until(at, lambda a: "merges.pkl" in downloads(a))
    assert any(m.label == "Merges" and m.value == f"{3000 - 257:,}" for m in stats(at))


def test_upload_size_limit_has_a_clear_message(monkeypatch):
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "1")
    at = upload(page(), [("small.txt", b"fits " * 1000), ("big.txt", b"x " * 600_000)])
    error = texts(at.error)
    assert "big.txt" in error and "limit of 1.0 MB" in error and "TOKPLAY_MAX_UPLOAD_MB" in error
    assert "small.txt" in texts(at.markdown)
    assert not start_button(at).disabled  # the file that fits is still usable


# ---- corpora where they live: a server corpus (TOKPLAY_CORPUS_DIRS), a Hugging Face file ----


@pytest.fixture
def corpus_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder this server lists, holding one corpus (and a file outside it, never listed)."""
    from ui import corpus_dirs

    folder = tmp_path / "corpora"
    (folder / "books").mkdir(parents=True)
    (folder / "books" / "stories.txt").write_bytes(synthetic_corpus(20_000))
    (tmp_path / "outside.txt").write_text("never listed")
    monkeypatch.setenv("TOKPLAY_CORPUS_DIRS", str(folder))
    corpus_dirs._scan.clear()
    return folder


def test_server_corpora_are_offered_only_when_the_server_lists_folders(corpus_dir, monkeypatch):
    at = page()
    assert at.radio[0].options == ["Built-in corpus", "Upload text files", "Server corpus",
                                   "Hugging Face dataset"]
    at.radio[0].set_value("Server corpus").run()
    box = at.selectbox(key="_w.train.server_corpus")
    assert box.options == ["books/stories.txt · 129.8 KB"] and box.value == "books/stories.txt"
    assert not start_button(at).disabled
    monkeypatch.delenv("TOKPLAY_CORPUS_DIRS")
    at = page()
    assert at.radio[0].options == ["Built-in corpus", "Upload text files", "Hugging Face dataset"]


@pytest.mark.parametrize(("value", "why"), [
    ("/etc/passwd", "links name a corpus as the list shows it, never by a path"),
    ("../outside.txt", "links name a corpus as the list shows it, never by a path"),
    ("books/missing.txt", "no corpus of that name in its list"),
])
def test_a_link_naming_a_path_or_an_unlisted_corpus_gets_one_line(corpus_dir, value, why):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["corpus"] = value
    at.run()
    assert not at.exception, at.exception
    assert texts(at.warning) == (f"Link problem: The link's corpus `{value}` is not available "
                                 f"on this server: {why}.")
    assert at.radio[0].value == "Built-in corpus"  # nothing was opened


def test_a_listed_corpus_from_a_link_trains_where_it_lies(corpus_dir):
    from core.train import train_bpe

    path = corpus_dir / "books" / "stories.txt"
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["corpus"] = "books/stories.txt"
    at.run()
    assert not at.exception and not at.warning, (at.exception, texts(at.warning))
    assert at.radio[0].value == "Server corpus"
    assert at.selectbox(key="_w.train.server_corpus").value == "books/stories.txt"
    assert any("corpus=books%2Fstories.txt" in t for t in copied(at))  # the link names it
    at.number_input[0].set_value(300).run()
    start_button(at).click().run()
    run_until(at, lambda a: "merges.pkl" in downloads(a))
    tok = at.session_state["ui.tokenizers"][at.session_state["ui.active"]]["tok"]
    assert tok.merges == train_bpe(str(path), 300, ["<|endoftext|>"])[1]
    assert at.session_state["ui.active"] == "BPE 300 · books/stories.txt"
    assert path.read_bytes() == synthetic_corpus(20_000)  # trained in place, left in place


def test_a_binary_server_corpus_is_one_line_and_cannot_start(corpus_dir):
    from ui import corpus_dirs

    (corpus_dir / "image.txt").write_bytes(b"GIF89a\x00\x01\x02")
    corpus_dirs._scan.clear()
    at = page()
    at.radio[0].set_value("Server corpus").run()
    at.selectbox(key="_w.train.server_corpus").set_value("image.txt").run()
    assert texts(at.error) == ("image.txt looks like a binary file, not text: a NUL byte at "
                               "byte offset 6. Pick a plain UTF-8 text file.")
    assert start_button(at).disabled


@pytest.mark.parametrize(("dataset", "file", "error"), [
    ("roneneldan/TinyStories", "", "Name the file of 'roneneldan/TinyStories' to train on"),
    ("hf://models/org/name/a.txt", "", "'hf://models/org/name/a.txt' is not a Hub dataset"),
    ("not a repo", "a.txt", "is not a Hub dataset"),
])
def test_a_hub_dataset_that_names_no_file_is_one_line(dataset, file, error):
    at = page()
    at.radio[0].set_value("Hugging Face dataset").run()
    at.text_input(key="_w.train.hf_dataset").set_value(dataset).run()
    at.text_input(key="_w.train.hf_file").set_value(file).run()
    assert error in texts(at.error) and "\n" not in texts(at.error)
    assert start_button(at).disabled


def test_a_hub_dataset_file_is_ready_to_start():
    at = page()
    at.radio[0].set_value("Hugging Face dataset").run()
    at.text_input(key="_w.train.hf_dataset").set_value("roneneldan/TinyStories").run()
    at.text_input(key="_w.train.hf_file").set_value("TinyStoriesV2-GPT4-valid.txt").run()
    assert not at.error and not start_button(at).disabled
    assert "Downloaded into this server's Hugging Face cache" in texts(at.caption)


def _status(snap_kwargs: dict) -> AppTest:
    """The progress line the live view draws for a snapshot."""
    def script(kwargs: dict) -> None:
        from training.inpage import InPageTrainingManager
        from training.snapshot import JobSnapshot
        from ui.train_live import draw_status

        snap = JobSnapshot("j", vocab_size=300, special_tokens=("<|endoftext|>",),
                           pattern="gpt2", corpus_name="x", rows=(), vocab=None, merges=None,
                           stop_reason=None, messages=(), error=None, queue_position=None,
                           **kwargs)
        draw_status(snap, InPageTrainingManager())

    at = AppTest.from_function(script, args=(snap_kwargs,))
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_progress_line_says_what_is_downloaded_then_counted():
    at = _status({"status": "downloading", "corpus_bytes": 0, "count_progress": None,
                  "download": (5_000_000, 20_000_000)})
    assert at.number_input[0].label.startswith(
        "Downloading the corpus into the server's Hugging Face cache: 5.0 MB of 20.0 MB (25%)")
    at = _status({"status": "counting", "corpus_bytes": 2_000_000_000, "count_progress": 0.25,
                  "count_distinct": 91_234})
    assert at.number_input[0].label.startswith(
        "Counting pre-tokens: 500.0 MB of 2.0 GB read (25%) · 91,234 distinct pre-tokens so far")

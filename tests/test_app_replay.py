"""AppTest for the Replay page: the chips at step k are core's encoding with the first k
merges, links reopen a step (bad values give a note), play advances, and tokenizers without
merges get a clear message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streamlit.testing.v1 import AppTest

from core import BPETrainer, Tokenizer
from core.formats.presets import load_preset
from core.explain.replay import encode_with_first_merges
from ui.site import page
from ui.state import SAMPLE_TEXT, fingerprint
from tests.chart_svg import chart, charts, cursor, points
from tests.copy_lines import copied
from tests.stats import stats

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

REPO = Path(__file__).resolve().parent.parent
HOME = str(REPO / "app.py")
REPLAY = page("Replay").script
SPECIAL = "<|endoftext|>"
CORPUS = ("the cat sat on the mat. the dog sat on the log. "
          "tokenizers split text into tokens; the tokens become numbers.\n") * 20
INJECTION = "<img src=x onerror=alert(1)>"
GPT2 = "GPT-2 (gpt2)"


@pytest.fixture(autouse=True)
def library_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_LIBRARY_DIR", str(tmp_path / "library"))


@pytest.fixture(scope="module")
def trained() -> tuple[Tokenizer, list[tuple]]:
    """A tokenizer trained here and its merge rows, as the Train page keeps them."""
    trainer = BPETrainer([CORPUS], 320, [SPECIAL])
    rows = [(e.rank, e.count, e.token, e.pair, e.vocab_size, e.elapsed) for e in trainer]
    return Tokenizer(trainer.vocab, trainer.merges, [SPECIAL], name="replay-test"), rows


def open_replay(params: dict[str, str] | None = None, *tokenizers: tuple[str, Tokenizer, list]
                ) -> AppTest:
    """A fresh session on the Replay page (``tokenizers``: label, tokenizer, training rows;
    the first one active) with ``params`` in its URL."""
    at = AppTest.from_file(HOME, default_timeout=120)
    if tokenizers:
        at.session_state["ui.tokenizers"] = {
            label: {"tok": t, "source": "test", "fingerprint": fingerprint(t),
                    "meta": {"rows": rows} if rows else {}}
            for label, t, rows in tokenizers
        }
        at.session_state["ui.active"] = tokenizers[0][0]
    at.switch_page(REPLAY)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_ids(at: AppTest) -> list[int]:
    """The IDs the page shows: its copy row, and the chips' own IDs (which must agree)."""
    row = next(t for t in copied(at) if not t.startswith(("/", "http")))
    ids = [int(x) for x in row.split(", ")] if row else []
    chips = "\n".join(h.proto.body for h in at.get("html"))
    assert [int(x) for x in re.findall(r'title="ID (\d+) · #', chips)] == ids
    return ids


def step(at: AppTest) -> int:
    return at.slider[0].value


def test_slider_at_k_shows_core_encoding_with_the_first_k_merges(trained) -> None:
    tok, rows = trained
    at = open_replay(None, ("mine", tok, rows))
    assert step(at) == 0
    assert shown_ids(at) == encode_with_first_merges(tok, SAMPLE_TEXT, 0)
    n = len(tok.merges)
    for k in (1, 7, n // 2, n):
        at.slider[0].set_value(k).run()
        assert not at.exception
        assert shown_ids(at) == encode_with_first_merges(tok, SAMPLE_TEXT, k), k
        assert any(m.label == "Vocab size" and m.value == f"{257 + k:,}" for m in stats(at))
    assert shown_ids(at) == tok.encode(SAMPLE_TEXT)
    # the training charts, with the cursor (a vertical line) at step n: merge n, its count
    assert list(charts(at)) == ["rep.chart.counts", "rep.chart.growth"]
    counts, growth = chart(at, "rep.chart.counts"), chart(at, "rep.chart.growth")
    assert [(x, y) for x, y, _ in points(counts)] == [(r[0] + 1, r[1]) for r in rows]
    assert cursor(counts) == (n, rows[-1][1], f"step {n:,}\ncount {rows[-1][1]:,}")
    assert cursor(growth)[:2] == pytest.approx((rows[-1][5], 257 + n), rel=1e-5)  # seconds, size
    at.slider[0].set_value(0).run()
    assert cursor(chart(at, "rep.chart.counts")) is None  # step 0: no merge yet
    assert cursor(chart(at, "rep.chart.growth"))[:2] == (0, 257)
    assert "red mark is step k" in " ".join(c.value for c in at.caption)


def test_gpt2_link_reopens_a_step_with_its_merge(tmp_path) -> None:
    tok = load_preset("gpt2")
    at = open_replay({"tok": "gpt2", "k": "300", "text": "the unbelievable " + INJECTION})
    assert step(at) == 300
    text = "the unbelievable " + INJECTION
    assert shown_ids(at) == encode_with_first_merges(tok, text, 300)
    html = "\n".join(h.proto.body for h in at.get("html")
                     if not h.proto.body.startswith('<div class="tp-chart"'))  # (an <img>)
    assert "Merge 300 adds" in html and "(ID 555)" in html
    assert "<img" not in html and ">&lt;<sub>" in html  # the text is escaped in the chips
    link = next(t for t in copied(at) if t.startswith("/"))
    assert "k=300" in link and link.startswith("/Replay?")
    # no training here: the length of each merge's token, the cursor at merge 300
    assert list(charts(at)) == ["rep.chart.lengths"]
    lengths = chart(at, "rep.chart.lengths")
    assert cursor(lengths) == (300, len(tok.vocab[555]), f"step 300\n{len(tok.vocab[555])} bytes")
    assert points(lengths)[0][:2] == (1, 2)  # merge 1 ("Ġt") makes a 2-byte token


def test_home_quick_start_tokenizer_shows_its_training(tmp_path) -> None:
    # Issue 27: Home's one-click tokenizer is trained in the session, so Replay draws its
    # training (pair counts and growth), not "was not recorded in this session".
    at = AppTest.from_file(HOME, default_timeout=120)
    at.run()
    at.button[0].click().run()  # ⚡ Train on the built-in corpus and tokenize
    assert not at.exception, [e.value for e in at.exception]
    label = at.session_state["ui.active"]
    tok = at.session_state["ui.tokenizers"][label]["tok"]
    at.switch_page(REPLAY).run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "not recorded" not in captions
    assert "This session's training" in captions
    assert list(charts(at)) == ["rep.chart.counts", "rep.chart.growth"]
    rows = at.session_state["ui.tokenizers"][label]["meta"]["rows"]
    assert [r[3] for r in rows] == tok.merges  # the rows are this tokenizer's merges
    assert [r[4] for r in rows] == list(range(len(tok.vocab) - len(rows) + 1, len(tok.vocab) + 1))

    # a reload (a new session with the same ws=): the training comes back with it
    ws = at.query_params["ws"]
    reloaded = AppTest.from_file(str(REPO / REPLAY), default_timeout=120)
    reloaded.query_params["ws"] = ws[0] if isinstance(ws, list) else ws
    reloaded.run()
    assert not reloaded.exception, [e.value for e in reloaded.exception]
    assert reloaded.session_state["ui.tokenizers"][label]["meta"]["rows"] == rows
    assert list(charts(reloaded)) == ["rep.chart.counts", "rep.chart.growth"]


@pytest.mark.parametrize(("value", "note"), [
    ("99999999", "past this tokenizer's last step"),
    ("abc", "is not a number of merges"),
    ("-3", "is not a number of merges"),
])
def test_bad_step_in_a_link_gives_a_note_not_an_error(trained, value, note) -> None:
    tok, rows = trained
    at = open_replay({"tok": "mine", "k": value}, ("mine", tok, rows))
    warnings = " ".join(w.value for w in at.warning)
    assert note in warnings, warnings
    n = len(tok.merges)
    assert step(at) == (n if value.isdigit() else 0)
    assert shown_ids(at) == encode_with_first_merges(tok, SAMPLE_TEXT, step(at))


def test_tokenizers_without_merges_get_a_clear_message() -> None:
    bare = Tokenizer({i: bytes([i]) for i in range(256)}, [], name="bytes only")
    at = open_replay(None, ("bytes only", bare, []))
    assert any("no merges" in i.value for i in at.info)
    assert not at.slider
    at = open_replay({"tok": "Word-level baseline"})
    assert any("no merge order" in i.value for i in at.info)
    assert not at.slider


def test_play_advances_to_the_next_step_that_changes_the_text_and_pause_stops(trained) -> None:
    tok, rows = trained
    at = open_replay(None, ("mine", tok, rows))
    at.button(key="rep.play").click().run()
    assert not at.exception
    first = step(at)
    assert first > 0
    ids = shown_ids(at)
    assert ids == encode_with_first_merges(tok, SAMPLE_TEXT, first)
    assert ids != encode_with_first_merges(tok, SAMPLE_TEXT, first - 1)  # it changed the text
    assert at.button(key="rep.play").label == "⏸ Pause"
    at.button(key="rep.play").click().run()
    assert at.button(key="rep.play").label == "▶ Play"
    paused = step(at)
    at.run()
    assert step(at) == paused  # no ticks while paused
    at.button(key="rep.next").click().run()
    assert step(at) > paused
    at.button(key="rep.back").click().run()
    assert step(at) == paused


def test_long_sample_text_is_cut_with_a_message(trained) -> None:
    tok, rows = trained
    at = open_replay(None, ("mine", tok, rows))
    at.text_area[0].set_value("ab " * 3000).run()
    assert not at.exception
    assert any("Replay shows the first 5,000" in w.value for w in at.warning)
    assert shown_ids(at) == encode_with_first_merges(tok, ("ab " * 3000)[:5000], 0)

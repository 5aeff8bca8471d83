"""The Evaluate page without a browser (AppTest): a link's tokenizers and texts, bad ones
named in a note, an upload kept for the link, and the table equal to core's numbers."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from core.explain.evaluate import evaluate, parallel_texts
from core.formats.presets import load_preset
from tests.chart_svg import bars, chart, charts, picture, points, ticks
from tests.copy_lines import copied
from tests.html_tables import tables
from ui.evaluate import UNUSED_LISTED

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "7_Evaluate.py")


@pytest.fixture(autouse=True)
def library_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "library"
    monkeypatch.setenv("TOKPLAY_LIBRARY_DIR", str(path))
    monkeypatch.delenv("TOKPLAY_PUBLIC_URL", raising=False)
    return path


def open_page(params: dict[str, str | list[str]]) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _table(at: AppTest) -> list[dict]:
    return tables(at)[0]


def test_a_link_opens_its_tokenizers_and_texts_with_cores_numbers(tiktoken_cache):
    at = open_page({"tok": ["gpt2", "o200k_base"], "src": ["lang:fr", "builtin"]})
    rows = _table(at)
    assert [(r["tokenizer"], r["text"]) for r in rows] == [
        ("GPT-2 (gpt2)", "🌐 French (parallel set)"), ("GPT-4o (o200k_base)", "🌐 French (parallel set)"),
        ("GPT-2 (gpt2)", "🐍 Built-in corpus (Python docstrings)"),
        ("GPT-4o (o200k_base)", "🐍 Built-in corpus (Python docstrings)")]
    french = evaluate(load_preset("o200k_base"), [parallel_texts()["fr"][1]]).stats
    assert (rows[1]["tokens"], rows[1]["bytes"], rows[1]["words"]) == (
        french.tokens, french.bytes, french.words)
    assert at.query_params["src"] == ["lang:fr", "builtin"]


def test_bad_texts_in_a_link_are_named_and_the_others_shown():
    at = open_page({"tok": "gpt2", "src": ["lang:xx", "lang:de", "file:0000000000000000:a.txt"]})
    notes = "\n".join(w.value for w in at.warning)
    assert "`lang:xx`" in notes and "`a.txt`" in notes and "Showing the others" in notes
    assert [r["text"] for r in _table(at)] == ["🌐 German (parallel set)"]


def test_an_upload_is_kept_and_a_link_brings_it_back(tiktoken_cache):
    text = "An uploaded text, kept for the link. " * 20
    # AppTest cannot drive a file uploader: a script calls what the page calls with its bytes
    helper = AppTest.from_string(
        "import streamlit as st\nfrom ui import eval_sources\n"
        "st.session_state['sid'] = eval_sources.add_upload('my notes.txt', "
        f"{text.encode()!r})\n", default_timeout=60)
    helper.run()
    sid = helper.session_state["sid"]
    assert sid.startswith("file:") and sid.endswith(":my notes.txt")
    opened = open_page({"tok": "gpt2", "src": [sid]})  # a new session: the link alone
    rows = _table(opened)
    assert [r["text"] for r in rows] == ["📄 my notes.txt (740 B)"]
    assert rows[0]["tokens"] == evaluate(load_preset("gpt2"), [text]).stats.tokens
    link = next(t for t in copied(opened) if "?" in t)
    assert parse_qs(urlsplit(link).query)["src"] == [sid]


def test_a_binary_upload_is_refused_with_its_offset():
    from core.errors import CorpusError
    from ui import eval_sources

    with pytest.raises(CorpusError, match="byte offset 0"):
        eval_sources.add_upload("img.png", b"\x89PNG\r\n")


def test_the_focus_pair_is_in_the_link_and_checked(tiktoken_cache):
    at = open_page({"tok": ["gpt2", "cl100k_base"], "src": ["lang:en", "lang:ko"], "focus": "1.1"})
    assert at.selectbox[0].value == "1.1"
    tok = load_preset("cl100k_base")
    korean = parallel_texts()["ko"][1]
    top = next(t for t in tables(at) if "share" in t[0])[0]
    expected = evaluate(tok, [korean]).usage
    assert top["count"] == max(expected.values())
    assert at.query_params["focus"] == "1.1"  # the address bar names the focus
    at.selectbox[0].set_value("0.0").run()
    assert "focus" not in at.query_params  # back to the default: left out
    bad = open_page({"tok": "gpt2", "src": "lang:en", "focus": "x"})
    assert "is not two numbers" in "\n".join(w.value for w in bad.warning)
    far = open_page({"tok": "gpt2", "src": "lang:en", "focus": "5.7"})
    assert far.selectbox[0].value == "0.0"


def test_a_file_name_is_shown_literally_in_charts_and_notes(tiktoken_cache):
    helper = AppTest.from_string(
        "import streamlit as st\nfrom ui import eval_sources\n"
        "st.session_state['sid'] = eval_sources.add_upload('<b>bold</b> **x**.txt', b'plain words')\n",
        default_timeout=60)
    helper.run()
    at = open_page({"tok": "gpt2", "src": [helper.session_state["sid"]]})
    assert list(charts(at)) == ["eva.chart.bytes", "eva.chart.curve", "eva.chart.parity"]
    name = "📄 <b>bold</b> **x**.txt (11 B)"
    (bar,) = bars(chart(at, "eva.chart.bytes"))  # one tokenizer, one text
    row = _table(at)[0]
    assert bar[:3] == ("GPT-2 (gpt2)", name, row["bytes / token"])  # the text, as typed
    assert bar[3] == f"GPT-2 (gpt2)\n{name}\n{row['bytes / token']:.3f} bytes per token"
    assert ticks(chart(at, "eva.chart.bytes"), "x") == [name]
    curve = chart(at, "eva.chart.curve")  # GPT-2's curve on it, and its diamond
    assert points(curve)[-1][:2] == (50257, row["bytes / token"])
    assert points(curve)[-1][2].startswith(f"GPT-2 (gpt2) · {name} (whole)")
    for element in charts(at).values():  # (markup in a name would have been an element)
        assert not [e for e in picture(element).iter() if e.tag in ("b", "i", "img", "script")]
        assert not [e for e in element.iter() if e.tag in ("b", "i") and "data-x" not in e.attrib]
        assert [e.tag for e in element.iter() if e.tag in ("img", "script")] == ["img"]
    gone = open_page({"tok": "gpt2", "src": ["file:0123456789abcdef:<i>y</i>.txt"]})
    note = "\n".join(w.value for w in gone.warning)
    assert "`<i>y</i>.txt`" in note  # a code span: shown literally


def test_a_new_text_redraws_what_is_kept_between_reruns(tiktoken_cache):
    """The curve chart and the unused tokens are kept between reruns, by tokenizer and text
    content: typing another text changes both, to core's numbers for it."""
    from core.explain.evaluate import unused_tokens

    gpt2 = load_preset("gpt2")
    seen = []
    for text in ("hello hello world", "completely different words, a longer sentence here"):
        at = open_page({"tok": "gpt2", "src": "typed", "text": text})
        unused = unused_tokens(gpt2, evaluate(gpt2, [text]).usage)
        assert any(m.value.startswith(f"**Unused**: {len(unused):,} of 50,257")
                   for m in at.markdown)
        assert [int(r["ID"]) for r in tables(at)[-1]] == unused[:UNUSED_LISTED]
        assert any(c.value == f"The first {UNUSED_LISTED:,} by ID." for c in at.caption)
        curve = points(chart(at, "eva.chart.curve"))
        stats = evaluate(gpt2, [text]).stats
        assert curve[-1][:2] == (50257, pytest.approx(stats.bytes_per_token, rel=1e-5))
        seen.append((len(unused), curve))
    assert seen[0] != seen[1]

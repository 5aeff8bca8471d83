"""The pure helpers of benchmarks/load_protocol.py and benchmarks/load/ (no server, no
websocket)."""

from __future__ import annotations

import doctest
import importlib.util
import random
import sys
import urllib.parse
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "load_protocol.py"
_spec = importlib.util.spec_from_file_location("load_protocol", _PATH)
assert _spec is not None and _spec.loader is not None
lp = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("load_protocol", lp)  # dataclasses look their module up there
_spec.loader.exec_module(lp)


def test_doctests() -> None:
    result = doctest.testmod(lp)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("part", ["client", "reruns", "report", "runner"])
def test_doctests_of_the_parts(part: str) -> None:
    module = sys.modules[f"benchmarks.load.{part}"]  # imported by load_protocol.py
    result = doctest.testmod(module)
    assert result.failed == 0


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert lp.percentile(values, 50) == 50.0
    assert lp.percentile(values, 95) == 95.0
    assert lp.percentile(values, 100) == 100.0
    assert lp.percentile([7.0], 95) == 7.0
    assert lp.percentile(list(reversed(values)), 50) == 50.0
    assert lp.percentile([], 50) != lp.percentile([], 50)  # nan


def test_parse_counts_and_pages() -> None:
    assert lp.parse_counts("1,5, 10,20,5") == [1, 5, 10, 20]
    assert lp.parse_counts("0,2") == [0, 2]
    with pytest.raises(ValueError):
        lp.parse_counts("")
    with pytest.raises(ValueError):
        lp.parse_counts("-1")
    assert lp.parse_pages("tokenize,Decode,COMPARE") == ["Tokenize", "Decode", "Compare"]
    with pytest.raises(ValueError):
        lp.parse_pages("Train")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8501", "http://localhost:9/",
                                 "http://[::1]:8501"])
def test_loopback_accepted(url: str) -> None:
    http, ws = lp.loopback_urls(url)
    assert ws.startswith("ws://") and ws.endswith("/_stcore/stream")
    assert not http.endswith("/")


@pytest.mark.parametrize("url", ["http://10.0.0.5:8501", "http://example.com",
                                 "http://127.0.0.1.example.com:80", "ftp://127.0.0.1/",
                                 "http://localhost@evil.example:80"])
def test_loopback_refused(url: str) -> None:
    with pytest.raises(ValueError):
        lp.loopback_urls(url)


def test_texts_fresh_and_exact() -> None:
    seen = set()
    for session in range(20):
        for iteration in range(50):
            for n in (1, 60, 100):
                text = lp.make_text(n, session, iteration)
                assert len(text) == n and text.isascii()
            seen.add(lp.make_text(60, session, iteration))
    assert len(seen) == 20 * 50  # every rerun a new text: no cache hit on the server


def test_page_requests_round_trip() -> None:
    rng = random.Random(3)
    tok = lp.page_request("Tokenize", 100, 4, 9, rng)
    params = urllib.parse.parse_qs(tok.query)
    assert params["tok"] == ["gpt2"] and len(params["text"][0]) == 100
    assert dict(tok.metrics) == {"Characters": "100"} and "Tokens" in tok.need_metrics
    dec = lp.page_request("Decode", 60, 0, 1, rng)
    ids = urllib.parse.parse_qs(dec.query)["ids"][0].split(", ")
    assert len(ids) == 15 and all(0 <= int(i) <= lp.GPT2_MAX_ID for i in ids)
    assert dict(dec.metrics) == {"IDs": "15"}
    cmp = lp.page_request("Compare", 60, 0, 1, rng)
    assert urllib.parse.parse_qs(cmp.query)["tok"] == ["gpt2", "cl100k_base"] and cmp.need_table
    with pytest.raises(ValueError):
        lp.page_request("Train", 60, 0, 0, rng)


def test_content_problems() -> None:
    req = lp.Request("q", metrics=(("Characters", "1,000"),), need_metrics=("Tokens",),
                     need_table=True)
    assert lp.content_problems(req, {"Characters": "1,000", "Tokens": "3"}, {"dataframe"}) == []
    problems = lp.content_problems(req, {"Characters": "999"}, {"markdown"})
    assert len(problems) == 3


def test_format_table() -> None:
    cells = [lp.Cell("Tokenize", 0, 1, [100.0, 200.0, 300.0], 0, 3.0, 4.0, 90.0),
             lp.Cell("Decode", 2, 20, [], 5, 10.0)]
    lines = lp.format_table(cells).splitlines()
    assert lines[0].startswith("| page | trainings | sessions | reruns/s | p50 ms | p95 ms | errors")
    assert lines[2] == "| Tokenize | 0 | 1 | 1.0 | 200 | 300 | 0 | 3 | 4 | 90 | 900.0 |"
    assert lines[3] == "| Decode | 2 | 20 | 0.0 | - | - | 5 | 0 | - | - | - |"
    assert all(line.count("|") == lines[0].count("|") for line in lines)


def test_the_client_reads_trains_progress_line_and_a_bare_bar_keeps_it() -> None:
    # ui.train_live draws the line as a number widget's label, then a bar without text: the
    # load test waits on that line ("Counting pre-tokens", "Merges") before it measures
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from benchmarks.load.client import Session

    session = Session("ws://127.0.0.1:1/_stcore/stream", "Train", "t")
    line, bar = ForwardMsg(), ForwardMsg()
    line.delta.new_element.number_input.label = "Counting pre-tokens: 1.0 GB of 2.0 GB read (51%)"
    bar.delta.new_element.progress.value = 5
    for msg in (line, bar):
        session._handle(msg, 0)
    assert session.progress_text == "Counting pre-tokens: 1.0 GB of 2.0 GB read (51%)"
    assert not any(label.startswith("Counting") for label in session.widgets)  # not a widget to set

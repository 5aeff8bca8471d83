"""What a Tokenize rerun costs Streamlit alone: the floor under issue 36's team-load goal (20
sessions rerunning Tokenize by link, p95 ≤ 300 ms, one server process).

    .venv/bin/python benchmarks/rerun_floor.py [--seconds 15] [--sessions 1,20]

A throwaway Streamlit app whose ``Tokenize`` page draws the same elements as ours, in the
same containers, with the same ``.streamlit/config.toml`` (a sidebar with the page menu, the active tokenizer's three lines and two
closed expanders; the title, the picker row, the mode radio, the text box, the figures, the
chips, two copy rows and three lazy tabs), with constant HTML and no code of ours: no
tokenizer, no cache, no session state of ours. It reads the link's text only to count its
characters, as the load client checks. Both apps are then loaded exactly as ``bench_app.py
--parts load`` loads ours (``benchmarks/load``: closed loop, fresh text per rerun), back to
back, and the table shows both.

What it showed (2 cores, Streamlit 1.67): see docs/scaling.md ("Where a rerun goes").
"""

from __future__ import annotations

import argparse
import html
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: only benchmarks/ is on the path
    sys.path.insert(0, str(REPO))

from benchmarks.bench_app import load_cells  # noqa: E402
from benchmarks.load.report import fmt, percentile  # noqa: E402

#: The page: the elements ours sends per rerun (``benchmarks/load`` counts them: 36 deltas),
#: with fixed HTML of about the same sizes (menu, chips, copy rows, figures).
PAGE = '''
import html
import streamlit as st

CHIPS = "".join(f'<span class="c" title="ID {i}">tok<sub>{i}</sub></span>' for i in range(40))
ROW = '<div class="tp-copy-row"><span>label</span><code>{}</code><button>copy</button></div>'
MENU = "<nav>" + "".join(f'<a href="./p{i}">Page {i}</a>' for i in range(8)) + "</nav>"


def figures(text):
    cells = "".join(
        f'<div class="tp-stat"><div class="tp-stat-label">{k}</div>'
        f'<div class="tp-stat-value">{v}</div></div>'
        for k, v in (("Tokens", f"{len(text.split()):,}"), ("Characters", f"{len(text):,}"),
                     ("Bytes (UTF-8)", f"{len(text.encode()):,}"), ("Characters per token", "4.00")))
    return f'<div class="tp-stats">{cells}</div>'


text = st.query_params.get("text", "hello world")
with st.sidebar:
    st.html(MENU)
    st.divider()
    with st.container():
        st.markdown("**Active tokenizer**")
        st.markdown("`GPT-2 (gpt2)`")
        st.caption("OpenAI preset gpt2 (tiktoken's files)")
    st.expander("Load tokenizer files", icon="📂", key="loader", on_change="rerun")
    st.expander("Open a Hugging Face model", icon="🤗", key="hub", on_change="rerun")
st.title("🔤 Tokenize")
st.caption("Type text and see how a tokenizer cuts it.")
top = st.columns([2, 1, 1, 1], vertical_alignment="bottom")
top[0].selectbox("Tokenizer", ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)"], key="tok")
top[1].toggle("IDs inline", True, key="ids")
top[2].toggle("File spelling", False, key="spelling")
top[3].caption("OpenAI preset gpt2 (tiktoken's files)")
st.text_input("...or any Hugging Face model", key="hub_id")
st.radio("Mode", ["Plain text", "Chat"], horizontal=True, key="mode")
with st.container():
    st.html(ROW.format(html.escape("/Tokenize?tok=gpt2&text=" + text)))
st.text_area("Text", text, key="text")
st.html('<span class="live"></span>')
st.html(figures(text))
st.html(f'<div class="tp-chips">{CHIPS}</div>')
st.html(ROW.format("15496, 995, " * 10))
pre, why, export = st.tabs(["Pre-tokens", "Why this split", "Export"], key="tabs",
                           on_change="rerun")
if pre.open:
    with pre:
        st.caption("2 pre-tokens")
        st.html(f'<div class="tp-chips">{CHIPS[:400]}</div>')
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15, help="per load cell")
    parser.add_argument("--sessions", default="1,20", help="sessions per cell, comma-separated")
    args = parser.parse_args()
    sessions = [int(n) for n in args.sessions.split(",")]
    with tempfile.TemporaryDirectory(prefix="tokplay-rerun-floor-") as tmp:
        floor = Path(tmp)
        (floor / "app.py").write_text('import streamlit as st\n\nst.title("Home")\n',
                                      encoding="utf-8")
        (floor / "pages").mkdir()
        (floor / "pages" / "2_Tokenize.py").write_text(PAGE, encoding="utf-8")
        # the same server settings (no garbage collection after each run, the theme, ...)
        (floor / ".streamlit").mkdir()
        config = (REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8")
        (floor / ".streamlit" / "config.toml").write_text(config, encoding="utf-8")
        rows = [("Streamlit alone (same elements)", load_cells(floor, sessions, args.seconds)),
                ("the playground", load_cells(REPO, sessions, args.seconds))]
    print("\n| app | sessions | reruns/s | p50 | p95 | CPU per rerun | errors |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for name, cells in rows:
        for c in cells:
            p50, p95 = (fmt(percentile(c.latencies_ms, q), ",.0f") for q in (50, 95))
            print(f"| {html.escape(name)} | {c.sessions} | {c.rate:.1f} | {p50} ms | {p95} ms | "
                  f"{fmt(c.cpu_ms_per_rerun, '.1f')} ms | {c.errors} |")


if __name__ == "__main__":
    main()

"""What Streamlit's own widgets cost a new visitor, with no code of ours: the floor under
issue 36's first-view goal (every page within 1.3x of a bare Streamlit page).

    .venv/bin/python benchmarks/first_view_floor.py [--visits 7]

A throwaway Streamlit app whose pages each hold one kind of widget (or a row of them as one
of our pages has), with constant values and no computation, measured exactly as
``benchmarks/bench_app.py --parts first`` measures our pages: a fresh browser context, until
the title is drawn and no script run, running indicator or skeleton is left; the median of
``--visits`` rounds, beside the bare page (a title alone) in the same rounds.

What it showed (2 cores, Streamlit 1.67, two runs): one select box alone costs 1.22-1.25x a
bare page, a multiselect 1.21-1.24x, a text area or a slider 1.2x; the widget set of our
Replay page (two select boxes, a segmented control, a text area, three buttons, a slider, a
block of HTML) 1.44x, where the Replay page itself measured 1.54x; a data grid
(``st.dataframe``, even of 200 rows) about 1.4x, where a number input alone is 1.18x (what
made Vocabulary's list an HTML table). The browser fetches each kind of widget's script the
first time a page draws one (a select box brings about 0.15 MB in twenty files), then renders
each element: the first view of a page is bounded below by the kinds of widget it shows,
whatever the server does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: only benchmarks/ is on the path
    sys.path.insert(0, str(REPO))

from benchmarks.bench_app import BARE_APP, BROWSER_ARGS, CHROMIUM, _server, first_view_ms  # noqa: E402

#: Page file name -> its script (after ``import streamlit as st``): one kind of widget each,
#: then the widgets of our Replay page together (values constant, nothing computed).
PAGES = {
    "selectbox": 'st.selectbox("Tokenizer", ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)"])',
    "multiselect": 'st.multiselect("Tokenizers", ["a", "b", "c"], ["a", "b"])',
    "text_area": 'st.text_area("Text", "Tokenizers turn text into numbers.")',
    "slider": 'st.slider("Merges applied (step k)", 0, 50_000, 300)',
    "metrics": 'for c, v in zip(st.columns(4), (1, 22, 333, 4444)):\n    c.metric("n", f"{v:,}")',
    "html": 'st.html("<div>" + " ".join(f"<span title=\'{i}\'>t{i}</span>" for i in range(300))'
            ' + "</div>")',
    "dataframe": 'st.dataframe({"ID": list(range(200)), "token": [f"t{i}" for i in range(200)]}, '
                 'hide_index=True)',
    "replay_widgets": "\n".join([
        'a, b, c = st.columns(3)',
        'a.selectbox("Tokenizer", ["GPT-2 (gpt2)"])',
        'b.selectbox("Stride", ["merges this text uses", "every merge"])',
        'c.segmented_control("Speed", ["slow", "normal", "fast"], default="normal")',
        'st.text_area("Sample text", "Tokenizers turn text into numbers.")',
        'p, q, r, s = st.columns([1, 1, 1, 6])',
        'p.button("Play"); q.button("<"); r.button(">")',
        's.slider("Merges applied (step k)", 0, 50_000, 300)',
        'st.html("<div>" + " ".join(f"<span title=\'{i}\'>t{i}</span>" for i in range(300))'
        ' + "</div>")',
    ]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visits", type=int, default=7, help="rounds (the median is shown)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="tokplay-floor-") as tmp:
        root = Path(tmp)
        (root / "app.py").write_text(BARE_APP, encoding="utf-8")
        (root / "pages").mkdir()
        for name, body in PAGES.items():
            (root / "pages" / f"{name}.py").write_text(
                f'import streamlit as st\n\nst.title("{name}")\n{body}\n', encoding="utf-8")
        times: dict[str, list[float]] = {name: [] for name in ["", *PAGES]}
        with _server(root) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            try:
                for name in times:  # warm: each page's first run, not timed
                    first_view_ms(browser, f"{url}/{name}")
                for _ in range(args.visits):
                    for name in times:
                        times[name].append(first_view_ms(browser, f"{url}/{name}"))
            finally:
                browser.close()
    bare = statistics.median(times[""])
    print(f"\nfirst view of Streamlit's own widgets, no app code; median of {args.visits}\n")
    print("| page | first view | ÷ bare |\n|---|--:|--:|")
    for name, ms in times.items():
        median = statistics.median(ms)
        print(f"| {name or 'bare (a title)'} | {median:,.0f} ms | {median / bare:.2f}x |")


if __name__ == "__main__":
    main()

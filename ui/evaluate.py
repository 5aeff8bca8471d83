"""The Evaluate page's view: how well tokenizers compress texts, by language, by vocab size.

The page (``pages/7_Evaluate.py``) reads the pickers and calls, in order, :func:`texts_picker`,
:func:`results` (which submits one job per tokenizer and text to the server's
:class:`training.evaluation.EvaluationJobs`: a long text runs in a worker process, and while
any runs a fragment polls its progress), then draws with :func:`table`, :func:`parity_view`,
:func:`curve_view` and :func:`tokens_view`. The numbers are core's (:mod:`core.explain.evaluate`);
everything drawn as HTML or markdown is escaped.

Texts are named by IDs that a link carries (``src=``): ``typed`` (the text box, ``text=``),
``builtin`` (the built-in corpus), ``lang:<code>`` (the bundled parallel set) and
``file:<blob>:<name>`` (an upload, kept in the server's workspace store).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

import streamlit as st

from core.errors import PlaygroundError
from core.explain.evaluate import (
    evaluate,
    longest_used,
    parallel_source,
    parity,
    token_bytes,
    top_tokens,
    unused_tokens,
)
from core.interface import TokenizerInterface
from training.evaluation import EvaluationJobs
from ui import cache, charts, display, html_table, keys, limits, runtime, state, widgets
from ui.eval_sources import (
    DEFAULT_SOURCES,
    add_upload,
    parallel,
    source_digest,
    source_label,
    source_text,
    uploads,
)

__all__ = ["DEFAULT_SOURCES", "DEFAULT_TOKENIZERS", "MAX_TOKENIZERS", "bytes_chart", "csv_bytes",
           "curve_view", "jobs", "parity_view", "results", "table", "texts_picker",
           "tokens_view"]

MAX_TOKENIZERS = 6
MAX_TEXTS = 8  # with 6 tokenizers, 48 jobs: within what the server keeps (EvaluationJobs)
DEFAULT_TOKENIZERS = ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)"]
_POLL_SECONDS = 0.5
_CURVE_POINTS = 300
#: Unused tokens listed (by ID; the count says how many there are): a row is DOM to build.
UNUSED_LISTED = 200

# ---------------------------------------------------------------------------------------------
# Texts


@st.cache_resource(max_entries=1, show_spinner=False)
def jobs() -> EvaluationJobs:
    """The server's evaluation jobs (shared: jobs are keyed by content, never by user)."""
    return EvaluationJobs(max_concurrent=limits.max_concurrent_trainings(),
                          in_page=runtime.training_in_page())


def texts_picker() -> list[str]:
    """The uploader and the multiselect of texts; returns the picked source IDs."""
    files = widgets.file_uploader("Add text files (UTF-8)", key="eva.upload", per_file=True,
                                  help=f"Up to {limits.format_bytes(limits.max_upload_bytes())} "
                                       "each (TOKPLAY_MAX_UPLOAD_MB). Long texts are evaluated "
                                       "in the background, with a progress bar.")
    picked = list(state.value(keys.EVA_SOURCES) or [])
    seen: dict[str, str | None] = st.session_state.setdefault(keys.EVA_SEEN_UPLOADS, {})
    for file in files or []:
        if file.file_id in seen:  # checked and kept on an earlier run: not read again
            continue
        seen[file.file_id] = None
        if problem := limits.corpus_file_too_large(file.name, file.size):
            st.warning(display.escaped(problem))  # a file name shown literally
            continue
        try:
            sid = add_upload(file.name, file.getvalue())
        except PlaygroundError as err:
            st.warning(display.escaped(str(err)))
            continue
        seen[file.file_id] = sid
        if sid not in picked:
            picked.append(sid)
    options = ["typed", "builtin", *(f"lang:{c}" for c in parallel()), *uploads()]
    picked = [s for s in picked if s in options][:MAX_TEXTS]
    state.set_value(keys.EVA_SOURCES, picked)
    kwargs = state.bind(keys.EVA_SOURCES, picked)
    st.session_state[kwargs["key"]] = picked
    return list(st.multiselect("Texts", options, format_func=source_label,
                               max_selections=MAX_TEXTS, **kwargs))


# ---------------------------------------------------------------------------------------------
# Running the evaluations


def results(tokenizers: dict[str, TokenizerInterface],
            sources: list[str]) -> dict[tuple[str, str], Any]:
    """One snapshot per (tokenizer label, source ID), submitting what is new. While any job
    runs, a progress bar polls them and reruns the page when the last one ends. A text is
    read only when a job for it starts (an upload's ID names its content already)."""
    out: dict[tuple[str, str], str] = {}
    manager = jobs()
    for sid in sources:
        digest = source_digest(sid)
        if digest is None:
            continue
        for label, tok in tokenizers.items():
            curve = bool(tok.capabilities.replay)
            key = f"{state.tokenizer_key(label)}|{digest}|{int(curve)}"
            manager.submit(key, tok, _reader(sid), name=source_label(sid), curve=curve)
            out[(label, sid)] = key
    snaps = {pair: manager.snapshot(key) for pair, key in out.items()}
    if any(s is not None and s.status in ("queued", "running") for s in snaps.values()):
        st.fragment(_progress, run_every=_POLL_SECONDS)(out)
    return snaps


def _reader(sid: str) -> Callable[[], str]:
    """What reads the text of ``sid`` when its job starts (``""`` if it is gone by then)."""
    return lambda: source_text(sid) or ""


def _progress(keys_by_pair: dict[tuple[str, str], str]) -> None:
    manager = jobs()
    snaps = [manager.snapshot(k) for k in keys_by_pair.values()]
    running = [s for s in snaps if s is not None and s.status in ("queued", "running")]
    if not running:
        st.rerun()  # the whole page: it draws the results and stops this polling
    done = sum(s.done_bytes for s in snaps if s is not None)
    total = sum(s.total_bytes for s in snaps if s is not None) or 1
    st.progress(min(done / total, 1.0),
                text=f"Evaluating in the background: {limits.format_bytes(done)} of "
                     f"{limits.format_bytes(total)} ({len(running)} job(s) left). The page "
                     "stays usable meanwhile.")


def _done(snaps: dict[tuple[str, str], Any]) -> dict[tuple[str, str], Any]:
    for (label, sid), snap in snaps.items():
        if snap is not None and snap.status == "failed":
            st.warning(f"“{display.escaped(label)}” on {display.escaped(source_label(sid))}: "
                       f"{display.escaped(str(snap.error))}")
    return {pair: s.result for pair, s in snaps.items() if s is not None and s.status == "done"}


# ---------------------------------------------------------------------------------------------
# Drawing


def _rows(done: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    rows = []
    for (label, sid), result in done.items():
        s = result.stats
        rows.append({"tokenizer": label, "text": source_label(sid), "bytes": s.bytes,
                     "chars": s.chars, "words": s.words, "tokens": s.tokens,
                     "bytes / token": round(s.bytes_per_token, 3),
                     "chars / token": round(s.chars_per_token, 3),
                     "tokens / word": round(s.tokens_per_word, 3),
                     "exact": "✓" if s.exact else "≈ cut at lines"})
    return rows


def csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    """Rows as a CSV file (UTF-8, a header line from the first row's keys).

    >>> csv_bytes([{"a": 1, "b": "x,y"}]).decode()
    'a,b\\r\\n1,"x,y"\\r\\n'
    """
    if not rows:
        return b""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def table(snaps: dict[tuple[str, str], Any]) -> dict[tuple[str, str], Any]:
    """The numbers table, its chart and CSV download; returns the finished results."""
    done = _done(snaps)
    rows = _rows(done)
    if not rows:
        st.info("Pick at least one tokenizer and one text.")
        return done
    html_table.show(rows)
    st.download_button("⬇️ Table as CSV", csv_bytes(rows), file_name="evaluation.csv",
                       mime="text/csv", key="eva.csv")
    charts.show(bytes_chart(rows))
    if any(r["exact"] != "✓" for r in rows):
        st.caption("≈: this tokenizer's output may depend on the whole text (a SentencePiece "
                   "model's leading space, a custom pattern), and a long text was encoded in "
                   "pieces cut at line breaks: its counts are close, not exact.")
    return done


def bytes_chart(rows: list[dict[str, Any]]) -> str:
    """Bytes per token: a group of bars per text, a bar per tokenizer (the table's rows).

    >>> 'data-x="t" data-y="4.2"' in bytes_chart([{"tokenizer": "a", "text": "t",
    ...                                            "bytes / token": 4.2}])
    True
    """
    texts = list(dict.fromkeys(r["text"] for r in rows))
    bars = []
    for label in dict.fromkeys(r["tokenizer"] for r in rows):
        mine = {r["text"]: r["bytes / token"] for r in rows if r["tokenizer"] == label}
        bars.append(charts.Bars(label, [mine.get(t) for t in texts],
                                [f"{label}\n{t}\n{mine.get(t, 0):.3f} bytes per token"
                                 for t in texts]))
    return charts.bar_chart("eva.chart.bytes", texts, bars, y=charts.Axis("bytes per token"),
                            title="Bytes per token (higher: fewer tokens)")


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def _parallel_counts(tok_key: str, _tok: TokenizerInterface) -> dict[str, int]:
    return {code: evaluate(_tok, [text]).stats.tokens for code, (_, text) in parallel().items()}


def parity_view(tokenizers: dict[str, TokenizerInterface]) -> None:
    """Tokens per language on the parallel set, and each one's parity with English."""
    if not tokenizers:
        return
    rows: list[dict[str, Any]] = []
    bars = []
    languages = {code: name for code, (name, _) in parallel().items()}
    for label, tok in tokenizers.items():
        counts = _parallel_counts(state.tokenizer_key(label), tok)
        ratios = parity(counts)
        bars.append(charts.Bars(
            label, [round(ratios[c], 3) if c in counts else None for c in languages],
            [f"{label}\n{name}\n{counts.get(c, 0):,} tokens, {ratios.get(c, 0):.2f}× English"
             for c, name in languages.items()]))
        for code, n in counts.items():
            rows.append({"tokenizer": label, "language": parallel()[code][0], "tokens": n,
                         "parity vs English": round(ratios[code], 3)})
    charts.show(charts.bar_chart(
        "eva.chart.parity", list(languages.values()), bars, line_at=1.0,
        y=charts.Axis("tokens relative to English"),
        title="Tokens for the same text, relative to English"))
    with st.expander("Parity table"):
        html_table.show(rows)
        st.download_button("⬇️ Parity as CSV", csv_bytes(rows), file_name="parity.csv",
                           mime="text/csv", key="eva.parity.csv")
    st.caption(f"1.0 costs as many tokens as English; 2.0 twice as many. {parallel_source()}")


def _thin_steps(n: int, base: int = 256) -> list[int]:
    """At most :data:`_CURVE_POINTS` steps from 0 to ``n``, the ends included, evenly spread
    on the chart's log axis (the vocab size is about ``base + k`` at step k): of a
    50,000-merge tokenizer, the first hundred merges, where compression grows fastest, get
    more points than the last ten thousand.

    >>> _thin_steps(3), _thin_steps(50_000)[:6], _thin_steps(50_000)[-1]
    ([0, 1, 2, 3], [0, 5, 9, 14, 19, 24], 50000)
    """
    if n < _CURVE_POINTS:
        return list(range(n + 1))
    ratio = ((base + n) / base) ** (1 / (_CURVE_POINTS - 1))
    return sorted({0, n} | {min(n, round(base * ratio**i) - base) for i in range(_CURVE_POINTS)})


def curve_view(tokenizers: dict[str, Any], done: dict[tuple[str, str], Any]) -> None:
    """Bytes per token after the first k merges, against the vocab size at k: one curve per
    byte-level BPE tokenizer and text; every tokenizer also as a point at its full size."""
    pairs = [(label, sid) for (label, sid), result in done.items()
             if label in tokenizers and result.stats.tokens]
    # what the chart shows depends on these names and contents only: it is drawn once
    key = tuple(f"{label}\0{state.tokenizer_key(label)}\0{sid}\0{source_digest(sid)}"
                for label, sid in pairs)
    chart, curves = _curve_chart(key, {p: (tokenizers[p[0]], done[p]) for p in pairs})
    if not curves:
        st.info("Pick a byte-level BPE tokenizer (one you trained, a saved one or a preset) to "
                "see its compression grow merge by merge.")
    if chart:
        charts.show(chart)
    st.caption("Each line is a tokenizer cut to its first k merges (as on 🎞️ Replay), from the "
               "256 bytes to its whole vocabulary; each diamond is a whole tokenizer.")


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def _curve_chart(key: tuple[str, ...],
                 _drawn: dict[tuple[str, str], tuple[Any, Any]]) -> tuple[str, int]:
    """The curve chart of ``_drawn`` ((label, source) -> (tokenizer, result); ``key`` names
    their labels and contents) and how many curves it has ("" with no series)."""
    series: list[charts.Series] = []
    curves = 0
    for (label, sid), (tok, result) in _drawn.items():
        name = f"{label} · {source_label(sid)}"  # a curve and its diamond: one colour, one key
        if result.curve is not None:
            sizes = cache.replay_sizes(state.tokenizer_key(label), tok)
            points = [(sizes[k], result.stats.bytes / result.curve[k], k)
                      for k in _thin_steps(len(result.curve) - 1)]
            series.append(charts.Series(name, [
                (x, y, f"{name}\nstep {k:,}, vocab size {x:,}\n{y:.3f} bytes per token")
                for x, y, k in points], mode="lines"))
            curves += 1
        whole = result.stats.bytes_per_token
        series.append(charts.Series(name, [(tok.n_vocab, whole, f"{name} (whole)\nvocab size "
                                            f"{tok.n_vocab:,}\n{whole:.3f} bytes per token")],
                                    mode="diamonds"))
    if not series:
        return "", 0
    return charts.xy_chart(
        "eva.chart.curve", series, x=charts.Axis("vocab size", "log"),
        y=charts.Axis("bytes per token"), width=760, height=380,
        title="Bytes per token against vocab size (first k merges)"), curves


def tokens_view(tokenizers: dict[str, TokenizerInterface], sources: list[str],
                done: dict[tuple[str, str], Any]) -> None:
    """Most used, longest used and unused tokens of one (tokenizer, text) pair: the one the
    session's ``focus`` names (``i.j``: tokenizer i, text j), else the first."""
    labels = list(tokenizers)
    pairs = [(i, j) for j, sid in enumerate(sources) for i, label in enumerate(labels)
             if (label, sid) in done]
    if not pairs:
        return
    focus = str(state.value(keys.EVA_FOCUS) or "0.0")
    names = {f"{i}.{j}": f"{labels[i]} · {source_label(sources[j])}" for i, j in pairs}
    if focus not in names:
        focus = next(iter(names))
        state.set_value(keys.EVA_FOCUS, focus)
    # bound: a change is copied before the rerun, so the link drawn above follows it
    focus = st.selectbox("Tokenizer and text", list(names), format_func=names.__getitem__,
                         **state.bind(keys.EVA_FOCUS, focus))
    i, j = (int(x) for x in focus.split("."))
    label, sid = labels[i], sources[j]
    tok, usage = tokenizers[label], done[(label, sid)].usage
    show = limits.readable_token
    left, middle, right = st.columns(3)
    with left:
        st.markdown("**Most used**")
        total = sum(usage.values()) or 1
        html_table.show([{"ID": i, "token": show(token_bytes(tok, i)), "count": n,
                          "share": f"{n / total:.1%}"} for i, n in top_tokens(usage, 50)])
    with middle:
        st.markdown("**Longest used**")
        html_table.show([{"ID": i, "token": show(b), "bytes": len(b), "count": n}
                         for i, b, n in longest_used(tok, usage, 50)])
    with right:
        unused = _unused(f"{state.tokenizer_key(label)}\0{source_digest(sid)}", tok, usage)
        st.markdown(f"**Unused**: {len(unused):,} of {tok.n_vocab:,}")
        html_table.show([{"ID": i, "token": show(token_bytes(tok, i))}
                         for i in unused[:UNUSED_LISTED]])
        if len(unused) > UNUSED_LISTED:
            st.caption(f"The first {UNUSED_LISTED:,} by ID.")


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def _unused(key: str, _tok: TokenizerInterface, _usage: Any) -> list[int]:
    """:func:`core.explain.evaluate.unused_tokens` of the tokenizer and text ``key`` names
    (it asks every ID of the vocabulary: a tenth of a second for 50,000, not for every rerun)."""
    return unused_tokens(_tok, _usage)

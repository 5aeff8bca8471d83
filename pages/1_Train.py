"""Train: a byte-level BPE tokenizer on uploaded text or the built-in corpus, watched live.

The training itself runs in a worker process owned by the server-wide ``TrainingManager``
(``training.manager``, ``training.worker``); this page only submits a job, keeps its ID in
``st.session_state`` and polls the manager from a fragment. So training keeps going while the
user visits other pages.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from core.corpus import blank_corpus_problem
from training.protocol import Manager
from training.snapshot import JobSnapshot, MergeRow
from ui import (
    charts, click_probe, display, keys, limits, links, runtime, state, train_form, workspace,
)
from ui.page import setup
from ui.training import training_manager
from ui.widgets import (
    file_uploader,
    save_to_library,
    show_error,
    show_export_failures,
)

setup("Train")

_POLL_SECONDS = 2.0  # the charts: each redraw stalls the browser (1 s: lag p90 625 ms, 2 s: 278 ms)
_STATUS_SECONDS = 0.25  # the progress line and newest merges: light, so refreshed often
_TABLE_ROWS = 15
_CHART_POINTS = 1500  # plotly gets at most this many points per trace
_COUNT_SHARE = 0.1  # share of the progress bar for the counting phase
_UPLOAD_PROBLEMS = "train.upload_problems"  # (uploader digest, messages about files left out)
_SHOWN_ECHO = "train.shown_echo"  # the widget whose label is the progress line (its count)


@st.cache_data(max_entries=1, show_spinner="Assembling the built-in corpus…")
def builtin_corpus() -> str:
    from core.builtin_corpus import builtin_corpus_text

    return builtin_corpus_text()


# ---------------------------------------------------------------------------------------------
# Corpus and settings


def corpus_section() -> tuple[list[str], str] | None:
    """The corpus the user chose: (texts, name), or None after saying what is missing."""
    source = st.radio("Corpus", train_form.SOURCES, horizontal=True,
                      **state.bind(keys.TRAIN_SOURCE, train_form.DEFAULTS[keys.TRAIN_SOURCE]))
    if source == train_form.BUILTIN:
        from core.builtin_corpus import BUILTIN_CORPUS_NAME, BUILTIN_SEPARATOR

        text = builtin_corpus()
        st.caption(
            f"**{BUILTIN_CORPUS_NAME}**: {limits.format_bytes(len(text.encode()))}, the docstrings "
            f"of {text.count(BUILTIN_SEPARATOR) + 1} standard-library modules joined with "
            "`<|endoftext|>`. "
            "Needs no download."
        )
        return [text], "built-in corpus"
    limit = limits.max_upload_bytes()
    kept = state.value(keys.TRAIN_CORPUS)
    # subtle: no type= filter. Text comes as .txt, .md, .py, .csv, .jsonl or no extension at
    # all; Streamlit's filter refused those with a bare "files are not allowed". The content
    # decides instead (limits.decode_upload names the file and the bad byte).
    uploads = file_uploader(
        "Replace it with other text files" if kept else "Text files (UTF-8: .txt, .md, code…)",
        key="train.uploads",  # its drop zone states our limit (in total)
        help=f"One or more plain-text files in UTF-8, any extension, at most "
             f"{limits.format_bytes(limit)} in total (TOKPLAY_MAX_UPLOAD_MB). They stay here "
             "until you upload others, across pages and reloads.",
    )
    if uploads:
        digest = repr([(u.name, u.size, u.file_id) for u in uploads])
        if kept is None or kept.get("upload") != digest:
            kept = read_uploads(uploads, digest) or kept
        elif st.session_state.get(_UPLOAD_PROBLEMS, (None,))[0] == digest:
            for problem in st.session_state[_UPLOAD_PROBLEMS][1]:  # the files left out
                st.error(display.message(problem), icon="⚠️")
    if kept is None:
        st.info("Upload one or more text files, or pick the built-in corpus.", icon="📄")
        return None
    sizes = ", ".join(f"{display.code_span(name)} · {limits.format_bytes(size)}"
                      for name, size in kept["files"])
    row = st.container(horizontal=True, vertical_alignment="center")
    row.markdown(f"📄 Your corpus: {sizes}")
    if row.button("Forget it", key="train.forget_corpus", icon="🗑️",
                  help="Drop the uploaded text from this session."):
        st.session_state.pop(keys.TRAIN_CORPUS, None)
        st.rerun()
    return list(kept["texts"]), kept["name"]


def read_uploads(uploads: list[Any], digest: str) -> dict[str, Any] | None:
    """Check and decode newly uploaded corpus files; keep the good ones as the session's
    corpus (``ui.workspace.remember_corpus``). None (after saying why) if none is usable."""
    texts: list[str] = []
    names: list[str] = []
    problems: list[str] = []  # shown while these files stay in the uploader
    total = 0
    for upload in uploads:
        if too_large := limits.corpus_file_too_large(upload.name, upload.size, before=total):
            problems.append(too_large)
            continue
        data = upload.getvalue()
        try:
            texts.append(limits.decode_upload(upload.name, data))
        except Exception as err:  # noqa: BLE001 - CorpusError: shown, the other files still count
            problems.append(str(err))
            continue
        names.append(upload.name)
        total += len(data)
    st.session_state[_UPLOAD_PROBLEMS] = (digest, problems)
    for problem in problems:
        st.error(display.message(problem), icon="⚠️")
    if not texts:
        st.warning("None of the uploaded files can be used: fix them or use the built-in corpus.")
        return None
    if blank := blank_corpus_problem(texts):  # the command line refuses it the same way
        st.warning(display.message(blank))
        return None
    name = names[0] if len(names) == 1 else f"{len(names)} files"
    corpus = workspace.remember_corpus(name, list(zip(names, texts)))
    corpus["upload"] = digest
    return corpus


def settings_section() -> tuple[int, list[str], str, float] | None:
    """Vocab size, special tokens, pattern and speed; None (after a message) when unusable."""
    defaults = train_form.DEFAULTS
    # subtle: no min_value / max_value. With bounds, Streamlit's browser side refuses an
    # out-of-range entry with its own message and keeps sending the last valid value, so
    # Start trained a size the box no longer showed. Unbounded, every entry reaches us, and
    # limits.vocab_size_problem says what the range is (and Start stays off) until it fits.
    vocab_size = int(st.number_input(
        "Vocab size", step=100,
        help=f"256 bytes + special tokens + merges: from 257 (with one special token) to "
             f"{limits.max_vocab_size():,} here (TOKPLAY_MAX_VOCAB).",
        **state.bind(keys.TRAIN_VOCAB_SIZE, defaults[keys.TRAIN_VOCAB_SIZE]),
    ))
    specials_text = st.text_input(
        "Special tokens", help="Separated by commas or new lines. They are never split or merged.",
        **state.bind(keys.TRAIN_SPECIALS, defaults[keys.TRAIN_SPECIALS]),
    )
    pattern = st.selectbox(
        "Pre-tokenizer pattern", train_form.PATTERNS,
        help="The regex that cuts text into pre-tokens before any merge (GPT-2, GPT-4, GPT-4o).",
        **state.bind(keys.TRAIN_PATTERN, defaults[keys.TRAIN_PATTERN]),
    )
    speed = st.radio(
        "Speed", list(train_form.SPEEDS), horizontal=True,
        **state.bind(keys.TRAIN_SPEED, defaults[keys.TRAIN_SPEED]),
        help="Slow motion, to watch each merge appear: the built-in corpus trains in about a "
             "second at full speed. Counting pre-tokens always runs at full speed.",
    )
    specials = limits.parse_special_tokens(specials_text)
    problem = limits.vocab_size_problem(vocab_size, len(specials))
    if problem:
        st.error(display.message(problem), icon="⚠️")
        return None
    return vocab_size, specials, pattern, train_form.SPEEDS.get(speed, 0.0)


# ---------------------------------------------------------------------------------------------
# Live view


def _thin(rows: tuple[MergeRow, ...]) -> list[MergeRow]:
    """At most _CHART_POINTS rows, evenly spread, always keeping the newest."""
    if len(rows) <= _CHART_POINTS:
        return list(rows)
    step = len(rows) / _CHART_POINTS
    picked = [rows[int(i * step)] for i in range(_CHART_POINTS - 1)]
    return picked + [rows[-1]]


def draw_charts(snap: JobSnapshot) -> None:
    counts, growth = charts.training_figures(_thin(snap.rows), 256 + len(snap.special_tokens))
    left, right = st.columns(2)
    left.plotly_chart(counts, key="train.chart.counts")
    right.plotly_chart(growth, key="train.chart.growth")


def draw_table(snap: JobSnapshot) -> None:
    newest = snap.rows[-_TABLE_ROWS:][::-1]
    st.markdown(f"**Newest merges** ({display.MERGE_NUMBERING}; space `·`, newline `↵`, "
                "tab `→`, other bytes `\\xNN`)")
    # st.table, not st.dataframe: static HTML renders at once on every poll (the grid
    # widget showed a loading skeleton half of the time). Its cells are Markdown: the
    # tokens go in as code spans (display.merge_table), so `##` or `*` show as themselves.
    st.table(display.merge_table(newest), hide_index=True, border="horizontal")


def draw_status(snap: JobSnapshot, manager: Manager) -> None:
    """Status line and progress bar (inside the polled fragment)."""
    if snap.status == "queued":
        load = manager.status_counts()
        st.info(
            f"Waiting in the queue: position **{snap.queue_position}**. This server runs "
            f"{manager.max_concurrent} training(s) at once ({load['running']} running now"
            + (", the others in its other processes" if load["waiting_for_other_processes"]
               else "") + ").",
            icon="⏳",
        )
    elif snap.status in ("starting", "counting"):
        value = snap.count_progress or 0.0
        found = (f" · {snap.count_distinct:,} distinct pre-tokens so far"
                 if snap.count_distinct else "")
        progress_line(
            snap.job_id, 0, _COUNT_SHARE * value,
            f"Counting pre-tokens: {limits.format_bytes(int(value * snap.corpus_bytes))} of "
            f"{limits.format_bytes(snap.corpus_bytes)} read ({value:.0%}){found} · "
            f"{snap.elapsed:.1f} s (merges come next)")
    else:
        n = len(snap.rows)
        # one bar for both phases: counting fills the first tenth, merges the rest
        progress_line(
            snap.job_id, n, _COUNT_SHARE + (1 - _COUNT_SHARE) * snap.merge_progress,
            f"Merges {n:,} / {snap.target_merges:,} · vocab "
            f"{256 + len(snap.special_tokens) + n:,} / {snap.vocab_size:,} · "
            f"{snap.elapsed:.1f} s{_control_note(snap)}")
    if snap.pause_requested and snap.status in ("starting", "counting"):
        st.caption("Pausing once counting is done (counting cannot be paused).")


def _control_note(snap: JobSnapshot) -> str:
    """What a Pause or Stop is doing, for the progress line ("" when neither applies).

    "paused at merge N" only once the worker has confirmed: its rows are all in by then, so N
    is exact (the elapsed time stands still while paused)."""
    if snap.done:
        return ""
    if snap.stop_requested:
        return " · ⏹ stopping…"
    if snap.status == "paused":
        return f" · ⏸ paused at merge {len(snap.rows):,}"
    return " · ⏸ pausing…" if snap.pause_requested else ""


def control_state(snap: JobSnapshot | None) -> tuple[bool, bool, bool]:
    """What decides which control buttons show: (queued, paused, done)."""
    if snap is None:
        return (False, False, True)
    return (snap.status == "queued", snap.status == "paused" or snap.pause_requested, snap.done)


def draw_controls(snap: JobSnapshot, manager: Manager) -> None:
    """Pause / Resume / Stop / Cancel, outside the polled fragment so they stay put while the
    fragment redraws (a button redrawn every half second is hard to click)."""
    if snap.done:
        return
    queued, paused, _ = control_state(snap)
    job = snap.job_id
    cols = st.columns([1, 1, 1, 3])
    if queued:
        cols[0].button("Cancel", key="train.cancel", on_click=manager.cancel, args=(job,),
                       icon="✖️", help="Leave the queue.")
        return
    # the browser reports the count on screen at a click on Pause or Stop (ui.click_probe)
    click_probe.watch(key="train.click_probe", job=job, line="st-key-train-shown-echo",
                      buttons={"pause": "st-key-train-pause", "stop": "st-key-train-stop"})
    if paused:
        cols[0].button("Resume", key="train.resume", on_click=manager.resume, args=(job,),
                       icon="▶️")
    elif cols[0].button("Pause", key="train.pause", icon="⏸",
                        help="Hold at the merge count shown."):
        _at_shown(manager.pause, job, "pause")
    stop = cols[1].button("Stop", key="train.stop", icon="⏹",
                          help="End now and keep the merges shown: the tokenizer trained to "
                               "that count, exactly.")
    cols[2].button("Cancel", key="train.cancel", on_click=manager.cancel, args=(job,),
                   icon="✖️", help="End now and keep nothing.")
    if stop:
        _at_shown(manager.stop, job, "stop")


def _at_shown(action: Any, job_id: str, button: str) -> None:
    """Pause or Stop at the merge count on screen when the button was clicked, then redraw.

    subtle: the count shown lags the worker (a poll, the trip to the browser, the click's
    trip back), and at full speed thousands of merges happen meanwhile. BPE merges are
    sequential, so keeping the first N is exactly the training stopped at N: the manager cuts
    to the count the user saw (``training.snapshot.cut_to_shown``). The browser reports that
    count (``ui.click_probe``); without its report, the count this page drew last."""
    shown = click_probe.shown_at_click(button, job_id)
    if shown is None:
        drawn = st.session_state.get(keys.TRAIN_SHOWN)
        echoed = st.session_state.get(_SHOWN_ECHO)
        if drawn and drawn[0] == job_id:
            shown = int(echoed) if isinstance(echoed, (int, float)) else drawn[1]
    action(job_id, shown=shown)
    st.rerun()  # the controls and the line, as the action left them


def progress_line(job_id: str, n: int, fraction: float, text: str) -> None:
    """The progress line (``text``, saying ``n`` merges) and its bar.

    subtle: the line is the label of a number widget whose value is ``n`` (its box hidden by
    the page's style). The browser sends every widget's value with a click, so Pause and
    Stop learn the count on screen at that moment, exactly: label and value arrive in one
    element and are drawn together. A note of what the server drew can be a poll ahead of
    the screen (a delta still on its way), and a line drawn apart from the widget could be
    drawn before it: at full speed either is hundreds of merges.
    """
    st.session_state[keys.TRAIN_SHOWN] = (job_id, n)
    st.session_state[_SHOWN_ECHO] = n  # set before the widget is drawn: its value to show
    with st.container(key="train-shown-echo"):
        st.number_input(text, min_value=0, step=1, key=_SHOWN_ECHO)  # no box: nothing to type
    st.progress(fraction)


def live_view(job_id: str, drawn_controls: tuple[bool, bool, bool]) -> None:
    """Status, progress, the newest merges and charts; polled while the job runs.

    subtle: two rates. Redrawing the two plotly charts keeps a browser busy for 0.1-1 s
    (measured in headless chromium), so with everything in one fragment polled every 0.5 s
    the merge count shown lagged the worker by 0.7-2 s and a click on Stop waited behind
    the redraws. The charts refresh every _POLL_SECONDS; the progress line and the table
    (plain text) every _STATUS_SECONDS, in a nested fragment.
    """
    snap = _job_snapshot(job_id)
    if snap is None:
        return
    status = st.fragment(live_status, run_every=None if snap.done else _STATUS_SECONDS)
    status(job_id, drawn_controls)
    if snap.rows:
        draw_charts(snap)


def live_status(job_id: str, drawn_controls: tuple[bool, bool, bool]) -> None:
    """The progress line and the newest merges (a fragment polled every _STATUS_SECONDS)."""
    # in the browser (the static build) this is where the training moves, a slice per poll:
    # with one thread, the page redraws and takes clicks between slices (training.inpage)
    training_manager().advance(job_id)
    snap = _job_snapshot(job_id)
    if snap is None:
        return
    draw_status(snap, training_manager())  # with the count a Pause or Stop holds or keeps
    if snap.rows:
        draw_table(snap)
    if control_state(snap) != drawn_controls:
        # left the queue, paused, ended...: redraw the whole page (buttons, results, polling)
        st.rerun()


def _job_snapshot(job_id: str) -> JobSnapshot | None:
    try:
        return training_manager().snapshot(job_id)
    except KeyError:
        st.warning("That training is no longer on the server (it restarted): start again.")
        return None


# ---------------------------------------------------------------------------------------------
# Results


def adopt_tokenizer(snap: JobSnapshot) -> Any | None:
    """Build the trained tokenizer and make it the session's active one (once per job)."""
    done: dict[str, str] = st.session_state.setdefault(keys.TRAIN_DONE, {})
    own = state.session_tokenizers().get(done.get(snap.job_id, ""))
    if own is not None:
        return own["tok"]  # adopted on an earlier run (or reopened from the workspace)
    if snap.vocab is None or snap.merges is None:
        return None
    from core.tokenizer import Tokenizer

    label = f"BPE {len(snap.vocab):,} · {snap.corpus_name}"
    tok = Tokenizer(snap.vocab, snap.merges, list(snap.special_tokens), pattern=snap.pattern,
                    name=label)
    if snap.job_id not in done:
        done[snap.job_id] = state.register_tokenizer(
            label, tok, source=f"trained here on {snap.corpus_name} "
                               f"({limits.format_bytes(snap.corpus_bytes)}, {snap.pattern})",
            meta={"corpus_name": snap.corpus_name, "corpus_size": snap.corpus_bytes,
                  "rows": snap.rows, "special_count": len(snap.special_tokens)})
        workspace.remember_training(snap, done[snap.job_id], tok)
        state.set_active(done[snap.job_id])
        st.session_state[keys.TRAIN_TOAST] = done[snap.job_id]
        st.rerun()  # so the sidebar (drawn before this) shows the new active tokenizer
    return tok


@st.cache_data(max_entries=4, show_spinner=False)
def export_files(job_id: str, _vocab: dict[int, bytes], _merges: list[tuple[bytes, bytes]],
                 _tok: Any) -> tuple[dict[str, bytes], list[str]]:
    """Every download for one finished job (keyed by its unguessable ID), and one message per
    format that could not be written (which file is missing and why)."""
    from core.formats import dumps_merges, dumps_vocab, export_all

    files = {"vocab.pkl": dumps_vocab(_vocab), "merges.pkl": dumps_merges(_merges)}
    failures: list[str] = []
    if _tok is not None:
        exported = export_all(_tok)
        tiktoken_name = f"bpe-{len(_vocab)}.tiktoken"  # a plain name downloads better
        for name, data in exported.items():
            if name.endswith(".tiktoken"):  # export_all names it after the label
                name = tiktoken_name
            files.setdefault(name, data if isinstance(data, bytes) else data.encode("utf-8"))
        for failure in exported.failures:
            if failure.files == ("vocab.pkl", "merges.pkl"):
                continue  # written above from the vocab and merges themselves
            names = tuple(tiktoken_name if n.endswith(".tiktoken") else n for n in failure.files)
            failures.append(replace(failure, files=names).message)
    return files, failures


def draw_results(snap: JobSnapshot) -> None:
    if snap.status == "failed":
        st.error(snap.error or "The training failed.", icon="⚠️")
        return
    if snap.status == "cancelled":
        st.info("Training cancelled: nothing was kept.", icon="✖️")
        return
    for message in snap.messages:
        st.info(message, icon="ℹ️")
    tok = adopt_tokenizer(snap)
    stats = snap.corpus_stats
    cols = st.columns(4)
    cols[0].metric("Vocab size", f"{len(snap.vocab or {}):,}")
    cols[1].metric("Merges", f"{len(snap.merges or []):,}")
    cols[2].metric("Training time", f"{snap.elapsed:.1f} s")
    cols[3].metric("Distinct pre-tokens", f"{stats.get('distinct_pretokens', 0):,}")
    if tok is not None:
        st.success("The tokenizer is now active: try it on the **Tokenize** page, or replay "
                   "its merges one by one.", icon="✅")
        try:
            st.page_link("pages/6_Replay.py", label="Replay this training, merge by merge",
                         icon="🎞️")
        except Exception:  # noqa: BLE001 - AppTest runs one page alone, with nothing to link
            pass
        label = st.session_state.get(keys.TRAIN_DONE, {}).get(snap.job_id)
        if not runtime.keeps_work():
            st.caption(runtime.NO_SERVER_NOTE)
        elif label is not None and label in state.session_tokenizers():
            with st.container(border=True):
                st.markdown("**📚 Save to the library** so teammates can open it from a link "
                            "(it stays on this server after a restart)")
                save_to_library(label, key="train.save")
    try:
        files, failures = export_files(snap.job_id, snap.vocab, snap.merges, tok)
    except Exception as err:  # noqa: BLE001 - a missing writer must not hide the rest
        show_error(err, what="Preparing the downloads")
        return
    st.markdown("**Downloads** (`vocab.pkl` + `merges.pkl` are the CS336 pickles)")
    show_export_failures(failures)
    cols = st.columns(min(4, len(files)))
    for i, (name, data) in enumerate(files.items()):
        # subtle: deferred (a callable): the bytes are sent only on click. An eager button's
        # file is fetched by the browser to check it as soon as it is drawn, which logged 404s
        # when a new training replaced the buttons in the meantime (benchmarks/load_test.py).
        cols[i % len(cols)].download_button(
            name, lambda data=data: data, file_name=name, key=f"train.dl.{name}", icon="⬇️",
            mime="application/octet-stream", width="stretch", on_click="ignore",
        )


# ---------------------------------------------------------------------------------------------
# The page

st.title("🏋️ Train a tokenizer")
st.caption(
    "Byte-level BPE: start from the 256 bytes, repeatedly merge the most frequent adjacent pair. "
    "Watch the merges arrive; training keeps running if you visit another page."
)
links.share_plain("Train")
# the progress line is a number widget's label (progress_line): show the label, not the box
st.html("<style>.st-key-train-shown-echo [data-testid='stNumberInputContainer'] "
        "{ display: none; }</style>")

if (announce := st.session_state.pop(keys.TRAIN_TOAST, None)) is not None:
    st.toast(f"“{display.escaped(announce)}” is now your active tokenizer", icon="✅")

manager = training_manager()
job_id: str | None = st.session_state.get(keys.TRAIN_JOB)
snap = None
if job_id is not None:
    try:
        snap = manager.snapshot(job_id)
    except KeyError:
        st.session_state.pop(keys.TRAIN_JOB, None)
        job_id = None
running = snap is not None and not snap.done
kept_result = None  # the last training, reopened from the workspace (a reload, a link)
if snap is None and (record := st.session_state.get(keys.TRAIN_RECORD)):
    own = state.session_tokenizers().get(record.get("label") or "")
    kept_result = workspace.record_snapshot(own["tok"] if own else None)

corpus_col, settings_col = st.columns([3, 2], gap="large")
with corpus_col:
    corpus = corpus_section()
with settings_col:
    settings = settings_section()

if st.button("Start training", type="primary", icon="🚀", key="train.start",
             disabled=running or corpus is None or settings is None,
             help="One training per session at a time." if running else None) and (
    corpus is not None and settings is not None
):
    texts, name = corpus
    vocab_size, specials, pattern, pace = settings
    try:
        new_id = manager.submit(texts, vocab_size=vocab_size, special_tokens=specials,
                                pattern=pattern, corpus_name=name, pace=pace)
    except Exception as err:  # noqa: BLE001 - shown, never a traceback
        show_error(err, what="Could not start the training")
    else:
        if job_id is not None:
            manager.forget(job_id)  # the previous finished job: free its memory now
        st.session_state[keys.TRAIN_JOB] = new_id
        st.rerun()

if job_id is not None:
    st.divider()
    st.subheader("Training")
    if snap is not None:
        draw_controls(snap, manager)
    fragment = st.fragment(live_view, run_every=_POLL_SECONDS if running else None)
    fragment(job_id, control_state(snap))
    if snap is not None and snap.done:
        draw_results(snap)
elif kept_result is not None:
    st.divider()
    st.subheader("Last training")
    st.caption("Reopened from your workspace (the link's `ws=`): charts, result and downloads.")
    if kept_result.rows:
        draw_charts(kept_result)
        draw_table(kept_result)
    draw_results(kept_result)

"""The Train page's live view of a training: progress line, controls, newest merges, charts.

The training runs in the server-wide manager (``ui.training.training_manager``); this view
only polls its snapshots from fragments and sends Pause, Resume, Stop and Cancel. The phases
a progress line names: waiting in the queue, downloading the corpus (a Hugging Face dataset
file), counting pre-tokens (bytes read across all the files, distinct pre-tokens so far),
then the merges.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from training.protocol import Manager
from training.snapshot import JobSnapshot
from ui import charts, click_probe, display, keys, limits, training as server_training

__all__ = ["ECHO_STYLE", "POLL_SECONDS", "control_state", "draw_charts", "draw_controls",
           "draw_status", "draw_table", "live_status", "live_view", "progress_line"]

POLL_SECONDS = 2.0  # the charts: each redraw stalls the browser (1 s: lag p90 625 ms, 2 s: 278 ms)
_STATUS_SECONDS = 0.25  # the progress line and newest merges: light, so refreshed often
_TABLE_ROWS = 15
_COUNT_SHARE = 0.1  # share of the progress bar for the counting phase
_SHOWN_ECHO = "train.shown_echo"  # the widget whose label is the progress line (its count)
#: The progress line is a number widget's label (:func:`progress_line`): show the label, not
#: the box (the page draws this once).
ECHO_STYLE = ("<style>.st-key-train-shown-echo [data-testid='stNumberInputContainer'] "
              "{ display: none; }</style>")



def draw_charts(snap: JobSnapshot) -> None:
    # (ui.charts thins the rows to its CHART_POINTS)
    counts, growth = charts.training_charts(snap.rows, 256 + len(snap.special_tokens))
    left, right = st.columns(2)
    with left:
        charts.show(counts)
    with right:
        charts.show(growth)


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
    elif snap.status == "downloading":
        done, total = snap.download or (0, 0)
        share = done / total if total else 0.0
        progress_line(
            snap.job_id, 0, share,
            f"Downloading the corpus into the server's Hugging Face cache: "
            f"{limits.format_bytes(done)} of {limits.format_bytes(total)} ({share:.0%}) · "
            f"{snap.elapsed:.1f} s (counting comes next)")
    elif snap.status in ("starting", "counting"):
        value = snap.count_progress or 0.0
        found = (f" · {snap.count_distinct:,} distinct pre-tokens so far"
                 if snap.count_distinct else "")
        # the bytes read across all the corpus's files, as the command line's bar shows them
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
    if snap.pause_requested and snap.status in ("starting", "downloading", "counting"):
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

    subtle: two rates. Redrawing the two charts kept a browser busy for 0.1-1 s when they
    were plotly's (measured in headless chromium), so with everything in one fragment polled every 0.5 s
    the merge count shown lagged the worker by 0.7-2 s and a click on Stop waited behind
    the redraws. The charts refresh every POLL_SECONDS; the progress line and the table
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
    manager = server_training.training_manager()  # asked each time: tests swap it
    manager.advance(job_id)
    snap = _job_snapshot(job_id)
    if snap is None:
        return
    draw_status(snap, manager)  # with the count a Pause or Stop holds or keeps
    if snap.rows:
        draw_table(snap)
    if control_state(snap) != drawn_controls:
        # left the queue, paused, ended...: redraw the whole page (buttons, results, polling)
        st.rerun()


def _job_snapshot(job_id: str) -> JobSnapshot | None:
    try:
        return server_training.training_manager().snapshot(job_id)
    except KeyError:
        st.warning("That training is no longer on the server (it restarted): start again.")
        return None



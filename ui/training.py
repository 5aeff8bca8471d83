"""The server's training manager, and the sidebar line every page shows while a training runs.

The manager (``training.manager.TrainingManager``, or in the browser
``training.inpage.InPageTrainingManager``: both a ``training.protocol.Manager``) is one per
server process, deliberately shared: jobs are keyed by unguessable IDs and each session knows
only its own (``keys.TRAIN_JOB``).
"""

from __future__ import annotations

import os

import streamlit as st
from streamlit.errors import StreamlitAPIException

from training.protocol import Manager
from training.snapshot import JobSnapshot
from ui import cache, keys, limits, runtime

#: How often the sidebar line refreshes while a training runs (seconds).
SIDEBAR_POLL_SECONDS = 1.0


@st.cache_resource(max_entries=1, show_spinner=False)
def training_manager() -> Manager:
    """One manager per server process; its queue enforces the concurrency limit. In the
    browser (the static build) trainings run in the page instead, a slice per poll
    (``training.inpage``): same methods, same snapshots."""
    # each manager is imported only where it runs (a page's first view imports neither)
    if runtime.training_in_page():
        from training.inpage import InPageTrainingManager  # the browser's: see above

        return InPageTrainingManager()
    from training.manager import TrainingManager  # the server's: see above

    # the slots live in the library folder, which every server process on the host shares
    # (make serve WORKERS=N): the limit on trainings holds across all of them
    manager = TrainingManager(max_concurrent=limits.max_concurrent_trainings(),
                              memory_mb=limits.train_memory_mb(),
                              slots_dir=os.path.join(cache.library_root(), "training-slots"))
    manager.warm_up()
    return manager


def session_job() -> JobSnapshot | None:
    """This session's current training, or None (none started, or no longer on the server)."""
    job_id = st.session_state.get(keys.TRAIN_JOB)
    if job_id is None:
        return None
    try:
        return training_manager().snapshot(job_id)
    except KeyError:
        return None


def status_line(snap: JobSnapshot) -> tuple[str, float]:
    """What the sidebar says about a training, and how far it is (0..1).

    >>> snap = JobSnapshot("j", "training", None, 300, ("<|endoftext|>",), "gpt2", "x", 10,
    ...                    ((0, 5, b"ab", (b"a", b"b"), 258, 0.1),), None, None, None, None, (), None)
    >>> status_line(snap)
    ('Training: 1 / 43 merges', 0.023255813953488372)
    >>> from dataclasses import replace
    >>> status_line(replace(snap, status="downloading", rows=()))
    ('Training: downloading the corpus…', 0.0)
    """
    if snap.status == "queued":
        return f"Training queued: position {snap.queue_position}", 0.0
    if snap.status == "downloading":
        return "Training: downloading the corpus…", 0.0
    if snap.status in ("starting", "counting"):
        return "Training: counting pre-tokens…", 0.0
    paused = " (paused)" if snap.status == "paused" else ""
    return (f"Training{paused}: {len(snap.rows):,} / {snap.target_merges:,} merges",
            snap.merge_progress)


def sidebar_status(page: str) -> None:
    """While this session's training runs, a progress line and a link to Train (on every
    page but Train, which shows the whole view); once it ends, a link to its result until
    Train has shown it. Polls only while the training runs."""
    if page == "Train":
        return
    snap = session_job()
    if snap is None:
        return
    if not snap.done:
        st.fragment(_live_status, run_every=SIDEBAR_POLL_SECONDS)()
    elif snap.job_id not in st.session_state.get(keys.TRAIN_DONE, {}):
        _draw(snap)


def _live_status() -> None:
    job_id = st.session_state.get(keys.TRAIN_JOB)
    if job_id is not None:
        training_manager().advance(job_id)  # in the browser, training moves only here
    snap = session_job()
    if snap is None or snap.done:
        st.rerun()  # the whole page: it draws the end state and stops this polling
    _draw(snap)


def _draw(snap: JobSnapshot) -> None:
    with st.container(key="ui-training-status"):
        if snap.done:
            st.caption(f"✅ Your training ended ({snap.status}).")
            label = "See the result on Train"
        else:
            text, progress = status_line(snap)
            st.progress(progress, text=text)
            label = "Watch it on Train"
        try:
            st.page_link("pages/1_Train.py", label=label, icon="🏋️")
        except (StreamlitAPIException, KeyError):
            st.caption(label)  # subtle: AppTest runs one page alone, with no pages to link

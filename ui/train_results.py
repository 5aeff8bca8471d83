"""The Train page's result of a training: the tokenizer made active, its numbers, the
library box and the downloads (CS336 pickles and every format core writes)."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from core.engine.tokenizer import Tokenizer
from core.formats import dumps_merges, dumps_vocab, export_all
from training.snapshot import JobSnapshot
from ui import display, keys, limits, runtime, stat_row, state, workspace
from ui.stat_row import Stat
from ui.widgets import later, save_to_library, show_error, show_export_failures

__all__ = ["adopt_tokenizer", "draw_results", "export_files"]


def adopt_tokenizer(snap: JobSnapshot) -> Tokenizer | None:
    """Build the trained tokenizer and make it the session's active one (once per job)."""
    done: dict[str, str] = st.session_state.setdefault(keys.TRAIN_DONE, {})
    own = state.session_tokenizers().get(done.get(snap.job_id, ""))
    if own is not None:
        return own["tok"]  # adopted on an earlier run (or reopened from the workspace)
    if snap.vocab is None or snap.merges is None:
        return None
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
                 _tok: Tokenizer | None) -> tuple[dict[str, bytes], list[str]]:
    """Every download for one finished job (keyed by its unguessable ID), and one message per
    format that could not be written (which file is missing and why)."""
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
        st.error(display.message(snap.error or "The training failed."), icon="⚠️")
        return
    if snap.status == "cancelled":
        st.info("Training cancelled: nothing was kept.", icon="✖️")
        return
    for message in snap.messages:  # (core's words may quote a special token or a file)
        st.info(display.message(message), icon="ℹ️")
    tok = adopt_tokenizer(snap)
    stats = snap.corpus_stats
    stat_row.show([Stat("Vocab size", f"{len(snap.vocab or {}):,}"),
                   Stat("Merges", f"{len(snap.merges or []):,}"),
                   Stat("Training time", f"{snap.elapsed:.1f} s"),
                   Stat("Distinct pre-tokens", f"{stats.get('distinct_pretokens', 0):,}")],
                  key="train-stats")
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
    if snap.vocab is None or snap.merges is None:  # (a finished job has both)
        return
    try:
        files, failures = export_files(snap.job_id, snap.vocab, snap.merges, tok)
    except Exception as err:  # noqa: BLE001 - a missing writer must not hide the rest
        show_error(err, what="Preparing the downloads")
        return
    st.markdown("**Downloads** (`vocab.pkl` + `merges.pkl` are the CS336 pickles)")
    show_export_failures(failures)
    buttons = st.columns(min(4, len(files)))
    for i, (name, data) in enumerate(files.items()):
        # subtle: deferred (a callable): the bytes are sent only on click. An eager button's
        # file is fetched by the browser to check it as soon as it is drawn, which logged 404s
        # when a new training replaced the buttons in the meantime (benchmarks/load_test.py).
        buttons[i % len(buttons)].download_button(
            name, later(data), file_name=name, key=f"train.dl.{name}", icon="⬇️",
            mime="application/octet-stream", width="stretch", on_click="ignore",
        )

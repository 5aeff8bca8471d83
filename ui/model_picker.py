"""The model picker: every tokenizer the playground can open, Hugging Face Hub models included.

One select box offers, in order, this session's trained and uploaded tokenizers, our presets,
the saved library, the baselines, then Hub models: the ones this session opened, a short list
of popular ones (:data:`ui.hub_models.POPULAR`), and the ones in the server's Hugging Face
cache (:func:`ui.state.available_tokenizers` lists them all), and the GGUF models of Ollama and
LM Studio when the server lists them (:mod:`ui.local_models`). Beside it, a text box opens any
``org/name`` (or a Hub page's address); an ID is checked before any request is made, and a
refused one gets one line under the box.

Pages call :func:`tokenizer_picker` (Tokenize) or :func:`compare_adder` (Compare); the
sidebar calls :func:`sidebar_block`. Loading goes through ``ui.state.get_tokenizer``, which
asks :func:`ui.hub_models.load` (one load per server process).
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ui import display, hub_models, local_models, runtime, state

__all__ = ["compare_adder", "open_by_name", "option_text", "show_problem", "sidebar_block",
           "tokenizer_picker"]

_HELP = ("Our presets, your trained and uploaded tokenizers, the saved library, and Hugging "
         "Face Hub models (🤗: popular ones and the ones this server has cached), and on "
         "your own machine (make run) the GGUF models of Ollama and LM Studio (🦙). The 🤗 "
         "box beside it opens any Hub model by its ID.")
_BOX_HELP = ("A model's ID as its Hugging Face page shows it (org/name), or the page's "
             "address. Only its tokenizer files are fetched, once for the whole server; gated "
             "models (Llama, Gemma) need a token on the server (HF_TOKEN).")


def option_text(label: str) -> str:
    """How a picker shows a label: a Hub model with a word on what it is, a local GGUF
    model with where it is kept and its size."""
    repo = hub_models.hub_repo(label)
    if repo is None:
        name = local_models.local_name(label)
        note = local_models.note(name) if name is not None else ""
        return f"{label} · {note}" if note else label
    note = hub_models.POPULAR.get(repo, "")
    if repo in hub_models.cached_repos():
        note = (note + ", " if note else "") + "cached here"
    return f"{label} · {note}" if note else label


def open_by_name(key: str, *, on_open: Callable[[str], None] | None = None,
                 label: str = "…or any Hugging Face model", width: int | str = "stretch",
                 problem_here: bool = True) -> None:
    """A text box: Enter opens the Hub model typed (``on_open(label)``; by default it becomes
    the active tokenizer). A malformed ID is refused with one line (under the box, or where
    :func:`show_problem` is called when not ``problem_here``), and nothing is fetched."""
    problem_key = key + ".problem"
    if runtime.in_browser():
        st.caption("Hub models need the server version of the playground (`make run`).")
        return

    def submit() -> None:
        from core.errors import HubError
        from core.hub import check_repo_id

        raw = str(st.session_state.get(key) or "")
        if not raw.strip():
            return
        try:
            repo = check_repo_id(hub_models.clean_repo_id(raw[:500]))
        except HubError as err:
            st.session_state[problem_key] = str(err)
            return
        (on_open or state.set_active)(hub_models.remember(repo))
        st.session_state[key] = ""  # allowed: a callback runs before the box is drawn again

    st.text_input(label, key=key, on_change=submit, placeholder="org/name, e.g. Qwen/Qwen3-8B",
                  help=_BOX_HELP, max_chars=500, icon=hub_models.HUB_ICON, width=width)
    if problem_here:
        show_problem(key)


def show_problem(key: str) -> None:
    """The one line saying why the ID typed in the box ``key`` was refused (once)."""
    problem = st.session_state.pop(key + ".problem", None)
    if problem:
        st.error(display.escaped(problem), icon="⚠️")  # it quotes what was typed


def tokenizer_picker(key: str, *, label: str = "Tokenizer") -> str:
    """The select box over every tokenizer and model (following, and setting, the session's
    active one), with the 🤗 box beside it. Returns the chosen label."""
    options = state.available_tokenizers()
    current = state.active_label() or options[0]
    st.session_state[key] = current if current in options else options[0]

    def on_change() -> None:
        state.set_active(st.session_state[key])

    with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
        chosen = st.selectbox(label, options, key=key, on_change=on_change,
                              format_func=option_text, help=_HELP)
        if not runtime.in_browser():
            open_by_name(key + ".hub", width=260, problem_here=False)
    show_problem(key + ".hub")
    if state.active_label() is None:
        state.set_active(chosen)
    return chosen


def compare_adder(key: str, *, most: int = 4) -> None:
    """The 🤗 box for a multi-tokenizer page: Enter adds the model to the list in the session
    value ``key`` (replacing the last one when ``most`` are already there)."""

    def add(label: str) -> None:
        current = [x for x in (state.value(key) or []) if x != label]
        state.set_value(key, [*current[: most - 1], label])

    open_by_name(key + ".hub", on_open=add, label="Add any Hugging Face model")


def sidebar_block() -> None:
    """The sidebar's "Open a Hugging Face model" box, and this server's cached models as
    one-click buttons. Built only while its expander is open (a closed one costs nothing)."""
    if runtime.in_browser():
        return
    box = st.expander("Open a Hugging Face model", icon="🤗", key="ui.hub",
                      on_change="rerun")
    if not box.open:
        return
    with box:
        open_by_name("ui.sidebar_hub", label="Model ID (org/name)")
        cached = hub_models.cached_repos()
        if cached:
            st.caption("Cached on this server (open without the network):")
            for repo in cached[:12]:
                if st.button(repo, key=f"ui.hub_cached.{repo}", icon="🤗", width="stretch"):
                    state.set_active(hub_models.remember(repo))
                    st.rerun()

"""The model picker: every tokenizer the playground can open, Hugging Face Hub models included.

One select box offers, in order, this session's trained and uploaded tokenizers, our presets,
the saved library, the baselines, then Hub models: the ones this session opened, a short list
of popular ones (:data:`ui.hub_models.POPULAR`), and the ones in the server's Hugging Face
cache (:func:`ui.state.available_tokenizers` lists them all), and the GGUF models of Ollama and
LM Studio when the server lists them (:mod:`ui.local_models`). Beside it, a text box opens any
``org/name`` (or a Hub page's address); an ID is checked before any request is made, and the
model is loaded before it is offered: one that is refused or cannot load gets one line under
the box, and the tokenizer in use stays as it was (:func:`open_model`).

Pages call :func:`tokenizer_picker` (Tokenize) or :func:`compare_adder` (Compare); the
sidebar calls :func:`sidebar_block`. Loading goes through ``ui.state.get_tokenizer``, which
asks :func:`ui.hub_models.load` (one load per server process).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import streamlit as st

from core.errors import HubError, PlaygroundError
from core.services.hub import check_repo_id
from ui import display, hub_models, local_models, runtime, state

__all__ = ["choose", "compare_adder", "load_problem", "open_by_name", "open_model",
           "option_text", "option_texts", "show_problem", "sidebar_block", "tokenizer_picker"]

_HELP = ("Our presets, your trained and uploaded tokenizers, the saved library, and Hugging "
         "Face Hub models (🤗: popular ones and the ones this server has cached), and on "
         "your own machine (make run) the GGUF models of Ollama and LM Studio (🦙). The 🤗 "
         "box beside it opens any Hub model by its ID.")
_SIDEBAR_BOX = "ui.sidebar_hub"  # the sidebar's 🤗 box
_BOX_HELP = ("A model's ID as its Hugging Face page shows it (org/name), or the page's "
             "address. Only its tokenizer files are fetched, once for the whole server; gated "
             "models (Llama, Gemma) need a token on the server (HF_TOKEN).")


def option_text(label: str) -> str:
    """How a picker shows a label: a Hub model with a word on what it is, a local GGUF
    model with where it is kept and its size."""
    return option_texts([label])[label]


def option_texts(labels: list[str]) -> dict[str, str]:
    """:func:`option_text` of every label, the server's cache listing read once (a picker
    shows a few dozen options on every run)."""
    cached = hub_models.cached_repos()
    texts = {}
    for label in labels:
        repo = hub_models.hub_repo(label)
        if repo is None:
            name = local_models.local_name(label)
            note = local_models.note(name) if name is not None else ""
        else:
            note = hub_models.POPULAR.get(repo, "")
            if repo in cached:
                note = (note + ", " if note else "") + "cached here"
        texts[label] = f"{label} · {note}" if note else label
    return texts


def _problem_key(box: str) -> str:
    """Where the line for the 🤗 box ``box`` waits until :func:`show_problem` draws it."""
    return box + ".problem"


def load_problem(label: str) -> str | None:
    """``None`` once the tokenizer ``label`` is loaded (cached for the page that shows it
    next), else the one line saying why it cannot be."""
    try:
        state.get_tokenizer(label)
    except PlaygroundError as err:  # the core's messages say what to do
        return str(err)
    except KeyError as err:
        return str(err.args[0] if err.args else err)
    except Exception as err:  # noqa: BLE001 - every failure becomes one line, not a traceback
        return f"“{label}” cannot be loaded ({type(err).__name__}: {err})"
    return None


def open_model(repo: str, on_open: Callable[[str], None] | None = None) -> str | None:
    """Load the Hub model ``repo`` (an ID already checked), then remember it and hand its
    label to ``on_open`` (by default it becomes the active tokenizer). Returns ``None``, or
    the one line saying why it cannot be loaded; then nothing changes: the tokenizer in use
    stays active and the model is neither offered nor remembered."""
    problem = load_problem(hub_models.hub_label(repo))
    if problem is None:
        (on_open or state.set_active)(hub_models.remember(repo))
    return problem


def choose(key: str, *, problem_at: str | None = None) -> None:
    """A picker's ``on_change``: the tokenizer chosen in the select box ``key`` becomes the
    active one once it loads. One that cannot load (a Hub model while the server is offline,
    a GGUF file gone) is not made active: the tokenizer in use stays, and the one line
    saying why waits for :func:`show_problem` (``problem_at``, by default ``key``)."""
    label = st.session_state[key]
    problem = load_problem(label)
    if problem is None:
        state.set_active(label)
    else:
        st.session_state[_problem_key(problem_at or key)] = problem


def open_by_name(key: str, *, on_open: Callable[[str], None] | None = None,
                 label: str = "…or any Hugging Face model", width: int | Literal["stretch"] = "stretch",
                 problem_here: bool = True) -> None:
    """A text box: Enter opens the Hub model typed (:func:`open_model`). A malformed ID is
    refused before anything is fetched, and a model that cannot load is not opened; either
    gets one line (under the box, or where :func:`show_problem` is called when not
    ``problem_here``)."""
    problem_key = _problem_key(key)
    if runtime.in_browser():
        st.caption("Hub models need the server version of the playground (`make run`).")
        return

    def submit() -> None:
        raw = str(st.session_state.get(key) or "")
        if not raw.strip():
            return
        try:
            repo = check_repo_id(hub_models.clean_repo_id(raw[:500]))
        except HubError as err:
            st.session_state[problem_key] = str(err)
            return
        problem = open_model(repo, on_open)
        if problem is not None:
            st.session_state[problem_key] = problem
            return
        st.session_state[key] = ""  # allowed: a callback runs before the box is drawn again

    st.text_input(label, key=key, on_change=submit, placeholder="org/name, e.g. Qwen/Qwen3-8B",
                  help=_BOX_HELP, max_chars=500, icon=hub_models.HUB_ICON, width=width)
    if problem_here:
        show_problem(key)


def show_problem(key: str) -> None:
    """The one line saying why the model typed in the 🤗 box ``key`` (or picked in the
    select box ``key``: :func:`choose`) was not opened, once."""
    problem = st.session_state.pop(_problem_key(key), None)
    if problem:
        st.error(display.escaped(problem), icon="⚠️")  # it quotes what was typed


def tokenizer_picker(key: str, *, label: str = "Tokenizer") -> str:
    """The select box over every tokenizer and model (following, and setting, the session's
    active one), with the 🤗 box beside it. Returns the chosen label. A choice that cannot
    load (a Hub model while the server is offline, a GGUF file gone) is not made: the
    previous one stays, and one line under the box says why."""
    options = state.available_tokenizers()  # listed once for this picker
    st.session_state[key] = state.current_label(options)
    texts = option_texts(options)
    with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
        chosen = st.selectbox(label, options, key=key, on_change=choose, args=(key,),
                              kwargs={"problem_at": key + ".hub"},  # shown under the box
                              format_func=lambda label: texts.get(label) or option_text(label),
                              help=_HELP)
        if not runtime.in_browser():
            open_by_name(key + ".hub", width=260, problem_here=False)
    show_problem(key + ".hub")
    if state.active_label(options) is None:
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
        open_by_name(_SIDEBAR_BOX, label="Model ID (org/name)")
        cached = hub_models.cached_repos()
        if cached:
            st.caption("Cached on this server (open without the network):")
            for repo in cached[:12]:
                st.button(repo, key=f"ui.hub_cached.{repo}", icon="🤗", width="stretch",
                          on_click=_open_cached, args=(repo,))


def _open_cached(repo: str) -> None:
    """A cached model's button: open it, or say under the sidebar's box why it cannot load."""
    problem = open_model(repo)
    if problem is not None:
        st.session_state[_problem_key(_SIDEBAR_BOX)] = problem

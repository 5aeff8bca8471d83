"""Models by Hugging Face Hub ID on the server: their picker labels, the popular ones, the
ones in the server's Hugging Face cache, and one shared load per model.

A Hub model is named in pickers by a label ``"🤗 org/name"`` (:func:`hub_label`) and in links
by ``model=org/name``; :func:`hub_repo` reads the ID back from a label. The tokenizer is
loaded by :func:`core.services.hub.from_pretrained` once per server process (:func:`hub_tokenizer`, a
bounded ``st.cache_resource`` keyed by repo ID and revision): every session then shares the
same read-only object. Streamlit holds one lock per cache key, so a session that waits for a
download waits alone; sessions asking for another model or tokenizer go on.

This module keeps no per-user state of its own except the models this session opened by
name (:data:`ui.keys.HUB_MODELS`, in ``st.session_state``). It does not import
:mod:`ui.state` (which asks it about labels); the widgets live in :mod:`ui.model_picker`.

>>> hub_label("Qwen/Qwen3-8B"), hub_repo("🤗 Qwen/Qwen3-8B"), hub_repo("GPT-2 (gpt2)")
('🤗 Qwen/Qwen3-8B', 'Qwen/Qwen3-8B', None)
"""

from __future__ import annotations

import streamlit as st

from core.errors import HubError, HubOfflineError
from core.interface import TokenizerInterface
from core.services import hub, sources
from ui import keys, local_models, runtime

__all__ = [
    "HUB_ICON",
    "MAX_LOADED",
    "POPULAR",
    "cached_repos",
    "clean_repo_id",
    "describe",
    "hub_label",
    "hub_labels",
    "hub_repo",
    "hub_tokenizer",
    "load",
    "local_gguf_models",
    "opened_repos",
    "remember",
]

HUB_ICON = sources.HUB_ICON
#: Models held in memory at once, for the whole server (a 150k-token model is ~100 MB).
MAX_LOADED = 6
#: Models a session remembers having opened by name (the oldest is forgotten first).
_MAX_OPENED = 16

#: A short list of popular models by Hub ID, with what they are (gated ones need HF_TOKEN on
#: the server). Their tokenizers are fetched on first use; nothing is downloaded before.
POPULAR: dict[str, str] = {
    "meta-llama/Llama-3.1-8B": "Meta Llama 3.1 (gated: the server needs a token)",
    "meta-llama/Llama-3.2-1B": "Meta Llama 3.2 (gated)",
    "Qwen/Qwen3-8B": "Alibaba Qwen 3",
    "google/gemma-3-4b-it": "Google Gemma 3 (gated)",
    "deepseek-ai/DeepSeek-V3": "DeepSeek V3",
    "mistralai/Mistral-7B-Instruct-v0.3": "Mistral 7B v0.3 (SentencePiece)",
    "mistralai/Mistral-Nemo-Instruct-2407": "Mistral NeMo (Tekken)",
    "openai/gpt-oss-20b": "OpenAI gpt-oss (o200k_harmony)",
    "microsoft/phi-4": "Microsoft Phi-4",
    "HuggingFaceTB/SmolLM2-135M": "Hugging Face SmolLM2",
    "google-bert/bert-base-uncased": "BERT (WordPiece)",
    "google-t5/t5-small": "T5 (Unigram)",
    "openai-community/gpt2": "GPT-2 as the Hub has it",
}

_HUB_URL_PREFIXES = ("https://huggingface.co/", "http://huggingface.co/", "huggingface.co/",
                     "https://hf.co/", "hf.co/")


def hub_label(repo_id: str) -> str:
    """The picker label of the Hub model ``repo_id`` (``core.services.sources.Hub``)."""
    return sources.Hub(repo_id).label


def hub_repo(label: object) -> str | None:
    """The repo ID in a Hub model's label (checked again: a label may come from a link),
    else None."""
    found = sources.from_label(label) if isinstance(label, str) else None
    return found.repo if isinstance(found, sources.Hub) else None


def clean_repo_id(text: str) -> str:
    """What a person pastes, made into an ID to check: spaces and a Hub page's address
    around it are dropped (``https://huggingface.co/Qwen/Qwen3-8B/tree/main`` works).

    >>> clean_repo_id("  https://huggingface.co/Qwen/Qwen3-8B/tree/main ")
    'Qwen/Qwen3-8B'
    >>> clean_repo_id("Qwen/Qwen3-8B/"), clean_repo_id("../x")
    ('Qwen/Qwen3-8B', '../x')
    """
    text = text.strip()
    for prefix in _HUB_URL_PREFIXES:
        if text.lower().startswith(prefix):
            parts = text[len(prefix):].split("/")
            text = "/".join(parts[:2])  # org/name; the rest is a page of the repo
            break
    return text[:-1] if text.endswith("/") and text.count("/") == 2 else text


# ---------------------------------------------------------------------------------------------
# What the pickers offer


def opened_repos() -> list[str]:
    """The models this session opened by name or by a link, newest first."""
    return list(st.session_state.get(keys.HUB_MODELS, []))


def remember(repo_id: str) -> str:
    """Note that this session opened ``repo_id`` (an ID already checked); return its label."""
    opened = [r for r in opened_repos() if r != repo_id]
    st.session_state[keys.HUB_MODELS] = [repo_id, *opened][:_MAX_OPENED]
    return hub_label(repo_id)


@st.cache_resource(ttl=60, max_entries=1, show_spinner=False)
def cached_repos() -> tuple[str, ...]:
    """The models in this server's Hugging Face cache that load without the network
    (``core.services.hub.cached_models``), looked at again at most once a minute. A tuple kept as it
    is (``cache_resource``): pickers ask for it once per option on every run, and
    ``cache_data`` would copy it each time."""
    try:
        return tuple(hub.cached_models())
    except HubError:  # huggingface_hub is not installed: nothing is cached
        return ()


def local_gguf_models() -> list[str]:
    """Labels of the local GGUF models to offer beside the Hub models
    (:func:`ui.local_models.labels`): the Ollama / LM Studio models found when whoever
    started the server turned the listing on (``TOKPLAY_LOCAL_MODELS=1``, as ``make run``
    does), else none. The list is the server's own: nothing a browser sends names a path.
    """
    return local_models.labels()


def hub_labels() -> list[str]:
    """The Hub models a picker offers, in order: this session's, the popular ones, the
    server's cached ones (then the local GGUF models of :func:`local_gguf_models`). None in
    the static build: a browser tab has no Hub client."""
    if runtime.in_browser():
        return []
    repos = dict.fromkeys([*opened_repos(), *POPULAR, *cached_repos()])
    return [hub_label(r) for r in repos] + local_gguf_models()


def describe(repo_id: str) -> str:
    """A few words on where the model comes from (the sidebar's and the pickers' caption)."""
    note = POPULAR.get(repo_id, "")
    cached = "cached on this server" if repo_id in cached_repos() else "fetched on first use"
    return f"Hugging Face Hub model {repo_id}" + (f" ({note})" if note else "") + f", {cached}"


# ---------------------------------------------------------------------------------------------
# Loading: once per server process


@st.cache_resource(max_entries=MAX_LOADED, show_spinner="Loading the model's tokenizer from "
                   "the Hugging Face Hub (once for the whole server)…")
def hub_tokenizer(repo_id: str, revision: str | None = None) -> TokenizerInterface:
    """The tokenizer of ``repo_id`` for every session (read-only: never mutate it)."""
    tok = hub.from_pretrained(repo_id, revision=revision)
    cached_repos.clear()  # it may be newly cached: the pickers' list says so at once
    return tok


def load(repo_id: str) -> TokenizerInterface:
    """The tokenizer of the Hub model ``repo_id``, or a one-line ``core.HubError``.

    The core messages name the server's own settings (its cache folder); a browser user
    gets them in words about "this server" instead.
    """
    try:
        return hub_tokenizer(repo_id)
    except HubOfflineError:
        cached = cached_repos()
        shown = ", ".join(cached[:8]) + (" …" if len(cached) > 8 else "")
        raise HubOfflineError(
            f"this server cannot reach the Hugging Face Hub and {repo_id} is not cached "
            f"here; models cached on this server: {shown or 'none'}"
        ) from None

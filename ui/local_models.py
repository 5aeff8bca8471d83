"""GGUF models on the server's own disk (Ollama, LM Studio, named folders), for a one-person run.

Whoever starts the server decides: ``TOKPLAY_LOCAL_MODELS=1`` (``make run`` sets it) turns the
listing on; it is off by default, so on ``make serve`` and any shared server unless its
operator turns it on. The listing is computed on the server from its own folders
(:func:`core.formats.gguf_local.local_gguf_models`: ``~/.ollama/models`` or
``$OLLAMA_MODELS``, ``~/.lmstudio/models``, the folders in ``$TOKPLAY_GGUF_DIRS``), never
from anything a browser sends.

A local model is named in pickers by ``"🦙 <name>"`` (:func:`local_label`; ``ollama list``'s
name, or the file's path inside its LM Studio or named folder) and in links by
``model=gguf:<name>``. A name is only ever looked up in the server's own list: a link's name
that is not listed, or any name while the listing is off, is "not available here", and a
path in a link is never opened. Opening one reads the file in place, only its header and
metadata (:func:`core.formats.gguf_vocab.tokenizer_from_gguf`), once per server process and
file version (:func:`gguf_tokenizer`, a bounded ``st.cache_resource``).

This module imports no other ``ui`` page helper (``ui.hub_models``, ``ui.state`` and
``ui.url_params`` ask it), and keeps no per-user state.

>>> local_label("llama3.2:latest"), local_name("🦙 llama3.2:latest"), local_name("GPT-2 (gpt2)")
('🦙 llama3.2:latest', 'llama3.2:latest', None)
>>> link_value("🦙 llama3.2:latest")
'gguf:llama3.2:latest'
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import streamlit as st

from core.errors import PlaygroundError
from core.formats import gguf_vocab
from core.formats.gguf_local import ENV_DIRS, LocalGGUF, local_gguf_models
from core.interface import TokenizerInterface
from core.services import sources
from ui import runtime
from ui.limits import format_bytes

__all__ = [
    "ENV_ENABLE",
    "LINK_PREFIX",
    "LOCAL_ICON",
    "MAX_LOADED",
    "LocalModelError",
    "describe",
    "from_link",
    "gguf_tokenizer",
    "labels",
    "link_value",
    "listing_on",
    "load",
    "local_label",
    "local_name",
    "models",
    "note",
]

#: The server-side switch: "1" (or true/yes/on) lists the machine's GGUF models.
ENV_ENABLE = "TOKPLAY_LOCAL_MODELS"
LOCAL_ICON = sources.LOCAL_ICON
#: How a link names a local model: ``model=gguf:<name>``.
LINK_PREFIX = "gguf:"
#: Local models' tokenizers held in memory at once (a 150k-token vocab is ~100 MB).
MAX_LOADED = 4
_SOURCES = {"ollama": "Ollama", "lm-studio": "LM Studio", "folder": "TOKPLAY_GGUF_DIRS"}
_MAX_NAME_CHARS = 300
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


class LocalModelError(PlaygroundError):
    """A local GGUF model that this server does not offer (listing off, unknown name), or
    whose file can no longer be read."""


def listing_on() -> bool:
    """Whether whoever started the server turned the listing on (``TOKPLAY_LOCAL_MODELS``).
    Never in the static build: a browser tab has no disk to list."""
    flag = os.environ.get(ENV_ENABLE, "").strip().lower()
    return flag in {"1", "true", "yes", "on"} and not runtime.in_browser()


def local_label(name: str) -> str:
    """The picker label of the local model ``name`` (``core.services.sources.Local``)."""
    return sources.Local(name).label


def local_name(label: object) -> str | None:
    """The name in a local model's label (not yet checked against the list), else None."""
    found = sources.from_label(label) if isinstance(label, str) else None
    return found.name if isinstance(found, sources.Local) else None


def link_value(label: object) -> str | None:
    """What a link's ``model=`` says for a local model's label (``gguf:<name>``), else None."""
    name = local_name(label)
    return None if name is None else LINK_PREFIX + name


# ---------------------------------------------------------------------------------------------
# The server's list


@st.cache_data(ttl=60, max_entries=4, show_spinner=False)
def _scan(home: str, ollama: str, dirs: str) -> dict[str, LocalGGUF]:
    """The models found (name -> model; the first of a name wins), looked at again at most
    once a minute. Keyed by the server's own settings, which a test may change."""
    found: dict[str, LocalGGUF] = {}
    for model in local_gguf_models(home=home, env={"OLLAMA_MODELS": ollama, ENV_DIRS: dirs}):
        found.setdefault(model.name, model)
    return found


def models() -> dict[str, LocalGGUF]:
    """This server's local GGUF models by name: none while the listing is off."""
    if not listing_on():
        return {}
    return _scan(str(Path.home()), os.environ.get("OLLAMA_MODELS", ""),
                 os.environ.get(ENV_DIRS, ""))


def labels() -> list[str]:
    """The labels a picker offers for the local models (none while the listing is off)."""
    return [local_label(name) for name in models()]


def _find(name: str) -> LocalGGUF:
    if not listing_on():
        raise LocalModelError("this server does not list local GGUF models (whoever starts it "
                              f"can turn that on: {ENV_ENABLE}=1)")
    model = models().get(name)
    if model is None:
        raise LocalModelError(f"no local GGUF model named {name[:_MAX_NAME_CHARS]!r} on this "
                              "server; pick one from the list")
    return model


def note(name: str) -> str:
    """A few words on a listed model for the pickers: where it is kept and its size."""
    model = models().get(name)
    if model is None:
        return ""
    return f"{_SOURCES.get(model.source, model.source)}, {format_bytes(model.size)}"


def describe(name: str) -> str:
    """Where the model comes from, in a few words (the sidebar's caption)."""
    shown = note(name)
    return (f"GGUF model {name} on this machine" + (f" ({shown})" if shown else "")
            + ", its tokenizer read in place")


def _looks_like_path(name: str) -> bool:
    """An absolute or home path, a drive, or a ``..`` step: a link trying to name a file.

    >>> [_looks_like_path(n) for n in ("/x.gguf", "~/m", "C:/m", "a/../b", "pub/repo/m.gguf")]
    [True, True, True, True, False]
    """
    return (name.startswith(("/", "~", "\\")) or _DRIVE.match(name) is not None
            or ".." in name.replace("\\", "/").split("/"))


def from_link(value: str) -> tuple[str | None, str | None]:
    """A link's ``gguf:<name>``: ``(label, None)`` when this server lists that name, else
    ``(None, why)``. The name is only looked up in the list: nothing is opened here, and a
    path is never opened at all.

    >>> from_link("gguf:/etc/passwd")[1]
    'is not available here: links name a local model as the picker lists it, never by a path'
    """
    name = value[len(LINK_PREFIX):] if value.startswith(LINK_PREFIX) else value
    if len(name) <= _MAX_NAME_CHARS and listing_on() and name in models():
        return local_label(name), None
    if _looks_like_path(name):
        return None, ("is not available here: links name a local model as the picker lists "
                      "it, never by a path")
    if not listing_on():
        return None, "is not available here: this server does not list local GGUF models"
    return None, "is not available here: no local GGUF model of that name on this server"


# ---------------------------------------------------------------------------------------------
# Loading: in place, once per server process and file version


@st.cache_resource(max_entries=MAX_LOADED, show_spinner="Reading the model's tokenizer from its "
                   "GGUF file (its metadata only, once for the whole server)…")
def gguf_tokenizer(path: str, size: int, mtime_ns: int, name: str) -> TokenizerInterface:
    """The tokenizer in the GGUF file at ``path`` (a path from the server's own list), for
    every session (read-only: never mutate it). ``size`` and ``mtime_ns`` key the file's
    version: a model pulled again is read again."""
    return gguf_vocab.tokenizer_from_gguf(path, name=name)


def load(name: str) -> TokenizerInterface:
    """The tokenizer of the listed local model ``name``, or a one-line ``PlaygroundError``
    (:class:`LocalModelError` when it is not listed here, ``FormatError`` for a bad file)."""
    model = _find(name)
    try:
        stat = os.stat(model.path)
    except OSError:
        _scan.clear()  # removed since it was listed: the pickers stop offering it
        raise LocalModelError(f"the local model {name!r} cannot be read any more (removed "
                              "since it was listed?)") from None
    return gguf_tokenizer(model.path, stat.st_size, stat.st_mtime_ns, name)

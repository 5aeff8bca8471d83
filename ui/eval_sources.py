"""The Evaluate page's texts, by the IDs a link carries (``src=``): where each comes from.

- ``typed``: the page's text box (``text=``, at most ``TOKPLAY_MAX_TEXT_CHARS``);
- ``builtin``: the built-in corpus (Python's docstrings);
- ``lang:<code>``: a language of the bundled parallel set (``core.explain.evaluate.parallel_texts``);
- ``file:<blob>:<name>``: an uploaded text, kept in the server's workspace store
  (``ui.workspace``) so a link or a reload brings it back while it is kept; in the static
  build, in the session only.
"""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from core.services.workspace import is_blob_id
from core.train.builtin_corpus import builtin_corpus_text
from ui import cache, keys, limits, runtime, state, workspace

__all__ = ["DEFAULT_SOURCES", "add_upload", "parallel", "source_digest", "source_label",
           "source_text", "upload_from_link", "uploads"]

#: What a fresh session evaluates.
DEFAULT_SOURCES = ["typed", "lang:en", "lang:ja"]


@st.cache_data(max_entries=1, show_spinner=False)
def parallel() -> dict[str, tuple[str, str]]:
    """The bundled parallel set: language code -> (name, text)."""
    # only the Evaluate page reads the texts; every page imports this module (links name sources)
    from core.explain.evaluate import parallel_texts

    return parallel_texts()


def uploads() -> dict[str, dict[str, Any]]:
    """This session's uploaded texts: source ID -> {"name", "bytes", "blob" or "data"}."""
    return st.session_state.setdefault(keys.EVA_FILES, {})


def source_label(sid: str) -> str:
    """How the picker names a text source."""
    if sid == "typed":
        return "✏️ Your text (the box below)"
    if sid == "builtin":
        return "🐍 Built-in corpus (Python docstrings)"
    if sid.startswith("lang:") and sid[5:] in parallel():
        return f"🌐 {parallel()[sid[5:]][0]} (parallel set)"
    entry = uploads().get(sid)
    if entry is not None:
        return f"📄 {entry['name']} ({limits.format_bytes(entry['bytes'])})"
    return sid


def source_text(sid: str) -> str | None:
    """The text a source ID names, or None when it is not available here."""
    if sid == "typed":
        return str(state.value(keys.EVA_TEXT, state.SAMPLE_TEXT))[: cache.MAX_TEXT_CHARS]
    if sid == "builtin":
        return builtin_corpus_text()
    if sid.startswith("lang:"):
        entry = parallel().get(sid[5:])
        return None if entry is None else entry[1]
    upload = uploads().get(sid)
    if upload is None:
        return None
    if "data" in upload:  # the static build: kept in the session
        return str(upload["data"].decode("utf-8"))
    return workspace.store().get(upload["blob"]).decode("utf-8")


def source_digest(sid: str) -> str | None:
    """A short content hash of the text ``sid`` names (None when it is not available), without
    reading an upload again: its ID holds its content's hash."""
    upload = uploads().get(sid)
    if upload is not None:
        return sid.split(":", 2)[1]
    text = source_text(sid)
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def add_upload(name: str, data: bytes) -> str:
    """Keep an uploaded text (checked to be UTF-8) and return its source ID; raises
    ``core.CorpusError`` with the file's name and byte offset otherwise."""
    limits.decode_upload(name, data)  # refuses binary and non-UTF-8 files, naming the byte
    clean = " ".join(name.split())[:80] or "text"
    if runtime.keeps_work():
        blob = workspace.store().put(data)
        sid = f"file:{blob}:{clean}"
        uploads()[sid] = {"name": clean, "bytes": len(data), "blob": blob}
    else:
        sid = f"file:{hashlib.sha256(data).hexdigest()[:16]}:{clean}"
        uploads()[sid] = {"name": clean, "bytes": len(data), "data": data}
    return sid


def upload_from_link(sid: str) -> str | None:
    """Bring back the upload a link's ``file:<blob>:<name>`` names; a reason if it cannot."""
    _, _, rest = sid.partition(":")
    blob, _, name = rest.partition(":")
    if not is_blob_id(blob) or not runtime.keeps_work():
        return "it is not a text kept on this server"
    try:
        data = workspace.store().get(blob)
    except Exception:  # noqa: BLE001 - expired or never here
        return "it is no longer kept on this server (texts are kept for a while after last use)"
    uploads()[sid] = {"name": " ".join(name.split())[:80] or "text", "bytes": len(data),
                      "blob": blob}
    return None

"""The Train page's form: its fields, their defaults, and how they travel in a snapshot.

Every setting of the form (corpus choice and where it lives, vocab size, special tokens,
pattern, speed) is kept
in the session under its ``keys.TRAIN_*`` name (``ui.state.bind``). A workspace snapshot
(``ui.workspace``) holds the settings that differ from the defaults, so a reload or a
teammate's ``ws=`` link brings back the form exactly as it was shown, and Start trains that.

No Streamlit here: both functions take the session as a plain mapping.

>>> session = {keys.TRAIN_VOCAB_SIZE: 3000, keys.TRAIN_SPEED: "20 merges/s"}
>>> doc = form_doc(session); doc
{'vocab_size': 3000, 'speed': '20 merges/s'}
>>> fresh = {}
>>> apply_doc(doc, fresh); fresh[keys.TRAIN_VOCAB_SIZE], form_doc(fresh) == doc
(3000, True)
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from streamlit.runtime.state import SessionStateProxy

from ui import keys

__all__ = ["BUILTIN", "DEFAULTS", "HUB", "PATTERNS", "SERVER", "SOURCES", "SPEEDS", "UPLOAD",
           "apply_doc", "form_doc", "sources"]

BUILTIN, UPLOAD = "Built-in corpus", "Upload text files"
SERVER, HUB = "Server corpus", "Hugging Face dataset"
#: The corpus choices, as the radio shows them (:func:`sources`: those this server offers).
SOURCES = (BUILTIN, UPLOAD, SERVER, HUB)
#: Pre-tokenizer patterns the form offers (``core.engine.pretokenize.PATTERNS`` names).
PATTERNS = ("gpt2", "cl100k", "o200k")
#: Speeds a training can run at: label -> merges per second (0 = as fast as it can).
SPEEDS = {"full speed": 0.0, "100 merges/s": 100.0, "20 merges/s": 20.0, "5 merges/s": 5.0}
#: Longest special-tokens text a snapshot carries (the box itself takes any length).
_MAX_SPECIALS_CHARS = 10_000
_MAX_NAME_CHARS = 500  # a corpus name, a dataset address, a file in it, a column

#: One row per field: snapshot name -> (session key, default).
_FIELDS: dict[str, tuple[str, Any]] = {
    "source": (keys.TRAIN_SOURCE, BUILTIN),
    "vocab_size": (keys.TRAIN_VOCAB_SIZE, 2000),
    "specials": (keys.TRAIN_SPECIALS, "<|endoftext|>"),
    "pattern": (keys.TRAIN_PATTERN, "gpt2"),
    "speed": (keys.TRAIN_SPEED, "full speed"),
    "server_corpus": (keys.TRAIN_SERVER_CORPUS, ""),
    "hf_dataset": (keys.TRAIN_HF_DATASET, ""),
    "hf_file": (keys.TRAIN_HF_FILE, ""),
    "text_column": (keys.TRAIN_TEXT_COLUMN, "text"),
}
#: Session key -> default, for ``ui.state.bind`` on the page.
DEFAULTS: dict[str, Any] = dict(_FIELDS.values())


def sources(*, server: bool, hub: bool) -> list[str]:
    """The corpus choices a server offers: a server corpus only where its operator lists
    some folders, a Hugging Face dataset only where trainings run in worker processes.

    >>> sources(server=False, hub=True)
    ['Built-in corpus', 'Upload text files', 'Hugging Face dataset']
    """
    return [s for s in SOURCES if (s != SERVER or server) and (s != HUB or hub)]


def _valid(name: str, value: Any) -> bool:
    """Whether a snapshot's value for ``name`` is one the form can show (a snapshot is
    untrusted input: a link may carry anything).

    >>> _valid("vocab_size", 3000), _valid("vocab_size", True), _valid("pattern", "../x")
    (True, False, False)
    """
    if name == "source":
        return value in SOURCES
    if name == "vocab_size":  # any int: the page says why an out-of-range one cannot train
        return type(value) is int and abs(value) < 10**12
    if name == "specials":
        return isinstance(value, str) and len(value) <= _MAX_SPECIALS_CHARS
    if name == "pattern":
        return value in PATTERNS
    if name in ("server_corpus", "hf_dataset", "hf_file", "text_column"):
        return isinstance(value, str) and len(value) <= _MAX_NAME_CHARS  # the page checks it
    return name == "speed" and value in SPEEDS


def form_doc(session: Mapping[str, Any] | SessionStateProxy) -> dict[str, Any] | None:
    """The form's settings that differ from the defaults, by field name; None when all are
    defaults (then a snapshot needs nothing to bring the form back).

    >>> form_doc({keys.TRAIN_PATTERN: "gpt2"}) is None
    True
    >>> form_doc({keys.TRAIN_SOURCE: UPLOAD, keys.TRAIN_SPECIALS: "<|endoftext|>, <|pad|>"})
    {'source': 'Upload text files', 'specials': '<|endoftext|>, <|pad|>'}
    """
    doc = {}
    for name, (key, default) in _FIELDS.items():
        value = session.get(key, default)  # one read: every page run asks (ui.workspace.save)
        if value != default and _valid(name, value):
            doc[name] = value
    return doc or None


def apply_doc(doc: Any, session: MutableMapping[str, Any] | SessionStateProxy) -> None:
    """Put a snapshot's form settings into the session; fields the snapshot leaves out go
    back to their defaults (it was written with those), unusable values are skipped.

    >>> session = {keys.TRAIN_VOCAB_SIZE: 5000}
    >>> apply_doc({"pattern": "o200k", "source": "<script>"}, session)
    >>> session[keys.TRAIN_VOCAB_SIZE], session[keys.TRAIN_PATTERN], session[keys.TRAIN_SOURCE]
    (2000, 'o200k', 'Built-in corpus')
    """
    doc = doc if isinstance(doc, dict) else {}
    for name, (key, default) in _FIELDS.items():
        value = doc.get(name, default)
        session[key] = value if _valid(name, value) else default

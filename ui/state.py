"""Per-session state: the session's tokenizers, the active one, and page values that survive
navigation.

Everything per-user lives in ``st.session_state`` (never in module globals, which every user of
the server shares). Keys carry a prefix per page (``tok.``, ``dec.``, ``voc.``, ``cmp.``,
``train.``) plus a few shared ones (``ui.``).

Tokenizers are named by a *label*, the string shown in pickers:

- session ones (trained or uploaded): the label given to :func:`register_tokenizer`;
- presets: ``"GPT-2 (gpt2)"``, ``"GPT-4 (cl100k_base)"``, ``"GPT-4o (o200k_base)"``;
- baselines: ``"Word-level baseline"``, ``"Char-level baseline"``;
- saved in the server's library (shared by every session): ``"📚 <name> · <16 hex ID>"``;
- Hugging Face Hub models: ``"🤗 org/name"`` (``ui.hub_models``; links say ``model=org/name``);
- GGUF models on the server's disk, when it lists them: ``"🦙 <name>"`` (``ui.local_models``;
  links say ``model=gguf:<name>``).

Labels are plain strings; links (``ui.links``) name presets and baselines by their label and
saved tokenizers as ``lib:<ID>``. Session-only tokenizers cannot be linked until saved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from core.interface import TokenizerInterface
from core.services import sources
from core.services.library import Entry
from ui import cache, hub_models, keys, local_models

# ---------------------------------------------------------------------------------------------
# Built-in tokenizer labels (not per-user: constants, from core.services.sources' tables)

PRESET_LABELS: dict[str, str] = sources.PRESET_LABELS  # label -> preset name
BASELINE_LABELS: dict[str, str] = sources.BASELINE_LABELS  # label -> baseline kind

_SESSION = keys.TOKENIZERS
_ACTIVE = keys.ACTIVE
_SAVED = keys.SAVED

#: Saved-library labels: "📚 <name> · <ID>" (the ID is what links carry, as "lib:<ID>").
LIBRARY_ICON = sources.LIBRARY_ICON


def init_session() -> None:
    """Create the shared session keys once per session (called by ``ui.page.setup``)."""
    st.session_state.setdefault(_SESSION, {})
    st.session_state.setdefault(_ACTIVE, None)


# ---------------------------------------------------------------------------------------------
# Tokenizers of this session


def fingerprint(tok: TokenizerInterface) -> str:
    """The tokenizer's own content hash (``tok.fingerprint()``: vocab, merges, specials,
    pattern, template, every pipeline stage): the cache key for everything computed from
    it, so two users' "my tokenizer" never share cached results, nor do two pipelines that
    differ by a normalizer alone."""
    return tok.fingerprint()


def register_tokenizer(label: str, tok: TokenizerInterface, *, source: str,
                       meta: dict[str, Any] | None = None) -> str:
    """Add a trained or uploaded tokenizer to this session and return its (unique) label.

    A label already taken by a *different* tokenizer gets a suffix (``"mine (2)"``); registering
    the same content under the same label again is a no-op. ``source`` is a short note shown
    in the sidebar ("trained on built-in corpus", "uploaded vocab.pkl + merges.pkl", ...).
    ``meta`` (optional) is kept for saving to the library: ``corpus_name``, ``corpus_size``.
    """
    init_session()
    session: dict[str, dict[str, Any]] = st.session_state[_SESSION]
    fp = fingerprint(tok)
    base = label.strip() or "tokenizer"
    if base in PRESET_LABELS or base in BASELINE_LABELS:
        base = f"{base} (yours)"
    final, n = base, 1
    while final in session and session[final]["fingerprint"] != fp:
        n += 1
        final = f"{base} ({n})"
    session[final] = {"tok": tok, "source": source, "fingerprint": fp, "meta": dict(meta or {})}
    return final


def training_rows(label: str) -> tuple[Any, ...] | None:
    """The merge rows of the training that made the session tokenizer ``label``
    (``ui.training_worker.MergeRow``: rank, count, token, pair, vocab size, seconds), or None
    for a tokenizer that was not trained in this session (or whose training was not kept)."""
    own = session_tokenizers().get(label)
    if own is None:
        return None
    rows = (own.get("meta") or {}).get("rows")
    return tuple(rows) if rows else None


def session_tokenizers() -> dict[str, dict[str, Any]]:
    """This session's own tokenizers: label -> {"tok", "source", "fingerprint"}."""
    own = st.session_state.get(_SESSION)  # one read: a run asks this a dozen times
    if own is None:
        init_session()
        own = st.session_state[_SESSION]
    return own


def library_label(entry: Any) -> str:
    """The picker label of a saved tokenizer (``core.services.library.Entry``).

    >>> from types import SimpleNamespace
    >>> library_label(SimpleNamespace(name="mine", id="0123456789abcdef"))
    '📚 mine · 0123456789abcdef'
    """
    return sources.Saved(entry.id, entry.name).label


def library_id(label: str | None) -> str | None:
    """The library ID inside a saved tokenizer's label, else None.

    >>> library_id("📚 mine · 0123456789abcdef"), library_id("GPT-2 (gpt2)")
    ('0123456789abcdef', None)
    """
    if not isinstance(label, str) or label in session_tokenizers():
        return None
    found = sources.from_label(label)
    return found.entry_id if isinstance(found, sources.Saved) else None


def library_labels() -> list[str]:
    """Labels of every tokenizer saved in the server's library (newest first)."""
    return [library_label(e) for e in cache.library_entries()]


def available_tokenizers() -> list[str]:
    """Labels a picker offers: this session's tokenizers (newest first), presets, the saved
    library's tokenizers, baselines, Hub models (``ui.hub_models.hub_labels``)."""
    session = session_tokenizers()  # read once: each read of the session state costs
    own = list(session)[::-1]
    return own + list(PRESET_LABELS) + library_labels() + list(BASELINE_LABELS) + [
        label for label in hub_models.hub_labels() if label not in session]


def source(label: str) -> sources.Source:
    """The source a picker label names (``core.services.sources``): this session's own
    tokenizer first, then a preset, baseline, saved tokenizer, Hub or local model; raises
    ``KeyError`` for a label that names none."""
    own = session_tokenizers().get(label)
    if own is not None:
        return sources.Own(label, own["tok"], own["source"], own["fingerprint"])
    found = sources.from_label(label)
    if found is None:
        raise KeyError(label)
    return found


def describe(label: str) -> str:
    """Where a tokenizer comes from, in a few words (for captions and the sidebar)."""
    try:
        return source(label).describe(LOADERS)
    except KeyError:
        return "unknown"


def tokenizer_key(label: str) -> str:
    """A cache key naming the *content* of a labelled tokenizer (for ``st.cache_data``):
    ``own:``/``hub:``/``gguf:`` and a content hash, ``preset:gpt2``, ``baseline:word``,
    ``lib:<ID>`` (a content hash too). ``KeyError`` for an unknown label."""
    return source(label).key(LOADERS)


def saved_id(label: str) -> str | None:
    """The library ID a label can be linked by: a saved tokenizer's own ID, or the ID under
    which this session saved one of its tokenizers; None for presets, baselines and unsaved
    session tokenizers."""
    entry_id = library_id(label)
    if entry_id is not None:
        return entry_id
    own = session_tokenizers().get(label)
    if own is None:
        return None
    return st.session_state.get(_SAVED, {}).get(own["fingerprint"])


def remember_saved(label: str, entry_id: str) -> None:
    """Note that this session's tokenizer ``label`` is saved in the library as ``entry_id``."""
    own = session_tokenizers().get(label)
    if own is not None:
        st.session_state.setdefault(_SAVED, {})[own["fingerprint"]] = entry_id


def get_tokenizer(label: str) -> TokenizerInterface:
    """The tokenizer behind a label: any ``core.TokenizerInterface`` (a ``core.Tokenizer``, a
    pipeline, a baseline); what else it can do, pages ask its ``capabilities``.

    Raises ``KeyError`` for an unknown label and ``core.PlaygroundError`` when a preset or
    baseline cannot be built; pages show
    those with :func:`ui.widgets.show_error`.
    """
    try:
        found = source(label)
    except KeyError:
        raise KeyError(f"no tokenizer named {label!r} in this session: pick one from the "
                       "list") from None
    return found.load(LOADERS)


def _saved(entry_id: str) -> TokenizerInterface:
    root = cache.library_root()
    cache.library().get(entry_id)  # says so if it was deleted since it was cached
    return cache.library_tokenizer(root, entry_id)


def _saved_entry(entry_id: str) -> Entry | None:
    return next((e for e in cache.library_entries() if e.id == entry_id), None)


def _load_files(files: sources.Files) -> TokenizerInterface:
    specials = None if files.special_tokens is None else list(files.special_tokens)
    return cache.load_files(dict(files.files), special_tokens=specials, pattern=files.pattern)


#: How each kind of source loads in the app: through the server's shared caches (looked up
#: on each call, so a test that replaces one is obeyed). A local model's name is only ever
#: looked up in the server's own list, never opened as a path.
LOADERS = sources.Loaders(
    preset=lambda name: cache.preset(name),
    baseline=lambda kind: cache.baseline(kind),
    saved=_saved,
    hub=lambda repo, _revision: hub_models.load(repo),
    local=lambda name: local_models.load(name),
    files=_load_files,
    saved_entry=_saved_entry,
    hub_words=lambda repo: hub_models.describe(repo),
    local_words=lambda name: local_models.describe(name),
)


def set_active(label: str | None) -> None:
    """Make ``label`` the session's active tokenizer (the default in every picker)."""
    init_session()
    st.session_state[_ACTIVE] = label


def offered(label: object, options: list[str] | None = None) -> bool:
    """Whether a picker offers ``label`` (is it in :func:`available_tokenizers`?), asking the
    cheap sources first: a run asks this several times (the sidebar, the picker, the link),
    and the whole list reads the library and the Hub cache."""
    if options is not None:
        return label in options
    if not isinstance(label, str):
        return False
    return (label in session_tokenizers() or label in PRESET_LABELS or label in BASELINE_LABELS
            or label in library_labels() or label in hub_models.hub_labels())


def active_label(options: list[str] | None = None) -> str | None:
    """The active tokenizer's label, or ``None`` if the session has not chosen one yet
    (what pages use then: :func:`current_label`). ``options``: :func:`available_tokenizers`
    when the caller has it already (it is not listed again)."""
    label = st.session_state.get(_ACTIVE)
    return label if offered(label, options) else None


def current_label(options: list[str] | None = None) -> str:
    """The tokenizer pages use now: the active one, else the first one a picker offers
    (``"GPT-2 (gpt2)"`` in a fresh session). Pickers start from it and the sidebar names it,
    so both say the same before the session has chosen anything. ``options``:
    :func:`available_tokenizers` when the caller has it already."""
    label = active_label(options)
    if label is not None:
        return label
    if options:
        return options[0]
    own = session_tokenizers()  # the first offered: the newest of the session's own, else GPT-2
    return next(reversed(own), None) or next(iter(PRESET_LABELS))


# ---------------------------------------------------------------------------------------------
# Page values that survive navigation


def bind(key: str, default: Any = None) -> dict[str, Any]:
    """Keyword arguments that bind a widget to the persistent session value ``key``.

    Streamlit deletes a widget's own state when the user visits another page, so a widget is
    given a shadow key (``"_w." + key``) and copies its value into ``key`` on change; ``key``
    itself is never a widget key and so survives navigation (and can later be filled from a
    URL). Use as ``st.text_area("Text", **ui.state.bind(keys.TOK_TEXT, "hello"))``.
    """
    st.session_state.setdefault(key, default)
    widget_key = bound_widget_key(key)
    # Safe: a widget's state may be set before the widget is created in this run.
    # subtle: only when they differ. A widget set from Python is sent with its value to
    # show, and a run that ends after the user typed on (live typing: ui.live_input) would
    # then put the box back to the text of that run, losing the keys typed since.
    if st.session_state.get(widget_key) != st.session_state[key]:
        st.session_state[widget_key] = st.session_state[key]
    return {"key": widget_key, "on_change": _copy(widget_key, key)}


def bound_widget_key(key: str) -> str:
    """The key of the widget :func:`bind` binds to ``key``.

    >>> bound_widget_key("voc.token")
    '_w.voc.token'
    """
    return "_w." + key


def _copy(src: str, dst: str) -> Callable[[], None]:
    def copy() -> None:
        st.session_state[dst] = st.session_state[src]

    return copy


def value(key: str, default: Any = None) -> Any:
    """The persistent session value ``key`` (``default`` if unset)."""
    return st.session_state.get(key, default)


def set_value(key: str, new: Any) -> None:
    """Set a persistent session value (e.g. from a button handler or a URL)."""
    st.session_state[key] = new


#: The text pages start with: English, code, whitespace runs, an emoji, CJK.
SAMPLE_TEXT = (
    "Tokenizers turn text into numbers. Byte-level BPE never needs an <|unk|>:\n"
    "def greet(name):\n\treturn f\"Hello, {name}!\"   # 3 spaces\n"
    "Emoji 🧩 and 日本語 split into bytes."
)


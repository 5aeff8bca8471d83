"""What a link names besides plain values: tokenizers and long texts, both checked on the
way in and made linkable on the way out.

- **Tokenizers** (``tok=``): a preset or baseline by label (``GPT-2 (gpt2)``) or preset name
  (``gpt2``), a saved one as ``lib:<16 hex>`` (the server's library), or one of this
  session's own by label when its workspace keeps it (the link's ``ws=`` brings it along).
  :func:`resolve_tokenizer` reads one, :func:`link_name` writes one, :func:`unsaved_note`
  says why one cannot be linked.
- **Long texts** (``text=``, ``ids=``): over ``TOKPLAY_URL_TEXT_CHARS`` a text is stored on the
  server (``TokenizerLibrary.save_text``) and the link says ``@<16 hex>``
  (:func:`text_for_link`); :func:`text_from_link` reads either form back.

A problem comes back as a reason in words, for the page's "Link problem" note. The note is
Markdown: the link's value goes in as a code span (:func:`shown`), a label or an error (which
may quote a file name) through ``ui.display.escaped``, so each shows literally.
"""

from __future__ import annotations

import hashlib
import urllib.parse

import streamlit as st

from core.errors import InvalidIdError, UnknownIdError
from core.services import sources
from core.services.library import validate_id
from ui import cache, display, keys, limits, runtime, state

__all__ = [
    "link_name",
    "resolve_tokenizer",
    "shown",
    "text_for_link",
    "text_from_link",
    "unsaved_note",
]

_MAX_LABEL_CHARS = 300
_MAX_TEXT_IDS = 32


def shown(value: str, *, limit: int = 60) -> str:
    """A URL value shown literally inside a Markdown message: a code span
    (``ui.display.code_span``: backticks and ``:material/`` too), control characters as
    ``?``, shortened.

    >>> shown("../../etc/passwd"), shown("**b** $x$")
    ('`../../etc/passwd`', '`**b** $x$`')
    >>> shown("a`b\\n" + "x" * 100, limit=12)
    '``a`b?xxxx…`` (104 characters)'
    >>> shown(":material/home:")
    '\\\\:`material/home:`'
    """
    clean = "".join("?" if (ord(c) < 32 or ord(c) == 127) else c for c in value)
    if len(clean) <= limit:
        return display.code_span(clean)
    return f"{display.code_span(clean[: limit - 4] + '…')} ({len(value):,} characters)"


# ---------------------------------------------------------------------------------------------
# Tokenizers in links


def link_name(label: str) -> str | None:
    """What a link calls the tokenizer ``label``: presets and baselines by label, saved ones
    as ``lib:<ID>``, the session's own by label when its workspace keeps them (the link's
    ``ws=`` reopens them: ``ui.workspace``); None for one that cannot be linked."""
    if label in state.PRESET_LABELS or label in state.BASELINE_LABELS:
        return label
    entry_id = state.saved_id(label)
    if entry_id is not None:
        return f"lib:{entry_id}"
    if label in st.session_state.get(keys.WS_RECIPES, {}) and st.session_state.get(keys.WS_ID):
        return label  # kept in the session's workspace: the link's ws= brings it along
    return None


def resolve_tokenizer(name: str) -> tuple[str | None, str | None]:
    """The picker label a link's ``tok`` value names, or ``(None, reason)``.

    Accepts a preset or baseline label, a preset name (``gpt2``), ``lib:<ID>`` of a saved
    tokenizer, and (for a session reopening its own link) a label of this session.
    """
    if len(name) > _MAX_LABEL_CHARS:
        return None, f"the tokenizer name in the link is {len(name):,} characters long"
    try:
        found = sources.from_link(name)
    except InvalidIdError:
        return None, (f"{shown(name)} is not a valid saved-tokenizer ID (`lib:` and 16 "
                      "characters 0-9, a-f): check that the link was copied completely")
    if isinstance(found, sources.Saved):
        return _saved_label(name, found.entry_id)
    if found is not None:
        return found.label, None
    if name in state.session_tokenizers():
        return name, None
    return None, (f"the link names the tokenizer {shown(name)}, which this server does not "
                  "know. Tokenizers trained or uploaded in another browser session stay in "
                  "that session: its owner can save it to the library (📚) and share a new "
                  "link, which names it `lib:<ID>`")


def _saved_label(name: str, entry_id: str) -> tuple[str | None, str | None]:
    """The picker label of the saved tokenizer a link's ``lib:<ID>`` names, or why not."""
    try:
        if not cache.library_exists():
            raise UnknownIdError(f"no saved tokenizer with ID {entry_id}")
        entry = cache.library().get(entry_id)
    except UnknownIdError:
        return None, (f"the saved tokenizer {shown(name)} is not in this server's library "
                      "(it may have been deleted)")
    except Exception as err:  # noqa: BLE001 - damaged entry, unreadable library
        return None, (f"the saved tokenizer {shown(name)} cannot be opened: "
                      f"{display.escaped(str(err))}")
    label = state.library_label(entry)
    if label not in state.available_tokenizers():
        cache.forget_library_entries()  # saved by another session moments ago
    return label, None


def unsaved_note(label: str) -> str:
    """Why a link cannot name the session tokenizer ``label``, and what to do instead."""
    if not runtime.keeps_work():
        return (f"“{display.escaped(label)}” lives only in this browser tab, so the link "
                "cannot name it (a "
                "teammate would see the default tokenizer): the static version has no "
                "library. Send its files instead (Train's downloads, Tokenize's Export).")
    return (f"“{display.escaped(label)}” lives only in your browser session, so the link "
            "cannot name it (a teammate would see the default tokenizer). Save it to the "
            "library to share it.")


# ---------------------------------------------------------------------------------------------
# Texts in links


def text_from_link(value: str, *, what: str) -> tuple[str | None, str | None]:
    """A ``text``/``ids`` value: the text itself or ``@<ID>`` of a stored text."""
    if value.startswith("@"):
        try:
            text_id = validate_id(value[1:])
            if not cache.library_exists():
                raise UnknownIdError(text_id)
            return cache.library().load_text(text_id), None
        except InvalidIdError:
            return None, (f"the link's {what} {shown(value)} is not a valid stored-text ID "
                          "(`@` and 16 characters 0-9, a-f)")
        except UnknownIdError:
            return None, (f"the link's {what} {shown(value)} is not stored on this server "
                          "(another server's link, or its library was reset)")
        except Exception as err:  # noqa: BLE001
            return None, (f"the link's {what} {shown(value)} cannot be read: "
                          f"{display.escaped(str(err))}")
    return value, None


def text_for_link(text: str) -> tuple[str | None, str | None]:
    """The ``text`` value a link carries: the text, or ``@<ID>`` after storing a long text on
    the server; ``(None, reason)`` if it cannot be stored."""
    if len(urllib.parse.quote(text, safe="")) <= limits.url_text_chars():
        return text, None
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    known: dict[str, str] = st.session_state.setdefault(keys.LINKS_TEXT_IDS, {})
    if key not in known:
        try:
            text_id = cache.library().save_text(text)
        except Exception as err:  # noqa: BLE001 - LibraryError: size limit, unwritable folder
            return None, ("the text is too long for a link and cannot be stored here "
                          f"({display.escaped(str(err))})")
        if len(known) >= _MAX_TEXT_IDS:
            known.pop(next(iter(known)))
        known[key] = text_id
    return "@" + known[key], None

"""Errors raised by core. Every message says what went wrong *and* what to do about it.

All of them subclass :class:`PlaygroundError` (a ``ValueError``), so a UI can catch one
type and show ``str(err)`` to the user::

    PlaygroundError(ValueError)
    ├── CorpusError              the training corpus cannot be used
    ├── TrainingConfigError      inconsistent training settings
    ├── FormatError              a malformed tokenizer file
    │   ├── UnsafePickleError    a pickle that tries to run code
    │   └── PatternNeededError   a rank file we do not know: which pattern splits its text?
    ├── LibraryError             the saved-tokenizer library (core.services.library)
    │   ├── LibraryStorageError  its folder cannot be written (also an OSError)
    │   ├── InvalidIdError       not a well-formed library ID
    │   └── UnknownIdError       a well-formed ID that names nothing
    └── HubError                 a model by name from the Hugging Face Hub (core.services.hub)
        ├── HubOfflineError      no network, and the model is not in the local cache
        └── HubAccessError       unknown, private or gated: the Hub refused (a token may help)
"""

from __future__ import annotations


class PlaygroundError(ValueError):
    """Base class for every error core raises on bad user input."""


class CorpusError(PlaygroundError):
    """The training corpus cannot be used (not UTF-8, unreadable, ...)."""


class TrainingConfigError(PlaygroundError):
    """Training settings are inconsistent (vocab size too small, bad special tokens, ...)."""


class FormatError(PlaygroundError):
    """A tokenizer file is malformed; the message says which file, where, and what is wrong."""


class UnsafePickleError(FormatError):
    """A pickle tried to do more than describe plain data (e.g. call a function)."""


class PatternNeededError(FormatError):
    """A rank file we do not recognise: it stores no pre-tokenizer pattern, and guessing one
    would give wrong IDs with no sign, so the caller must choose (``pattern=``)."""


class LibraryError(PlaygroundError):
    """The library cannot do what was asked (bad input, damaged entry, size limit)."""


class LibraryStorageError(LibraryError, OSError):
    """The library's folder cannot be written (permissions, a full disk, something in the way).

    Also an ``OSError``, so code that catches those keeps working (like ``io.UnsupportedOperation``).
    """


class InvalidIdError(LibraryError):
    """A text that is not a well-formed library ID (e.g. from a hand-edited link)."""


class UnknownIdError(LibraryError):
    """A well-formed ID that names nothing in the library (never saved, or deleted)."""


class HubError(PlaygroundError):
    """A model named by its Hugging Face Hub ID cannot be loaded (malformed ID, no tokenizer
    files in the repo, huggingface_hub missing, the Hub answering an error)."""


class HubOfflineError(HubError):
    """The Hub cannot be reached (no network, or ``HF_HUB_OFFLINE=1``) and the model is not
    in the local Hugging Face cache; the message lists what is cached."""


class HubAccessError(HubError):
    """The Hub refused the repo: it does not exist, or it is private or gated and needs a
    token (``HF_TOKEN`` or ``huggingface-cli login``)."""

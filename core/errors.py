"""Errors raised by core. Every message says what went wrong *and* what to do about it.

All of them subclass :class:`PlaygroundError` (a ``ValueError``), so a UI can catch one
type and show ``str(err)`` to the user.
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

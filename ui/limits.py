"""Limits that protect a shared server, in one place (no Streamlit import).

Every limit is read from an environment variable when the server starts, with a default that
suits a small team on one machine. Each one, when hit, gives the user a message saying what
was cut and how to get more.

=========================  ==========  ==============================================================
Environment variable       Default     What it bounds
=========================  ==========  ==============================================================
TOKPLAY_MAX_UPLOAD_MB      50          corpus uploads (Train) and tokenizer files (sidebar), in total;
                                       keep ``server.maxUploadSize`` in .streamlit/config.toml >= it
TOKPLAY_MAX_TEXT_CHARS     50,000      text tokenized on Tokenize and Compare (the rest is cut off)
TOKPLAY_MAX_IDS            20,000      IDs decoded on Decode
TOKPLAY_MAX_VOCAB          50,000      vocab size a training may ask for
TOKPLAY_TRAIN_MEMORY_MB    2,048       address space of each training worker (its own job ends)
TOKPLAY_MAX_TRAININGS      2           trainings running at once; more wait in a queue
TOKPLAY_URL_TEXT_CHARS     1,500       longest text kept in a link; longer ones are stored on the
                                       server (the link says ``text=@<id>``)
=========================  ==========  ==============================================================

>>> max_text_chars() >= 1
True
"""

from __future__ import annotations

from ui.jobs import (
    DEFAULT_MAX_TRAININGS,
    DEFAULT_MAX_UPLOAD_MB,
    DEFAULT_MAX_VOCAB,
    DEFAULT_MEMORY_MB,
    env_int,
    format_bytes,
    max_upload_bytes,
    max_vocab_size,
    vocab_size_problem,
)

__all__ = [
    "DEFAULT_MAX_IDS",
    "DEFAULT_MAX_TEXT_CHARS",
    "DEFAULT_MAX_TRAININGS",
    "DEFAULT_MAX_UPLOAD_MB",
    "DEFAULT_MAX_VOCAB",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_URL_TEXT_CHARS",
    "MAX_PARAM_CHARS",
    "format_bytes",
    "max_concurrent_trainings",
    "max_ids",
    "max_text_chars",
    "max_upload_bytes",
    "max_vocab_size",
    "text_too_long",
    "train_memory_mb",
    "upload_too_large",
    "url_text_chars",
    "vocab_size_problem",
]

DEFAULT_MAX_TEXT_CHARS = 50_000
DEFAULT_MAX_IDS = 20_000
DEFAULT_URL_TEXT_CHARS = 1_500
#: Anything longer in one URL parameter is hostile or broken; it is never processed in full.
MAX_PARAM_CHARS = 200_000


def max_text_chars() -> int:
    """Longest text the Tokenize and Compare pages process (``TOKPLAY_MAX_TEXT_CHARS``)."""
    return env_int("TOKPLAY_MAX_TEXT_CHARS", DEFAULT_MAX_TEXT_CHARS)


def max_ids() -> int:
    """Longest ID list the Decode page decodes (``TOKPLAY_MAX_IDS``)."""
    return env_int("TOKPLAY_MAX_IDS", DEFAULT_MAX_IDS)


def url_text_chars() -> int:
    """Longest (URL-encoded) text a link carries itself (``TOKPLAY_URL_TEXT_CHARS``)."""
    return env_int("TOKPLAY_URL_TEXT_CHARS", DEFAULT_URL_TEXT_CHARS, minimum=16)


def train_memory_mb() -> int:
    """Address-space limit of one training worker in MiB (``TOKPLAY_TRAIN_MEMORY_MB``; 0 = none)."""
    return env_int("TOKPLAY_TRAIN_MEMORY_MB", DEFAULT_MEMORY_MB, minimum=0)


def max_concurrent_trainings() -> int:
    """Trainings that run at once (``TOKPLAY_MAX_TRAININGS``); the rest queue."""
    return env_int("TOKPLAY_MAX_TRAININGS", DEFAULT_MAX_TRAININGS)


def text_too_long(n_chars: int, *, limit: int, what: str = "tokenizes") -> str | None:
    """The message for a text over the limit, or None.

    >>> text_too_long(10, limit=20) is None
    True
    >>> text_too_long(30, limit=20)
    'This text has 30 characters; the playground tokenizes only the first 20 (server limit TOKPLAY_MAX_TEXT_CHARS). Paste a shorter text to see all of it.'
    """
    if n_chars <= limit:
        return None
    return (f"This text has {n_chars:,} characters; the playground {what} only the first "
            f"{limit:,} (server limit TOKPLAY_MAX_TEXT_CHARS). Paste a shorter text to see all "
            "of it.")


def upload_too_large(n_bytes: int, *, limit: int | None = None) -> str | None:
    """The message for tokenizer files over the upload limit, or None.

    >>> upload_too_large(10, limit=100) is None
    True
    >>> upload_too_large(2048, limit=1024)
    'These files are 2.0 KB together; this server accepts at most 1.0 KB (TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.'
    """
    limit = max_upload_bytes() if limit is None else limit
    if n_bytes <= limit:
        return None
    return (f"These files are {format_bytes(n_bytes)} together; this server accepts at most "
            f"{format_bytes(limit)} (TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.")

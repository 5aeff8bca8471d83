"""Limits that protect a shared server, in one place (no Streamlit import).

Every limit is read from an environment variable when the server starts, with a default that
suits a small team on one machine. Each one, when hit, gives the user a message saying what
was cut and how to get more.

=========================  ==========  ==============================================================
Environment variable       Default     What it bounds
=========================  ==========  ==============================================================
TOKPLAY_MAX_UPLOAD_MB      50          corpus uploads (Train) and tokenizer files (sidebar), in total,
                                       and each text file (Evaluate), in decimal MB; the uploaders
                                       let one file up to twice that reach the page (which says why
                                       it is refused) and state this limit in their drop zone
                                       (:func:`upload_limit_note`); ``server.maxUploadSize`` in
                                       .streamlit/config.toml must be at least twice it
TOKPLAY_MAX_TEXT_CHARS     50,000      text tokenized on Tokenize and Compare (the rest is cut off)
TOKPLAY_MAX_IDS            20,000      IDs decoded on Decode
TOKPLAY_MAX_VOCAB          50,000      vocab size a training may ask for
TOKPLAY_TRAIN_MEMORY_MB    2,048       address space of each training worker in MB (its job ends)
TOKPLAY_MAX_TRAININGS      2           trainings running at once; more wait in a queue
TOKPLAY_URL_TEXT_CHARS     1,500       longest text kept in a link; longer ones are stored on the
                                       server (the link says ``text=@<id>``)
=========================  ==========  ==============================================================

Sizes are in decimal units everywhere (1 MB = 1,000,000 bytes), as Streamlit's file uploader
shows them: a file the uploader calls "41.2MB" is "41.2 MB" in every message.

>>> max_text_chars() >= 1
True
"""

from __future__ import annotations

import os

from core.errors import CorpusError

__all__ = [
    "DEFAULT_MAX_IDS",
    "DEFAULT_MAX_TEXT_CHARS",
    "DEFAULT_MAX_TRAININGS",
    "DEFAULT_MAX_UPLOAD_MB",
    "DEFAULT_MAX_VOCAB",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_URL_TEXT_CHARS",
    "MAX_PARAM_CHARS",
    "MB",
    "corpus_file_too_large",
    "decode_upload",
    "env_int",
    "format_bytes",
    "format_sizes",
    "max_concurrent_trainings",
    "max_ids",
    "max_text_chars",
    "max_upload_bytes",
    "max_vocab_size",
    "parse_special_tokens",
    "readable_token",
    "text_too_long",
    "train_memory_mb",
    "upload_limit_note",
    "upload_too_large",
    "upload_transport_mb",
    "url_text_chars",
    "vocab_size_problem",
]

DEFAULT_MAX_TRAININGS = 2
DEFAULT_MEMORY_MB = 2048
DEFAULT_MAX_VOCAB = 50_000
DEFAULT_MAX_UPLOAD_MB = 50
DEFAULT_MAX_TEXT_CHARS = 50_000
DEFAULT_MAX_IDS = 20_000
DEFAULT_URL_TEXT_CHARS = 1_500
#: Anything longer in one URL parameter is hostile or broken; it is never processed in full.
MAX_PARAM_CHARS = 200_000
#: Rows of the Vocabulary page's table sent at a time, a page of the list (its "Page" box
#: reaches the others): GPT-2's whole vocab was 5.2 MB on every run of the page (a first view
#: 3.3x a bare page's time), and each row is HTML the browser builds.
VOCAB_PAGE_ROWS = 200
#: Bytes in a megabyte: decimal, the unit Streamlit's file uploader shows ("41.2MB").
MB = 1000 * 1000


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
    """Address-space limit of one training worker in MB (``TOKPLAY_TRAIN_MEMORY_MB``; 0 = none)."""
    return env_int("TOKPLAY_TRAIN_MEMORY_MB", DEFAULT_MEMORY_MB, minimum=0)


def max_concurrent_trainings() -> int:
    """Trainings that run at once (``TOKPLAY_MAX_TRAININGS``); the rest queue."""
    return env_int("TOKPLAY_MAX_TRAININGS", DEFAULT_MAX_TRAININGS)


def text_too_long(n_chars: int, *, limit: int, what: str = "tokenizes") -> str | None:
    """The message for a text over the limit, or None.

    >>> text_too_long(10, limit=20) is None
    True
    >>> text_too_long(30, limit=20)  # doctest: +NORMALIZE_WHITESPACE
    'This text has 30 characters; the playground tokenizes only the first 20 (server limit
    TOKPLAY_MAX_TEXT_CHARS). Paste a shorter text to see all of it.'
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
    >>> upload_too_large(2600, limit=1000)
    'These files are 2.6 KB together; this server accepts at most 1.0 KB (TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.'
    >>> upload_too_large(1_000_001, limit=1_000_000)  # doctest: +NORMALIZE_WHITESPACE
    'These files are 1,000,001 bytes together; this server accepts at most 1,000,000 bytes
    (TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.'
    """
    limit = max_upload_bytes() if limit is None else limit
    if n_bytes <= limit:
        return None
    size, most = format_sizes(n_bytes, limit)
    return (f"These files are {size} together; this server accepts at most {most} "
            "(TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.")


def corpus_file_too_large(name: str, n_bytes: int, *, before: int = 0,
                          limit: int | None = None) -> str | None:
    """The message for a corpus file that would take the upload past the limit (``before``:
    the bytes of the files already taken), or None.

    >>> corpus_file_too_large("a.txt", 10, limit=100) is None
    True
    >>> corpus_file_too_large("big.txt", 60_000_000,
    ...                       limit=50_000_000)  # doctest: +NORMALIZE_WHITESPACE
    "“big.txt” is 60.0 MB, more than this server's limit of 50.0 MB: it is left out. Upload less
    text (or raise TOKPLAY_MAX_UPLOAD_MB)."
    >>> corpus_file_too_large("b.txt", 500_001, before=500_000,
    ...                       limit=1_000_000)  # doctest: +NORMALIZE_WHITESPACE
    "“b.txt” (500.0 KB) would take the corpus to 1,000,001 bytes, past this server's limit of
    1,000,000 bytes: it is left out. Upload less text (or raise TOKPLAY_MAX_UPLOAD_MB)."
    """
    limit = max_upload_bytes() if limit is None else limit
    total = before + n_bytes
    if total <= limit:
        return None
    size, most = format_sizes(total, limit)
    if before:
        what = (f"“{name}” ({format_bytes(n_bytes)}) would take the corpus to {size}, past this "
                f"server's limit of {most}")
    else:
        what = f"“{name}” is {size}, more than this server's limit of {most}"
    return f"{what}: it is left out. Upload less text (or raise TOKPLAY_MAX_UPLOAD_MB)."


def env_int(name: str, default: int, *, minimum: int = 1) -> int:
    """An integer setting from the environment; ``default`` when unset or not a number.

    >>> env_int("TOKPLAY_SURELY_UNSET_FOR_DOCTEST", 7)
    7
    """
    raw = os.environ.get(name, "").strip()
    try:
        return max(minimum, int(raw)) if raw else default
    except ValueError:
        return default


# ---------------------------------------------------------------------------------------------
# Training limits and the Train page's form checks


def workspace_max_bytes() -> int:
    """How much disk the workspaces (``ui.workspace``: reloads and links) may use in total
    (``TOKPLAY_WORKSPACE_MB`` decimal megabytes, default 1,000); least recently used first out."""
    return env_int("TOKPLAY_WORKSPACE_MB", 1000) * MB


def workspace_max_days() -> int:
    """Days a workspace is kept after its last use (``TOKPLAY_WORKSPACE_DAYS``, default 30)."""
    return env_int("TOKPLAY_WORKSPACE_DAYS", 30)


def max_vocab_size() -> int:
    """The largest vocab size this server trains (``TOKPLAY_MAX_VOCAB``, default 50,000)."""
    return env_int("TOKPLAY_MAX_VOCAB", DEFAULT_MAX_VOCAB, minimum=257)


def max_upload_bytes() -> int:
    """The most bytes one upload may carry in total: the corpus files on Train, the tokenizer
    files in the sidebar (``TOKPLAY_MAX_UPLOAD_MB`` decimal megabytes, default 50)."""
    return env_int("TOKPLAY_MAX_UPLOAD_MB", DEFAULT_MAX_UPLOAD_MB) * MB


def upload_limit_note(*, per_file: bool = False, limit: int | None = None) -> str:
    """What an uploader's drop zone says of this server's limit (``TOKPLAY_MAX_UPLOAD_MB``):
    for all its files together, or (``per_file``) for each one.

    >>> upload_limit_note(limit=50 * MB), upload_limit_note(per_file=True, limit=50 * MB)
    ('Up to 50.0 MB in total', 'Up to 50.0 MB per file')
    """
    limit = max_upload_bytes() if limit is None else limit
    return f"Up to {format_bytes(limit)} {'per file' if per_file else 'in total'}"


def upload_transport_mb() -> int:
    """The largest file (decimal MB) the uploaders let the browser send: twice
    ``TOKPLAY_MAX_UPLOAD_MB``.

    subtle: Streamlit refuses a file over its uploader's limit in the browser, with the
    reason only on hover, and the page never hears of it. So the uploaders accept files up to
    twice the limit, and :func:`upload_too_large` / :func:`corpus_file_too_large` refuse them
    in the page, saying why; ``server.maxUploadSize`` in .streamlit/config.toml (the server's
    own cap per file, which no browser can pass) must be at least this.

    >>> upload_transport_mb() == 2 * max_upload_bytes() // MB
    True
    """
    return 2 * env_int("TOKPLAY_MAX_UPLOAD_MB", DEFAULT_MAX_UPLOAD_MB)


def parse_special_tokens(text: str) -> list[str]:
    r"""Special tokens from a text box: separated by commas or newlines, blanks dropped.

    >>> parse_special_tokens("<|endoftext|>, <|pad|>\n\n<|endoftext|>")
    ['<|endoftext|>', '<|pad|>']
    >>> parse_special_tokens("  ")
    []
    """
    parts = (p.strip() for line in text.splitlines() for p in line.split(","))
    return list(dict.fromkeys(p for p in parts if p))


def vocab_size_problem(vocab_size: int, n_special: int, *, maximum: int | None = None) -> str | None:
    """Why a vocab size cannot be trained, or ``None`` when it is fine.

    >>> vocab_size_problem(1000, 1) is None
    True
    >>> vocab_size_problem(100, 1)  # doctest: +NORMALIZE_WHITESPACE
    'Vocab size 100 is too small: the 256 single bytes and 1 special token(s) already take 257 IDs.
    Choose at least 257.'
    >>> vocab_size_problem(10**9, 1, maximum=50_000)  # doctest: +NORMALIZE_WHITESPACE
    'Vocab size 1,000,000,000 is too large for this server: at most 50,000 (set TOKPLAY_MAX_VOCAB to
    change the limit). Byte-level BPE vocabularies are usually 1,000 to 200,000.'
    """
    maximum = max_vocab_size() if maximum is None else maximum
    minimum = 256 + n_special
    if vocab_size < minimum:
        return (
            f"Vocab size {vocab_size:,} is too small: the 256 single bytes and {n_special} special "
            f"token(s) already take {minimum} IDs. Choose at least {minimum}."
        )
    if vocab_size > maximum:
        return (
            f"Vocab size {vocab_size:,} is too large for this server: at most {maximum:,} (set "
            "TOKPLAY_MAX_VOCAB to change the limit). Byte-level BPE vocabularies are usually "
            "1,000 to 200,000."
        )
    return None


def decode_upload(name: str, data: bytes) -> str:
    """Decode an uploaded corpus file, or raise ``CorpusError`` naming the file and byte offset.

    A NUL byte marks a binary file (valid UTF-8, but never text anyone means to train on).

    >>> decode_upload("a.txt", "café".encode())
    'café'
    >>> decode_upload("img.png", b"\\x89PNG")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.errors.CorpusError: “img.png” is not valid UTF-8: bad byte(s) 89 50 4e 47 at byte offset 0
    (invalid start byte). Upload a UTF-8 text file (re-save it as UTF-8 in your editor).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = data[err.start : err.start + 4].hex(" ")
        raise CorpusError(
            f"“{name}” is not valid UTF-8: bad byte(s) {bad} at byte offset {err.start} "
            f"({err.reason}). Upload a UTF-8 text file (re-save it as UTF-8 in your editor)."
        ) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise CorpusError(
            f"“{name}” looks like a binary file, not text: a NUL byte at byte offset {nul}. "
            "Upload a plain UTF-8 .txt file."
        )
    return text


def readable_token(token: bytes) -> str:
    r"""A token for tables: whitespace visible (``·``, ``↵``, ``→``), bytes that are not whole
    UTF-8 characters and non-printable characters as ``\\xNN``.

    >>> readable_token(b" the\n")
    '·the↵'
    >>> readable_token(b"\xe2\x82")
    '\\xe2\\x82'
    >>> readable_token(b"a\x00\tb")
    'a\\x00→b'
    """
    text = token.decode("utf-8", errors="backslashreplace")
    text = text.replace(" ", "·").replace("\n", "↵").replace("\t", "→").replace("\r", "\\r")
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else "".join(f"\\x{b:02x}" for b in c.encode("utf-8")) for c in text
    )


def format_bytes(n: int) -> str:
    """Human-readable size in decimal units (1 KB = 1,000 bytes), as Streamlit's uploader
    shows sizes.

    >>> format_bytes(532), format_bytes(2600), format_bytes(41_200_008)
    ('532 B', '2.6 KB', '41.2 MB')
    """
    if n < 1000:
        return f"{n} B"
    for unit, size in (("KB", 1000), ("MB", MB), ("GB", 1000 * MB)):
        shown = f"{n / size:.1f}"
        if float(shown) < 1000 or unit == "GB":
            return f"{shown} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def format_sizes(n: int, limit: int) -> tuple[str, str]:
    """``n`` and ``limit`` as :func:`format_bytes` shows them, or both in exact bytes when
    rounding would make two different sizes read the same (a limit's N+1).

    >>> format_sizes(60_000_000, 50_000_000)
    ('60.0 MB', '50.0 MB')
    >>> format_sizes(50_000_001, 50_000_000)
    ('50,000,001 bytes', '50,000,000 bytes')
    """
    shown = format_bytes(n), format_bytes(limit)
    if n != limit and shown[0] == shown[1]:
        return f"{n:,} bytes", f"{limit:,} bytes"
    return shown

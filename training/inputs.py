"""A submitted job's inputs, checked and written the same way by both managers.

The corpus goes to the trainer as a file (never pickled through a pipe): a server's worker
and a browser tab read the same bytes, so they count, and merge, the same.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["check_pace", "write_corpus"]


def check_pace(pace: float) -> None:
    """A pace is 0 (full speed) or a positive number of merges per second."""
    if not (pace == 0 or 0 < pace <= 1_000_000):
        raise ValueError(f"pace must be 0 (full speed) or a positive rate, not {pace!r}")


def write_corpus(path: str, texts: str | Sequence[str],
                 special_tokens: Sequence[str]) -> tuple[tuple[str, ...], bytes]:
    """Write the texts a job trains on to ``path``; returns (special tokens, deduped, and
    the bytes written).

    Several texts (several uploaded files) are joined with the first special token (or a
    newline when there is none), so no merge spans two files. Both managers train on such
    a file, so a server and a browser tab count (and merge) the same.
    """
    if isinstance(texts, str):
        texts = [texts]
    specials = tuple(dict.fromkeys(special_tokens))  # dedupe, keep order
    # subtle: write bytes, not text mode, so "\r\n" in an upload is not rewritten
    data = (specials[0] if specials else "\n").join(texts).encode("utf-8")
    with open(path, "wb") as fh:
        fh.write(data)
    return specials, data

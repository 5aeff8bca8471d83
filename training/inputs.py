"""A submitted job's inputs, checked and written the same way by both managers.

The corpus goes to the trainer as a file (never pickled through a pipe): texts (an upload,
the built-in corpus) are written to one (:func:`write_corpus`), so a server's worker and a
browser tab read the same bytes, and count and merge the same. A corpus that already lives in
files (a server corpus, a Hugging Face dataset file) is a :class:`CorpusSource`: read where
it lies, never copied.

>>> CorpusSource(("/data/owt/train.txt",), names={"/data/owt/train.txt": "owt/train.txt"}).shown(
...     "/data/owt/train.txt is not valid UTF-8")
'owt/train.txt is not valid UTF-8'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["CorpusSource", "check_pace", "write_corpus"]


@dataclass(frozen=True)
class CorpusSource:
    """Files a job trains on where they are: local paths, folders or ``hf://datasets/...``
    addresses, found (and an ``hf://`` one downloaded) by the trainer itself with
    ``core.train.corpus_sources.find_corpus_files``.

    ``size``: the bytes to count when known beforehand (local files), else learned while
    counting. ``names``: path -> the name the page shows for it, so a message about a file
    names it as the user picked it, never by the server's path.
    """

    sources: tuple[str, ...]
    text_column: str = "text"
    size: int = 0
    names: Mapping[str, str] = field(default_factory=dict)

    def shown(self, message: str) -> str:
        """``message`` with each known path replaced by its name."""
        for path, name in self.names.items():
            message = message.replace(path, name)
        return message


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

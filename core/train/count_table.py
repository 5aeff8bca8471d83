"""The counts of distinct pre-tokens while a corpus is counted (:mod:`core.train.count`): one object
per process, the C table (``tokplay_native.count``) where it was built and the pattern is
GPT-2's, else :class:`PureCounts`, its twin over a ``Counter``. Same counts either way.

Both answer what counting asks of them:

- ``add_ascii(text)``: count the pre-tokens of ASCII text (the pattern's stdlib `re` twin,
  :func:`core.engine.pretokenize.ascii_pattern`, exact there);
- ``update(words)``: count each str of a list once; ``update(other)``: add another's counts
  (a worker's, sent back pickled) or a ``Counter``'s (a Dask task's);
- ``len()``, ``total()``: distinct pre-tokens, all of them;
- ``counter()``: the counts as a ``Counter``, moved out (the object is left empty);
- ``packed()``: the counts as two bytes objects, ``(table, arena)``: per distinct pre-token an
  int64 count and a uint32 length (native byte order), then the pre-tokens' UTF-8 bytes one
  after another. A worker's counts travel so, and the C merge loop reads them so.

Why C: on 1 GB of text with millions of distinct pre-tokens, a ``Counter`` spent most of
counting making a str and an int per pre-token and looking them up in a table of millions;
the C table cuts each pre-token from the text's bytes into one compact table.

>>> counts = new_counts("gpt2")
>>> counts.add_ascii("the cat and the hat"); counts.update(["é"]); len(counts), counts.total()
(6, 6)
>>> sorted(counts.counter().items())[:2]
[(' and', 1), (' cat', 1)]
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from collections.abc import Mapping
from typing import Protocol

from core import native
from core.engine.pretokenize import GPT2_PATTERN, ascii_pattern, resolve_pattern

__all__ = ["ROW", "PretokenCounts", "PureCounts", "new_counts"]

#: One row of ``packed()``'s table: a pre-token's count and its length in bytes.
ROW = struct.Struct("=qI")


class PretokenCounts(Protocol):
    """What counting asks of the counts (see the module docstring)."""

    def add_ascii(self, text: str) -> None: ...
    def update(self, words: list[str] | Mapping[str, int] | PretokenCounts) -> None: ...
    def __len__(self) -> int: ...
    def total(self) -> int: ...
    def counter(self) -> Counter[str]: ...
    def packed(self) -> tuple[bytes, bytes]: ...


class PureCounts:
    """The pure twin of the C table: a ``Counter`` and the pattern's `re` twin ``fast``
    (None for a pattern without one: then only ``update`` is used).

    >>> counts = PureCounts(ascii_pattern("gpt2")); counts.add_ascii("ab ab"); counts.counter()
    Counter({'ab': 1, ' ab': 1})
    """

    def __init__(self, fast: re.Pattern[str] | None, counts: Counter[str] | None = None) -> None:
        self.counts: Counter[str] = Counter() if counts is None else counts
        self.fast = fast

    def add_ascii(self, text: str) -> None:
        self.counts.update(self.fast.findall(text))  # type: ignore[union-attr]  # set where called

    def update(self, words: list[str] | Mapping[str, int] | PretokenCounts) -> None:
        if isinstance(words, PureCounts):
            self.counts.update(words.counts)
        else:
            self.counts.update(words)  # type: ignore[arg-type]  # a list of str or a mapping

    def __len__(self) -> int:
        return len(self.counts)

    def total(self) -> int:
        return self.counts.total()

    def counter(self) -> Counter[str]:
        counts, self.counts = self.counts, Counter()
        return counts

    def packed(self) -> tuple[bytes, bytes]:
        """The C table's packed form (see the module docstring), for tests of the twins.

        >>> counts = PureCounts(None, Counter({"ab": 2, "é": 1}))
        >>> counts.packed()[1], len(counts.packed()[0])
        (b'ab\\xc3\\xa9', 24)
        """
        keys = [word.encode("utf-8", "surrogatepass") for word in self.counts]
        rows = b"".join(ROW.pack(n, len(key)) for key, n in zip(keys, self.counts.values(), strict=True))
        return rows, b"".join(keys)


def new_counts(pattern: str) -> PretokenCounts:
    """Empty counts for ``pattern`` (a name or a regex): the C table for GPT-2's pattern where
    it was built (read now, so a test can set ``core.native.count`` to None), else
    :class:`PureCounts`.

    >>> type(new_counts(r"\\w+")).__name__
    'PureCounts'
    """
    compiled = native.count
    if compiled is not None and resolve_pattern(pattern) == GPT2_PATTERN:
        return compiled.PretokenCounts()
    return PureCounts(ascii_pattern(pattern))

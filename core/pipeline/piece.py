"""A string that remembers where each of its characters came from in the original text.

Normalizers and pre-tokenizers rewrite text ("Hello" → "▁hello"), yet the page must draw
each token under the characters the user typed. So every character of a :class:`Piece`
carries the span ``(start, end)`` of original characters it stands for.

>>> p = Piece.of("Héllo")
>>> p.spans[:2]
[(0, 1), (1, 2)]
>>> q = p.map_chars(str.lower)            # one original char -> any number of chars
>>> q.text, q.spans[0]
('héllo', (0, 1))
>>> r = Piece.of("ab").prepend("▁")       # inserted text borrows its neighbour's span
>>> r.text, r.spans
('▁ab', [(0, 0), (0, 1), (1, 2)])
>>> r[1:].text, r[1:].span
('ab', (0, 2))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter

Span = tuple[int, int]


@dataclass(frozen=True)
class Piece:
    """``text`` and, for each of its characters, the original span ``(start, end)``.

    ``len(spans) == len(text)`` always. A character inserted from nowhere (a prepended
    ``▁``) gets the empty span at its position, ``(k, k)``.
    """

    text: str
    spans: list[Span]

    @classmethod
    def of(cls, text: str, offset: int = 0) -> Piece:
        """A piece of original text: character ``i`` comes from ``offset + i``."""
        return cls(text, [(offset + i, offset + i + 1) for i in range(len(text))])

    def __len__(self) -> int:
        return len(self.text)

    def __getitem__(self, key: slice) -> Piece:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a Piece can only be sliced with [start:stop]")
        return Piece(self.text[key], self.spans[key])

    @property
    def span(self) -> Span:
        """The original characters the whole piece covers, ``(start, end)``."""
        return cover(self.spans, 0, len(self.spans))

    def span_of(self, start: int, end: int) -> Span:
        """The original span of this piece's characters ``start:end`` (one token's)."""
        if end > start:
            return cover(self.spans, start, end)
        # an empty token (rare: an empty added token) sits where the next character starts
        at = self.spans[start][0] if start < len(self.spans) else self.span[1]
        return (at, at)

    def map_chars(self, fn: Callable[[str], str]) -> Piece:
        """Apply ``fn`` to each character; what it returns inherits that character's span."""
        text: list[str] = []
        spans: list[Span] = []
        for ch, span in zip(self.text, self.spans):
            out = fn(ch)
            text.append(out)
            spans.extend([span] * len(out))
        return Piece("".join(text), spans)

    def prepend(self, prefix: str) -> Piece:
        """``prefix`` + this piece; the new characters get an empty span at the start."""
        at = self.spans[0][0] if self.spans else 0
        return Piece(prefix + self.text, [(at, at)] * len(prefix) + self.spans)

    def append(self, suffix: str) -> Piece:
        """This piece + ``suffix``; the new characters get an empty span at the end."""
        at = self.spans[-1][1] if self.spans else 0
        return Piece(self.text + suffix, self.spans + [(at, at)] * len(suffix))

    @staticmethod
    def join(pieces: list[Piece]) -> Piece:
        """Concatenate pieces, keeping every character's span."""
        return Piece(
            "".join(p.text for p in pieces), [s for p in pieces for s in p.spans]
        )


_end = itemgetter(1)


def cover(spans: list[Span], start: int, end: int) -> Span:
    """The original ``(start, end)`` that ``spans[start:end]`` cover together; ``(0, 0)``
    for an empty range. Written for speed (min/max in C): encoding calls it per token.

    >>> cover([(0, 1), (0, 0), (1, 3), (3, 4)], 1, 3)
    (0, 3)
    """
    if end - start == 1:
        return spans[start]
    if end <= start:
        return (0, 0)
    part = spans[start:end]
    return min(part)[0], max(map(_end, part))

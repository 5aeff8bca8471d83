"""Comparing tokenizations: where two to four tokenizers cut the same text differently.

A tokenization is described by its *boundaries*: the character offsets where a token ends
(``core.engine.details.TokenSpan.end``). Offsets every tokenizer shares split the text into regions;
a region where the tokenizers' inner boundaries differ is a place where they disagree.

>>> text = "unhappiness"
>>> regions = differing_regions(text, {"A": [2, 7, 11], "B": [11]})
>>> [(r.text, r.pieces["A"], r.pieces["B"]) for r in regions]
[('unhappiness', ['un', 'happi', 'ness'], ['unhappiness'])]
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Region",
    "TokenizationStats",
    "boundaries",
    "differing_regions",
    "first_difference",
    "tokenization_stats",
]


@dataclass(frozen=True)
class Region:
    """A stretch of text (``start``..``end`` characters) that tokenizers cut differently;
    ``pieces`` maps each tokenizer's name to its pieces of ``text``."""

    start: int
    end: int
    text: str
    pieces: dict[str, list[str]]


@dataclass(frozen=True)
class TokenizationStats:
    """Counts for one tokenization of one text."""

    n_tokens: int
    n_chars: int
    n_bytes: int
    chars_per_token: float
    bytes_per_token: float
    n_unknown: int
    unknown_rate: float  # unknown tokens / tokens (0 for byte-level BPE: it has no unknowns)


def tokenization_stats(text: str, n_tokens: int, *, n_unknown: int = 0) -> TokenizationStats:
    """Counts and ratios for a text cut into ``n_tokens`` tokens.

    >>> s = tokenization_stats("héllo", 2)
    >>> (s.n_chars, s.n_bytes, s.chars_per_token, s.bytes_per_token)
    (5, 6, 2.5, 3.0)
    >>> tokenization_stats("", 0).chars_per_token
    0.0
    """
    n_chars = len(text)
    n_bytes = len(text.encode("utf-8", errors="surrogatepass"))
    per = (lambda x: x / n_tokens) if n_tokens else (lambda x: 0.0)
    return TokenizationStats(
        n_tokens=n_tokens,
        n_chars=n_chars,
        n_bytes=n_bytes,
        chars_per_token=per(n_chars),
        bytes_per_token=per(n_bytes),
        n_unknown=n_unknown,
        unknown_rate=(n_unknown / n_tokens) if n_tokens else 0.0,
    )


def boundaries(spans: Iterable[tuple[int, int]]) -> list[int]:
    """Sorted distinct token end offsets from (start, end) character spans.

    Tokens that are parts of one character share its span, so they add one boundary.

    >>> boundaries([(0, 1), (1, 2), (1, 2), (2, 5)])
    [1, 2, 5]
    """
    return sorted({end for start, end in spans if end > start})


def differing_regions(
    text: str, cuts: Mapping[str, Iterable[int]], *, limit: int | None = None
) -> list[Region]:
    """The regions of ``text`` where tokenizers disagree.

    ``cuts`` maps a tokenizer name to its token end offsets (see :func:`boundaries`). The
    offsets all tokenizers share (plus 0 and ``len(text)``) cut the text into regions; a region
    is returned when at least two tokenizers place different boundaries inside it. ``limit``
    stops after that many regions.

    >>> [r.text for r in differing_regions("a bc d", {"x": [1, 4, 6], "y": [1, 3, 4, 6]})]
    [' bc']
    >>> differing_regions("same", {"x": [4], "y": [4]})
    []
    """
    sets = {name: {c for c in offsets if 0 < c < len(text)} for name, offsets in cuts.items()}
    if len(sets) < 2 or not text:
        return []
    shared = set.intersection(*sets.values())
    edges = [0, *sorted(shared), len(text)]
    # each tokenizer's own cuts, sorted once; a region's inner cuts are then one bisect away
    # (scanning every cut per region made a 50,000-character text take minutes)
    own = {name: sorted(s - shared) for name, s in sets.items()}
    regions: list[Region] = []
    for start, end in zip(edges, edges[1:]):
        inner = {name: c[bisect_right(c, start): bisect_left(c, end)] for name, c in own.items()}
        if len({tuple(v) for v in inner.values()}) == 1:
            continue
        pieces = {}
        for name, cut in inner.items():
            points = [start, *cut, end]
            pieces[name] = [text[a:b] for a, b in zip(points, points[1:])]
        regions.append(Region(start=start, end=end, text=text[start:end], pieces=pieces))
        if limit is not None and len(regions) >= limit:
            break
    return regions


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """Index of the first position where two ID sequences differ (``None`` if equal).

    Used by the Decode page's round-trip check: decoding IDs and encoding the text again gives
    the same IDs only if the IDs were what the tokenizer itself would produce.

    >>> first_difference([1, 2, 3], [1, 2, 3]) is None
    True
    >>> first_difference([1, 2, 3], [1, 5])
    1
    >>> first_difference([1, 2], [1, 2, 3])
    2
    """
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))

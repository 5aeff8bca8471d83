"""Where a normalized text can be cut into words no SentencePiece BPE token crosses: the
proof is in :class:`~core.pipeline.sentencepiece.bpe.SentencePieceBPE`; here are the regexes
built from the texts of the pieces that may be merged into (a ``text -> ID`` dict or a list).

>>> WordCuts(["▁a", "▁b"]).split("▁ab\\n▁b")
['▁ab', '\\n', '▁b']
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable

from core.pipeline.sentencepiece.packed import char_ranges_in_c, piece_chars_in_c
from core.pipeline.sentencepiece.proto import SPACE

__all__ = ["WordCuts", "cut_regex", "piece_chars", "space_neighbours"]


def cut_regex(normal: Iterable[str]) -> re.Pattern[str] | None:
    """Where a normalized text can be cut into independent words (proof in SentencePieceBPE):
    before a ▁ whose left neighbour never precedes a ▁ inside a piece, after a ▁ whose
    right neighbour never follows one inside a piece, and on both sides of a character in
    no piece at all (a newline in Llama's and Mistral's vocabularies, left to byte pieces).

    >>> cut_regex({"▁a": 0, "▁b": 1}).split("▁ab\\n▁b")
    ['', '▁ab', '\\n', '▁b']
    """
    chars, before, after = piece_chars(normal)
    return _cut_pattern(before, after, _char_ranges(chars))


def _cut_pattern(before: set[str], after: set[str], used: str) -> re.Pattern[str]:
    # (character classes as ranges: Mistral's pieces put ~2,000 characters after a ▁)
    parts = [
        f"(?<![{_char_ranges(before)}])(?={SPACE})" if before else f"(?={SPACE})",
        f"(?<={SPACE})(?![{_char_ranges(after)}])" if after else f"(?<={SPACE})",
    ]
    if used:
        parts.append(f"(?<=[^{used}])|(?=[^{used}])")
    return re.compile("|".join(parts))


class WordCuts:
    """:func:`cut_regex` as ``split(text) -> words`` (no empty ones), faster on most texts.

    subtle: ``cut_regex`` tries four lookarounds at every character. When no piece has a ▁
    after anything but a ▁ (split_by_whitespace models), one consuming regex finds the same
    words: a run of ▁ (or one ▁) with what follows it, when a piece puts that after a ▁,
    up to the next ▁; a stretch with no ▁; each character in no piece alone.

    >>> WordCuts({"▁a": 0, "▁▁": 1, "1": 2}).split("x▁▁a▁1▁▁"), WordCuts({"▁a": 0}).split("▁a\\n")
    (['x', '▁▁a', '▁', '1', '▁▁'], ['▁a', '\\n'])
    """

    def __init__(self, normal: Iterable[str]) -> None:
        chars, before, after = piece_chars(normal)
        used = _char_ranges(chars)
        # (compiled only where the runs regex cannot stand for it: a pattern of thousands of
        # characters takes tens of milliseconds to compile)
        self._parts = (before, after, used)
        self._runs: re.Pattern[str] | None = None
        word = _char_ranges(chars - {SPACE})
        if before <= {SPACE} and SPACE in chars and word:
            run = f"{SPACE}+" if before else SPACE
            follows = _char_ranges(after & chars - {SPACE})
            if follows:
                run += f"(?:[{follows}][{word}]*)?"
            self._runs = re.compile(f"{run}|[{word}]+|[^{used}]")

    @functools.cached_property
    def _full(self) -> re.Pattern[str]:
        return _cut_pattern(*self._parts)

    def split(self, text: str) -> list[str]:
        if self._runs is not None:
            return self._runs.findall(text)
        return [w for w in self._full.split(text) if w]

    def split_longest(self, text: str) -> tuple[list[str], int]:
        """:meth:`split`'s words and the length of the longest (0 for none).

        >>> WordCuts({"▁a": 0}).split_longest("▁a▁bcd")
        (['▁a', '▁', 'b', 'c', 'd'], 2)
        """
        words = self.split(text)
        return words, max(map(len, words), default=0)


def piece_chars(pieces: Iterable[str]) -> tuple[set[str], set[str], set[str]]:
    """Every character of ``pieces``, and those seen right before and right after a ▁
    inside a piece (:func:`space_neighbours`); one C pass when ``tokplay_native.spm`` is
    built.

    >>> [sorted(chars) for chars in piece_chars(["▁a", "b▁▁"])]
    [['a', 'b', '▁'], ['b', '▁'], ['a', '▁']]
    """
    found = piece_chars_in_c(pieces)
    if found is not None:
        return found
    pieces = list(pieces)
    before, after = space_neighbours(pieces)
    return set("".join(pieces)), before, after


def space_neighbours(pieces: Iterable[str]) -> tuple[set[str], set[str]]:
    """The characters seen right before and right after a ▁ inside a piece. The pieces
    joined by NUL are cut at every ▁: the parts' last characters came before one, their
    first ones after one, an empty part between two is a ▁ next to a ▁, and a NUL is a
    piece's edge (a loop instead when some piece holds a NUL itself).

    >>> [sorted(chars) for chars in space_neighbours(["▁a", "b▁▁", "▁"])]
    [['b', '▁'], ['a', '▁']]
    """
    pieces = list(pieces)
    joined = "\x00".join(pieces)
    if joined.count("\x00") == len(pieces) - 1:
        parts = joined.split(SPACE)
        inner = parts[1:-1]
        doubled = {SPACE} if "" in inner else set()
        before = set(map(operator.itemgetter(-1), filter(None, parts[:-1]))) | doubled
        after = set(map(operator.itemgetter(0), filter(None, parts[1:]))) | doubled
        return before - {"\x00"}, after - {"\x00"}
    before, after = set(), set()
    for s in pieces:
        k = s.find(SPACE)
        while k >= 0:
            if k > 0:
                before.add(s[k - 1])
            if k + 1 < len(s):
                after.add(s[k + 1])
            k = s.find(SPACE, k + 1)
    return before, after


def _char_ranges(chars: set[str]) -> str:
    """A regex character class's inside for ``chars``, runs of code points as ranges.

    >>> _char_ranges({"a", "b", "c", "x", "-"})
    '\\\\-a-cx'
    """
    found = char_ranges_in_c(chars)  # (one C pass: thousands of characters in CJK vocabs)
    if found is not None:
        return found
    runs: list[list[int]] = []
    for o in sorted(map(ord, chars)):
        if runs and runs[-1][1] == o - 1:
            runs[-1][1] = o
        else:
            runs.append([o, o])
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in runs
    )

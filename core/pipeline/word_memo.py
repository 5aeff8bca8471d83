"""What a sequence of pre-tokenization steps makes of each short word, remembered.

A ``Sequence`` of ``Split`` steps (DeepSeek's, Falcon's: six regexes, each cutting every piece
the previous one made) calls each step once per piece: for a page of text that is hundreds of
thousands of calls, most of them on words seen before. :class:`WordMemo` keeps, per step, the
final words that the remaining steps make of each short piece, so a word seen before is one
dict look-up however many steps follow.

Why it is exact: a step here is only asked about a ``str`` (no offsets: a sequence with a
step that looks at where its piece starts takes another path), so its answer depends on the
piece alone. Why it is safe to share: every session's thread reads one tokenizer's memo;
each dict is only read, filled and emptied by single operations, and is bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["MEMO_CHARS", "MEMO_MAX", "WordMemo"]

#: Pieces this long at most are remembered (words; a line or a whole text is not).
MEMO_CHARS = 64
#: Words remembered per step, at most; a full memo is emptied and starts again.
MEMO_MAX = 50_000


class WordMemo:
    """The words ``steps[k:]`` make of a piece, per ``k``, remembered for short pieces.

    >>> memo = WordMemo([str.split, lambda s: list(s)], lambda step, text: step(text))
    >>> memo.words("ab c"), memo.words("ab c")
    (('a', 'b', 'c'), ('a', 'b', 'c'))
    """

    __slots__ = ("_memos", "_split", "_steps")

    def __init__(self, steps: Sequence[Any], split: Callable[[Any, str], list[str]]) -> None:
        self._steps = tuple(steps)
        self._split = split  # (split(step, text): the step's words of text, empty ones too)
        self._memos: tuple[dict[str, tuple[str, ...]], ...] = tuple({} for _ in self._steps)

    def words(self, text: str, k: int = 0) -> tuple[str, ...]:
        """The non-empty words ``steps[k:]`` make of ``text``, in order."""
        if k == len(self._steps):
            return (text,)
        memo = self._memos[k]
        short = len(text) <= MEMO_CHARS
        if short:
            found = memo.get(text)
            if found is not None:
                return found
        out: list[str] = []
        for word in self._split(self._steps[k], text):
            if word:
                out += self.words(word, k + 1)
        made = tuple(out)
        if short:
            if len(memo) >= MEMO_MAX:
                memo.clear()
            memo[text] = made
        return made

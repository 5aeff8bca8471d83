"""Added tokens (``tokenizer.json``'s ``added_tokens``): what they are, and where they cut
a text, as ``tokenizers``' ``added_vocabulary.rs`` finds them.

A text is searched leftmost-longest for the added tokens' strings (:class:`AddedTokenMatcher`);
a match is kept or dropped by the token's ``single_word`` rule and grows by ``lstrip`` /
``rstrip`` over whitespace, with Hugging Face's Unicode-aware ``\\w`` and ``\\s``
(:func:`is_word_char`, :func:`is_space_char`).

Here ``<s>`` touches the word character ``a``, so it stays text; ``[X]`` takes the spaces
before it:

>>> tokens = {5: AddedToken("<s>", single_word=True), 6: AddedToken("[X]", lstrip=True)}
>>> matcher = AddedTokenMatcher({"<s>": 5, "[X]": 6})
>>> [(p.text, i) for p, i in split_at_added(Piece.of("a<s> b  [X]c"), matcher, tokens)]
[('a<s> b', None), ('  [X]', 6), ('c', None)]
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from core.engine.regex_compat import compile_held
from core.pipeline.piece import Piece
from core.pipeline.unicode_tables import code_points

__all__ = [
    "AddedToken",
    "AddedTokenMatcher",
    "is_space_char",
    "added_cuts",
    "is_word_char",
    "split_at_added",
]

# Hugging Face's added-token rules use Rust's Unicode-aware \w and \s.
_WORD_CHAR = compile_held(r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]")
#: Where that \w (the regex module's Unicode tables) and the Rust regex crate inside
#: tokenizers (older tables) disagree: characters new in recent Unicode versions.
#: test_hf_pipeline checks it against tokenizers and prints a fresh table if it drifts.
_WORD_FLIPS = code_points(
    "0558 058B-058C 05C8-05C9 088F 0B53-0B54 0C5C 0CDC 1ACF-1AF0 208F 209D-209F "
    "A7CE-A7CF A7D2 A7D4 A7DD A7E2 A7F1 AB6C-AB6D 107BB-107BF 10940-10959 "
    "10EC5-10EC7 10ECB-10ECF 10ED9-10EEE 10EF0-10EFB 11B0A 11B60-11B67 11DB0-11DDB "
    "11DE0-11DE9 11DF0-11DF1 1246F 12475-1247F 12550-12686 16EA0-16EB8 16EBB-16ED3 "
    "16FF2-16FF6 187F8-187FF 18CD6-18CDA 18D09-18D20 18D80-18DF2 18E00-19191 "
    "191A0-191D2 1B123-1B128 1B168 1D127-1D128 1D250-1D252 1D25B-1D25C 1D25F "
    "1D280-1D281 1D6A6 1DF1F-1DF24 1DF2B-1DF81 1DF90-1DF96 1DFCD-1DFFF 1E6C0-1E6DE "
    "1E6E0-1E6F5 1E6FE-1E6FF 2B73A-2B73F 2B81E 2CEA2-2CEAD 323B0-33479 3D000-3FC3F"
)
_SPACE_CHAR = compile_held(r"\p{White_Space}")


@dataclass(frozen=True)
class AddedToken:
    """An entry of ``tokenizer.json``'s ``added_tokens``.

    ``normalized``: matched in the normalized text (``True``) or the original one.
    ``single_word``: only where no word character touches it; ``lstrip``/``rstrip``: it
    swallows the whitespace on that side. ``special``: dropped by
    ``decode(..., skip_special_tokens=True)``. ``id``: ``None`` to number it as Hugging
    Face does (the model's ID if the vocab has the string, else the next free ID).
    """

    content: str
    special: bool = False
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = True
    id: int | None = None


class AddedTokenMatcher:
    """Leftmost-longest, non-overlapping search for a set of strings (the Aho-Corasick
    ``LeftmostLongest`` search of ``tokenizers``): a regex finds a possible first
    character, a trie walk finds the longest string starting there.

    >>> list(AddedTokenMatcher({"<s>": 1, "<s>x": 2, "x": 3}).finditer("a<s>xx<s"))
    [(1, 5, 2), (5, 6, 3)]
    """

    _END = ""  # trie key marking the end of a string (never a character)

    def __init__(self, patterns: dict[str, int]) -> None:
        self._trie: dict[str, Any] = {}
        for text, value in patterns.items():
            node = self._trie
            for ch in text:
                node = node.setdefault(ch, {})
            node[self._END] = value
        firsts = "".join(sorted(self._trie))
        self._first = re.compile("[" + re.escape(firsts) + "]") if firsts else None
        #: no strings at all: every text is one part (encoding skips the search)
        self.empty = self._first is None

    def finditer(self, text: str) -> Iterator[tuple[int, int, int]]:
        """``(start, end, value)`` of each match, left to right."""
        if self._first is None:
            return
        search = self._first.search
        n = len(text)
        m = search(text)
        while m is not None:
            start = m.start()
            node: Any = self._trie  # (a dict of dicts, one level per character)
            best: tuple[int, int] | None = None
            k = start
            while k < n:
                node = node.get(text[k])
                if node is None:
                    break
                k += 1
                if self._END in node:
                    best = (k, node[self._END])
            if best is None:
                m = search(text, start + 1)
                continue
            yield start, best[0], best[1]
            m = search(text, best[0])


def is_word_char(ch: str) -> bool:
    """Whether ``ch`` is a word character (``\\w``) for ``single_word`` added tokens, with
    the Unicode tables of ``tokenizers`` (see ``_WORD_FLIPS``).

    >>> is_word_char("é"), is_word_char("_"), is_word_char("-"), is_word_char("\\U000323b0")
    (True, True, False, False)
    """
    return (_WORD_CHAR.match(ch) is not None) != (ord(ch) in _WORD_FLIPS)


def is_space_char(ch: str) -> bool:
    """Whether ``ch`` is whitespace (``\\s``) for ``lstrip``/``rstrip`` added tokens.

    >>> is_space_char("\\u3000"), is_space_char("\\u200b")
    (True, False)
    """
    return _SPACE_CHAR.match(ch) is not None


def _strip_run(text: str, start: int, step: int) -> int:
    """From ``start``, the far end of the run of whitespace going ``step`` (+1 or -1)."""
    k = start
    if step < 0:
        while k > 0 and is_space_char(text[k - 1]):
            k -= 1
    else:
        while k < len(text) and is_space_char(text[k]):
            k += 1
    return k


def split_at_added(
    piece: Piece, matcher: AddedTokenMatcher, tokens: Mapping[int, AddedToken]
) -> list[tuple[Piece, int | None]]:
    """``AddedVocabulary::find_matches``: ``piece`` cut at the added tokens
    ``matcher`` finds (``tokens``: ID -> added token), each part with its added token's ID
    or ``None``."""
    cuts = added_cuts(piece.text, matcher, tokens)
    if len(cuts) == 1 and cuts[0][2] is None:
        return [(piece, None)]  # (the common case: no added token here)
    return [(piece[start:stop], token_id) for start, stop, token_id in cuts]


def added_cuts(
    text: str, matcher: AddedTokenMatcher, tokens: Mapping[int, AddedToken]
) -> list[tuple[int, int, int | None]]:
    """Where :func:`split_at_added` cuts ``text``: ``(start, stop, ID or None)`` per part,
    in order, no part empty.

    >>> added_cuts("a<s>", AddedTokenMatcher({"<s>": 5}), {5: AddedToken("<s>")})
    [(0, 1, None), (1, 4, 5)]
    """
    n = len(text)
    if matcher.empty:  # (the common case, and the fast path's: nothing to look for)
        return [(0, n, None)] if n else []
    out: list[tuple[int, int, int | None]] = []
    done = 0  # where the last kept match ended
    for start, stop, token_id in matcher.finditer(text):
        token = tokens[token_id]
        if token.single_word and (
            (start > 0 and is_word_char(text[start - 1]))
            or (stop < n and is_word_char(text[stop]))
        ):
            continue  # a dropped match still ends the search there, as in HF
        if token.lstrip:
            start = max(_strip_run(text, start, -1), done)
        if token.rstrip:
            stop = _strip_run(text, stop, +1)
        if start > stop:
            # an lstrip after an rstrip that took more than this match: Hugging Face
            # panics ("AddedVocabulary bad split"); we drop the match
            continue
        if done < start:
            out.append((done, start, None))
        if start < stop:  # (empty when an rstrip before it took its text)
            out.append((start, stop, token_id))
        done = stop
    if done < n:
        out.append((done, n, None))
    return out

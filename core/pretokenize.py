"""Pre-tokenization: split on special tokens, then cut each piece with a regex pattern.

BPE never merges across the pieces made here, so these two functions decide which
merges are even possible.

>>> split_on_specials("a<|eot|>b", ["<|eot|>"])
[('a', False), ('<|eot|>', True), ('b', False)]
>>> pretokenize("Hello world!!")
['Hello', ' world', '!!']
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import regex

# GPT-2's pattern as in openai/gpt-2 `encoder.py` and the CS336 assignment handout.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# cl100k_base (GPT-3.5/GPT-4) and o200k_base (GPT-4o), exactly as tiktoken defines them.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: Pattern names a user can pick, in the order a UI should list them.
PATTERNS: dict[str, str] = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
}


def resolve_pattern(pattern: str) -> str:
    """Return the regex for a pattern name (``"gpt2"``, ``"cl100k"``, ``"o200k"``) or a regex itself.

    >>> resolve_pattern("gpt2") == GPT2_PATTERN
    True
    """
    return PATTERNS.get(pattern, pattern)


@lru_cache(maxsize=16)  # bounded: a handful of patterns per process
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """Compile a pattern name or regex once; raises a clear error for a broken regex."""
    from core.errors import TrainingConfigError

    try:
        return regex.compile(resolve_pattern(pattern))
    except regex.error as err:
        raise TrainingConfigError(f"the pre-tokenizer pattern is not a valid regex: {err}") from None


@lru_cache(maxsize=64)
def special_splitter(special_tokens: tuple[str, ...]) -> regex.Pattern[str] | None:
    """A regex that finds special tokens, longest first, so overlapping specials resolve
    to the longest one (``<|a|><|b|>`` beats ``<|a|>``)."""
    if not special_tokens:
        return None
    ordered = sorted(set(special_tokens), key=lambda s: (-len(s), s))
    return regex.compile("|".join(regex.escape(s) for s in ordered))


def split_on_specials(text: str, special_tokens: Iterable[str]) -> list[tuple[str, bool]]:
    """Cut ``text`` at special tokens; each piece comes with ``True`` when it *is* a special token.

    Empty ordinary pieces are dropped.

    >>> split_on_specials("x<|a|><|b|>y", ["<|a|>", "<|a|><|b|>"])
    [('x', False), ('<|a|><|b|>', True), ('y', False)]
    """
    splitter = special_splitter(tuple(special_tokens))
    if splitter is None:
        return [(text, False)] if text else []
    pieces: list[tuple[str, bool]] = []
    pos = 0
    for m in splitter.finditer(text):
        if m.start() > pos:
            pieces.append((text[pos : m.start()], False))
        pieces.append((m.group(), True))
        pos = m.end()
    if pos < len(text):
        pieces.append((text[pos:], False))
    return pieces


def pretokenize(text: str, pattern: str = GPT2_PATTERN) -> list[str]:
    """Cut ordinary text (no special tokens in it) into pre-tokens.

    >>> pretokenize("I'll   go", "gpt2")
    ['I', "'ll", '  ', ' go']
    """
    return compile_pattern(pattern).findall(text)

"""Pre-tokenization: split on special tokens, then cut each piece with a regex pattern.

BPE never merges across the pieces made here, so these two functions decide which
merges are even possible.

>>> split_on_specials("a<|eot|>b", ["<|eot|>"])
[('a', False), ('<|eot|>', True), ('b', False)]
>>> pretokenize("Hello world!!")
['Hello', ' world', '!!']
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from core.engine.regex_compat import HeldPattern, compile_held, regex
from core.errors import TrainingConfigError

# GPT-2's pattern as in openai/gpt-2 `encoder.py` and the CS336 assignment handout.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# cl100k_base (GPT-3.5/GPT-4) and o200k_base (GPT-4o), exactly as tiktoken defines them.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
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

# Llama 3 (Meta's llama_models/llama3/tokenizer.py): cl100k's alternatives without the
# possessive quantifiers and `\s++$`; Llama 4 uses O200K_PATTERN exactly.
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# Mistral's Tekken (tekken_*.json "config.pattern"): o200k's without the contractions, and
# every digit on its own.
TEKKEN_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""",
        r"""\p{N}""",
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
    "llama3": LLAMA3_PATTERN,
    "tekken": TEKKEN_PATTERN,
}


def pattern_name(spelling: str) -> str | None:
    """The :data:`PATTERNS` name a user's spelling means, or None for anything else (a regex).

    Any case, with or without ``_base``: the names ``-t`` and the presets use work too.

    >>> pattern_name("cl100k_base"), pattern_name("GPT2"), pattern_name(" o200k ")
    ('cl100k', 'gpt2', 'o200k')
    >>> pattern_name(r"\\w+") is None
    True
    """
    key = spelling.strip().lower()
    key = key.removesuffix("_base")
    return key if key in PATTERNS else None


def resolve_pattern(pattern: str) -> str:
    """Return the regex for a pattern name (``"gpt2"``, ``"cl100k"``, ``"o200k"``, spelled as
    :func:`pattern_name` takes it) or a regex itself.

    >>> resolve_pattern("gpt2") == resolve_pattern("GPT2") == GPT2_PATTERN
    True
    """
    if pattern in PATTERNS:  # the usual case first: no string work on a hot path
        return PATTERNS[pattern]
    name = pattern_name(pattern)
    return PATTERNS[name] if name else pattern


@lru_cache(maxsize=16)  # bounded: a handful of patterns per process
def compile_pattern(pattern: str) -> HeldPattern:
    """Compile a pattern name or regex once (matching short texts without letting go of the
    GIL: :class:`~core.engine.regex_compat.HeldPattern`); raises a clear error for a broken
    regex."""
    try:
        return compile_held(resolve_pattern(pattern))
    except regex.error as err:
        raise TrainingConfigError(f"the pre-tokenizer pattern is not a valid regex: {err}") from None


@lru_cache(maxsize=64)
def special_splitter(special_tokens: tuple[str, ...]) -> re.Pattern[str] | None:
    """A regex that finds special tokens, longest first, so overlapping specials resolve
    to the longest one (``<|a|><|b|>`` beats ``<|a|>``).

    Literal strings only, so stdlib `re` does it: it compiles Llama 4's 2,048 specials in a
    third of the time `regex` takes and searches faster too.
    """
    if not special_tokens:
        return None
    ordered = sorted(set(special_tokens), key=lambda s: (-len(s), s))
    return re.compile("|".join(re.escape(s) for s in ordered))


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


# ---------------------------------------------------------------------------------------------
# The ASCII fast path: stdlib `re` twins of the built-in patterns, exact on ASCII-only text


def _ascii_patterns() -> dict[str, re.Pattern[str]]:
    """`re` versions of the built-in patterns that are exact on ASCII-only text, where
    \\p{L} is [A-Za-z], \\p{Lu} [A-Z], \\p{Ll} [a-z], \\p{N} [0-9], \\p{Lt}/\\p{Lm}/\\p{Lo}/\\p{M}
    are empty and \\s is [\\t\\n\\x0b\\x0c\\r ] (spelled out: `re`'s \\s adds \\x1c-\\x1f).

    Quantifiers are possessive (``++``, ``?+``) wherever what follows can never start with
    what they consume (letters then non-letters, an optional prefix then a letter), so giving
    characters back could not make a match: same pre-tokens, less backtracking (15% faster
    on o200k). ``\\s+(?!\\S)`` must give back its last space, so it stays greedy.
    """
    ws, nws, lnw = r"[\t\n\x0b\x0c\r ]", r"[^\t\n\x0b\x0c\r ]", r"[^\t\n\x0b\x0c\r A-Za-z0-9]"
    contractions = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    prefix = r"[^\r\nA-Za-z0-9]?+"
    sources = {
        GPT2_PATTERN: (
            rf"""'(?:[sdmt]|ll|ve|re)| ?+[A-Za-z]++| ?+[0-9]++| ?+{lnw}++|{ws}+(?!{nws})|{ws}+"""
        ),
        CL100K_PATTERN: (
            rf"""'(?i:[sdmt]|ll|ve|re)|{prefix}[A-Za-z]++|[0-9]{{1,3}}+"""
            rf"""| ?+{lnw}++[\r\n]*+|{ws}++$|{ws}*[\r\n]|{ws}+(?!{nws})|{ws}"""
        ),
        O200K_PATTERN: "|".join(
            [
                rf"""{prefix}[A-Z]*+[a-z]++{contractions}""",
                rf"""{prefix}[A-Z]++[a-z]*+{contractions}""",
                r"""[0-9]{1,3}""",
                rf""" ?+{lnw}++[\r\n/]*+""",
                rf"""{ws}*[\r\n]+""",
                rf"""{ws}+(?!{nws})""",
                rf"""{ws}+""",
            ]
        ),
        # a plain transcription (classes only, same quantifiers): equal on ASCII by construction
        LLAMA3_PATTERN: (
            rf"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]{{1,3}}"""
            rf"""| ?{lnw}+[\r\n]*|{ws}*[\r\n]+|{ws}+(?!{nws})|{ws}+"""
        ),
        TEKKEN_PATTERN: "|".join(
            [
                rf"""{prefix}[A-Z]*+[a-z]++""",
                rf"""{prefix}[A-Z]++[a-z]*+""",
                r"""[0-9]""",
                rf""" ?+{lnw}++[\r\n/]*+""",
                rf"""{ws}*[\r\n]+""",
                rf"""{ws}+(?!{nws})""",
                rf"""{ws}+""",
            ]
        ),
    }
    out = {}
    for pattern, source in sources.items():
        try:
            out[pattern] = re.compile(source)
        except re.error:  # possessive quantifiers need Python 3.11; `regex` is used instead
            pass
    return out


_ASCII_PATTERNS = _ascii_patterns()


def ascii_pattern(pattern: str) -> re.Pattern[str] | None:
    """The stdlib `re` twin of a built-in pattern (by name or regex), exact on ASCII-only
    text and several times faster there than `regex`; None for any other pattern.

    >>> ascii_pattern("gpt2").findall("I'll go  now") == pretokenize("I'll go  now", "gpt2")
    True
    """
    return _ASCII_PATTERNS.get(resolve_pattern(pattern))


# ---------------------------------------------------------------------------------------------
# Safe cuts: where text can be split so that each part pre-tokenizes on its own exactly
#
# The rule, for the three built-in patterns: a cut is safe (1) before a space that follows a
# non-whitespace character ("a| b": no pre-token continues past such a space, and none has a
# look-behind), and (2) after a newline that follows a non-whitespace character and precedes
# a letter or digit ("a\n|b"). tests/test_tokenizer.py checks it on generated text.
# Training cuts corpus *files* into chunks with the same rule (1) seen in the raw UTF-8 bytes
# (decoding is not needed to see them): SAFE_CUT_BYTES.

#: The non-ASCII whitespace characters (``str.isspace`` and the patterns' ``\s`` agree on
#: them; tests/test_corpus.py checks the list against every code point) as UTF-8.
NON_ASCII_SPACES = ("\x85", "\xa0", "\u1680", *map(chr, range(0x2000, 0x200B)),
                    "\u2028", "\u2029", "\u202f", "\u205f", "\u3000")

#: Rule (1) on raw UTF-8 bytes: a space after a printable ASCII byte, or after the last byte
#: of a character that is not ASCII (a continuation byte) unless that character is one of
#: :data:`NON_ASCII_SPACES`. So a corpus in Cyrillic or Greek with no special tokens is cut
#: into chunks too (counted in parallel, with progress) instead of being one.
SAFE_CUT_BYTES = regex.compile(
    rb"(?:(?<=[\x21-\x7e])|(?<=[\x80-\xbf])"
    + b"".join(b"(?<!" + regex.escape(c.encode("utf-8")) + b")" for c in NON_ASCII_SPACES)
    + rb") "
)

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def first_cut(text: str, lo: int) -> int:
    """The smallest cut position ``c >= lo`` of the kinds :func:`last_cut` finds, or
    ``len(text)``.

    >>> first_cut("ab cd ef", 3)
    5
    """
    lo = max(lo, 1)
    n = len(text)
    best = n
    p = text.find(" ", lo)
    while 0 < p < n:
        if not text[p - 1].isspace():
            best = p
            break
        p = text.find(" ", p + 1)
    q = text.find("\n", max(lo - 1, 1), best)
    while 0 < q < best - 1:
        if text[q + 1].isalnum() and not text[q - 1].isspace():
            return q + 1
        q = text.find("\n", q + 1, best)
    return best


def mixed_regions(text: str) -> list[tuple[int, int]]:
    """Spans around the non-ASCII characters of ``text``, widened to safe cuts and merged,
    so that everything outside them is ASCII text that pre-tokenizes on its own.

    >>> mixed_regions("plain words, then é and more words")
    [(17, 19)]
    """
    regions: list[tuple[int, int]] = []
    for m in _NON_ASCII.finditer(text):
        s, e = m.span()
        if regions and s < regions[-1][1]:
            if e > regions[-1][1]:
                regions[-1] = (regions[-1][0], first_cut(text, e))
            continue
        start = last_cut(text, s) if s > 0 else 0
        if regions and start < regions[-1][1]:
            regions[-1] = (regions[-1][0], first_cut(text, e))
        else:
            regions.append((start, first_cut(text, e)))
    return regions


_HIGH_BYTES = re.compile(r"[\x80-\xff]+")
# Both kinds of cut of last_cut, judged on ASCII neighbours only: a subset of the safe cuts
# that reads the same in the Latin-1 view of UTF-8 bytes (bytes >= 0x80 never qualify).
_BYTE_CUT = r"(?<=[\x21-\x7e])(?= )|(?<=[\x21-\x7e]\n)(?=[A-Za-z0-9])"
_LAST_BYTE_CUT = re.compile(rf"(?s:.*)(?:{_BYTE_CUT})")
_NEXT_BYTE_CUT = re.compile(_BYTE_CUT)


def mixed_byte_regions(text: str) -> list[tuple[int, int]]:
    """:func:`mixed_regions` for UTF-8 bytes seen through Latin-1 (``data.decode("latin-1")``,
    one character per byte): spans around the bytes >= 0x80, widened to safe cuts, so that
    everything outside them is ASCII text that pre-tokenizes on its own, and each span is
    whole UTF-8 characters.

    Training counts a file chunk this way without decoding it: the ASCII stretches go to the
    stdlib `re` twin as they are, only the spans are decoded for `regex`. Each search starts
    where the previous span ended, so a chunk is scanned about once.

    >>> data = "plain words, then é and more words".encode()
    >>> mixed_byte_regions(data.decode("latin-1"))  # " é and": a cut needs ASCII on its left
    [(17, 24)]
    """
    regions: list[tuple[int, int]] = []
    done = 0  # end of the last span: everything before it is covered
    while (s := _next_high_byte(text, done)) >= 0:
        e = _HIGH_BYTES.match(text, s).end()  # type: ignore[union-attr]  # text[s] is one
        # the last cut before s: near s first (the whole stretch back to `done` only if
        # there is none): `.*` would otherwise run over every byte since the last span
        lo = max(done, s - 256)
        back = _LAST_BYTE_CUT.match(text, lo, s)
        if back is None and lo > done:
            back = _LAST_BYTE_CUT.match(text, done, s)
        start = back.end() if back else done
        nxt = _NEXT_BYTE_CUT.search(text, e)
        end = nxt.start() if nxt else len(text)
        if regions and start <= done:
            regions[-1] = (regions[-1][0], end)
        else:
            regions.append((start, end))
        done = end  # the bytes >= 0x80 before it are inside this span (it ends at an ASCII byte)
    return regions


def _next_high_byte(text: str, i: int) -> int:
    """Where the next character >= U+0080 at or after ``i`` is, or -1. Whole blocks are
    passed over by ``isascii`` (C, a word at a time): a regex scan costs ~8 ns a character.

    >>> _next_high_byte("abc\xe9", 1), _next_high_byte("abc", 0)
    (3, -1)
    """
    n = len(text)
    while i < n:
        j = i + 4096
        if not text[i:j].isascii():
            return _HIGH_BYTES.search(text, i).start()  # type: ignore[union-attr]  # in [i, j)
        i = j
    return -1


def last_cut(text: str, hi: int, *, lo: int = 1) -> int:
    """The largest cut position ``c`` with ``lo <= c <= hi`` where pre-tokenization with the
    built-in patterns can restart, or 0. Two kinds of place qualify:

    - before a space that follows a non-space (``"a| b"``): no pre-token continues past
      such a space;
    - after a newline that follows a non-space and precedes a letter or digit (``"a\\n|b"``).

    >>> last_cut("ab cd", 4)
    2
    >>> last_cut("ab\\ncd", 4)
    3
    """
    best = 0
    p = text.rfind(" ", lo, hi + 1)
    while p >= lo:
        if not text[p - 1].isspace():
            best = p
            break
        p = text.rfind(" ", lo, p)
    q = text.rfind("\n", max(lo - 1, best), hi)
    while q >= max(lo, best):
        if q + 1 < len(text) and text[q + 1].isalnum() and not text[q - 1].isspace():
            return q + 1
        q = text.rfind("\n", max(lo - 1, best), q)
    return best


def cut_outside_specials(
    buf: str, hi: int, *, lo: int = 0, specials: Any = None, longest_special: int = 0
) -> int:
    """The last :func:`last_cut` place ``c`` with ``lo < c <= hi`` that no match of the
    ``specials`` regex straddles, or 0: where a stream (``encode_iterable``, Evaluate's
    chunks) may cut ``buf`` and encode the two sides apart. A special token may start near
    the end of ``buf`` and go on in what comes next, so cuts stay ``longest_special``
    characters (at least one) away from the end.

    >>> cut_outside_specials("ab <|x y|> cd e", 15, specials=re.compile(r"<\\|x y\\|>"),
    ...                      longest_special=7)
    2
    """
    hi = min(hi, len(buf) - max(longest_special, 1))
    spans = [] if specials is None else [
        m.span() for m in specials.finditer(buf, lo, min(len(buf), hi + longest_special))]
    while hi > lo:
        cut = last_cut(buf, hi, lo=lo + 1)
        if cut <= lo:
            return 0
        straddle = next((s for s, e in spans if s < cut < e), None)
        if straddle is None:
            return cut
        hi = straddle
    return 0

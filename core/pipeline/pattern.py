r"""Hugging Face's patterns (``{"String": ...}`` / ``{"Regex": ...}``), matched as Oniguruma does.

``tokenizers`` matches its regexes with Oniguruma (Ruby syntax, Unicode 16); we use the
``regex`` module. :func:`onig_to_python` rewrites a pattern where the two syntaxes differ,
:func:`as_unicode_16` makes the text look as it does to an engine on Unicode 16, and
:class:`Pattern` iterates matches the way the ``onig`` crate does. ``Replace`` normalizers,
``Split`` pre-tokenizers and ``Replace`` decoders all hold a :class:`Pattern`.

>>> Pattern.regex(r"\p{N}{1,3}+").matches("12345 6")      # Ruby: {1,3}+ repeats
[(0, 5), (6, 7)]
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.engine.pretoken_split import splitter
from core.engine.regex_compat import HeldPattern, compile_held, regex
from core.errors import FormatError
from core.pipeline.json_fields import show
from core.pipeline.split_runs import Behavior, split_runs_str
from core.pipeline.unicode_tables import (
    RECATEGORIZED,
    has_newer_than_unicode_16,
    sub_newer_than_unicode_16,
)

__all__ = ["Pattern", "as_unicode_16", "onig_to_python"]

@dataclass(frozen=True)
class Pattern:
    """A literal string or an Oniguruma regex, as in ``Replace`` and ``Split``.

    Regexes are written in Oniguruma's Ruby syntax; :func:`onig_to_python` rewrites them for
    the ``regex`` module. Matches are found the way the ``onig`` crate iterates them (an empty
    match right after a match is skipped), and on empty text there are none.

    >>> Pattern.regex(r"\\p{N}{1,3}+").matches("12345 6")      # Ruby: {1,3}+ repeats
    [(0, 5), (6, 7)]
    >>> Pattern.regex("x*").matches("axxb")
    [(0, 0), (1, 3), (4, 4)]
    """

    source: str
    is_regex: bool = False
    _compiled: HeldPattern = field(init=False, repr=False, compare=False)
    _literal_chars: frozenset[str] = field(init=False, repr=False, compare=False)
    #: a built-in pattern's findall in C (core.engine.pretoken_split), else None
    _cut: Callable[[str], list[str]] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        source = (
            onig_to_python(self.source) if self.is_regex else regex.escape(self.source)
        )
        try:
            compiled = compile_held(source, regex.MULTILINE | regex.V0)
        except regex.error as err:
            raise FormatError(
                f"the regex {self.source!r} cannot be compiled ({err}); it must be a pattern "
                "Oniguruma (which Hugging Face uses) accepts"
            ) from None
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "_literal_chars", frozenset(self.source))
        # GPT-2's, o200k's, Llama 3's and Tekken's regexes read the same in both syntaxes and
        # hold no ^ or $ (which MULTILINE would change): their findall is the built-in cut's
        object.__setattr__(self, "_cut", splitter(source) if self.is_regex else None)

    def __reduce__(self) -> tuple[Any, ...]:
        # made again where it is unpickled (a worker process): the C cut holds buffers
        return (type(self), (self.source, self.is_regex))

    @classmethod
    def string(cls, text: str) -> Pattern:
        """A literal: matches exactly ``text``."""
        return cls(text, is_regex=False)

    @classmethod
    def regex(cls, source: str) -> Pattern:
        """An Oniguruma regex (Ruby syntax), as in a ``tokenizer.json``."""
        return cls(source, is_regex=True)

    @classmethod
    def from_json(cls, obj: Any, *, where: str) -> Pattern:
        """``{"String": "..."}`` or ``{"Regex": "..."}``.

        >>> Pattern.from_json({"Regex": "\\\\s+"}, where="x")
        Pattern(source='\\\\s+', is_regex=True)
        """
        if isinstance(obj, dict) and len(obj) == 1:
            ((kind, source),) = obj.items()
            if kind in ("String", "Regex") and isinstance(source, str):
                try:
                    return cls(source, is_regex=kind == "Regex")
                except FormatError as err:
                    raise FormatError(f"{where}: {err}") from None
        raise FormatError(
            f'{where}: pattern should be {{"String": "..."}} or {{"Regex": "..."}}, '
            f"not {show(obj)}"
        )

    def matches(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` character offsets of every match, in order."""
        if not text:
            return []
        haystack = (
            as_unicode_16(text, keep=self._literal_chars) if self.is_regex else text
        )
        # subtle: finditer searches on from where each match ended, as the onig crate
        # does; they part only after an empty match (finditer allows one there, onig skips
        # it). So finditer's answer stands when it holds no empty match; else (rare: a
        # pattern that can match nothing) the onig loop below.
        found = [m.span() for m in self._compiled.finditer(haystack)]
        if all(map(operator.lt, map(_start, found), map(_end, found))):
            return found
        return self._onig_matches(haystack)

    def _onig_matches(self, haystack: str) -> list[tuple[int, int]]:
        """:meth:`matches` by the onig crate's own loop, one search per match."""
        text = haystack
        found: list[tuple[int, int]] = []
        pos, last_end = 0, -1
        search = self._compiled.search
        while pos <= len(text):
            m = search(haystack, pos)
            if m is None:
                break
            start, end = m.span()
            # subtle: the onig crate skips an empty match where the last match ended and
            # searches again one character on, so a longer match starting there is never
            # found (Python's finditer would find it)
            if start == end == last_end:
                pos += 1
                continue
            found.append((start, end))
            pos = last_end = end
        return found

    def find_matches(self, text: str) -> list[tuple[int, int, bool]]:
        """The whole of ``text`` cut into ``(start, end, is_match)`` runs (HF ``find_matches``).

        >>> Pattern.string("-").find_matches("a-b")
        [(0, 1, False), (1, 2, True), (2, 3, False)]
        """
        if not text:
            return [(0, 0, False)]
        runs: list[tuple[int, int, bool]] = []
        prev = 0
        for start, end in self.matches(text):
            if start != prev:
                runs.append((prev, start, False))
            runs.append((start, end, True))
            prev = end
        if prev != len(text):
            runs.append((prev, len(text), False))
        return runs

    def split_str(self, text: str, behavior: Behavior) -> list[str]:
        """``text`` cut at the matches as a ``Split`` pre-tokenizer with ``behavior`` cuts
        it: :func:`split_runs_str` of :meth:`find_matches`, straight from the matched strings
        when the matches cover the whole text (GPT-2's pattern always does).

        >>> Pattern.regex(r"\\d+").split_str("a12b", "isolated")
        ['a', '12', 'b']
        """
        if behavior == "isolated" and self._compiled.groups == 0:
            haystack = (
                as_unicode_16(text, keep=self._literal_chars) if self.is_regex else text
            )
            if haystack is text:
                words = self._compiled.findall(text) if self._cut is None else self._cut(text)
                # no empty match (see matches) and nothing between matches: these are the runs
                if "" not in words and sum(map(len, words)) == len(text):
                    return words
        return split_runs_str(text, self.find_matches(text), behavior)


def as_unicode_16(text: str, *, keep: frozenset[str] = frozenset()) -> str:
    """``text`` as regex engines on Unicode 16 (Oniguruma, Rust's ``regex`` crate) see it,
    for matching with the newer ``regex`` module: characters assigned since become U+FFFF,
    unassigned in every version, so ``\\p{L}``, ``\\s``, ``\\w``... treat them as those
    engines do; U+0295 (Ll until Unicode 17) becomes U+0296, a caseless Latin Ll like it was.
    Same length, so offsets do not move. Characters in ``keep`` (those written in the
    pattern itself) are left alone.

    >>> as_unicode_16("a\\u0295\\U0001fac8") == "a\\u0296\\uffff"
    True
    """
    if not has_newer_than_unicode_16(text):  # (the usual case, found fast)
        return text
    return sub_newer_than_unicode_16(
        lambda c: c if c in keep else RECATEGORIZED.get(c, "\uffff"), text
    )


_start = operator.itemgetter(0)
_end = operator.itemgetter(1)

_INTERVAL = regex.compile(r"\{(\d*)(?:,(\d*))?\}")
# Oniguruma's \w: the regex module's (Alphabetic, M, Nd, Pc, Join_Control) without ZWJ/ZWNJ,
# with the Latin-1 digits ² ³ ¹ ¼ ½ ¾
_WORD = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\xb2\xb3\xb9\xbc-\xbe"
_ESCAPES_OUTSIDE = {
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
    "B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))",
    "h": "[0-9a-fA-F]",
    "H": "[^0-9a-fA-F]",
    "Z": r"(?=\n?\Z)",  # Ruby: end of text or before a final newline; Python's \Z is the end
    "z": r"\Z",
    "R": r"(?>\r\n|[\n\x0b\x0c\r\x85\u2028\u2029])",
}


def onig_to_python(pattern: str) -> str:
    r"""Rewrite an Oniguruma (Ruby syntax) regex for the ``regex`` module (with MULTILINE, as
    Ruby's ``^``/``$`` always match at line breaks).

    What differs: ``X{n,m}+`` repeats ``X{n,m}`` (Python: possessive), ``(?m)`` is Python's
    ``(?s)``, ``\h`` is a hex digit, ``\w`` (so ``\b``) takes ``²³¹¼½¾`` and not
    ZWJ/ZWNJ, ``\Z``/``\z``/``\R``/``\x{...}``/``\k<name>`` are spelled differently. Class
    intersections (``[a-z&&[^b]]``) and negated nested classes are not supported (a
    :class:`FormatError`); ``\W`` inside a class and POSIX ``[[:punct:]]`` keep Python's
    meaning.

    >>> onig_to_python(r"\p{N}{1,3}+|(?m:a.)\h")
    '(?:\\p{N}{1,3})+|(?s:a.)[0-9a-fA-F]'
    """
    out: list[str] = []
    group_starts: list[int] = []
    last_atom = 0
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            token, i = _escape(pattern, i, in_class=False)
            last_atom = len(out)
            out.append(token)
        elif ch == "[":
            token, i = _char_class(pattern, i)
            last_atom = len(out)
            out.append(token)
        elif ch == "(":
            group_starts.append(len(out))
            token, i = _group_open(pattern, i)
            out.append(token)
        elif ch == ")":
            last_atom = group_starts.pop() if group_starts else len(out)
            out.append(ch)
            i += 1
        elif (
            ch == "{"
            and (m := _INTERVAL.match(pattern, i))
            and m.group(1, 2) != ("", None)
        ):
            i = m.end()
            if i < len(pattern) and pattern[i] in "+*":
                # subtle: Ruby reads X{1,3}+ as (X{1,3})+, not as a possessive X{1,3}
                atom = "".join(out[last_atom:])
                del out[last_atom:]
                out.append(f"(?:{atom}{m.group()}){pattern[i]}")
                i += 1
            else:
                out.append(m.group())
        else:
            if ch not in "*+?|":
                last_atom = len(out)
            out.append(ch)
            i += 1
    return "".join(out)


def _escape(pattern: str, i: int, *, in_class: bool) -> tuple[str, int]:
    """The escape sequence at ``pattern[i]`` (a backslash), rewritten; and where it ends."""
    if i + 1 >= len(pattern):
        return "\\", i + 1
    ch = pattern[i + 1]
    if ch == "x" and pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 3)
        if end > 0:
            digits = pattern[i + 3 : end]
            try:
                return f"\\U{int(digits, 16):08x}", end + 1
            except ValueError:
                pass
    if ch == "k" and pattern.startswith("<", i + 2):
        return "\\g", i + 2  # \k<name> -> \g<name>: the rest copies through
    if ch in "pP" and pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 3)
        if end > 0:
            return pattern[i : end + 1], end + 1
    if in_class:
        return {"h": "0-9a-fA-F", "w": _WORD}.get(ch, pattern[i : i + 2]), i + 2
    return _ESCAPES_OUTSIDE.get(ch, pattern[i : i + 2]), i + 2


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """The bracket expression at ``pattern[i]``; nested plain classes are merged into it."""
    out = ["["]
    i += 1
    if pattern.startswith("^", i):
        out.append("^")
        i += 1
    if pattern.startswith("]", i):  # a "]" first in the class is literal
        out.append("\\]")
        i += 1
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            token, i = _escape(pattern, i, in_class=True)
            out.append(token)
        elif ch == "]":
            return "".join(out) + "]", i + 1
        elif ch == "[" and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            stop = end + 2 if end > 0 else i + 1
            out.append(pattern[i:stop])
            i = stop
        elif ch == "[":
            if pattern.startswith("[^", i):
                raise FormatError(
                    f"the regex {pattern!r} nests a negated class, not supported"
                )
            inner, i = _char_class(pattern, i)
            out.append(inner[1:-1])
        elif ch == "&" and pattern.startswith("&&", i):
            raise FormatError(
                f"the regex {pattern!r} uses a class intersection (&&), not supported"
            )
        else:
            out.append(ch)
            i += 1
    raise FormatError(f"the regex {pattern!r} has a '[' that is never closed")


_GROUP_OPTIONS = regex.compile(r"\(\?([imx]*)(-[imx]*)?([:)])")


def _group_open(pattern: str, i: int) -> tuple[str, int]:
    """``(`` and its options; Ruby's ``m`` option (dot matches newline) is Python's ``s``."""
    m = _GROUP_OPTIONS.match(pattern, i)
    if m is None:
        return "(", i + 1
    on, off, end = m.group(1), m.group(2) or "", m.group(3)
    return f"(?{on.replace('m', 's')}{off.replace('m', 's')}{end}", m.end()


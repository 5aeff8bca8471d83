"""The one place core imports ``regex`` from, with a stand-in on stdlib ``re`` where it is missing.

Every module in core writes ``from core.engine.regex_compat import regex``. Where the ``regex``
package imports (CPython with our dependencies installed), that *is* ``regex``. Where it does
not (Pyodide without Pyodide's own ``regex`` wheel, a bare Python), ``regex`` is
:data:`fallback`: the part of ``regex``'s API core uses, compiling patterns with ``re`` after
:func:`translate` has rewritten what ``re`` does not know.

>>> fallback.findall(r"\\p{L}+|\\p{N}+", "Größe 42")
['Größe', '42']

What the translation covers, exactly as ``regex`` (V0) matches on assigned characters:

- ``\\p{...}``/``\\P{...}``/``\\pL`` in and out of classes: general categories (``L``, ``Lu``,
  ``Ll``, ``Lt``, ``Lm``, ``Lo``, ``LC``/``L&``, ``M``, ``N``, ``Nd``, ... by short or long
  name, ``gc=`` optional, ``^`` negates), ``White_Space``, ``Join_Control``, ``Any``, and
  ``Alphabetic`` inside a class that also holds ``\\p{M}`` (as in ``\\w``): Alphabetic is
  L + Nl + Other_Alphabetic, and all of Other_Alphabetic but 130 circled/squared Latin letters
  (category So, listed in :data:`_ALPHABETIC_SYMBOLS`) is in M, which ``unicodedata`` cannot
  tell apart on its own;
- ``\\w``/``\\W``/``\\b``/``\\B`` with ``regex``'s Unicode ``\\w`` (Alphabetic, M, Nd, Pc,
  Join_Control: wider than ``re``'s), ``\\s``/``\\S`` as ``White_Space`` (``re``'s ``\\s`` adds
  U+001C..U+001F);
- the rest is ``re``'s own syntax: possessive quantifiers (``?+``, ``++``, ``*+``,
  ``{1,3}+``) and atomic groups (``(?>...)``) need Python 3.11 or later (Pyodide has 3.13+).

Anything else ``regex`` has and ``re`` lacks (scripts such as ``\\p{Han}``, POSIX classes,
``\\X``, fuzzy matching, set operations) raises ``re.error`` (= ``fallback.error``) naming it.

The character classes are built from ``unicodedata`` of the running Python, whose Unicode
version is older than ``regex``'s (Python 3.11: 14.0; 3.13: 15.1; Pyodide's 3.14: 16.0;
``regex`` 2026.x: 17.0). Characters assigned after that version are unassigned (Cn) here;
between 3.11 and ``regex`` 2026.11 the only assigned characters that differ are U+0295
(Ll in 14, Lo in 17) and U+1171E (Mn in 14, Mc in 17), and 28,111 characters new since 14.
For speed, planes 4-13 (U+40000..U+DFFFF) are taken as unassigned without asking
``unicodedata`` (true up to Unicode 17; a test checks it), and planes 15-16 as private use
(fixed by Unicode's stability policy): one pass over the rest costs 0.07 s in CPython and
about 0.5 s in Pyodide, once per process and only when a pattern first needs it.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from itertools import groupby
from types import SimpleNamespace
from typing import Any

__all__ = ["GIL_HELD_CHARS", "HAVE_REGEX", "HeldPattern", "compile_held", "fallback", "regex",
           "translate"]

# ---------------------------------------------------------------------------------------------
# Character sets as code-point ranges, from unicodedata
# ---------------------------------------------------------------------------------------------

Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, inclusive

_MAX = 0x10FFFF
_WHITE_SPACE: Ranges = (
    (0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
    (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
)  # fmt: skip
_JOIN_CONTROL: Ranges = ((0x200C, 0x200D),)
#: Other_Alphabetic characters outside M (PropList.txt; all So, unchanged since Unicode 6.1):
#: circled, squared and negative circled/squared Latin letters.
_ALPHABETIC_SYMBOLS: Ranges = (
    (0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189),
)  # fmt: skip

_CATEGORIES = (
    "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
    "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn",
)  # fmt: skip
_LONG_NAMES = {
    "letter": "L", "casedletter": "LC", "uppercaseletter": "Lu", "lowercaseletter": "Ll",
    "titlecaseletter": "Lt", "modifierletter": "Lm", "otherletter": "Lo", "mark": "M",
    "combiningmark": "M", "nonspacingmark": "Mn", "spacingmark": "Mc", "enclosingmark": "Me",
    "number": "N", "decimalnumber": "Nd", "letternumber": "Nl", "othernumber": "No",
    "punctuation": "P", "punct": "P", "connectorpunctuation": "Pc", "dashpunctuation": "Pd",
    "openpunctuation": "Ps", "closepunctuation": "Pe", "initialpunctuation": "Pi",
    "finalpunctuation": "Pf", "otherpunctuation": "Po", "symbol": "S", "mathsymbol": "Sm",
    "currencysymbol": "Sc", "modifiersymbol": "Sk", "othersymbol": "So", "separator": "Z",
    "spaceseparator": "Zs", "lineseparator": "Zl", "paragraphseparator": "Zp", "other": "C",
    "control": "Cc", "cntrl": "Cc", "format": "Cf", "surrogate": "Cs", "privateuse": "Co",
    "unassigned": "Cn", "l&": "L",  # regex reads L& as L
}  # fmt: skip


@lru_cache(maxsize=1)
def _category_runs() -> tuple[tuple[int, str], ...]:
    """``(first code point, category)`` for each run of equal general category, in order."""
    runs: list[tuple[int, str]] = []
    for lo, hi in ((0, 0x40000), (0xE0000, 0xF0000)):
        for cat, group in groupby(map(unicodedata.category, map(chr, range(lo, hi)))):
            runs.append((lo, cat))
            lo += sum(1 for _ in group)
        if hi == 0x40000:
            runs.append((0x40000, "Cn"))  # planes 4-13: nothing assigned up to Unicode 17
    # subtle: stability policy: U+nFFFE/U+nFFFF are noncharacters, the rest of 15-16 private
    runs += [(0xF0000, "Co"), (0xFFFFE, "Cn"), (0x100000, "Co"), (0x10FFFE, "Cn")]
    return tuple(runs)


@lru_cache(maxsize=64)
def _category_ranges(categories: frozenset[str]) -> Ranges:
    """The code points whose general category is one of ``categories`` (two-letter names)."""
    runs = _category_runs()
    out: list[tuple[int, int]] = []
    for (start, cat), (end, _) in zip(runs, [*runs[1:], (_MAX + 1, "")]):
        if cat in categories:
            if out and out[-1][1] == start - 1:
                out[-1] = (out[-1][0], end - 1)
            else:
                out.append((start, end - 1))
    return tuple(out)


def _union(*sets: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for s in sets for r in s):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(ranges: Ranges) -> Ranges:
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _MAX:
        out.append((nxt, _MAX))
    return tuple(out)


def _expand(category: str) -> frozenset[str]:
    """``"L"`` -> every ``L?`` category; ``"LC"`` -> Lu, Ll, Lt; ``"Lu"`` -> itself."""
    if category == "LC":
        return frozenset({"Lu", "Ll", "Lt"})
    return frozenset(c for c in _CATEGORIES if c.startswith(category))


@lru_cache(maxsize=128)
def _property(name: str) -> tuple[Ranges, bool]:
    """The ranges of ``\\p{name}``, and whether it is Alphabetic (exact only beside M)."""
    key = name.lower().replace(" ", "").replace("_", "").replace("-", "")
    negate = key.startswith("^")
    key = key.lstrip("^")
    for prefix in ("generalcategory=", "gc=", "generalcategory:", "gc:"):
        key = key.removeprefix(prefix)
    short = {c.lower(): c for c in [*_CATEGORIES, "L", "M", "N", "P", "S", "Z", "C", "LC"]}
    alphabetic = key in ("alphabetic", "alpha")
    if key in short or key in _LONG_NAMES:
        ranges = _category_ranges(_expand(short.get(key) or _LONG_NAMES[key]))
    elif alphabetic:
        ranges = _union(_category_ranges(_expand("L") | {"Nl"}), _ALPHABETIC_SYMBOLS)
    elif key in ("whitespace", "wspace", "space"):
        ranges = _WHITE_SPACE
    elif key in ("joincontrol", "joinc"):
        ranges = _JOIN_CONTROL
    elif key == "any":
        ranges = ((0, _MAX),)
    else:
        raise re.error(
            f"\\p{{{name}}} is not supported without the regex package (general categories, "
            "White_Space, Join_Control and Alphabetic are); `pip install regex`"
        )
    return (_complement(ranges) if negate else ranges), alphabetic


@lru_cache(maxsize=1)
def _word() -> Ranges:
    """``regex``'s Unicode ``\\w``: Alphabetic, M, Nd, Pc, Join_Control."""
    return _union(
        _property("Alphabetic")[0], _category_ranges(_expand("M") | {"Nd", "Pc"}), _JOIN_CONTROL
    )


def _char(cp: int) -> str:
    """A code point as it can stand in a class: ASCII punctuation and controls escaped."""
    if cp < 0x80 and not chr(cp).isalnum():
        return f"\\x{cp:02x}"
    return chr(cp)


@lru_cache(maxsize=256)
def _class_body(ranges: Ranges) -> str:
    return "".join(
        _char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}" for lo, hi in ranges
    )


# ---------------------------------------------------------------------------------------------
# The translation
# ---------------------------------------------------------------------------------------------


def _escape_set(pattern: str, i: int) -> tuple[Ranges, bool, int] | None:
    """The set an escape at ``pattern[i]`` (a backslash) stands for, whether it uses
    Alphabetic, and where it ends; None for an escape ``re`` reads the same way."""
    ch = pattern[i + 1 : i + 2]
    if ch in ("p", "P"):
        if pattern.startswith("{", i + 2):
            end = pattern.find("}", i + 3)
            if end < 0:
                raise re.error("missing } after \\p{", pattern, i)
            name, stop = pattern[i + 3 : end], end + 1
        else:
            name, stop = pattern[i + 2 : i + 3], i + 3
        ranges, alphabetic = _property(name)
        return (_complement(ranges) if ch == "P" else ranges), alphabetic, stop
    sets: dict[str, Callable[[], Ranges]] = {"w": _word, "s": lambda: _WHITE_SPACE}
    if ch.lower() in sets:
        ranges = sets[ch.lower()]()
        return (_complement(ranges) if ch.isupper() else ranges), False, i + 2
    return None


def _translate_class(pattern: str, i: int) -> tuple[str, int]:
    """The bracket expression at ``pattern[i]``, with its sets spelled out as ranges."""
    j = i + 1
    negated = pattern.startswith("^", j)
    j += negated
    parts: list[str] = []
    sets: list[Ranges] = []
    alphabetic = False
    first = True
    while j < len(pattern):
        ch = pattern[j]
        if ch == "]" and not first:
            break
        if ch == "]":  # first in the class: a literal
            ch = "\\]"
        first = False
        if ch == "\\":
            found = _escape_set(pattern, j)
            if found is None:
                parts.append(pattern[j : j + 2])
                j += 2
            else:
                ranges, uses_alphabetic, j = found
                sets.append(ranges)
                alphabetic |= uses_alphabetic
        elif ch == "[" and pattern.startswith(("[:", "[=", "[."), j):
            raise re.error("POSIX classes need the regex package", pattern, j)
        elif ch in "[&~|":  # literal in regex V0; re warns about future set operations
            parts.append("\\" + ch)
            j += 1
        else:
            parts.append(ch)
            j += 1
    else:
        raise re.error("unterminated character set", pattern, i)
    marks = _category_ranges(_expand("M"))
    if alphabetic and _union(*sets, marks) != _union(*sets):
        raise re.error(
            "\\p{Alphabetic} needs the regex package unless \\p{M} is in the same class",
            pattern,
            i,
        )
    body = _class_body(_union(*sets)) + "".join(parts)
    if not body:  # [^\p{Any}] and the like: nothing matches
        return ("(?!)" if not negated else "[\\x00-\\U0010ffff]"), j + 1
    return "[" + "^" * negated + body + "]", j + 1


@lru_cache(maxsize=256)
def translate(pattern: str) -> str:
    """``pattern`` in ``regex``'s syntax rewritten for ``re`` (see the module docstring).

    >>> translate(r"\\p{Lt}+")
    '[ǅǈǋǲᾈ-ᾏᾘ-ᾟᾨ-ᾯᾼῌῼ]+'
    >>> fallback.findall(r"\\S+", "a\\u3000b\\x1cc")   # regex's \\s: U+001C is no space
    ['a', 'b\\x1cc']
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            found = _escape_set(pattern, i)
            nxt = pattern[i + 1 : i + 2]
            if found is not None:
                ranges, alphabetic, i = found
                if alphabetic:
                    raise re.error(
                        "\\p{Alphabetic} needs the regex package unless \\p{M} is in the "
                        "same class",
                        pattern,
                        i,
                    )
                out.append(f"[{_class_body(ranges)}]" if ranges else "(?!)")
            elif nxt in ("b", "B"):
                w = f"[{_class_body(_word())}]"
                edge = f"(?<={w})(?!{w})|(?<!{w})(?={w})"
                both = f"(?<={w})(?={w})|(?<!{w})(?!{w})"
                out.append(f"(?:{edge if nxt == 'b' else both})")
                i += 2
            elif nxt in ("X", "G", "K", "L", "m", "M"):
                raise re.error(f"\\{nxt} needs the regex package", pattern, i)
            else:
                out.append(pattern[i : i + 2])
                i += 2
        elif ch == "[":
            token, i = _translate_class(pattern, i)
            out.append(token)
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def compile(pattern: Any, flags: int = 0) -> re.Pattern[Any]:
    """``regex.compile`` on ``re``: str patterns go through :func:`translate` first."""
    if isinstance(pattern, re.Pattern):
        return pattern
    source = translate(pattern) if isinstance(pattern, str) else pattern
    try:
        return re.compile(source, flags)
    except re.error as err:
        if sys.version_info < (3, 11) and "multiple repeat" in str(err):
            raise re.error(
                f"{err}: possessive quantifiers need Python 3.11+ or the regex package"
            ) from None
        raise


def _with_compiled(method: str) -> Any:
    def call(pattern: Any, string: Any, *args: Any, flags: int = 0, **kwargs: Any) -> Any:
        return getattr(compile(pattern, flags), method)(string, *args, **kwargs)

    call.__name__ = method
    return call


#: The stand-in for the ``regex`` module: the names core uses, on ``re``. ``V0`` is ``re``'s
#: behaviour already, so it is 0.
fallback = SimpleNamespace(
    compile=compile,
    escape=re.escape,
    error=re.error,
    Pattern=re.Pattern,
    Match=re.Match,
    IGNORECASE=re.IGNORECASE,
    I=re.IGNORECASE,
    MULTILINE=re.MULTILINE,
    M=re.MULTILINE,
    DOTALL=re.DOTALL,
    S=re.DOTALL,
    V0=0,
    VERSION0=0,
    **{
        name: _with_compiled(name)
        for name in ("match", "fullmatch", "search", "findall", "finditer", "sub", "split")
    },
)

try:
    import regex
except ImportError:  # Pyodide without its regex wheel, a bare Python
    regex = fallback  # type: ignore[assignment]  # the same names, a namespace not a module
    HAVE_REGEX = False
else:
    HAVE_REGEX = True


# ---------------------------------------------------------------------------------------------
# Matching without letting go of the GIL
# ---------------------------------------------------------------------------------------------

#: Texts up to this many characters are matched holding the GIL (:class:`HeldPattern`); the
#: engine encodes long text in segments of this size (``core.engine.text_encoder``), so each
#: of its matches keeps the GIL.
GIL_HELD_CHARS = 1 << 16


class HeldPattern:
    """A compiled ``regex`` pattern that keeps the GIL while it matches a short text.

    ``regex`` lets go of the GIL around every match on a str, so that other threads may run
    meanwhile. On a server where twenty sessions' threads queue for the GIL, each let-go
    costs a wait to get it back, up to the 5 ms switch interval: a sentence's dozen
    pre-tokens took milliseconds instead of microseconds, and a session's rerun waited for
    the others at every match. ``re`` and core's C twins never let go. Texts longer than
    :data:`GIL_HELD_CHARS` still do, so that one long match never stops the other threads.

    >>> HeldPattern(regex.compile(r"\\w+")).findall("held by a thread")
    ['held', 'by', 'a', 'thread']
    """

    __slots__ = ("compiled",)

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled

    @property
    def pattern(self) -> Any:
        return self.compiled.pattern

    @property
    def flags(self) -> int:
        return int(self.compiled.flags)

    @property
    def groups(self) -> int:
        return int(self.compiled.groups)

    def findall(self, string: Any, *args: Any) -> list[Any]:
        return self.compiled.findall(string, *args, concurrent=_lets_go(string))

    def finditer(self, string: Any, *args: Any) -> Any:
        return self.compiled.finditer(string, *args, concurrent=_lets_go(string))

    def search(self, string: Any, *args: Any) -> Any:
        return self.compiled.search(string, *args, concurrent=_lets_go(string))

    def match(self, string: Any, *args: Any) -> Any:
        return self.compiled.match(string, *args, concurrent=_lets_go(string))

    def fullmatch(self, string: Any, *args: Any) -> Any:
        return self.compiled.fullmatch(string, *args, concurrent=_lets_go(string))

    def split(self, string: Any, *args: Any) -> list[Any]:
        return self.compiled.split(string, *args, concurrent=_lets_go(string))

    def sub(self, repl: Any, string: Any, *args: Any) -> Any:
        return self.compiled.sub(repl, string, *args, concurrent=_lets_go(string))

    def __repr__(self) -> str:
        return f"HeldPattern({self.compiled!r})"


def _lets_go(string: Any) -> bool | None:
    """``regex``'s ``concurrent``: False (keep the GIL) for a short text, else its default."""
    return None if len(string) > GIL_HELD_CHARS else False


def compile_held(pattern: Any, flags: int = 0) -> HeldPattern:
    """``regex.compile`` as a :class:`HeldPattern`; on the ``re`` stand-in, ``re``'s own
    pattern (the same methods, and ``re`` never lets go of the GIL)."""
    compiled = regex.compile(pattern, flags)
    return HeldPattern(compiled) if HAVE_REGEX else compiled  # type: ignore[return-value]

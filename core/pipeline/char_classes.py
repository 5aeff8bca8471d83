"""Character classes of Hugging Face's pre-tokenizers, as the crates behind ``tokenizers``
define them, and ``str.translate`` tables of them for the ``split_str`` forms.

``is_punctuation`` is the ``unicode_categories`` crate's (Unicode ~8), ``is_numeric``
Rust's ``char::is_numeric`` (Unicode 16); Python 3.11's ``unicodedata`` is Unicode 14, so
the tables at the end record, code point by code point, where the answers differ (the tests
compare every code point with ``tokenizers``).

>>> is_punctuation("$"), is_numeric("²")
(True, True)
>>> "a,b".translate(PUNCTUATION_FLAGS) == "\\x00\\x01\\x00"
True
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from core.engine.regex_compat import compile_held, regex
from core.pipeline.normalizers import CharTable
from core.pipeline.unicode_tables import WHITESPACE, code_points

__all__ = [
    "NOT_WHITESPACE",
    "NUMERIC_FLAGS",
    "PUNCTUATION_FLAGS",
    "SPACED_PUNCTUATION",
    "is_numeric",
    "is_punctuation",
]

_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def is_punctuation(ch: str) -> bool:
    """Hugging Face's punctuation (BERT, ``Punctuation``): ASCII punctuation (so ``$+<=>^`|~``
    too) or a Unicode P* category, in the ``unicode_categories`` crate's tables.

    >>> is_punctuation("$"), is_punctuation("。"), is_punctuation("€")
    (True, True, False)
    """
    punct = ch in _ASCII_PUNCTUATION or unicodedata.category(ch).startswith("P")
    return punct != (ord(ch) in _PUNCTUATION_FLIPS)


def is_numeric(ch: str) -> bool:
    """Rust's ``char::is_numeric``: general category Nd, Nl or No (``"²"`` and ``"Ⅻ"`` too).

    >>> is_numeric("²"), is_numeric("٣"), is_numeric("x")
    (True, True, False)
    """
    numeric = unicodedata.category(ch) in ("Nd", "Nl", "No")
    return numeric != (ord(ch) in _NUMERIC_FLIPS)


def _flags(is_delimiter: Callable[[str], bool]) -> CharTable:
    """A translate table of ``"\\x01"`` for a delimiter, ``"\\x00"`` else (``flag_runs``)."""
    return CharTable(lambda ch: "\x01" if is_delimiter(ch) else "\x00")


PUNCTUATION_FLAGS = _flags(is_punctuation)
NUMERIC_FLAGS = _flags(is_numeric)
#: each punctuation character with a space on each side: BERT's words are then the text's
#: runs of non-whitespace (no punctuation character is whitespace)
SPACED_PUNCTUATION = CharTable(lambda ch: f" {ch} " if is_punctuation(ch) else ch)
#: runs of anything but Rust's whitespace
NOT_WHITESPACE = compile_held("[^" + regex.escape("".join(sorted(WHITESPACE))) + "]+")


# ---------------------------------------------------------------------------------------------
# Unicode tables where the crates differ from Python 3.11's unicodedata (see unicode_tables.py)
# ---------------------------------------------------------------------------------------------

#: Where "is punctuation" (``unicode_categories``, Unicode ~8) differs from Python's answer.
_PUNCTUATION_FLIPS = code_points(
    "061D 09FD 0A76 0C77 0C84 166D 1B7D-1B7E 2E43-2E4F 2E52-2E5D 10EAD 10F55-10F59 "
    "10F86-10F89 111C9 1144B-1144F 1145A-1145B 1145D 11660-1166C 116B9 1183B 11944-11946 "
    "119E2 11A3F-11A46 11A9A-11A9C 11A9E-11AA2 11C41-11C45 11C70-11C71 11EF7-11EF8 11FFF "
    "12FF1-12FF2 16E97-16E9A 16FE2 1E95E-1E95F"
)

#: Where Rust's ``char::is_numeric`` (Unicode 16) differs from Python's answer.
_NUMERIC_FLIPS = code_points(
    "10D40-10D49 116D0-116E3 11BF0-11BF9 11DE0-11DE9 11F50-11F59 16130-16139 16D70-16D79 "
    "16FF4-16FF6 1CCF0-1CCF9 1D2C0-1D2D3 1E4F0-1E4F9 1E5F1-1E5FA"
)

"""Pre-tokenization's hot loop: the built-in patterns' findall in C, where it was built.

:mod:`core.engine.pretokenize` says what the pre-tokens are (a regex, run by ``regex``). On
text that is not ASCII, ``regex``'s findall was about half of an encode: 6 of 13 ms for a
50 KB mix of scripts with o200k, as much as tiktoken's whole encode. For the five built-in
patterns (GPT-2, cl100k, Llama 3, o200k, Tekken), ``tokplay_native.pretok`` cuts the same
pre-tokens in C; :func:`splitter` gives that cut, or None where it does not apply (another
pattern, no C helper built, no ``regex``), and the caller keeps ``regex``.

What each character is (a letter, a number, whitespace, an upper- or lower-case-like letter
or a mark) the C code reads from a table of one byte per code point, filled here *by
``regex`` itself*, one block of 256 code points at a time when a text first uses it: the
classes are ``regex``'s whatever its Unicode version, and a text costs only its own blocks.

>>> split = splitter("o200k")
>>> split is None or split("Hello wörld, 日本語!\\n") == ["Hello", " wörld", ",", " 日本語", "!\\n"]
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from core import native
from core.engine.pretokenize import (
    CL100K_PATTERN,
    GPT2_PATTERN,
    LLAMA3_PATTERN,
    O200K_PATTERN,
    TEKKEN_PATTERN,
    resolve_pattern,
)
from core.engine.regex_compat import HAVE_REGEX, compile_held

__all__ = ["CLASS_PATTERNS", "CharClasses", "splitter"]

#: Each pattern's number in ``tokplay_native.pretok``.
_NUMBERS = {GPT2_PATTERN: "GPT2", CL100K_PATTERN: "CL100K", LLAMA3_PATTERN: "LLAMA3",
            O200K_PATTERN: "O200K", TEKKEN_PATTERN: "TEKKEN"}  # fmt: skip

#: The classes the C cuts read, by their flag's name in ``tokplay_native.pretok``, as the
#: patterns spell them.
CLASS_PATTERNS = {
    "L": r"\p{L}",
    "N": r"\p{N}",
    "S": r"\s",
    "U": r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
    "W": r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
}

_BLOCK = 256


class CharClasses:
    """One byte of class flags per code point, filled by ``regex`` a block at a time (the
    C cut calls :meth:`fill` for each block a text uses that is not known yet).

    ``classes[c]`` is only read once ``known[c >> 8]`` is 1; a block is written whole before
    its flag is set, so a reader never sees half of one (two threads filling the same block
    write the same bytes).
    """

    def __init__(self, flags: dict[str, int]) -> None:
        self.classes = bytearray(0x110000)
        self.known = bytearray(0x110000 // _BLOCK)
        self._finders = [(flags[name], compile_held(rx).finditer)
                         for name, rx in CLASS_PATTERNS.items()]

    def fill(self, block: int) -> None:
        """Compute the classes of the code points of ``block`` (``block * 256`` on)."""
        lo = block * _BLOCK
        chars = "".join(map(chr, range(lo, lo + _BLOCK)))
        flags = bytearray(_BLOCK)
        for flag, finditer in self._finders:
            for m in finditer(chars):
                flags[m.start()] |= flag
        self.classes[lo : lo + _BLOCK] = flags
        self.known[block] = 1


@functools.cache  # one table per process: classes of code points, the same for every tokenizer
def _char_classes() -> CharClasses:
    pretok = native.pretok
    assert pretok is not None  # (splitter checked)
    return CharClasses({name: getattr(pretok, name) for name in CLASS_PATTERNS})


def splitter(pattern: str) -> Callable[[str], list[str]] | None:
    """``regex.findall`` of a built-in ``pattern`` (a name or the regex itself), in C; None
    for any other pattern, or where the C helper was not built or ``regex`` is missing
    (:mod:`core.engine.regex_compat`'s stand-in)."""
    number = _NUMBERS.get(resolve_pattern(pattern))
    pretok = native.pretok
    if number is None or pretok is None or not HAVE_REGEX:
        return None
    table = _char_classes()
    # (a block of code points this process has not seen yet is filled when a text first
    # uses it: the C cut calls table.fill)
    cut: Callable[[str], list[str]] = pretok.Splitter(getattr(pretok, number), table.classes,
                                                      table.known, table.fill)
    return cut

"""GPT-2's reversible map from bytes to printable unicode characters.

GPT-2's ``encoder.json`` and ``vocab.bpe`` store tokens through this map, which is why a
leading space shows as ``Ġ`` and a newline as ``Ċ``.

>>> to_gpt2_str(b" hello\\n")
'ĠhelloĊ'
>>> from_gpt2_str('ĠhelloĊ')
b' hello\\n'
"""

from __future__ import annotations

from functools import lru_cache
from itertools import accumulate


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """The table from openai/gpt-2 ``encoder.py``: printable bytes map to themselves, the other
    68 bytes to the code points from U+0100 on, in byte order."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    table = {b: chr(b) for b in printable}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return table


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def to_gpt2_str(token: bytes) -> str:
    """Show ``token`` the way GPT-2's files do (``b" the"`` -> ``"Ġthe"``)."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def from_gpt2_str(text: str) -> bytes:
    """Inverse of :func:`to_gpt2_str`; raises ``KeyError`` on a character outside the map."""
    table = unicode_to_bytes()
    return bytes(table[c] for c in text)


@lru_cache(maxsize=1)
def _translate_table() -> dict[int, int]:
    """``str.translate`` table from the map back to bytes (as code points 0..255); the code
    points below 256 that are *not* in the map go to U+FFFF, which ``latin-1`` cannot
    encode, so a character outside the map fails loudly instead of passing as a byte."""
    table = {ord(c): b for c, b in unicode_to_bytes().items()}
    return {i: 0xFFFF for i in range(256) if i not in table} | table


def from_gpt2_strs(texts: list[str]) -> list[bytes] | None:
    """:func:`from_gpt2_str` of many strings at once, or None if a character is outside
    the map. Each character is one byte, so the strings are translated and encoded as one
    (two C calls instead of two per string) and cut back apart by their lengths.

    >>> from_gpt2_strs(["Ġhi", "Ċ"]), from_gpt2_strs(["a b"])
    ([b' hi', b'\\n'], None)
    """
    try:
        raw = "".join(texts).translate(_translate_table()).encode("latin-1")
    except UnicodeEncodeError:
        return None
    ends = list(accumulate(map(len, texts)))
    return list(map(raw.__getitem__, map(slice, [0, *ends[:-1]], ends)))

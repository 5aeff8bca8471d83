"""Hugging Face's ``Precompiled`` normalizer: a SentencePiece char map inside ``tokenizer.json``.

T5, ALBERT, XLM-RoBERTa and most converted SentencePiece models carry their ``.model``
file's normalization rule (``precompiled_charsmap``, e.g. ``nmt_nfkc``) as base64 in a
``{"type": "Precompiled"}`` normalizer. The rule is the same double-array trie SentencePiece
reads (:class:`~core.pipeline.sentencepiece.normalizer.CharsMap`), but ``tokenizers``
(through the ``spm_precompiled`` crate) applies it its own way, and we copy that way, not
SentencePiece's:

- the text is cut into extended grapheme clusters (``\\X``); a cluster shorter than 6 UTF-8
  bytes is replaced *whole* by the rule of its *shortest* matching prefix, if any (so
  ``"\\r\\n"`` becomes what ``"\\r"`` becomes);
- otherwise each character is replaced by its own rule, or kept;
- a NUL byte ends the trie walk (C strings).

Every output character keeps the span of the cluster or character it came from.
``normalize_str`` (the text alone, what encoding reads) runs in C where built
(``core.native.normalize``), else with ``str.translate`` when no cluster joins characters.

>>> from core.pipeline.piece import Piece
>>> from core.pipeline.sentencepiece.normalizer import CharsMap
>>> Precompiled.__name__, callable(CharsMap.first)
('Precompiled', True)
"""

from __future__ import annotations

import base64
import binascii

from core.engine.regex_compat import HAVE_REGEX, compile_held
from core.errors import FormatError
from core.pipeline.piece import Piece, Span
from core.pipeline.sentencepiece.normalizer import CharsMap

__all__ = ["Precompiled", "graphemes", "joining_bitmap", "precompiled_from_json"]

# Extended grapheme clusters. Without the regex package (its stand-in has no \X), an
# approximation: CR LF, or a character with the combining marks and joiners after it.
_GRAPHEME = compile_held(r"\X" if HAVE_REGEX else r"\r\n|[\s\S][\p{M}\u200d]*")
# A character that may join the one before it in a cluster (or, Prepend, the one after):
# a text without one (nor CR LF) is clusters of one character each, which the C twin maps
# without cutting them (most text: Hangul syllables and kana alone never join).
_JOINING = compile_held(
    r"[\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}\p{GCB=Prepend}\p{GCB=L}\p{GCB=V}"
    r"\p{GCB=T}\p{GCB=Regional_Indicator}]+"
    if HAVE_REGEX
    else r"[\p{M}\u200d]+"
)
#: Where such characters are (no other plane has one: ideographs, unassigned, private use)
_JOINING_PLANES = ((0, 0x20000), (0xE0000, 0xE1000))
_joining: list[bytes] = []  # (the bitmap, built on the first use)


def joining_bitmap(planes: tuple[tuple[int, int], ...] | None = None) -> bytes:
    """A bit per code point (low bit first): may it join a grapheme cluster? What the C
    twin reads to tell when a text needs its clusters cut. Built once (a few hundredths of
    a second) for the default ``planes`` (None: those where such characters are).

    >>> bits = joining_bitmap()
    >>> [(bits[c >> 3] >> (c & 7)) & 1 for c in (ord("a"), 0x301, ord("한"), 0x1100)]
    [0, 1, 0, 1]
    """
    if planes is None and _joining:
        return _joining[0]
    bits = bytearray(0x110000 // 8)
    for low, high in planes or _JOINING_PLANES:
        for m in _JOINING.finditer("".join(map(chr, range(low, high)))):
            for code in range(low + m.start(), low + m.end()):
                bits[code >> 3] |= 1 << (code & 7)
    out = bytes(bits)
    if planes is None:
        _joining[:] = [out]
    return out


#: spm_precompiled only tries a whole cluster shorter than this many bytes
_WHOLE_CLUSTER_BYTES = 6


def graphemes(text: str) -> list[str]:
    """``text`` cut into extended grapheme clusters.

    >>> [len(g) for g in graphemes("e\\u0301a\\r\\n")]
    [2, 1, 2]
    """
    return _GRAPHEME.findall(text)


class _ByCode(dict[int, str]):
    """``str.translate``'s table for a char map read Precompiled's way: code point -> its
    character's rule, or the character; filled as texts ask (bounded)."""

    def __init__(self, charsmap: CharsMap) -> None:
        super().__init__()
        self.charsmap = charsmap

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        found = self.charsmap.first(ch.encode("utf-8"))  # (a lone surrogate raises here)
        out = ch if found is None else found
        if len(self) < 65536:
            self[code] = out
        return out


class Precompiled:
    """The ``Precompiled`` normalizer (see the module docstring). ``precompiled_charsmap``:
    the raw rule bytes (what the file holds, base64-decoded)."""

    def __init__(self, precompiled_charsmap: bytes, *, name: str = "tokenizer.json") -> None:
        self.precompiled_charsmap = bytes(precompiled_charsmap)
        self._map = CharsMap(self.precompiled_charsmap, name)
        try:
            # spm_precompiled refuses a replacement pool that is not UTF-8
            self._map.normalized.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(
                f"{name}: the Precompiled normalizer's replacements are not valid UTF-8"
            ) from None
        self._by_char: dict[str, str | None] = {}
        self._by_code = _ByCode(self._map)

    def _char(self, ch: str) -> str | None:
        """The rule for one character (cached: texts repeat their characters)."""
        try:
            return self._by_char[ch]
        except KeyError:
            found = self._map.first(ch.encode("utf-8"))
            if len(self._by_char) < 65536:
                self._by_char[ch] = found
            return found

    def normalize_str(self, text: str) -> str:
        """The normalized text alone: what :meth:`normalize` gives, without spans (in C
        where built: ``core.native.normalize``).

        >>> Precompiled(bytes([8, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0])).normalize_str("ab")
        'ab'
        """
        compiled = self._map.native()
        if compiled is not None:
            out = compiled.hf_normalize(text, joining_bitmap())
            return compiled.hf_normalize(text, _GRAPHEME.findall(text)) if out is None else out
        if "\r\n" not in text and _JOINING.search(text) is None:
            return text.translate(self._by_code)  # (clusters of one character each)
        return self.normalize(Piece.of(text)).text

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        if not text:
            return piece
        out: list[str] = []
        spans: list[Span] = []
        at = 0
        for cluster in _GRAPHEME.findall(text):
            size = len(cluster)
            if size == 1:
                rule = self._char(cluster)
                if rule is None:
                    out.append(cluster)
                    spans.append(piece.spans[at])
                else:
                    out.append(rule)
                    spans.extend([piece.spans[at]] * len(rule))
                at += 1
                continue
            data = cluster.encode("utf-8")
            rule = self._map.first(data) if len(data) < _WHOLE_CLUSTER_BYTES else None
            if rule is not None:
                out.append(rule)
                spans.extend([piece.span_of(at, at + size)] * len(rule))
            else:
                for k, ch in enumerate(cluster):
                    one = self._char(ch)
                    one = ch if one is None else one
                    out.append(one)
                    spans.extend([piece.spans[at + k]] * len(one))
            at += size
        return Piece("".join(out), spans)


def precompiled_from_json(obj: dict[str, object], name: str) -> Precompiled:
    """A ``{"type": "Precompiled", "precompiled_charsmap": "<base64>"}`` normalizer.

    >>> precompiled_from_json({"precompiled_charsmap": "!!"}, "t.json")
    Traceback (most recent call last):
    ...
    core.errors.FormatError: t.json: normalizer.precompiled_charsmap is not valid base64
    """
    raw = obj.get("precompiled_charsmap")
    if not isinstance(raw, str):
        raise FormatError(
            f"{name}: a Precompiled normalizer needs precompiled_charsmap (base64 text)"
        )
    try:
        blob = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise FormatError(
            f"{name}: normalizer.precompiled_charsmap is not valid base64"
        ) from None
    return Precompiled(blob, name=name)

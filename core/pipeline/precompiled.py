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

>>> from core.pipeline.piece import Piece
>>> from core.pipeline.sentencepiece.normalizer import CharsMap
>>> Precompiled.__name__, callable(CharsMap.first)
('Precompiled', True)
"""

from __future__ import annotations

import base64
import binascii

from core.errors import FormatError
from core.pipeline.piece import Piece, Span
from core.pipeline.sentencepiece.normalizer import CharsMap
from core.regex_compat import HAVE_REGEX, regex

__all__ = ["Precompiled", "graphemes", "precompiled_from_json"]

# Extended grapheme clusters. Without the regex package (its stand-in has no \X), an
# approximation: CR LF, or a character with the combining marks and joiners after it.
_GRAPHEME = regex.compile(r"\X" if HAVE_REGEX else r"\r\n|[\s\S][\p{M}\u200d]*")
#: spm_precompiled only tries a whole cluster shorter than this many bytes
_WHOLE_CLUSTER_BYTES = 6


def graphemes(text: str) -> list[str]:
    """``text`` cut into extended grapheme clusters.

    >>> [len(g) for g in graphemes("e\\u0301a\\r\\n")]
    [2, 1, 2]
    """
    return _GRAPHEME.findall(text)


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

    def _char(self, ch: str) -> str | None:
        """The rule for one character (cached: texts repeat their characters)."""
        try:
            return self._by_char[ch]
        except KeyError:
            found = self._map.first(ch.encode("utf-8"))
            if len(self._by_char) < 65536:
                self._by_char[ch] = found
            return found

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

"""SentencePiece's ``Decode`` (``SentencePieceProcessor::Decode``) as a pipeline decoder.

``▁`` → space, the dummy prefix's space dropped, byte pieces reassembled into UTF-8 (each
invalid byte → U+FFFD), control pieces → ``""``, ``<unk>`` → ``" ⁇ "``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from core.pipeline.sentencepiece.proto import (
    BYTE,
    BYTE_PIECES,
    CONTROL,
    NORMAL,
    SPACE,
    UNKNOWN,
)

__all__ = ["SentencePieceDecoder"]


def _utf8_char_len(data: bytes, i: int) -> int:
    """Length of the valid UTF-8 character at ``data[i]``, or 0 if it is not one
    (SentencePiece's DecodeUTF8: no overlong forms, no surrogates, nothing past U+10FFFF)."""
    b = data[i]
    if b >= 0xF8 or 0x80 <= b < 0xC0:
        return 0
    n = 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
    if i + n > len(data):
        return 0
    try:
        data[i : i + n].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return n


class SentencePieceDecoder:
    """SentencePiece's ``Decode`` as a pipeline :class:`Decoder`: piece strings in, one
    string per piece out (joined, they are the decoded text).

    >>> d = SentencePieceDecoder(control={"<s>"}, byte_pieces=True)
    >>> d.decode_chain(["<s>", "▁Hello", "▁", "<0xE2>", "<0x82>", "<0xAC>", "<0xFF>", "<unk>"])
    ['', 'Hello', ' ', '', '', '€', '�', ' ⁇ ']
    """

    def __init__(
        self,
        *,
        control: Iterable[str] = (),
        unk_piece: str = "<unk>",
        unk_surface: str = " \u2047 ",
        byte_pieces: bool = False,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = False,
        piece_type: dict[str, int] | None = None,
        piece_ids: Mapping[str, int] | None = None,
        types: Sequence[int] = (),
    ) -> None:
        # a piece the file does not have is "unknown" to PieceToId (and decoded as is)
        # (piece_ids and types, a model's own tables, say the same as piece_type without a
        # table of their own: a piece's type is types[piece_ids[piece]])
        if piece_ids is not None:
            piece_type = {}
        #: piece -> ID, and the types by ID (a list, or one byte each), when they stand for
        #: piece_type
        self.piece_ids, self.types = piece_ids, types
        self._default = NORMAL if piece_type is None else UNKNOWN
        #: the type of a piece the table lacks; public, as every setting that changes the
        #: output is, so that core.engine.fingerprint sees it
        self.default_type = self._default
        if piece_type is None:
            piece_type = {c: CONTROL for c in control}
            piece_type[unk_piece] = UNKNOWN
            if byte_pieces:
                piece_type.update(dict.fromkeys(BYTE_PIECES, BYTE))
        #: piece -> type, as PieceToId then the id's type would answer (reserved first)
        self.piece_type = piece_type
        self.unk_piece = unk_piece
        self.unk_surface = unk_surface
        self.strip_first_space = add_dummy_prefix or remove_extra_whitespaces
        self.remove_extra_whitespaces = remove_extra_whitespaces

    def _fingerprint_attributes(self) -> dict[str, Any]:
        """What :mod:`core.engine.fingerprint` hashes: the types as a list however they were given
        (a packed model's loader gives bytes)."""
        return {**vars(self), "types": list(self.types)}

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = [""] * len(tokens)
        if self.piece_ids is None:
            kinds = list(map(self.piece_type.get, tokens, [self._default] * len(tokens)))
        else:
            ids = map(self.piece_ids.get, tokens)
            kinds = [self._default if i is None else self.types[i] for i in ids]
        is_bos_ws = True  # still expecting the dummy prefix's ▁ to drop
        bos_ws_seen = False
        text_empty = True
        byte_start = 0

        def flush(begin: int, end: int) -> None:
            nonlocal text_empty
            if begin >= end:
                return
            data = bytes(BYTE_PIECES[tokens[i]] for i in range(begin, end))
            k = 0
            while k < len(data):
                n = _utf8_char_len(data, k)
                if n == 0:
                    out[begin + k] = "\ufffd"
                    k += 1
                else:
                    out[begin + k + n - 1] = data[k : k + n].decode("utf-8")
                    k += n
            text_empty = False

        for i, (tok, kind) in enumerate(zip(tokens, kinds)):
            if kind == BYTE:
                continue
            flush(byte_start, i)
            byte_start = i + 1
            if bos_ws_seen or not text_empty:
                is_bos_ws = False
            bos_ws_seen = False
            if kind == CONTROL:
                piece = ""
            elif kind == UNKNOWN:
                piece = self.unk_surface if tok == self.unk_piece else tok
            else:
                piece = tok
                if is_bos_ws and self.strip_first_space and piece.startswith(SPACE):
                    piece = piece[1:]
                    bos_ws_seen = not self.remove_extra_whitespaces
                piece = piece.replace(SPACE, " ")
            out[i] = piece
            if piece:
                text_empty = False
        flush(byte_start, len(tokens))
        return out

    def decode(self, tokens: list[str]) -> str:
        return "".join(self.decode_chain(tokens))

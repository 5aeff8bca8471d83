"""The tables a SentencePiece model is built from, out of its piece columns (texts,
scores, types by ID): which IDs have a type, ``text -> ID``, and the merge ranks of
:class:`~core.pipeline.sentencepiece.bpe.SentencePieceBPE`.

A model of 32,000 pieces is loaded every time a page opens it, so nothing here loops over
the pieces in Python: whole-list operations (C loops inside CPython), or one pass of
``tokplay_native.spm`` where it was built (:mod:`core.native`), with the same results.

>>> ids_of_type([1, 3, 1, 3], CONTROL)
[1, 3]
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import compress

from core.pipeline.sentencepiece.packed import has_repeats, piece_tables_in_c
from core.pipeline.sentencepiece.proto import BYTE, CONTROL, UNKNOWN, split_ids

__all__ = [
    "RESERVED",
    "PieceTables",
    "first_of_type",
    "has_repeats",
    "ids_of_type",
    "piece_tables",
    "type_codes",
]

#: reserved_id_map_ of model_interface.cc: pieces never merged into
RESERVED = frozenset((CONTROL, UNKNOWN, BYTE))
#: :func:`piece_tables`' answer: ``(vocab, normal, ranks)``
PieceTables = tuple[dict[str, int], Mapping[str, int], dict[str, int] | None]


def type_codes(types: Sequence[int]) -> bytes | None:
    """The piece types as one byte each (one C pass), to count and find them by byte
    searches; None when a type does not fit a byte (a parsed file's are 1..6).

    >>> type_codes([1, 3]), type_codes([300])
    (b'\\x01\\x03', None)
    """
    try:
        return bytes(types)
    except (ValueError, TypeError):
        return None


def ids_of_type(types: Sequence[int], kind: int, codes: bytes | None = None) -> list[int]:
    """The IDs whose type is ``kind``, found by a byte search (C) where every type fits a
    byte: a model of 32,000 pieces has a few hundred CONTROL ones. ``codes``:
    ``type_codes(types)``, when the caller has it.

    >>> ids_of_type([1, CONTROL, 1, CONTROL], CONTROL), ids_of_type([300, 3], 300)
    ([1, 3], [0])
    """
    if codes is None:
        codes = type_codes(types)
    if codes is None or not 0 <= kind < 256:  # (a type beyond a byte: one at a time)
        return [i for i, t in enumerate(types) if t == kind]
    # (by runs, each found by a byte search and ended by a search for another byte: a
    # file's CONTROL pieces mostly stand together, Mistral's 750 in a few runs; a regex for
    # the run itself tries every byte of the file, which costs more)
    key = bytes([kind])
    other = re.compile(b"[^" + re.escape(key) + b"]")
    out: list[int] = []
    start = codes.find(key)
    while start >= 0:
        found = other.search(codes, start)
        end = len(codes) if found is None else found.start()
        out += range(start, end)
        start = codes.find(key, end)
    return out


def first_of_type(types: Sequence[int], kind: int, codes: bytes | None = None) -> int:
    """The first ID whose type is ``kind`` (``types.index``), -1 if none; a byte search
    where ``codes`` (``type_codes(types)``) is given.

    >>> first_of_type([1, 2, 2], 2), first_of_type([1, 2, 2], 2, bytes([1, 2, 2]))
    (1, 1)
    >>> first_of_type([1], 2)
    -1
    """
    if codes is not None and 0 <= kind < 256:
        return codes.find(kind)
    return types.index(kind) if kind in types else -1


def piece_tables(texts: list[str], scores: list[float], types: list[int]) -> PieceTables:
    """The tables :class:`SentencePieceBPE` encodes with, from its piece columns:

    - ``vocab``: ``text -> ID`` as SentencePiece's PieceToId answers (a reserved piece
      first, then the first ID, should a text be spelled twice; a checked file never does);
    - ``normal``: ``text -> ID`` for the pieces that may be merged into (``pieces_`` of
      model_interface.cc: NORMAL, USER_DEFINED, UNUSED; not CONTROL, UNKNOWN, BYTE);
    - ``ranks``: each of those pieces' rank for :func:`core.engine.bpe.merge`, which joins the
      lowest rank first: the place of its score among their distinct scores, best first
      (equal scores, equal ranks; -inf last). Small ints compare fast with merge's
      NO_MERGE, where floats do not. None when some score is NaN (it has no place).

    One C pass when ``tokplay_native.spm`` is built and every text is spelled once.

    >>> vocab, normal, ranks = piece_tables(["<unk>", "a", "b", "ab"], [0.0, -1.0, -1.0, -3.0],
    ...                                     [UNKNOWN, 1, 1, 1])
    >>> vocab, dict(normal), ranks
    ({'<unk>': 0, 'a': 1, 'b': 2, 'ab': 3}, {'a': 1, 'b': 2, 'ab': 3}, {'a': 0, 'b': 0, 'ab': 1})
    """
    if type(texts) is type(scores) is type(types) is list:
        built = piece_tables_in_c(texts, scores, types)
        if built is not None:
            vocab, ranks = built
            return vocab, _NormalIds(ranks, vocab), ranks
    return _pure_tables(texts, scores, types)


def _pure_tables(
    texts: Sequence[str], scores: Sequence[float], types: Sequence[int]
) -> PieceTables:
    """:func:`piece_tables` by whole-list operations (its twin where C is not built)."""
    vocab = dict(zip(texts, range(len(texts))))
    if len(vocab) == len(texts):  # every text spelled once: the IDs are vocab's
        is_normal = list(map(operator.not_, map(RESERVED.__contains__, types)))
        chosen = list(map(scores.__getitem__, compress(range(len(texts)), is_normal)))
        ranks = _ranks(list(compress(texts, is_normal)), chosen)
        if ranks is not None:
            return vocab, _NormalIds(ranks, vocab), ranks
    reserved, normal = split_ids(list(texts), list(map(RESERVED.__contains__, types)))
    chosen = list(map(scores.__getitem__, normal.values()))
    return {**normal, **reserved}, normal, _ranks(list(normal), chosen)


def _ranks(pieces: list[str], scores: list[float]) -> dict[str, int] | None:
    """``piece -> rank``: the place of its score among ``scores``' distinct values, best
    first; None when a score is NaN."""
    if any(map(math.isnan, scores)):
        return None
    best_first = sorted(set(scores), reverse=True)
    place = dict(zip(best_first, range(len(best_first))))
    return dict(zip(pieces, map(place.__getitem__, scores)))


class _NormalIds(Mapping[str, int]):
    """``text -> ID`` for the pieces that may be merged into, when every piece is spelled
    once: the keys of their ranks, the IDs of the vocab (no third table of 32,000 keys)."""

    __slots__ = ("_ranks", "_vocab")

    def __init__(self, ranks: dict[str, int], vocab: dict[str, int]) -> None:
        self._ranks, self._vocab = ranks, vocab

    def __getitem__(self, piece: str) -> int:
        if piece not in self._ranks:
            raise KeyError(piece)
        return self._vocab[piece]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ranks)

    def __len__(self) -> int:
        return len(self._ranks)


#: :func:`may_be_formed`'s bounds: a longer piece, or more substrings looked at, and it
#: answers "maybe" (the careful path then runs; a real file's UNUSED pieces are short).
FORMED_LONGEST = 64
FORMED_BUDGET = 200_000


class _Unsure(Exception):
    pass


def may_be_formed(pieces: Sequence[str], is_piece: Callable[[str], bool]) -> list[str]:
    """The ``pieces`` that BPE may form by merges: a text is formed when it is one character,
    or a piece that may be merged into (``is_piece``) and splits somewhere into two formed
    texts. Scores and the order of merges are ignored, so this over-estimates: a piece it
    leaves out is never formed, whatever the text. (Why: SentencePiece splits an UNUSED piece
    back into the pair that formed it, read from the whole text; Phi-3's 53 ``[PAD…]`` UNUSED
    pieces can never be formed, so its words stay independent and cached.)

    >>> ok = {"a", "b", "ab", "abc", "[PAD1]"}.__contains__
    >>> may_be_formed(["ab", "abc", "[PAD1]", "x"], ok)
    ['ab', 'abc', 'x']
    """
    memo: dict[str, bool] = {}

    def formed(text: str) -> bool:
        if len(text) == 1:
            return True
        found = memo.get(text)
        if found is None:
            if len(memo) >= FORMED_BUDGET:
                raise _Unsure
            found = is_piece(text) and any(
                formed(text[:i]) and formed(text[i:]) for i in range(1, len(text))
            )
            memo[text] = found
        return found

    out = []
    for piece in pieces:
        try:
            if len(piece) > FORMED_LONGEST or formed(piece):
                out.append(piece)
        except _Unsure:
            return list(pieces)
    return out


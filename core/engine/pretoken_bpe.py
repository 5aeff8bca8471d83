"""BPE on one pre-token, for :class:`core.engine.tokenizer.Tokenizer`: three ways to the same IDs.

A pre-token the cache has not seen is joined by one of:

- the C twin (``tokplay_native.bpe``, when it was built): the merge loop over the bytes, with
  the tables copied into C hash tables once (:attr:`PretokenBPE._native_table`);
- from whole characters where :mod:`core.engine.char_start` proves it exact (on non-Latin text
  most joins are inside characters), through :func:`core.engine.bpe.merge`;
- from the bytes (:meth:`PretokenBPE.bpe`, the definition the other two are tested against:
  tests/test_native_bpe.py, tests/test_bpe_fast_paths.py).

Pre-tokens over 256 bytes take the pure path, whose merge loop keeps a heap.
"""

from __future__ import annotations

import operator
from functools import cached_property
from typing import Any

from core.engine.basics import utf8
from core.engine.bpe import LONG_WORD, bpe_table, kept_table, merge
from core.engine.char_start import CharStart
from core.engine.ranks import bpe_by_rank

__all__ = ["PretokenBPE"]


class PretokenBPE:
    """The pre-token BPE methods of :class:`core.engine.tokenizer.Tokenizer`, which sets the tables
    they read (the bytes -> ID encoder; the merge list's pair ranks and merged IDs)."""

    by_rank: bool
    ignore_merges: bool
    _encoder: dict[bytes, int]
    _byte_ids: tuple[int, ...]
    _pair_ranks: dict[tuple[int, int], int]
    _merged: tuple[int, ...]
    _merge_pairs: tuple[tuple[int, int], ...]
    _strict_table: Any

    def _bpe_str(self, pretoken: str) -> tuple[int, ...]:
        # a cache miss: BPE from whole characters where core.engine.char_start proves it exact (on
        # non-Latin text most joins are inside characters), through core.engine.bpe.merge directly
        try:
            data = pretoken.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: utf8()'s bytes, and the str they spell
            data = utf8(pretoken)
            pretoken = data.decode("utf-8")
        if self.ignore_merges:
            whole = self._encoder.get(data)
            if whole is not None:
                return (whole,)
        table = self._fast_table() if len(data) <= LONG_WORD else None
        if table is not None:  # the same loop in C, from the bytes
            return table.encode(data)
        parts = self._char_start.parts(pretoken, data)
        if self.by_rank:
            encoder = self._encoder
            return tuple(map(encoder.__getitem__, merge(parts, encoder, key=operator.add)))
        return tuple(merge(parts, self._pair_ranks, self._merged))

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (to a worker process) without the tables built on first use, which
        hold closures: the receiving copy builds its own when it needs them."""
        state = self.__dict__.copy()
        state.pop("_char_start", None)
        state.pop("_native_table", None)
        state.pop("_table_spec", None)
        return state

    @cached_property
    def _table_spec(self) -> tuple[Any, ...]:
        """How the C twin's tables are built: :func:`core.engine.bpe.bpe_table`'s arguments
        (read here once, so that building calls no method of this class back)."""
        return (self._encoder, self._pair_ranks, self._merged, self._byte_ids, self.by_rank, self.ignore_merges)

    @cached_property
    def _native_table(self) -> Any:
        """The C twin's copy of the BPE tables (tokplay_native.bpe), the same answers as
        :meth:`_bpe_str`; built on the first pre-token it encodes (~10 ms for 200k tokens)."""
        return bpe_table(*self._table_spec)

    def _fast_table(self) -> Any:
        """:attr:`_native_table` while the C twin is on, else None (the pure path)."""
        return kept_table(self, "_native_table", bpe_table, *self._table_spec)

    @cached_property
    def _char_start(self) -> CharStart:
        """Where BPE may start from whole characters (built on the first pre-token)."""
        if self.by_rank:
            return CharStart(self._encoder, rank_mode=True)
        return CharStart(self._pair_ranks, rank_mode=False, merged=self._merged,
                         byte_ids=self._byte_ids, token_bytes=self._strict_table,
                         merge_pairs=self._merge_pairs)  # fmt: skip

    def bpe(self, data: bytes) -> list[int]:
        """Token IDs of one pre-token's bytes: repeatedly merge the adjacent pair with the
        lowest merge rank (the leftmost one on ties) until no pair has a merge
        (:func:`core.engine.bpe.merge` over the merge list; :func:`core.engine.ranks.bpe_by_rank` in rank
        mode).

        >>> from core.engine.tokenizer import Tokenizer
        >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab"}
        >>> Tokenizer(vocab, [(b"b", b"c"), (b"a", b"b")]).bpe(b"abcab")
        [97, 256, 257]
        """
        if self.by_rank:
            return bpe_by_rank(data, self._encoder)
        return merge(list(map(self._byte_ids.__getitem__, data)), self._pair_ranks, self._merged)

"""A SentencePiece BPE model's ``text -> ID`` as a read-only mapping whose dict is made on
first use: :attr:`SentencePieceBPE.vocab <core.pipeline.sentencepiece.bpe.SentencePieceBPE>`.
Where the C twin encodes, a model loads without that dict of 32,000 keys; look-ups and the
length read its C table until some page iterates the vocabulary.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Protocol

__all__ = ["VocabView"]


class _Model(Protocol):
    """What a VocabView reads of its SentencePieceBPE."""

    _size: int

    @property
    def _columns_only(self) -> bool: ...

    @property
    def _vocab(self) -> dict[str, int]: ...

    def _find(self, piece: str) -> int | None: ...


class VocabView(Mapping[str, int]):
    """A model's ``text -> ID``, read-only, its dict made on first use (a model loads
    without it where the C twin encodes). It hashes as its items (core.engine.fingerprint).

    >>> from core.pipeline.sentencepiece.bpe import SentencePieceBPE
    >>> from core.pipeline.sentencepiece.proto import UNKNOWN, ProtoPiece
    >>> m = SentencePieceBPE([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1)])
    >>> m.vocab["a"], m.vocab.get("b"), len(m.vocab), dict(m.vocab)
    (1, None, 2, {'<unk>': 0, 'a': 1})
    """

    __slots__ = ("_model",)

    def __init__(self, model: _Model) -> None:
        self._model = model

    def __getitem__(self, piece: str) -> int:
        found = self._model._find(piece)
        if found is None:
            raise KeyError(piece)
        return found

    def get(self, piece: str, default: Any = None) -> Any:  # (no dict made, as __getitem__)
        found = self._model._find(piece)
        return default if found is None else found

    def __contains__(self, piece: object) -> bool:
        return type(piece) is str and self._model._find(piece) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._model._vocab)

    def __len__(self) -> int:
        model = self._model
        return model._size if model._columns_only else len(model._vocab)

    def values(self) -> ValuesView[int]:
        return _IdsView(self)

    def items(self) -> ItemsView[str, int]:
        # (the dict's own view: Mapping's would look each key up again, through the model)
        return self._model._vocab.items()

    def keys(self) -> KeysView[str]:
        return self._model._vocab.keys()


class _IdsView(ValuesView[int]):
    """:meth:`VocabView.values`: every ID once, in order, when no text is spelled twice."""

    _mapping: VocabView

    def __iter__(self) -> Iterator[int]:
        model = self._mapping._model
        if model._columns_only:
            return iter(range(model._size))
        return iter(model._vocab.values())

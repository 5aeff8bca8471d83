"""SentencePiece ``.model`` files (BPE and Unigram) in pure Python, ID for ID like ``sentencepiece``.

:func:`sentencepiece_tokenizer` reads the protobuf (no ``protobuf`` needed) into the stages of
a :class:`~core.pipeline.tokenizer.PipelineTokenizer`, one module per idea, as
``sentencepiece``'s own sources are cut:

- :mod:`~core.pipeline.sentencepiece.proto`: the ``.model`` file's wire format read into a
  ``ModelProto`` (``sentencepiece_model.proto``);
- :mod:`~core.pipeline.sentencepiece.tables`: what the pieces' columns become: ``text ->
  ID``, the BPE merge ranks, the IDs of a type (in one C pass where ``tokplay_native.spm``
  was built, :mod:`core.native`);
- :mod:`~core.pipeline.sentencepiece.normalizer`: :class:`SentencePieceNormalizer`: the
  file's char map (if any), ``add_dummy_prefix``, ``remove_extra_whitespaces``, spaces
  escaped to ``▁`` (``normalizer.cc``);
- :mod:`~core.pipeline.sentencepiece.bpe`: :class:`SentencePieceBPE`: SentencePiece's BPE
  over the normalized text (``bpe_model.cc``): user-defined pieces cut out first, then the
  adjacent pair whose concatenation is the best-scored piece is merged (leftmost on ties)
  until none is a piece; characters left unknown become ``<0xNN>`` byte pieces
  (``byte_fallback``) or one ``<unk>`` per run;
- :mod:`~core.pipeline.sentencepiece.decoder`: :class:`SentencePieceDecoder`: ``▁`` →
  space, the dummy prefix's space dropped, byte pieces reassembled into UTF-8 (each invalid
  byte → U+FFFD), control pieces → ``""``, ``<unk>`` → ``" ⁇ "``
  (``SentencePieceProcessor::Decode``);
- :mod:`~core.pipeline.sentencepiece.load`: the file checked as ``model_interface.cc`` checks
  it, and the stages put together (:func:`load_sentencepiece_model`,
  :func:`sentencepiece_tokenizer`).

Control pieces (``<s>``, ``[INST]``) are special tokens: SentencePiece never matches them
in the input text (typing ``[INST]`` gives the pieces of ``[``, ``INST``, ``]``), and
neither do we; ``add_special_tokens=True`` puts ``<s>`` in front (``encode(add_bos=True)``).

Unigram models (T5, ALBERT, XLM-R) get :class:`~core.pipeline.models.unigram.UnigramModel` between
the same normalizer and decoder; WORD and CHAR models are refused with a :class:`FormatError`
naming the model type.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.pipeline.sentencepiece.bpe import SentencePieceBPE, UserPiece as UserPiece
    from core.pipeline.sentencepiece.decoder import SentencePieceDecoder
    from core.pipeline.sentencepiece.load import (
        SentencePieceModel,
        SentencePieceWords,
        load_sentencepiece_model,
        looks_like_sentencepiece,
        model_from_proto,
        sentencepiece_tokenizer,
        tokenizer_from_proto,
    )
    from core.pipeline.sentencepiece.normalizer import SentencePieceNormalizer
    from core.pipeline.sentencepiece.proto import SPACE

__all__ = [
    "SPACE",
    "SentencePieceBPE",
    "SentencePieceDecoder",
    "SentencePieceModel",
    "SentencePieceNormalizer",
    "SentencePieceWords",
    "load_sentencepiece_model",
    "looks_like_sentencepiece",
    "model_from_proto",
    "sentencepiece_tokenizer",
    "tokenizer_from_proto",
]

#: name -> the submodule that defines it (``UserPiece``: the tests build BPE parts with it)
_HOME = {
    "SPACE": "proto",
    "SentencePieceBPE": "bpe",
    "UserPiece": "bpe",
    "SentencePieceDecoder": "decoder",
    "SentencePieceModel": "load",
    "SentencePieceNormalizer": "normalizer",
    "SentencePieceWords": "load",
    "load_sentencepiece_model": "load",
    "looks_like_sentencepiece": "load",
    "sentencepiece_tokenizer": "load",
    "model_from_proto": "load",
    "tokenizer_from_proto": "load",
}


def __getattr__(name: str) -> Any:
    """The names above, imported on first use (PEP 562). Why not at import: importing one
    submodule imports this package first, and an eager import of ``load`` here would pull
    in ``core.pipeline.tokenizer``, which may be the very module being imported (the
    Hugging Face stages reuse :class:`~core.pipeline.sentencepiece.normalizer.CharsMap`).

    >>> from core.pipeline.sentencepiece import SPACE
    >>> SPACE
    '▁'
    """
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # next time, found without this function
    return value

"""Models: the stage that turns one pre-token (a "word") into tokens.

Three Hugging Face models, each a twin of the Rust code in ``tokenizers/src/models``, each
in its own module (:mod:`.bpe`, :mod:`.wordpiece`, :mod:`.wordlevel`; what they share is
in :mod:`.base`, reading a ``tokenizer.json`` "model" section in :mod:`.from_json`):

- :class:`BPEModel`: BPE over *strings* (not bytes). A word starts as its characters
  (``continuing_subword_prefix`` on all but the first, ``end_of_word_suffix`` on the last);
  a character missing from the vocab becomes ``<0xNN>`` byte tokens (``byte_fallback``, only
  if every byte has one) or the unknown token (``fuse_unk`` joins a run of them); then
  merges apply lowest rank first, leftmost first on ties.
- :class:`WordPieceModel`: greedy longest-match-first (BERT); a word with any piece
  missing, or longer than ``max_input_chars_per_word``, is the unknown token as a whole.
- :class:`WordLevelModel`: the whole word is a token, or it is the unknown token.

Each satisfies :class:`Model` (:mod:`.base`): ``tokenize(word) -> [(id, start, end), ...]``
with character offsets into the word, ``encode_word(word) -> [id, ...]`` (the same IDs, for
encoding without spans, from a bounded per-model cache that ``clear_cache()`` empties), a
``vocab`` (token string -> ID), ``id_to_token``, ``kind``, ``byte_fallback``; its
``capabilities`` declare what only some offer (:class:`MergeModel`: BPE's ``merges`` and
``trace``; :class:`ScoredModel`: Unigram's ``score`` and ``split_paths``).

>>> bpe = BPEModel({"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}, [("a", "b"), ("ab", "c")])
>>> bpe.tokenize("abcab")
[(4, 0, 3), (3, 3, 5)]
>>> wp = WordPieceModel({"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3})
>>> wp.tokenize("unaffable"), wp.tokenize("unknown")
([(1, 0, 2), (2, 2, 5), (3, 5, 9)], [(0, 0, 7)])
"""

from core.pipeline.models.base import (
    BPEStep as BPEStep,
    MergeModel as MergeModel,
    Model as Model,
    ModelCapabilities as ModelCapabilities,
    ScoredModel as ScoredModel,
    Token as Token,
    is_merge_model as is_merge_model,
    is_scored_model as is_scored_model,
)
from core.pipeline.models.bpe import BPEModel as BPEModel
from core.pipeline.models.from_json import model_from_json as model_from_json
from core.pipeline.models.wordlevel import WordLevelModel as WordLevelModel
from core.pipeline.models.wordpiece import WordPieceModel as WordPieceModel

__all__ = [
    "BPEModel",
    "BPEStep",
    "MergeModel",
    "Model",
    "ModelCapabilities",
    "ScoredModel",
    "Token",
    "WordLevelModel",
    "WordPieceModel",
    "is_merge_model",
    "is_scored_model",
    "model_from_json",
]

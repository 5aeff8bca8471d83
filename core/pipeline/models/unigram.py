"""Unigram models: the best segmentation by piece scores (a Viterbi search over a lattice).

A Unigram model gives every piece a score (a log-probability). To tokenize a text it looks
at every way of cutting it into pieces and keeps the one whose scores add up highest. A
character that no one-character piece covers may still be cut as the unknown piece, at
``unk_score`` = the lowest score minus 10, so that any text has a segmentation.

:class:`UnigramModel` does this in one left-to-right pass (``EncodeOptimized`` of
sentencepiece's ``unigram_model.cc``, which Hugging Face's ``Unigram::encode_optimized``
copies): for each end position it keeps the best path ending there; a candidate replaces it
only when *strictly* better, so on a tie the piece that starts further left (the longer
one) stays. Two flavours, one loop:

- ``"sentencepiece"`` (``.model`` files, as sentencepiece 0.2.3 reads them): the lattice
  holds NORMAL and USER_DEFINED pieces (UNUSED ones never win, reserved ones are never
  matched); a user-defined piece scores ``0.1 x (bytes - 1)``, above any log-probability;
  path scores are float32 sums, as in the C++ code, taken back to 0 once they pass 1e5:
  two splits that tie in real arithmetic (``F`` + ``FF``, ``FF`` + ``F``) come out a
  rounding step apart, and which one wins depends on every score before them, so the whole
  text is one lattice (never cut into words); after the search a run of ``<unk>`` is one
  ``<unk>``, or each unknown character becomes its ``<0xNN>`` byte pieces
  (``byte_fallback``).
- ``"huggingface"`` (``tokenizer.json``): every vocab entry is in the lattice, scores are
  float64, the lowest score of all entries sets ``unk_score``, a run of unknown pieces is
  fused and looked up whole (then bytes, then ``unk_id``).

>>> m = UnigramModel([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)], unk_id=0)
>>> m.tokenize("abba?")
[(3, 0, 2), (2, 2, 3), (1, 3, 4), (0, 4, 5)]
>>> p = m.split_paths("ab")
>>> [x.piece for x in p.best.nodes], p.best.score, [x.piece for x in p.runner_up.nodes]
(['ab'], -2.5, ['a', 'b'])
"""

from __future__ import annotations

import functools
import operator
from array import array
from collections.abc import Sequence
from itertools import chain, compress, repeat
from typing import TYPE_CHECKING, Any, Literal

from core.errors import PlaygroundError
from core.pipeline.models.base import ModelCapabilities
from core.pipeline.models.unigram_lattice import (
    NativeSlot,
    two_best,
    with_prefixes as _with_prefixes,
)
from core.pipeline.models.unigram_paths import LatticeNode, SplitPaths, UnigramPath
from core.pipeline.sentencepiece.proto import (
    NORMAL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    ModelProto,
    ProtoPiece,
    piece_columns,
    split_ids,
)

if TYPE_CHECKING:
    from core.pipeline.models.unigram_words import UnigramWords

__all__ = [
    "UNK_PENALTY",
    "LatticeNode",
    "SplitPaths",
    "UnigramModel",
    "UnigramPath",
    "sentencepiece_unigram",
]

#: How far below the lowest piece score an unknown character scores (kUnkPenalty).
UNK_PENALTY = 10.0
_FLT_MAX = 3.4028234663852886e38
#: sentencepiece 0.2.3 takes this off the path scores once they pass it (kScoreResetThreshold)
_SCORE_RESET = 100000.0
_NO_START = -1
#: Hugging Face caches words shorter than this many bytes (MAX_LENGTH); so do we
_CACHE_WORD = 256
_CACHE_MAX = 1 << 16

Flavour = Literal["sentencepiece", "huggingface"]
Token = tuple[int, int, int]


def _byte_piece(b: int) -> str:
    return f"<0x{b:02X}>"


_BYTE_PIECE_TEXTS = tuple(map(_byte_piece, range(256)))  # (made once: every model reads all)


def _float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (as a C++ ``float`` stores it)."""
    return array("f", [value])[0]


class UnigramModel:
    """A Unigram model (see the module docstring) as a pipeline model.

    ``pieces``: ``(piece, score)`` by ID. ``types``: each piece's SentencePiece type
    (``"sentencepiece"`` flavour only; default all NORMAL). ``tokenize(text)`` gives
    ``(id, start, end)`` per token, offsets in characters of ``text``.
    """

    capabilities = ModelCapabilities(scores=True)  # a ScoredModel: score, split_paths

    def __init__(
        self,
        pieces: Sequence[tuple[str, float]],
        *,
        unk_id: int | None,
        byte_fallback: bool = False,
        flavour: Flavour = "huggingface",
        types: Sequence[int] | None = None,
    ) -> None:
        tokens = list(map(str, map(operator.itemgetter(0), pieces)))
        scores = list(map(float, map(operator.itemgetter(1), pieces)))
        self._build(tokens, scores, unk_id=unk_id, byte_fallback=byte_fallback,
                    flavour=flavour, types=types)  # fmt: skip

    @classmethod
    def from_columns(
        cls,
        tokens: list[str],
        scores: list[float],
        *,
        unk_id: int | None,
        byte_fallback: bool = False,
        flavour: Flavour = "huggingface",
        types: Sequence[int] | None = None,
    ) -> UnigramModel:
        """``UnigramModel(list(zip(tokens, scores)), ...)`` without the pairs: the two lists
        (of ``str`` and ``float``) are kept as they are, not copied.

        >>> UnigramModel.from_columns(["<unk>", "a"], [0.0, -1.0], unk_id=0).tokenize("aa")
        [(1, 0, 1), (1, 1, 2)]
        """
        model = cls.__new__(cls)
        model._build(tokens, scores, unk_id=unk_id, byte_fallback=byte_fallback,
                     flavour=flavour, types=types)  # fmt: skip
        return model

    def _build(
        self,
        tokens: list[str],
        scores: list[float],
        *,
        unk_id: int | None,
        byte_fallback: bool,
        flavour: Flavour,
        types: Sequence[int] | None,
    ) -> None:
        if flavour not in ("sentencepiece", "huggingface"):
            raise PlaygroundError(f"unknown Unigram flavour {flavour!r}")
        # (every table below is built by whole-list operations, C loops: a 250,000-piece
        # model loads in a fraction of a second)
        if len(scores) != len(tokens):
            raise PlaygroundError("scores must give one score per piece")
        self._tokens = tokens
        self._raw_scores = scores  # (``pieces`` pairs them with the tokens when asked)
        self.types = list(types) if types is not None else [NORMAL] * len(tokens)
        if len(self.types) != len(tokens):
            raise PlaygroundError("types must give one type per piece")
        if unk_id is not None and not 0 <= unk_id < len(tokens):
            raise PlaygroundError(
                f"unk_id {unk_id} is not the ID of a piece (0 to {len(tokens) - 1})"
            )
        self.unk_id = unk_id
        self.byte_fallback = byte_fallback
        self.flavour = flavour
        if flavour == "sentencepiece":
            self._init_sentencepiece(scores)
        else:
            self._init_huggingface(scores)
        self._byte_ids = list(map(self.vocab.get, _BYTE_PIECE_TEXTS, repeat(-1, 256)))
        self._cache: dict[str, tuple[Token, ...]] = {}
        self._ids: dict[str, tuple[int, ...]] = {}  # (encode_words: a word's IDs)
        self._native = NativeSlot()  # the C search, built on the first encode (if built)

    @functools.cached_property
    def pieces(self) -> list[tuple[str, float]]:
        """``(piece, score)`` by ID, as given (made when asked: a load never needs it)."""
        return list(zip(self._tokens, self._raw_scores))

    def columns(self) -> tuple[list[str], list[float]]:
        """The pieces by ID and their scores as given (read-only: the model's own lists).

        >>> UnigramModel([("<unk>", 0.0), ("a", -1.5)], unk_id=0).columns()
        (['<unk>', 'a'], [0.0, -1.5])
        """
        return self._tokens, self._raw_scores

    def _fingerprint_attributes(self) -> dict[str, object]:
        """What core.engine.fingerprint hashes: the public attributes, ``pieces`` included
        whether or not it was made yet."""
        return {"pieces": self.pieces, **{k: v for k, v in vars(self).items() if k != "pieces"}}

    @functools.cached_property
    def _maxlen(self) -> int:
        """The longest candidate, in characters (the search looks no further)."""
        return max(map(len, self._candidates), default=0)

    @functools.cached_property
    def _lookup(self) -> dict[str, int]:
        """The search's trie: each candidate piece -> its ID (-1 for an UNUSED one), every
        proper prefix of one -> -1 (see :func:`_with_prefixes`). Built on the first search:
        at 250,000 pieces it is a million strings, which a page that shows the vocabulary
        never needs."""
        return _with_prefixes(self._candidates, self._maxlen)

    def _init_sentencepiece(self, raw_scores: list[float]) -> None:
        """``ModelInterface::InitializePieces`` and ``unigram::Model::Model``: NORMAL,
        USER_DEFINED and UNUSED pieces are the trie (PieceToId finds reserved ones first)."""
        types, tokens = self.types, self._tokens
        normal, reserved = split_ids(tokens, list(map(_LATTICE_TYPES.__contains__, types)))
        # (a fold from FLT_MAX, as the C++ loop: min() keeps what it has on a NaN)
        min_score = min(chain((_FLT_MAX,), compress(raw_scores, map(NORMAL.__eq__, types))))
        #: token -> ID as SentencePiece's PieceToId answers
        self.vocab: dict[str, int] = {**normal, **reserved}
        self.min_score = min_score
        self.unk_score = _float32(min_score - UNK_PENALTY)
        # a user-defined piece scores 0.1 per UTF-8 byte past its first (a float32; 0.2.3's
        # GetUserDefinedScore): above every log-probability, and longer ones first
        scores = list(raw_scores)
        for i in compress(range(len(types)), map(USER_DEFINED.__eq__, types)):
            scores[i] = _float32(0.1 * (len(tokens[i].encode("utf-8")) - 1))
        self._scores = scores
        self._candidates = normal
        if UNUSED in types:  # an UNUSED piece is in the trie but never a node
            self._candidates = dict(normal)
            for i in compress(range(len(types)), map(UNUSED.__eq__, types)):
                if normal.get(tokens[i]) == i:
                    self._candidates[tokens[i]] = -1
        self._typecode: Literal["f", "d"] = "f"
        self._reset = _SCORE_RESET

    def _init_huggingface(self, raw_scores: list[float]) -> None:
        """``Unigram::from``: every entry is in the trie; a repeated string keeps its last
        ID (a HashMap insert); ``min_score`` is the lowest of all scores."""
        self.vocab = dict(zip(self._tokens, range(len(self._tokens))))
        self.min_score = min(raw_scores, default=float("inf"))
        self.unk_score = self.min_score - UNK_PENALTY
        self._scores = raw_scores  # (shared, never changed: no copy)
        self._candidates = self.vocab
        self._typecode = "d"
        self._reset = float("inf")

    # -- the Model protocol --

    @property
    def kind(self) -> str:
        return "SentencePiece Unigram" if self.flavour == "sentencepiece" else "Unigram"

    def id_to_token(self, token_id: int) -> str | None:
        return self._tokens[token_id] if 0 <= token_id < len(self._tokens) else None

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def get_vocab_size(self) -> int:
        return len(self._tokens)

    def piece_to_id(self, piece: str) -> int:
        """SentencePiece's PieceToId: the piece's ID, else ``unk_id`` (-1 without one)."""
        found = self.vocab.get(piece)
        if found is not None:
            return found
        return self.unk_id if self.unk_id is not None else -1

    def score(self, token_id: int) -> float | None:
        """The score the file gives piece ``token_id`` (``None`` outside the vocabulary)."""
        scores = self._raw_scores
        return scores[token_id] if 0 <= token_id < len(scores) else None

    def clear_cache(self) -> None:
        """Forget cached words (e.g. to time a cold encode)."""
        self._cache.clear()
        self._ids.clear()
        if "_words" in self.__dict__:
            self._words.clear()

    def encode_words(self, words: list[str], out: list[int]) -> None:
        """``out += self.encode_word(w)`` per non-empty word; Hugging Face's cached whole.

        >>> m = UnigramModel([("<unk>", 0.0), ("a", -1.0), ("ab", -1.5)], unk_id=0)
        >>> out = [7]; m.encode_words(["ab", "", "ba"], out); out
        [7, 2, 0, 1]
        """
        if self.flavour == "sentencepiece":
            out.extend(chain.from_iterable(map(self.encode_word, filter(None, words))))
            return
        cache = self._ids
        for word in words:
            found = cache.get(word)
            if found is None:
                if not word:
                    continue
                found = tuple([t[0] for t in self.tokenize(word)])
                if len(word) <= _CACHE_WORD // 4:  # (at most _CACHE_WORD bytes: bounded)
                    if len(cache) >= _CACHE_MAX:
                        cache.clear()
                    cache[word] = found
            out += found

    def encode_word(self, text: str) -> list[int]:
        """``[t[0] for t in self.tokenize(text)]``, faster: no offsets; a SentencePiece
        text is cut where no piece crosses and its words' IDs cached where float32 rounding
        cannot change them (:mod:`core.pipeline.models.unigram_words`)."""
        if self.flavour != "sentencepiece":
            return [t[0] for t in self.tokenize(text)]
        lattice = self._lattice()
        if lattice is None or not text:
            return self._words.encode(text) if text else []
        # (in C the whole text is one lattice, as in sentencepiece: no words, no cache)
        unk = -1 if self.unk_id is None else self.unk_id
        ids: list[int] = lattice.encode(text, self.byte_fallback, unk)
        if unk < 0 and -1 in ids:
            self._unk()  # (raises: an unknown character and no <unk> piece)
        return ids

    def _lattice(self) -> Any:
        """The compiled search (``tokplay_native.unigram.Lattice``), or None: pure."""
        return self._native.get(self._new_lattice)

    def _new_lattice(self, module: Any) -> Any:
        return module.Lattice(self._candidates, self._scores, self.unk_score,
                              self._typecode == "f", self._reset, self._byte_ids)  # fmt: skip

    @functools.cached_property
    def _words(self) -> UnigramWords:
        """The word-by-word encoder (built on the first :meth:`encode_word`)."""
        from core.pipeline.models.unigram_words import UnigramWords  # (it imports this module)

        return UnigramWords(
            search=self.best_path, lookup=self._lookup, candidates=self._candidates,
            scores=self._scores, unk_score=self.unk_score, maxlen=self._maxlen,
            byte_ids=self._byte_ids, byte_fallback=self.byte_fallback, unknown=self._unk,
            reset=self._reset,
        )  # fmt: skip

    def tokenize(self, text: str) -> list[Token]:
        if not text:
            return []
        if self.flavour == "sentencepiece":
            # one lattice over the whole text: float32 path scores make words dependent
            return self._finish_sentencepiece(text, self._best_path(text))
        found = self._cache.get(text)
        if found is None:
            found = tuple(self._huggingface_tokens(text))
            if len(text.encode("utf-8")) < _CACHE_WORD:
                if len(self._cache) >= _CACHE_MAX:
                    self._cache.clear()
                self._cache[text] = found
        return list(found)

    def _huggingface_tokens(self, text: str) -> list[Token]:
        lattice = self._lattice()
        if lattice is None:
            return self._finish_huggingface(text, self._best_path(text))
        unk = -1 if self.unk_id is None else self.unk_id
        tokens: list[Token] | None = lattice.tokenize_hf(text, unk, self.byte_fallback)
        if tokens is None:
            self._unk()  # (raises: an unknown stretch and no unknown piece)
        return tokens or []

    # -- the search --

    def _best_path(self, text: str) -> list[tuple[int, int, int]]:
        return self.best_path(text)[0]

    def best_path(
        self, text: str, start: float = 0.0
    ) -> tuple[list[tuple[int, int, int]], float]:
        """``EncodeOptimized``: the best path as ``(start, end, id)`` nodes, ``id`` -1 for
        an unknown character, and its score. Scores live in an ``array`` of the flavour's
        float type, so each sum is rounded as the C++ (or Rust) code rounds it before it is
        compared. ``start``: the score the path starts from (a text's part after one where
        no piece crosses: :mod:`core.pipeline.models.unigram_words`).

        >>> UnigramModel([("<unk>", 0.0), ("a", -1.0)], unk_id=0).best_path("aa", 0.5)
        ([(0, 1, 1), (1, 2, 1)], -1.5)
        """
        lattice = self._lattice()
        if lattice is not None:  # (the same loop in C: tokplay_native/unigram.c)
            found: tuple[list[tuple[int, int, int]], float] = lattice.best_path(text, start)
            return found
        n = len(text)
        typecode = self._typecode
        best = array(typecode, bytes(array(typecode).itemsize * (n + 1)))
        best[0] = start
        starts = [_NO_START] * (n + 1)
        ids = [0] * (n + 1)
        scratch = array(typecode, [0.0])
        get = self._lookup.get
        scores = self._scores
        unk_score = self.unk_score
        maxlen = self._maxlen
        reset = self._reset
        frontier = 0  # the furthest end any node reached (max_frontier)
        for s in range(n):
            here = best[s]
            if not -reset <= here <= reset:
                # sentencepiece 0.2.3 keeps float32 sums small: once the score so far
                # passes 1e5 it is subtracted from every score reached from here on
                for i in range(s, frontier + 1):
                    if i == s or starts[i] != _NO_START:
                        best[i] -= here
                here = 0.0
            single = False
            stop = s + maxlen
            if stop > n:
                stop = n
            k = s + 1
            while k <= stop:
                v = get(text[s:k])
                if v is None:
                    break
                if v >= 0:
                    if k > frontier:
                        frontier = k
                    scratch[0] = scores[v] + here
                    candidate = scratch[0]
                    if starts[k] == _NO_START or candidate > best[k]:
                        best[k] = candidate
                        starts[k] = s
                        ids[k] = v
                    if k == s + 1:
                        single = True
                k += 1
            if not single:
                if s + 1 > frontier:
                    frontier = s + 1
                scratch[0] = unk_score + here
                candidate = scratch[0]
                if starts[s + 1] == _NO_START or candidate > best[s + 1]:
                    best[s + 1] = candidate
                    starts[s + 1] = s
                    ids[s + 1] = -1
        path = []
        end = n
        while end > 0:
            start = starts[end]
            path.append((start, end, ids[end]))
            end = start
        path.reverse()
        return path, best[n]

    def _unk(self) -> int:
        if self.unk_id is None:
            raise PlaygroundError(
                "this Unigram model has no unknown piece (unk_id is null) but the text has "
                "a character none of its pieces covers (Hugging Face fails the same way)"
            )
        return self.unk_id

    def _bytes(self, text: str) -> list[int] | None:
        ids = [self._byte_ids[b] for b in text.encode("utf-8")]
        return None if -1 in ids else ids

    def _finish_sentencepiece(
        self, text: str, path: list[tuple[int, int, int]]
    ) -> list[Token]:
        """``PopulateSentencePieceText``: an unknown character to its byte pieces (each
        drawn under the character), or a run of them merged into one ``<unk>``."""
        out: list[Token] = []
        unk = self._unk() if any(i < 0 for _, _, i in path) else -1
        prev_unknown = False
        for start, end, token_id in path:
            if token_id >= 0:
                out.append((token_id, start, end))
                prev_unknown = False
            elif self.byte_fallback:
                byte_ids = self._bytes(text[start:end]) or []
                out.extend((b, start, end) for b in byte_ids)
            elif prev_unknown:
                out[-1] = (unk, out[-1][1], end)
            else:
                out.append((unk, start, end))
                prev_unknown = True
        return out

    def _finish_huggingface(
        self, text: str, path: list[tuple[int, int, int]]
    ) -> list[Token]:
        """``encode_optimized`` then ``tokenize``: unknown nodes (and pieces whose ID is
        ``unk_id``) next to each other are fused, then the fused string is looked up; if it
        is no token, its bytes (``byte_fallback``, when all are pieces) or ``unk_id``."""
        unk_id = self.unk_id
        fused: list[tuple[int, int, int]] = []
        for start, end, token_id in path:
            is_unk = token_id < 0 or token_id == unk_id
            if is_unk and fused and fused[-1][2] == -1:
                fused[-1] = (fused[-1][0], end, -1)
            else:
                fused.append((start, end, -1 if is_unk else token_id))
        out: list[Token] = []
        for start, end, token_id in fused:
            if token_id >= 0:
                out.append((token_id, start, end))
                continue
            found = self.vocab.get(text[start:end])
            if found is not None:
                out.append((found, start, end))
                continue
            byte_ids = self._bytes(text[start:end]) if self.byte_fallback else None
            if byte_ids is not None:
                out.extend((b, start, end) for b in byte_ids)
            else:
                out.append((self._unk(), start, end))
        return out

    # -- explaining --

    def _node(self, text: str, start: int, end: int, token_id: int) -> LatticeNode:
        if token_id < 0:
            return LatticeNode(start, end, self.unk_id if self.unk_id is not None else -1,
                               text[start:end], self.unk_score, unknown=True)  # fmt: skip
        return LatticeNode(start, end, token_id, self._tokens[token_id],
                           self._scores[token_id])  # fmt: skip

    def _path(self, text: str, nodes: list[tuple[int, int, int]]) -> UnigramPath:
        shown = tuple(self._node(text, s, e, i) for s, e, i in nodes)
        return UnigramPath(shown, sum(x.score for x in shown))

    def split_paths(self, text: str) -> SplitPaths:
        """The path encoding takes through ``text`` (a normalized word) and the best one
        that cuts it any other way, with their scores (summed in float64 for display).

        >>> m = UnigramModel([("<unk>", 0.0), ("a", -1.0)], unk_id=0)
        >>> p = m.split_paths("a?")
        >>> [(x.piece, x.unknown) for x in p.best.nodes], p.best.score, p.runner_up
        ([('a', False), ('?', True)], -12.0, None)
        """
        if not text:
            return SplitPaths(text, UnigramPath((), 0.0), None)
        best_nodes = self._best_path(text)
        found = two_best(text, lookup=self._lookup, scores=self._scores,
                         unk_score=self.unk_score, maxlen=self._maxlen)  # fmt: skip
        other = [p for p in found if p != best_nodes]
        return SplitPaths(
            text,
            self._path(text, best_nodes),
            self._path(text, other[0]) if other else None,
        )


#: the pieces a SentencePiece Unigram lattice holds (others are reserved)
_LATTICE_TYPES = frozenset((NORMAL, USER_DEFINED, UNUSED))


def sentencepiece_unigram(
    pieces: ModelProto | Sequence[ProtoPiece], *, byte_fallback: bool
) -> UnigramModel:
    """The model of a checked SentencePiece ``.model`` of type UNIGRAM (``pieces``: its
    :class:`~core.pipeline.sentencepiece.proto.ModelProto`, or its pieces).

    >>> from core.pipeline.sentencepiece.proto import CONTROL, ProtoPiece
    >>> m = sentencepiece_unigram([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("▁a", -1.0),
    ...                            ProtoPiece("<s>", 0, CONTROL)], byte_fallback=False)
    >>> m.tokenize("▁a▁a"), m.unk_score
    ([(1, 0, 2), (1, 2, 4)], -11.0)
    """
    texts, scores, types = piece_columns(pieces)
    return UnigramModel.from_columns(
        texts,
        scores,
        unk_id=types.index(UNKNOWN) if UNKNOWN in types else None,
        byte_fallback=byte_fallback,
        flavour="sentencepiece",
        types=types,
    )

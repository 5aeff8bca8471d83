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

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from core.errors import FormatError, PlaygroundError
from core.pipeline.sentencepiece.proto import (
    CONTROL,
    NORMAL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    ProtoPiece,
)

__all__ = [
    "UNK_PENALTY",
    "LatticeNode",
    "SplitPaths",
    "UnigramModel",
    "UnigramPath",
    "sentencepiece_unigram",
    "unigram_from_json",
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


def _float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (as a C++ ``float`` stores it)."""
    return array("f", [value])[0]


@dataclass(frozen=True)
class LatticeNode:
    """One piece of a path: ``text[start:end]`` as ``piece`` (ID ``id``), scoring
    ``score``; ``unknown`` for a character no piece covers (scored ``unk_score``)."""

    start: int
    end: int
    id: int
    piece: str
    score: float
    unknown: bool = False


@dataclass(frozen=True)
class UnigramPath:
    """A segmentation of a text and its score (the sum of its pieces' scores)."""

    nodes: tuple[LatticeNode, ...]
    score: float


@dataclass(frozen=True)
class SplitPaths:
    """Why a text is cut as it is: the ``best`` path (the one encoding takes) and the
    ``runner_up``, the best path that cuts it any other way (``None`` when there is none)."""

    text: str
    best: UnigramPath
    runner_up: UnigramPath | None

    def differing(self) -> tuple[int, int]:
        """The characters ``(start, end)`` of :attr:`text` the two paths cut differently
        (from the first cut only one of them makes to the last); ``(0, 0)`` without a
        runner-up.

        >>> m = UnigramModel([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)], unk_id=0)
        >>> m.split_paths("abab").differing()
        (0, 2)
        """
        if self.runner_up is None:
            return (0, 0)
        cuts_best = {x.end for x in self.best.nodes}
        cuts_other = {x.end for x in self.runner_up.nodes}
        differ = sorted(cuts_best ^ cuts_other)
        if not differ:
            return (0, 0)
        shared = sorted(cuts_best & cuts_other | {0})
        start = max(c for c in shared if c < differ[0])
        end = min(c for c in shared if c > differ[-1])
        return (start, end)


class UnigramModel:
    """A Unigram model (see the module docstring) as a pipeline model.

    ``pieces``: ``(piece, score)`` by ID. ``types``: each piece's SentencePiece type
    (``"sentencepiece"`` flavour only; default all NORMAL). ``tokenize(text)`` gives
    ``(id, start, end)`` per token, offsets in characters of ``text``.
    """

    def __init__(
        self,
        pieces: Sequence[tuple[str, float]],
        *,
        unk_id: int | None,
        byte_fallback: bool = False,
        flavour: Flavour = "huggingface",
        types: Sequence[int] | None = None,
    ) -> None:
        if flavour not in ("sentencepiece", "huggingface"):
            raise PlaygroundError(f"unknown Unigram flavour {flavour!r}")
        self.pieces = [(str(p), float(s)) for p, s in pieces]
        self.types = list(types) if types is not None else [NORMAL] * len(self.pieces)
        if len(self.types) != len(self.pieces):
            raise PlaygroundError("types must give one type per piece")
        if unk_id is not None and not 0 <= unk_id < len(self.pieces):
            raise PlaygroundError(
                f"unk_id {unk_id} is not the ID of a piece (0 to {len(self.pieces) - 1})"
            )
        self.unk_id = unk_id
        self.byte_fallback = byte_fallback
        self.flavour = flavour
        self._tokens = [p for p, _ in self.pieces]
        if flavour == "sentencepiece":
            self._init_sentencepiece()
        else:
            self._init_huggingface()
        self._maxlen = max(map(len, self._candidates), default=0)
        # every proper prefix of a candidate, so that the search stops where no piece can
        # go on (the trie's "no such path"); -1: a prefix (or an UNUSED piece), no node
        lookup: dict[str, int] = {}
        for piece in self._candidates:
            for k in range(1, len(piece)):
                lookup.setdefault(piece[:k], -1)
        lookup.update(self._candidates)
        self._lookup = lookup
        self._byte_ids = [self.vocab.get(_byte_piece(b), -1) for b in range(256)]
        self._cache: dict[str, tuple[Token, ...]] = {}

    def _init_sentencepiece(self) -> None:
        """``ModelInterface::InitializePieces`` and ``unigram::Model::Model``: NORMAL,
        USER_DEFINED and UNUSED pieces are the trie (PieceToId finds reserved ones first)."""
        normal: dict[str, int] = {}
        reserved: dict[str, int] = {}
        min_score = _FLT_MAX
        for i, ((piece, score), kind) in enumerate(zip(self.pieces, self.types)):
            is_normal = kind in (NORMAL, USER_DEFINED, UNUSED)
            (normal if is_normal else reserved).setdefault(piece, i)
            if kind == NORMAL:
                min_score = min(min_score, score)
        #: token -> ID as SentencePiece's PieceToId answers
        self.vocab: dict[str, int] = {**normal, **reserved}
        self.min_score = min_score
        self.unk_score = _float32(min_score - UNK_PENALTY)
        # a user-defined piece scores 0.1 per UTF-8 byte past its first (a float32; 0.2.3's
        # GetUserDefinedScore): above every log-probability, and longer ones first
        scores = []
        for (piece, score), kind in zip(self.pieces, self.types):
            if kind == USER_DEFINED:
                score = _float32(0.1 * (len(piece.encode("utf-8")) - 1))
            scores.append(score)
        self._scores = scores
        self._candidates = {
            p: (i if self.types[i] != UNUSED else -1) for p, i in normal.items()
        }
        self._typecode = "f"
        self._reset = _SCORE_RESET

    def _init_huggingface(self) -> None:
        """``Unigram::from``: every entry is in the trie; a repeated string keeps its last
        ID (a HashMap insert); ``min_score`` is the lowest of all scores."""
        self.vocab = {piece: i for i, (piece, _) in enumerate(self.pieces)}
        self.min_score = min((s for _, s in self.pieces), default=float("inf"))
        self.unk_score = self.min_score - UNK_PENALTY
        self._scores = [s for _, s in self.pieces]
        self._candidates = dict(self.vocab)
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
        return self.pieces[token_id][1] if 0 <= token_id < len(self.pieces) else None

    def clear_cache(self) -> None:
        """Forget cached words (e.g. to time a cold encode)."""
        self._cache.clear()

    def tokenize(self, text: str) -> list[Token]:
        if not text:
            return []
        if self.flavour == "sentencepiece":
            # one lattice over the whole text: float32 path scores make words dependent
            return self._finish_sentencepiece(text, self._best_path(text))
        found = self._cache.get(text)
        if found is None:
            found = tuple(self._finish_huggingface(text, self._best_path(text)))
            if len(text.encode("utf-8")) < _CACHE_WORD:
                if len(self._cache) >= _CACHE_MAX:
                    self._cache.clear()
                self._cache[text] = found
        return list(found)

    # -- the search --

    def _best_path(self, text: str) -> list[tuple[int, int, int]]:
        """``EncodeOptimized``: the best path as ``(start, end, id)`` nodes, ``id`` -1 for
        an unknown character. Scores live in an ``array`` of the flavour's float type, so
        each sum is rounded as the C++ (or Rust) code rounds it before it is compared."""
        n = len(text)
        typecode = self._typecode
        best = array(typecode, bytes(array(typecode).itemsize * (n + 1)))
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
        return path

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
        other = [p for p in self._two_best(text) if p != best_nodes]
        return SplitPaths(
            text,
            self._path(text, best_nodes),
            self._path(text, other[0]) if other else None,
        )

    def _two_best(self, text: str) -> list[list[tuple[int, int, int]]]:
        """The two best paths through ``text`` (a 2-best Viterbi in float64): each position
        keeps its two best distinct paths, as ``(score, start, id, rank at start)``."""
        n = len(text)
        get = self._lookup.get
        scores = self._scores
        kept: list[list[tuple[float, int, int, int]]] = [[] for _ in range(n + 1)]
        kept[0] = [(0.0, -1, 0, 0)]

        def offer(k: int, entry: tuple[float, int, int, int]) -> None:
            row = kept[k]
            row.append(entry)
            row.sort(key=lambda e: -e[0])  # stable: the earlier of equals stays first
            del row[2:]

        for s in range(n):
            single = False
            for k in range(s + 1, min(n, s + self._maxlen) + 1):
                v = get(text[s:k])
                if v is None:
                    break
                if v >= 0:
                    for r, (here, *_rest) in enumerate(kept[s]):
                        offer(k, (here + scores[v], s, v, r))
                    single = single or k == s + 1
            if not single:
                for r, (here, *_rest) in enumerate(kept[s]):
                    offer(s + 1, (here + self.unk_score, s, -1, r))
        out = []
        for rank in range(len(kept[n])):
            nodes = []
            end, r = n, rank
            while end > 0:
                _, start, token_id, r = kept[end][r]
                nodes.append((start, end, token_id))
                end = start
            nodes.reverse()
            out.append(nodes)
        return out


# ─── tokenizer.json ─────────────────────────────────────────────────────────────────────


def unigram_from_json(obj: dict[str, object], name: str) -> UnigramModel:
    """The ``"model"`` section of a ``tokenizer.json`` whose type is ``Unigram``:
    ``vocab`` (a list of ``[piece, score]``), ``unk_id`` (or null), ``byte_fallback``.

    >>> m = unigram_from_json({"vocab": [["<unk>", 0.0], ["▁a", -1.5]], "unk_id": 0}, "t.json")
    >>> m.tokenize("▁a"), m.kind
    ([(1, 0, 2)], 'Unigram')
    >>> unigram_from_json({"vocab": [["a", "x"]]}, "t.json")
    Traceback (most recent call last):
    ...
    core.errors.FormatError: t.json: model.vocab[0] is ['a', 'x']; expected [piece, score]
    """
    vocab = obj.get("vocab")
    if not isinstance(vocab, list):
        raise FormatError(f"{name}: a Unigram model.vocab must be a list of [piece, score]")
    pieces: list[tuple[str, float]] = []
    for i, item in enumerate(vocab):
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or isinstance(item[1], bool)
            or not isinstance(item[1], (int, float))
        ):
            raise FormatError(f"{name}: model.vocab[{i}] is {item!r}; expected [piece, score]")
        score = item[1]
        pieces.append((item[0], _as_serde_reads(score) if isinstance(score, float) else score))
    unk_id = obj.get("unk_id")
    if unk_id is not None and (
        isinstance(unk_id, bool) or not isinstance(unk_id, int) or unk_id < 0
    ):
        raise FormatError(f"{name}: model.unk_id is {unk_id!r}; expected an ID or null")
    if unk_id is not None and unk_id >= len(pieces):
        raise FormatError(
            f"{name}: model.unk_id {unk_id} is past the end of model.vocab "
            f"({len(pieces)} pieces)"
        )
    fallback = obj.get("byte_fallback", False)
    if not isinstance(fallback, bool):
        raise FormatError(f"{name}: model.byte_fallback is {fallback!r}; expected true/false")
    return UnigramModel(pieces, unk_id=unk_id, byte_fallback=fallback)


_U64_MAX = (1 << 64) - 1


def _as_serde_reads(value: float) -> float:
    """``value`` as ``tokenizers`` reads it from the file: serde_json (without its
    ``float_roundtrip`` feature) takes the digits as a u64, converts that to a float and
    divides by a power of ten, so a 17-digit score (past 2^53) can come out one unit in
    the last place off the correctly rounded value Python reads. Exact ties (``=`` + ``==``
    against ``==`` + ``=``) then break the other way, so the scores must be the same bits.
    The digits are those Python prints, which are the file's when ``tokenizers`` (or any
    shortest-round-trip writer) wrote it.

    >>> _as_serde_reads(-11.602532386779785), _as_serde_reads(-6.682016372680664)
    (-11.602532386779783, -6.682016372680664)
    """
    text = repr(value)
    if not _FINITE.fullmatch(text):
        return value
    negative = text.startswith("-")
    mantissa, _, exp = text.lstrip("-").lower().partition("e")
    whole, _, frac = mantissa.partition(".")
    significand, exponent, full = 0, int(exp or 0), False
    for digit in whole:  # (a u64 that would overflow keeps its digits as a power of ten)
        if full or significand * 10 + int(digit) > _U64_MAX:
            full, exponent = True, exponent + 1
        else:
            significand = significand * 10 + int(digit)
    for digit in frac:  # (digits past a full u64 are dropped)
        if full or significand * 10 + int(digit) > _U64_MAX:
            break
        significand, exponent = significand * 10 + int(digit), exponent - 1
    f = float(significand)
    while True:
        if abs(exponent) <= 308:
            f = f * float(f"1e{exponent}") if exponent >= 0 else f / float(f"1e{-exponent}")
            break
        if f == 0.0 or exponent >= 0:
            break
        f, exponent = f / 1e308, exponent + 308
    return -f if negative else f


_FINITE = re.compile(r"-?\d+(\.\d+)?(e[+-]?\d+)?")


def sentencepiece_unigram(pieces: Sequence[ProtoPiece], *, byte_fallback: bool) -> UnigramModel:
    """The model of a checked SentencePiece ``.model`` of type UNIGRAM (``pieces``: its
    :class:`~core.pipeline.sentencepiece.proto.ProtoPiece` list).

    >>> from core.pipeline.sentencepiece.proto import ProtoPiece
    >>> m = sentencepiece_unigram([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("▁a", -1.0),
    ...                            ProtoPiece("<s>", 0, CONTROL)], byte_fallback=False)
    >>> m.tokenize("▁a▁a"), m.unk_score
    ([(1, 0, 2), (1, 2, 4)], -11.0)
    """
    unk = next((i for i, p in enumerate(pieces) if p.type == UNKNOWN), None)
    return UnigramModel(
        [(p.piece, p.score) for p in pieces],
        unk_id=unk,
        byte_fallback=byte_fallback,
        flavour="sentencepiece",
        types=[p.type for p in pieces],
    )

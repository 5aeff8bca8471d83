"""SentencePiece's BPE model (``bpe_model.cc``) over a normalized text.

User-defined pieces are cut out first, then the adjacent pair whose concatenation is the
best-scored piece is merged (leftmost on ties) until none is a piece; characters left
unknown become ``<0xNN>`` byte pieces (``byte_fallback``) or one ``<unk>`` per run. The
merge loop is :func:`core.bpe.merge`; the text is cut first into words no token can cross,
each cached (the proof is in :class:`SentencePieceBPE`).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence

from core.bpe import merge, merge_steps
from core.pipeline.models.bpe import BPEStep
from core.pipeline.sentencepiece.normalizer import PrefixMatcher
from core.pipeline.sentencepiece.proto import (
    BYTE,
    CONTROL,
    SPACE,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    ProtoPiece,
    byte_piece,
)

__all__ = ["SentencePieceBPE"]


# Words longer than this are cut further at character pairs that no piece contains.
_LONG = 64
_CACHE_MAX = 200_000


class _UserPiece(str):
    """A user-defined piece in a text: cut out whole first, never joined further."""

    __slots__ = ()


class _MinusScore:
    """``piece -> minus its score``, for :func:`core.bpe.merge` when some score is NaN (it
    has no place among the others). subtle: computed afresh at each look-up, as this port
    always did: a NaN is unequal to itself, but tuple comparison takes an object as equal to
    itself, so one shared NaN object would order merge's heap differently."""

    __slots__ = ("_scores",)

    def __init__(self, scores: dict[str, float]) -> None:
        self._scores = scores

    def get(self, piece: str | None, default: int) -> float | int:
        score = self._scores.get(piece)  # type: ignore[arg-type]
        return default if score is None else -score


class SentencePieceBPE:
    """SentencePiece's BPE model (``bpe_model.cc``) over a normalized text.

    ``tokenize(text)`` gives ``(id, start, end)`` per token, offsets in characters of
    ``text``. Merges: among adjacent symbols whose concatenation is a NORMAL, USER_DEFINED
    or UNUSED piece, the one with the highest score (then the leftmost) is merged, until
    none is left. User-defined pieces are cut out first (longest match) and never merged
    further. An UNUSED result is split back into the two symbols it was made of. A symbol
    that is no piece is unknown: with ``byte_fallback`` its UTF-8 bytes as ``<0xNN>`` pieces,
    else ``<unk>`` (a run of unknown symbols gives one ``<unk>``).

    >>> m = SentencePieceBPE([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1),
    ...                       ProtoPiece("b", -2), ProtoPiece("ab", -3)])
    >>> m.tokenize("abba?")
    [(3, 0, 2), (2, 2, 3), (1, 3, 4), (0, 4, 5)]
    """

    def __init__(
        self, pieces: Sequence[ProtoPiece], *, byte_fallback: bool = False
    ) -> None:
        self.pieces = list(pieces)
        self.byte_fallback = byte_fallback
        self._tokens = [p.piece for p in self.pieces]
        self.types = [p.type for p in self.pieces]
        self.scores = [p.score for p in self.pieces]
        normal: dict[str, int] = {}  # pieces_ of model_interface.cc: may be merged into
        reserved: dict[str, int] = {}  # reserved_id_map_: CONTROL, UNKNOWN, BYTE
        self.unk_id = -1
        for i, p in enumerate(self.pieces):
            table = reserved if p.type in (CONTROL, UNKNOWN, BYTE) else normal
            table.setdefault(p.piece, i)
            if p.type == UNKNOWN and self.unk_id < 0:
                self.unk_id = i
        self._normal = normal
        #: token -> ID as SentencePiece's PieceToId answers (reserved pieces first, should
        #: a file spell two pieces alike; a checked file does not)
        self.vocab: dict[str, int] = {**normal, **reserved}
        # core.bpe.merge joins the lowest rank first. A piece's rank is the place of its
        # score among the distinct scores, best first (equal scores, equal ranks; -inf
        # last): small ints, which compare fast with merge's NO_MERGE where floats do not.
        # A NaN score has no place (SentencePiece's comparisons do not order it either):
        # then the rank is minus the score, on merge's heap path, as before (_MinusScore).
        scores = {s: self.scores[i] for s, i in normal.items()}
        self._heap_only = any(sc != sc for sc in scores.values())
        self._merge_rank: dict[str, int] | _MinusScore
        if self._heap_only:
            self._merge_rank = _MinusScore(scores)
        else:
            place = {sc: k for k, sc in enumerate(sorted(set(scores.values()), reverse=True))}
            self._merge_rank = {s: place[sc] for s, sc in scores.items()}
        self._unused = frozenset(s for s, i in normal.items() if self.types[i] == UNUSED)
        self._byte_ids = [reserved.get(byte_piece(b), self.unk_id) for b in range(256)]
        user = [p.piece for p in self.pieces if p.type == USER_DEFINED]
        self._matcher = PrefixMatcher(user)
        self._user_first = frozenset(s[0] for s in user)
        self._has_unused = any(t == UNUSED for t in self.types)
        self._cut = _cut_regex(normal)
        self._bigrams = {s[i : i + 2] for s in normal for i in range(len(s) - 1)}
        self._cache: dict[str, tuple[tuple[int, int, int], ...]] = {}

    # -- the Model protocol --

    @property
    def kind(self) -> str:
        return "SentencePiece BPE"

    def id_to_token(self, token_id: int) -> str | None:
        return self._tokens[token_id] if 0 <= token_id < len(self._tokens) else None

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def get_vocab_size(self) -> int:
        return len(self._tokens)

    def piece_to_id(self, piece: str) -> int:
        """SentencePiece's PieceToId: a reserved piece, else a normal one, else ``<unk>``."""
        return self.vocab.get(piece, self.unk_id)

    def tokenize(self, text: str) -> list[tuple[int, int, int]]:
        if not text:
            return []
        if self._has_unused:
            # An UNUSED piece is split back with the pair last seen forming it anywhere in
            # the text (bpe_model.cc's rev_merge), so words are not independent: no cuts.
            rev: dict[str, tuple[str, str]] = {}
            out = self._finish(self._bpe(text, rev), rev)
        else:
            out = []
            cache = self._cache
            offset = 0
            for word in self._words(text):
                found = cache.get(word)
                if found is None:
                    found = self._word(word)
                    if len(cache) >= _CACHE_MAX:
                        cache.clear()
                    cache[word] = found
                if offset:
                    out.extend([(i, s + offset, e + offset) for i, s, e in found])
                else:
                    out.extend(found)
                offset += len(word)
        if not self.byte_fallback:
            out = self._merge_unknown(out)
        return out

    # -- cutting the text into independent words --
    #
    # SentencePiece runs BPE over the whole normalized text. Cutting it between positions
    # p-1 and p is exact when no symbol can ever span the cut:
    #
    # 1. Every symbol is a single character, a user-defined piece cut out by the prefix
    #    matcher, or the result of a merge, which is a piece of `pieces_` (NORMAL,
    #    USER_DEFINED, UNUSED). All of these are in `_normal` or single characters.
    # 2. A symbol spanning the cut contains text[p-1:p+1] as a substring; so if that pair
    #    of characters occurs in no piece of `_normal`, no symbol ever spans the cut, and no
    #    pair across it is ever merged (its concatenation would span it).
    # 3. The prefix matcher scans left to right; as no user-defined match spans the cut
    #    (point 2), its scan restarts at p exactly as the global scan reaches p, and a
    #    longest match found in the word is the global one (a longer one would span p).
    # 4. With no pair across cuts, the merges of each word are chosen among that word's
    #    pairs only: the global "best score, then leftmost" order restricted to one word is
    #    that word's own order. So each word's result is the same as in the whole text, and
    #    can be cached. (UNUSED pieces break point 4 through rev_merge: no cutting then.)
    #
    # Fast rule for point 2 (a regex): cut before a ▁ whose left neighbour is not a
    # character that precedes a ▁ inside some piece (Mistral/Llama: only ▁ does, in "▁▁"),
    # and after a ▁ whose right neighbour never follows a ▁ inside a piece. Words longer
    # than _LONG are then cut at every pair of characters that no piece contains.

    def words(self, text: str) -> list[str]:
        """The independent words :meth:`tokenize` cuts ``text`` into (the proof is above);
        ``[text]`` when the model has UNUSED pieces, whose words are not independent.

        These are SentencePiece's pre-tokens in all but name: no token spans two of them.
        """
        if not text:
            return []
        return [text] if self._has_unused else self._words(text)

    def _words(self, text: str) -> list[str]:
        words = self._cut.split(text) if self._cut is not None else [text]
        if any(len(w) > _LONG for w in words):
            out: list[str] = []
            for w in words:
                out.extend(self._split_long(w) if len(w) > _LONG else (w,))
            words = out
        return [w for w in words if w]

    def _split_long(self, word: str) -> list[str]:
        bigrams = self._bigrams
        out: list[str] = []
        start = 0
        for i in range(1, len(word)):
            if word[i - 1 : i + 1] not in bigrams:
                out.append(word[start:i])
                start = i
        out.append(word[start:])
        return out

    # -- BPE on one word --

    def _word(self, word: str) -> tuple[tuple[int, int, int], ...]:
        return tuple(self._finish(self._bpe(word), {}))

    def _bpe(self, text: str, rev: dict[str, tuple[str, str]] | None = None) -> list[str]:
        """bpe_model.cc's SampleEncode (without dropout) through :func:`core.bpe.merge`:
        user-defined pieces cut out first (longest match), then the adjacent pair forming
        the best-scored piece joins first, leftmost on ties (the order of its heap of
        candidates: best score, then smallest left index, stale entries skipped). ``rev``
        gets its ``rev_merge``: each UNUSED piece -> the pair last pushed forming it."""
        if rev is None and (not self._user_first or self._user_first.isdisjoint(text)):
            parts, key = list(text), operator.add  # the common case: plain characters
        else:
            chunks = self._matcher.split(text)
            parts = [_UserPiece(c) if user else c for c, user in chunks]
            key = self._pair_key(rev)
        return merge(parts, self._merge_rank, key=key, heap=self._heap_only)

    def _pair_key(
        self, rev: dict[str, tuple[str, str]] | None
    ) -> Callable[[str, str], str | None]:
        """The key of two adjacent parts in ``_merge_rank``; None (no key) if one of them is
        a user-defined piece. With ``rev``, note each UNUSED piece a pair forms: merge asks
        about pairs in the order bpe_model.cc pushes them (core.bpe.merge's subtle note)."""
        unused = self._unused

        def key(left: str, right: str) -> str | None:
            if type(left) is _UserPiece or type(right) is _UserPiece:
                return None
            joined = left + right
            if rev is not None and joined in unused:
                rev[joined] = (left, right)
            return joined

        return key

    def _finish(
        self, symbols: list[str], rev: dict[str, tuple[str, str]]
    ) -> list[tuple[int, int, int]]:
        """Symbols -> (id, start, end): UNUSED pieces resegmented, unknown ones to bytes."""
        out: list[tuple[int, int, int]] = []
        pos = 0
        get = self.vocab.get
        unk = self.unk_id
        byte_fallback = self.byte_fallback
        if rev:
            symbols = [s for sym in symbols for s in self._resegment(sym, rev)]
        for sym in symbols:
            token_id = get(sym, unk)
            end = pos + len(sym)
            if token_id == unk and byte_fallback:
                # the bytes of an unknown character (a symbol left unmerged is one
                # character); every byte piece is drawn under that character
                byte_ids = self._byte_ids
                out.extend((byte_ids[b], pos, end) for b in sym.encode("utf-8"))
            else:
                out.append((token_id, pos, end))
            pos = end
        return out

    def _resegment(self, sym: str, rev: dict[str, tuple[str, str]]) -> list[str]:
        token_id = self.piece_to_id(sym)
        if token_id < 0 or self.types[token_id] != UNUSED or sym not in rev:
            return [sym]
        left, right = rev[sym]
        return self._resegment(left, rev) + self._resegment(right, rev)

    def _merge_unknown(
        self, out: list[tuple[int, int, int]]
    ) -> list[tuple[int, int, int]]:
        """A run of ``<unk>`` tokens is one ``<unk>`` (PopulateSentencePieceText)."""
        unk = self.unk_id
        if not any(t[0] == unk for t in out):
            return out
        merged: list[tuple[int, int, int]] = []
        for tok in out:
            if tok[0] == unk and merged and merged[-1][0] == unk:
                merged[-1] = (unk, merged[-1][1], tok[2])
            else:
                merged.append(tok)
        return merged

    def clear_cache(self) -> None:
        """Forget cached words (e.g. to time a cold encode)."""
        self._cache.clear()

    # -- explaining --

    def trace(self, text: str) -> list[BPEStep]:
        """The merges BPE makes in ``text`` (a normalized text), in order, for the UI's "why
        this split" view. ``rank`` is the merged piece's ID: SentencePiece has no merge
        list, it merges the best-*scored* piece first (in trained files, the lower ID).
        (An UNUSED piece is shown merged; :meth:`tokenize` splits it back.)

        >>> m = SentencePieceBPE([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1),
        ...                       ProtoPiece("b", -2), ProtoPiece("ab", -3)])
        >>> [(s.merged, s.position, s.after) for s in m.trace("abab")]
        [('ab', 0, ('ab', 'a', 'b')), ('ab', 1, ('ab', 'ab'))]
        """
        parts = [_UserPiece(c) if user else c for c, user in self._matcher.split(text)]
        joins = merge_steps(parts, self._merge_rank, key=self._pair_key(None), heap=self._heap_only)
        steps: list[BPEStep] = []
        for at, _, parts_before, parts_after in joins:
            before = tuple(map(str, parts_before))  # (plain strings: no _UserPiece shown)
            merged = parts_after[at]
            steps.append(BPEStep(rank=self._normal[merged], left=before[at],
                                 right=before[at + 1], merged=merged, position=at,
                                 before=before, after=tuple(map(str, parts_after))))  # fmt: skip
        return steps


def _cut_regex(normal: dict[str, int]) -> re.Pattern[str] | None:
    """Where a normalized text can be cut into independent words (proof in SentencePieceBPE):
    before a ▁ whose left neighbour never precedes a ▁ inside a piece, and after a ▁ whose
    right neighbour never follows one inside a piece."""
    before: set[str] = set()  # characters seen right before a ▁ inside a piece
    after: set[str] = set()  # characters seen right after a ▁ inside a piece
    for s in normal:
        k = s.find(SPACE)
        while k >= 0:
            if k > 0:
                before.add(s[k - 1])
            if k + 1 < len(s):
                after.add(s[k + 1])
            k = s.find(SPACE, k + 1)
    parts = []

    def cls(chars: set[str]) -> str:
        return "".join(re.escape(c) for c in sorted(chars))

    parts.append(f"(?<![{cls(before)}])(?={SPACE})" if before else f"(?={SPACE})")
    parts.append(f"(?<={SPACE})(?![{cls(after)}])" if after else f"(?<={SPACE})")
    return re.compile("|".join(parts))

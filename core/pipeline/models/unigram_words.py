"""SentencePiece Unigram encoding word by word, exact to the float32 bit: the text is cut
where no piece can cross, and a word's IDs are cached when rounding cannot change them.

SentencePiece searches one lattice over the whole normalized text, summing path scores in
float32 (:class:`~core.pipeline.models.unigram.UnigramModel`). Two facts make words possible:

1. **Every path crosses a cut.** Cut between ``p-1`` and ``p`` where the two characters
   there occur together in no piece that can be a node (NORMAL, USER_DEFINED; an UNUSED
   piece never is one; an unknown node is one character): no node spans ``p``. So the best
   score reached at ``p``, ``B``, is where every path on the right starts; the search to
   the right of ``p`` is the same search over the word alone, started at ``B`` (its score
   reset too, which only ever looks at positions from ``p`` on); and the best path goes
   through ``p`` (:meth:`UnigramModel.best_path` with ``start=B`` is exact).
2. **A word's best path is the same for every ``B`` when no comparison is close.** In
   float32 ``B + a + b`` rounds differently for different ``B``, so two splits that tie, or
   nearly tie, can swap. Bound it: with every value in the word at most ``M`` in size
   (``|B|`` plus how far the word's scores reach) and ``U`` the float32 spacing at ``M``,
   each addition is off by at most ``U/2``, so the best score at ``k`` characters into the
   word is within ``k*U/2`` of the exact real sum (induction: a candidate at ``k`` adds one
   rounding to a best score at most ``k-1`` characters in; a maximum of values each within
   ``e`` is within ``e``). If the winner at ``k`` beats every other candidate by more than
   ``k*U`` in real arithmetic, float32 picks it too, whatever ``B``. So each word is
   searched once in float64 from 0, noting the winning margin at each node of its best
   path; its IDs are reused while ``U`` stays under ``min(margin_k / k)``, and the word is
   searched exactly (from the true ``B``) when it does not, or when a score reset could
   fall inside it (``|B|`` plus its reach past 1e5).

``B`` itself is carried exactly: with no reset inside a word, the best score at its end is
its path's scores added one by one in float32 (an ``array("f")`` rounds each sum).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping, Sequence

from core.pipeline.models.unigram_lattice import merge_unknown_runs
from core.pipeline.sentencepiece.bpe import WordCuts

__all__ = ["UnigramWords"]

#: Words longer than this (characters) are searched exactly every time, never cached.
_CACHE_WORD = 256
_CACHE_MAX = 1 << 17

Node = tuple[int, int, int]  # (start, end, id): id -1 for an unknown character
Search = Callable[[str, float], tuple[list[Node], float]]
# a cached word: its IDs, its path's scores (to carry B), and the bound on |B| under which
# they hold (the float32 spacing small enough, no score reset inside the word)
_Entry = tuple[tuple[int, ...], tuple[float, ...], float]


def float32_spacing(size: float) -> float:
    """The float32 spacing (one ulp) at magnitude ``size`` (>= 2**-126).

    >>> float32_spacing(1.0), float32_spacing(100000.0)
    (1.1920928955078125e-07, 0.0078125)
    """
    return math.ldexp(1.0, math.frexp(size)[1] - 24)


class UnigramWords:
    """A SentencePiece Unigram model's encoder over whole texts, word by word (the proof
    is in this module's docstring). ``search`` is the model's exact float32 search from a
    start score, ``(text, start) -> (path, end score)``; ``lookup`` its trie (piece or
    prefix -> ID, -1 for no node); ``unknown()`` gives the ``<unk>`` ID (or raises).

    >>> from core.pipeline.models.unigram import UnigramModel
    >>> m = UnigramModel([("<unk>", 0.0), ("▁a", -1.0), ("b", -2.0)], unk_id=0,
    ...                  flavour="sentencepiece")
    >>> m.encode_word("▁ab▁a??▁a")
    [1, 2, 1, 0, 1]
    """

    def __init__(
        self,
        *,
        search: Search,
        lookup: Mapping[str, int],
        candidates: Mapping[str, int],
        scores: Sequence[float],
        unk_score: float,
        maxlen: int,
        byte_ids: Sequence[int],
        byte_fallback: bool,
        unknown: Callable[[], int],
        reset: float,
    ) -> None:
        self._search = search
        self._lookup = lookup
        self._scores = scores
        self._unk_score = unk_score
        self._maxlen = maxlen
        self._byte_ids = byte_ids
        self._byte_fallback = byte_fallback
        self._unknown = unknown
        self._reset = reset
        nodes = {p: i for p, i in candidates.items() if i >= 0}
        self._cut = WordCuts(nodes)
        used = [scores[i] for i in nodes.values()] + [unk_score]
        # the margins are worked out in float64: only finite scores have them
        self._exact_only = not all(map(math.isfinite, used))
        self._top = max(map(abs, used)) if not self._exact_only else 0.0
        self._cache: dict[str, _Entry] = {}

    def clear(self) -> None:
        """Forget cached words."""
        self._cache.clear()

    def encode(self, text: str) -> list[int]:
        """The IDs SentencePiece gives the normalized ``text`` (one lattice over it all)."""
        ids: list[int] = []
        total = array("f", [0.0])  # B: the best score so far, a float32 as in C++
        cache = self._cache
        for word in self._cut.split(text):
            here = total[0]
            entry = cache.get(word)
            if entry is None and len(word) <= _CACHE_WORD and not self._exact_only:
                entry = self._entry(word)
                if len(cache) >= _CACHE_MAX:
                    cache.clear()
                cache[word] = entry
            if entry is not None:
                word_ids, path_scores, bound = entry
                if -bound < here < bound:
                    ids += word_ids
                    for score in path_scores:
                        total[0] += score
                    continue
            # (the search resets a start past 1e5 itself, as the whole text's search would)
            path, total[0] = self._search(word, here)
            ids += self._ids(word, path)
        if -1 in ids:  # (without byte_fallback: unknown characters)
            ids = merge_unknown_runs(ids, self._unknown())
        return ids

    def _ids(self, word: str, path: list[Node]) -> list[int]:
        """A path's IDs; an unknown character as its byte pieces (``byte_fallback``) or -1
        (``encode`` makes a run of them one ``<unk>``)."""
        out: list[int] = []
        for start, end, token_id in path:
            if token_id >= 0:
                out.append(token_id)
            elif self._byte_fallback:
                byte_ids = [self._byte_ids[b] for b in word[start:end].encode("utf-8")]
                if -1 not in byte_ids:
                    out += byte_ids
            else:
                out.append(-1)
        return out

    def _entry(self, word: str) -> _Entry:
        """The word searched in float64 from 0: its IDs, its path's scores, the largest
        float32 spacing its comparisons survive (0: some comparison is a tie), its reach."""
        n = len(word)
        get = self._lookup.get
        scores = self._scores
        unk_score = self._unk_score
        maxlen = self._maxlen
        # (-inf where nothing arrived yet: the first candidate always wins, as in C++;
        # every score is finite here, see _exact_only)
        best = [-math.inf] * (n + 1)
        best[0] = 0.0
        second = [-math.inf] * (n + 1)  # the best losing candidate at each position
        starts = [-1] * (n + 1)
        ids = [0] * (n + 1)
        for s in range(n):
            here = best[s]
            stop = s + maxlen
            if stop > n:
                stop = n
            k = s + 1
            v = get(word[s:k])
            # the one-character piece, else the unknown node (it is always there)
            c = (scores[v] if v is not None and v >= 0 else unk_score) + here
            if c > best[k]:
                second[k] = best[k]
                best[k], starts[k], ids[k] = c, s, v if v is not None and v >= 0 else -1
            elif c > second[k]:
                second[k] = c
            if v is None:
                continue
            k += 1
            while k <= stop:
                v = get(word[s:k])
                if v is None:
                    break
                if v >= 0:
                    c = scores[v] + here
                    if c > best[k]:
                        second[k] = best[k]
                        best[k], starts[k], ids[k] = c, s, v
                    elif c > second[k]:
                        second[k] = c
                k += 1
        # every value the float32 search computes is within reach of B (plus slack that
        # covers the rounding, n*U/2 < 1/2 as the spacing is capped at 1/n)
        reach = max(map(abs, best)) + self._top + 1.0
        slop = 1e-9 * reach  # float64's own rounding of these sums, far below
        spacing = 1.0 / n
        path: list[Node] = []
        end = n
        while end > 0:
            start = starts[end]
            gap = (best[end] - second[end] - slop) / end
            if gap < spacing:
                spacing = gap
            path.append((start, end, ids[end]))
            end = start
        path.reverse()
        # (tuples: the garbage collector stops tracking tuples of numbers)
        path_ids = tuple([v for _, _, v in path])
        path_scores = tuple([scores[v] if v >= 0 else unk_score for v in path_ids])
        if -1 in path_ids:  # (unknown characters: their byte pieces, or -1 for <unk>)
            path_ids = tuple(self._ids(word, path))
        return path_ids, path_scores, _bound(spacing, reach, self._reset)


def _bound(spacing: float, reach: float, reset: float) -> float:
    """The bound on ``|B|`` under which a word is taken from the cache: ``|B| + reach``
    stays under the score reset and under the magnitude ``2**(E+1)`` where the float32
    spacing (``2**(E-23)`` from ``2**E`` up) is still below ``spacing``; 0 when no ``B``
    will do.

    >>> _bound(0.01, 10.0, 1e9), float32_spacing(131071.9) < 0.01 <= float32_spacing(131072.0)
    (131062.0, True)
    """
    if not spacing > 0.0:
        return 0.0
    mantissa, exponent = math.frexp(spacing)  # spacing = mantissa * 2**exponent
    top = exponent + 23 if mantissa > 0.5 else exponent + 22  # E + 1
    return max(min(math.ldexp(1.0, top), reset) - reach, 0.0)

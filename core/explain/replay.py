"""Replay: a byte-level BPE tokenizer as it was after its first ``k`` merges, for every ``k``.

Step ``k`` (0 to ``len(tok.merges)``) is the tokenizer whose vocabulary holds the special
tokens, the 256 bytes and the tokens the first ``k`` merges made, and that knows only those
merges. Step 0 encodes every text to bytes; the last step is ``tok`` itself.

>>> from core.engine.tokenizer import Tokenizer
>>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"}
>>> tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")])
>>> [encode_with_first_merges(tok, "abcab", k) for k in range(3)]
[[97, 98, 99, 97, 98], [256, 99, 256], [257, 256]]
>>> replay = TextReplay(tok, "abcab")
>>> [replay.ids(k) for k in range(3)], replay.steps
([[97, 98, 99, 97, 98], [256, 99, 256], [257, 256]], (1, 2))

:func:`encode_with_first_merges` is the reference: it builds that smaller
:class:`~core.engine.tokenizer.Tokenizer` and encodes with it. :class:`TextReplay` gives the same IDs
for every ``k`` from one pass over the text: it runs BPE once per distinct pre-token, keeps
each merge it applies with the step that allows it, and answers step ``k`` by replaying the
merges allowed by then.

subtle: that shortcut is exact when the merges a pre-token goes through are allowed in
non-decreasing steps, which holds for every tokenizer trained by merges in creation order (a
merge can only use tokens made by earlier ones). A loaded file can break it (a merge listed
before the merge that makes its part): such a pre-token is replayed by running BPE limited
to each step where its result can change instead, which is exact too, only slower.

Rank files (tiktoken's, Llama 3, Tekken: ``Tokenizer(vocab, None)``) have no merge list; their
merges are derived from the ranks (:func:`core.engine.ranks.merges_from_ranks`). Step ``k`` of such a
tokenizer holds every token ranked below the token merge ``k`` makes, including the tokens no
merge builds (reached only when a whole pre-token equals them). Pipelines (SentencePiece,
WordPiece, non-byte-level BPE) are not replayed: :func:`replay_problem` says why.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.basics import utf8
from core.engine.bpe import merge
from core.engine.details import EncodingDetails, encode_details
from core.engine.pretokenize import split_on_specials
from core.engine.tokenizer import Tokenizer
from core.errors import PlaygroundError

__all__ = [
    "StepCounts",
    "TextReplay",
    "encode_with_first_merges",
    "merge_at",
    "replay_problem",
    "vocab_at",
    "vocab_sizes",
]

#: (priority, step, merged ID) of joining two adjacent tokens ``(left, right)``, or None when
#: they never join.
_PairFn = Callable[[tuple[int, int]], "tuple[int, int, int] | None"]
#: One merge applied inside a pre-token: (step that allows it, left slot, right slot, new ID).
#: A slot is the byte position where a part starts; the joined part keeps the left slot.
_Event = tuple[int, int, int, int]


# ----------------------------------------------------------------------------------------
# What a step is
# ----------------------------------------------------------------------------------------


def replay_problem(tok: Any) -> str | None:
    """Why ``tok`` cannot be replayed merge by merge, or None when it can.

    >>> bytes_only = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    >>> replay_problem(bytes_only)  # doctest: +NORMALIZE_WHITESPACE
    'This tokenizer has no merges: its vocabulary is the 256 bytes (and any special tokens), so
    there is nothing to replay.'
    """
    if not tok.capabilities.replay:  # (a core.interface.TokenizerInterface)
        return (
            f"Replay shows byte-level BPE tokenizers, whose vocabulary grows one merge at a "
            f"time from the 256 bytes; this one is a {tok.kind}. Its tokens come from "
            "normalized text (SentencePiece scores, WordPiece's longest match, a word list), "
            "so there is no merge order to step through."
        )
    if not tok.merges:
        return (
            "This tokenizer has no merges: its vocabulary is the 256 bytes (and any special "
            "tokens), so there is nothing to replay."
        )
    return None


def _check_step(tok: Tokenizer, k: int) -> int:
    n = len(tok.merges)
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise PlaygroundError(f"step {k!r} is not a merge count from 0 to {n:,}")
    return k


def _base_ids(tok: Tokenizer) -> set[int]:
    """The IDs every step has: special tokens and the 256 bytes."""
    return set(tok.special_token_ids.values()) | set(tok.byte_ids)


def vocab_at(tok: Tokenizer, k: int) -> dict[int, bytes]:
    """The vocabulary after the first ``k`` merges (IDs as in ``tok``): special tokens, the
    256 bytes and the tokens those merges made; in rank mode every token ranked below the
    token merge ``k`` makes. The last step (``k == len(tok.merges)``) is ``tok.vocab``.

    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"}
    >>> tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")])
    >>> sorted(set(vocab_at(tok, 1)) - set(range(256)))
    [256]
    """
    n = len(tok.merges)
    if _check_step(tok, k) == n:
        return dict(tok.vocab)
    keep = _base_ids(tok)
    if tok.by_rank:
        limit = tok.merged_ids[k]
        keep.update(i for i in tok.ids_by_bytes.values() if i < limit)
    else:
        keep.update(tok.merged_ids[:k])
    return {i: tok.vocab[i] for i in sorted(keep)}


def vocab_sizes(tok: Tokenizer) -> list[int]:
    """``len(vocab_at(tok, k))`` for every step ``k`` (``len(tok.merges) + 1`` numbers).

    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"}
    >>> vocab_sizes(Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")], ["<|eot|>"]))
    [257, 258, 259]
    """
    base = _base_ids(tok)
    merged = tok.merged_ids
    sizes: list[int] = []  # steps 0 .. n-1; the last step is the whole vocabulary
    if tok.by_rank:
        others = sorted(i for i in tok.ids_by_bytes.values() if i not in base)
        sizes = [len(base) + bisect_left(others, limit) for limit in merged]
    else:
        seen = set(base)
        for new_id in merged:
            sizes.append(len(seen))
            seen.add(new_id)
    return sizes + [len(tok.vocab)]


def merge_at(tok: Tokenizer, k: int) -> tuple[tuple[bytes, bytes], int] | None:
    """The merge step ``k`` adds, ``((left, right), new ID)``; None at step 0.

    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    >>> merge_at(Tokenizer(vocab, [(b"a", b"b")]), 1)
    ((b'a', b'b'), 256)
    """
    if _check_step(tok, k) == 0:
        return None
    return tok.merges[k - 1], tok.merged_ids[k - 1]


# ----------------------------------------------------------------------------------------
# The reference
# ----------------------------------------------------------------------------------------


def encode_with_first_merges(tok: Tokenizer, text: str, k: int) -> list[int]:
    """``text`` encoded by the tokenizer of step ``k``: a :class:`Tokenizer` built from
    :func:`vocab_at` and the first ``k`` merges, with ``tok``'s special tokens (and IDs),
    pattern and rules. Slow (it builds a tokenizer); :class:`TextReplay` is the fast way.

    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    >>> tok = Tokenizer(vocab, [(b"a", b"b")], ["<|eot|>"])
    >>> encode_with_first_merges(tok, "ab<|eot|>", 0), encode_with_first_merges(tok, "ab", 1)
    ([97, 98, 257], [256])
    """
    vocab = vocab_at(tok, k)
    merges: list[tuple[bytes, bytes]] | None = None
    if not tok.by_rank:
        specials = set(tok.special_token_ids.values())
        known = {token for i, token in vocab.items() if i not in specials}
        # a merge whose part no earlier merge made can never apply at this step (only a
        # loaded file lists such merges): leave it out, the order of the others is what counts
        merges = [(a, b) for a, b in tok.merges[:k] if a in known and b in known]
    step = Tokenizer(
        vocab, merges, dict(tok.special_token_ids), pattern=tok.pattern,
        ignore_merges=tok.ignore_merges, specials_in_text=tok.specials_in_text, cache_size=0,
    )  # fmt: skip
    return step.encode(text)


# ----------------------------------------------------------------------------------------
# The fast way: one BPE run per distinct pre-token, every step at once
# ----------------------------------------------------------------------------------------


def _pair_fn(tok: Tokenizer) -> _PairFn:
    """How two adjacent tokens join in ``tok``: (priority, step, merged ID) or None. The
    priority is what BPE minimises (the merge rank, or in rank mode the joined token's rank);
    the step is the first ``k`` that allows the join."""
    if tok.by_rank:
        ranks, vocab, merged = tok.ids_by_bytes, tok.vocab, tok.merged_ids

        def by_rank(pair: tuple[int, int]) -> tuple[int, int, int] | None:
            joined = ranks.get(vocab[pair[0]] + vocab[pair[1]])
            if joined is None:
                return None
            return joined, bisect_right(merged, joined), joined

        return by_rank
    pair_ranks, made = tok.pair_ranks, tok.merged_ids

    def by_merge(pair: tuple[int, int]) -> tuple[int, int, int] | None:
        rank = pair_ranks.get(pair)
        return None if rank is None else (rank, rank + 1, made[rank])

    return by_merge


def _token_step(tok: Tokenizer, token_id: int) -> int:
    """The first step whose vocabulary holds the ordinary token ``token_id``."""
    if tok.by_rank:
        return bisect_right(tok.merged_ids, token_id)
    made = tok.parts_of(token_id)
    return len(tok.merges) if made is None else made[0] + 1


def _run(ids: Sequence[int], pair: _PairFn, limit: int | None) -> tuple[list[_Event], int | None]:
    """BPE on one pre-token's byte IDs, joining only pairs allowed by step ``limit`` (None:
    all): the merges applied, in order, and the smallest step among the pairs it met but
    could not join yet (None if none). :func:`core.engine.bpe.merge`, as in :meth:`Tokenizer.bpe`
    (lowest priority first, leftmost on a tie), reading the table through :class:`_Allowed`.

    >>> _run([97, 98], lambda pair: (0, 1, 256), None)
    ([(1, 0, 1, 256)], None)
    >>> _run([97, 98], lambda pair: (0, 1, 256), 0)
    ([], 1)
    """
    allowed = _Allowed(pair, limit)
    joins: list[tuple[int, int, int]] = []
    merge(list(ids), allowed, allowed.made, log=joins)
    step, made = allowed.step, allowed.made
    return [(step[p], left, right, made[p]) for left, right, p in joins], allowed.blocked


class _Allowed:
    """The pairs step ``limit`` may join, as :func:`core.engine.bpe.merge` reads a table:
    ``get((left, right), default)`` is the join's priority, or ``default`` when it is not
    allowed yet (the smallest such step is kept in ``blocked``); ``made[priority]`` is the
    ID the join makes and ``step[priority]`` the step that allows it."""

    def __init__(self, pair: _PairFn, limit: int | None) -> None:
        self._pair = pair
        self._limit = limit
        self.blocked: int | None = None
        # priority -> step, and -> new ID (a priority decides both)
        self.step: dict[int, int] = {}
        self.made: dict[int, int] = {}

    def get(self, pair: tuple[int, int], default: int) -> int:
        joined = self._pair(pair)
        if joined is None:
            return default
        priority, step, new_id = joined
        if self._limit is not None and step > self._limit:
            self.blocked = step if self.blocked is None else min(self.blocked, step)
            return default
        self.step[priority] = step
        self.made[priority] = new_id
        return priority


@dataclass(frozen=True)
class _History:
    """One pre-token at every step: byte IDs, then runs of merges ``(first step, events)``.
    ``monotone``: one run (the full BPE) whose events are allowed in non-decreasing steps,
    so step ``k`` is its events up to ``k``; else one run per step where the result can
    change, each applied whole. ``whole``: (step, ID) from which the pre-token is that one
    token (``ignore_merges``)."""

    byte_ids: tuple[int, ...]
    starts: tuple[int, ...]
    runs: tuple[tuple[_Event, ...], ...]
    monotone: bool
    whole: tuple[int, int] | None

    def at(self, k: int) -> tuple[int, ...]:
        if self.whole is not None and k >= self.whole[0]:
            return (self.whole[1],)
        run = self.runs[bisect_right(self.starts, k) - 1]
        count = len(run)
        if self.monotone:
            count = bisect_right(run, k, key=lambda event: event[0])
        ids = list(self.byte_ids)
        for _, left, right, new_id in run[:count]:
            ids[left] = new_id
            ids[right] = -1
        return tuple(i for i in ids if i >= 0)

    def steps(self) -> list[int]:
        """The steps where this pre-token's tokens change."""
        if self.monotone:
            candidates = {event[0] for event in self.runs[0]}
        else:
            candidates = set(self.starts[1:])
        if self.whole is not None:
            candidates = {s for s in candidates if s < self.whole[0]} | {self.whole[0]}
        return sorted(s for s in candidates if s > 0 and self.at(s) != self.at(s - 1))


def _history(tok: Tokenizer, pair: _PairFn, data: bytes) -> _History:
    byte_ids = tuple(tok.byte_ids[b] for b in data)
    whole = None
    if tok.ignore_merges and len(data) > 1:
        whole_id = tok.ids_by_bytes.get(data)
        if whole_id is not None:
            whole = (_token_step(tok, whole_id), whole_id)
    events, _ = _run(byte_ids, pair, None)
    if all(a[0] <= b[0] for a, b in zip(events, events[1:])):
        return _History(byte_ids, (0,), (tuple(events),), True, whole)
    starts, runs = [], []
    k: int | None = 0
    while k is not None:
        run, blocked = _run(byte_ids, pair, k)
        starts.append(k)
        runs.append(tuple(run))
        k = blocked
    return _History(byte_ids, tuple(starts), tuple(runs), False, whole)


class TextReplay:
    """A text's tokens at every step of ``tok``'s merges, from one BPE run per distinct
    pre-token. ``ids(k)`` equals :func:`encode_with_first_merges` ``(tok, text, k)``.

    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    >>> replay = TextReplay(Tokenizer(vocab, [(b"a", b"b")]), "ab ab")
    >>> replay.ids(0), replay.ids(1), replay.steps
    ([97, 98, 32, 97, 98], [256, 32, 256], (1,))
    >>> [t.id for t in replay.details(1).tokens], replay.merged_at(1)
    ([256, 32, 256], [0, 2])
    """

    def __init__(self, tok: Tokenizer, text: str) -> None:
        if not tok.capabilities.replay:  # asked (core.interface), not told by its type
            raise PlaygroundError(replay_problem(tok) or "not a byte-level BPE tokenizer")
        if not isinstance(text, str):
            raise PlaygroundError(f"a replay takes a str, not {type(text).__name__}")
        self.tok = tok
        self.text = text
        self.n_merges = len(tok.merges)
        matched = tok.special_tokens if tok.specials_in_text else ()
        pair = _pair_fn(tok)
        self._histories: dict[str, _History] = {}
        self._order: list[tuple[str, bool]] = []  # pre-tokens and special tokens, in order
        for piece, special in split_on_specials(text, matched):
            if special:
                self._order.append((piece, True))
                continue
            for pretoken in tok.pretoken_regex.findall(piece):
                self._order.append((pretoken, False))
                if pretoken not in self._histories:
                    self._histories[pretoken] = _history(tok, pair, utf8(pretoken))
        steps: set[int] = set()
        for history in self._histories.values():
            steps.update(history.steps())
        #: The steps where the text's tokens change, in order.
        self.steps: tuple[int, ...] = tuple(sorted(steps))

    def _check(self, k: int) -> int:
        return _check_step(self.tok, k)

    def pretoken_ids(self, pretoken: str, k: int) -> tuple[int, ...]:
        """The IDs of one of the text's pre-tokens at step ``k``."""
        history = self._histories.get(pretoken)
        if history is None:  # not from this text: work it out (same rules)
            history = _history(self.tok, _pair_fn(self.tok), utf8(pretoken))
        return history.at(self._check(k))

    def ids(self, k: int) -> list[int]:
        """The text's IDs at step ``k``."""
        self._check(k)
        out: list[int] = []
        specials = self.tok.special_token_ids
        for piece, special in self._order:
            if special:
                out.append(specials[piece])
            else:
                out.extend(self._histories[piece].at(k))
        return out

    def details(self, k: int) -> EncodingDetails:
        """:func:`core.engine.details.encode_details` of the text at step ``k`` (chips, spans)."""
        self._check(k)
        return encode_details(self.tok, self.text, pretoken_ids=lambda p: self.pretoken_ids(p, k))

    def merged_at(self, k: int) -> list[int]:
        """Indexes (in ``details(k).tokens``) of the tokens step ``k`` made: those not in
        the text at step ``k - 1`` (same place, same ID). ``[]`` at step 0."""
        if self._check(k) == 0:
            return []
        out: list[int] = []
        index = 0
        for piece, special in self._order:
            if special:
                index += 1
                continue
            history = self._histories[piece]
            now = history.at(k)
            before = history.at(k - 1)
            if now != before:
                old = set(_placed(before, self.tok.vocab))
                out.extend(index + i for i, p in enumerate(_placed(now, self.tok.vocab))
                           if p not in old)
            index += len(now)
        return out


def _placed(ids: Sequence[int], vocab: Mapping[int, bytes]) -> list[tuple[int, int]]:
    """(byte offset, ID) of each token of a pre-token.

    >>> _placed([256, 99], {256: b"ab", 99: b"c"})
    [(0, 256), (2, 99)]
    """
    out, pos = [], 0
    for i in ids:
        out.append((pos, i))
        pos += len(vocab[i])
    return out


# ----------------------------------------------------------------------------------------
# A long text's token count at every step, from its pre-token counts
# ----------------------------------------------------------------------------------------


class StepCounts:
    """How many tokens a text makes at every step ``k``, fed piece by piece (pieces cut
    where no pre-token crosses, as :func:`core.explain.evaluate.safe_pieces` cuts them). Memory: one
    count per distinct pre-token, as training's counting phase.

    Each merge applied inside a pre-token joins two tokens into one, so a pre-token's count
    drops by one at the step of each of its merges (a pre-token that becomes one whole token,
    ``ignore_merges``, drops to 1 at that step): the counts at all steps come from one BPE
    run per distinct pre-token and a running sum.

    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"}
    >>> counts = StepCounts(Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")]))
    >>> counts.add("abcab"); counts.counts()
    [5, 3, 2]
    """

    def __init__(self, tok: Tokenizer) -> None:
        if not tok.capabilities.replay:  # asked (core.interface), not told by its type
            raise PlaygroundError(replay_problem(tok) or "not a byte-level BPE tokenizer")
        self.tok = tok
        self._matched = tok.special_tokens if tok.specials_in_text else ()
        self._pretokens: Counter[str] = Counter()
        self._specials = 0

    def add(self, text: str) -> None:
        """Count the pre-tokens (and special tokens) of one more piece of the text."""
        findall = self.tok.pretoken_regex.findall
        for piece, special in split_on_specials(text, self._matched):
            if special:
                self._specials += 1
            else:
                self._pretokens.update(findall(piece))

    def counts(self) -> list[int]:
        """The text's token count at every step, ``0`` to ``len(tok.merges)``."""
        n = len(self.tok.merges)
        delta = [0] * (n + 2)
        delta[0] = self._specials
        pair = _pair_fn(self.tok)
        for pretoken, count in self._pretokens.items():
            history = _history(self.tok, pair, utf8(pretoken))
            if history.monotone:
                _monotone_deltas(history, count, delta)
                continue
            delta[0] += count * len(history.at(0))
            for k in history.steps():
                delta[k] += count * (len(history.at(k)) - len(history.at(k - 1)))
        out, total = [], 0
        for k in range(n + 1):
            total += delta[k]
            out.append(total)
        return out


def _monotone_deltas(history: _History, count: int, delta: list[int]) -> None:
    """Add one pre-token's changes (times ``count``) to ``delta``: its bytes at step 0,
    minus one at each merge's step, and the drop to one whole token (``history.whole``)."""
    length = len(history.byte_ids)
    delta[0] += count * length
    whole = history.whole[0] if history.whole is not None else None
    for step, *_ in history.runs[0]:
        if whole is not None and step >= whole:
            break  # events come in non-decreasing steps
        delta[step] -= count
        length -= 1
    if whole is not None and length != 1:
        delta[whole] -= count * (length - 1)

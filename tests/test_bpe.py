"""core.engine.bpe: the one merge loop. Its list path and heap path against a naive BPE and each
other, on random tables of both kinds (merge lists over IDs, ranks keyed by the joined
string), including the order in which the table is read (SentencePiece's rev_merge needs it).
The tokenizers that call it are checked against their oracles elsewhere."""

from __future__ import annotations

import math
import operator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine import bpe
from core.engine.bpe import NO_MERGE, merge, merge_steps


def naive(parts: list[Any], rank_of: Any, join: Any) -> list[Any]:
    """Recompute every pair's rank after each join; take the lowest, leftmost on a tie."""
    parts = list(parts)
    while len(parts) > 1:
        ranks = [rank_of(a, b) for a, b in zip(parts, parts[1:])]
        best = min(ranks)
        if best == NO_MERGE:
            break
        i = ranks.index(best)
        parts[i : i + 2] = [join(parts[i], parts[i + 1], best)]
    return parts


class Noting(dict):  # type: ignore[type-arg]
    """A rank table that notes every key it is asked about, in order."""

    def __init__(self, table: dict[Any, Any]) -> None:
        super().__init__(table)
        self.asked: list[Any] = []

    def get(self, key: Any, default: Any = None) -> Any:
        self.asked.append(key)
        return super().get(key, default)


def all_paths(parts: list[Any], table: dict[Any, Any], **kwargs: Any) -> list[Any]:
    """merge() by each path: the list path and the heap path, with a log and spans; and with
    neither (for a merge list, the fast path). The same parts, joins, spans and reads."""
    runs = []
    for heap in (False, True):
        noting, log = Noting(table), []
        spans = [(k, k + 1) for k in range(len(parts))]
        got = merge(list(parts), noting, log=log, spans=spans, heap=heap, **kwargs)
        runs.append((got, log, spans, noting.asked))
    assert runs[0] == runs[1]
    got, log, spans, asked = runs[0]
    noting = Noting(table)
    assert merge(list(parts), noting, **kwargs) == got
    assert noting.asked == asked
    # the spans tile the parts; a joined part spans as many starting parts as it joined
    assert [s for s, _ in spans] == [e for _, e in [(0, 0)] + spans][: len(spans)]
    assert len(spans) == len(got) and (not spans or spans[-1][1] == len(parts))
    assert len(parts) - len(got) == len(log)
    return got


# ─── worked examples ────────────────────────────────────────────────────────────────────


def test_wikipedia_example_by_merge_list():
    # "aaabdaaabac": Z=aa, Y=ab, X=ZY (Wikipedia's BPE example), as IDs 0..3 and 4..6
    a, b, c, d, Z, Y, X = range(7)
    ranks = {(a, a): 0, (a, b): 1, (Z, Y): 2}
    made = [Z, Y, X]
    ids = [a, a, a, b, d, a, a, a, b, a, c]
    assert merge(ids, ranks, made) == [X, d, X, a, c]  # "XdXac"


def test_ties_go_to_the_leftmost_pair():
    assert merge(list("aaa"), {"aa": 0}, key=operator.add) == ["aa", "a"]
    assert merge(list("aaaa"), {"aa": 0}, key=operator.add) == ["aa", "aa"]
    assert merge([1, 1, 1], {(1, 1): 0}, [9]) == [9, 1]


def test_lowest_rank_first_not_leftmost_first():
    # b+c ranks before a+b, so a is left alone although (a, b) comes first
    assert merge(list("abc"), {"ab": 1, "bc": 0}, key=operator.add) == ["a", "bc"]


def test_no_parts_and_one_part():
    assert merge([], {}, key=operator.add) == []
    assert merge([b"x"], {}, key=operator.add) == [b"x"]


def test_the_log_names_slots_and_ranks():
    log: list[tuple[int, int, int]] = []
    merge(list(b"abcd"), {(98, 99): 0, (97, 256): 1}, {0: 256, 1: 257}, log=log)
    assert log == [(1, 2, 0), (0, 1, 1)]  # b+c at slots 1,2; then a + bc at slots 0,1


def test_heap_path_orders_ranks_the_list_path_stops_at():
    # a piece scored -inf has rank +inf: only the heap path joins it (SentencePiece's case)
    table = {"ab": math.inf}
    assert merge(list("abc"), table, key=operator.add, heap=True) == ["ab", "c"]
    # the documented limit: the list path stops at the first NO_MERGE, below inf
    assert merge(list("abc"), table, key=operator.add) == ["a", "b", "c"]


def test_long_input_takes_the_heap_and_agrees(monkeypatch: pytest.MonkeyPatch):
    ranks = {"ab": 0, "ba": 1, "abab": 2, "aa": 3}
    word = list("abbaababaabab" * 40)
    assert len(word) > bpe.LONG_WORD
    by_heap = merge(list(word), ranks, key=operator.add)
    monkeypatch.setattr(bpe, "LONG_WORD", len(word))
    assert merge(list(word), ranks, key=operator.add) == by_heap
    assert by_heap == naive(word, lambda a, b: ranks.get(a + b, NO_MERGE), lambda a, b, r: a + b)


def test_merge_steps_replays_the_joins():
    ranks = {(1, 2): 0, (3, 3): 1}
    made = [3, 4]
    steps = merge_steps([1, 2, 1, 2], ranks, made)
    assert steps == [
        (0, 0, [1, 2, 1, 2], [3, 1, 2]),
        (1, 0, [3, 1, 2], [3, 3]),
        (0, 1, [3, 3], [4]),
    ]
    assert steps[-1][3] == merge([1, 2, 1, 2], ranks, made)


# ─── properties ─────────────────────────────────────────────────────────────────────────

ALPHABET = "abc"
WORDS = st.text(ALPHABET, max_size=40)


@st.composite
def concat_tables(draw: st.DrawFn) -> dict[str, int]:
    """Ranks keyed by joined strings; ties included (ranks drawn from a small range)."""
    keys = draw(st.lists(st.text(ALPHABET, min_size=2, max_size=5), max_size=20, unique=True))
    return {k: draw(st.integers(0, 10)) for k in keys}


@st.composite
def merge_lists(draw: st.DrawFn) -> tuple[dict[tuple[int, int], int], list[int]]:
    """A merge list over IDs 0-2 (bytes a, b, c) making IDs 3 and up, in any order (a merge
    may use a token made by a later one, as a loaded file can)."""
    n = draw(st.integers(0, 12))
    ranks: dict[tuple[int, int], int] = {}
    made = []
    for rank in range(n):
        pair = (draw(st.integers(0, 2 + n)), draw(st.integers(0, 2 + n)))
        ranks.setdefault(pair, rank)
        made.append(3 + rank)
    return ranks, made


@settings(max_examples=300, deadline=None)
@given(word=WORDS, table=concat_tables())
def test_concat_tables_agree_with_naive(word: str, table: dict[str, int]):
    got = all_paths(list(word), table, key=operator.add)
    assert got == naive(list(word), lambda a, b: table.get(a + b, NO_MERGE), lambda a, b, r: a + b)
    assert "".join(got) == word


@settings(max_examples=300, deadline=None)
@given(word=WORDS, table=merge_lists())
def test_merge_lists_agree_with_naive(word: str, table: tuple[dict[Any, int], list[int]]):
    ranks, made = table
    ids = ["abc".index(ch) for ch in word]
    got = all_paths(ids, ranks, made=made)
    assert got == naive(ids, lambda a, b: ranks.get((a, b), NO_MERGE), lambda a, b, r: made[r])


@settings(max_examples=200, deadline=None)
@given(word=WORDS, table=concat_tables())
def test_merge_steps_end_where_merge_ends(word: str, table: dict[str, int]):
    steps = merge_steps(list(word), table, key=operator.add)
    start = steps[0][2] if steps else list(word)
    assert start == list(word)
    for (_, _, _, after), (_, _, before, _) in zip(steps, steps[1:]):
        assert after == before
    end = steps[-1][3] if steps else list(word)
    assert end == merge(list(word), table, key=operator.add)

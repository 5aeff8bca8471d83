"""The incremental merge loop (core.train.merge) against the naive reference trainer, with and
without the floor that leaves rare pairs unindexed."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from core import train_bpe
from core.train.count import count_pretokens
from core.train.merge import MergeState, order_key
from tests.test_train import naive_train


def _merges(state: MergeState, limit: int = 10_000, *, floor_at: int = -1, floor: int = 0) -> list:
    """Run ``state`` to the end (or ``limit``); optionally force ``state.floor`` after merge
    ``floor_at``, as if the guess had been that."""
    out = []
    while len(out) < limit:
        if len(out) == floor_at:
            state.floor = floor
        step = state.merge_best()
        if step is None:
            break
        a, b, count = step
        out.append((state.tokens[a], state.tokens[b], count))
    return out


_words = st.lists(st.sampled_from(["ab", "ba", "aab", "abab", "aaaa", "bca", "é", "éa", "🙂b", "c"]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    counts=st.dictionaries(_words.map("".join), st.integers(1, 40), max_size=12),
    floor_at=st.integers(0, 12),
    floor=st.integers(1, 80),
)
def test_a_floor_never_changes_the_merges(counts, floor_at, floor):
    # a floor too high (the best indexed pair falls below it) rebuilds the index; one that
    # holds skips rare pairs; either way the merges are those of the full index
    full = _merges(MergeState(counts, target=0))
    assert _merges(MergeState(counts, target=0), floor_at=floor_at, floor=floor) == full


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(max_size=40), max_size=4), extra=st.integers(0, 30))
def test_arbitrary_unicode_matches_the_naive_reference(texts, extra):
    # any code point, so ties between multi-byte tokens are broken on raw bytes, not on chars
    assert train_bpe(texts, 256 + extra) == naive_train(texts, 256 + extra)


def test_a_forced_floor_above_every_count_rebuilds_and_goes_on():
    counts = {"abcabd": 3, "abd": 2, "cd": 1}
    state = MergeState(counts, target=0)
    state.floor = 100
    assert _merges(state) == _merges(MergeState(counts, target=0))
    assert state.floor == 0  # rebuilt, every pair indexed again


def test_the_automatic_floor_on_a_corpus_of_1000_merges():
    rng = random.Random(7)
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    text = " ".join(rng.choice(vocab) for _ in range(40_000))
    counts, _ = count_pretokens([text])
    guessed = MergeState(counts, target=1200)
    out = _merges(guessed, 1200)
    assert len(out) == 1200 and guessed.floor > 0  # the guess was made and held
    assert out == _merges(MergeState(counts, target=0), 1200)


def test_a_wrong_automatic_guess_is_corrected():
    # after merge 100 the counts are still high, then every later pair occurs once: the
    # guessed floor (at least 1) is too high for the tail and the index is rebuilt
    counts = Counter({chr(0x100 + i) * 2: 10_000 for i in range(100)})
    rng = random.Random(3)
    for _ in range(2000):
        counts["".join(rng.choice("qwertyuiopasdfghjklzxcvbnm") for _ in range(8))] += 1
    guessed = MergeState(counts, target=1000)
    out = _merges(guessed, 1000)
    assert out == _merges(MergeState(counts, target=0), 1000)
    assert guessed.floor == 0


def test_order_key_concatenations_order_pairs_like_tuples():
    tokens = [b"", b"a", b"ab", b"b", b"\x00", b"\xff", b"a\xff", b"ba"]
    tokens = [t for t in tokens if t]
    pairs = [(x, y) for x in tokens for y in tokens]
    assert sorted(pairs, key=lambda p: order_key(p[0]) + order_key(p[1])) == sorted(pairs, reverse=True)

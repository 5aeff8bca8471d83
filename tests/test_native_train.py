"""The C merge loop (tokplay_native.train) against the pure one (core.train.merge.MergeState):
the same merges in the same order, with the same counts and the same tokens, on any input."""

from __future__ import annotations

import gc
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.native
from core import BPETrainer, train_bpe
from core.train.builtin_corpus import builtin_corpus_documents
from core.train.count import count_pretokens
from core.train.count_table import ROW, PureCounts
from core.train.merge import MergeState, merge_state

native_train = core.native.train  # built by `pip install -e .` (setup.py)


def _run(state, limit: int = 100_000) -> list[tuple[int, int, int, bytes]]:
    """Every merge until none is left (or ``limit``): IDs, count and the new token."""
    out = []
    while len(out) < limit:
        step = state.merge_best()
        if step is None:
            break
        out.append((*step, state.tokens[-1]))
    return out


def _both(counts, limit: int = 100_000) -> None:
    c_state, pure = native_train.MergeState(counts), MergeState(counts, target=0)
    assert _run(c_state, limit) == _run(pure, limit)
    assert c_state.tokens == pure.tokens


# Few distinct pieces, so that words share pairs and counts tie; any code point too, for
# multi-byte UTF-8 and ties between raw bytes.
_pieces = st.sampled_from(["a", "b", "ab", "aa", " ", "é", "🙂", "\x00", "\x7f", "ÿ", "日"])
_words = st.one_of(st.lists(_pieces, min_size=0, max_size=12).map("".join), st.text(max_size=12))


@settings(max_examples=300, deadline=None)
@given(counts=st.dictionaries(_words, st.integers(1, 6), max_size=25))
def test_same_merges_counts_and_tokens_as_the_pure_loop(counts):
    # run to the end: the target is beyond the possible merges
    _both(counts)


@settings(max_examples=100, deadline=None)
@given(counts=st.dictionaries(_words, st.integers(1, 2**40), max_size=12))
def test_large_counts(counts):
    _both(counts)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(max_size=60), max_size=4), extra=st.integers(0, 400))
def test_training_gives_the_pure_vocab_and_merges_even_past_the_possible_merges(texts, extra):
    with pytest.MonkeyPatch.context() as mp:  # hypothesis runs many examples per fixture
        c_trainer = BPETrainer(texts, 257 + extra, ["<|s|>"])
        c_result = c_trainer.run()
        mp.setattr(core.native, "train", None)
        pure_trainer = BPETrainer(texts, 257 + extra, ["<|s|>"])
        assert c_result == pure_trainer.run()
        assert c_trainer.stop_reason == pure_trainer.stop_reason


def test_real_text_at_vocab_2000_with_the_trainer(monkeypatch):
    # 1,743 merges: the pure loop guesses its floor (target >= 1000), the C one needs none
    docs = builtin_corpus_documents()
    native = list(BPETrainer(docs, 2000, ["<|endoftext|>"]))
    monkeypatch.setattr(core.native, "train", None)
    pure = list(BPETrainer(docs, 2000, ["<|endoftext|>"]))
    assert len(native) == 2000 - 257
    assert [(e.pair, e.count, e.token_id) for e in native] == [(e.pair, e.count, e.token_id) for e in pure]


def test_real_text_states_directly():
    counts, _ = count_pretokens(builtin_corpus_documents()[:40])
    _both(counts, 3000)


def test_training_picks_the_c_loop_and_the_pure_one_when_told(monkeypatch):
    assert type(merge_state({"ab": 1}, target=5)) is native_train.MergeState
    monkeypatch.setattr(core.native, "train", None)  # read at construction time
    assert type(merge_state({"ab": 1}, target=5)) is MergeState
    assert train_bpe(["aaabdaaabac"], 259)[1] == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]


@pytest.mark.parametrize(
    ("counts", "error"),
    [
        ({"ab": 0}, ValueError),
        ({"ab": -3}, ValueError),
        ({"ab": 2**62 + 1}, ValueError),
        ({"ab": 2**80}, ValueError),
        ({"abc": 2**62, "abd": 2**62}, OverflowError),  # the pair counts would not fit 64 bits
        ({"ab": 1.5}, TypeError),
    ],
)
def test_input_outside_what_c_takes_raises_and_training_runs_the_pure_loop(counts, error):
    with pytest.raises(error):
        native_train.MergeState(counts)
    state = merge_state(counts, target=3)
    assert type(state) is MergeState


def test_big_counts_within_range_give_the_pure_merges():
    counts = {"ab": 2**61, "ba": 2**61 - 1, "bd": 5, "cab": 3}  # adds up to just over 2**62
    _both(counts)


def test_a_mapping_that_is_not_a_dict_is_copied():
    from types import MappingProxyType

    counts = MappingProxyType({"low": 5, "lower": 2})
    state = merge_state(counts, target=3)
    assert type(state) is native_train.MergeState
    assert _run(state) == _run(MergeState(dict(counts), target=0))


def test_text_that_cannot_be_utf8_fails_like_the_pure_loop():
    with pytest.raises(UnicodeEncodeError):
        native_train.MergeState({"a\ud800": 2})
    with pytest.raises(UnicodeEncodeError):
        merge_state({"a\ud800": 2}, target=3)


def test_changing_the_tokens_list_from_python_changes_no_merge():
    counts = {"abab": 3, "ab": 2, "ba": 1}
    state = native_train.MergeState(counts)
    state.tokens.clear()  # a caller's mistake: the state keeps its own tokens
    state.tokens.append("not bytes")
    assert [s[:3] for s in _run(state)] == [s[:3] for s in _run(MergeState(counts, target=0))]


def test_no_words_no_merges_and_single_bytes_are_skipped():
    assert native_train.MergeState({}).merge_best() is None
    assert native_train.MergeState({"a": 9, "": 1}).merge_best() is None
    assert native_train.MergeState({"é": 2}).merge_best() == (0xC3, 0xA9, 2)  # two bytes


def test_a_cycle_through_the_tokens_list_is_collected():
    state = native_train.MergeState({"ab": 2})
    assert gc.is_tracked(state) and gc.get_referents(state) == [state.tokens]  # tp_traverse
    state.tokens.append(state)
    del state
    assert gc.collect() >= 2  # the state and its list: the list's own clear breaks the cycle


def test_bad_arguments_are_errors():
    with pytest.raises(TypeError):
        native_train.MergeState(["ab"])
    with pytest.raises(TypeError, match="must map str to int"):
        native_train.MergeState({b"ab": 1})
    with pytest.raises(TypeError):
        native_train.MergeState({"ab": 1}).merge_best(3)
    with pytest.raises(AttributeError):
        native_train.MergeState({"ab": 1}).tokens = []


@settings(max_examples=200, deadline=None)
@given(counts=st.dictionaries(_words, st.integers(1, 6), max_size=25))
def test_counts_packed_by_the_counting_table_merge_as_the_dict(counts):
    # what training hands over: the C counting table's packed bytes, not a dict of str
    table = core.native.count.PretokenCounts()
    for word, n in counts.items():
        table.update([word] * n)
    assert table.packed() == PureCounts(None, Counter(counts)).packed()  # the twins pack alike
    assert _run(native_train.MergeState(table.packed())) == _run(MergeState(counts, target=0))
    assert _run(merge_state(table, target=0)) == _run(MergeState(counts, target=0))


def test_packed_counts_that_are_not_whole_or_not_utf8_are_refused_and_training_says_why():
    row = ROW.pack(3, 2)
    for table, arena, why in [(row[:-1], b"ab", "not whole rows"), (row, b"a", "runs past the arena"),
                              (ROW.pack(0, 2), b"ab", "outside 1 .. 2"), (row, "ab", "bytes-like")]:
        with pytest.raises((ValueError, TypeError), match=why):
            native_train.MergeState((table, arena))
    table = core.native.count.PretokenCounts()
    table.update(["a\ud800"] * 2)
    with pytest.raises(ValueError, match="lone surrogate"):
        native_train.MergeState(table.packed())
    with pytest.raises(UnicodeEncodeError):  # as from the dict: the pure loop says why
        merge_state(table, target=3)
    with pytest.raises(UnicodeEncodeError):
        train_bpe(["a\ud800 a\ud800"], 260)

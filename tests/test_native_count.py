"""The C pre-token counts (tokplay_native.count) against the pure twin (core.train.count_table.PureCounts):
GPT-2's pre-tokens of ASCII text cut as its stdlib `re` twin cuts them, the same counts after
adding lists, merging, pickling and moving out, and training's counts and merges the same with
and without it."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.native
from core import BPETrainer, train_bpe
from core.train.count import count_pretokens, count_table_in_steps
from core.train.count_table import PureCounts, new_counts
from core.engine.pretokenize import ascii_pattern

native_count = core.native.count  # built by `pip install -e .` (setup.py)
GPT2_ASCII = ascii_pattern("gpt2")

# Contractions and their near misses, every whitespace kind (and \x1c, which `re`'s \s would
# take but GPT-2's \s does not), letters, digits and punctuation.
_ascii = st.lists(
    st.one_of(st.sampled_from(["'s", "'ll", "'ve", "'re", "'d", "'m", "'t", "'l", "'v", "''", " '", "'"]),
              st.text(alphabet="aZ09 \t\n\x0b\x0c\r\x1c\x00!.-'sltvred", max_size=8)),
    max_size=20).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=_ascii)
def test_ascii_text_is_cut_as_the_re_twin_cuts_it(text):
    counts = native_count.PretokenCounts()
    counts.add_ascii(text)
    assert counts.counter() == Counter(GPT2_ASCII.findall(text))


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(_ascii, max_size=6), words=st.lists(st.text(max_size=5), max_size=10))
def test_lists_merges_and_pickles_count_as_the_pure_twin(texts, words):
    c, pure = native_count.PretokenCounts(), PureCounts(GPT2_ASCII)
    for counts in (c, pure):
        for text in texts:
            counts.add_ascii(text)
        counts.update(words)
    assert len(c) == len(pure) and c.total() == pure.total()
    c2, pure2 = pickle.loads(pickle.dumps(c)), pickle.loads(pickle.dumps(pure))
    c2.update(c)
    pure2.update(pure)
    assert c2.counter() == pure2.counter()
    assert c.counter() == pure.counter()
    assert len(c) == 0 and c.counter() == Counter()  # moved out: empty


def test_many_distinct_pre_tokens_overflow_the_recent_table_exactly():
    # more distinct pre-tokens than the small table holds (it spills into the big one), and
    # the big one rehashed many times over
    text = " ".join(f"w{i}" for i in range(200_000)) + " w7 w7"
    counts = native_count.PretokenCounts()
    counts.add_ascii(text)
    assert counts.counter() == Counter(GPT2_ASCII.findall(text))


def test_bad_input_is_refused():
    counts = native_count.PretokenCounts()
    with pytest.raises(TypeError, match="ASCII str"):
        counts.add_ascii("café")
    with pytest.raises(TypeError, match="list of str"):
        counts.update([b"x"])
    with pytest.raises(TypeError, match="list of str, a dict of counts or a PretokenCounts"):
        counts.update(("a",))


def test_counting_a_file_uses_the_c_counts_and_equals_the_pure_path(tmp_path, monkeypatch):
    text = "<|endoftext|>".join(f"doc {i}: naïve café, it's {i * 7} words\n\n  end" for i in range(3000))
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    assert type(new_counts("gpt2")) is native_count.PretokenCounts
    fast = {w: count_pretokens(path, ["<|endoftext|>"], num_workers=w, chunk_size=4096)[0] for w in (1, 2)}
    merges = train_bpe(path, 400, ["<|endoftext|>"], num_workers=2)[1]
    monkeypatch.setattr(core.native, "count", None)  # in this process only: no workers below
    assert type(new_counts("gpt2")) is PureCounts
    pure = count_pretokens(path, ["<|endoftext|>"], chunk_size=4096)[0]
    assert fast[1] == fast[2] == pure == count_pretokens(text.split("<|endoftext|>"))[0]
    assert merges == train_bpe(path, 400, ["<|endoftext|>"])[1]


def test_a_lone_surrogate_in_a_text_counts_as_in_the_pure_twin():
    c, pure = native_count.PretokenCounts(), PureCounts(GPT2_ASCII)
    for counts in (c, pure):
        counts.update(["a\ud800", "\udfff", "a\ud800"])
    assert c.counter() == pure.counter() == Counter({"a\ud800": 2, "\udfff": 1})


def test_a_counter_adds_its_counts_as_in_the_pure_twin():
    # what a Dask task sends back: a Counter, added as its counts (not as a list of keys)
    c, pure = native_count.PretokenCounts(), PureCounts(GPT2_ASCII)
    for counts in (c, pure):
        counts.add_ascii("ab ab")
        counts.update(Counter({" ab": 2, "a\ud800": 3, "é": 1}))
    assert c.counter() == pure.counter() == Counter({" ab": 3, "ab": 1, "a\ud800": 3, "é": 1})
    for bad in ({"ab": 0}, {"ab": 2**63}, {"ab": 1.5}):
        with pytest.raises(ValueError, match="counts from 1 to 2"):
            c.update(bad)
    with pytest.raises(TypeError, match="list of str or a dict of str"):
        c.update({b"ab": 1})


def test_counting_step_by_step_fills_the_c_table_and_trains_as_the_pure_twin(tmp_path, monkeypatch):
    # the Train page's worker counts a step at a time (between steps: progress and Stop)
    path = tmp_path / "c.txt"
    path.write_text("low lower lowest é<|endoftext|>newer wider" * 300)
    table = new_counts("gpt2")
    assert type(table) is native_count.PretokenCounts
    steps = count_table_in_steps(str(path), ["<|endoftext|>"], chunk_size=2048, counts=table)
    done = [next(steps)]
    assert 0 < len(table) and done[0][0] < done[0][1]  # counted into it, part of the file
    trainer = BPETrainer(str(path), 300, ["<|endoftext|>"])
    progress = list(trainer.count_steps(chunk_size=2048))
    assert len(progress) > 1 and trainer.distinct_so_far == len(count_pretokens(str(path), ["<|endoftext|>"])[0]) == 7
    merges = trainer.run()[1]
    monkeypatch.setattr(core.native, "count", None)
    pure = BPETrainer(str(path), 300, ["<|endoftext|>"])
    list(pure.count_steps(chunk_size=2048))
    assert pure.run()[1] == merges == train_bpe(str(path), 300, ["<|endoftext|>"])[1]

"""BPE training: exact merges vs hand-checked examples and an independent naive reference."""

from __future__ import annotations

import pickle
import threading
from collections import Counter, defaultdict

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import core.native
from core import BPETrainer, MergeEvent, train_bpe
from core.errors import CorpusError, PlaygroundError, TrainingConfigError
from core.engine.pretokenize import PATTERNS, resolve_pattern, split_on_specials


@pytest.fixture(params=["native", "pure"])
def merge_loop(request, monkeypatch):
    """Run a test on the C merge loop (tokplay_native.train, when built) and on the pure one."""
    if request.param == "pure":
        monkeypatch.setattr(core.native, "train", None)
    return request.param


# ---------------------------------------------------------------------------------------
# Independent naive reference: recount every pair before every merge (CS336 semantics).
# ---------------------------------------------------------------------------------------


def naive_train(texts, vocab_size, specials=(), pattern="gpt2"):
    pat = regex.compile(resolve_pattern(pattern))
    words: Counter[tuple[bytes, ...]] = Counter()
    for text in texts:
        for piece, is_special in split_on_specials(text, specials):
            if not is_special:
                for tok in pat.findall(piece):
                    words[tuple(bytes([c]) for c in tok.encode("utf-8"))] += 1
    merges = []
    while 256 + len(specials) + len(merges) < vocab_size:
        counts: dict[tuple[bytes, bytes], int] = defaultdict(int)
        for w, f in words.items():
            for p in zip(w, w[1:]):
                counts[p] += f
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], p))
        merges.append(best)
        merged: Counter[tuple[bytes, ...]] = Counter()
        for w, f in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += f
        words = merged
    vocab = {i: s.encode("utf-8") for i, s in enumerate(specials)}
    vocab.update({len(specials) + i: bytes([i]) for i in range(256)})
    for j, (a, b) in enumerate(merges):
        vocab[len(specials) + 256 + j] = a + b
    return vocab, merges


def check_against_naive(texts, vocab_size, specials=(), pattern="gpt2"):
    vocab, merges = train_bpe(texts, vocab_size, specials, pattern=pattern)
    ref_vocab, ref_merges = naive_train(texts, vocab_size, specials, pattern)
    assert merges == ref_merges
    assert vocab == ref_vocab
    return merges


# ---------------------------------------------------------------------------------------
# Hand-checked examples
# ---------------------------------------------------------------------------------------

HANDOUT = "low low low low low lower lower widest widest widest newest newest newest newest newest newest"


@pytest.mark.usefixtures("merge_loop")
def test_wikipedia_example_counts_every_position_and_breaks_ties_by_bytes():
    # (a, a) occurs 4 times (overlapping positions count); then (aa, a) and (a, b) tie at 2
    # and b"aa" > b"a"; at the end all pairs count 1 and (d, aaab) is the greatest.
    merges = check_against_naive(["aaabdaaabac"], 260)
    assert merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b"), (b"d", b"aaab")]


@pytest.mark.usefixtures("merge_loop")
def test_cs336_handout_example_with_whitespace_pretokenization():
    # The handout's expected merges (pre-tokens split on whitespace only).
    merges = check_against_naive([HANDOUT], 256 + 6, pattern=r"\S+")
    expected = ["s t", "e st", "o w", "l ow", "w est", "n e"]
    assert [f"{a.decode()} {b.decode()}" for a, b in merges] == expected


@pytest.mark.usefixtures("merge_loop")
def test_cs336_handout_example_with_gpt2_pattern():
    # With GPT-2 pre-tokens the leading space is part of the word (" low" x4, "low" x1, ...),
    # which changes the merges after the sixth: worked out by hand.
    trainer = BPETrainer([HANDOUT], 300)
    vocab, merges = trainer.run()
    assert merges == [
        (b"s", b"t"), (b"e", b"st"), (b"o", b"w"), (b"l", b"ow"), (b"w", b"est"), (b"n", b"e"),
        (b"ne", b"west"), (b" ", b"newest"), (b" ", b"low"), (b"w", b"i"), (b"wi", b"d"),
        (b"wid", b"est"), (b" ", b"widest"), (b"e", b"r"), (b" low", b"er"),
    ]  # fmt: skip
    assert trainer.stop_reason == "no pairs left"
    assert len(vocab) == 271
    assert any("vocab size 271" in m and "300" in m for m in trainer.messages)
    assert check_against_naive([HANDOUT], 300) == merges


@pytest.mark.usefixtures("merge_loop")
def test_ties_go_to_the_lexicographically_greater_pair():
    # every pair occurs once: (c, d) > (a, b) > (" ", a)
    assert train_bpe(["cd ab"], 257)[1] == [(b"c", b"d")]
    # pairs compare as (left, right), not as concatenations: after (a, b), (ab, c) beats
    # (a, d) because b"ab" > b"a", although b"abc" < b"ad"
    assert check_against_naive(["abc ad ab"], 258) == [(b"a", b"b"), (b"ab", b"c")]


@pytest.mark.usefixtures("merge_loop")
def test_single_repeated_byte_merges_left_to_right_without_overlap():
    assert check_against_naive(["aaaa"], 300) == [(b"a", b"a"), (b"aa", b"aa")]
    assert check_against_naive(["aaaaa"], 300) == [(b"a", b"a"), (b"aa", b"aa"), (b"aaaa", b"a")]


def test_merges_never_cross_pretoken_boundaries():
    trainer = BPETrainer(["a b"], 300)  # pre-tokens "a" and " b": only (" ", b) exists
    assert trainer.run()[1] == [(b" ", b"b")]
    assert trainer.stop_reason == "no pairs left"


@pytest.mark.usefixtures("merge_loop")
def test_special_tokens_are_never_merged_and_come_first():
    vocab, merges = train_bpe(["ab<|eot|>ab<|eot|>"], 300, ["<|eot|>"])
    assert merges == [(b"a", b"b")]
    assert vocab[0] == b"<|eot|>"
    assert vocab[1] == b"\x00" and vocab[256] == b"\xff"
    assert vocab[257] == b"ab"


def test_overlapping_special_tokens_longest_wins():
    specials = ["<|a|>", "<|a|><|b|>"]
    text = "<|a|><|b|>zz<|a|>zz"
    vocab, merges = train_bpe([text], 300, specials)
    assert merges == [(b"z", b"z")]  # "<|b|>" is inside the longer special: no pairs from it
    assert vocab[1] == b"<|a|><|b|>"
    assert check_against_naive([text], 300, specials) == merges


def test_special_token_splits_text_like_a_boundary():
    # without the special, "b<" and "|>" pairs would appear
    merges = check_against_naive(["ab<|s|>ba ab<|s|>ba"], 300, ["<|s|>"])
    assert all(b"<" not in a + b and b"|" not in a + b for a, b in merges)


@pytest.mark.parametrize("pattern", list(PATTERNS))
@pytest.mark.usefixtures("merge_loop")
def test_patterns_match_naive_reference(pattern):
    text = "Hello world! I'm 12345 cats' 3.14 naïve café\n\n  tabs\there — 日本語 don't WE'LL go"
    check_against_naive([text, text.upper()], 320, pattern=pattern)


def test_each_text_of_an_iterable_is_pretokenized_on_its_own():
    # " a" + "b" would merge across if joined; as two texts "b" stays alone
    assert train_bpe([" a", "b", " a"], 300)[1] == [(b" ", b"a")]


# ---------------------------------------------------------------------------------------
# Property tests against the naive reference and on invariants
# ---------------------------------------------------------------------------------------

_pieces = st.sampled_from(list("aab  b\nc'sé!1") + ["<|s|>", "🙂", "\t", "<|", "s|>"])
_texts = st.lists(st.lists(_pieces, max_size=30).map("".join), min_size=0, max_size=4)


@settings(max_examples=60, deadline=None)
@given(texts=_texts, extra=st.integers(0, 40), use_special=st.booleans())
@pytest.mark.usefixtures("merge_loop")
def test_matches_naive_reference(texts, extra, use_special):
    specials = ["<|s|>"] if use_special else []
    check_against_naive(texts, 256 + len(specials) + extra, specials)


@settings(max_examples=40, deadline=None)
@given(texts=_texts, extra=st.integers(0, 40))
@pytest.mark.usefixtures("merge_loop")
def test_invariants(texts, extra):
    specials = ["<|s|>", "<|t|>"]
    vocab_size = 258 + extra
    trainer = BPETrainer(texts, vocab_size, specials)
    vocab, merges = trainer.run()
    assert len(vocab) == 258 + len(merges) <= vocab_size
    if trainer.stop_reason == "reached vocab size":
        assert len(vocab) == vocab_size
    assert sorted(vocab) == list(range(len(vocab)))
    assert len(set(vocab.values())) == len(vocab)  # multi-character specials cannot be learned
    known = {bytes([i]) for i in range(256)}
    for a, b in merges:
        assert a in known and b in known  # parts exist before the merge
        known.add(a + b)


# ---------------------------------------------------------------------------------------
# The step-wise trainer
# ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("merge_loop")
def test_events_describe_each_merge_and_match_train_bpe():
    texts = [HANDOUT, "aaabdaaabac"]
    events = list(BPETrainer(texts, 266, ["<|x|>"]))
    vocab, merges = train_bpe(texts, 266, ["<|x|>"])
    assert [e.pair for e in events] == merges
    assert [e.rank for e in events] == list(range(9))
    for e in events:
        assert e.token_id == 257 + e.rank and vocab[e.token_id] == e.token == e.pair[0] + e.pair[1]
        assert e.vocab_size == e.token_id + 1 and e.count > 0
    assert [e.elapsed for e in events] == sorted(e.elapsed for e in events)
    assert events[0].count == 9  # (s, t): widest x3 + newest x6
    assert pickle.loads(pickle.dumps(events[0])) == events[0]


def test_step_by_step_and_state_so_far():
    trainer = BPETrainer([HANDOUT], 300)
    first = trainer.step()
    assert isinstance(first, MergeEvent) and first.pair == (b"s", b"t")
    assert trainer.merges == [(b"s", b"t")] and trainer.vocab[256] == b"st"
    assert not trainer.done
    assert trainer.corpus_stats["pretokens"] == 16 and trainer.corpus_stats["distinct_pretokens"] == 5
    while trainer.step() is not None:
        pass
    assert trainer.done and trainer.step() is None and len(trainer.merges) == 15


@pytest.mark.usefixtures("merge_loop")
def test_stop_keeps_what_was_learned():
    trainer = BPETrainer([HANDOUT], 300)
    for event in trainer:
        if event.rank == 2:
            trainer.stop()
    assert trainer.stop_reason == "stopped" and len(trainer.merges) == 3
    assert any("Stopped" in m for m in trainer.messages)


def test_pause_blocks_iteration_until_resumed():
    trainer = BPETrainer([HANDOUT], 300)
    it = iter(trainer)
    next(it)
    trainer.pause()
    got = []
    worker = threading.Thread(target=lambda: got.append(next(it)))
    worker.start()
    worker.join(0.3)
    assert worker.is_alive() and got == []  # blocked while paused
    trainer.resume()
    worker.join(5)
    assert not worker.is_alive() and got[0].rank == 1


def test_progress_callback_reports_counting_and_merging():
    calls = []
    train_bpe([HANDOUT], 262, on_progress=lambda *a: calls.append(a))
    phases = {c[0] for c in calls}
    assert phases == {"counting", "merging"}
    assert calls[0] == ("counting", 0, len(HANDOUT))
    assert ("counting", len(HANDOUT), len(HANDOUT)) in calls
    assert calls[-1] == ("merging", 6, 6)


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vocab_size", "specials", "match"),
    [
        (255, [], "vocab_size 255 is too small.*>= 256"),
        (256, ["<|a|>"], "choose vocab_size >= 257"),
        (300, [""], "special token is empty"),
        (300, ["<|a|>", "<|a|>"], "listed twice"),
        (300, "<|a|>", "not one string"),
        ("300", [], "must be an integer"),
        (0x110000 + 2, ["<|a|>"], "too large: at most 1,114,113"),
    ],
)
def test_config_errors_are_clear(vocab_size, specials, match):
    with pytest.raises(TrainingConfigError, match=match):
        train_bpe(["abc"], vocab_size, specials)


def test_empty_corpus_trains_what_it_can_and_says_so():
    trainer = BPETrainer([], 300, ["<|e|>"])
    vocab, merges = trainer.run()
    assert merges == [] and len(vocab) == 257
    assert trainer.stop_reason == "no pairs left"
    assert any("no text" in m for m in trainer.messages)
    assert BPETrainer(["<|e|><|e|>", ""], 300, ["<|e|>"]).run()[1] == []


def test_exact_minimum_vocab_size_makes_no_merges():
    trainer = BPETrainer(["abab"], 256)
    assert trainer.run()[1] == [] and trainer.stop_reason == "reached vocab size"


def test_file_that_is_not_utf8_names_the_offset(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello world " * 10 + b"\xff\xfe tail")
    with pytest.raises(CorpusError, match=r"not valid UTF-8.*byte offset 120.*errors='replace'"):
        train_bpe(path, 300)
    vocab, merges = train_bpe(str(path), 300, errors="replace")
    assert merges and any(b"\xef\xbf\xbd" in v for v in vocab.values())


def test_bad_corpus_types_and_missing_file(tmp_path):
    with pytest.raises(CorpusError, match="not found"):
        train_bpe(tmp_path / "missing.txt", 300)
    with pytest.raises(CorpusError, match="iterable of str"):
        train_bpe([b"bytes"], 300)
    with pytest.raises(PlaygroundError, match="not a valid regex"):
        train_bpe(["x"], 300, pattern="(")


# ---------------------------------------------------------------------------------------
# Files and parallel counting
# ---------------------------------------------------------------------------------------


def _multi_chunk_corpus(specials: bool) -> str:
    import random

    rng = random.Random(7)
    words = ["the", "tokenizer", "naïve", "café", "日本", "don't", "x=1;", "  ", "\n", "12345", "🙂", "ab"]
    docs = []
    for _ in range(220):
        docs.append(" ".join(rng.choice(words) for _ in range(rng.randint(20, 200))))
    return ("<|endoftext|>" if specials else "\n").join(docs)


@pytest.mark.parametrize("specials", [True, False])
@pytest.mark.usefixtures("merge_loop")
def test_parallel_file_training_matches_serial_and_in_memory(tmp_path, specials):
    text = _multi_chunk_corpus(specials)
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    sp = ["<|endoftext|>"] if specials else []
    trainer = BPETrainer(path, 420, sp, num_workers=2)
    par = trainer.run()
    assert trainer.corpus_stats["chunks"] > 1
    assert par == train_bpe(path, 420, sp, num_workers=1)
    assert par == train_bpe([text], 420, sp)
    assert par[1] == naive_train([text], 420, sp)[1]


def test_parallel_counting_does_not_rerun_a_streamlit_page_as_main(tmp_path):
    """Under Streamlit (and after an AppTest) ``__main__`` is a page script; pool workers must
    not run it again (they did, died, and training failed)."""
    import subprocess
    import sys

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(("hello world " * 2000 + "<|endoftext|>" + "bye now " * 2000) * 50)
    page = tmp_path / "page.py"
    page.write_text("raise SystemExit('the page ran inside a counting worker')\n")
    code = f"""
import sys, types
main = types.ModuleType("__main__"); main.__file__ = {str(page)!r}
sys.modules["__main__"] = main
from core.train import train_bpe
vocab, merges = train_bpe({str(corpus)!r}, 300, ["<|endoftext|>"], num_workers=2)
print(len(vocab))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == str(len(train_bpe(str(corpus), 300, ["<|endoftext|>"])[0]))

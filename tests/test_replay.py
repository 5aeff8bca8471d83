"""core.explain.replay: the fast replay equals the reference (a tokenizer built from the first k
merges) at every step, for trained, preset, rank-mode and oddly ordered tokenizers."""

from __future__ import annotations

import random
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import TextReplay, Tokenizer, encode_with_first_merges, load_preset, train_bpe
from core.explain.baselines import WordTokenizer
from core.train.builtin_corpus import BUILTIN_SEPARATOR, builtin_corpus_text
from core.errors import PlaygroundError
from core.explain.replay import merge_at, replay_problem, vocab_at, vocab_sizes

SAMPLE = (
    "Tokenizers turn text into numbers. Byte-level BPE never needs an <|unk|>:\n"
    "def greet(name):\n\treturn f\"Hello, {name}!\"   # 3 spaces\n"
    "Emoji 🧩 and 日本語 split into bytes.<|endoftext|>The end, the  end   ."
)
BYTES = {i: bytes([i]) for i in range(256)}


@lru_cache(maxsize=2)
def trained(vocab_size: int = 700, pattern: str = "gpt2") -> Tokenizer:
    """BPE trained on the start of the built-in corpus (special token first: IDs 0 and up)."""
    vocab, merges = train_bpe([builtin_corpus_text()[:200_000]], vocab_size, [BUILTIN_SEPARATOR],
                              pattern=pattern)
    return Tokenizer(vocab, merges, [BUILTIN_SEPARATOR], pattern=pattern)


def assert_replay_matches(tok: Tokenizer, text: str, steps) -> None:
    replay = TextReplay(tok, text)
    for k in steps:
        expected = encode_with_first_merges(tok, text, k)
        assert replay.ids(k) == expected, f"step {k}"
        assert [t.id for t in replay.details(k).tokens] == expected, f"step {k}"


# ---------------------------------------------------------------------------------------
# Hand-checked


def test_step_zero_is_bytes_and_the_last_step_is_the_tokenizer():
    tok = trained()
    replay = TextReplay(tok, SAMPLE)
    n = len(tok.merges)
    specials = tok.special_token_ids
    zero = replay.ids(0)
    assert all(len(tok.vocab[i]) == 1 or i in specials.values() for i in zero)
    assert tok.decode(zero) == SAMPLE
    assert replay.ids(n) == tok.encode(SAMPLE)
    assert encode_with_first_merges(tok, SAMPLE, n) == tok.encode(SAMPLE)
    assert specials[BUILTIN_SEPARATOR] in zero  # special tokens are whole from step 0


def test_handmade_steps_and_merged_tokens():
    vocab = BYTES | {256: b"ab", 257: b"abc", 258: b" ab"}
    tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c"), (b" ", b"ab")])
    replay = TextReplay(tok, "abc ab")
    assert [replay.ids(k) for k in range(4)] == [
        [97, 98, 99, 32, 97, 98], [256, 99, 32, 256], [257, 32, 256], [257, 258]]
    assert replay.steps == (1, 2, 3)
    assert replay.merged_at(0) == []
    assert replay.merged_at(1) == [0, 3]  # both "ab"
    assert replay.merged_at(2) == [0]  # "abc"
    assert replay.merged_at(3) == [1]  # " ab"


def test_vocab_size_and_merge_at_each_step():
    tok = trained()
    sizes = vocab_sizes(tok)
    n = len(tok.merges)
    assert len(sizes) == n + 1
    assert sizes[0] == 257 and sizes[-1] == len(tok.vocab) == 257 + n
    for k in (0, 1, 2, n // 2, n):
        assert len(vocab_at(tok, k)) == sizes[k] == 257 + k
    assert merge_at(tok, 0) is None
    pair, new_id = merge_at(tok, 1)
    assert pair == tok.merges[0] and tok.vocab[new_id] == pair[0] + pair[1]


def test_bad_steps_and_tokenizers_without_merges_are_refused_clearly():
    tok = trained()
    replay = TextReplay(tok, "x")
    for bad in (-1, len(tok.merges) + 1, 1.5, True, "3"):
        with pytest.raises(PlaygroundError, match="merge count from 0 to"):
            replay.ids(bad)
    assert "no merges" in replay_problem(Tokenizer(BYTES, []))
    assert "byte-level BPE" in replay_problem(WordTokenizer.train("a b c"))
    assert replay_problem(tok) is None
    with pytest.raises(PlaygroundError, match="byte-level BPE"):
        TextReplay(WordTokenizer.train("a b c"), "a")


# ---------------------------------------------------------------------------------------
# Trained tokenizers and presets: exact equality with the reference


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k"])
def test_trained_tokenizer_matches_the_reference_at_many_steps(pattern):
    tok = trained(700, pattern)
    n = len(tok.merges)
    text = SAMPLE + builtin_corpus_text()[300_000:302_000]
    steps = sorted({*range(0, 40), *random.Random(1).sample(range(n + 1), 40), n})
    assert_replay_matches(tok, text, steps)
    # the steps it lists are exactly those where the IDs change
    replay = TextReplay(tok, text)
    changed = [k for k in range(1, n + 1) if replay.ids(k) != replay.ids(k - 1)]
    assert list(replay.steps) == changed


def test_gpt2_matches_the_reference_at_a_few_steps():
    tok = load_preset("gpt2")
    n = len(tok.merges)
    assert_replay_matches(tok, SAMPLE, [0, 1, 2, 10, 300, 5000, 31_000, n - 1, n])
    assert TextReplay(tok, SAMPLE).ids(n) == tok.encode(SAMPLE)


def test_rank_mode_preset_matches_the_reference_at_a_few_steps():
    tok = load_preset("cl100k_base")
    n = len(tok.merges)
    assert_replay_matches(tok, SAMPLE, [0, 1, 500, 60_000, n - 1, n])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=40), data=st.data())
def test_any_unicode_text_matches_the_reference(text, data):
    tok = trained()
    k = data.draw(st.integers(0, len(tok.merges)))
    assert TextReplay(tok, text).ids(k) == encode_with_first_merges(tok, text, k)


# ---------------------------------------------------------------------------------------
# Loaded files: merges listed out of order, rank files, IDs that are not 256 + rank


def test_a_merge_listed_before_the_merge_making_its_part_is_replayed_exactly():
    # (ab, c) comes first but needs "ab" from the second merge: not allowed in steps order
    vocab = BYTES | {256: b"abc", 257: b"ab", 258: b"bc"}
    tok = Tokenizer(vocab, [(b"ab", b"c"), (b"b", b"c"), (b"a", b"b")])
    assert_replay_matches(tok, "abc abcab", range(4))
    # BPE joins a+b (merge 3) and then ab+c (merge 1): at step 1 or 2 neither may happen
    vocab = BYTES | {256: b"abc", 257: b"xy", 258: b"ab"}
    tok = Tokenizer(vocab, [(b"ab", b"c"), (b"x", b"y"), (b"a", b"b")])
    replay = TextReplay(tok, "abc")
    assert [replay.ids(k) for k in range(4)] == [[97, 98, 99]] * 3 + [[256]]
    assert replay.steps == (3,)
    assert_replay_matches(tok, "abc xyab", range(4))


def test_whole_tokens_arrive_at_their_step():
    # rank file: b"xyz" (rank 257) is built by no two lower-ranked tokens, so it is reached
    # only whole, from the step whose vocabulary holds rank 257: after merge 1 (ab, 256)
    tok = Tokenizer(BYTES | {256: b"ab", 257: b"xyz", 258: b"cd"}, None)
    assert tok.merges == [(b"a", b"b"), (b"c", b"d")] and tok.whole_only == [b"xyz"]
    replay = TextReplay(tok, "xyz ab cd")
    assert replay.ids(1) == [257, 32, 256, 32, 99, 100]
    assert_replay_matches(tok, "xyz ab cd", range(3))
    # merge list with ignore_merges: a token no merge makes is there at the last step only
    tok = Tokenizer(BYTES | {256: b"ab", 257: b"abc"}, [(b"a", b"b")], ignore_merges=True)
    assert TextReplay(tok, "abc").ids(0) == [97, 98, 99]
    assert TextReplay(tok, "abc").ids(1) == [257] == tok.encode("abc")
    assert_replay_matches(tok, "abc ab", range(2))


@st.composite
def odd_merges(draw):
    """Random merges over a, b, c in any order (parts made later, repeated results)."""
    tokens = draw(st.lists(st.text("abc", min_size=2, max_size=4), min_size=1, max_size=12,
                           unique=True))
    known = {"a", "b", "c"} | set(tokens)
    merges = []
    for token in tokens:
        cuts = [i for i in range(1, len(token)) if token[:i] in known and token[i:] in known]
        if not cuts:
            continue  # a token no merge makes: only a whole pre-token reaches it
        for i in draw(st.lists(st.sampled_from(cuts), min_size=1, max_size=2, unique=True)):
            merges.append((token[:i].encode(), token[i:].encode()))
    return tokens, draw(st.permutations(merges))


@settings(max_examples=80, deadline=None)
@given(made=odd_merges(), text=st.text("abc ", max_size=20), ignore=st.booleans())
def test_oddly_ordered_merge_lists_match_the_reference_at_every_step(made, text, ignore):
    tokens, merges = made
    vocab = BYTES | {256 + i: t.encode() for i, t in enumerate(tokens)}
    tok = Tokenizer(vocab, merges, ignore_merges=ignore)
    assert_replay_matches(tok, text, range(len(tok.merges) + 1))


@settings(max_examples=80, deadline=None)
@given(tokens=st.lists(st.text("abc", min_size=2, max_size=5), min_size=1, max_size=12,
                       unique=True),
       text=st.text("abc ", max_size=20), specials_first=st.booleans())
def test_rank_files_match_the_reference_at_every_step(tokens, text, specials_first):
    # tokens in random rank order: some are built by no two lower-ranked ones (whole only)
    offset = 3 if specials_first else 0  # Tekken puts its special tokens first
    vocab = {offset + i: t for i, t in BYTES.items()}
    vocab |= {offset + 256 + i: t.encode() for i, t in enumerate(tokens)}
    specials = {f"<s{i}>": i for i in range(offset)}
    tok = Tokenizer(vocab, None, specials)
    assert_replay_matches(tok, text + "<s0>" + text, range(len(tok.merges) + 1))
    assert len(vocab_at(tok, len(tok.merges))) == vocab_sizes(tok)[-1] == len(tok.vocab)


def test_long_pretoken_is_fast_and_exact():
    tok = trained()
    text = "a" * 5000 + " " * 3000
    n = len(tok.merges)
    assert_replay_matches(tok, text, [0, 1, n // 3, n])

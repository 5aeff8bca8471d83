"""Training's speed paths against the plain ones: file chunks counted from their bytes
(core.train.count._count_bytes), counting in a pool whose parent counts too (fork and forkserver),
and the merges they lead to against rustbpe and Hugging Face `tokenizers` up to the first tie
(where the three tie-break rules part)."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
import rustbpe
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, pre_tokenizers, trainers

from core import train_bpe
from core.train import processes
from core.engine.bytes_unicode import from_gpt2_str
from core.train.count import _count_bytes, _count_text, count_pretokens
from core.errors import CorpusError
from core.engine.pretokenize import GPT2_PATTERN, PATTERNS, ascii_pattern, compile_pattern, mixed_byte_regions

SPECIALS = ("<|s|>", "<|é|>")
FRAGMENTS = st.sampled_from([
    " ", "  ", "\n", "\n\n", "\t", " \n", "\r\n", "a", "word", " the", "x=1;", "don't", "'S", "12345",
    "é", "naïve", " café", "日本", "🙂", "\u00a0", "\u3000", "\x85", "\u2028", "<|s|>", "<|s|><|s|>",
    "<|é|>", "ab\n cd", "é\nb", "é b", " ½",
])  # fmt: skip
TEXTS = st.lists(st.one_of(FRAGMENTS, st.text(max_size=6)), max_size=40).map("".join)


def _bytes_counts(text: str, specials: tuple[str, ...], pattern: str, errors: str = "strict") -> Counter[str]:
    counts: Counter[str] = Counter()
    data = text.encode("utf-8", "surrogatepass")
    _count_bytes(data, specials, ascii_pattern(pattern), pattern, counts, offset=0, errors=errors, source="t")
    return counts


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, pattern=st.sampled_from(list(PATTERNS)), specials=st.sampled_from([(), SPECIALS]))
def test_counting_from_bytes_equals_decoding_first(text, pattern, specials):
    assert _bytes_counts(text, specials, pattern) == _count_text(text, specials, pattern)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.one_of(st.binary(max_size=4), FRAGMENTS.map(str.encode)), max_size=30),
       pattern=st.sampled_from(list(PATTERNS)))
def test_bad_bytes_replaced_span_by_span_as_decoding_whole(parts, pattern):
    # bad UTF-8 (cut sequences, stray continuation bytes) only ever sits inside the spans
    data = b"".join(parts)
    counts: Counter[str] = Counter()
    _count_bytes(data, SPECIALS, ascii_pattern(pattern), pattern, counts, offset=0, errors="replace", source="t")
    assert counts == _count_text(data.decode("utf-8", "replace"), SPECIALS, pattern)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS)
def test_byte_regions_cover_every_high_byte_and_cut_exactly(text):
    data = text.encode()
    regions = mixed_byte_regions(data.decode("latin-1"))
    covered = set()
    last = 0
    for start, end in regions:
        assert last <= start < end  # in order, disjoint, non-empty
        covered.update(range(start, end))
        last = end
    assert {i for i, b in enumerate(data) if b >= 0x80} <= covered
    cuts = {c for r in regions for c in r} - {0, len(data)}
    for pattern in PATTERNS:
        rx = compile_pattern(pattern)
        for cut in cuts:
            left, right = data[:cut].decode(), data[cut:].decode()  # whole characters
            assert rx.findall(left) + rx.findall(right) == rx.findall(text), (pattern, cut)


def test_bad_utf8_names_its_offset_and_replace_counts_like_text(tmp_path):
    good = "naïve café, plain words here " * 400
    data = good.encode() + b"\xff\xfe tail" + good.encode()
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    offset = len(good.encode())
    for workers in (1, 2):
        with pytest.raises(CorpusError, match=f"at byte offset {offset} "):
            count_pretokens(path, num_workers=workers, chunk_size=1000)
    replaced = data.decode("utf-8", "replace")
    assert _bytes_counts(replaced, (), "gpt2") == _count_text(replaced, (), "gpt2")
    counts, _ = count_pretokens(path, errors="replace", chunk_size=1000)
    assert counts == count_pretokens([replaced])[0]
    assert _count_bytes  # the file path above went through it: a built-in pattern


def _corpus(seed: int, docs: int = 60) -> str:
    rng = random.Random(seed)
    words = ["the", "tokenizer", "naïve", "café", "日本語", "don't", "x=1;", "  ", "\n", "12345", "🙂",
             "ab", "\n    indented", "über", "—", "Straße", "\t", "ok."]  # fmt: skip
    weights = [rng.randint(1, 50) for _ in words]
    return "<|endoftext|>".join(
        " ".join(rng.choices(words, weights, k=rng.randint(20, 300))) for _ in range(docs)
    )


@pytest.mark.parametrize("fork", [True, False])
def test_pool_counts_equal_one_process_with_fork_and_forkserver(tmp_path, monkeypatch, fork):
    monkeypatch.setattr(processes, "single_threaded", lambda: fork)
    text = _corpus(5)
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    one, stats1 = count_pretokens(path, ["<|endoftext|>"], chunk_size=2000)
    for workers in (2, 3):
        many, stats = count_pretokens(path, ["<|endoftext|>"], num_workers=workers, chunk_size=2000)
        assert many == one and stats["workers"] == workers and stats["chunks"] == stats1["chunks"] > 10
    texts = text.split("<|endoftext|>")
    assert count_pretokens(texts, num_workers=3)[0] == count_pretokens(texts)[0]  # texts: a run each


def test_pool_context_forks_only_when_single_threaded(monkeypatch):
    monkeypatch.setattr(processes, "single_threaded", lambda: True)
    assert processes.pool_context().get_start_method() == "fork"
    monkeypatch.setattr(processes, "single_threaded", lambda: False)
    assert processes.pool_context(preload=["core.train.count"]).get_start_method() == "forkserver"


# ---------------------------------------------------------------------------------------
# The merges against the Rust trainers, up to the first tie


def _first_tie(texts: list[str], limit: int) -> int:
    """How many merges the pure rule makes before the first step whose best count is shared
    by two pairs (a plain recount each step: small corpora only)."""
    words: Counter[tuple[bytes, ...]] = Counter()
    for text in texts:
        for word in compile_pattern("gpt2").findall(text):
            words[tuple(bytes([b]) for b in word.encode())] += 1
    for k in range(limit):
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            return k
        top = pairs.most_common(2)
        if len(top) == 2 and top[0][1] == top[1][1]:
            return k
        (a, b), _ = top[0]
        merged: Counter[tuple[bytes, ...]] = Counter()
        for word, n in words.items():
            out: list[bytes] = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return limit


def _rustbpe_tokens(texts: list[str], n_merges: int) -> list[bytes]:
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(iter(texts), 256 + n_merges, pattern=GPT2_PATTERN)
    return [t for t, rank in sorted(tok.get_mergeable_ranks(), key=lambda r: r[1]) if rank >= 256]


def _hf_tokens(texts: list[str], n_merges: int) -> list[bytes]:
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=257 + n_merges, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    pairs = [m.split(" ") if isinstance(m, str) else m for m in merges]
    return [from_gpt2_str(a) + from_gpt2_str(b) for a, b in pairs]


def _tie_free_corpus(seed: int = 4) -> str:
    """Random words of weighted letters (a few multi-byte ones, rare), each word with its own
    random weight: with this seed the first 48 merges have no tie."""
    rng = random.Random(seed)
    letters = "etaoinshrdlucmfwypvbgkqjxz" + "éü日—ß"
    letter_weights = [rng.randint(20, 100) for _ in range(26)] + [1] * 5
    vocab = ["".join(rng.choices(letters, letter_weights, k=rng.randint(1, 8))) for _ in range(2000)]
    word_weights = [rng.random() for _ in vocab]
    seps = [" "] * 20 + ["  ", "\n", ", ", ".\n    "]
    docs = []
    for _ in range(100):
        words = rng.choices(vocab, word_weights, k=rng.randint(50, 400))
        docs.append("".join(w + rng.choice(seps) for w in words))
    return "<|endoftext|>".join(docs)


def test_file_and_pool_merges_match_rustbpe_and_hf_until_the_first_tie(tmp_path):
    text = _tie_free_corpus()
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    docs = text.split("<|endoftext|>")
    k = _first_tie(docs, 200)
    assert k >= 30  # the corpus is built to leave a long stretch without ties
    vocab, merges = train_bpe(path, 257 + k, ["<|endoftext|>"], num_workers=2)
    ours = [a + b for a, b in merges]
    assert ours == [a + b for a, b in train_bpe(docs, 257 + k, ["<|endoftext|>"])[1]]  # the pure path
    assert ours == _rustbpe_tokens(docs, k)[:k]
    assert ours == _hf_tokens(docs, k)[:k]

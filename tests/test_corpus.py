"""Corpus reading: safe chunk boundaries, exact chunked counting, UTF-8 errors with offsets."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from core.train.corpus import decode_chunk, find_chunk_boundaries, find_safe_boundary, iter_text_chunks, read_chunk
from core.errors import CorpusError
from core.engine.pretokenize import GPT2_PATTERN, NON_ASCII_SPACES, PATTERNS, SAFE_CUT_BYTES, split_on_specials
from core.engine.pretokenize import ascii_pattern
from core.train.count import _count_text, count_pretokens


def reference_counts(text, specials, pattern):
    pat = regex.compile(PATTERNS.get(pattern, pattern))
    counts = Counter()
    for piece, is_special in split_on_specials(text, specials):
        if not is_special:
            counts.update(pat.findall(piece))
    return counts


def _corpus(seed, specials):
    rng = random.Random(seed)
    words = ["the", " ", "  ", "\n", "\n\n", "\t", "naïve", "日本語", "don't", "a.b", "x=1;", "42", "🙂", "\u00a0"]
    words += specials
    return "".join(rng.choice(words) + rng.choice(["", " "]) for _ in range(20_000))


@pytest.mark.parametrize("pattern", list(PATTERNS))
@pytest.mark.parametrize("specials", [[], ["<|endoftext|>"], ["<|a|>", "<|a|><|b|>", "<|b|>"]])
def test_chunked_counting_equals_whole_text_counting(tmp_path, pattern, specials):
    text = _corpus(len(specials), specials)
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    bounds = find_chunk_boundaries(path, special_tokens=specials, chunk_size=2000)
    assert bounds[0] == 0 and bounds[-1] == path.stat().st_size and len(bounds) > 10
    assert bounds == sorted(set(bounds))
    chunks = [read_chunk(path, s, e) for s, e in zip(bounds, bounds[1:])]
    assert "".join(chunks) == text
    total = Counter()
    for chunk in chunks:
        total.update(_count_text(chunk, tuple(specials), pattern))
    assert total == reference_counts(text, specials, pattern)
    counts, stats = count_pretokens(path, specials, pattern=pattern, chunk_size=3000)
    assert counts == total and stats["chunks"] > 1 and stats["bytes"] == path.stat().st_size


def test_boundaries_prefer_special_token_starts(tmp_path):
    doc = "word " * 100
    path = tmp_path / "c.txt"
    path.write_text("<|endoftext|>".join([doc] * 20), encoding="utf-8")
    bounds = find_chunk_boundaries(path, special_tokens=["<|endoftext|>"], chunk_size=1000)
    data = path.read_bytes()
    for b in bounds[1:-1]:  # at a special whenever one lies ahead; else at a space
        assert data.startswith(b"<|endoftext|>" if b"<|endoftext|>" in data[b:] else b" ", b)


def test_boundary_is_never_inside_a_special_token():
    specials = [b"<|a b|>"]  # a special with a space in it
    data = b"xx<|a b|>yy zz"
    assert find_safe_boundary(data, 3, specials) is None  # " yy": too close to the end to be sure
    assert find_safe_boundary(data + b" " * 10, 3, specials) == 11


def test_ascii_pattern_agrees_with_regex_on_every_ascii_character():
    full = regex.compile(GPT2_PATTERN)
    for c in map(chr, range(128)):
        for text in (c, f"a{c}b", f" {c}{c}", f"{c} 1"):
            assert ascii_pattern("gpt2").findall(text) == full.findall(text), repr(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list("ab1 '\n\t.!é日\u00a0\u2028s") + ["🙂", "'ll"]), max_size=60).map("".join))
def test_fast_gpt2_counting_is_exact(text):
    assert _count_text(text, (), "gpt2") == reference_counts(text, [], "gpt2")


def test_utf8_errors_name_the_offset_in_the_whole_file(tmp_path):
    path = tmp_path / "bad.bin"
    path.write_bytes(b"ok text " * 1000 + b"\xc3(" + b" more" * 10)
    with pytest.raises(CorpusError, match=r"byte offset 8000 \(invalid continuation byte\)"):
        count_pretokens(path, chunk_size=1000)
    counts, _ = count_pretokens(path, chunk_size=1000, errors="replace")
    assert counts[" \ufffd("] == 1
    with pytest.raises(CorpusError, match="'strict' or 'replace'"):
        decode_chunk(b"x", errors="ignore")


def test_iter_text_chunks_streams_a_non_seekable_file(tmp_path):
    import gzip

    text = _corpus(3, ["<|endoftext|>"])
    path = tmp_path / "c.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    with gzip.open(path, "rb") as fh:
        chunks = list(iter_text_chunks(fh, special_tokens=["<|endoftext|>"], chunk_size=4096))
    assert len(chunks) > 5 and "".join(chunks) == text
    total = Counter()
    for chunk in chunks:
        total.update(_count_text(chunk, ("<|endoftext|>",), "gpt2"))
    assert total == reference_counts(text, ["<|endoftext|>"], "gpt2")


def test_a_long_stretch_without_safe_cuts_makes_one_longer_chunk(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"x" * 300_000 + b" y" + b" z" * 10)
    bounds = find_chunk_boundaries(path, chunk_size=1000)
    assert bounds == [0, 300_000, path.stat().st_size]
    path.write_bytes(b"x" * 300_000 + b"<|e|>tail " * 3)
    bounds = find_chunk_boundaries(path, special_tokens=["<|e|>"], chunk_size=1000)
    assert bounds[:2] == [0, 300_000]


def _scripts_corpus(seed):
    """Text with no ASCII letters near most spaces: Cyrillic, Greek, CJK, Arabic digits,
    combining marks, emoji and every non-ASCII space, and no special token."""
    rng = random.Random(seed)
    words = ["привет", "мир", "Ελληνικά", "日本語", "٣٤٥", "e\u0301", "🙂", "ß", "\n", "  ", "\t",
             *NON_ASCII_SPACES, "x", "."]
    return "".join(rng.choice(words) + rng.choice(["", " ", " "]) for _ in range(20_000))


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_a_corpus_without_ascii_letters_or_specials_is_cut_into_chunks_exactly(tmp_path, pattern):
    # a space after a letter that is not ASCII is a safe cut too: such a corpus is counted in
    # chunks (in parallel, with progress), not as one string
    text = _scripts_corpus(3)
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    bounds = find_chunk_boundaries(path, chunk_size=2000)
    assert len(bounds) > 20
    ends = [path.read_bytes()[b - 2 : b] for b in bounds[1:-1]]
    assert any(end[-1] >= 0x80 for end in ends)  # some cut after a character that is not ASCII
    chunks = [read_chunk(path, s, e) for s, e in zip(bounds, bounds[1:])]
    total = Counter()
    for chunk in chunks:
        total.update(_count_text(chunk, (), pattern))
    assert total == reference_counts(text, [], pattern)
    for workers in (1, 2):
        counts, stats = count_pretokens(path, pattern=pattern, chunk_size=3000, num_workers=workers)
        assert counts == total and stats["chunks"] > 1


def test_the_non_ascii_spaces_are_every_whitespace_character_past_ascii():
    # the byte-level cut rule must know every whitespace character (str.isspace and the
    # patterns' \s): a space after one of them is no safe cut
    found = [chr(c) for c in range(0x80, 0x110000) if chr(c).isspace() or regex.match(r"\s", chr(c))]
    assert list(NON_ASCII_SPACES) == found
    for space in found:
        assert SAFE_CUT_BYTES.search(f"a{space} b".encode()) is None
    for other in ("я", "日", "\u0301", "🙂", "\u200b", "\u180e", "\u00ad"):
        assert SAFE_CUT_BYTES.search(f"a{other} b".encode()).start() == len(f"a{other}".encode())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*"ab1 '\n\t.!", "я", "日", "e\u0301", "🙂", "٣", *NON_ASCII_SPACES, "'ll"]),
                max_size=40).map("".join))
def test_every_safe_cut_in_the_bytes_leaves_each_patterns_pre_tokens_whole(text):
    data = text.encode("utf-8")
    for cut in (m.start() for m in SAFE_CUT_BYTES.finditer(data)):
        left, right = data[:cut].decode(), data[cut:].decode()
        for pattern in PATTERNS.values():
            pat = regex.compile(pattern)
            assert pat.findall(left) + pat.findall(right) == pat.findall(text), (pattern, cut)

"""core/explain/compare.py and core/engine/vocab_table.py: pure helpers behind the Compare, Decode and
Vocabulary pages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.explain.compare import (
    boundaries,
    differing_regions,
    first_difference,
    tokenization_stats,
)
from core.engine.vocab_table import length_counts, search_rows, vocab_rows


# ---- boundaries and regions -----------------------------------------------------------------


def test_boundaries_dedupes_partial_tokens_sharing_a_character() -> None:
    # "你!" where 你 is two tokens with the same span (0, 1)
    assert boundaries([(0, 1), (0, 1), (1, 2)]) == [1, 2]


def test_regions_only_where_cuts_differ() -> None:
    text = "the tokenizer works"
    a = [3, 9, 13, 19]  # the| token|izer| works
    b = [3, 13, 19]  # the| tokenizer| works
    regions = differing_regions(text, {"A": a, "B": b})
    assert len(regions) == 1
    r = regions[0]
    assert (r.start, r.end, r.text) == (3, 13, " tokenizer")
    assert r.pieces == {"A": [" token", "izer"], "B": [" tokenizer"]}
    assert "".join(r.pieces["A"]) == r.text


def test_regions_three_tokenizers_and_limit() -> None:
    text = "ab cd ef"
    cuts = {"x": [1, 2, 5, 8], "y": [2, 4, 5, 8], "z": [2, 5, 6, 8]}
    regions = differing_regions(text, cuts)
    assert [r.text for r in regions] == ["ab", " cd", " ef"]
    assert regions[1].pieces["y"] == [" c", "d"]
    assert len(differing_regions(text, cuts, limit=2)) == 2


def test_regions_identical_or_single_or_empty() -> None:
    assert differing_regions("abc", {"x": [1, 3], "y": [1, 3]}) == []
    assert differing_regions("abc", {"x": [1, 3]}) == []
    assert differing_regions("", {"x": [], "y": []}) == []


def test_regions_pieces_rebuild_text() -> None:
    text = "x" * 30
    regions = differing_regions(text, {"a": range(1, 31), "b": range(3, 31, 3)})
    for r in regions:
        for pieces in r.pieces.values():
            assert "".join(pieces) == r.text


# ---- stats and round trip ----------------------------------------------------------------------


def test_stats_counts_bytes_and_unknowns() -> None:
    s = tokenization_stats("日本", 3, n_unknown=1)
    assert (s.n_chars, s.n_bytes, s.n_tokens) == (2, 6, 3)
    assert s.bytes_per_token == pytest.approx(2.0)
    assert s.unknown_rate == pytest.approx(1 / 3)
    assert tokenization_stats("", 0).bytes_per_token == 0.0


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [([], [], None), ([1], [1], None), ([1, 2], [1, 3], 1), ([1], [1, 2], 1), ([2], [], 0)],
)
def test_first_difference(a: list[int], b: list[int], expected: int | None) -> None:
    assert first_difference(a, b) == expected


# ---- vocabulary table -------------------------------------------------------------------------


def small_vocab() -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    vocab = {0: b"<|endoftext|>"}
    vocab.update({1 + i: bytes([i]) for i in range(256)})
    merges = [(b"t", b"h"), (b"th", b"e"), (b" ", b"the")]
    for k, (a, b) in enumerate(merges):
        vocab[257 + k] = a + b
    return vocab, merges


def test_vocab_rows_ranks_and_parts() -> None:
    vocab, merges = small_vocab()
    rows = {r.id: r for r in vocab_rows(vocab, merges)}
    assert rows[259].token == b" the" and rows[259].rank == 2
    assert (rows[259].left, rows[259].right) == (b" ", b"the")
    assert rows[1 + ord("t")].rank is None
    assert rows[0].rank is None and rows[0].length == 13
    assert [r.id for r in vocab_rows(vocab, merges)] == sorted(vocab)


def test_search_by_text_and_id() -> None:
    vocab, merges = small_vocab()
    rows = vocab_rows(vocab, merges)
    assert {r.id for r in search_rows(rows, "the")} == {258, 259}
    assert [r.id for r in search_rows(rows, "258")] == [258]
    assert len(search_rows(rows, "")) == len(rows)
    assert search_rows(rows, "日本") == []


def test_length_counts() -> None:
    vocab, _ = small_vocab()
    counts = length_counts(vocab)
    assert counts[1] == 256 and counts[2] == 1 and counts[3] == 1 and counts[4] == 1
    assert counts[13] == 1
    assert list(counts) == sorted(counts)


def _naive_regions(text, cuts):
    """The definition, spelled out: every region between shared cuts where the tokenizers'
    inner cuts differ (quadratic; the reference for the bisect version)."""
    sets = {n: {c for c in cs if 0 < c < len(text)} for n, cs in cuts.items()}
    shared = set.intersection(*sets.values())
    edges = [0, *sorted(shared), len(text)]
    out = []
    for start, end in zip(edges, edges[1:]):
        inner = {n: sorted(c for c in s if start < c < end) for n, s in sets.items()}
        if len({tuple(v) for v in inner.values()}) > 1:
            out.append((start, end, inner))
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_differing_regions_equal_the_definition(data):
    n = data.draw(st.integers(1, 60))
    text = "x" * n
    names = data.draw(st.sampled_from([["a", "b"], ["a", "b", "c"]]))
    cuts = {name: data.draw(st.lists(st.integers(0, n + 2), max_size=30)) + [n] for name in names}
    got = [(r.start, r.end, {k: [len("".join(p[: i + 1])) + r.start for i in range(len(p) - 1)]
                             for k, p in r.pieces.items()})
           for r in differing_regions(text, cuts)]
    assert got == _naive_regions(text, cuts)


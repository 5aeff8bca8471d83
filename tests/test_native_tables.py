"""tokplay_native.tables, the C twins of two passes of a byte-level load: splitting the
merges into IDs (tokenizer.json, GGUF) and indexing the pairs. The same answers as the pure
passes on arbitrary lists (well-formed or not), and a whole load gives the same tokenizer
with and without them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core import native
from core.engine import vocab_index
from core.formats import export_all, load_tokenizer_files
from core.formats.hf_json import _fast_pairs
from core.formats.table_cache import CACHE_ENV
from core.formats.presets import load_preset

fast = native.tables


def test_the_twin_is_built():
    assert fast is not None, "tokplay_native.tables is not built: run `pip install -e .`"


KEYS = {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġa": 4, " ": 5}
PART = st.sampled_from(["a", "b", "ab", "Ġ", "Ġa", "x", ""])
MERGE = st.one_of(
    st.builds(lambda a, b: f"{a} {b}", PART, PART),
    st.builds(lambda a, b, c: f"{a} {b} {c}", PART, PART, PART),  # two spaces: refused
    PART,  # no space
    st.lists(PART, min_size=2, max_size=2),
    st.lists(PART, min_size=1, max_size=3),
    st.integers(0, 3),
    st.just([["a"], "b"]),  # an unhashable part
)


def _pure_split(merges: list[Any]) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "tables", None)
        return _fast_pairs({"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġa": 4}, merges, {})


@given(merges=st.lists(MERGE, max_size=8))
@example(merges=[])
@example(merges=["a b", ["a", "b"]])  # mixed shapes: refused
def test_merge_ids_is_the_pure_split(merges: list[Any]):
    want = _pure_split(merges)
    got = _fast_pairs({"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġa": 4}, merges, {})
    assert got == want
    split = fast.merge_ids(merges, KEYS)
    if want is not None:
        assert split == tuple(want[1])


@given(pairs=st.lists(st.tuples(st.integers(-3, 9), st.integers(-3, 9)), max_size=12))
@example(pairs=[(0, 1), (0, 1)])  # a pair twice: the first rank, in the pure pass's dict
def test_index_pairs_is_the_pure_pass(pairs: list[tuple[int, int]]):
    table: list[bytes | None] = [bytes([97 + i]) for i in range(6)] + [None, None] + [None] * 8
    encoder = {bytes([97 + i]): i for i in range(6)}
    encoder |= {a + b: 10 + k for k, (a, b) in enumerate((x, y) for x in table[:3] if x
                                                        for y in table[:4] if y)}  # fmt: skip
    lefts, rights = [a for a, _ in pairs], [b for _, b in pairs]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "tables", None)
        want = vocab_index._index_ordinary_ids(lefts, rights, table, encoder, None)
    got = vocab_index._index_ordinary_ids(lefts, rights, table, encoder, None)
    assert got == want
    if got is not None:
        assert list(got[0].items()) == list(want[0].items())  # the same order too
    raw = fast.index_pairs(lefts, rights, table, encoder)
    assert raw is None or raw == want
    if len(set(pairs)) != len(pairs):
        assert raw is None  # repeats: left to the pure pass


def test_a_merge_has_exactly_one_space():
    keys = {"a": 0, "b a": 1, "a b": 2}  # (GGUF tokens may hold spaces)
    assert fast.merge_ids(["a b a"], keys) is None  # as the pure pass's count of spaces
    assert fast.merge_ids(["ab"], keys) is None
    assert fast.merge_ids([["a", "b a"]], keys) == ([0], [1])  # lists need no space


def test_bad_arguments_raise():
    with pytest.raises(TypeError):
        fast.merge_ids(("a b",), KEYS)
    with pytest.raises(ValueError, match="length"):
        fast.index_pairs([0], [], [b"a"], {})


@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
def test_a_tokenizer_json_loads_the_same_both_ways(name: str, monkeypatch):
    data = export_all(load_preset(name))["tokenizer.json"]
    monkeypatch.setenv(CACHE_ENV, "off")  # (both loads from the file itself)
    with_c = load_tokenizer_files({"tokenizer.json": data})
    monkeypatch.setattr(native, "tables", None)
    pure = load_tokenizer_files({"tokenizer.json": data})
    assert list(with_c._pair_ranks.items()) == list(pure._pair_ranks.items())
    assert with_c._merged == pure._merged and with_c.vocab == pure.vocab
    text = "Hello wörld 東京 😀"
    assert with_c.encode(text) == pure.encode(text) == load_preset(name).encode(text)


# ─── merge_ids(..., joined=True): a pipeline BPE model's merge table ────────────────────

JOIN_KEYS = {"a": 0, "b": 1, "ab": 2, "ba": 3, "aab": 4, "▁": 5, "▁a": 6, "": 7}


@given(merges=st.lists(st.one_of(
    st.tuples(st.sampled_from(list(JOIN_KEYS) + ["x"]), st.sampled_from(list(JOIN_KEYS) + ["x"]))
    .map(lambda p: f"{p[0]} {p[1]}"),
    st.lists(st.sampled_from([*JOIN_KEYS, "x", 1]), min_size=1, max_size=3),
    st.just("a  b"),
), max_size=8))  # fmt: skip
@example(merges=[["a", "b"], ["b", "a"], ["a", "b"]])  # a pair listed twice
@example(merges=["a b", ["a", "b"]])  # two shapes
def test_joined_merge_ids_are_the_pure_pipeline_tables(merges: list[Any]):
    """The same merge table as BPEModel builds from the (str, str) pairs, or None (the pure
    path then decides): always where that path refuses (a shape, a part or a join that is
    not a token), and for mixed shapes, which it reads one by one."""
    from core.pipeline.models.bpe import _plain_merge_table
    from core.pipeline.models.from_json import _merges

    got = native.tables.merge_ids(merges, JOIN_KEYS, True)
    try:
        pairs = _merges({"merges": merges}, "t")
    except Exception:  # (a shape the careful path refuses, naming it)
        assert got is None
        return
    want = _plain_merge_table(JOIN_KEYS, pairs) if pairs else None
    if want is None or got is None:
        assert got is None or want is not None
        assert got is not None or want is None or len(set(map(type, merges))) > 1
        return
    lefts, rights, made = got
    assert dict(zip(zip(lefts, rights), range(len(made)))) == want[0]
    assert dict(enumerate(made)) == want[1]
    assert (lefts, rights) == ([JOIN_KEYS[a] for a, _ in pairs], [JOIN_KEYS[b] for _, b in pairs])


@pytest.mark.parametrize("source", ["v1", "v7"])
def test_a_pipeline_bpe_json_loads_the_same_both_ways(source: str, tmp_path, monkeypatch):
    """Mistral's tokenizer.json (BPE with byte fallback) with the merge table made in C and
    without: the same model, merges, fingerprint and IDs."""
    from tests.test_real_models import _make_hf_json

    monkeypatch.setenv(CACHE_ENV, "off")
    data = _make_hf_json(source, tmp_path).encode()
    fast = load_tokenizer_files({"tokenizer.json": data})
    assert "merges" not in vars(fast.model)  # (the C table: spelled out on first read)
    monkeypatch.setattr(native, "tables", None)
    pure = load_tokenizer_files({"tokenizer.json": data})
    assert "merges" in vars(pure.model)
    text = "Hello [INST] wörld 東京 😀\n\tdef f(x): return x"
    assert fast.encode(text) == pure.encode(text)
    assert fast.fingerprint() == pure.fingerprint()
    assert fast.model.merges == pure.model.merges
    assert fast.model._ranks == pure.model._ranks and fast.model._merged == pure.model._merged

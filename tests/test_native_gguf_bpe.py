"""tokplay_native.tables' twins for a GGUF vocab read packed (``packed_merge_ids``,
``pair_ranks``): the same answers as core.formats.gguf_bpe's pure passes on arbitrary
tokens and merges (well-formed or not), on Gemma 4's file, and errors, never a crash, on
arguments no reader makes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core import native
from core.formats.gguf import GGUFStrings, read_gguf_metadata
from core.formats.gguf_bpe import merge_id_columns, pair_ranks

fast = native.tables
K = "tokenizer.ggml."


def test_the_twins_are_built():
    assert fast is not None, "tokplay_native.tables is not built: run `pip install -e .`"


PART = st.sampled_from(["a", "b", "ab", " ", "a b", "▁", "▁a", "é", "aé", "", "b ", "😀"])
MERGE = st.one_of(
    st.builds(lambda a, b: f"{a} {b}", PART, PART),
    st.builds(lambda a, b: f"{a}{b}", PART, PART),  # no space, or one in a part
    st.text(alphabet="ab ▁é", max_size=6),
)


def _pure(tokens: list[str], merges: list[str]) -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "tables", None)
        return merge_id_columns(GGUFStrings.pack(tokens), GGUFStrings.pack(merges))


@given(tokens=st.lists(PART, max_size=8), merges=st.lists(MERGE, max_size=8))
@example(tokens=["a", "b", "ab"], merges=["a b", "a b"])
@example(tokens=["a", " ", " a", "a "], merges=["  a", "a  "])  # a space as a part
@example(tokens=["a", "b", "ab", ""], merges=["a b"])  # an empty token
@example(tokens=["a", "b", "ab", "a"], merges=["a b"])  # a token twice
@example(tokens=["a"], merges=[])
@example(tokens=[], merges=[])
def test_packed_merge_ids_is_the_pure_pass(tokens: list[str], merges: list[str]):
    want = _pure(tokens, merges)
    assert merge_id_columns(tokens, merges) == want  # (lists: the pure pass, C or not)
    assert merge_id_columns(GGUFStrings.pack(tokens), GGUFStrings.pack(merges)) == want
    ids = [10**6 + i for i in range(len(tokens))]  # (the answer holds these very objects)
    got = fast.packed_merge_ids(*_packed(tokens), *_packed(merges), ids)
    if want is None:
        assert got is None
    else:
        assert got == tuple([ids[i] for i in column] for column in want)  # type: ignore[attr-defined]
        assert all(x is ids[x - 10**6] for column in got for x in column)


def _packed(texts: list[str]) -> tuple[bytes, bytes]:
    strings = GGUFStrings.pack(texts)
    return strings.buf, strings.spans


@given(pairs=st.lists(st.tuples(st.integers(-2, 5), st.integers(-2, 5)), max_size=16))
@example(pairs=[(0, 1), (1, 1), (0, 1)])  # a pair twice: its first place, its last rank
def test_pair_ranks_is_the_pure_dict(pairs: list[tuple[int, int]]):
    lefts, rights = [a for a, _ in pairs], [b for _, b in pairs]
    want = dict(zip(zip(lefts, rights), range(len(lefts))))
    got = fast.pair_ranks(lefts, rights)
    assert list(got.items()) == list(want.items())
    assert pair_ranks(lefts, rights) == want


def test_bad_arguments_are_errors_not_crashes():
    buf, spans = _packed(["a", "b", "ab"])
    merges = _packed(["a b"])
    with pytest.raises(ValueError, match="one item per token"):
        fast.packed_merge_ids(buf, spans, *merges, [0, 1])
    with pytest.raises(ValueError, match="int64 pairs"):
        fast.packed_merge_ids(buf, spans[:-1], *merges, [0, 1, 2])
    outside = GGUFStrings.pack(["abcdef"]).spans  # (a span past the end of buf)
    with pytest.raises(ValueError, match="outside its buffer"):
        fast.packed_merge_ids(b"ab", outside, *merges, [0])
    with pytest.raises(TypeError):
        fast.packed_merge_ids(buf, spans, *merges, (0, 1, 2))
    with pytest.raises(TypeError):
        fast.packed_merge_ids("ab", spans, *merges, [0, 1, 2])
    with pytest.raises(TypeError):
        fast.pair_ranks([0, 1], [0])
    with pytest.raises(TypeError):
        fast.pair_ranks([[0]], [1])  # (unhashable: as the dict it stands for)


@pytest.fixture(scope="module")
def gemma4(llama_cpp_vocabs: Path) -> tuple[GGUFStrings, GGUFStrings]:
    data = (llama_cpp_vocabs / "ggml-vocab-gemma-4.gguf").read_bytes()
    meta = read_gguf_metadata(data, packed=True)
    tokens, merges = meta.fields[K + "tokens"], meta.fields[K + "merges"]
    assert isinstance(tokens, GGUFStrings) and isinstance(merges, GGUFStrings)
    return tokens, merges


def test_gemma4s_merges_are_the_pure_passes(gemma4: tuple[GGUFStrings, GGUFStrings]):
    tokens, merges = gemma4
    columns = merge_id_columns(tokens, merges)
    assert columns is not None and len(columns[0]) == 514_906
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "tables", None)
        assert merge_id_columns(tokens, merges) == columns
        pure_ranks = pair_ranks(columns[0], columns[1])
    assert pair_ranks(columns[0], columns[1]) == pure_ranks

"""core.pipeline.models.unigram_json: a tokenizer.json's Unigram scores read as ``tokenizers`` reads
them (serde_json's float parsing, bit for bit, against the library itself), from the file's
own digits when the file is at hand, and the pure reader of those digits."""

from __future__ import annotations

import json
import struct

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.pipeline.models.unigram_json import (
    _as_serde_reads,
    _vocab_columns,
    serde_number,
    unigram_from_json,
)

#: JSON numbers: shortest and 17-digit spellings, long digit runs (past a u64), exponents
#: (past 308, past an i32), integers, negative zero
NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-40, 0).map(lambda v: f"{v:.17g}"),
    st.from_regex(r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.from_regex(r"-?[1-9][0-9]{0,3}(\.[0-9]{1,3})?[eE][+-]?[0-9]{10,12}", fullmatch=True),
)


def _bits(values: list[float]) -> list[bytes]:
    return [struct.pack("<d", v) for v in values]


def _read_by_tokenizers(numbers: list[str]) -> list[float | None]:
    """Each number as ``tokenizers`` reads it as a Unigram score (None: it refuses it),
    written back by serde_json (the shortest digits: Python reads them exactly)."""
    from tokenizers import Tokenizer

    out: list[float | None] = []
    for number in numbers:
        doc = '{"model":{"type":"Unigram","vocab":[["a",%s]]}}' % number
        try:
            written = json.loads(Tokenizer.from_str(doc).to_str())
        except Exception:  # (out of range: serde_json's error)
            out.append(None)
            continue
        out.append(written["model"]["vocab"][0][1])
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(NUMBERS, min_size=1, max_size=8))
@example(["-11.602532386779785", "-1.8691413145620870", "-0", "0.000000000000000000000000000001",
          "18446744073709551616.5", "184467440737095516160.01", "1e400", "-1e-400",
          "1e-99999999999", "123456789012345678901234567890"])  # fmt: skip
def test_serde_number_is_what_tokenizers_reads(numbers: list[str]) -> None:
    want = _read_by_tokenizers(numbers)
    got = [serde_number(n) for n in numbers]
    for number, mine, theirs in zip(numbers, got, want):
        if theirs is None:  # refused as out of range: infinite here
            assert mine in (float("inf"), float("-inf")), number
        else:
            assert _bits([mine]) == _bits([theirs]), number


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_reads_as_its_shortest_spelling(value: float) -> None:
    assert _bits([_as_serde_reads(value)]) == _bits([serde_number(repr(value))])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=4), NUMBERS), max_size=8))
def test_the_files_digits_give_the_scores(pairs: list[tuple[str, str]]) -> None:
    items = ",".join(f"[{json.dumps(t)},{n}]" for t, n in pairs)
    source = ('{"model":{"type":"Unigram","vocab":[%s]}}' % items).encode()
    vocab = json.loads(source)["model"]["vocab"]
    found = _vocab_columns(vocab, source)
    assert found is not None
    assert found[0] == [t for t, _ in pairs]
    assert _bits(found[1]) == _bits([serde_number(n) for _, n in pairs])
    model = unigram_from_json(json.loads(source)["model"], "t.json", source=source)
    assert _bits(model.columns()[1]) == _bits(found[1])


def test_a_vocab_from_another_file_is_read_as_parsed() -> None:
    source = b'{"model": {"vocab": [["a", -1.8691413145620870]]}}'
    assert _vocab_columns([["a", -2.5]], source) is None
    assert _vocab_columns([["b", -1.869141314562087], ["c", 0.0]], source) is None
    model = unigram_from_json({"vocab": [["a", -1.869141314562087]]}, "t.json",
                              source=b'{"model": {"vocab": [["a", "x"]]}}')  # fmt: skip
    assert model.columns()[1] == [-1.869141314562087]  # (the shortest digits)

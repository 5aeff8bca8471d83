"""tokplay_native.spm, the C readers behind a SentencePiece model's load: the same values or
the same one-line error as the pure readers, on real model files (Mistral's ``.model``
files, llama.cpp's SentencePiece GGUF) and on made-up and mutated ones (truncated, bytes
changed, arbitrary fields); the same tables (vocab, merge ranks, character classes) from
arbitrary pieces; the same IDs and decoded text from a whole load with the twin on and off;
and errors rather than crashes on bad arguments.

`make test` builds the twin (setup.py), so a missing build fails here rather than skipping.
"""

from __future__ import annotations

import gc
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sentencepiece as spm_lib
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core import native
from core.errors import FormatError
from core.formats.gguf import read_gguf_metadata, write_gguf
from core.formats.gguf_spm import BPE_MODEL, SpmPiece, model_proto_bytes
from core.formats.gguf_vocab import tokenizer_from_gguf
from core.pipeline.sentencepiece import proto as proto_module
from core.pipeline.sentencepiece import sentencepiece_tokenizer
from core.pipeline.sentencepiece.cuts import _char_ranges, piece_chars
from core.pipeline.sentencepiece.tables import piece_tables
from core.pipeline.sentencepiece.proto import (
    BYTE,
    BYTE_PIECES,
    CONTROL,
    NORMAL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    ModelProto,
    parse_model_proto,
)
from tests.test_real_models import MISTRAL_DATA, _mistral_path

T = TypeVar("T")

SPM_KEYS = [key for key in MISTRAL_DATA if not key.startswith("tekken")]
TEXTS = [
    "Hello world! [INST] How are you? [/INST]",
    "  leading spaces\tand\ttabs\n\nnewlines ",
    "Ünïcödé — 日本語のテキスト, 한국어, русский, emoji 😀🎉, <0x41> <s> </s>",
    "def f(x):\n    return x ** 2  # comment\n",
    "",
]


def test_the_twin_is_built() -> None:
    """`pip install -e .` (make test) builds it where a C compiler is; CI has one."""
    assert native.spm is not None, "tokplay_native.spm is not built: run `pip install -e .`"
    assert native.status()["spm"] is True


def _pure(run: Callable[[], T]) -> T:
    """``run()`` on core's pure path: the twin off, as on Pyodide."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "spm", None)
        return run()


def _outcome(run: Callable[[], Any]) -> Any:
    """``run()``'s value, or its FormatError's message."""
    try:
        return run()
    except FormatError as err:
        return ("FormatError", str(err))


def _bits(x: float) -> bytes:
    """A float compared by its bits (NaN equals NaN, -0.0 differs from 0.0)."""
    return struct.pack("<d", x)


def _proto_key(model: Any) -> Any:
    """A parsed ModelProto (or an error) as something ``==`` compares exactly."""
    if not isinstance(model, ModelProto):
        return model
    return (
        model.piece_texts, list(map(_bits, model.piece_scores)), model.piece_types,
        model.trainer_spec, model.normalizer_spec, model.denormalizer_spec,
        model.self_test_samples,
    )  # fmt: skip


def _parse_both(data: bytes) -> tuple[Any, Any]:
    def parse() -> Any:
        return _proto_key(_outcome(lambda: parse_model_proto(data, name="m.model")))

    return parse(), _pure(parse)


# ─── real files ─────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def real_models() -> dict[str, bytes]:
    return {key: _mistral_path(key).read_bytes() for key in SPM_KEYS}


@pytest.mark.parametrize("key", SPM_KEYS)
def test_real_model_parses_alike(real_models: dict[str, bytes], key: str) -> None:
    ours, pure = _parse_both(real_models[key])
    assert isinstance(ours, tuple) and len(ours[0]) >= 32_000
    assert ours == pure


@pytest.mark.parametrize("key", SPM_KEYS)
def test_real_model_tables_alike(real_models: dict[str, bytes], key: str) -> None:
    proto = parse_model_proto(real_models[key])
    columns = (proto.piece_texts, proto.piece_scores, proto.piece_types)
    vocab, normal, ranks = piece_tables(*columns)
    pure_vocab, pure_normal, pure_ranks = _pure(lambda: piece_tables(*columns))
    assert list(vocab.items()) == list(pure_vocab.items())
    assert list(normal.items()) == list(pure_normal.items())
    assert ranks is not None and pure_ranks is not None
    assert list(ranks.items()) == list(pure_ranks.items())
    assert piece_chars(normal) == _pure(lambda: piece_chars(normal))
    chars = piece_chars(normal)[0]
    assert _char_ranges(chars) == _pure(lambda: _char_ranges(chars))


@pytest.mark.parametrize("key", SPM_KEYS)
def test_real_model_encodes_alike(real_models: dict[str, bytes], key: str) -> None:
    """The whole load with the twin on and off: the oracle's IDs and text, one fingerprint."""
    data = real_models[key]
    oracle = spm_lib.SentencePieceProcessor(model_proto=data)
    ours = sentencepiece_tokenizer(data)
    pure = _pure(lambda: sentencepiece_tokenizer(data))
    for text in TEXTS:
        ids = oracle.encode(text)
        assert ours.encode(text) == pure.encode(text) == ids
        assert ours.decode(ids) == pure.decode(ids) == oracle.decode(ids)
    assert ours.fingerprint() == pure.fingerprint()


def test_real_gguf_reads_alike(llama_cpp_vocabs: Path) -> None:
    data = (llama_cpp_vocabs / "ggml-vocab-llama-spm.gguf").read_bytes()
    ours = read_gguf_metadata(data)
    pure = _pure(lambda: read_gguf_metadata(data))
    assert ours.fields == pure.fields and ours.types == pure.types
    tok = tokenizer_from_gguf(data)
    pure_tok = _pure(lambda: tokenizer_from_gguf(data))
    for text in TEXTS:
        assert tok.encode(text) == pure_tok.encode(text)
    assert tok.fingerprint() == pure_tok.fingerprint()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(key=st.sampled_from(SPM_KEYS), data=st.data())
def test_mutated_real_model_reads_alike(
    real_models: dict[str, bytes], key: str, data: st.DataObject
) -> None:
    """A real file cut short or with bytes changed: the same pieces, or the same error."""
    blob = bytearray(real_models[key])
    cut = data.draw(st.integers(0, len(blob)), label="cut")
    for _ in range(data.draw(st.integers(0, 4), label="changes")):
        at = data.draw(st.integers(0, max(0, cut - 1)), label="at")
        if at < len(blob):
            blob[at] = data.draw(st.integers(0, 255), label="byte")
    ours, pure = _parse_both(bytes(blob[:cut]))
    assert ours == pure


# ─── made-up files ──────────────────────────────────────────────────────────────────────


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, wire: int, value: bytes | int) -> bytes:
    key = _varint(number << 3 | wire)
    if wire == 0:
        return key + _varint(int(value))
    if wire == 2:
        assert isinstance(value, bytes)
        return key + _varint(len(value)) + value
    assert isinstance(value, bytes)
    return key + value  # (wire 1, 5, or anything raw)


#: a piece's fields, written the usual way and every odd way: repeated, unknown, wrong wire
#: types, enum values out of range, 10-byte varints, invalid UTF-8, groups, raw bytes
PIECE_FIELD = st.one_of(
    st.builds(lambda t: _field(1, 2, t.encode("utf-8")), st.text(max_size=6)),
    st.builds(lambda b: _field(1, 2, b), st.binary(max_size=6)),
    st.builds(lambda f: _field(2, 5, struct.pack("<f", f)), st.floats(width=32)),
    st.builds(lambda b: _field(2, 5, b), st.binary(min_size=4, max_size=4)),
    st.builds(lambda t: _field(3, 0, t), st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 2**32 + 3,
                                                          2**64 - 1, 2**70 + 1])),
    st.builds(lambda n, w, b: _field(n, w, b), st.integers(1, 40), st.sampled_from([1, 5, 2]),
              st.binary(min_size=8, max_size=8)),
    st.builds(lambda n: _field(n, 0, 2**63), st.integers(1, 2**32)),
    st.sampled_from([b"\x0b\x0c", b"\x0c", b"\x00", b"\x80", b"\x1a\x05ab", b"\xff" * 11]),
    st.binary(max_size=3),
)  # fmt: skip
PIECE = st.one_of(
    st.builds(lambda fs: _field(1, 2, b"".join(fs)), st.lists(PIECE_FIELD, max_size=5)),
    st.builds(
        lambda t, s, k: _field(1, 2, _field(1, 2, t.encode()) + _field(2, 5, struct.pack("<f", s))
                               + (_field(3, 0, k) if k != NORMAL else b"")),
        st.text(min_size=1, max_size=5), st.floats(width=32, allow_nan=False), st.integers(1, 6),
    ),
)  # fmt: skip
OTHER = st.sampled_from([
    _field(2, 2, _field(3, 0, 2) + _field(35, 0, 1) + _field(30, 2, b"[INST]")),
    _field(3, 2, _field(1, 2, b"identity") + _field(3, 0, 0)),
    _field(4, 2, _field(1, 2, _field(1, 2, b"a") + _field(2, 2, b"\xe2\x96\x81a"))),
    _field(2, 2, _field(44, 2, b"\xff")), _field(2, 2, _field(30, 2, b"\xc3")),
    _field(2, 2, _field(31, 0, 5)), _field(9, 3, b"") + _field(9, 4, b""), b"\x0a\x85",
    # the list fields C reads as strs, among others: empty, non-ASCII, then a bad one
    _field(2, 2, _field(30, 2, b"a") + _field(31, 2, "é▁".encode()) + _field(30, 2, b"")
           + _field(45, 2, b"<u>") + _field(30, 2, b"\xed\xa0\x80") + _field(31, 2, b"z")),
    _field(2, 2, _field(30, 2, b"[INST]") + _field(30, 5, b"abcd") + _field(31, 2, b"x")),
])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.one_of(PIECE, PIECE, OTHER), max_size=8))
@example(parts=[_field(1, 2, _field(1, 2, b"\xff") + _field(1, 2, b"ok"))])  # first text bad
@example(parts=[_field(1, 2, _field(1, 2, b"ok") + _field(1, 2, b"\xed\xa0\x80"))])  # surrogate
@example(parts=[_field(1, 2, _field(1, 2, b"\xed\xa0\x80"))])  # a surrogate alone
@example(parts=[_field(1, 2, _field(1, 2, b"\xf4\x90\x80\x80"))])  # past U+10FFFF
@example(parts=[_field(1, 2, _field(3, 0, 2**70 + 2))])  # an enum over 64 bits
@example(parts=[_field(1, 2, _field(2**29, 0, 1))])  # a 5-byte key
@example(parts=[_field(1, 2, _field(2**40, 0, 1))])  # a key over 5 bytes
def test_made_up_model_reads_alike(parts: list[bytes]) -> None:
    ours, pure = _parse_both(b"".join(parts))
    assert ours == pure


#: bytes that lead, continue or break UTF-8 sequences at their edges
UTF8_BYTES = st.sampled_from(
    [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
     0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(raw=st.lists(UTF8_BYTES, max_size=8).map(bytes) | st.text(max_size=4).map(str.encode))
@example(raw=b"\xed\xa0\x80")  # a surrogate
@example(raw=b"\xed\x9f\xbf")  # the last character before them
@example(raw=b"\xf4\x90\x80\x80")  # past U+10FFFF
@example(raw=b"\xf4\x8f\xbf\xbf")  # U+10FFFF
@example(raw=b"\xe0\x9f\xbf")  # overlong
@example(raw=b"\xf0\x8f\xbf\xbf")  # overlong
def test_piece_text_utf8_alike(raw: bytes) -> None:
    """A piece's text is a str exactly when Python's strict decoder takes its bytes."""
    data = _field(1, 2, _field(1, 2, raw) + _field(2, 5, struct.pack("<f", -1.0)))
    ours, pure = _parse_both(data)
    assert ours == pure
    assert isinstance(ours[0], list) == _decodes(raw)  # (pieces, or the error's tuple)


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=40), start=st.integers(0, 5))
def test_fields_alike(data: bytes, start: int) -> None:
    """proto._fields, the loop every sub-message is read with: same fields, same error."""
    start = min(start, len(data))

    def read() -> Any:
        try:
            return list(proto_module._fields(data, start, len(data)))
        except proto_module._Broken as err:
            return ("broken", err.at, err.what)

    assert read() == _pure(read)


def _small_model(pieces: list[tuple[str, float, int]]) -> bytes:
    return model_proto_bytes(
        [SpmPiece(t, s, k) for t, s, k in pieces], model_type=BPE_MODEL, unk_id=0
    )


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.text("ab▁é😀\n", min_size=1, max_size=4),
                  st.sampled_from([-1.0, -2.0, -2.0, -3.5, 0.0, -0.0, float("-inf")]),
                  st.sampled_from([NORMAL, NORMAL, NORMAL, USER_DEFINED, UNUSED, CONTROL])),
        max_size=12,
    ),
    text=st.text("ab▁é😀\n xy", max_size=30),
)  # fmt: skip
def test_made_up_model_encodes_alike(pieces: list[tuple[str, float, int]], text: str) -> None:
    """A whole load and encode of a small model, twin on and off: same IDs or same error."""
    data = _small_model([("<unk>", 0.0, UNKNOWN), *pieces])

    def run() -> Any:
        return _outcome(lambda: sentencepiece_tokenizer(data, name="m.model").encode(text))

    assert run() == _pure(run)


def test_word_ids_outlive_their_table() -> None:
    """The table keeps one int per ID for the tuples it makes (no int allocated per new
    word): the IDs are right, the same int across words (IDs above CPython's small ints),
    and still valid once the table is gone."""
    from core.pipeline.sentencepiece.native_words import columns_words

    filler = [f"x{k}" for k in range(300)]  # IDs 1-300: the pieces below get IDs over 256
    texts = ["<unk>", *filler, "a", "b", "ab", "▁", "▁ab"]
    scores = [0.0] + [-9.0] * 300 + [-1.0, -1.0, -2.0, -1.0, -3.0]
    table = columns_words(texts, scores, [UNKNOWN] + [NORMAL] * (len(texts) - 1), unk=0,
                          byte_fallback=False, user_defined=[])
    assert table is not None
    first, again = table.plain_ids("▁abab"), table.plain_ids("ab▁ab")
    del table
    gc.collect()
    assert first == (305, 303) and again == (303, 305)
    assert first[1] is again[0]  # the one int the table kept for ID 303


# ─── tables from arbitrary pieces ───────────────────────────────────────────────────────

SCORES = st.one_of(
    st.sampled_from([0.0, -0.0, -1.0, -1.0, -2.5, float("inf"), float("-inf"), float("nan"),
                     1e308, -1e-308, 5e-324]),
    st.floats(width=32), st.integers(-3, 3),
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.text("ab▁c", max_size=3), SCORES,
                  st.one_of(st.integers(1, 6), st.sampled_from([0, 7, -1, 2**70]))),
        max_size=12,
    )
)  # fmt: skip
@example(pieces=[("a", 1.0, NORMAL), ("a", 2.0, CONTROL)])  # a text spelled twice
@example(pieces=[("a", float("nan"), NORMAL), ("b", -1.0, BYTE)])
def test_tables_alike(pieces: list[tuple[str, float, int]]) -> None:
    texts, scores, types = (list(column) for column in zip(*pieces)) if pieces else ([], [], [])
    ours = piece_tables(texts, scores, types)
    pure = _pure(lambda: piece_tables(texts, scores, types))
    assert list(ours[0].items()) == list(pure[0].items())
    assert list(ours[1].items()) == list(pure[1].items())
    assert (ours[2] is None) == (pure[2] is None)
    if ours[2] is not None and pure[2] is not None:
        assert list(ours[2].items()) == list(pure[2].items())
    # the ranks order pieces as their scores do, best first, equal scores equal
    if ours[2] is not None:
        ranked = [(ours[2][t], scores[i]) for t, i in ours[1].items()]
        for r1, s1 in ranked:
            for r2, s2 in ranked:
                assert (r1 < r2) == (s1 > s2) and (r1 == r2) == (s1 == s2)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.text(max_size=6) | st.text("a▁▁b", max_size=6), max_size=10))
def test_piece_chars_alike(pieces: list[str]) -> None:
    assert piece_chars(pieces) == _pure(lambda: piece_chars(pieces))
    assert piece_chars(iter(pieces)) == _pure(lambda: piece_chars(iter(pieces)))
    chars = piece_chars(pieces)[0] | set("()[]{}?*+-|^$\\.&~# \t\n\r\v\f\x00")
    assert _char_ranges(chars) == _pure(lambda: _char_ranges(chars))


# ─── GGUF strings ───────────────────────────────────────────────────────────────────────


@settings(max_examples=200, deadline=None)
@given(
    tokens=st.lists(st.text(max_size=5), min_size=1, max_size=8),
    cut=st.integers(0, 400),
    changes=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
)
def test_gguf_strings_alike(tokens: list[str], cut: int, changes: list[tuple[int, int]]) -> None:
    """A GGUF vocab cut short or with bytes changed: the same metadata, or the same error."""
    blob = bytearray(write_gguf({"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
                                 "general.name": "x"}))  # fmt: skip
    for at, byte in changes:
        if at < len(blob):
            blob[at] = byte
    data = bytes(blob[: max(cut, 24)])

    def read() -> Any:
        return _outcome(lambda: (lambda m: (m.fields, m.types))(read_gguf_metadata(data)))

    assert read() == _pure(read)


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(st.text("ab", max_size=3), min_size=1, max_size=6),
       limit=st.integers(20, 200))  # fmt: skip
def test_gguf_strings_stop_at_the_limit_alike(tokens: list[str], limit: int) -> None:
    """A metadata limit inside the vocab: strings read up to it exactly, as the pure loop."""
    data = write_gguf({"tokenizer.ggml.tokens": tokens})

    def read() -> Any:
        return _outcome(lambda: read_gguf_metadata(data, max_metadata_bytes=limit).fields)

    assert read() == _pure(read)


def test_gguf_strings_end_exactly_at_stop() -> None:
    m = native.spm
    assert m is not None
    two = struct.pack("<Q", 2) + b"ab" + struct.pack("<Q", 1) + b"c"
    assert m.gguf_strings(two, 0, len(two), 5, False) == (["ab", "c"], len(two))
    assert m.gguf_strings(two, 0, len(two) - 1, 5, False) == (["ab"], 10)
    assert m.gguf_strings(two + b"zz", 0, 10, 5, False) == (["ab"], 10)
    assert m.gguf_strings(two, 0, 9, 5, False) == ([], 0)
    assert m.gguf_strings(b"\x00" * 7, 0, 7, 1, False) == ([], 0)  # (a length cut short)
    assert m.gguf_strings(b"\x00" * 8, 0, 8, 1, False) == ([""], 8)


# ─── the pure path, and errors rather than crashes ──────────────────────────────────────


def test_pure_path_loads_a_real_model(real_models: dict[str, bytes]) -> None:
    """With the twin off (as on Pyodide) a real model still loads and matches the oracle."""
    data = real_models["v7"]
    oracle = spm_lib.SentencePieceProcessor(model_proto=data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "spm", None)
        tok = sentencepiece_tokenizer(data)
        for text in TEXTS:
            assert tok.encode(text) == oracle.encode(text)


def test_byte_pieces_found_alike() -> None:
    texts = ["<unk>", *BYTE_PIECES, "a"]
    types = [UNKNOWN] + [BYTE] * 256 + [NORMAL]
    scores = [0.0] * len(texts)
    ours = piece_tables(texts, scores, types)
    assert ours[0] == _pure(lambda: piece_tables(texts, scores, types))[0]
    assert [ours[0][p] for p in BYTE_PIECES] == list(range(1, 257))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.pieces("not bytes", 0),
        lambda m: m.pieces(b"\x0a\x00", -1),
        lambda m: m.pieces(b"\x0a\x00", 3),
        lambda m: m.pieces(b"", 0, 1),
        lambda m: m.gguf_strings(b"", 0, 0, -1, False),
        lambda m: m.gguf_strings(b"abc", 9, 3, 1, False),
        lambda m: m.gguf_strings(None, 0, 0, 1, False),
        lambda m: m.tables(["a"], [0.0], []),
        lambda m: m.tables(["a"], [0.0, 1.0], [1, 1]),
        lambda m: m.tables([b"a"], [0.0], [1]),
        lambda m: m.tables(["a"], [0.0], [1.5]),
        lambda m: m.tables("abc", [], []),
        lambda m: m.piece_chars([1, 2]),
        lambda m: m.piece_chars(5),
        lambda m: m.char_ranges(["ab"]),
        lambda m: m.char_ranges([1]),
        lambda m: m.fields(b"abc", 2, 1),
        lambda m: m.fields(b"abc", 0, 9),
    ],
)
def test_bad_arguments_raise(call: Callable[[Any], Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        call(native.spm)


def test_huge_lengths_do_not_crash() -> None:
    """Lengths and counts near 2**64 are checked before any read."""
    m = native.spm
    assert m is not None
    huge = b"\x0a" + b"\xff" * 9 + b"\x01"
    assert m.pieces(huge, 0) == ([], [], [], 0)
    assert m.fields(b"\x0a" + b"\xff" * 9 + b"\x01", 0, 11) == ([], 0)
    assert m.gguf_strings(b"\xff" * 16, 0, 16, 3, False) == ([], 0)
    assert m.gguf_strings(b"\x00" * 7 + b"\x80" + b"x", 0, 9, 1, True) == ([], 0)
    assert math.isinf(parse_model_proto(_small_model([("<unk>", float("-inf"), UNKNOWN)]))
                      .piece_scores[0])  # fmt: skip

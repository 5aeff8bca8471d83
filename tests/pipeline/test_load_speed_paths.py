"""The fast load paths of SentencePiece, Unigram and tokenizer.json models give exactly what
the careful paths give: the bulk protobuf reader against the field-by-field one (and against
protobuf itself), whole-list table builders against their loops, lazily built tables against
the eager formulas, the GGUF ModelProto built directly against the bytes read back.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.formats.gguf_spm import SpmPiece, model_proto, model_proto_bytes
from core.pipeline.models.from_json import _merges
from core.pipeline.sentencepiece import proto as proto_module
from core.pipeline.sentencepiece import sentencepiece_tokenizer
from core.pipeline.sentencepiece.bpe import SentencePieceBPE, space_neighbours
from core.pipeline.sentencepiece.native_words import columns_words
from core.pipeline.sentencepiece.tables import piece_tables
from core.pipeline.sentencepiece.load import _check_pieces
from core.pipeline.sentencepiece.load import _pieces_look_right
from core.pipeline.sentencepiece.proto import (
    BYTE,
    BYTE_PIECES,
    CONTROL,
    NORMAL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    ModelProto,
    ProtoPiece,
    parse_model_proto,
    split_ids,
)
from core.pipeline.models.unigram import UnigramModel, _with_prefixes, sentencepiece_unigram
from core.pipeline.models.unigram_json import (
    _as_serde_reads,
    _careful_vocab,
    _plain_vocab,
    _serde_floats,
    unigram_from_json,
)
from tests.conftest import need_module

pb2 = need_module("sentencepiece.sentencepiece_model_pb2")

# Pieces as protobuf writes them, with what ends a run of plain ones: byte 0x15 and NUL
# inside a piece, pieces longer than 127 bytes, invalid enum values.
_CHARS = st.sampled_from(["a", "b", "▁", "\x15", "\x00", "\n", "é", "日", "😀", "\x18"])
_TEXTS = st.one_of(
    st.text(_CHARS, max_size=6),
    st.text(_CHARS, min_size=40, max_size=60),  # (up to 240 bytes: a 2-byte length)
)
_SCORES = st.one_of(
    st.floats(width=32),
    st.sampled_from([0.0, -0.0, -1.5, float("nan"), float("-inf")]),
)
_TYPES = st.sampled_from([NORMAL, NORMAL, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE])
_PIECES = st.lists(st.tuples(_TEXTS, _SCORES, _TYPES), max_size=40)


def _serialized(pieces: list[tuple[str, float, int]], *, trailer: bool = True) -> bytes:
    proto = pb2.ModelProto()
    for text, score, kind in pieces:
        entry = proto.pieces.add()
        entry.piece, entry.score = text, score
        if kind != NORMAL:
            entry.type = kind
    if trailer:
        proto.trainer_spec.model_type = pb2.TrainerSpec.BPE
        proto.normalizer_spec.name = "identity"
    return proto.SerializeToString()


def _careful(data: bytes) -> Any:
    """``parse_model_proto`` with the bulk reader off: every field read one at a time."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(proto_module, "_bulk_pieces", lambda buf, pos, model: pos)
        try:
            return parse_model_proto(data)
        except FormatError as err:
            return str(err)


def _read(data: bytes) -> Any:
    try:
        return parse_model_proto(data)
    except FormatError as err:
        return str(err)


def _same(a: Any, b: Any) -> bool:
    """Equal parses (NaN scores compared by their bits) or equal error messages."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    bits = [struct.pack("<d", s) for s in a.piece_scores]
    other = [struct.pack("<d", s) for s in b.piece_scores]
    return (a.piece_texts, a.piece_types, bits, a.trainer_spec, a.normalizer_spec) == (
        b.piece_texts, b.piece_types, other, b.trainer_spec, b.normalizer_spec
    )  # fmt: skip


# ─── the protobuf reader ────────────────────────────────────────────────────────────────


@settings(max_examples=150, deadline=None)
@given(pieces=_PIECES)
def test_bulk_reader_equals_protobuf(pieces: list[tuple[str, float, int]]) -> None:
    data = _serialized(pieces)
    want = pb2.ModelProto()
    want.ParseFromString(data)
    got = parse_model_proto(data)
    assert got.piece_texts == [p.piece for p in want.pieces]
    assert got.piece_types == [p.type for p in want.pieces]
    assert [struct.pack("<d", s) for s in got.piece_scores] == [
        struct.pack("<d", p.score) for p in want.pieces
    ]


@settings(max_examples=150, deadline=None)
@given(pieces=_PIECES, cut=st.integers(0, 10_000), flip=st.integers(0, 10_000), to=st.integers(0, 255))
def test_bulk_reader_equals_careful_reader_on_damaged_files(
    pieces: list[tuple[str, float, int]], cut: int, flip: int, to: int
) -> None:
    """Truncated or with one byte changed: the same parse, or the same one-line error."""
    data = bytearray(_serialized(pieces))
    if data:
        data[flip % len(data)] = to
        data = data[: len(data) - cut % (len(data) + 1) // 3]
    assert _same(_read(bytes(data)), _careful(bytes(data)))


def test_bulk_reader_resumes_after_an_irregular_piece() -> None:
    """A piece holding byte 0x15 (as in Mistral v7) ends one run; the next run starts after."""
    pieces = [(f"p{i}", -float(i), NORMAL) for i in range(50)]
    pieces[20] = ("\x15", -20.0, NORMAL)
    pieces[30] = ("x" * 200, -30.0, USER_DEFINED)
    data = _serialized(pieces)
    got = parse_model_proto(data)
    assert got.piece_texts == [p[0] for p in pieces]
    assert _same(got, _careful(data))


def test_model_proto_pieces_view() -> None:
    proto = ModelProto(["<unk>", "a"], [0.0, -1.0], [UNKNOWN, NORMAL])
    assert proto.pieces == [ProtoPiece("<unk>", 0.0, UNKNOWN), ProtoPiece("a", -1.0, NORMAL)]


# ─── whole-list builders against their loops ────────────────────────────────────────────


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.booleans()), max_size=12))
def test_split_ids_keeps_first_ids(items: list[tuple[str, bool]]) -> None:
    tokens, chosen = [t for t, _ in items], [c for _, c in items]
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    for i, (token, pick) in enumerate(items):
        (first if pick else second).setdefault(token, i)
    got = split_ids(tokens, chosen)
    assert got == (first, second)
    assert [list(d) for d in got] == [list(first), list(second)]  # (and their order)


def _slow_check(proto: ModelProto) -> str:
    """_check_pieces walking piece by piece (its whole-list shortcut off)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("core.pipeline.sentencepiece.load._pieces_look_right", lambda *_, **__: False)
        try:
            _check_pieces(proto, "t.model")
        except FormatError as err:
            return str(err)
    return "ok"


_CHECK_TEXTS = st.sampled_from(["<unk>", "a", "b", "", "<0x41>", "<0x4G>", "<s>"])


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(_CHECK_TEXTS, st.sampled_from([NORMAL, UNKNOWN, BYTE, CONTROL])), max_size=6),
    st.booleans(),
)
@example([("<unk>", UNKNOWN), ("a", NORMAL), ("a", NORMAL)], False)  # defined twice
@example([("<unk>", UNKNOWN), ("a", UNKNOWN)], False)  # two <unk>
@example([("<unk>", UNKNOWN), ("", NORMAL)], False)  # empty
@example([("<unk>", UNKNOWN), ("<0x41>", BYTE)], False)  # byte piece, no byte fallback
@example([("<unk>", UNKNOWN), ("<0x4G>", BYTE)], True)  # no such byte
@example([("<unk>", UNKNOWN), ("<0x41>", BYTE)], True)  # 255 byte pieces missing
@example([("a", NORMAL)], False)  # no <unk>
@example([("<unk>", UNKNOWN), ("a", NORMAL)], True)  # byte fallback without byte pieces
def test_piece_checks_refuse_what_the_loop_refuses(
    items: list[tuple[str, int]], byte_fallback: bool
) -> None:
    proto = ModelProto([t for t, _ in items], [0.0] * len(items), [k for _, k in items])
    proto.trainer_spec.byte_fallback = byte_fallback
    # the shortcut as the loader runs it too: with the BPE model's vocab (piece_tables)
    vocab = piece_tables(proto.piece_texts, proto.piece_scores, proto.piece_types)[0]
    codes = bytes(proto.piece_types)
    # and as it runs with the C twin: no dict, the texts' uniqueness found by its table
    try:
        unique = columns_words(proto.piece_texts, proto.piece_scores, proto.piece_types,
                               unk=0, byte_fallback=byte_fallback, user_defined=[]) is not None
    except ValueError:
        unique = False
    runs = [(None, None, False), (vocab, None, False), (vocab, codes, False), (None, codes, unique)]
    for given, counted, known_unique in runs:
        try:
            _check_pieces(proto, "t.model", given, counted, unique=known_unique)
            fast = "ok"
        except FormatError as err:
            fast = str(err)
        assert fast == _slow_check(proto)


def test_piece_checks_pass_a_byte_fallback_model() -> None:
    texts = ["<unk>", *BYTE_PIECES, "a"]
    proto = ModelProto(texts, [0.0] * len(texts), [UNKNOWN] + [BYTE] * 256 + [NORMAL])
    proto.trainer_spec.byte_fallback = True
    assert _pieces_look_right(proto) and _slow_check(proto) == "ok"


def _neighbours_loop(pieces: list[str]) -> tuple[set[str], set[str]]:
    before, after = set(), set()
    for s in pieces:
        for k, c in enumerate(s):
            if c == "▁" and k > 0:
                before.add(s[k - 1])
            if c == "▁" and k + 1 < len(s):
                after.add(s[k + 1])
    return before, after


@given(st.lists(st.text(st.sampled_from(["a", "▁", "\x00", "é", "]", "\n"]), max_size=5)))
def test_space_neighbours_scan_equals_the_loop(pieces: list[str]) -> None:
    assert space_neighbours(pieces) == _neighbours_loop(pieces)


# ─── lazily built tables ────────────────────────────────────────────────────────────────


def _bpe(pieces: list[tuple[str, float, int]]) -> SentencePieceBPE:
    return SentencePieceBPE([ProtoPiece("<unk>", 0.0, UNKNOWN)] + [ProtoPiece(*p) for p in pieces])


@given(st.lists(st.tuples(st.text("ab▁c", min_size=1, max_size=5), st.just(-1.0), st.just(NORMAL)), max_size=20))
def test_lazy_bigrams_equal_the_eager_set(pieces: list[tuple[str, float, int]]) -> None:
    model = _bpe(pieces)
    normal = {p: i for i, p in enumerate([p[0] for p in pieces], 1)}
    assert model._bigrams == {s[i : i + 2] for s in normal for i in range(len(s) - 1)}
    assert model.pieces == [ProtoPiece("<unk>", 0.0, UNKNOWN)] + [ProtoPiece(*p) for p in pieces]


def _lookup_loop(candidates: dict[str, int]) -> dict[str, int]:
    lookup: dict[str, int] = {}
    for piece in candidates:
        for k in range(1, len(piece)):
            lookup.setdefault(piece[:k], -1)
    lookup.update(candidates)
    return lookup


@given(st.dictionaries(st.text("ab▁", min_size=1, max_size=7), st.integers(-1, 50), max_size=30))
def test_prefix_table_equals_the_loop(candidates: dict[str, int]) -> None:
    maxlen = max(map(len, candidates), default=0)
    assert _with_prefixes(candidates, maxlen) == _lookup_loop(candidates)


@given(_PIECES)
def test_lazy_lattice_equals_the_eager_one(pieces: list[tuple[str, float, int]]) -> None:
    proto = ModelProto(["<unk>"] + [p[0] for p in pieces], [0.0] + [p[1] for p in pieces],
                       [UNKNOWN] + [p[2] for p in pieces])  # fmt: skip
    model = sentencepiece_unigram(proto, byte_fallback=False)
    assert model._lookup == _lookup_loop(model._candidates)
    assert model.pieces == list(zip(proto.piece_texts, proto.piece_scores))
    want = {p: (i if proto.piece_types[i] != UNUSED else -1)
            for p, i in split_ids(proto.piece_texts, [t in (NORMAL, USER_DEFINED, UNUSED)
                                                      for t in proto.piece_types])[0].items()}  # fmt: skip
    assert model._candidates == want


def test_from_columns_equals_the_constructor() -> None:
    tokens, scores = ["<unk>", "a", "ab", "b", "a"], [0.0, -1.0, -1.5, -2.0, -3.0]
    for flavour in ("huggingface", "sentencepiece"):
        a = UnigramModel(list(zip(tokens, scores)), unk_id=0, flavour=flavour)  # type: ignore[arg-type]
        b = UnigramModel.from_columns(tokens, scores, unk_id=0, flavour=flavour)  # type: ignore[arg-type]
        assert (a.vocab, a._scores, a._lookup, a.unk_score) == (b.vocab, b._scores, b._lookup, b.unk_score)
        assert a.tokenize("abba?") == b.tokenize("abba?")


# ─── GGUF: the ModelProto built directly ────────────────────────────────────────────────


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.text(_CHARS, max_size=4), st.floats(-3e38, 3e38) | st.just(float("nan")),
                       st.integers(-1, 8)), min_size=1, max_size=20),  # fmt: skip
    st.integers(-2, 22), st.integers(-2, 22), st.booleans(), st.binary(max_size=8),
)
def test_gguf_model_proto_equals_the_bytes_read_back(
    pieces: list[tuple[str, float, int]], unk: int, bos: int, prefix: bool, charsmap: bytes
) -> None:
    settings_ = dict(model_type=1 + bos % 2, unk_id=unk, bos_id=bos, add_dummy_prefix=prefix,
                     precompiled_charsmap=charsmap)  # fmt: skip
    want = parse_model_proto(model_proto_bytes([SpmPiece(*p) for p in pieces], **settings_))
    tokens, scores, types = (list(c) for c in zip(*pieces))
    got = model_proto(tokens, scores, types, **settings_)
    assert _same(got, want)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(_CHARS, max_size=4), st.floats(width=32),
                          st.integers(-1, 8)), min_size=1, max_size=20))  # fmt: skip
def test_gguf_model_proto_of_float32_scores_skips_the_rounding(
    pieces: list[tuple[str, float, int]],
) -> None:
    """``float32=True`` (a GGUF's float32 scores): the same ModelProto, unrounded."""
    want = parse_model_proto(model_proto_bytes([SpmPiece(*p) for p in pieces], model_type=2,
                                               unk_id=0))  # fmt: skip
    tokens, scores, types = (list(c) for c in zip(*pieces))
    assert _same(model_proto(tokens, scores, types, model_type=2, unk_id=0, float32=True), want)


# ─── tokenizer.json ─────────────────────────────────────────────────────────────────────


@given(st.lists(st.one_of(st.floats(), st.floats(width=32), st.sampled_from([0.0, -0.0, 1e-5, -1e22]))))
def test_serde_floats_equal_one_at_a_time(values: list[float]) -> None:
    got = _serde_floats(values)
    assert [struct.pack("<d", v) for v in got] == [
        struct.pack("<d", _as_serde_reads(v)) for v in values
    ]


_VOCAB_ITEMS = st.one_of(
    st.lists(st.one_of(st.text(max_size=3), st.floats(), st.integers(-3, 3), st.booleans()), max_size=3),
    st.tuples(st.text(max_size=3), st.one_of(st.floats(), st.integers(-3, 3))).map(list),
    st.text(max_size=2),
)


@given(st.lists(_VOCAB_ITEMS, min_size=1, max_size=6))
def test_unigram_vocab_fast_path_equals_the_careful_one(vocab: list[Any]) -> None:
    fast = _plain_vocab(vocab)
    try:
        careful = _careful_vocab(vocab, "t.json")
    except FormatError:
        assert fast is None
        return
    if fast is not None:
        assert fast[0] == careful[0]
        assert [struct.pack("<d", s) for s in fast[1]] == [struct.pack("<d", s) for s in careful[1]]


def test_unigram_from_json_int_scores() -> None:
    model = unigram_from_json({"vocab": [["<unk>", 0], ["a", -1]], "unk_id": 0}, "t.json")
    assert model.pieces == [("<unk>", 0.0), ("a", -1.0)]


_MERGE_ITEMS = st.one_of(
    st.text(st.sampled_from("ab "), max_size=4),
    st.lists(st.text("ab", max_size=2), min_size=1, max_size=3),
)


@given(st.lists(_MERGE_ITEMS, max_size=6))
def test_merges_fast_paths_equal_the_careful_loop(raw: list[Any]) -> None:
    want: list[tuple[str, str]] | str = []
    for i, item in enumerate(raw):
        parts = item.split(" ") if isinstance(item, str) else item
        if not isinstance(parts, list) or len(parts) != 2:
            want = "error"
            break
        want.append((parts[0], parts[1]))  # type: ignore[union-attr]
    try:
        got: Any = _merges({"merges": raw}, "t.json")
    except FormatError:
        got = "error"
    assert got == want
    assert all(type(m) is tuple for m in got) if got != "error" else True


# ─── a whole file ───────────────────────────────────────────────────────────────────────


def test_a_bad_file_still_fails_at_load() -> None:
    data = _serialized([("<unk>", 0.0, UNKNOWN), ("a", -1.0, NORMAL), ("a", -2.0, NORMAL)])
    with pytest.raises(FormatError, match=r"piece 'a' is defined twice \(IDs 1 and 2\)"):
        sentencepiece_tokenizer(data)
    data = _serialized([("<unk>", 0.0, UNKNOWN), ("<0x41>", 0.0, BYTE)])
    with pytest.raises(FormatError, match="although byte_fallback is off"):
        sentencepiece_tokenizer(data)


def test_lazy_tables_leave_the_fingerprint_alone() -> None:
    """Lazily built tables are private: a model's fingerprint (its public attributes) is
    the same before and after the first encode."""
    from core.engine.fingerprint import fingerprint_of

    pieces = [("<unk>", 0.0, UNKNOWN), ("a", -1.0, NORMAL), ("▁a", -0.5, NORMAL), ("b", -2.0, NORMAL)]
    proto = ModelProto(*(list(c) for c in zip(*pieces)))
    for model in (SentencePieceBPE(proto), sentencepiece_unigram(proto, byte_fallback=False)):
        before = fingerprint_of(model)
        model.tokenize("▁a" * 40 + "ab" * 40)  # (a long word: SentencePieceBPE's bigrams too)
        model.score(1) if isinstance(model, UnigramModel) else model.pieces
        assert fingerprint_of(model) == before


@settings(max_examples=300, deadline=None)
@given(types=st.lists(st.sampled_from([1, 1, 2, 3, 3, 4, 6, 93, 255, 300]), max_size=60),
       kind=st.sampled_from([1, 2, 3, 4, 6, 93, 255, 300]))  # fmt: skip
@example(types=[3] * 5 + [1] + [3] * 3, kind=3)  # runs, the last one at the end
@example(types=[93, 3, 93], kind=93)  # a byte regex syntax would read as a character class
def test_ids_of_type_by_runs_is_the_loop(types: list[int], kind: int) -> None:
    from core.pipeline.sentencepiece.tables import ids_of_type, type_codes

    want = [i for i, t in enumerate(types) if t == kind]
    assert ids_of_type(types, kind) == want
    assert ids_of_type(types, kind, type_codes(types)) == want


def test_may_be_formed_says_maybe_when_unsure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its bounds the answer is "maybe" (the careful whole-text path), never "no"."""
    from core.pipeline.sentencepiece import tables

    never = tables.may_be_formed(["[X]", "ab"], lambda s: s != "[X]")
    assert never == ["ab"]
    longest = "a" * (tables.FORMED_LONGEST + 1)
    assert tables.may_be_formed([longest], lambda s: False) == [longest]
    monkeypatch.setattr(tables, "FORMED_BUDGET", 1)
    assert tables.may_be_formed(["[X]", "abc"], lambda s: s != "[X]") == ["[X]", "abc"]

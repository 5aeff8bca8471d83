"""A ``.model`` file's pieces kept packed until a page needs them as lists
(core/pipeline/sentencepiece/packed.py), and the C that reads them so:
``tokplay_native.spm.columns`` (the pieces as packed columns, no object per piece),
``tokplay_native.bpe.spm_words_raw`` (the encode table from the file's bytes) and
``tokplay_native.spm.char_cuts`` (the words no piece crosses, without a regex).

Each is checked against its twin: ``columns`` against ``pieces`` on real and made-up files,
``spm_words_raw`` against ``spm_words`` on arbitrary pieces, ``CharCuts.split`` against
``cuts.WordCuts`` and ``cut_regex``; and a whole load: what it makes (no list until one is
read), what it answers (sentencepiece's IDs and text), and that it still pickles.
"""

from __future__ import annotations

import math
import pickle
from array import array
from typing import Any

import pytest
import sentencepiece as spm_lib
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core import native
from core.pipeline.sentencepiece import sentencepiece_tokenizer
from core.pipeline.sentencepiece.cuts import WordCuts, cut_regex
from core.pipeline.sentencepiece.packed import PieceColumns
from core.pipeline.sentencepiece.proto import (
    BYTE,
    CONTROL,
    NORMAL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    parse_model_proto,
)
from tests.test_native_spm import SPM_KEYS, TEXTS, _small_model
from tests.test_real_models import _mistral_path

spm, bpe = native.spm, native.bpe


def test_the_twins_are_built() -> None:
    assert spm is not None and bpe is not None, "tokplay_native is not built: `pip install -e .`"


@pytest.fixture(scope="module")
def real_models() -> dict[str, bytes]:
    return {key: _mistral_path(key).read_bytes() for key in SPM_KEYS}


# ─── columns: pieces() without an object per piece ──────────────────────────────────────


def _unpacked(spans: bytes, scores: bytes, types: bytes, buf: bytes) -> Any:
    floats = array("d")
    floats.frombytes(scores)
    return spm.texts(buf, spans), floats.tolist(), list(types)


@pytest.mark.parametrize("key", SPM_KEYS)
def test_columns_are_the_pieces_of_a_real_file(real_models: dict[str, bytes], key: str) -> None:
    data = real_models[key]
    texts, scores, types, end = spm.pieces(data, 0)
    spans, floats, codes, after = spm.columns(data, 0)
    assert after == end and len(texts) >= 32_000
    assert _unpacked(spans, floats, codes, data) == (texts, scores, types)


PIECE_TEXT = st.text("ab▁é😀\x00", max_size=5).map(str.encode) | st.binary(max_size=4)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.tuples(PIECE_TEXT, st.floats(width=32), st.none() | st.integers(-2, 8)),
                      max_size=6),
       tail=st.binary(max_size=6))  # fmt: skip
@example(parts=[(b"a", 1.0, 1), (b"\xed\xa0\x80", 0.0, 1)], tail=b"")  # a surrogate stops
@example(parts=[(b"", -1.0, 3)], tail=b"\x0a\x05")  # an empty text, a piece cut short
@example(parts=[(b"x" * 127, -1.0, None), (b"y" * 128, -2.0, 6), ("▁é".encode(), 0.5, 0)],
         tail=b"")  # the longest text C's common layout reads, one longer, an enum 0
def test_columns_read_what_pieces_reads(
    parts: list[tuple[bytes, float, int | None]], tail: bytes
) -> None:
    from tests.test_native_spm import _field

    blob = b"".join(
        _field(1, 2, (_field(1, 2, text) if text else b"") + _field(2, 5, array("f", [s]).tobytes())
               + (b"" if kind is None else _field(3, 0, kind % 2**64)))
        for text, s, kind in parts
    ) + tail  # fmt: skip
    texts, scores, types, end = spm.pieces(blob, 0)
    spans, floats, codes, after = spm.columns(blob, 0)
    assert after == end
    got = _unpacked(spans, floats, codes, blob)
    assert got[0] == texts and got[2] == types
    assert [math.copysign(1, x) for x in got[1]] == [math.copysign(1, x) for x in scores]
    assert [x if x == x else "nan" for x in got[1]] == [x if x == x else "nan" for x in scores]


def test_texts_refuses_spans_outside_the_buffer() -> None:
    span = array("q", [2, 5]).tobytes()
    with pytest.raises(ValueError, match="outside"):
        spm.texts(b"abc", span)
    with pytest.raises(ValueError, match="UTF-8"):
        spm.texts(b"\xff", array("q", [0, 1]).tobytes())
    with pytest.raises(ValueError, match="pairs"):
        spm.texts(b"abc", b"\x00" * 9)
    assert spm.columns(b"\x0a" + b"\xff" * 9 + b"\x01", 0)[3] == 0  # (a huge length: no read)


# ─── spm_words_raw: spm_words from the file's bytes ─────────────────────────────────────

TYPES = st.sampled_from([NORMAL, NORMAL, NORMAL, USER_DEFINED, CONTROL, BYTE, UNKNOWN, UNUSED])
PIECES = st.lists(
    st.tuples(st.text("ab▁é😀", min_size=0, max_size=4),
              st.sampled_from([0.0, -0.0, -1.0, -2.0, 1.5, -math.inf, math.nan]) | st.floats(width=32),
              TYPES),
    max_size=30,
)  # fmt: skip
WORDS = st.lists(st.text("ab▁é😀c", min_size=1, max_size=12), max_size=8)


def _outcome(build: Any) -> Any:
    try:
        return build()
    except ValueError as err:
        return ("ValueError", str(err))


def _encode(table: Any, words: list[str]) -> list[int]:
    out: list[int] = []
    bpe.encode_words(words, {}, table, lambda w: (-1, len(w)), 256, 1000, out)
    return out


@settings(max_examples=400, deadline=None)
@given(pieces=PIECES, words=WORDS, user=st.sampled_from(["", "a", "é😀"]),
       fallback=st.booleans())  # fmt: skip
@example(pieces=[("a", 0.0, NORMAL), ("a", -1.0, CONTROL)], words=["a"], user="", fallback=True)
@example(pieces=[("a", 0.0, NORMAL), ("", -1.0, NORMAL)], words=["a"], user="", fallback=True)
@example(pieces=[("a", math.nan, NORMAL)], words=["a"], user="", fallback=False)
def test_spm_words_raw_is_spm_words(pieces, words, user, fallback) -> None:
    byte = [(f"<0x{b:02X}>", 0.0, BYTE) for b in range(0, 256, 7)]
    texts, scores, types = (list(c) for c in zip(("<unk>", 0.0, UNKNOWN), *byte, *pieces))
    cols = PieceColumns.pack(texts, scores, types)
    options = dict(unk=0, byte_fallback=fallback, user_first=user)
    want = _outcome(lambda: bpe.spm_words(texts, scores, types, **options))
    got = _outcome(lambda: bpe.spm_words_raw(cols.buf, cols.spans, cols.scores, cols.types,
                                             **options))  # fmt: skip
    if want is None or isinstance(want, tuple):
        assert got == want
        return
    assert _encode(got, words) == _encode(want, words)
    assert [got.piece_id(t) for t in texts + ["zz"]] == [want.piece_id(t) for t in texts + ["zz"]]


def test_spm_words_raw_refuses_spans_outside_the_buffer() -> None:
    cols = PieceColumns.pack(["<unk>", "ab"], [0.0, -1.0], [UNKNOWN, NORMAL])
    options = dict(unk=0, byte_fallback=False, user_first="")
    with pytest.raises(ValueError, match="outside"):
        bpe.spm_words_raw(cols.buf[:3], cols.spans, cols.scores, cols.types, **options)
    with pytest.raises(ValueError, match="different lengths"):
        bpe.spm_words_raw(cols.buf, cols.spans, cols.scores[:8], cols.types, **options)


# ─── char_cuts: the words no piece crosses, without a regex ─────────────────────────────

CUT_CHARS = "ab▁▁é😀\n x"


@settings(max_examples=600, deadline=None)
@given(pieces=st.lists(st.text(CUT_CHARS, min_size=1, max_size=4), max_size=10),
       text=st.text(CUT_CHARS + "\ud800", max_size=30))  # fmt: skip
@example(pieces=["▁a", "b▁"], text="▁ab▁▁b▁")  # a ▁ after something: the regex's lookarounds
@example(pieces=[], text="ab▁")  # no piece: cut at each ▁ alone
@example(pieces=["▁"], text="▁▁x▁")
def test_char_cuts_split_as_word_cuts(pieces: list[str], text: str) -> None:
    want = WordCuts(pieces).split(text)
    assert want == [w for w in cut_regex(pieces).split(text) if w]
    assert spm.char_cuts(pieces).split(text) == want
    assert spm.char_cuts(iter(pieces)).split(text) == want
    # from packed pieces, of which the reserved ones (never merged into) are left out
    cols = PieceColumns.pack(["<unk>", *pieces, "x▁é"], [0.0] * (len(pieces) + 2),
                             [UNKNOWN, *[NORMAL] * len(pieces), CONTROL])  # fmt: skip
    assert spm.char_cuts(cols.buf, cols.spans, cols.types).split(text) == want
    longest = max(map(len, want), default=0)
    assert WordCuts(pieces).split_longest(text) == (want, longest)
    assert spm.char_cuts(pieces).split_longest(text) == (want, longest)
    # bounds: where those words start, and the text's end, with no word made
    at, bound_longest = spm.char_cuts(pieces).bounds(text)
    starts = list(memoryview(at).cast("n"))
    assert [text[a:b] for a, b in zip(starts, starts[1:])] == want
    assert (len(starts) == 0) == (text == "") and bound_longest == longest


def test_char_cuts_refuses_what_is_no_piece() -> None:
    with pytest.raises(TypeError):
        spm.char_cuts([1])
    with pytest.raises(TypeError):
        spm.char_cuts(["a"]).split(b"a")
    with pytest.raises(TypeError):
        spm.char_cuts(["a"]).split_longest(b"a")
    with pytest.raises(TypeError):
        spm.char_cuts(["a"]).bounds(b"a")
    with pytest.raises(ValueError):
        spm.char_cuts(b"\xff", array("q", [0, 1]).tobytes(), b"\x01")
    with pytest.raises(ValueError):
        spm.char_cuts(b"a", array("q", [0, 2]).tobytes(), b"\x01")
    with pytest.raises(TypeError):
        spm.char_cuts(b"a", b"")


# ─── a whole load ───────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("key", SPM_KEYS)
def test_a_load_keeps_the_pieces_packed_and_answers_as_sentencepiece(
    real_models: dict[str, bytes], key: str
) -> None:
    data = real_models[key]
    tok, sp = sentencepiece_tokenizer(data), spm_lib.SentencePieceProcessor(model_proto=data)
    source = tok.model._source
    plain = "Hello world, how are you? 日本語のテキスト 😀"
    assert tok.encode(plain) == sp.encode(plain)
    assert source.packed is not None  # (encoding plain text needs no list)
    for text in TEXTS:  # (a user-defined piece's first character: the dicts, unpacked)
        assert tok.encode(text) == sp.encode(text)
    assert tok.special_token_ids == {sp.id_to_piece(i): i for i in range(sp.get_piece_size())
                                     if sp.is_control(i)}  # fmt: skip
    ids = sp.encode(TEXTS[2])
    assert tok.decode(ids) == sp.decode(ids)
    assert source.packed is None  # (decoding reads the texts: unpacked once)
    assert tok.model.id_to_token(ids[0]) == sp.id_to_piece(ids[0])
    assert source == parse_model_proto(data)  # (the lists unpacked are the parsed ones)


def test_a_packed_model_pickles_and_its_copy_encodes_alike(real_models: dict[str, bytes]) -> None:
    tok = sentencepiece_tokenizer(real_models["v7"])
    text = "東京は日本の首都です, isn't it?"
    want = tok.encode(text)
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.encode(text) == want
    assert copy.decode(want) == tok.decode(want)


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.text("ab▁é😀\n", min_size=1, max_size=4),
                  st.sampled_from([-1.0, -2.0, -3.5, 0.0]),
                  st.sampled_from([NORMAL, NORMAL, USER_DEFINED, UNUSED, CONTROL])),
        max_size=12, unique_by=lambda p: p[0],
    ),
    text=st.text("ab▁é😀\n xy", max_size=30),
)  # fmt: skip
def test_a_packed_load_encodes_as_an_unpacked_one(pieces, text) -> None:
    data = _small_model([("<unk>", 0.0, UNKNOWN), *pieces])
    packed = sentencepiece_tokenizer(data, name="m.model")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "spm", None)  # (the parser makes the lists at once)
        unpacked = sentencepiece_tokenizer(data, name="m.model")
    assert packed.encode(text) == unpacked.encode(text)
    assert packed.decode(packed.encode(text)) == unpacked.decode(unpacked.encode(text))


def test_a_charsmap_reads_its_units_on_first_use_and_hashes_the_same() -> None:
    """A Unigram model's nmt_nfkc map loads without its trie as a list (the root's children
    are read from the bytes); the list, made later, is what the bytes hold, and the
    fingerprint is the same before and after."""
    import struct

    from core.engine.fingerprint import fingerprint_of
    from core.pipeline.sentencepiece.normalizer import CharsMap
    from tests.pipeline.test_unigram import loaded

    blob = loaded("nmt_nfkc")[0].normalizer.charsmap._blob  # type: ignore[union-attr]
    lazy, eager = CharsMap(blob, "m"), CharsMap(blob, "m")
    assert eager.units == list(struct.unpack_from(f"<{eager._size // 4}I", blob, 4))
    assert lazy.first_chars() == eager.first_chars() and "units" not in vars(lazy)
    assert fingerprint_of(lazy) == fingerprint_of(eager)
    assert lazy.longest(" ａ".encode(), 1) == eager.longest(" ａ".encode(), 1)


def test_a_column_read_while_another_thread_unpacks_finds_the_lists(
    real_models: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions reading a shared model's pieces first at the same moment: the second
    reader, arriving while the first makes the lists (simulated here from inside lists()),
    gets whole, equal columns, never a missing one."""
    proto = parse_model_proto(real_models["v1"])
    assert proto.packed is not None
    lists = PieceColumns.lists
    seen: list[int] = []

    def racing(self: PieceColumns) -> Any:
        made = lists(self)
        if not seen:  # (once: the other thread's read, in the middle of this one)
            seen.append(-1)
            seen[0] = len(proto.piece_texts) + len(proto.piece_scores) + len(proto.piece_types)
        return made

    monkeypatch.setattr(PieceColumns, "lists", racing)
    texts = proto.piece_texts
    assert seen == [3 * len(texts)] and proto.packed is None
    assert len(proto.piece_scores) == len(proto.piece_types) == len(texts) == 32_000

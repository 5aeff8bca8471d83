"""A GGUF ``llama`` vocab loaded from packed pieces (core/formats/gguf_packed.py): the reader
keeps the tokens as spans into the array's bytes (``tokplay_native.spm.gguf_spans``,
:class:`~core.formats.gguf.GGUFStrings`) and the scores and types as arrays
(``tokplay_native.spm.float32_doubles``), and the SentencePiece loader builds its encode
table from those bytes, with no str per token.

Each piece is checked against its twin: ``gguf_spans`` against ``gguf_strings``,
``float32_doubles`` against ``array('f').tolist()``, a packed read against a list read; and
a whole load, packed, against the list route (``read_gguf_metadata`` without ``packed``)
and the pure path (C off), on llama.cpp's SentencePiece GGUFs and on made-up, mutated and
truncated ones: the same IDs, text, fingerprint and special tokens, or the same error.
"""

from __future__ import annotations

import math
import pickle
import struct
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sentencepiece as spm_lib
from hypothesis import HealthCheck, example, given, settings, strategies as st

from core import native
from core.errors import FormatError
from core.formats import gguf as gguf_module
from core.formats.gguf import GGUFStrings, read_gguf_metadata, write_gguf
from core.formats.gguf_packed import packed_pieces, score_doubles, type_bytes
from core.formats.gguf_vocab import (
    sentencepiece_model_from_gguf,
    tokenizer_from_gguf,
    tokenizer_from_gguf_metadata,
)
from tests.test_formats_gguf import read_cases
from tests.test_native_spm import TEXTS, _outcome, _pure

spm = native.spm
LLAMA_FILES = ["ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf", "ggml-vocab-baichuan.gguf"]
K = "tokenizer.ggml."


def test_the_twins_are_built() -> None:
    assert spm is not None and native.bpe is not None, "not built: `pip install -e .`"


def _packed(tok: Any) -> bool:
    """The tokenizer's model still holds the file's packed pieces (no list made)."""
    source = vars(tok.model).get("_source")
    return source is not None and source.packed is not None


def _listed(data: bytes) -> Any:
    """The list route: the metadata read as lists, as before packed reads."""
    return tokenizer_from_gguf_metadata(read_gguf_metadata(data))


def _behaviour(tok: Any, texts: list[str]) -> Any:
    """What a tokenizer answers: IDs (with and without BOS), text back, specials, each
    token's text and score, the chat template, the fingerprint."""
    encoded = [tok.encode(t) for t in texts]
    return (
        encoded,
        [tok.encode(t, add_special_tokens=True) for t in texts],
        [tok.decode(ids) for ids in encoded],
        tok.special_tokens, tok.special_token_ids, tok.n_vocab,
        [(tok.id_to_token(i), tok.score(i)) for i in range(tok.n_vocab)],
        None if tok.chat_template is None else tok.chat_template.get(),
        tok.fingerprint(),
    )  # fmt: skip


def _load(data: bytes, texts: list[str]) -> Any:
    return _outcome(lambda: _behaviour(tokenizer_from_gguf(data), texts))


# ─── the C readers against their twins ──────────────────────────────────────────────────


@settings(max_examples=500, deadline=None)
@given(buf=st.binary(max_size=80) | st.lists(st.text("a▁é😀", max_size=4), max_size=5).map(
           lambda ts: write_gguf({"t": ts})[24 + 8 + 1 + 4 + 12:] if ts else b""),
       pos=st.integers(0, 90), stop=st.integers(-5, 90), count=st.integers(0, 6),
       big=st.booleans())  # fmt: skip
@example(buf=struct.pack("<Q", 2) + b"\xed\xa0", pos=0, stop=10, count=1, big=False)
def test_gguf_spans_read_what_gguf_strings_reads(buf: bytes, pos: int, stop: int, count: int,
                                                 big: bool) -> None:  # fmt: skip
    """The same strings, the same end: spans into buf[pos:end], checked UTF-8."""
    pos = min(pos, len(buf))
    strings, end = spm.gguf_strings(buf, pos, stop, count, big)
    spans, after = spm.gguf_spans(buf, pos, stop, count, big)
    assert after == end
    assert spm.texts(buf[pos:end], spans) == strings


def test_gguf_spans_stop_where_gguf_strings_stops() -> None:
    two = struct.pack("<Q", 2) + b"ab" + struct.pack("<Q", 1) + b"c"
    for stop, count in ((len(two), 5), (len(two) - 1, 5), (9, 5), (len(two), 1), (len(two), 0)):
        strings, end = spm.gguf_strings(two, 0, stop, count, False)
        spans, after = spm.gguf_spans(two, 0, stop, count, False)
        assert (spm.texts(two[:after], spans), after) == (strings, end)
    assert spm.gguf_spans(two, 10, len(two), 5, False) == (struct.pack("=qq", 8, 1), len(two))


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=64).map(lambda b: b[: len(b) // 4 * 4]))
@example(raw=struct.pack("<f", math.nan) + struct.pack("<I", 0x7F800001) + struct.pack("<f", -0.0))
def test_float32_doubles_are_the_floats(raw: bytes) -> None:
    """Every float32 (NaNs, infinities, -0.0, subnormals) widened as Python widens it."""
    floats = array("f")
    floats.frombytes(raw)
    widened = array("d")
    widened.frombytes(spm.float32_doubles(floats))
    assert widened.tobytes() == array("d", floats.tolist()).tobytes()
    assert spm.float32_doubles(raw) == widened.tobytes()


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.float32_doubles(b"abc"),
        lambda m: m.float32_doubles("abcd"),
        lambda m: m.gguf_spans(b"", -1, 0, 1, False),
        lambda m: m.gguf_spans(b"", 0, 0, -1, False),
        lambda m: m.gguf_spans(b"", 5, 0, 1, False),
        lambda m: m.gguf_spans(b"", 0, 0, 1),
        lambda m: m.gguf_spans("text", 0, 0, 1, False),
    ],
)
def test_bad_arguments_raise(call: Callable[[Any], Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        call(spm)


def test_huge_lengths_do_not_crash() -> None:
    huge = struct.pack("<Q", 2**64 - 1) + b"x"
    assert spm.gguf_spans(huge, 0, len(huge), 3, False) == (b"", 0)
    assert spm.gguf_spans(huge, 0, 2**62, 2**62, True) == (b"", 0)


def test_type_bytes_and_score_doubles() -> None:
    """Types one byte each only where every value fits a byte; scores only from float32."""
    assert type_bytes(array("i", [1, 6, 2, 255]), 4) == b"\x01\x06\x02\xff"
    assert type_bytes(array("i", [1, -1]), 2) is None
    assert type_bytes(array("b", [1, -1]), 2) == b"\x01\xff"
    assert type_bytes(array("Q", [3, 2**40]), 1) == b"\x03"
    assert type_bytes(array("Q", [3, 2**40]), 2) is None
    assert type_bytes(array("f", [1.0]), 1) is None
    assert score_doubles(array("f", [0.5, 1.5]), 1) == struct.pack("=d", 0.5)
    assert score_doubles(array("d", [0.5]), 1) is None
    assert score_doubles(array("f", [0.5]), 2) is None


# ─── GGUFStrings: a read-only list of str ───────────────────────────────────────────────


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(max_size=4), max_size=6), index=st.integers(-8, 8),
       cut=st.slices(8))  # fmt: skip
def test_gguf_strings_reads_as_its_list(texts: list[str], index: int, cut: slice) -> None:
    packed = GGUFStrings.pack(texts)
    for strings in (packed, _pure(lambda: GGUFStrings(packed.buf, packed.spans))):
        assert len(strings) == len(texts) and list(strings) == texts == strings.tolist()
        assert strings[cut] == texts[cut]
        if -len(texts) <= index < len(texts):
            assert strings[index] == texts[index] == _pure(lambda: strings[index])
        else:
            with pytest.raises(IndexError):
                strings[index]


# ─── a packed read against a list read ──────────────────────────────────────────────────


def _as_lists(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v.tolist() if isinstance(v, (array, GGUFStrings)) else v for k, v in fields.items()}


def _read(data: bytes, **options: Any) -> Any:
    def read() -> Any:
        meta = read_gguf_metadata(data, **options)
        return _as_lists(meta.fields), meta.types

    return _outcome(read)


@settings(max_examples=300, deadline=None)
@given(
    tokens=st.lists(st.text(max_size=5), min_size=1, max_size=8),
    cut=st.integers(0, 400),
    changes=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
    limit=st.integers(30, 500),
)
def test_packed_reads_alike(tokens: list[str], cut: int, changes: list[tuple[int, int]],
                            limit: int) -> None:  # fmt: skip
    """A GGUF vocab cut short, with bytes changed, or over a metadata limit: a packed read
    (C on and off) gives the lists' values, or the same error."""
    n = len(tokens)
    blob = bytearray(write_gguf({K + "model": "llama", K + "tokens": tokens,
                                 K + "scores": [0.5] * n, K + "token_type": [1] * n}))  # fmt: skip
    for at, byte in changes:
        if at < len(blob):
            blob[at] = byte
    data = bytes(blob[: max(cut, 24)])
    want = _read(data)
    assert _read(data, packed=True) == want
    assert _pure(lambda: _read(data, packed=True)) == want
    assert _read(data, packed=True, max_metadata_bytes=limit) == _read(
        data, max_metadata_bytes=limit
    )


def test_a_file_read_a_chunk_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A path is read in chunks: a vocab that crosses a chunk's end reads the same, packed
    (the window grows to hold the whole array)."""
    tokens = [f"▁t{i}é" for i in range(3000)]
    path = tmp_path / "v.gguf"
    path.write_bytes(write_gguf({K + "model": "llama", K + "tokens": tokens}))
    for chunk in (64, 1000, 1 << 20):
        monkeypatch.setattr(gguf_module, "_CHUNK", chunk)
        meta = read_gguf_metadata(path, packed=True)
        assert _as_lists(meta.fields)[K + "tokens"] == tokens
        assert isinstance(meta.fields[K + "tokens"], GGUFStrings)


# ─── whole loads: packed, listed and pure ───────────────────────────────────────────────


@pytest.fixture(scope="module")
def llama_files(llama_cpp_vocabs: Path) -> dict[str, bytes]:
    return {name: (llama_cpp_vocabs / name).read_bytes() for name in LLAMA_FILES}


@pytest.mark.parametrize("name", LLAMA_FILES)
def test_real_llama_vocab_loads_packed_alike(llama_files: dict[str, bytes], llama_cpp_vocabs: Path,
                                             name: str) -> None:  # fmt: skip
    """llama.cpp's SentencePiece GGUFs: packed (no list made at load), they answer as the
    list route and the pure path, on their own test cases and on varied text."""
    data = llama_files[name]
    tok = tokenizer_from_gguf(data)
    assert _packed(tok)
    cases = read_cases(llama_cpp_vocabs / name) if name != "ggml-vocab-baichuan.gguf" else []
    texts = TEXTS + [text for text, _ in cases]
    assert tok.fingerprint() == _listed(data).fingerprint()  # (before any list is made)
    want = _behaviour(_listed(data), texts)
    assert _behaviour(tok, texts) == want
    assert _pure(lambda: _behaviour(tokenizer_from_gguf(data), texts)) == want
    assert all(tok.encode(text) == ids for text, ids in cases)
    path_tok = tokenizer_from_gguf(llama_cpp_vocabs / name)
    assert _packed(path_tok) and _behaviour(path_tok, TEXTS) == _behaviour(tok, TEXTS)
    # a worker process gets a copy that encodes alike
    fresh = tokenizer_from_gguf(data)
    assert pickle.loads(pickle.dumps(fresh)).encode(TEXTS[2]) == tok.encode(TEXTS[2])


def test_real_llama_vocab_equals_sentencepiece(llama_files: dict[str, bytes]) -> None:
    """The packed load against the sentencepiece library on the .model written from it
    (packed read or not, the same bytes)."""
    data = llama_files["ggml-vocab-llama-spm.gguf"]
    model = sentencepiece_model_from_gguf(read_gguf_metadata(data))
    assert sentencepiece_model_from_gguf(read_gguf_metadata(data, packed=True)) == model
    oracle = spm_lib.SentencePieceProcessor(model_proto=model)
    tok = tokenizer_from_gguf(data)
    for text in TEXTS:
        ids = oracle.encode(text)
        assert tok.encode(text) == ids and tok.decode(ids) == oracle.decode(ids)


def test_without_the_bpe_twin(
    llama_files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Packed pieces but no C encode table (the dicts from the unpacked lists): alike."""
    data = llama_files["ggml-vocab-phi-3.gguf"]
    want = _behaviour(_listed(data), TEXTS)
    monkeypatch.setattr(native, "bpe", None)
    assert _behaviour(tokenizer_from_gguf(data), TEXTS) == want


SPECIALS = ["<unk>", "<s>", "</s>"]
PIECE = st.text("ab▁é", min_size=1, max_size=3)


@st.composite
def llama_vocabs(draw: st.DrawFn) -> dict[str, Any]:
    """A llama vocab's metadata: pieces after the three specials (some spelled twice or
    empty), types of any value (as int32 or uint8), scores float32, int32 or none."""
    tokens = SPECIALS + draw(st.lists(PIECE | st.just(""), max_size=10))
    if draw(st.booleans()):
        tokens += [f"<0x{b:02X}>" for b in range(256)]
    n = len(tokens)
    types = [2, 3, 3] + draw(st.lists(st.integers(-2, 300) | st.sampled_from([1, 1, 2, 4, 5]),
                                      min_size=n - 3, max_size=n - 3))  # fmt: skip
    types[len(tokens) - 256 if n > 256 else n :] = [6] * (256 if n > 256 else 0)
    fields: dict[str, Any] = {K + "model": "llama", K + "tokens": tokens}
    kind = draw(st.sampled_from(["int32", "uint8", "none", "short"]))
    if kind == "int32":
        fields[K + "token_type"] = types
    elif kind == "uint8":
        fields[K + "token_type"] = bytes(t & 0xFF for t in types)
    elif kind == "short":
        fields[K + "token_type"] = types[:-1] or [1]
    scores = draw(st.sampled_from(["float32", "int32", "none"]))
    if scores == "float32":
        fields[K + "scores"] = [draw(st.floats(-50, 0, width=32)) for _ in tokens]
    elif scores == "int32":
        fields[K + "scores"] = [-i for i in range(n)]
    for key, value in draw(st.dictionaries(st.sampled_from(["bos", "eos", "unknown"]),
                                           st.integers(-1, n + 1), max_size=2)).items():  # fmt: skip
        fields[f"{K}{key}_token_id"] = value
    for flag in draw(st.lists(st.sampled_from(["add_bos_token", "add_eos_token",
                                               "add_space_prefix"]), max_size=2)):  # fmt: skip
        fields[K + flag] = draw(st.booleans())
    if draw(st.booleans()):
        fields["tokenizer.chat_template"] = (
            "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"
        )
    return fields


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=llama_vocabs(), texts=st.lists(st.text("ab▁é <>s/x\n", max_size=12), max_size=3),
       cut=st.integers(0, 40))  # fmt: skip
@example(fields={K + "model": "llama", K + "tokens": SPECIALS + ["a", "a"]}, texts=["aa"], cut=0)
@example(fields={K + "model": "llama", K + "tokens": SPECIALS + ["", "[EMPTY_3]"]}, texts=[], cut=0)
@example(fields={K + "model": "llama", K + "tokens": SPECIALS + ["", "a"]}, texts=["a b"], cut=0)
def test_made_up_llama_vocab_loads_alike(
    fields: dict[str, Any], texts: list[str], cut: int
) -> None:
    """Made-up vocabs, whole or cut short: a packed load answers as the list route and the
    pure path, or fails with the same error (a token spelled twice, an empty one renamed)."""
    data = write_gguf(fields)
    if cut:
        data = data[:-cut]
    want = _outcome(lambda: _behaviour(_listed(data), texts))
    assert _load(data, texts) == want
    assert _pure(lambda: _load(data, texts)) == want


def _big_endian(fields: dict[str, Any]) -> bytes:
    """``write_gguf(fields)`` as a big-endian machine writes it (strings, int32 and float32
    arrays, string values)."""

    def string(s: str) -> bytes:
        raw = s.encode()
        return struct.pack(">Q", len(raw)) + raw

    out = [b"GGUF", struct.pack(">IQQ", 3, 0, len(fields))]
    for key, value in fields.items():
        out.append(string(key))
        if isinstance(value, str):
            out.append(struct.pack(">I", 8) + string(value))
        elif isinstance(value[0], str):
            out.append(struct.pack(">IIQ", 9, 8, len(value)) + b"".join(map(string, value)))
        elif isinstance(value[0], float):
            out.append(struct.pack(f">IIQ{len(value)}f", 9, 6, len(value), *value))
        else:
            out.append(struct.pack(f">IIQ{len(value)}i", 9, 5, len(value), *value))
    return b"".join(out)


def test_big_endian_vocab_loads_alike() -> None:
    fields = {K + "model": "llama", K + "tokens": SPECIALS + ["▁a", "b", "▁ab", "é"],
              K + "scores": [0.0, 0.0, 0.0, -1.0, -2.0, -0.5, -3.0],
              K + "token_type": [2, 3, 3, 1, 1, 1, 9]}  # fmt: skip
    data = _big_endian(fields)
    assert _read(data, packed=True) == _read(write_gguf(fields))
    tok = tokenizer_from_gguf(data)
    assert _packed(tok)
    texts = ["ab é", "a"]
    assert _behaviour(tok, texts) == _behaviour(_listed(write_gguf(fields)), texts)


def test_errors_read_as_before() -> None:
    """A token spelled twice: the GGUF's message, not the loader's; an empty token: renamed."""
    twice = write_gguf({K + "model": "llama", K + "tokens": SPECIALS + ["a", "b", "a"]})
    with pytest.raises(FormatError, match=r"token 'a' appears twice \(IDs 3 and 5\)"):
        tokenizer_from_gguf(twice)
    empty = write_gguf({K + "model": "llama", K + "tokens": SPECIALS + ["", "a"]})
    tok = tokenizer_from_gguf(empty)
    assert tok.id_to_token(3) == "[EMPTY_3]" and not _packed(tok)
    packed = packed_pieces(read_gguf_metadata(empty, packed=True))
    assert packed is not None and packed.texts_of([3]) == [""]


def test_only_a_llama_vocab_is_read_packed(llama_cpp_vocabs: Path) -> None:
    """Other kinds make their lists as before (packing them would only add a pass); a llama
    model key after the vocab: the list route, alike."""
    gpt2 = read_gguf_metadata(llama_cpp_vocabs / "ggml-vocab-gpt-2.gguf", packed=frozenset({"llama"}))
    assert type(gpt2.fields[K + "tokens"]) is list and type(gpt2.fields[K + "token_type"]) is list
    late = write_gguf({K + "tokens": SPECIALS + ["▁a", "a"], K + "model": "llama"})
    assert type(read_gguf_metadata(late, packed=frozenset({"llama"})).fields[K + "tokens"]) is list
    tok = tokenizer_from_gguf(late)
    assert not _packed(tok) and _behaviour(tok, ["a a"]) == _behaviour(_listed(late), ["a a"])

"""GGUF files: llama.cpp's own tokenizer cases, the model libraries on arbitrary text, and
every kind of broken file.

The cases are llama.cpp's ``models/ggml-vocab-*.gguf`` with ``.inp``/``.out`` (Hugging Face's
IDs, ``add_special_tokens=False``), fetched by ``make test-data`` (the ``llama_cpp_vocabs``
fixture fails, naming it, when they are missing).
"""

from __future__ import annotations

import io
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.formats import load_tokenizer_files
from core.formats.detect import identify_files
from core.formats.gguf import read_gguf_metadata, write_gguf
from core.formats.gguf_vocab import (
    sentencepiece_model_from_gguf,
    tokenizer_from_gguf,
    tokenizer_from_gguf_metadata,
)
from tests.conftest import LLAMA_CPP_DATA, need_module

# (without the files, one placeholder case fails through the fixture, naming `make test-data`)
CASE_FILES = sorted(
    p.name[: -len(".out")] for p in (LLAMA_CPP_DATA / "models").glob("*.gguf.out")
) or ["missing: run make test-data"]
SEP = "\n__ggml_vocab_test__\n"


def read_cases(path: Path) -> list[tuple[str, list[int]]]:
    """``.inp`` texts (split as test-tokenizer-0.cpp splits them) with the ``.out`` IDs."""
    raw = path.with_name(path.name + ".inp").read_bytes().decode("utf-8")
    texts = raw.split(SEP)
    if texts and texts[-1] == "":
        texts.pop()  # the file ends with a separator
    lines = path.with_name(path.name + ".out").read_text(encoding="utf-8").split("\n")
    return [(text, [int(x) for x in line.split()]) for text, line in zip(texts, lines)]


@lru_cache(maxsize=4)
def vocab(name: str) -> Any:
    return tokenizer_from_gguf(LLAMA_CPP_DATA / "models" / f"ggml-vocab-{name}.gguf")


# ─── llama.cpp's cases ──────────────────────────────────────────────────────────────────


def test_every_vocab_with_cases_is_tested(llama_cpp_vocabs: Path) -> None:
    found = sorted(p.name[: -len(".out")] for p in llama_cpp_vocabs.glob("*.gguf.out"))
    assert found == CASE_FILES and len(found) >= 15


@pytest.mark.parametrize("file", CASE_FILES)
def test_llama_cpp_cases_exact(llama_cpp_vocabs: Path, file: str) -> None:
    path = llama_cpp_vocabs / file
    cases = read_cases(path)
    assert len(cases) >= 40
    tok = tokenizer_from_gguf(path)
    wrong = [(text, ids, tok.encode(text)) for text, ids in cases if tok.encode(text) != ids]
    assert not wrong, f"{len(wrong)} of {len(cases)} cases differ; first: {wrong[0]!r}"


def test_kinds_and_templates(llama_cpp_vocabs: Path) -> None:
    assert type(vocab("gpt-2")).__name__ == "Tokenizer"  # one regex: the fast tokenizer
    assert type(vocab("deepseek-llm")).__name__ == "PipelineTokenizer"  # several: Splits
    llama3 = vocab("llama-bpe")
    assert llama3.ignore_merges and llama3.encode("hi", add_special_tokens=True)[0] == 128000
    bert = tokenizer_from_gguf(llama_cpp_vocabs / "ggml-vocab-bert-bge.gguf")
    assert bert.encode("hello", add_special_tokens=True) == [101, 7592, 102]
    spm = tokenizer_from_gguf(llama_cpp_vocabs / "ggml-vocab-llama-spm.gguf")
    assert spm.encode("hello", add_special_tokens=True)[0] == 1


def test_every_llama_cpp_pre_name_has_working_regexes() -> None:
    """Every ``tokenizer.ggml.pre`` name llama.cpp knows maps to regexes that compile, or to
    the one-line refusal of the three llama.cpp splits with hand-written code."""
    from core.formats.gguf_pre import PRE_NAMES, pre_tokenizer_spec
    from core.engine.pretokenize import compile_pattern

    refused = []
    for name in PRE_NAMES:
        try:
            spec = pre_tokenizer_spec(name)
        except FormatError:
            refused.append(name)
            continue
        for regex in spec.regexes:
            compile_pattern(regex)
    assert sorted(refused) == ["afmoe", "kimi-k2", "superbpe"] and len(PRE_NAMES) > 80


# ─── the model's own library on arbitrary text ─────────────────────────────────────────────

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


def sprinkled(specials: list[str]) -> st.SearchStrategy[str]:
    """Arbitrary text with special tokens (and broken halves of them) in between."""
    parts = st.one_of(TEXT, st.sampled_from(specials), st.sampled_from([s[:-1] for s in specials]))
    return st.lists(parts, max_size=6).map("".join)


@pytest.fixture(scope="module")
def gpt2_oracle(tiktoken_cache: Path) -> Any:
    return need_module("tiktoken").get_encoding("gpt2")


@given(text=sprinkled(["<|endoftext|>"]))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_gpt2_gguf_equals_tiktoken(llama_cpp_vocabs: Path, gpt2_oracle: Any, text: str) -> None:
    assert vocab("gpt-2").encode(text) == gpt2_oracle.encode(text, allowed_special="all")


@lru_cache(maxsize=1)
def llama3_hf() -> Any:
    """Hugging Face ``tokenizers`` on Llama 3's tokenizer.json, made from Meta's
    tokenizer.model by transformers' converter (no network)."""
    need_module("llama_models")
    need_module("transformers")
    from importlib import resources

    from llama_models.llama3.tokenizer import Tokenizer as Meta
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path = Path(str(resources.files("llama_models").joinpath("llama3", "tokenizer.model")))
    meta = Meta(path)
    specials = sorted(meta.special_tokens, key=meta.special_tokens.get)
    return TikTokenConverter(
        vocab_file=str(path), pattern=meta.model._pat_str, extra_special_tokens=specials
    ).converted()


# the names Llama 3.0 (the GGUF) and 3.1 (llama_models' file) share; reserved ones moved
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
                   "<|end_header_id|>"]  # fmt: skip


def test_llama3_specials_agree(llama_cpp_vocabs: Path) -> None:
    hf = llama3_hf()
    assert {s: vocab("llama-bpe").special_token_ids[s] for s in LLAMA3_SPECIALS} == {
        s: hf.token_to_id(s) for s in LLAMA3_SPECIALS
    }


@given(text=sprinkled(LLAMA3_SPECIALS))
@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
def test_llama3_gguf_equals_tokenizers(llama_cpp_vocabs: Path, text: str) -> None:
    # The oracle is Llama 3.1's file, the GGUF is 3.0's: 3.1 renamed some reserved specials
    # (ID 128008 is <|eom_id|> there, <|reserved_special_token_3|> here), so a text holding
    # one of those names is special to one and plain text to the other by design.
    assume(not any(name in text for name in renamed_llama3_specials()))
    assert vocab("llama-bpe").encode(text) == llama3_hf().encode(text, add_special_tokens=False).ids


@lru_cache(maxsize=1)
def renamed_llama3_specials() -> frozenset[str]:
    """Special tokens of the 3.1 oracle whose name the 3.0 GGUF does not have."""
    ours = set(vocab("llama-bpe").special_tokens)
    return frozenset(t.content for t in llama3_hf().get_added_tokens_decoder().values()
                     if t.special and t.content not in ours)


@pytest.fixture(scope="module")
def spm_oracle(llama_cpp_vocabs: Path) -> Any:
    spm = need_module("sentencepiece")
    meta = read_gguf_metadata(llama_cpp_vocabs / "ggml-vocab-llama-spm.gguf")
    return spm.SentencePieceProcessor(model_proto=sentencepiece_model_from_gguf(meta))


@given(text=TEXT)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_llama_spm_gguf_equals_sentencepiece(spm_oracle: Any, llama_cpp_vocabs: Path, text: str) -> None:
    """The ``.model`` written from the GGUF loads in the ``sentencepiece`` library, which
    then agrees with our loader on the same bytes (and with HF on llama.cpp's cases)."""
    assert vocab("llama-spm").encode(text) == spm_oracle.encode(text)


# ─── t5 (SentencePiece Unigram) ─────────────────────────────────────────────────────────


def _unigram_or_xfail(blob: bytes | Path) -> Any:
    try:
        return tokenizer_from_gguf(blob)
    except FormatError as err:
        if "Unigram models are not supported yet" in str(err):
            pytest.xfail("SentencePiece Unigram is issue 17's work; this test runs once it lands")
        raise


@lru_cache(maxsize=1)
def t5_gguf() -> tuple[bytes, Any]:
    """A small Unigram model trained here, written as llama.cpp's T5 converter writes it
    (tokens, scores, types, the char map, the space flags), and sentencepiece on it."""
    spm = need_module("sentencepiece")
    from sentencepiece import sentencepiece_model_pb2

    corpus = ["Hello world, Ünïcödé text and numbers 12345.", "The quick brown fox jumps.",
              "Tokenizers cut text into pieces: 東京, naïve café."] * 50  # fmt: skip
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=model, vocab_size=300, model_type="unigram",
        byte_fallback=True, num_threads=1, minloglevel=2,
    )  # fmt: skip
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    fields = {
        "general.architecture": "t5",
        "tokenizer.ggml.model": "t5",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": [p.piece for p in proto.pieces],
        "tokenizer.ggml.scores": [p.score for p in proto.pieces],
        "tokenizer.ggml.token_type": [p.type for p in proto.pieces],
        "tokenizer.ggml.add_space_prefix": proto.normalizer_spec.add_dummy_prefix,
        "tokenizer.ggml.remove_extra_whitespaces": proto.normalizer_spec.remove_extra_whitespaces,
        "tokenizer.ggml.precompiled_charsmap": proto.normalizer_spec.precompiled_charsmap,
        "tokenizer.ggml.unknown_token_id": proto.trainer_spec.unk_id,
        "tokenizer.ggml.eos_token_id": proto.trainer_spec.eos_id,
    }
    blob = write_gguf(fields)
    return blob, spm.SentencePieceProcessor(model_proto=model.getvalue())


@given(text=TEXT)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_t5_gguf_equals_sentencepiece(text: str) -> None:
    blob, oracle = t5_gguf()
    tok = _unigram_or_xfail(blob)
    assert tok.encode(text) == oracle.encode(text)
    assert tok.encode(text, add_special_tokens=True) == oracle.encode(text) + [oracle.eos_id()]


def test_t5_gguf_of_a_real_model_equals_sentencepiece(llama_cpp_vocabs: Path) -> None:
    """nomic-embed-text-v2-moe's GGUF (XLM-R's 250k-piece Unigram with its char map), on
    every text of llama.cpp's cases, against sentencepiece on the .model written from it."""
    spm = need_module("sentencepiece")
    path = llama_cpp_vocabs / "ggml-vocab-nomic-bert-moe.gguf"
    oracle = spm.SentencePieceProcessor(
        model_proto=sentencepiece_model_from_gguf(read_gguf_metadata(path))
    )
    tok = _unigram_or_xfail(path)
    texts = [text for file in CASE_FILES for text, _ in read_cases(llama_cpp_vocabs / file)]
    assert len(texts) > 600
    assert [tok.encode(t) for t in texts] == [oracle.encode(t) for t in texts]


# ─── loading through the file loader ──────────────────────────────────────────────────────


def test_uploaded_gguf_loads_like_any_tokenizer_file(llama_cpp_vocabs: Path) -> None:
    data = (llama_cpp_vocabs / "ggml-vocab-gpt-2.gguf").read_bytes()
    assert identify_files({"model.bin": data}).kind == "gguf"  # the content decides
    tok = load_tokenizer_files({"gpt2.gguf": data})
    assert tok.encode("Hello world") == [15496, 995] and tok.name == "gpt2.gguf"


@pytest.mark.parametrize("pre", ["gpt-2", "deepseek-llm"])  # the fast tokenizer, the pipeline
def test_control_and_user_defined_tokens_are_matched_in_text(pre: str) -> None:
    blob = write_gguf(TOY | {"tokenizer.ggml.pre": pre,
                             "tokenizer.ggml.tokens": ["h", "i", "hi", "<ctl>", "<usr>", "[PAD5]"],
                             "tokenizer.ggml.token_type": [1, 1, 1, 3, 4, 5],
                             "tokenizer.ggml.scores": [0.0] * 6})  # fmt: skip
    tok = tokenizer_from_gguf(blob)
    assert tok.encode("h<ctl>i<usr>") == [0, 3, 1, 4]
    assert "[PAD5]" not in tok.special_tokens


@pytest.mark.parametrize("pre", ["bloom", "viking"])  # one regex (fast), two (the pipeline)
def test_text_between_matches_is_kept(pre: str) -> None:
    """BLOOM's regex matches no punctuation: llama.cpp (and HF's Split) keep it as a piece."""
    from core.engine.bytes_unicode import to_gpt2_str

    tokens = [to_gpt2_str(bytes([b])) for b in range(256)] + ["hi"]
    blob = write_gguf({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre,
                       "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.merges": ["h i"]})  # fmt: skip
    tok = tokenizer_from_gguf(blob)
    assert tok.encode("hi.,hi") == [256, ord("."), ord(","), 256]


def test_chat_template_comes_along() -> None:
    blob = write_gguf(TOY | {"tokenizer.chat_template": "{{ bos_token }}{{ messages[0].content }}",
                             "tokenizer.ggml.bos_token_id": 2})
    tok = load_tokenizer_files({"toy.gguf": blob})
    assert tok.chat_template.special_tokens_map == {"bos_token": "hi"}


def test_lora_adapter_gets_one_line() -> None:
    blob = write_gguf({"general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": 16.0})
    with pytest.raises(FormatError) as err:
        load_tokenizer_files({"adapter.gguf": blob})
    assert "LoRA adapter without tokenizer metadata" in str(err.value)
    assert "\n" not in str(err.value)


# ─── broken files ─────────────────────────────────────────────────────────────────────────

TOY = {
    "general.name": "toy",
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": "gpt-2",
    "tokenizer.ggml.tokens": ["h", "i", "hi"],
    "tokenizer.ggml.token_type": [1, 1, 1],
    "tokenizer.ggml.scores": [0.0, 0.5, -1.0],
    "tokenizer.ggml.merges": ["h i"],
}


def test_every_truncation_is_one_format_error() -> None:
    blob = write_gguf(TOY)
    assert read_gguf_metadata(blob).fields == TOY | {"tokenizer.ggml.scores": [0.0, 0.5, -1.0]}
    for cut in range(len(blob)):
        with pytest.raises(FormatError) as err:
            read_gguf_metadata(blob[:cut], name="cut.gguf")
        assert str(err.value).startswith("cut.gguf") and "\n" not in str(err.value)


def _header(kv_count: int, version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, 0, kv_count)


def _key(name: str, vtype: int) -> bytes:
    raw = name.encode()
    return struct.pack("<Q", len(raw)) + raw + struct.pack("<I", vtype)


@pytest.mark.parametrize(
    ("blob", "says"),
    [
        (b"PK\x03\x04" + bytes(40), "not a GGUF file"),
        (b"", "file ends at byte 0"),
        (_header(1, version=1) + bytes(16), "version 1"),
        (_header(1, version=7) + bytes(16), "version 7"),
        (_header(2**40) + bytes(64), "claims 1,099,511,627,776 metadata entries"),
        # a string (the key) longer than the file
        (_header(1) + struct.pack("<Q", 2**62) + bytes(16), "claims 4,611,686,018,427,387,904 bytes"),
        # an array claiming 2**60 uint32s: refused before anything is allocated
        (_header(1) + _key("a", 9) + struct.pack("<IQ", 4, 2**60) + bytes(8), "claims 1,152,921,504,606,846,976 elements"),
        (_header(1) + _key("a", 9) + struct.pack("<IQ", 8, 2**59) + bytes(8), "elements"),
        (_header(1) + _key("a", 9) + struct.pack("<IQ", 9, 1) + bytes(16), "nested array"),
        (_header(1) + _key("a", 13) + bytes(8), "value type 13"),
        (_header(2) + _key("a", 4) + bytes(4) + _key("a", 4) + bytes(4), "appears twice"),
        (_header(1) + struct.pack("<Q", 2) + b"\xff\xfe" + struct.pack("<I", 4) + bytes(4), "not valid UTF-8"),
    ],
)
def test_broken_headers(blob: bytes, says: str) -> None:
    with pytest.raises(FormatError) as err:
        read_gguf_metadata(blob)
    assert says in str(err.value) and "\n" not in str(err.value)


@given(st.binary(max_size=200))
@settings(max_examples=300, deadline=None)
def test_arbitrary_bytes_after_the_magic(tail: bytes) -> None:
    """Whatever follows the magic, the reader answers with metadata or one FormatError."""
    try:
        read_gguf_metadata(b"GGUF" + tail)
    except FormatError as err:
        assert "\n" not in str(err)


def test_metadata_limit() -> None:
    blob = write_gguf({"tokenizer.ggml.tokens": ["x" * 1000] * 100})
    with pytest.raises(FormatError, match="runs past 0 MB"):
        read_gguf_metadata(blob, max_metadata_bytes=50_000)


def test_big_endian_file() -> None:
    """A file written on a big-endian machine: recognised by its version, read swapped."""
    big = b"GGUF" + struct.pack(">IQQ", 3, 0, 2)
    big += struct.pack(">Q", 1) + b"n" + struct.pack(">I", 4) + struct.pack(">I", 7)
    big += struct.pack(">Q", 1) + b"a" + struct.pack(">I", 9) + struct.pack(">IQ", 5, 2)
    big += struct.pack(">ii", -1, 2)
    assert read_gguf_metadata(big).fields == {"n": 7, "a": [-1, 2]}


class CountingFile(io.BytesIO):
    """A file that counts the bytes read from it."""

    read_bytes = 0

    def read(self, n: int | None = -1) -> bytes:
        data = super().read(n)
        self.read_bytes += len(data)
        return data


def test_a_model_file_costs_its_header() -> None:
    """Tensors after the metadata are never read: 64 MB of them, about 1 MB read."""
    header = write_gguf(TOY)
    fh = CountingFile(header + bytes(64 << 20))
    meta = read_gguf_metadata(fh, name="big.gguf")
    assert meta.fields["tokenizer.ggml.tokens"] == ["h", "i", "hi"]
    assert fh.read_bytes <= (1 << 20) + len(header)


class ShortReads(io.BytesIO):
    """A file whose reads return at most 100 bytes, and which is shorter than it claims."""

    def read(self, n: int | None = -1) -> bytes:
        return super().read(min(100, n if n is not None and n >= 0 else 100))

    def seek(self, offset: int, whence: int = 0) -> int:
        return super().seek(offset, whence) + (10_000 if whence == io.SEEK_END else 0)


def test_short_reads_and_a_shrinking_file() -> None:
    blob = write_gguf(TOY)
    with pytest.raises(FormatError, match="before its size said"):
        read_gguf_metadata(ShortReads(blob[:-5]), name="short.gguf")
    assert read_gguf_metadata(ShortReads(blob)).fields["tokenizer.ggml.tokens"] == ["h", "i", "hi"]


def test_path_and_bytes_agree(tmp_path: Path) -> None:
    path = tmp_path / "toy.gguf"
    path.write_bytes(write_gguf(TOY) + bytes(1000))
    assert read_gguf_metadata(path).fields == read_gguf_metadata(path.read_bytes()).fields
    assert tokenizer_from_gguf(path).encode("hih") == [2, 0]
    with pytest.raises(FormatError, match="cannot read the file"):
        read_gguf_metadata(tmp_path / "missing.gguf")


def test_a_packed_array_read_from_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read packed from a file, the window grows to hold the whole array (the same strings
    as from bytes), and never past a damaged string: the tensors after it stay unread."""
    from core import native
    from core.formats import gguf as gguf_module
    from core.formats.gguf import GGUFStrings

    monkeypatch.setattr(gguf_module, "_CHUNK", 256)
    tokens = [f"t{i}\u00e9" for i in range(2000)]
    blob = write_gguf({"tokenizer.ggml.model": "gemma4", "tokenizer.ggml.tokens": tokens})
    fh = CountingFile(blob + bytes(4 << 20))
    found = read_gguf_metadata(fh, packed=True).fields["tokenizer.ggml.tokens"]
    assert isinstance(found, GGUFStrings) == (native.spm is not None) and list(found) == tokens
    assert fh.read_bytes <= 2 * len(blob) + 1024
    damaged = blob.replace("t10\u00e9".encode(), b"t10\xff\xa9")
    fh = CountingFile(damaged + bytes(4 << 20))
    with pytest.raises(FormatError, match="not valid UTF-8"):
        read_gguf_metadata(fh, packed=True)
    assert fh.read_bytes <= 4096


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"tokenizer.ggml.model": "rwkv"}, "the playground reads"),
        ({"tokenizer.ggml.pre": "kimi-k2"}, "hand-written code in llama.cpp"),
        ({"tokenizer.ggml.pre": "no-such"}, "does not know"),
        ({"tokenizer.ggml.tokens": ["h", "h", "hi"]}, "appears twice"),
        ({"tokenizer.ggml.tokens": [1, 2, 3]}, "not an array of strings"),
        ({"tokenizer.ggml.token_type": [1]}, "has 1 entries for 3 tokens"),
        ({"tokenizer.ggml.merges": ["hi"]}, "expected \"left right\""),
    ],
)
def test_bad_tokenizer_metadata(change: dict[str, Any], says: str) -> None:
    meta = read_gguf_metadata(write_gguf(TOY | change))
    with pytest.raises(FormatError, match=".*") as err:
        tokenizer_from_gguf_metadata(meta)
    assert says in str(err.value) and "\n" not in str(err.value)

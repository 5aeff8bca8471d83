"""The table cache for a tokenizer.json read as a pipeline with a BPE model (Llama 2's and
Mistral's layout: core.formats.hf_tables.BPE): a file opened before loads from its
cached tables, the same tokenizer as cold (fingerprint, IDs, decodes, merges) and as Hugging
Face ``tokenizers``; a cache file is untrusted input (damaged, foreign or inconsistent
tables are never used: the file is read again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.formats import load_tokenizer_files, table_cache
from core.formats.hf_tables import BPE
from core.formats.table_cache import CACHE_ENV, Tables, cache_path, read, source_key, write
from core.pipeline.models import BPEModel
from core.pipeline.tokenizer import PipelineTokenizer
from tests.test_real_models import _make_hf_json

TEXTS = [
    "",
    "Hello, world! The quick brown fox.",
    "<s>typed special</s> [INST] text [/INST]",
    "café naïve 東京 👩‍👩‍👧 \n\n\t tabs  and  spaces",
]


@pytest.fixture(scope="module")
def mistral_json(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """Mistral v3's tokenizer.json as transformers converts it (BPE, byte fallback, added
    control tokens), 1.5 MB."""
    return _make_hf_json("v3", tmp_path_factory.mktemp("hf")).encode()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "table-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


def _load(data: bytes) -> PipelineTokenizer:
    tok = load_tokenizer_files({"tokenizer.json": data})
    assert isinstance(tok, PipelineTokenizer)
    return tok


def _answers(tok: PipelineTokenizer) -> object:
    ids = [tok.encode(t) for t in TEXTS] + [tok.encode(t, add_special_tokens=True) for t in TEXTS]
    model = tok.model
    assert isinstance(model, BPEModel)
    return (ids, [tok.decode(i) for i in ids], tok.fingerprint(), model.merges[:50],
            len(model.merges), tok.special_token_ids, tok.template)  # fmt: skip


def test_warm_is_cold_and_the_oracle(cache: Path, mistral_json: bytes) -> None:
    from tokenizers import Tokenizer

    cold = _load(mistral_json)
    files = list(cache.glob("*.tables"))
    assert files == [cache_path(source_key(mistral_json), BPE, cache)]
    tables = read(source_key(mistral_json), BPE, folder=cache)
    assert tables is not None and tables.meta["doc"]["model"]["type"] == "BPE"
    warm = _load(mistral_json)
    assert "merges" not in vars(warm.model)  # (from IDs: spelled out on first read)
    assert _answers(warm) == _answers(cold)
    oracle = Tokenizer.from_str(mistral_json.decode())
    for text in TEXTS:
        assert warm.encode(text) == oracle.encode(text, add_special_tokens=False).ids


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=40))
def test_warm_encodes_any_text_as_cold(cache: Path, mistral_json: bytes, text: str) -> None:
    cold = _load(mistral_json)
    warm = _load(mistral_json)
    assert warm.encode(text) == cold.encode(text)


@pytest.mark.parametrize("damage", ["flip", "cut", "empty"])
def test_a_damaged_cache_file_is_read_again(cache: Path, mistral_json: bytes, damage: str) -> None:
    want = _answers(_load(mistral_json))
    path = cache_path(source_key(mistral_json), BPE, cache)
    raw = bytearray(path.read_bytes())
    if damage == "flip":
        raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw[: len(raw) // 3] if damage == "cut" else raw if damage == "flip" else b""))
    assert _answers(_load(mistral_json)) == want


def _rewrite(data: bytes, cache: Path, change: object) -> None:
    """Keep ``data``'s tables changed by ``change(tables) -> Tables`` (a well-formed file)."""
    key = source_key(data)
    tables = read(key, BPE, folder=cache)
    assert tables is not None
    write(key, BPE, change(tables), folder=cache)  # type: ignore[operator]


@pytest.mark.parametrize(
    "change",
    [
        lambda t: Tables(t.vocab, [(0, 1, 10**6), *t.merges[1:]], t.meta),  # no such token
        lambda t: Tables(t.vocab, t.merges, {**t.meta, "doc": []}),
        lambda t: Tables(t.vocab, t.merges, {**t.meta, "doc": {"model": {"vocab": {}}}}),
        lambda t: Tables({**t.vocab, 5: b"\xff"}, t.merges, t.meta),  # no text
        lambda t: Tables({**t.vocab, 5: t.vocab[6]}, t.merges, t.meta),  # spelled twice
        lambda t: Tables(t.vocab, t.merges, {**t.meta, "doc": {**t.meta["doc"], "version": "2"}}),
    ],
)
def test_tables_that_do_not_fit_are_read_again(cache: Path, mistral_json: bytes, change: object) -> None:
    want = _answers(_load(mistral_json))
    _rewrite(mistral_json, cache, change)
    assert _answers(_load(mistral_json)) == want


def test_the_byte_level_kind_is_not_taken_for_a_pipeline(cache: Path, mistral_json: bytes) -> None:
    from core.formats.hf_json import BYTE_LEVEL

    want = _answers(_load(mistral_json))
    key = source_key(mistral_json)
    tables = read(key, BPE, folder=cache)
    assert tables is not None
    # the pipeline's tables as the byte-level kind's: a file of that kind, not this one
    write(key, BYTE_LEVEL, tables, folder=cache)
    cache_path(key, BYTE_LEVEL, cache).replace(cache_path(key, BPE, cache))
    assert _answers(_load(mistral_json)) == want
    assert read(key, BPE, folder=cache) is not None  # (written afresh)


def test_a_small_file_writes_nothing(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (a Unigram model's tables: core.formats.hf_tables.UNIGRAM, its own test file)
    doc = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}}
    data = json.dumps(doc).encode()
    assert _load(data).encode("abba") == [2, 1, 0]
    assert not cache.exists()  # (under MIN_CACHED_BYTES)
    monkeypatch.setattr(table_cache, "MIN_CACHED_BYTES", 0)
    assert _load(data).encode("abba") == [2, 1, 0]  # (now cached, and warm)
    assert len(list(cache.glob("*.tables"))) == 1
    warm = _load(data)
    assert warm.encode("abba") == [2, 1, 0] and warm.model.merges == [("a", "b")]

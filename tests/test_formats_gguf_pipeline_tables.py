"""The table cache for GGUF vocabs read as a BPE pipeline (core.formats.gguf_tables.PIPELINE):
a file opened before loads from its cached tables, the same tokenizer as cold (IDs on
llama.cpp's cases and on any text, fingerprint, merges, template, chat template); a cache file
is untrusted input (damaged, foreign or inconsistent tables are never used: the file is read
again and its tables written afresh). Gemma 4's file keeps none where C builds it from its
packed columns (reading them back would cost more)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import native
from core.formats import gguf_tables, hf_tables
from core.formats.gguf_tables import PIPELINE
from core.formats.gguf_vocab import tokenizer_from_gguf
from core.formats.table_cache import CACHE_ENV, Codec, Tables, cache_path, read, source_key, write
from core.pipeline.tokenizer import PipelineTokenizer
from tests.test_formats_gguf import read_cases

TEXTS = ["", "Hello world", "  two  spaces\n\n\nnewlines\t", "café 東京 👩‍👩‍👧 <bos><|turn>x"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "table-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.fixture(scope="module")
def gemma4(llama_cpp_vocabs: Path) -> tuple[bytes, list[str]]:
    path = llama_cpp_vocabs / "ggml-vocab-gemma-4.gguf"
    return path.read_bytes(), TEXTS + [text for text, _ in read_cases(path)]


@pytest.fixture(scope="module")
def deepseek(llama_cpp_vocabs: Path) -> tuple[bytes, list[str]]:
    """A byte-level vocab cut by several regexes: a pipeline too (4 MB)."""
    path = llama_cpp_vocabs / "ggml-vocab-deepseek-llm.gguf"
    return path.read_bytes(), TEXTS + [text for text, _ in read_cases(path)]


@pytest.fixture(scope="module")
def gemma4_cold(gemma4: tuple[bytes, list[str]]) -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, "off")
        return _answers(_load(gemma4[0]), gemma4[1])


@pytest.fixture
def pure_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemma 4 built without tokplay_native.tables: its tables are cached."""
    monkeypatch.setattr(native, "tables", None)


def _load(data: bytes) -> PipelineTokenizer:
    tok = tokenizer_from_gguf(data, name="model.gguf")
    assert isinstance(tok, PipelineTokenizer)
    return tok


def _answers(tok: PipelineTokenizer, texts: list[str]) -> object:
    ids = [tok.encode(t) for t in texts] + [tok.encode(t, add_special_tokens=True) for t in texts]
    model: Any = tok.model
    return (ids, [tok.decode(i) for i in ids], tok.fingerprint(), model.merges[:50],
            len(model.merges), tok.special_token_ids, tok.template, tok.kind,
            tok.chat_template.get() if tok.chat_template else None)  # fmt: skip


def _tables(data: bytes, cache: Path) -> Tables | None:
    return read(source_key(data), PIPELINE, folder=cache)


def test_gemma4_warm_is_cold(cache: Path, pure_tables: None, gemma4: tuple[bytes, list[str]],
                             gemma4_cold: object) -> None:  # fmt: skip
    data, texts = gemma4
    assert _answers(_load(data), texts) == gemma4_cold
    tables = _tables(data, cache)
    assert tables is not None and len(tables.merges) == 514_906
    warm = _load(data)
    assert "merges" not in vars(warm.model)  # (from the cache's IDs)
    assert _answers(warm, texts) == gemma4_cold


def test_gemma4_keeps_tables_only_without_c_and_reads_them(
    cache: Path, gemma4: tuple[bytes, list[str]], gemma4_cold: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """With C built (`make test`'s first pass) no tables are kept: C builds them faster
    than the cache reads them; on the pure path (its second pass) they are."""
    data, texts = gemma4
    assert _answers(_load(data), texts) == gemma4_cold
    assert bool(list(cache.glob("*.tables"))) == (native.tables is None)
    with monkeypatch.context() as patch:
        patch.setattr(native, "tables", None)
        _load(data)  # (without C: kept)
    assert _tables(data, cache) is not None
    assert _answers(_load(data), texts) == gemma4_cold


def test_a_byte_level_pipeline_warm_is_cold(cache: Path, deepseek: tuple[bytes, list[str]]) -> None:
    data, texts = deepseek
    cold = _answers(_load(data), texts)
    assert _tables(data, cache) is not None
    assert _answers(_load(data), texts) == cold


@pytest.fixture(scope="module")
def deepseek_cold_warm(deepseek: tuple[bytes, list[str]],
                       tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("table-cache")))
        cold = _load(deepseek[0])
        warm = _load(deepseek[0])
    assert "merges" not in vars(warm.model)  # (from the cache's IDs)
    return cold, warm


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=50))
def test_warm_encodes_any_text_as_cold(deepseek_cold_warm: tuple[Any, Any], text: str) -> None:
    cold, warm = deepseek_cold_warm
    assert warm.encode(text) == cold.encode(text)
    assert warm.encode(text, add_special_tokens=True) == cold.encode(text, add_special_tokens=True)


@pytest.mark.parametrize("damage", ["flip", "cut", "empty", "junk"])
def test_a_damaged_cache_file_is_read_again(cache: Path, deepseek: tuple[bytes, list[str]],
                                            damage: str) -> None:  # fmt: skip
    data, texts = deepseek
    want = _answers(_load(data), texts)
    path = cache_path(source_key(data), PIPELINE, cache)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    damaged = {"flip": bytes(raw), "cut": bytes(raw[: len(raw) // 3]), "empty": b"",
               "junk": b"TOKPLAY-TABLES" + bytes(200)}  # fmt: skip
    path.write_bytes(damaged[damage])
    assert _answers(_load(data), texts) == want
    assert _tables(data, cache) is not None  # (written afresh)


def _rewrite(data: bytes, cache: Path, change: Any) -> None:
    """Keep ``data``'s tables changed by ``change(tables) -> Tables`` (a well-formed file)."""
    tables = _tables(data, cache)
    assert tables is not None
    write(source_key(data), PIPELINE, change(tables), folder=cache)


def _meta(**changes: Any) -> Any:
    return lambda t: Tables(t.vocab, t.merges, {**t.meta, **changes})


@pytest.mark.parametrize(
    "change",
    [
        lambda t: Tables(t.vocab, [(0, 1, 10**6), *t.merges[1:]], t.meta),  # no such token
        lambda t: Tables({**t.vocab, 5: b"\xff"}, t.merges, t.meta),  # no text
        lambda t: Tables({**t.vocab, 5: t.vocab[6]}, t.merges, t.meta),  # spelled twice
        _meta(doc=[]),
        _meta(doc={"model": {"vocab": {}}}),
        _meta(template=[[10**6], [], "x $A"]),  # an ID of no token
        _meta(template=[[True], [], "x $A"]),
        _meta(template=None),
        _meta(chat=["{{ x }}", {"evil_token": "x"}]),
        _meta(chat=[1, {}]),
    ],
)
def test_tables_that_do_not_fit_are_read_again(cache: Path, deepseek: tuple[bytes, list[str]],
                                               change: Any) -> None:  # fmt: skip
    data, texts = deepseek
    want = _answers(_load(data), texts)
    _rewrite(data, cache, change)
    assert _answers(_load(data), texts) == want


@pytest.mark.parametrize("other", [gguf_tables.TOKENIZER, hf_tables.BPE], ids=["fast", "hf-json"])
def test_a_file_of_another_kind_is_read_again(cache: Path, deepseek: tuple[bytes, list[str]],
                                              other: Codec[Any, Any]) -> None:  # fmt: skip
    """The pipeline's tables kept as the fast Tokenizer's (read first, its checks refuse
    them: removed) or, under this kind's name, as a tokenizer.json's: never used."""
    data, texts = deepseek
    want = _answers(_load(data), texts)
    key = source_key(data)
    tables = _tables(data, cache)
    assert tables is not None
    write(key, other, tables, folder=cache)
    if other is hf_tables.BPE:
        cache_path(key, other, cache).replace(cache_path(key, PIPELINE, cache))
    assert _answers(_load(data), texts) == want
    assert list(cache.glob("*.tables")) == [cache_path(key, PIPELINE, cache)]
    assert _tables(data, cache) is not None  # (written afresh, or still there)


def test_a_path_is_not_cached(cache: Path, llama_cpp_vocabs: Path) -> None:
    tok = tokenizer_from_gguf(llama_cpp_vocabs / "ggml-vocab-deepseek-llm.gguf")
    assert isinstance(tok, PipelineTokenizer) and not cache.exists()

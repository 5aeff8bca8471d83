"""A GGUF ``gemma4`` vocab built from its merges' IDs (core.formats.gguf_bpe), packed or
from lists: the same tokenizer as the careful route (every merge spelled as a pair and read
by the tokenizer.json reader): vocab, merges, ranks, fingerprint, IDs on llama.cpp's cases
and on any text, with the compiled helpers and without; and on damaged vocabs, the same
tokenizer or the same error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import native
from core.errors import FormatError
from core.formats import gguf_vocab
from core.formats.gguf import read_gguf_metadata, write_gguf
from core.formats.gguf_vocab import tokenizer_from_gguf, tokenizer_from_gguf_metadata
from core.formats.table_cache import CACHE_ENV
from core.pipeline.tokenizer import PipelineTokenizer
from tests.test_formats_gguf import read_cases

K = "tokenizer.ggml."
TEXTS = ["", "Hello world", "  two  spaces\n\n\nnewlines\t", "café 東京 👩‍👩‍👧 <bos><|turn>x"]


@pytest.fixture(autouse=True, scope="module")
def _no_table_cache() -> Any:
    """Every load here builds (the cache's own tests: test_formats_gguf_pipeline_tables.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, "off")
        yield


@pytest.fixture(scope="module")
def gemma4_path(llama_cpp_vocabs: Path) -> Path:
    return llama_cpp_vocabs / "ggml-vocab-gemma-4.gguf"


def _careful(data: bytes) -> Any:
    """The careful route: every array read as a list, the merges spelled as pairs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gguf_vocab, "bpe_model_of", lambda *args, **kwargs: None)
        return tokenizer_from_gguf_metadata(read_gguf_metadata(data))


@pytest.fixture(scope="module")
def by_lists(gemma4_path: Path) -> PipelineTokenizer:
    tok = _careful(gemma4_path.read_bytes())
    assert isinstance(tok, PipelineTokenizer)
    return tok


@pytest.fixture(scope="module")
def packed(gemma4_path: Path) -> PipelineTokenizer:
    tok = tokenizer_from_gguf(gemma4_path.read_bytes())
    assert isinstance(tok, PipelineTokenizer)
    assert "merges" not in vars(tok.model)  # (made from the merges' IDs)
    return tok


def _answers(tok: PipelineTokenizer, texts: list[str]) -> object:
    model: Any = tok.model
    ids = [tok.encode(t) for t in texts] + [tok.encode(t, add_special_tokens=True) for t in texts]
    return (ids, [tok.decode(i) for i in ids], tok.fingerprint(), tok.special_token_ids,
            tok.template, tok.kind, tok.chat_template.get() if tok.chat_template else None,
            model.vocab, model.merges, model._ranks, list(map(model._merged.__getitem__, range(len(model.merges)))))  # fmt: skip


def test_from_ids_is_the_careful_route(packed: PipelineTokenizer, by_lists: PipelineTokenizer,
                                  gemma4_path: Path) -> None:  # fmt: skip
    cases = read_cases(gemma4_path)
    for text, want in cases:
        assert packed.encode(text) == want
    texts = TEXTS + [text for text, _ in cases]
    assert _answers(packed, texts) == _answers(by_lists, texts)


def test_the_pure_passes_build_the_same(gemma4_path: Path, by_lists: PipelineTokenizer,
                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(native, "tables", None)
    tok = tokenizer_from_gguf(gemma4_path.read_bytes())
    assert isinstance(tok, PipelineTokenizer) and "merges" not in vars(tok.model)
    assert _answers(tok, TEXTS) == _answers(by_lists, TEXTS)


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=60))
def test_any_text_encodes_as_the_careful_route(packed: PipelineTokenizer,
                                            by_lists: PipelineTokenizer, text: str) -> None:  # fmt: skip
    assert packed.encode(text) == by_lists.encode(text)
    assert packed.encode(text, add_special_tokens=True) == by_lists.encode(text, add_special_tokens=True)


# ---------------------------------------------------------------------------------------------
# Small vocabs, sound and damaged: every route answers as the careful one
# ---------------------------------------------------------------------------------------------

BASE: dict[str, Any] = {
    K + "model": "gemma4",
    K + "tokens": ["<pad>", "<bos>", "a", "b", "ab", "\u2581", "\u2581a", "<0x41>", "<0xC3>"],
    K + "token_type": [3, 3, 1, 1, 1, 1, 1, 6, 6],
    K + "scores": [0.0] * 9,
    K + "merges": ["a b", "\u2581 a"],
    K + "bos_token_id": 1,
}
VARIANTS: dict[str, dict[str, Any]] = {
    "sound": {},
    "an empty token": {K + "tokens": [*BASE[K + "tokens"][:-1], ""]},
    "a token twice": {K + "tokens": [*BASE[K + "tokens"][:-1], "a"]},
    "a merge naming no token": {K + "merges": ["a b", "b a"]},
    "a merge without a space": {K + "merges": ["ab"]},
    "a merge with two spaces": {K + "tokens": [*BASE[K + "tokens"][:-1], "b a"],
                                K + "merges": ["a b a"]},  # fmt: skip
    "a part that is a space": {K + "tokens": [*BASE[K + "tokens"][:-2], " ", " a"],
                               K + "merges": ["  a"]},  # fmt: skip
    "no merges": {K + "merges": None},
    "no merge at all": {K + "merges": []},
    "types too short": {K + "token_type": [3, 3, 1]},
    "a type beyond a byte": {K + "token_type": [3, 3, 1, 1, 1, 1, 1, 600, 6]},
    "no types": {K + "token_type": None},
    "scores too short": {K + "scores": [0.0]},
    "scores of strings": {K + "scores": ["x"] * 9},
    "no scores": {K + "scores": None},
    "tokens of ints": {K + "tokens": [1, 2, 3]},
    "no tokens": {K + "tokens": []},
}


def _outcome(load: Any) -> object:
    try:
        tok = load()
    except FormatError as err:
        return ("error", str(err))
    return ("ok", _answers(tok, ["ab ab", "aab\u00c3A", "b a", "<bos>a a"]))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("tables", ["C", "pure"])
def test_a_small_vocab_as_the_careful_route(variant: str, tables: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    if tables == "pure":
        monkeypatch.setattr(native, "tables", None)
    fields = {k: v for k, v in {**BASE, **VARIANTS[variant]}.items() if v is not None}
    blob = write_gguf(fields)
    want = _outcome(lambda: _careful(blob))
    assert _outcome(lambda: tokenizer_from_gguf(blob)) == want
    assert _outcome(lambda: tokenizer_from_gguf_metadata(read_gguf_metadata(blob))) == want
    if variant == "sound":
        tok = tokenizer_from_gguf(blob)
        assert want[0] == "ok" and "merges" not in vars(tok.model)

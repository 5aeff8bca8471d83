"""The table cache for a tokenizer.json whose model is Unigram (T5's and XLM-R's layout, as
transformers converts a SentencePiece model: core.formats.hf_tables.UNIGRAM): a file opened
before loads from its cached tables, the same tokenizer as cold (IDs, decodes, fingerprint,
every score's bits) and as Hugging Face ``tokenizers``, with the compiled helpers on and
off; a cache file is untrusted input (damaged, foreign or inconsistent tables are never
used: the file is read again, and its tables written again)."""

from __future__ import annotations

import base64
import dataclasses
import importlib
import io
import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import native
from core.train.builtin_corpus import builtin_corpus_text
from core.formats import hf_tables, load_tokenizer_files, table_cache
from core.formats.hf_tables import UNIGRAM
from core.formats.table_cache import CACHE_ENV, Tables, cache_path, read, source_key, write
from core.pipeline.tokenizer import PipelineTokenizer
from core.pipeline.models.unigram import UnigramModel

TEXTS = [
    "",
    "Hello, world! The quick brown fox.",
    "<s>typed special</s> <mask> <unk> text",
    "café naïve 東京 👩‍👩‍👧 \n\n\t tabs  and  spaces ＡＢＣ ﬁ",
    builtin_corpus_text()[:3000],
]


@pytest.fixture(scope="module")
def spiece(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SentencePiece Unigram model trained on the built-in corpus (8,000 pieces)."""
    import sentencepiece as spm

    lines = [ln for ln in builtin_corpus_text().splitlines() if ln.strip()]
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=out, model_type="unigram",
        vocab_size=8000, minloglevel=2,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("spm") / "spiece.model"
    path.write_bytes(out.getvalue())
    return path


@pytest.fixture(scope="module", params=["t5", "xlmr"])
def unigram_json(request: pytest.FixtureRequest, spiece: Path) -> bytes:
    """That model as transformers converts it (T5Converter: the Precompiled normalizer;
    XLMRobertaConverter: four specials first), ~575 KB: the benchmark's two files."""
    import transformers

    # (the module, not transformers' function of the same name)
    convert = importlib.import_module("transformers.convert_slow_tokenizer")
    if request.param == "t5":
        slow = transformers.T5Tokenizer(vocab_file=str(spiece))
        converted = convert.T5Converter(slow).converted()
    else:
        xlmr = transformers.XLMRobertaTokenizer(vocab_file=str(spiece))
        converted = convert.XLMRobertaConverter(xlmr).converted()
    return converted.to_str().encode()  # type: ignore[no-any-return]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "table-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.fixture(params=["native", "pure"])
def twin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The compiled helpers on, or off (core's pure path, as on Pyodide)."""
    if request.param == "pure":
        for name in native.__all__:
            if name != "status":
                monkeypatch.setattr(native, name, None)
    yield request.param


@pytest.fixture
def from_tables(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many loads came from cached Unigram tables (the codec's reader, counted)."""
    calls: list[int] = []

    def counted(tables: Tables, **kwargs: Any) -> PipelineTokenizer | None:
        calls.append(1)
        return UNIGRAM.from_tables(tables, **kwargs)

    counting = dataclasses.replace(UNIGRAM, from_tables=counted)
    monkeypatch.setattr(hf_tables, "CODECS", (hf_tables.BPE, counting))
    return calls


def _load(data: bytes) -> PipelineTokenizer:
    tok = load_tokenizer_files({"tokenizer.json": data})
    assert isinstance(tok, PipelineTokenizer) and isinstance(tok.model, UnigramModel)
    return tok


def _bits(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}d", *values)


def _answers(tok: PipelineTokenizer) -> object:
    model = tok.model
    assert isinstance(model, UnigramModel)
    tokens, scores = model.columns()
    ids = [tok.encode(t) for t in TEXTS] + [tok.encode(t, add_special_tokens=True) for t in TEXTS]
    return (ids, [tok.decode(i) for i in ids], tok.fingerprint(), tokens, _bits(scores),
            model.unk_id, model.byte_fallback, tok.special_token_ids, tok.template)  # fmt: skip


def _oracle_scores(data: bytes) -> list[float]:
    """The scores as ``tokenizers`` reads them (written back by serde: exact digits)."""
    from tokenizers import Tokenizer

    written = json.loads(Tokenizer.from_str(data.decode()).to_str())
    return [score for _, score in written["model"]["vocab"]]


def test_warm_is_cold_and_the_oracle(cache: Path, unigram_json: bytes, twin: str,
                                     from_tables: list[int]) -> None:  # fmt: skip
    from tokenizers import Tokenizer

    cold = _load(unigram_json)
    assert list(cache.glob("*.tables")) == [cache_path(source_key(unigram_json), UNIGRAM, cache)]
    tables = read(source_key(unigram_json), UNIGRAM, folder=cache)
    assert tables is not None and tables.meta["doc"]["model"]["type"] == "Unigram"
    assert "vocab" not in tables.meta["doc"]["model"] and not tables.vocab and not tables.merges
    assert not from_tables
    warm = _load(unigram_json)
    assert from_tables == [1]
    assert _answers(warm) == _answers(cold)
    model = warm.model
    assert isinstance(model, UnigramModel)
    assert _bits(model.columns()[1]) == _bits(_oracle_scores(unigram_json))
    oracle = Tokenizer.from_str(unigram_json.decode())
    for text in TEXTS:
        assert warm.encode(text) == oracle.encode(text, add_special_tokens=False).ids
        assert warm.encode(text, add_special_tokens=True) == oracle.encode(text).ids


def test_native_and_pure_load_the_same(cache: Path, unigram_json: bytes,
                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Cold and warm, with the compiled helpers and without: one tokenizer, bit for bit."""
    want = _answers(_load(unigram_json))  # (native, cold: writes the tables)
    got = [_answers(_load(unigram_json))]  # (native, warm)
    monkeypatch.setattr(native, "unigram", None)
    got.append(_answers(_load(unigram_json)))  # (pure, warm)
    monkeypatch.setenv(CACHE_ENV, "off")
    got.append(_answers(_load(unigram_json)))  # (pure, cold)
    assert got == [want] * 3


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(text=st.text(max_size=40))
def test_warm_encodes_any_text_as_cold_and_the_oracle(cache: Path, unigram_json: bytes,
                                                      text: str) -> None:  # fmt: skip
    from tokenizers import Tokenizer

    cold = _load(unigram_json)
    warm = _load(unigram_json)
    want = Tokenizer.from_str(unigram_json.decode()).encode(text, add_special_tokens=False).ids
    assert warm.encode(text) == cold.encode(text) == want


def _not_shortest(data: bytes) -> bytes:
    """``data`` with every score spelled in 17 significant digits (``%.17g``, as a C
    program writes it) rather than the shortest ones: serde_json reads some of them one
    unit in the last place off what it reads from the shortest spelling."""
    doc = json.loads(data)
    items = ",".join(f"[{json.dumps(t, ensure_ascii=False)},{s:.17g}]"
                     for t, s in doc["model"]["vocab"])  # fmt: skip
    doc["model"]["vocab"] = "@@vocab@@"
    text = json.dumps(doc, ensure_ascii=False)
    return text.replace('"@@vocab@@"', f"[{items}]").encode()


def test_scores_are_the_files_digits_as_tokenizers_reads_them(
    cache: Path, unigram_json: bytes, twin: str
) -> None:
    data = _not_shortest(unigram_json)
    want = _bits(_oracle_scores(data))
    assert want != _bits(_oracle_scores(unigram_json))  # (some score reads otherwise)
    cold = _load(data)
    warm = _load(data)
    for tok in (cold, warm):
        assert _bits(tok.model.columns()[1]) == want  # type: ignore[attr-defined]


@pytest.mark.parametrize("damage", ["flip", "cut", "empty"])
def test_a_damaged_cache_file_is_read_again(cache: Path, unigram_json: bytes, damage: str,
                                            from_tables: list[int]) -> None:  # fmt: skip
    want = _answers(_load(unigram_json))
    path = cache_path(source_key(unigram_json), UNIGRAM, cache)
    good = path.read_bytes()
    raw = bytearray(good)
    if damage == "flip":
        raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw[: len(raw) // 3] if damage == "cut" else raw if damage == "flip"
                           else b""))  # fmt: skip
    assert _answers(_load(unigram_json)) == want
    assert path.read_bytes() == good  # (written again)
    assert _answers(_load(unigram_json)) == want and from_tables == [1]


def _rewrite(data: bytes, cache: Path, change: Callable[[Tables], Tables]) -> None:
    """Keep ``data``'s tables changed by ``change`` (a well-formed cache file)."""
    key = source_key(data)
    tables = read(key, UNIGRAM, folder=cache)
    assert tables is not None
    write(key, UNIGRAM, change(tables), folder=cache)


def _meta(t: Tables, **changes: Any) -> Tables:
    return Tables(t.vocab, t.merges, {**t.meta, **changes})


def _settings(t: Tables, **changes: Any) -> Tables:
    doc = t.meta["doc"]
    return _meta(t, doc={**doc, "model": {**doc["model"], **changes}})


@pytest.mark.parametrize(
    "change",
    [
        lambda t: _meta(t, pieces=[1, *t.meta["pieces"][1:]]),  # a piece that is no text
        lambda t: _meta(t, pieces=t.meta["pieces"][:-1]),  # one score too many
        lambda t: _meta(t, scores=base64.b64encode(b"\0" * 8).decode()),  # too few scores
        lambda t: _meta(t, scores="@@not base64@@"),
        lambda t: _meta(t, scores=None),
        lambda t: _meta(t, doc=[]),
        lambda t: _settings(t, vocab=[["a", 0.0]]),  # the vocab twice
        lambda t: _settings(t, unk_id=10**6),  # past the end of the pieces
        lambda t: _settings(t, byte_fallback="yes"),
        lambda t: _settings(t, type="BPE"),  # (a Unigram kind's tables, another model)
        lambda t: _meta(t, doc={**t.meta["doc"], "normalizer": {"type": "NoSuchNormalizer"}}),
        lambda t: Tables({0: b"a"}, t.merges, t.meta),  # BPE's columns beside Unigram's
    ],
)
def test_tables_that_do_not_fit_are_read_again(
    cache: Path, unigram_json: bytes, change: Callable[[Tables], Tables]
) -> None:
    want = _answers(_load(unigram_json))
    _rewrite(unigram_json, cache, change)
    assert _answers(_load(unigram_json)) == want
    again = read(source_key(unigram_json), UNIGRAM, folder=cache)
    assert again is not None and again.meta["pieces"] == want[3]  # type: ignore[index]


def test_another_kind_is_not_taken_for_unigram(cache: Path, unigram_json: bytes,
                                               from_tables: list[int]) -> None:  # fmt: skip
    want = _answers(_load(unigram_json))
    key = source_key(unigram_json)
    tables = read(key, UNIGRAM, folder=cache)
    assert tables is not None
    # the Unigram tables as the BPE kind's: a file of that kind, not this one
    write(key, hf_tables.BPE, tables, folder=cache)
    cache_path(key, hf_tables.BPE, cache).replace(cache_path(key, UNIGRAM, cache))
    assert _answers(_load(unigram_json)) == want and not from_tables


def test_a_small_unigram_file_writes_when_the_cache_takes_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch, from_tables: list[int]
) -> None:
    doc = {"model": {"type": "Unigram", "vocab": [["a", -1.0], ["<unk>", 0.0], ["ab", -1.5]],
                     "unk_id": 1}}  # fmt: skip
    data = json.dumps(doc).encode()
    assert _load(data).encode("aab?") == [0, 2, 1]
    assert not cache.exists()  # (under MIN_CACHED_BYTES)
    monkeypatch.setattr(table_cache, "MIN_CACHED_BYTES", 0)
    assert _load(data).encode("aab?") == [0, 2, 1]
    assert len(list(cache.glob("*.tables"))) == 1 and not from_tables
    assert _load(data).encode("aab?") == [0, 2, 1] and from_tables == [1]

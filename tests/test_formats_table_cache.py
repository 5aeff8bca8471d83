"""The table cache (core.formats.table_cache): a tokenizer.json opened before loads from its
cached tables, ID for ID as cold and as Hugging Face ``tokenizers``; a cache file is
untrusted input (a corrupt or foreign one is never used, the file is read again)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.formats import hf_json, identify_files, load_tokenizer_files, table_cache
from core.formats.hf_json import BYTE_LEVEL
from core.formats.table_cache import CACHE_ENV, Codec, Tables, cache_path, read, source_key, write

TEXTS = [
    "",
    "Hello, world! The quick brown fox.",
    "<bos>typed special<bos> then text",
    "café naïve 東京 👩‍👩‍👧 \n\n\t tabs",
]


def _hf_json(extra: str = "") -> str:
    """A small byte-level BPE tokenizer.json trained by ``tokenizers`` itself, with Llama 3's
    layout of a BOS template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<bos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    corpus = ["the quick brown fox jumps over the lazy dog " * 3, "hello world " * 5 + extra]
    tok.train_from_iterator(corpus, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", tok.token_to_id("<bos>"))]
    )
    return tok.to_str()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder, with every file big enough to be cached."""
    folder = tmp_path / "table-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    monkeypatch.setattr(table_cache, "MIN_CACHED_BYTES", 0)
    return folder


def _ids(tok: object, texts: list[str] = TEXTS) -> list[list[int]]:
    return [tok.encode(t) for t in texts] + [  # type: ignore[attr-defined]
        tok.encode(t, add_special_tokens=True) for t in texts  # type: ignore[attr-defined]
    ]


def _oracle_ids(text: str, texts: list[str] = TEXTS) -> list[list[int]]:
    import tokenizers

    hf = tokenizers.Tokenizer.from_str(text)
    return [hf.encode(t, add_special_tokens=False).ids for t in texts] + [
        hf.encode(t).ids for t in texts
    ]


def _load(data: bytes) -> object:
    return load_tokenizer_files({"tokenizer.json": data})


def _is_warm(data: bytes) -> bool:
    """Whether a load of ``data`` would come from the cache (no JSON parsed)."""
    found = identify_files({"tokenizer.json": data}).parsed["tokenizer.json"]
    return isinstance(found, table_cache.Cached)


def test_cold_and_warm_give_the_oracles_ids(cache: Path) -> None:
    text = _hf_json()
    data = text.encode()
    assert not _is_warm(data)
    cold = _load(data)
    assert len(list(cache.glob("*.tables"))) == 1
    assert _is_warm(data)
    warm = _load(data)
    assert _ids(cold) == _ids(warm) == _oracle_ids(text)
    assert (warm.vocab, warm.merges, warm.special_tokens) == (  # type: ignore[attr-defined]
        cold.vocab, cold.merges, cold.special_tokens  # type: ignore[attr-defined]
    )


@given(st.text(max_size=60))
@settings(max_examples=60, deadline=None)
def test_warm_matches_cold_on_any_text(text: str) -> None:
    folder = Path(_WARM["folder"])
    cold = hf_json.tokenizer_from_hf_json(_WARM["text"])
    tables = read(source_key(_WARM["text"].encode()), BYTE_LEVEL, folder=folder)
    assert tables is not None
    warm = hf_json.tokenizer_from_tables(tables)
    assert warm.encode(text) == cold.encode(text)


_WARM: dict[str, str] = {}


@pytest.fixture(autouse=True, scope="module")
def _warm_file(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One cached file for the hypothesis test (function fixtures do not mix with @given)."""
    folder = tmp_path_factory.mktemp("warm-cache")
    text = _hf_json()
    tables = hf_json.hf_json_tables(json.loads(text))
    write(source_key(text.encode()), BYTE_LEVEL, tables, folder=folder)
    _WARM.update(folder=str(folder), text=text)


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[:-1],  # cut short
        lambda raw: raw + b"x",  # too long
        lambda raw: raw[:-40] + bytes([raw[-40] ^ 1]) + raw[-39:],  # a merge's ID, off by one
        lambda raw: b"",  # empty
        lambda raw: b"\x80\x04\x95garbage" * 50,  # not our format at all (a pickle header)
    ],
    ids=["short", "long", "bit-flip", "empty", "garbage"],
)
def test_a_corrupt_cache_file_is_rebuilt(cache: Path, damage: object) -> None:
    text = _hf_json()
    data = text.encode()
    _load(data)
    (path,) = cache.glob("*.tables")
    good = path.read_bytes()
    path.write_bytes(damage(good))  # type: ignore[operator]
    assert not _is_warm(data)  # never used...
    assert _ids(_load(data)) == _oracle_ids(text)  # ...the file is read again...
    assert path.read_bytes() == good  # ...and its tables cached anew
    assert _is_warm(data)


def test_checked_tables_that_make_no_tokenizer_are_rebuilt(cache: Path) -> None:
    """A cache file whose checksum holds but whose content is wrong (a merge of IDs the
    vocab lacks, settings of the wrong type) is untrusted input too: the file is read again."""
    text = _hf_json()
    data = text.encode()
    key = source_key(data)
    for meta in ({"special_tokens": "x", "pattern": 1},
                 {"special_tokens": [], "pattern": "gpt2", "ignore_merges": False}):  # fmt: skip
        bad = Tables({0: b"a", 1: b"b"}, [(7, 9, 1)], meta)
        write(key, BYTE_LEVEL, bad)
        assert read(key, BYTE_LEVEL) == Tables(bad.vocab, bad.merges, {**meta, "kind": BYTE_LEVEL.name})
        assert _is_warm(data)
        assert _ids(_load(data)) == _oracle_ids(text)
        assert read(key, BYTE_LEVEL) != Tables(bad.vocab, bad.merges, {**meta, "kind": BYTE_LEVEL.name})


def test_a_cache_for_another_file_is_never_used(cache: Path) -> None:
    text_a, text_b = _hf_json(), _hf_json(extra="zebra zebra zebra")
    assert text_a != text_b
    _load(text_a.encode())
    (path,) = cache.glob("*.tables")
    # A's cache file under B's name: the source digest inside it does not match
    path.rename(cache_path(source_key(text_b.encode()), BYTE_LEVEL, cache))
    assert not _is_warm(text_b.encode())
    assert _ids(_load(text_b.encode())) == _oracle_ids(text_b)


def test_another_kind_is_never_used(tmp_path: Path) -> None:
    key = source_key(b"file")
    another: Codec[Tables, Tables] = Codec("another", 1, lambda t: t, lambda t, **_: t)
    write(key, another, Tables({0: b"a"}, [], {}), folder=tmp_path)
    assert read(key, BYTE_LEVEL, folder=tmp_path) is None
    assert read(key, another, folder=tmp_path) == Tables({0: b"a"}, [], {"kind": "another-v1"})
    # under the other kind's name, its file says what it is: still not used
    cache_path(key, another, tmp_path).rename(cache_path(key, BYTE_LEVEL, tmp_path))
    assert read(key, BYTE_LEVEL, folder=tmp_path) is None
    # nor a file of another version of a kind
    write(key, another, Tables({0: b"a"}, [], {}), folder=tmp_path)
    newer: Codec[Tables, Tables] = Codec("another", 2, lambda t: t, lambda t, **_: t)
    cache_path(key, another, tmp_path).rename(cache_path(key, newer, tmp_path))
    assert read(key, newer, folder=tmp_path) is None


def test_off_and_unwritable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_cache, "MIN_CACHED_BYTES", 0)
    monkeypatch.setenv(CACHE_ENV, "off")
    text = _hf_json()
    assert _ids(_load(text.encode())) == _oracle_ids(text)
    assert table_cache.cache_folder() is None
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    assert _ids(_load(text.encode())) == _oracle_ids(text)  # the write fails quietly


def test_small_files_are_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    _load(_hf_json().encode())
    assert not list(tmp_path.glob("*.tables"))


def test_merge_ids_that_disagree_with_the_vocab_are_not_taken(cache: Path) -> None:
    """A cached merge whose merged ID is another real token: the Tokenizer checks the IDs it
    is handed and looks the merges up itself, so the IDs stay the oracle's."""
    text = _hf_json()
    data = text.encode()
    tables = hf_json.hf_json_tables(json.loads(text))
    left, right, made = tables.merges[0]
    wrong = Tables(tables.vocab, [(left, right, left)] + tables.merges[1:], tables.meta)
    write(source_key(data), BYTE_LEVEL, wrong)
    assert _is_warm(data)
    assert _ids(_load(data)) == _oracle_ids(text)


# ─── every kind goes through the one cache ──────────────────────────────────────────────────


def _gguf(pre: str) -> bytes:
    """A small byte-level GGUF vocab: ``llama-bpe`` (one regex) makes the fast Tokenizer,
    ``deepseek-llm`` (several) a BPE pipeline."""
    from core.engine.bytes_unicode import to_gpt2_str
    from core.formats.gguf import write_gguf

    tokens = [to_gpt2_str(bytes([i])) for i in range(256)] + ["ab", "abc", "<|end|>"]
    return write_gguf({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre,
                       "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": [1] * 258 + [3],
                       "tokenizer.ggml.merges": ["a b", "ab c"], "tokenizer.ggml.bos_token_id": 258})  # fmt: skip


def _kinds() -> list[tuple[Codec[Any, Any], bytes, Callable[[bytes], Any]]]:
    """Each cached kind's codec, a source file of that kind, and its loader."""
    from core.formats import gguf_tables, hf_tables, tiktoken_file
    from core.formats.gguf_vocab import tokenizer_from_gguf

    bpe = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}}
    unigram = {"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5]]}}
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256}
    return [
        (BYTE_LEVEL, _hf_json().encode(), _load),
        (hf_tables.BPE, json.dumps(bpe).encode(), _load),
        (hf_tables.UNIGRAM, json.dumps(unigram).encode(), _load),
        (tiktoken_file.RANKS, tiktoken_file.dump_tiktoken_ranks(ranks),
         tiktoken_file.load_tiktoken_ranks),
        (gguf_tables.TOKENIZER, _gguf("llama-bpe"), tokenizer_from_gguf),
        (gguf_tables.PIPELINE, _gguf("deepseek-llm"), tokenizer_from_gguf),
    ]  # fmt: skip


def _seen(loaded: Any) -> object:
    """What a load gave, comparably: a tokenizer's IDs, or the ranks."""
    text = "ab abc aab <|end|> hello"
    return loaded if isinstance(loaded, dict) else (type(loaded), loaded.encode(text),
                                                   loaded.encode(text, add_special_tokens=True))


def test_every_kind_goes_through_the_one_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A byte-level and a pipeline tokenizer.json (BPE, Unigram), a rank file and a GGUF
    (fast Tokenizer, BPE pipeline): each first load leaves one file in the one folder, named
    by the source, its kind and version; each second load opens that file with its codec."""
    opened: list[str] = []
    real_open = table_cache.Cached.open

    def counted(self: table_cache.Cached[Any], **options: Any) -> Any:
        opened.append(self.codec.name)
        return real_open(self, **options)

    monkeypatch.setattr(table_cache.Cached, "open", counted)
    kinds = _kinds()
    assert len({codec.name for codec, _, _ in kinds}) == 6
    for codec, data, load in kinds:
        cold = load(data)
        path = cache_path(source_key(data), codec, cache)
        assert path.name == f"{source_key(data)}.{codec.kind}-v{codec.version}.tables"
        assert path.exists() and not opened
        warm = load(data)
        assert opened == [codec.name] and _seen(warm) == _seen(cold)
        opened.clear()
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        cache_path(source_key(data), codec, cache).name for codec, data, _ in kinds
    )

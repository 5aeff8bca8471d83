"""The table cache (core.formats.table_cache): a tokenizer.json opened before loads from its
cached tables, ID for ID as cold and as Hugging Face ``tokenizers``; a cache file is
untrusted input (a corrupt or foreign one is never used, the file is read again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.formats import hf_json, identify_files, load_tokenizer_files, table_cache
from core.formats.table_cache import CACHE_ENV, Tables, read_tables, source_key, write_tables

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
    return isinstance(identify_files({"tokenizer.json": data}).parsed["tokenizer.json"], Tables)


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
    tables = read_tables(source_key(_WARM["text"].encode()), kind=hf_json.TABLES_KIND,
                         folder=folder)  # fmt: skip
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
    write_tables(source_key(text.encode()), tables, folder=folder)
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
    for meta in ({"kind": hf_json.TABLES_KIND, "special_tokens": "x", "pattern": 1},
                 {"kind": hf_json.TABLES_KIND, "special_tokens": [], "pattern": "gpt2",
                  "ignore_merges": False}):  # fmt: skip
        write_tables(key, Tables({0: b"a", 1: b"b"}, [(7, 9, 1)], meta))
        assert _is_warm(data)
        assert _ids(_load(data)) == _oracle_ids(text)
        assert read_tables(key, kind=hf_json.TABLES_KIND) != Tables(
            {0: b"a", 1: b"b"}, [(7, 9, 1)], meta
        )


def test_a_cache_for_another_file_is_never_used(cache: Path) -> None:
    text_a, text_b = _hf_json(), _hf_json(extra="zebra zebra zebra")
    assert text_a != text_b
    _load(text_a.encode())
    (path,) = cache.glob("*.tables")
    # A's cache file under B's name: the source digest inside it does not match
    path.rename(cache / f"{source_key(text_b.encode())}.tables")
    assert not _is_warm(text_b.encode())
    assert _ids(_load(text_b.encode())) == _oracle_ids(text_b)


def test_another_kind_is_never_used(tmp_path: Path) -> None:
    key = source_key(b"file")
    write_tables(key, Tables({0: b"a"}, [], {"kind": "another"}), folder=tmp_path)
    assert read_tables(key, kind=hf_json.TABLES_KIND, folder=tmp_path) is None
    assert read_tables(key, kind="another", folder=tmp_path) == Tables({0: b"a"}, [], {"kind": "another"})


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
    write_tables(source_key(data), wrong)
    assert _is_warm(data)
    assert _ids(_load(data)) == _oracle_ids(text)

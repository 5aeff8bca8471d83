"""Fast loads (issue 25): merges given by ID (core.engine.vocab_index, Tokenizer.from_id_merges), the
tables built lazily, the bulk readers of tokenizer.json and GGUF. Each fast path gives exactly
what the slow one gives (the byte-pair Tokenizer, the careful readers), errors included."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError, PlaygroundError
from core.formats import gguf_vocab, hf_json
from core.formats.gguf import read_gguf_metadata, write_gguf
from core.engine.tokenizer import Tokenizer
from core.engine.vocab_index import (
    IdColumns,
    decode_tables,
    lowest_ids,
    without_specials,
)

BYTES = {i: bytes([i]) for i in range(256)}


def _trained(n_merges: int = 60) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """A small vocab and merge list (greedy pair merging of a fixed text)."""
    from core.train import train_bpe

    text = "the quick brown fox jumps over the lazy dog; café 東京 🙂 " * 5
    return train_bpe([text], 256 + n_merges)


@pytest.fixture(scope="module")
def trained() -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    return _trained()


def _id_merges(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
    ids = {t: i for i, t in vocab.items()}
    return [(ids[a], ids[b]) for a, b in merges]


def _tables(tok: Tokenizer) -> tuple[object, ...]:
    return (tok.vocab, tok.merges, dict(tok.pair_ranks), tok.merged_ids, tok.merge_pair_ids,
            tok.special_tokens, tok.special_token_ids, tok.byte_ids, dict(tok.ids_by_bytes),
            tok.whole_only, tok.fingerprint(), repr(tok))  # fmt: skip


# ─── Tokenizer.from_id_merges against Tokenizer(vocab, byte merges) ────────────────────────


@pytest.mark.parametrize("shape", ["pairs", "triples", "columns"])
def test_id_merges_give_the_byte_merges_tokenizer(trained, shape: str) -> None:  # noqa: ANN001
    vocab, merges = trained
    pairs = _id_merges(vocab, merges)
    ids = {t: i for i, t in vocab.items()}
    given_merges = {
        "pairs": pairs,
        "triples": [(a, b, ids[vocab[a] + vocab[b]]) for a, b in pairs],
        "columns": IdColumns([a for a, _ in pairs], [b for _, b in pairs]),
    }[shape]
    eager = Tokenizer(vocab, merges, ["<|eot|>"], pattern="cl100k")
    fast = Tokenizer.from_id_merges(vocab, given_merges, ["<|eot|>"], pattern="cl100k")
    assert fast._merges is None  # built on first use...
    assert _tables(fast) == _tables(eager)  # ...exactly the eager one
    assert fast.merges == merges and fast.merges is fast.merges
    text = "the lazy café 東京<|eot|> fox 🙂"
    assert fast.encode(text) == eager.encode(text)
    assert [fast.parts_of(i) for i in vocab] == [eager.parts_of(i) for i in vocab]


@given(st.text(max_size=80))
@settings(max_examples=150, deadline=None)
def test_id_merges_encode_any_text_alike(text: str) -> None:
    vocab, merges = _TRAINED
    eager = Tokenizer(vocab, merges)
    fast = Tokenizer.from_id_merges(vocab, _id_merges(vocab, merges))
    assert fast.encode(text) == eager.encode(text)
    assert fast.decode(fast.encode(text)) == text


_TRAINED = _trained()


def test_a_wrong_merged_id_is_not_trusted(trained) -> None:  # noqa: ANN001
    vocab, merges = trained
    pairs = _id_merges(vocab, merges)
    lying = [(a, b, a) for a, b in pairs]  # every merged ID wrong
    assert _tables(Tokenizer.from_id_merges(vocab, lying)) == _tables(Tokenizer(vocab, merges))


def test_repeated_bytes_take_the_byte_path(trained) -> None:  # noqa: ANN001
    """Bytes listed twice: a merge naming the higher ID means the lowest one, as byte pairs do."""
    vocab, merges = trained
    twin = max(vocab) + 1
    vocab = vocab | {twin: vocab[97]}  # a second b"a"
    pairs = [(twin if a == 97 else a, b) for a, b in _id_merges(vocab, merges)]
    eager = Tokenizer(vocab, merges)
    fast = Tokenizer.from_id_merges(vocab, pairs)
    assert _tables(fast) == _tables(eager)


def test_a_special_token_in_a_merge_takes_the_byte_path() -> None:
    vocab = BYTES | {256: b"<s>", 257: b"<s>a"}
    with pytest.raises(PlaygroundError) as fast:
        Tokenizer.from_id_merges(vocab, [(256, 97)], ["<s>"])
    with pytest.raises(PlaygroundError) as eager:
        Tokenizer(vocab, [(b"<s>", b"a")], ["<s>"])
    assert str(fast.value) == str(eager.value)


def test_duplicate_pairs_keep_their_first_rank() -> None:
    vocab = BYTES | {256: b"ab", 257: b"abc"}
    byte_merges = [(b"a", b"b"), (b"ab", b"c"), (b"a", b"b")]
    fast = Tokenizer.from_id_merges(vocab, [(97, 98), (256, 99), (97, 98)])
    assert _tables(fast) == _tables(Tokenizer(vocab, byte_merges))
    assert fast.pair_ranks[(97, 98)] == 0


@pytest.mark.parametrize(
    ("merges", "says"),
    [
        ([(97, 999)], "merge 0 names token ID 999, which is not in the vocabulary"),
        ([(97, -1)], "merge 0 names token ID -1"),
        ([(97, 98, 99, 100)], "tuples of ints, all of one width"),
        ([(97, 98), (97, 98, 256)], "all of one width"),
        ([(97, "b")], "tuples of ints"),
        ([b"ab"], "tuples of ints"),
        ([97], "tuples of ints"),
        (IdColumns([97], [98, 99]), "tuples of ints"),
        ([(97, 99)], "merge 0 (b'a', b'c') uses b'ac', which is not in the vocabulary"),
    ],
)
def test_bad_id_merges_get_one_line(merges: object, says: str) -> None:
    with pytest.raises(PlaygroundError, match=None) as err:
        Tokenizer.from_id_merges(BYTES | {256: b"ab"}, merges)  # type: ignore[arg-type]
    assert says in str(err.value) and "\n" not in str(err.value)


def test_no_merges_and_rank_mode_are_unchanged() -> None:
    vocab = BYTES | {256: b"ab"}
    assert _tables(Tokenizer.from_id_merges(vocab, [])) == _tables(Tokenizer(vocab, []))
    ranked = Tokenizer(vocab, None)
    assert ranked._merges is None and ranked.pair_ranks == {(97, 98): 0}  # derived on use


# ─── the tables built a faster way are the ones built before ──────────────────────────────


@given(
    st.dictionaries(st.integers(0, 40), st.binary(min_size=1, max_size=2), min_size=1),
    st.lists(st.binary(min_size=1, max_size=2), max_size=4),
)
def test_without_specials_is_lowest_ids(vocab: dict[int, bytes], specials: list[bytes]) -> None:
    by_bytes = lowest_ids(vocab, ())
    repeats = len(by_bytes) != len(vocab)
    full = dict(vocab)
    special_ids = set()
    for k, token in enumerate(specials):  # half reuse an ID, half get a new one
        sid = by_bytes.get(token, 100 + k) if k % 2 else 100 + k
        full[sid] = token if sid >= 100 else full[sid]
        special_ids.add(sid)
    want = lowest_ids(full, special_ids)
    got = without_specials(by_bytes, full, special_ids, repeats=repeats)
    assert got == want and list(got) == list(want)


@given(st.dictionaries(st.integers(0, 60), st.binary(min_size=1, max_size=3)))
def test_decode_tables_as_before(vocab: dict[int, bytes]) -> None:
    n = max(vocab, default=-1) + 1
    table: list[bytes | None] = [None] * n
    for i, token in vocab.items():
        table[i] = token
    strict = table + [None] * n
    replace = [b"\xff" if t is None else t for t in table] + [b"\xff"] * n
    assert decode_tables(vocab) == (strict, replace)


def _doc(merges: list[str]) -> dict[str, object]:
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}
    from core.engine.bytes_unicode import to_gpt2_str

    vocab |= {to_gpt2_str(bytes([i])): 5 + i for i in range(256) if bytes([i]) not in b"abc"}
    return {"model": {"type": "BPE", "vocab": vocab, "merges": merges},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
            "added_tokens": [{"id": 4, "content": "abc", "special": True}]}  # fmt: skip


def _careful(doc: dict[str, object]) -> Tokenizer:
    """The tokenizer.json read entry by entry (no bulk path), as byte merges."""
    vocab, merges, specials, pattern = hf_json._read(doc, "tokenizer.json", bulk="off")
    return Tokenizer(vocab, hf_json._merge_bytes(vocab, merges), specials, pattern=pattern)  # type: ignore[arg-type]


@pytest.mark.parametrize("added", [False, True])
def test_json_bulk_load_equals_the_careful_one(added: bool) -> None:
    doc = _doc(["a b", "ab c"] if not added else ["a b"])
    if not added:
        doc["added_tokens"] = []
    else:  # "abc" both in model.vocab and an added token; and one only added
        doc["added_tokens"].append({"id": 300, "content": "<|x|>", "special": True})  # type: ignore[attr-defined]
    fast = hf_json.tokenizer_from_hf_json(doc)
    assert _tables(fast) == _tables(_careful(doc))
    assert list(fast.vocab) == list(_careful(doc).vocab)  # (the file's order too)


@pytest.mark.parametrize(
    "merges",
    [["a b", "a b"],  # a pair listed twice: the bulk path leaves it to the Tokenizer
     ["a b", "b c"],  # "bc" is no token
     ["a b", "ab c"]],  # "abc" is an added (special) token: no merge may make it
)  # fmt: skip
def test_json_errors_stay_those_of_the_careful_path(merges: list[str]) -> None:
    doc = _doc(merges)
    with pytest.raises(PlaygroundError) as careful:
        _careful(doc)
    with pytest.raises(PlaygroundError) as fast:
        hf_json.tokenizer_from_hf_json(doc)
    assert str(fast.value) == str(careful.value)


# ─── GGUF gpt2: merges by ID, or the byte path when a merge is not two normal tokens ──────


def _gguf_meta(merges: list[str], types: list[int] | None, extra: list[str]) -> object:
    from core.engine.bytes_unicode import to_gpt2_str

    tokens = [to_gpt2_str(bytes([i])) for i in range(256)] + ["ab", "abc", "<|end|>"] + extra
    return read_gguf_metadata(write_gguf({
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types or [1] * 258 + [3] + [1] * len(extra),
        "tokenizer.ggml.merges": merges}))  # fmt: skip


def _gguf_tokenizer(merges: list[str], types: list[int] | None = None,
                    extra: list[str] = []) -> object:  # noqa: B006  # fmt: skip
    return gguf_vocab.tokenizer_from_gguf_metadata(_gguf_meta(merges, types, extra))  # type: ignore[arg-type]


def _old_gguf_tokenizer(merges: list[str], types: list[int] | None = None,
                        extra: list[str] = []) -> object:  # noqa: B006  # fmt: skip
    """What the GGUF loader gave before merges by ID: byte pairs, split one by one."""
    v = gguf_vocab._vocab(_gguf_meta(merges, types, extra))  # type: ignore[arg-type]
    vocab = gguf_vocab._byte_vocab(v)
    byte_merges = gguf_vocab._byte_merges(gguf_vocab._merge_pairs(v))
    assert vocab is not None and byte_merges is not None
    return Tokenizer(vocab, byte_merges, {t: i for i, t, _ in v.added()})


@pytest.mark.parametrize(
    ("merges", "types"),
    [(["a b", "ab c"], None),
     (["a b", "ab c", "a b"], None),  # a pair twice
     (["a b", "ab c"], [1] * 257 + [5, 3])],  # "abc" unused (type 5): the byte path
)  # fmt: skip
def test_gguf_id_merges_equal_the_byte_path(merges: list[str], types: list[int] | None) -> None:
    fast, old = _gguf_tokenizer(merges, types), _old_gguf_tokenizer(merges, types)
    assert _tables(fast)[:-1] == _tables(old)[:-1]  # (names differ in the repr)
    assert fast.encode("abcab<|end|>") == old.encode("abcab<|end|>")  # type: ignore[attr-defined]


def test_gguf_merge_of_a_token_that_is_not_normal_reads_it_through_the_byte_map() -> None:
    """An unused token's bytes are its UTF-8 ("Ġa" -> b"\\xc4\\xa0a"), but a merge part is
    spelled through the byte map (b" a"): the bytes path decides, as before."""
    case = (["Ġa b"], [1] * 258 + [3, 5, 1], ["Ġa", "Ġab"])
    with pytest.raises(PlaygroundError) as fast:
        _gguf_tokenizer(*case)
    with pytest.raises(PlaygroundError) as old:
        _old_gguf_tokenizer(*case)
    assert str(fast.value) == str(old.value) and "b' a'" in str(fast.value)


def test_gguf_bad_merge_still_names_it() -> None:
    with pytest.raises(FormatError, match=r"tokenizer.ggml.merges\[1\] is 'abc'"):
        _gguf_tokenizer(["a b", "abc"])


def test_gguf_real_file_id_merges_equal_the_byte_path(llama_cpp_vocabs: Path) -> None:
    meta = read_gguf_metadata(llama_cpp_vocabs / "ggml-vocab-gpt-2.gguf")
    v = gguf_vocab._vocab(meta)
    vocab = gguf_vocab._byte_vocab(v)
    byte_merges = gguf_vocab._byte_merges(gguf_vocab._merge_pairs(v))
    fast = gguf_vocab.tokenizer_from_gguf_metadata(meta)
    assert isinstance(fast, Tokenizer) and fast._merges is None
    assert fast.merges == byte_merges and fast.vocab == vocab


# ─── GGUF uploads opened before: the table cache (core.formats.gguf_tables) ─────────────────


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from core.formats import table_cache

    monkeypatch.setenv(table_cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(table_cache, "MIN_CACHED_BYTES", 0)
    return tmp_path / "cache"


def _gguf_blob(**extra: object) -> bytes:
    from core.engine.bytes_unicode import to_gpt2_str

    tokens = [to_gpt2_str(bytes([i])) for i in range(256)] + ["ab", "abc", "<|end|>"]
    return write_gguf({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe",
                       "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": [1] * 258 + [3],
                       "tokenizer.ggml.merges": ["a b", "ab c"], "tokenizer.ggml.bos_token_id": 258,
                       "tokenizer.chat_template": "{{ bos_token }}{{ messages[0].content }}",
                       **extra})  # fmt: skip


def _everything(tok: object) -> tuple[object, ...]:
    text = "abc<|end|>x abab"
    return (*_tables(tok), tok.template, tok.chat_template, tok.encode(text),  # type: ignore[attr-defined]
            tok.encode(text, add_special_tokens=True), tok.name)  # type: ignore[attr-defined]


def test_gguf_warm_load_equals_the_cold_one(cache: Path, tmp_path: Path) -> None:
    blob = _gguf_blob()
    cold = gguf_vocab.tokenizer_from_gguf(blob, name="m.gguf")
    assert len(list(cache.glob("*.tables"))) == 1
    warm = gguf_vocab.tokenizer_from_gguf(blob, name="m.gguf")
    assert warm is not cold and warm._merges is None  # (from the cache: merges by ID)
    assert _everything(warm) == _everything(cold)
    assert warm.chat_template is not None and warm.template.prefix == (258,)
    path = tmp_path / "m.gguf"  # a path is read, never hashed
    path.write_bytes(_gguf_blob(**{"general.name": "other"}))
    gguf_vocab.tokenizer_from_gguf(path)
    assert len(list(cache.glob("*.tables"))) == 1


@pytest.mark.parametrize(
    "meta",
    [{"specials": {"<|end|>": "x"}}, {"template": [[1], [], 5]}, {"chat": ["t", {"x": "y"}]},
     {"template": [[10**6], [], "$A"]}, {"specials": {"<|end|>": 5}}],
)  # fmt: skip
def test_a_bad_gguf_cache_file_is_read_again(cache: Path, meta: dict[str, object]) -> None:
    from core.formats import gguf_tables, table_cache

    blob = _gguf_blob()
    cold = gguf_vocab.tokenizer_from_gguf(blob)
    key = table_cache.source_key(blob)
    tables = table_cache.read(key, gguf_tables.TOKENIZER)
    assert tables is not None
    bad = table_cache.Tables(tables.vocab, tables.merges, tables.meta | meta)
    table_cache.write(key, gguf_tables.TOKENIZER, bad)
    assert table_cache.lookup(key, [gguf_tables.TOKENIZER], name="model.gguf") is None
    assert _everything(gguf_vocab.tokenizer_from_gguf(blob)) == _everything(cold)


def test_rank_file_warm_load_equals_the_cold_one(cache: Path) -> None:
    from core.formats import table_cache, tiktoken_file

    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256, b"abc": 257, b"\xffz": 258}
    data = tiktoken_file.dump_tiktoken_ranks(ranks)
    assert tiktoken_file.load_tiktoken_ranks(data) == ranks  # cold: parsed, then cached
    key, codecs = table_cache.source_key(data), [tiktoken_file.RANKS]
    assert table_cache.lookup(key, codecs) == ranks
    assert tiktoken_file.load_tiktoken_ranks(data) == ranks  # warm
    # a cache file with an empty token, or merges, is not used: the file is parsed again
    for bad in (table_cache.Tables({0: b"", 1: b"a"}, [], {}),
                table_cache.Tables({0: b"a"}, [(0, 0, 0)], {})):  # fmt: skip
        table_cache.write(key, tiktoken_file.RANKS, bad)
        assert table_cache.lookup(key, codecs) is None
        assert tiktoken_file.load_tiktoken_ranks(data) == ranks


_LINE = st.one_of(
    st.tuples(st.binary(min_size=0, max_size=4), st.integers(0, 300)).map(
        lambda p: __import__("base64").b64encode(p[0]) + b" " + str(p[1]).encode()
    ),
    st.sampled_from([b"", b"  ", b"YQ==\t7", b"YQ== 7 8", b"YQ==", b"Y Q== 1", b"YQ= 3", b"=== 4",
                     b"YQ== 0007", b"YQ== -1", b"YQ== 1e3", b"YWJj 1234567890123", b"\xd9\xa1 1"]),
)  # fmt: skip


@given(st.lists(_LINE, max_size=8), st.sampled_from([b"\n", b"\r\n", b"\r"]))
@settings(max_examples=300, deadline=None)
def test_rank_file_bulk_parse_is_the_careful_one(lines: list[bytes], end: bytes) -> None:
    """The bulk parse gives what the line-by-line parse gives, or leaves the file to it."""
    from core.formats import tiktoken_file

    data = end.join(lines)
    fast = tiktoken_file._load_fast(data)
    real = tiktoken_file._load_fast
    try:
        tiktoken_file._load_fast = lambda data: None  # type: ignore[assignment]
        careful = tiktoken_file.load_tiktoken_ranks(data)
    except FormatError:
        careful = None
    finally:
        tiktoken_file._load_fast = real  # type: ignore[assignment]
    assert fast is None or fast == careful

"""core.engine.char_start and Tokenizer's BPE of one pre-token: starting from whole characters gives
exactly what BPE from bytes gives. Random rank tables and merge lists made to be hard (tokens
that cross characters, split them, join a character's end to the next one's start, share
lead bytes) against BPE from bytes; the presets against tiktoken, the character start built
before the first pre-token."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from core import native
from core.engine import char_start
from core.engine import text_encoder
from core.engine.bpe import merge
from core.engine.char_start import CharStart, crossing_index
from core.formats import load_tokenizer_files
from core.formats.presets import load_preset
from core.engine.pretokenize import PATTERNS, compile_pattern, mixed_regions
from core.engine.text_encoder import TextEncoder
from core.engine.tokenizer import Tokenizer

# ASCII, two-byte letters sharing a lead byte, CJK sharing two bytes, a four-byte emoji
CHARS = "a é è ö 東材日😀"
MULTILINGUAL = (
    "Привет, как дела? Всё хорошо. 東京は日本の首都です。今日は晴れ。 북한산 등산로 "
    "Ελληνικά κείμενα · עברית טקסט · العربية نص · हिन्दी पाठ · ไทย ข้อความ · Ünïcödé "
    "naïve café 😀👍🏽 🇫🇷 ǅ ﬁ ½ ¿Qué? «ça» 𝔘𝔫𝔦 \u200b\u00a0x\u0301 中文 中 文本 "
)


@pytest.fixture(scope="module", autouse=True)
def _build_at_once() -> Iterator[None]:
    """Every CharStart made here builds its indexes before the first pre-token, and the pure
    path runs (the C twin, which starts from bytes, has its own tests: test_native_bpe.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(char_start, "_BUILD_AFTER", 0)
        patch.setattr(native, "bpe", None)
        yield


# ─── random tables against BPE from bytes ───────────────────────────────────────────────


@st.composite
def vocabs(draw: st.DrawFn) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """A byte-level vocab (ID = rank) and merge list made as training makes one, but joining
    a random adjacent pair each time: in texts over CHARS, so tokens cross and split their
    characters in every way, in random order."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges: list[tuple[bytes, bytes]] = []
    texts = draw(st.lists(st.text(alphabet=CHARS, min_size=2, max_size=8), min_size=1, max_size=4))
    words = [[bytes([b]) for b in text.encode("utf-8")] for text in texts]
    for _ in range(draw(st.integers(0, 30))):
        word = draw(st.sampled_from(words))
        if len(word) < 2:
            continue
        i = draw(st.integers(0, len(word) - 2))
        merges.append((word[i], word[i + 1]))
        word[i : i + 2] = [word[i] + word[i + 1]]
        if word[i] not in vocab.values():
            vocab[len(vocab)] = word[i]
    return vocab, merges


@st.composite
def rank_vocabs(draw: st.DrawFn) -> dict[int, bytes]:
    """A rank file's vocab (ID = rank): random byte slices of random text over CHARS,
    whole characters, pieces of them and pieces across them, in random order."""
    vocab = {i: bytes([i]) for i in range(256)}
    for _ in range(draw(st.integers(0, 30))):
        data = draw(st.text(alphabet=CHARS, min_size=1, max_size=4)).encode("utf-8")
        start = draw(st.integers(0, len(data) - 1))
        token = data[start : draw(st.integers(start + 1, len(data)))]
        if token not in vocab.values():
            vocab[len(vocab)] = token
    return vocab


WORDS = st.text(alphabet=CHARS, max_size=16)


def _from_bytes(tok: Tokenizer, word: str) -> list[int]:
    """BPE from the word's bytes (Tokenizer.bpe never starts from characters)."""
    return tok.bpe(word.encode("utf-8"))


@settings(max_examples=400)
@given(table=vocabs(), words=st.lists(WORDS, min_size=1, max_size=8))
def test_merge_list_start_from_characters_is_exact(table, words):
    vocab, merges = table
    tok = Tokenizer(vocab, merges, cache_size=0)
    for word in words:
        assert list(tok._bpe_str(word)) == _from_bytes(tok, word), word


@settings(max_examples=400)
@given(vocab=rank_vocabs() | vocabs().map(lambda table: table[0]),
       words=st.lists(WORDS, min_size=1, max_size=8))  # fmt: skip
def test_rank_file_start_from_characters_is_exact(vocab, words):
    tok = Tokenizer(vocab, None, cache_size=0)  # ID = rank; whole pre-tokens looked up first
    for word in words:
        whole = tok._encoder.get(word.encode("utf-8"))
        want = [whole] if whole is not None else _from_bytes(tok, word)
        assert list(tok._bpe_str(word)) == want, word


@settings(max_examples=300)
@given(table=vocabs(), word=WORDS)
def test_char_start_parts_end_where_bytes_end(table, word):
    """CharStart alone, both kinds of table: its parts spell the word and BPE from them ends
    where BPE from bytes ends."""
    vocab, merges = table
    ranks = {token: rank for rank, token in vocab.items()}
    start = CharStart(ranks, rank_mode=True, eager=True)
    parts = start.parts(word)
    assert b"".join(parts) == word.encode("utf-8")
    from_bytes = merge([bytes([b]) for b in word.encode("utf-8")], ranks, key=operator.add)
    assert merge(parts, ranks, key=operator.add) == from_bytes


def test_a_crossing_token_ranked_first_keeps_the_bytes():
    """b"a\\xc3" ranks below "é": after "a" the character must start from its bytes (the
    whole-character start would give [a, é] instead of [a\\xc3, \\xa9]); elsewhere not."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"a\xc3", 257: "é".encode()}
    tok = Tokenizer(vocab, None, cache_size=0)
    assert tok.bpe("aé".encode()) == [256, 0xA9]
    assert list(tok._bpe_str("aé")) == [256, 0xA9]
    assert list(tok._bpe_str("bé")) == [ord("b"), 257]
    assert tok._char_start.parts("bé") == [b"b", "é".encode()]


def test_a_token_across_a_character_end_ranked_first_keeps_the_bytes():
    """b"\xa9a" (the end of "é", then "a") ranks below "é": "é" before "a" starts from its
    bytes ([\xc3, \xa9a] from bytes, not [é, a])."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"\xa9a", 257: "é".encode()}
    tok = Tokenizer(vocab, None, cache_size=0)
    assert tok.bpe("éa".encode()) == [0xC3, 256]
    assert list(tok._bpe_str("éa")) == [0xC3, 256]
    assert list(tok._bpe_str("éb")) == [257, ord("b")]


def test_crossing_index_keys_the_bytes_next_to_the_character():
    ends, starts = crossing_index({b" \xe6\x9d": 3, b"\xb1\xe6": 4, b"\xe6\x9d\xb1": 5, b"ab": 6})
    assert ends == {b" \xe6\x9d": 3, b"\xb1\xe6": 4}  # a prefix of a character, the byte before
    assert starts == {b"\xb1\xe6": 4}  # the end of a character, the byte after


def test_built_only_after_enough_non_ascii_text(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(char_start, "_BUILD_AFTER", 10)
    vocab = {i: bytes([i]) for i in range(256)} | {256: "é".encode()}
    start = CharStart({t: i for i, t in vocab.items()}, rank_mode=True)
    assert start.parts("ééé") == [b"\xc3", b"\xa9"] * 3  # 3 bytes seen past the first
    assert start.parts("é" * 7) == [b"\xc3\xa9"] * 7  # 10 seen: built
    assert start.parts("ab") == [b"a", b"b"]


# ─── the presets against tiktoken ───────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def pairs(tiktoken_cache) -> dict[str, tuple[Tokenizer, tiktoken.Encoding]]:
    """name -> (a new Tokenizer from the preset's tables, its character start built at
    once; tiktoken's Encoding)."""
    out = {}
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        p = load_preset(name)
        tok = Tokenizer(p.vocab, None if p.by_rank else p.merges, p.special_token_ids,
                        pattern=p.pattern, ignore_merges=p.ignore_merges)  # fmt: skip
        out[name] = (tok, tiktoken.get_encoding(name))
    # Llama 3: a rank file with tokens no two lower-ranked ones build; Meta's own Encoding
    from llama_models.llama3.tokenizer import Tokenizer as Meta

    path = Path(str(resources.files("llama_models").joinpath("llama3", "tokenizer.model")))
    llama3 = load_tokenizer_files({"tokenizer.model": path.read_bytes()})
    assert isinstance(llama3, Tokenizer)
    out["llama3"] = (llama3, Meta(path).model)
    return out


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base", "llama3"])
def test_presets_on_multilingual_text(pairs, name):
    tok, enc = pairs[name]
    text = MULTILINGUAL * 3
    assert tok.encode(text) == enc.encode(text, allowed_special="all")
    # not vacuous: the characters started whole (CJK in one or two parts, not three bytes)
    parts = tok._char_start.parts("東京は日本の首都です")
    assert len(parts) < len("東京は日本の首都です".encode()), parts


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "llama3"])
def test_a_tokenizer_with_its_character_start_built_still_pickles(pairs, name):
    # Evaluate and training send tokenizers to worker processes: the lazily built start
    # (closures) is left out of the pickle and rebuilt on the other side
    import pickle

    tok, enc = pairs[name]
    text = MULTILINGUAL * 3
    tok.encode(text)
    assert "_char_start" in vars(tok)
    copy = pickle.loads(pickle.dumps(tok))
    assert "_char_start" not in vars(copy)
    assert copy.encode(text) == enc.encode(text, allowed_special="all")
    assert len(copy._char_start.parts("東京は日本の首都です")) < len("東京は日本の首都です".encode())


@settings(max_examples=300)
@given(text=st.text(alphabet=MULTILINGUAL, max_size=60) | st.text(max_size=40))
def test_presets_on_arbitrary_unicode(pairs, text):
    for name, (tok, enc) in pairs.items():
        tok.clear_cache()
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), name


def test_lone_surrogates_as_tiktoken(pairs):
    """A str may hold lone surrogates (no UTF-8): U+FFFD, a pair joined, as tiktoken does."""
    tok, enc = pairs["cl100k_base"]
    for text in ["a\ud83d", "\ud83d\ude00東", "東\udc00京", "é\ud800\udfff"]:
        tok.clear_cache()
        assert tok.encode(text) == enc.encode(text), text


# ─── pre-tokens of text with a few non-ASCII characters ─────────────────────────────────

ASCII_PIECES = st.one_of(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=12),
    st.sampled_from(["'s", "'ll", " '", "HTTPServer", " \n", "\r\n", "  ", "\t ", " 12", "\x1c"]),
)


@settings(max_examples=150)
@given(
    pieces=st.lists(ASCII_PIECES, min_size=150, max_size=200),
    inserts=st.lists(st.tuples(st.integers(0, 200), st.sampled_from("é東😀\u00a0\u2028ß")),
                     min_size=1, max_size=3),
    pattern=st.sampled_from(list(PATTERNS)),
)  # fmt: skip
def test_sparse_non_ascii_text_is_cut_into_regions_exactly(pieces, inserts, pattern):
    """Without the C cut (core.engine.pretoken_split: not built, or Pyodide), text with under 1%
    extra UTF-8 bytes goes through core.engine.pretokenize.mixed_regions (the ASCII stretches
    by `re`); denser text straight to `regex`. Both as `regex` alone."""
    for at, char in inserts:
        pieces.insert(at, char)
    text = "".join(pieces)
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "pretok", None)
        encoder = TextEncoder(pattern=pattern, specials={}, bpe=lambda p: (), cache_size=0)
        patch.setattr(text_encoder, "mixed_regions",
                      lambda t: calls.append(t) or mixed_regions(t))  # fmt: skip
        assert encoder.findall(text) == compile_pattern(pattern).findall(text)
        sparse = len(text.encode("utf-8")) - len(text) <= len(text) // 100
        assert bool(calls) == sparse
        dense = text + "東京" * 10
        assert encoder.findall(dense) == compile_pattern(pattern).findall(dense)
        assert len(calls) == sparse

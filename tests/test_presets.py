"""Presets equal tiktoken exactly: on the shared corpora, on generated Unicode, with specials."""

from __future__ import annotations

import gzip
import hashlib
from importlib import resources

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import PlaygroundError
from core.formats.tiktoken_file import ranks_to_merges
from core.formats import presets
from core.formats.presets import PRESETS, load_preset, preset_files
from core.engine.pretokenize import GPT2_PATTERN

import tiktoken

NAMES = list(PRESETS)


@pytest.fixture(scope="module")
def pairs(tiktoken_cache):
    """name -> (our Tokenizer, tiktoken Encoding), both from the genuine files."""
    return {name: (load_preset(name), tiktoken.get_encoding(name)) for name in NAMES}


# ----------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------


def test_preset_tables_match_tiktoken(pairs):
    for name, (tok, enc) in pairs.items():
        assert tok.special_token_ids == enc._special_tokens, name
        assert tok.n_vocab == enc.n_vocab, name
        ranks = {t: i for i, t in tok.vocab.items() if i not in enc._special_tokens.values()}
        assert ranks == enc._mergeable_ranks, name


def test_merges_recovered_from_gpt2_ranks_equal_vocab_bpe(pairs):
    tok, enc = pairs["gpt2"]  # tok.merges come straight from vocab.bpe
    assert ranks_to_merges(enc._mergeable_ranks) == tok.merges
    assert len(tok.merges) == 50000


def test_every_preset_token_is_rebuilt_by_its_merges(pairs):
    """BPE on a token's own bytes gives the token back (so ignore_merges changes nothing)."""
    for name, (tok, _) in pairs.items():
        specials = set(tok.special_token_ids.values())
        sample = [i for i in tok.vocab if i not in specials][::7]
        assert all(tok.bpe(tok.vocab[i]) == [i] for i in sample), name


def test_load_preset_is_cached(tiktoken_cache):
    assert load_preset("gpt2") is load_preset("gpt2")


def test_unknown_preset_gives_a_clear_error():
    with pytest.raises(PlaygroundError, match="unknown preset 'gpt5'; choose one of 'gpt2'"):
        load_preset("gpt5")


def test_presets_load_from_the_package_with_no_cache_dir(monkeypatch, tmp_path):
    """A user's machine: no TIKTOKEN_CACHE_DIR, an empty cache folder, the shipped copies."""
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    assert load_preset("gpt2").encode("Hello world") == [15496, 995]
    assert load_preset("cl100k_base", cache_dir=tmp_path).encode("Hello world") == [9906, 1917]
    assert load_preset("o200k_base").encode("Hello world") == [13225, 2375]


def test_shipped_files_are_the_genuine_ones():
    for name in NAMES:
        for file in preset_files(name):
            data = gzip.decompress(resources.files("core").joinpath("data", file.shipped).read_bytes())
            assert hashlib.sha256(data).hexdigest() == file.sha256, file.shipped


def test_a_cache_dir_overrides_and_a_bad_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / preset_files("cl100k_base")[0].cache_name).write_bytes(b"not it")
    with pytest.raises(PlaygroundError, match="not the genuine .*cl100k_base.tiktoken"):
        load_preset("cl100k_base", cache_dir=tmp_path)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(PlaygroundError, match="not the genuine"):
        load_preset("cl100k_base")


def test_a_damaged_package_copy_says_to_reinstall(monkeypatch):
    file = presets.PresetFile("https://example.invalid/x", "0" * 64, "no-such-file.gz")
    with pytest.raises(PlaygroundError, match="cannot be read .*reinstall the package"):
        presets._read(file, "")
    good = preset_files("gpt2")[0]
    monkeypatch.setattr(gzip, "decompress", lambda data: b"tampered")
    with pytest.raises(PlaygroundError, match="core/data/gpt2-encoder.json.gz is not the genuine"):
        presets._read(good, "")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(" \t\n\r\x0b\x0c\u00a0\u3000ab1'sS.!\u0301中")), max_size=40))
def test_tiktoken_gpt2_pattern_splits_like_gpt2_pattern(text):
    from tiktoken_ext.openai_public import r50k_pat_str

    assert regex.findall(r50k_pat_str, text) == regex.findall(GPT2_PATTERN, text)


# ----------------------------------------------------------------------------------------
# Exactness
# ----------------------------------------------------------------------------------------

SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>"]
ALPHABET = list(
    " \t\n\r\x0b\x0c\x85\u00a0\u1680\u2000\u2028\u3000"
    "aZ'sStTdDmMlLvVrReE.,!?/-_0123456789\u00e9\u0301\u0644\u4e2d\u6587\u3042\ud55c\U0001f642<|>"
)
# Any assigned character (Python's Unicode 14 tables). Unassigned code points are left out:
# `regex` (Unicode 17) already knows letters that tiktoken's Rust regex (older tables) does
# not, e.g. U+3D000 (Seal script), so those split differently; a Unicode-version gap, not
# a tokenizer difference.
ASSIGNED = st.characters(exclude_categories=("Cs", "Cn"))
TEXTS = st.lists(
    st.one_of(
        st.text(ASSIGNED, max_size=20),
        st.text(alphabet=st.sampled_from(ALPHABET), max_size=40),  # whitespace-heavy
        st.sampled_from(SPECIALS + ["<|endof", "'ll", "'VE", "  \n", "\r\n\r\n", "1234567"]),
    ),
    max_size=20,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, name=st.sampled_from(NAMES))
def test_encode_equals_tiktoken_on_generated_text(pairs, text, name):
    tok, enc = pairs[name]
    assert tok.encode(text) == enc.encode(text, allowed_special="all")
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(), name=st.sampled_from(NAMES))
def test_decode_encode_round_trips_any_string(pairs, text, name):
    tok, _ = pairs[name]
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(data=st.data(), name=st.sampled_from(NAMES))
def test_decode_equals_tiktoken_on_arbitrary_ids(pairs, data, name):
    tok, enc = pairs[name]
    ids = data.draw(st.lists(st.integers(0, enc.max_token_value), max_size=30))
    ids = [i for i in ids if i in tok.vocab]  # tiktoken raises on unused IDs; we print U+FFFD
    assert tok.decode(ids) == enc.decode(ids)
    assert tok.decode_bytes(ids) == enc.decode_bytes(ids)


@pytest.mark.parametrize("name", NAMES)
def test_encode_equals_tiktoken_on_docs_multi(pairs, docs_multi, name):
    tok, enc = pairs[name]
    assert tok.encode(docs_multi) == enc.encode(docs_multi, allowed_special="all")
    assert tok.encode_ordinary(docs_multi) == enc.encode_ordinary(docs_multi)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_encode_equals_tiktoken_on_all_of_docs_en(pairs, docs_en, name):
    tok, enc = pairs[name]
    ours = tok.encode(docs_en)
    assert ours == enc.encode(docs_en, allowed_special="all")
    assert tok.decode(ours) == docs_en
    # encode_ordinary on a quarter (the <|endoftext|> separators become plain text)
    part = docs_en[: len(docs_en) // 4]
    assert tok.encode_ordinary(part) == enc.encode_ordinary(part)

"""Exports of ours, loaded by Hugging Face `tokenizers` and by tiktoken, give our IDs.

The vocab uses the CS336 layout (special tokens first, at ID 0), which tiktoken accepts:
``mergeable_ranks`` maps bytes -> ID for every ordinary token (ranks start at 1, after the
special) and the special tokens are passed separately with their own IDs.
"""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.train.builtin_corpus import builtin_corpus_text
from core.formats import dumps_hf_json
from core.formats.tiktoken_file import tokenizer_to_tiktoken
from core.engine.pretokenize import resolve_pattern
from core.engine.tokenizer import Tokenizer
from tests.test_formats_hf import TEXTS

import tiktoken
import tokenizers

SPECIALS = ["<|endoftext|>"]
PATTERNS = ["gpt2", "cl100k", "o200k"]


def _multilingual(seed: int, n_words: int) -> str:
    """Words drawn from several scripts (Latin with accents, Greek, Cyrillic, CJK, Hangul,
    Arabic, emoji with ZWJ), with digits and whitespace runs: a fixed, reproducible text."""
    rng = random.Random(seed)
    alphabets = ["aeiouéèàüöñç", "αβγδεζηθικλ", "абвгдежзик", "日本語のテキスト中文字",
                 "한국어텍스트", "العربيةنص", "🤖🎉👩\u200d👩\u200d👧🇮🇹", "0123456789"]
    words = []
    for _ in range(n_words):
        letters = rng.choice(alphabets)
        words.append("".join(rng.choice(letters) for _ in range(rng.randint(1, 8))))
        words.append(rng.choice([" ", " ", " ", "  ", "\n", ", ", ". ", "\t", "'s "]))
    return "".join(words)


@pytest.fixture(scope="module")
def samples() -> dict[str, str]:
    english = builtin_corpus_text()  # Python docstrings, shipped with the package
    return {
        "train_en": english[:200_000],
        "train_multi": _multilingual(0, 10_000),
        "test_en": english[200_000:350_000],
        "test_multi": _multilingual(1, 10_000),
    }


@pytest.fixture(scope="module", params=PATTERNS)
def trained(request: pytest.FixtureRequest, samples: dict[str, str]):  # noqa: ANN201
    from core.train import train_bpe

    pattern = request.param
    vocab, merges = train_bpe(
        [samples["train_en"], samples["train_multi"]], 1500, SPECIALS, pattern=pattern
    )
    assert vocab[0] == b"<|endoftext|>"  # CS336 layout: the special first
    return pattern, vocab, merges


def _tiktoken_from_vocab(pattern: str, vocab: dict[int, bytes]):  # noqa: ANN202
    specials = {s: i for i, t in vocab.items() for s in SPECIALS if t == s.encode()}
    return tiktoken.Encoding(
        name=f"test-{pattern}",
        pat_str=resolve_pattern(pattern),
        mergeable_ranks={t: i for i, t in vocab.items() if i not in specials.values()},
        special_tokens=specials,
    )


def _texts(samples: dict[str, str]) -> list[str]:
    return [*TEXTS, samples["test_en"], samples["test_multi"]]


def test_hf_export_matches_tiktoken_on_our_vocab(trained, samples) -> None:  # noqa: ANN001
    pattern, vocab, merges = trained
    hf = tokenizers.Tokenizer.from_str(dumps_hf_json(vocab, merges, SPECIALS, pattern=pattern))
    enc = _tiktoken_from_vocab(pattern, vocab)
    for text in _texts(samples):
        assert hf.encode(text).ids == enc.encode(text, allowed_special="all"), text[:80]


def _our_tokenizer(pattern: str, vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]]):  # noqa: ANN202
    return Tokenizer(vocab, merges, SPECIALS, pattern=pattern, name=f"test-{pattern}")


def test_hf_export_matches_our_encoder(trained, samples) -> None:  # noqa: ANN001
    from core.formats.hf_json import tokenizer_to_hf_json

    pattern, vocab, merges = trained
    ours = _our_tokenizer(pattern, vocab, merges)
    hf = tokenizers.Tokenizer.from_str(tokenizer_to_hf_json(ours)["tokenizer.json"].decode())
    for text in _texts(samples):
        ids = ours.encode(text)
        assert hf.encode(text).ids == ids, text[:80]
        assert hf.decode(ids, skip_special_tokens=False) == ours.decode(ids)


def _parse_tiktoken_file(data: bytes) -> dict[bytes, int]:
    """What tiktoken.load.load_tiktoken_bpe does (without its download cache)."""
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


def test_tiktoken_export_matches_our_encoder(trained, samples) -> None:  # noqa: ANN001
    pattern, vocab, merges = trained
    ours = _our_tokenizer(pattern, vocab, merges)
    data = tokenizer_to_tiktoken(ours)
    ranks = _parse_tiktoken_file(data)
    assert ranks == {t: i for i, t in vocab.items() if i != 0}
    enc = tiktoken.Encoding(
        name=f"export-{pattern}",
        pat_str=resolve_pattern(pattern),
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 0},
    )
    for text in _texts(samples):
        ids = ours.encode(text)
        assert enc.encode(text, allowed_special="all") == ids, text[:80]
        assert enc.decode(ids) == ours.decode(ids)


def test_genuine_gpt2_exports_match_tiktoken(tiktoken_cache: Path) -> None:
    from tests.test_formats_gpt2 import _find_gpt2_files

    from core.formats import loads_gpt2
    from core.formats.hf_json import tokenizer_to_hf_json

    vocab, merges, specials = loads_gpt2(*_find_gpt2_files(tiktoken_cache))
    ours = Tokenizer(vocab, merges, specials, name="gpt2")
    ref = tiktoken.get_encoding("gpt2")
    hf = tokenizers.Tokenizer.from_str(tokenizer_to_hf_json(ours)["tokenizer.json"].decode())
    for text in TEXTS:
        expected = ref.encode(text, allowed_special="all")
        assert ours.encode(text) == expected
        assert hf.encode(text).ids == expected


# Hypothesis: any Unicode text (surrogates excluded: they cannot be encoded as UTF-8)
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@pytest.fixture(scope="module")
def gpt2_small(samples: dict[str, str]):  # noqa: ANN201
    from core.train import train_bpe

    vocab, merges = train_bpe([samples["train_en"][:50_000], samples["train_multi"][:20_000]],
                              600, SPECIALS)  # fmt: skip
    hf = tokenizers.Tokenizer.from_str(dumps_hf_json(vocab, merges, SPECIALS))
    return _our_tokenizer("gpt2", vocab, merges), hf, _tiktoken_from_vocab("gpt2", vocab)


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=_text)
def test_hf_export_property(gpt2_small, text: str) -> None:  # noqa: ANN001
    ours, hf, enc = gpt2_small
    ids = ours.encode(text)
    assert hf.encode(text).ids == ids
    assert enc.encode(text, allowed_special="all") == ids


@pytest.mark.parametrize("preset", ["gpt2", "cl100k_base", "o200k_base"])
def test_preset_exports_match_tiktoken(tiktoken_cache: Path, samples: dict[str, str], preset: str) -> None:
    """The genuine encodings, exported by us, give tiktoken's IDs in HF and in tiktoken."""
    from core.formats import export_all
    from core.formats.presets import load_preset

    ours = load_preset(preset)
    files = export_all(ours)
    ref = tiktoken.get_encoding(preset)
    hf = tokenizers.Tokenizer.from_str(files["tokenizer.json"].decode())
    exported = tiktoken.Encoding(
        name=f"export-{preset}",
        pat_str=ref._pat_str,
        mergeable_ranks=_parse_tiktoken_file(files[f"{preset}.tiktoken"]),
        special_tokens=ref._special_tokens,
    )
    texts = [*TEXTS, samples["test_en"][:50_000], samples["test_multi"][:30_000]]
    for text in texts:
        expected = ref.encode(text, allowed_special="all")
        assert ours.encode(text) == expected, text[:80]
        assert hf.encode(text).ids == expected, text[:80]
        assert exported.encode(text, allowed_special="all") == expected, text[:80]

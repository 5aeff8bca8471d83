"""tokplay_native.normalize, the C twin of a char map applied to a text: SentencePiece's
``normalize_str`` (core.pipeline.sentencepiece.normalizer) and Hugging Face's ``Precompiled``
(core.pipeline.precompiled) give the same string as their pure paths on every input, for the
real char maps (``nmt_nfkc`` from a model sentencepiece trains here, the one in the nomic
GGUF, the one in a T5 ``tokenizer.json`` transformers converts) and every option; a lone
surrogate raises the same error; odd maps stay on the pure path.

`make test` builds the twin (setup.py), so a missing build fails here rather than skipping.
"""

from __future__ import annotations

import functools
import io
import pickle
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sentencepiece as spm
import tokenizers
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core import native
from core.train.builtin_corpus import builtin_corpus_text
from core.pipeline.piece import Piece
from core.pipeline.precompiled import Precompiled, joining_bitmap
from core.pipeline.sentencepiece.normalizer import CharsMap, SentencePieceNormalizer
from core.pipeline.sentencepiece.proto import parse_model_proto
from tests.pipeline.test_fast_encode_sp import _lines

T = TypeVar("T")

#: characters where the walks differ: marks that compose, kana and sound marks, jamo,
#: ligatures, spaces of every kind, ▁, NUL, characters that join a grapheme cluster
#: (Prepend, SpacingMark, ZWJ, regional indicators, CR LF), lone surrogates
SPECIAL = ["A", "e", "か", "ハ", "\u3099", "\u309a", "\u0301", "\u0308", "\u1100", "\u1161",
           "\u11a8", "한", "ﬁ", "①", "Ｆ", " ", "  ", "\u3000", "\t", "\n", "\r\n", "\r", "▁",
           "▁▁", "\x00", "\u200b", "\u200d", "\u0600", "\u0903", "\u0915\u094d", "🇫🇷",
           "👩\u200d💻", "<ud>", "ab", "∑x", "a  b", "\ufeff", "\u00ad", "\ud800", "\udfff"]  # fmt: skip
TEXTS = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.lists(st.one_of(st.sampled_from(SPECIAL), st.text(max_size=3)), max_size=25).map("".join),
)
OPTIONS = st.fixed_dictionaries({
    "add_dummy_prefix": st.booleans(), "remove_extra_whitespaces": st.booleans(),
    "escape_whitespaces": st.booleans(), "treat_whitespace_as_suffix": st.booleans(),
    "user_defined_symbols": st.sampled_from([(), ("<ud>", "ab", "∑x", "a  b", "▁the", " ")]),
})  # fmt: skip
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pure(run: Callable[[], T]) -> T:
    """``run()`` on core's pure path: the twin off, as on Pyodide."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "normalize", None)
        return run()


def _outcome(run: Callable[[], str]) -> tuple[str, Any]:
    """``run()``'s string, or the type of error it raised (a lone surrogate)."""
    try:
        return ("ok", run())
    except UnicodeError as err:
        return ("error", type(err))


@functools.cache
def _nmt_nfkc() -> bytes:
    """The ``nmt_nfkc`` char map of a Unigram model sentencepiece trains here."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_lines()), model_writer=out, model_type="unigram",
        vocab_size=800, minloglevel=2,
    )  # fmt: skip
    return parse_model_proto(out.getvalue()).normalizer_spec.precompiled_charsmap


@functools.cache
def _t5_json() -> str:
    """A T5 ``tokenizer.json`` as transformers converts that model (a Precompiled normalizer)."""
    import importlib
    import tempfile

    import transformers

    convert = importlib.import_module("transformers.convert_slow_tokenizer")
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_lines()), model_writer=out, model_type="unigram",
        vocab_size=800, minloglevel=2,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spiece.model"
        path.write_bytes(out.getvalue())
        slow = transformers.T5Tokenizer(vocab_file=str(path))
        return convert.T5Converter(slow).converted().to_str()


def test_the_twin_is_built() -> None:
    assert native.normalize is not None, "tokplay_native.normalize is not built: pip install -e ."
    assert native.status()["normalize"] is True
    assert CharsMap(_nmt_nfkc(), "m").native() is not None


def _check_sp(blob: bytes, options: dict[str, Any], text: str) -> None:
    normalizer = SentencePieceNormalizer(precompiled_charsmap=blob, **options)
    assert normalizer.charsmap is not None
    assert normalizer.charsmap.native(normalizer.matcher.symbols) is not None
    got = _outcome(lambda: normalizer.normalize_str(text))
    assert got == _pure(lambda: _outcome(lambda: normalizer.normalize_str(text)))
    assert got == _outcome(lambda: normalizer.normalize(Piece.of(text)).text)


@SETTINGS
@given(text=TEXTS, options=OPTIONS)
@example(text="  \u3000 a\u0301  ", options={"user_defined_symbols": ()})
@example(text="\ud800", options={"user_defined_symbols": ()})
def test_sentencepiece_nmt_nfkc(text: str, options: dict[str, Any]) -> None:
    _check_sp(_nmt_nfkc(), options, text)


@functools.cache
def _nomic(models: Path) -> SentencePieceNormalizer:
    from core.formats import load_tokenizer_files

    data = (models / "ggml-vocab-nomic-bert-moe.gguf").read_bytes()
    normalizer = load_tokenizer_files({"nomic.gguf": data}).normalizer
    assert isinstance(normalizer, SentencePieceNormalizer)
    return normalizer


def test_the_nomic_gguf_char_map(llama_cpp_vocabs: Path) -> None:
    """nomic-embed-text-v2-moe's GGUF (XLM-R's char map), as loaded, both ways."""
    normalizer = _nomic(llama_cpp_vocabs)
    assert normalizer.charsmap is not None and normalizer.charsmap.native() is not None
    blob = normalizer.charsmap._blob
    corpus = builtin_corpus_text()
    texts = [corpus[:30_000], corpus[-30_000:], " ".join(SPECIAL[:-2])]
    assert [normalizer.normalize_str(t) for t in texts] == _pure(
        lambda: [normalizer.normalize_str(t) for t in texts]
    )

    @settings(max_examples=150, deadline=None)
    @given(text=TEXTS, options=OPTIONS)
    def run(text: str, options: dict[str, Any]) -> None:
        _check_sp(blob, options, text)

    run()


@SETTINGS
@given(text=TEXTS)
@example(text="e\u0301\r\n\u0600x\u0915\u094d\u0937 🇫🇷👩\u200d💻ｶ\uff9e")
def test_precompiled_of_a_t5_json(text: str) -> None:
    """The T5 json's Precompiled normalizer: C, pure and Hugging Face itself agree."""
    normalizer = _t5_tok().normalizer
    got = _outcome(lambda: normalizer.normalize_str(text))
    assert got == _pure(lambda: _outcome(lambda: normalizer.normalize_str(text)))
    assert got == _outcome(lambda: normalizer.normalize(Piece.of(text)).text)
    if got[0] == "ok":
        assert got[1] == _hf_t5().normalizer.normalize_str(text)


@functools.cache
def _t5_tok() -> Any:
    from core.formats import load_tokenizer_files

    tok = load_tokenizer_files({"tokenizer.json": _t5_json().encode()})
    assert any(isinstance(n, Precompiled) for n in tok.normalizer.normalizers)
    return tok


@functools.cache
def _hf_t5() -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_str(_t5_json())


def test_t5_encodes_the_same_both_ways() -> None:
    tok = _t5_tok()
    corpus = builtin_corpus_text()
    texts = [corpus[:20_000], corpus[-20_000:], "".join(SPECIAL[:-2])]
    want = [_hf_t5().encode(t, add_special_tokens=False).ids for t in texts]
    assert [tok.encode(t) for t in texts] == want
    assert _pure(lambda: [tok.encode(t) for t in texts]) == want


def test_odd_char_maps_stay_pure() -> None:
    """An empty trie, replacements that are not UTF-8, a trie past the blob's end: the C
    twin refuses them (ValueError), and the pure path runs."""
    module = native.normalize
    assert module is not None
    for blob in (bytes([0, 0, 0, 0, 0]), bytes([8, 0, 0, 0, 0, 0]), bytes([6, 0, 0, 0]) + b"xx"):
        with pytest.raises(ValueError):
            module.CharsMap(blob)
    bad_pool = bytes([8, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0]) + b"\xff\x00"
    assert CharsMap(bad_pool, "m").native() is None
    normalizer = SentencePieceNormalizer(precompiled_charsmap=bad_pool)
    assert normalizer.normalize_str(" a  b ") == "▁a▁b"
    with pytest.raises(ValueError):
        module.CharsMap(_nmt_nfkc(), [""])
    with pytest.raises(TypeError):
        module.CharsMap(_nmt_nfkc()).sp_normalize(b"x", True, True, True, False)
    with pytest.raises(TypeError):
        module.CharsMap(_nmt_nfkc()).hf_normalize("x", ("x",))
    with pytest.raises(ValueError):
        module.CharsMap(_nmt_nfkc()).hf_normalize("x", b"\xff")


def test_the_joining_bitmap_covers_all_unicode() -> None:
    """The planes it scans hold every character that may join a grapheme cluster."""
    assert joining_bitmap() == joining_bitmap(((0, 0x110000),))
    compiled = CharsMap(_nmt_nfkc(), "m").native()
    assert compiled is not None
    for text in ("e\u0301", "a\r\nb", "\u0600a", "🇫🇷", "\u1100\u1161", "x\u200d"):
        assert compiled.hf_normalize(text, joining_bitmap()) is None
    text = "한국어 ﬁ\r \n\r"
    assert compiled.hf_normalize(text, joining_bitmap()) == "한국어 fi    "
    assert _pure(lambda: Precompiled(_nmt_nfkc()).normalize_str(text)) == "한국어 fi    "


def test_a_pickled_normalizer_builds_its_own_twin() -> None:
    normalizer = SentencePieceNormalizer(precompiled_charsmap=_nmt_nfkc())
    assert normalizer.normalize_str("ﬁ  x") == "▁fi▁x"
    copy = pickle.loads(pickle.dumps(normalizer))
    assert copy.normalize_str("ﬁ  x") == "▁fi▁x"
    assert copy.charsmap is not None and copy.charsmap.native() is not None


def test_long_text_and_many_rules() -> None:
    """Bounded work on large input: a long run of spaces and of characters with rules."""
    normalizer = SentencePieceNormalizer(precompiled_charsmap=_nmt_nfkc())
    text = " " * 200_000 + "ﬁ①" * 100_000 + "\u3000" * 50_000
    assert normalizer.normalize_str(text) == _pure(lambda: normalizer.normalize_str(text))
    hf = Precompiled(_nmt_nfkc())
    assert hf.normalize_str(text) == _pure(lambda: hf.normalize_str(text))


#: small tries of arbitrary units, and of plausible ones (small offsets, common labels)
UNITS = st.lists(
    st.one_of(
        st.integers(0, (1 << 32) - 1),
        st.builds(lambda offset, leaf, shift, label, top: offset << 10 | leaf << 8
                  | shift << 9 | label | top << 31,
                  st.integers(0, 63), st.integers(0, 1), st.integers(0, 1),
                  st.sampled_from([0x61, 0x62, 0x20, 0xC3, 0xA9, 0x00, 0xE3]), st.integers(0, 1)),
    ),
    min_size=1, max_size=40,
)  # fmt: skip
POOLS = st.lists(st.sampled_from(["a", "b", " ", "\x00", "é", "xy", "  "]), max_size=6).map(
    lambda parts: "".join(parts).encode()
)
SMALL_TEXTS = st.lists(st.sampled_from(["a", "b", " ", "é", "\x00", "か", "  ", "e\u0301", "ab"]),
                       max_size=10).map("".join)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(units=UNITS, pool=POOLS, text=SMALL_TEXTS, options=OPTIONS)
def test_arbitrary_tries_both_ways(
    units: list[int], pool: bytes, text: str, options: dict[str, Any]
) -> None:
    """Any trie the file may hold (offsets past its end, leaves without values): the same
    text as the pure walks, never a crash."""
    blob = struct.pack(f"<I{len(units)}I", 4 * len(units), *units) + pool
    normalizer = SentencePieceNormalizer(precompiled_charsmap=blob, **options)
    assert normalizer.normalize_str(text) == _pure(lambda: normalizer.normalize_str(text))
    hf = Precompiled(blob)
    assert hf.normalize_str(text) == _pure(lambda: hf.normalize_str(text))

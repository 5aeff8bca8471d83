"""tokplay_native.unigram, the C twin of Unigram's Viterbi pass: the same best path and end
score as the pure search (core.pipeline.models.unigram.UnigramModel.best_path) on every input, ties
and float32 rounding included, for both flavours; the same IDs from a whole encode (the C
search over the whole text against the pure word-by-word one); the same results on real
model files with the twin on and off; and errors rather than crashes.

`make test` builds the twin (setup.py), so a missing build fails here rather than skipping.
"""

from __future__ import annotations

import json
import math
import pickle
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core import native
from core.train.builtin_corpus import builtin_corpus_text
from core.errors import PlaygroundError
from core.pipeline.sentencepiece.proto import NORMAL, UNUSED, USER_DEFINED
from core.pipeline.models.unigram import UnigramModel
from tests.pipeline.test_unigram import EDGE_TEXTS, MODELS, loaded

T = TypeVar("T")

ALPHABET = "ab▁é😀"
#: scores that tie in real arithmetic (a + aa = aa + a) and float32 values that round apart
SCORES = [-1.0, -1.5, -2.0, -2.5, -3.0, -0.1, -7.25, -12.125, -3.3333333, -2.7182817,
          -5.4365634, -6.9564398681052335, 0.0, -1e-30]  # fmt: skip
PIECES = st.lists(
    st.tuples(st.text(ALPHABET, min_size=1, max_size=4), st.sampled_from(SCORES),
              st.sampled_from([NORMAL, NORMAL, NORMAL, USER_DEFINED, UNUSED])),
    min_size=1, max_size=25,
)  # fmt: skip
#: texts over the pieces' alphabet, with characters no piece covers (unknown runs)
TEXTS = st.one_of(st.text(ALPHABET + "xy", max_size=60), st.text(max_size=30))
#: where a word's search may start: 0, large scores near the reset, odd floats
STARTS = st.one_of(
    st.just(0.0),
    st.sampled_from([99_999.0, -99_999.5, 100_000.0, 1e5 + 0.0078125, -1e5 - 1, 3e38, -1e39]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def test_the_twin_is_built() -> None:
    """`pip install -e .` (make test) builds it where a C compiler is; CI has one."""
    assert native.unigram is not None, "tokplay_native.unigram is not built: run `pip install -e .`"
    assert native.status()["unigram"] is True


def _pure(run: Callable[[], T]) -> T:
    """``run()`` on core's pure path: the twin off, as on Pyodide."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "unigram", None)
        return run()


def _outcome(run: Callable[[], Any]) -> Any:
    """What ``run()`` returns, or the error it raises (type and message)."""
    try:
        return run()
    except (PlaygroundError, UnicodeError) as err:
        return (type(err), str(err))


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN scores included (a path's score may be NaN after a NaN start)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def _model(pieces: list[tuple[str, float, int]], flavour: str, *, byte_fallback: bool,
           unk: bool) -> UnigramModel:  # fmt: skip
    entries = [("<unk>", 0.0, NORMAL)] if unk else []
    entries += pieces
    if byte_fallback:
        entries += [(f"<0x{b:02X}>", 0.0, NORMAL) for b in range(0, 256, 3)]  # (some missing)
    types = [kind for _, _, kind in entries] if flavour == "sentencepiece" else None
    if types is not None and unk:
        types[0] = 2  # UNKNOWN: never in the lattice
    return UnigramModel(
        [(p, s) for p, s, _ in entries], unk_id=0 if unk else None,
        byte_fallback=byte_fallback, flavour=flavour, types=types,  # type: ignore[arg-type]
    )  # fmt: skip


# ─── the search itself ──────────────────────────────────────────────────────────────────


@settings(max_examples=400, deadline=None)
@given(PIECES, st.lists(TEXTS, min_size=1, max_size=4), STARTS,
       st.sampled_from(["sentencepiece", "huggingface"]), st.booleans(), st.booleans())  # fmt: skip
@example([("a", -2.7182817, NORMAL), ("aa", -5.4365634, NORMAL), ("b", -12.125, NORMAL),
          ("ab", -6.9564398681052335, NORMAL), ("aaa", -5.785978388174978, NORMAL)],
         ["baaaabbabaaaabbabaaabaaaaaaaabaaaaaaa"], 0.0, "sentencepiece", False, True)  # fmt: skip
def test_best_path_is_the_pure_search(pieces, texts, start, flavour, byte_fallback, unk):
    model = _model(pieces, flavour, byte_fallback=byte_fallback, unk=unk)
    for text in texts:
        got = model.best_path(text, start)
        want = _pure(lambda: model.best_path(text, start))  # noqa: B023
        assert _same(got, want), (text, start)


@settings(max_examples=300, deadline=None)
@given(PIECES, st.lists(TEXTS, min_size=1, max_size=4), st.booleans(), st.booleans())
@example([("a", -1.0, NORMAL)], ["xxay", "x"], False, True)  # (unknown runs: one <unk>)
@example([("a", -1.0, NORMAL)], ["xa"], False, False)  # (no <unk> piece: an error)
@example([("a", -1.0, NORMAL)], ["\udcff"], True, True)  # (a lone surrogate's bytes)
def test_encode_is_the_pure_word_by_word_encode(pieces, texts, byte_fallback, unk):
    model = _model(pieces, "sentencepiece", byte_fallback=byte_fallback, unk=unk)
    for text in texts:
        got = _outcome(lambda: model.encode_word(text))  # noqa: B023
        want = _pure(lambda: _outcome(lambda: model.encode_word(text)))  # noqa: B023
        assert got == want, text
        if unk:  # (tokenize: the C search, the pure finish; without <unk> it raises sooner)
            assert _outcome(lambda: [t[0] for t in model.tokenize(text)]) == got, text  # noqa: B023


@settings(max_examples=300, deadline=None)
@given(PIECES, st.lists(TEXTS, min_size=1, max_size=4), st.booleans(), st.booleans())
@example([("a", -1.0, NORMAL)], ["<unk>x<unk>a<unk>", "xyxa"], False, True)  # (fused, found)
@example([("a", -1.0, NORMAL), ("xy", -30.0, NORMAL)], ["xyx"], False, True)
@example([("a", -1.0, NORMAL)], ["ax\udcffa"], True, True)  # (a lone surrogate's bytes)
@example([("a", -1.0, NORMAL)], ["ax"], False, False)  # (no <unk>: an error)
def test_huggingface_tokenize_is_the_pure_one(pieces, texts, byte_fallback, unk):
    model = _model(pieces, "huggingface", byte_fallback=byte_fallback, unk=unk)
    for text in texts:
        got = _outcome(lambda: model.tokenize(text))  # noqa: B023
        model.clear_cache()
        want = _pure(lambda: _outcome(lambda: model.tokenize(text)))  # noqa: B023
        model.clear_cache()
        assert got == want, text


def test_past_the_score_reset_every_score_is_taken_back() -> None:
    """A long text passes 1e5 several times: sentencepiece 0.2.3 takes the score back to 0
    each time, and the rounding after it decides near-ties (the C loop does it too)."""
    pieces = [("a", -2.7182817, NORMAL), ("aa", -5.4365634, NORMAL), ("b", -12.125, NORMAL),
              ("ab", -6.9564398681052335, NORMAL), ("aaa", -5.785978388174978, NORMAL)]  # fmt: skip
    model = _model(pieces, "sentencepiece", byte_fallback=False, unk=True)
    text = "baaaabbabaaaabbabaaabaaaaaaaabaaaaaaa" * 2000
    got = model.best_path(text)
    assert got == _pure(lambda: model.best_path(text))
    assert model.encode_word(text) == _pure(lambda: model.encode_word(text))


def test_bad_arguments_raise_not_crash() -> None:
    assert native.unigram is not None
    lattice_type = native.unigram.Lattice
    with pytest.raises(TypeError):
        lattice_type({1: 0}, [0.0], -10.0, True, 1e5, [-1] * 256)  # a piece that is no str
    with pytest.raises(ValueError):
        lattice_type({"a": 5}, [0.0], -10.0, True, 1e5, [-1] * 256)  # an ID without a score
    with pytest.raises(ValueError):
        lattice_type({"a": 0}, [0.0], -10.0, True, 1e5, [-1] * 3)  # not 256 byte IDs
    lattice = lattice_type({"a": 0, "": 0}, [-1.0], -10.0, True, 1e5, [-1] * 256)
    with pytest.raises(TypeError):
        lattice.best_path(b"a")
    assert lattice.best_path("") == ([], 0.0)
    assert lattice.encode("ax", False, 7) == [0, 7]
    assert lattice.encode("axx", True, 7) == [0]  # (byte pieces missing: nothing)


def test_a_used_model_pickles_and_encodes_the_same() -> None:
    # (Evaluate sends tokenizers to worker processes: the C object is left out, rebuilt)
    model = _model([("a", -1.0, NORMAL), ("ab", -1.5, NORMAL)], "sentencepiece",
                   byte_fallback=False, unk=True)  # fmt: skip
    before = model.encode_word("abxab")
    copy = pickle.loads(pickle.dumps(model))
    assert copy.encode_word("abxab") == before == [2, 0, 2]


# ─── real models: the twin on and off ─────────────────────────────────────────────────────


@pytest.fixture(params=["native", "pure"])
def twin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "pure":
        monkeypatch.setattr(native, "unigram", None)
    yield request.param


@pytest.mark.parametrize("name", list(MODELS))
def test_trained_models_match_sentencepiece_both_ways(name: str, twin: str) -> None:
    tok, sp = loaded(name)
    tok.model.clear_cache()
    corpus = builtin_corpus_text()
    texts = EDGE_TEXTS + [corpus[:20_000], corpus[-20_000:]]
    assert [tok.encode(t) for t in texts] == [sp.encode(t) for t in texts]


def test_the_real_xlmr_vocab_both_ways(llama_cpp_vocabs: Path) -> None:
    """nomic-embed-text-v2-moe's GGUF: XLM-R's 250k pieces (test_formats_gguf checks it
    against sentencepiece); the C search and the pure one give the same IDs."""
    from core.formats import load_tokenizer_files

    data = (llama_cpp_vocabs / "ggml-vocab-nomic-bert-moe.gguf").read_bytes()
    tok = load_tokenizer_files({"nomic.gguf": data})
    texts = EDGE_TEXTS + [builtin_corpus_text()[:30_000]]
    got = [tok.encode(t) for t in texts]
    tok.model.clear_cache()
    assert got == _pure(lambda: [tok.encode(t) for t in texts])


# ─── serde_floats: a tokenizer.json's scores as the tokenizers library reads them ───────


def _float_bits(values: list[float]) -> list[bytes]:
    import struct

    return [struct.pack("<d", v) for v in values]


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.floats() | st.floats(width=32) | st.floats(-40, 0), max_size=40))
@example(values=[-11.602532386779785, -6.682016372680664, 0.0, -0.0, 1e-05, 1e16, 1e21,
                 1234567890123456789.0, 12345678901234567.0, math.inf, -math.inf, math.nan,
                 5e-324, 1.7976931348623157e308])  # fmt: skip
def test_serde_floats_is_the_pure_loop(values: list[float]) -> None:
    """The same bits as the pure expression (and _as_serde_reads where it falls back)."""
    from core.pipeline.models import unigram_json

    fast = native.unigram
    assert fast is not None
    got = fast.serde_floats(values, unigram_json._as_serde_reads)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "unigram", None)
        want = unigram_json._serde_floats(values)
    assert _float_bits(got) == _float_bits(want)
    assert _float_bits(want) == _float_bits([unigram_json._as_serde_reads(v) for v in values])


def test_serde_floats_refuses_what_is_no_list_of_floats() -> None:
    fast = native.unigram
    assert fast is not None
    for bad in ((1.0,), [1.0, 2], [True]):
        with pytest.raises(TypeError):
            fast.serde_floats(bad, float)


# ─── vocab_columns: a tokenizer.json's scores read from its digits ──────────────────────

#: JSON numbers as files spell them: shortest, 17 digits, long, exponents, ints, -0
NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-40, 0).map(lambda v: f"{v:.17g}"),
    st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(["-0", "0", "-0.0", "1e400", "-1e-400", "18446744073709551616.5",
                     "99999999999999999999.9", "1e-99999999999", "0e99999999999"]),
)  # fmt: skip
#: piece texts that stress a JSON reader: quotes, backslashes, brackets, escapes
PIECE_TEXTS = st.text(st.sampled_from('a"\\[]{},:▁é😀\n\x00 '), max_size=5)
#: other members, at the top and in the model: nested values with the same hazards
OTHER = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), PIECE_TEXTS),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(PIECE_TEXTS, inner, max_size=3),
    max_leaves=8,
)


def _dump(value: Any, space: str) -> str:
    return json.dumps(value, ensure_ascii=False, separators=("," + space, ":" + space))


@st.composite
def _documents(draw: st.DrawFn) -> bytes:
    """A tokenizer.json-like document: a Unigram vocab of [text, number] (or odd items),
    other members around it, keys that repeat ("model", "vocab": the last counts)."""
    space = draw(st.sampled_from(["", " ", "\n  "]))

    def vocab() -> str:
        items = draw(st.lists(st.tuples(PIECE_TEXTS, NUMBERS), max_size=6))
        texts = [f"[{_dump(t, space)},{space}{n}]" for t, n in items]
        if draw(st.integers(0, 9)) == 0:  # (an item that is no [text, number])
            texts.insert(draw(st.integers(0, len(texts))), _dump(draw(OTHER), space))
        return f"[{space}{(',' + space).join(texts)}{space}]"

    def members(wanted: str, value: Callable[[], str]) -> str:
        keys = draw(st.lists(st.sampled_from([wanted, wanted, "type", "x", "vocabulary"]),
                             max_size=4))  # fmt: skip
        return ("," + space).join(
            f"{_dump(k, space)}:{space}{value() if k == wanted else _dump(draw(OTHER), space)}"
            for k in keys
        )

    model = lambda: "{" + members("vocab", vocab) + "}"  # noqa: E731
    text = "{" + space + members("model", model) + space + "}"
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + text.encode()


def _vocab_of(source: bytes) -> Any:
    doc = json.loads(source.decode("utf-8-sig"))
    model = doc.get("model") if isinstance(doc, dict) else None
    return model.get("vocab") if isinstance(model, dict) else None


def _columns_bits(found: Any) -> Any:
    return found if found is None else (found[0], [struct.pack("<d", s) for s in found[1]])


@settings(max_examples=500, deadline=None)
@given(_documents(), st.booleans())
@example(b'{"model": {"vocab": [["a", -1.8691413145620870], ["b", -0]]}}', False)
@example(b'{"model": {"vocab": [["\\"]", 1]], "vocab": [["x", 2.5]]}, "model": 1}', False)
@example(b'{"model": {"vocab": []}, "model": {"vocab": [["a", 1e400]]}}', False)
def test_vocab_columns_is_the_pure_reader(source: bytes, other_vocab: bool) -> None:
    """Whatever the C reader answers is the pure reader's answer, bit for bit, and it
    answers whenever the pure one does (no key is spelled with an escape here)."""
    from core.pipeline.models import unigram_json

    fast = native.unigram
    assert fast is not None
    vocab = _vocab_of(source)
    if not isinstance(vocab, list):
        vocab = []
    if other_vocab:  # (not the file the vocab was parsed from: each number another)
        pairs = [i if isinstance(i, list) and len(i) == 2 else ["a", 1] for i in vocab]
        vocab = [[t, 0.5 if isinstance(s, (int, float)) else s] for t, s in pairs]
    got = fast.vocab_columns(vocab, source)
    want = unigram_json._vocab_columns(vocab, source)
    assert _columns_bits(got) == _columns_bits(want)


def test_vocab_columns_leaves_escaped_keys_to_the_pure_reader() -> None:
    from core.pipeline.models import unigram_json

    fast = native.unigram
    assert fast is not None
    source = b'{"mod\\u0065l": {"vocab": [["a", -1.8691413145620870]]}}'
    vocab = _vocab_of(source)
    assert fast.vocab_columns(vocab, source) is None
    assert unigram_json._file_columns(vocab, source) == (["a"], [-1.8691413145620872])


@settings(max_examples=300, deadline=None)
@given(_documents(), st.data())
def test_vocab_columns_never_crashes_on_any_bytes(source: bytes, data: st.DataObject) -> None:
    """Cut, spliced or random bytes: an answer or None, never a crash."""
    fast = native.unigram
    assert fast is not None
    vocab = _vocab_of(source)
    vocab = vocab if isinstance(vocab, list) else [["a", 1.0]]
    cut = data.draw(st.integers(0, len(source)))
    junk = data.draw(st.binary(max_size=20))
    for broken in (source[:cut], source[:cut] + junk + source[cut:], junk):
        found = fast.vocab_columns(vocab, broken)
        assert found is None or (isinstance(found, tuple) and len(found[0]) == len(vocab))


def test_vocab_columns_refuses_what_is_no_list_and_bytes() -> None:
    fast = native.unigram
    assert fast is not None
    for bad in (((), b"{}"), ([], "{}"), ([],)):
        with pytest.raises(TypeError):
            fast.vocab_columns(*bad)

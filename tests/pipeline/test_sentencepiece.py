"""SentencePiece ``.model`` files (core.pipeline.sentencepiece) against the ``sentencepiece``
library itself: IDs of ``encode(text)``, text of ``decode(ids)``, parsed fields against its
protobuf classes.

Files: Mistral's four (``mistral_common``'s package data: v1 is Mistral 7B v0.1, Llama 2's
layout; v2, v3, v7 add control tokens such as ``[INST]``, v3/v7 user-defined ones), and
small models trained here by ``sentencepiece`` itself to reach what those files do not
(a ``nmt_nfkc`` char map, ``remove_extra_whitespaces``, ``treat_whitespace_as_suffix``, no
byte fallback, UNUSED pieces, ...).
"""

from __future__ import annotations

import functools
import gzip
import io
import random
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine.bpe import merge
from core.errors import FormatError
from core.pipeline.piece import Piece
from core.pipeline.sentencepiece import (
    SentencePieceBPE,
    SentencePieceDecoder,
    SentencePieceNormalizer,
    UserPiece,
    load_sentencepiece_model,
    looks_like_sentencepiece,
    sentencepiece_tokenizer,
)
from core.pipeline.sentencepiece.proto import (
    UNUSED,
    ProtoPiece,
    parse_model_proto,
)
from tests.conftest import CORPORA, need_module, need_shared

MISTRAL = [
    "tokenizer.model.v1",
    "mistral_instruct_tokenizer_240216.model.v2",
    "mistral_instruct_tokenizer_240323.model.v3",
    "mistral_instruct_tokenizer_241114.model.v7",
]

EDGE_TEXTS = [
    "",
    " ",
    "  ",
    "Hello world",
    "Hello, world! How are you?",
    "   leading and trailing   ",
    " " * 40 + "x" + " " * 17,
    "\t\ttabs\tand\nnewlines\n\n\r\n",
    "1234567 3.14159 2024-11-14 0x1F",
    "DON'T I'LL WE'VE don't",
    "你好，世界！这是一个测试。",
    "日本語のテキスト、カタカナ",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "안녕하세요 세계",
    "Привет, мир",
    "👩‍👩‍👧 family, 👍🏽 thumbs, 🇫🇷 flag",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ ⿰ 𠀀 \U0010fffd",  # rare: byte fallback
    "\x00\x01\x7f control chars",
    "▁typed▁ ▁▁",
    "e\u0301 é ﬁ Ｆｕｌｌ ① ²",
    "[INST] hi [/INST] <s> </s> <unk>",
    "[REFERENCE_DOC_1][REF] [IMG]",
    "<0x41><0x0A>",
    "\u200b\u200d\ufeff",
    "def f(x):\n    return x  # comment\n",
    "a" * 300,
    "▁" * 50 + "a",
]

# Pieces that hit the corners: spaces, byte fallback, control / user-defined piece names,
# combining marks and compatibility forms (for the nmt_nfkc char map).
ALPHABET = list("abcxyz ABC  \t\n'.,019") + [
    "▁", "  ", "   ", "\r\n", "[INST]", "<s>", "</s>", "<unk>", "[REF]", "[REFERENCE_DOC_1]",
    "👩‍👩‍👧", "你好", "世界", "مرحبا", "नमस्ते", "สวัสดี", "안녕", "\u200b", "e\u0301", "Ｆ",
    "①", "ﬁ", "　", "<0x41>", "\x00", "𠀀", "DON'T", "the", " the ", "ing", "<mask>", "[X]",
]  # fmt: skip
TEXTS = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=40),
    st.lists(
        st.one_of(st.sampled_from(ALPHABET), st.text(max_size=4)), max_size=25
    ).map("".join),
)


# ─── the oracle and the files ───────────────────────────────────────────────────────────


def _spm() -> Any:
    return need_module("sentencepiece")


@functools.cache
def _mistral_bytes(name: str) -> bytes:
    need_module("mistral_common")
    return resources.files("mistral_common").joinpath("data", name).read_bytes()


@functools.cache
def _pair(data: bytes) -> tuple[Any, Any]:
    """(ours, sentencepiece's) for one .model file's bytes."""
    return sentencepiece_tokenizer(data), _spm().SentencePieceProcessor(
        model_proto=data
    )


def _mistral(name: str) -> tuple[Any, Any]:
    return _pair(_mistral_bytes(name))


@functools.cache
def _loaded(name: str) -> Any:
    """The parts of a Mistral file or of a trained variant (by name)."""
    return load_sentencepiece_model(
        _mistral_bytes(name) if name in MISTRAL else VARIANTS[name]()
    )


@functools.cache
def _special_and_byte_ids(name: str) -> tuple[list[int], list[int]]:
    _, sp = _mistral(name)
    n = sp.get_piece_size()
    specials = [i for i in range(n) if sp.is_control(i) or sp.is_unknown(i)][:40]
    return specials, [sp.piece_to_id(f"<0x{b:02X}>") for b in range(256)]


def _mismatches(
    tok: Any, sp: Any, texts: list[str], *, full: bool = True
) -> list[tuple[str, Any, Any]]:
    """Texts whose IDs or decoded text differ from sentencepiece's (``full``: also the
    IDs with BOS, and decoding with special tokens skipped)."""
    bad: list[tuple[str, Any, Any]] = []
    for text in texts:
        want, got = sp.encode(text), tok.encode(text)
        if got != want:
            bad.append((text, want, got))
            continue
        if tok.decode(want) != sp.decode(want):
            bad.append((text, sp.decode(want), tok.decode(want)))
        if not full:
            continue
        want_bos = sp.encode(text, add_bos=True)
        if tok.encode(text, add_special_tokens=True) != want_bos:
            bad.append((text, want_bos, tok.encode(text, add_special_tokens=True)))
        if tok.decode(want_bos, skip_special_tokens=True) != sp.decode(want):
            bad.append(
                (text, sp.decode(want), tok.decode(want_bos, skip_special_tokens=True))
            )
    return bad


# ─── small models trained by sentencepiece itself ───────────────────────────────────────

_CORPUS_EXTRA = [
    "Ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ ①②③ ﬁ ligature",
    "你好世界 这是 测试",
    "Ünïcödé  café   naïve e\u0301",
    "tab\tseparated\tvalues",
    "x² + y² = z²",
    "DON'T stop 1234567",
]


@functools.cache
def _corpus() -> tuple[str, ...]:
    from core.train.builtin_corpus import builtin_corpus_documents

    lines = [ln for doc in builtin_corpus_documents()[:40] for ln in doc.splitlines()]
    return tuple([ln for ln in lines if ln.strip()][:8000] + _CORPUS_EXTRA * 30)


@functools.cache
def _trained(model_type: str = "bpe", **options: Any) -> bytes:
    spm = _spm()
    out = io.BytesIO()
    settings = {"vocab_size": 600, **options}
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_corpus()),
        model_writer=out,
        model_type=model_type,
        minloglevel=2,
        **{k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
    )
    return out.getvalue()


def _edited(data: bytes, edit: Callable[[Any], None]) -> bytes:
    """``data`` parsed with protobuf, changed by ``edit``, serialized again."""
    pb2 = need_module("sentencepiece.sentencepiece_model_pb2")
    proto = pb2.ModelProto()
    proto.ParseFromString(data)
    edit(proto)
    return proto.SerializeToString()


def _mark_unused(proto: Any) -> None:
    rng = random.Random(1)
    for p in proto.pieces:
        if p.type == 1 and len(p.piece) > 1 and rng.random() < 0.3:
            p.type = UNUSED


def _unformable_unused(proto: Any) -> None:
    """UNUSED pieces no merge can form, as Phi-3's ``[PAD32000]``.. (no piece is a half of
    one): its words stay independent."""
    for i in range(12):
        piece = proto.pieces.add()
        piece.piece, piece.score, piece.type = f"[PAD{32000 + i}]", 0.0, UNUSED


def _infinite_scores(proto: Any) -> None:
    """Some pieces scored -inf: still merged, after every other piece."""
    for p in proto.pieces[300:]:
        if p.type == 1:
            p.score = float("-inf")


def _drop_bytes(proto: Any) -> None:
    keep = [p for p in proto.pieces if p.type != 6]
    del proto.pieces[:]
    proto.pieces.extend(keep)
    proto.trainer_spec.byte_fallback = False


def _no_escape(proto: Any) -> None:
    proto.normalizer_spec.escape_whitespaces = False


def _identity_squeezing(proto: Any) -> None:
    proto.normalizer_spec.precompiled_charsmap = b""
    proto.normalizer_spec.remove_extra_whitespaces = True


def _empty_unk_surface(proto: Any) -> None:
    proto.trainer_spec.unk_surface = ""


def _extend_user_defined(proto: Any) -> None:
    """Normal pieces that start or end with a user-defined piece: never made, as a
    user-defined piece is never merged with anything (bpe_model.cc's ``freeze``)."""
    for text in ["[X]a", "▁[X]", "<mask>▁the", "ab cd▁"]:
        piece = proto.pieces.add()
        piece.piece, piece.score, piece.type = text, 0.0, 1


_FALLBACK = {"byte_fallback": True}
_USER = {
    "user_defined_symbols": ("<mask>", "[X]", "ab cd", "▁▁x", "e\u0301"),
    "control_symbols": ("<ctl>", "[INST]"),
    **_FALLBACK,
}
VARIANTS: dict[str, Callable[[], bytes]] = {
    "nmt_nfkc": lambda: _trained(),
    "nfkc_cf": lambda: _trained(normalization_rule_name="nfkc_cf"),
    "identity+bytes": lambda: _trained(
        normalization_rule_name="identity", remove_extra_whitespaces=False, **_FALLBACK
    ),
    "suffix": lambda: _trained(treat_whitespace_as_suffix=True),
    "no dummy prefix": lambda: _trained(
        add_dummy_prefix=False, remove_extra_whitespaces=False
    ),
    "user-defined": lambda: _trained(**_USER),
    "whitespace pieces": lambda: _trained(
        allow_whitespace_only_pieces=True,
        remove_extra_whitespaces=False,
        split_digits=True,
    ),
    "frozen user-defined": lambda: _edited(_trained(**_USER), _extend_user_defined),
    "infinite scores": lambda: _edited(_trained(**_FALLBACK), _infinite_scores),
    "unused pieces": lambda: _edited(_trained(**_FALLBACK), _mark_unused),
    "unused, no bytes": lambda: _edited(_trained(), _mark_unused),
    "unformable unused": lambda: _edited(_trained(**_FALLBACK), _unformable_unused),
    "no byte fallback": lambda: _edited(_trained(**_FALLBACK), _drop_bytes),
    "no escape": lambda: _edited(_trained(), _no_escape),
    "identity squeezing": lambda: _edited(_trained(**_FALLBACK), _identity_squeezing),
    "empty unk surface": lambda: _edited(_trained(), _empty_unk_surface),
}


# ─── encode / decode: Mistral's files ───────────────────────────────────────────────────


@pytest.mark.parametrize("name", MISTRAL)
def test_edge_cases_match_sentencepiece(name: str) -> None:
    tok, sp = _mistral(name)
    assert _mismatches(tok, sp, EDGE_TEXTS) == []


@pytest.mark.parametrize("name", MISTRAL)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS)
def test_any_text_matches_sentencepiece(name: str, text: str) -> None:
    tok, sp = _mistral(name)
    assert _mismatches(tok, sp, [text]) == []


def _id_lists(
    n: int, specials: list[int], bytes_: list[int]
) -> st.SearchStrategy[list[int]]:
    return st.lists(
        st.one_of(
            st.integers(0, n - 1),
            st.sampled_from(specials),
            st.sampled_from(bytes_),  # runs of these make valid and invalid UTF-8
            st.sampled_from(bytes_[0xC0:0xF8]),  # lead bytes
            st.sampled_from(bytes_[0x80:0xC0]),  # continuation bytes
        ),
        max_size=16,
    )


@pytest.mark.parametrize("name", MISTRAL)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_decode_any_ids_matches_sentencepiece(name: str, data: st.DataObject) -> None:
    tok, sp = _mistral(name)
    specials, bytes_ = _special_and_byte_ids(name)
    ids = data.draw(_id_lists(sp.get_piece_size(), specials, bytes_))
    want = sp.decode(ids)
    assert tok.decode(ids) == want
    # control pieces decode to "" anyway, so skipping them changes nothing
    assert tok.decode(ids, skip_special_tokens=True) == want


@pytest.mark.parametrize(
    "ids",
    [
        [0xE2 + 3, 0x82 + 3],  # a truncated 3-byte character: one U+FFFD per byte
        [0xED + 3, 0xA0 + 3, 0x80 + 3],  # an encoded surrogate
        [0xC0 + 3, 0x80 + 3],  # an overlong NUL
        [0xF4 + 3, 0x90 + 3, 0x80 + 3, 0x80 + 3],  # past U+10FFFF
        [0xEF + 3, 0xBF + 3, 0xBD + 3],  # U+FFFD itself, encoded
        [1, 29871, 1, 29871, 2, 29871],  # "▁" around control pieces
        [29871, 29871, 22557],  # "▁", "▁", "▁Hello"
        [0, 22557, 0],  # <unk>
        [0x20 + 3, 22557],  # a byte first: the next ▁ is kept
    ],
)
def test_decode_corner_cases(ids: list[int]) -> None:
    tok, sp = _mistral("tokenizer.model.v1")
    assert tok.decode(ids) == sp.decode(ids)


@pytest.mark.parametrize("name", MISTRAL)
def test_control_tokens_are_special_and_never_matched(name: str) -> None:
    tok, sp = _mistral(name)
    controls = [
        sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_control(i)
    ]
    assert tok.special_tokens == controls
    assert tok.special_token_ids["<s>"] == 1
    assert tok.template.prefix == (1,) and tok.template.text == "<s> $A"
    for control in controls[:30]:
        assert tok.encode(control) == sp.encode(control)
        assert sp.piece_to_id(control) not in tok.encode(control)


def test_user_defined_pieces_are_matched() -> None:
    tok, sp = _mistral("mistral_instruct_tokenizer_241114.model.v7")
    ids = tok.encode("a[REFERENCE_DOC_12]b")
    assert sp.piece_to_id("[REFERENCE_DOC_12]") in ids
    assert ids == sp.encode("a[REFERENCE_DOC_12]b")


# ─── real documents ─────────────────────────────────────────────────────────────────────


@functools.cache
def _documents(file: str) -> tuple[str, ...]:
    with gzip.open(need_shared(CORPORA / file), "rt", encoding="utf-8") as fh:
        return tuple(d for d in fh.read().split("<|endoftext|>") if d)


@pytest.mark.parametrize("name", MISTRAL)
def test_multilingual_documents_match(name: str) -> None:
    docs = _documents("docs-multi.txt.gz")
    sample = random.Random(name).sample(docs, 50)
    tok, sp = _mistral(name)
    bad = [d[:60] for d, _, _ in _mismatches(tok, sp, sample)]
    assert bad == []


@pytest.mark.slow
@pytest.mark.parametrize("name", MISTRAL)
def test_all_multilingual_and_some_english_documents_match(name: str) -> None:
    docs = list(_documents("docs-multi.txt.gz"))
    docs += random.Random(name).sample(_documents("docs-en.txt.gz"), 30)
    tok, sp = _mistral(name)
    bad = [d[:60] for d, _, _ in _mismatches(tok, sp, docs, full=False)]
    assert bad == []


# ─── trained models: char maps, options, UNUSED pieces ──────────────────────────────────


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_trained_variant_edge_cases(variant: str) -> None:
    tok, sp = _pair(VARIANTS[variant]())
    texts = EDGE_TEXTS + list(_corpus()[:300]) + _CORPUS_EXTRA
    assert _mismatches(tok, sp, texts) == []


@pytest.mark.parametrize("variant", list(VARIANTS))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, data=st.data())
def test_trained_variant_any_text_and_ids(
    variant: str, text: str, data: st.DataObject
) -> None:
    tok, sp = _pair(VARIANTS[variant]())
    assert _mismatches(tok, sp, [text]) == []
    ids = data.draw(st.lists(st.integers(0, sp.get_piece_size() - 1), max_size=12))
    assert tok.decode(ids) == sp.decode(ids)


def test_variants_reach_what_they_are_for() -> None:
    """The variants exercise their feature (or the tests above would prove little)."""
    nfkc = _loaded("nmt_nfkc")
    assert nfkc.normalizer.charsmap is not None
    assert nfkc.normalizer.normalize_str("Ｆ ① ﬁ  x ") == "▁F▁1▁fi▁x"
    assert _loaded("suffix").normalizer.normalize_str("a b") == "a▁b▁"
    unused = _loaded("unused pieces")
    text = unused.normalizer.normalize_str(" ".join(_corpus()[:50]))
    merged = {s.merged for s in unused.model.trace(text)}
    assert any(unused.model.types[unused.model.vocab[m]] == UNUSED for m in merged)
    assert unused.model._has_unused  # (so its whole text is one BPE: not cut into words)
    unformable = _loaded("unformable unused")  # (UNUSED pieces no merge forms: words are cut)
    assert UNUSED in unformable.model.types and not unformable.model._has_unused
    _, sp = _pair(VARIANTS["no byte fallback"]())
    assert sp.encode("𠀀𠀁 x").count(0) == 1  # a run of unknown characters: one <unk>


def test_piece_spelled_like_a_reserved_one_is_refused() -> None:
    """A NORMAL piece spelled like a control or byte piece: refused, as sentencepiece
    0.2.3 refuses it (earlier versions kept the two in separate maps)."""
    for text in ["<s>", "<0x41>"]:

        def shadow(proto: Any, text: str = text) -> None:
            piece = proto.pieces.add()
            piece.piece, piece.score, piece.type = text, -1e6, 1

        data = _edited(_trained(**_FALLBACK), shadow)
        with pytest.raises(FormatError, match=f"piece '{text}' is defined twice"):
            sentencepiece_tokenizer(data)
        with pytest.raises(RuntimeError, match="already defined"):
            _spm().SentencePieceProcessor(model_proto=data)


# ─── cutting the text into words: the proof, tested ─────────────────────────────────────


def _uncut(model: SentencePieceBPE, text: str) -> list[tuple[int, int, int]]:
    """SentencePiece's BPE over the whole text, no cuts, no cache (bpe_model.cc as is)."""
    rev: dict[str, tuple[str, str]] = {}
    out = model._finish(model._bpe(text, rev), rev)
    return out if model.byte_fallback else model._merge_unknown(out)


@pytest.mark.parametrize("name", [MISTRAL[0], MISTRAL[3], "user-defined", "suffix"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS)
def test_cut_words_equal_the_uncut_text(name: str, text: str) -> None:
    loaded = _loaded(name)
    loaded.model.clear_cache()
    normalized = loaded.normalizer.normalize_str(text * 3)
    assert loaded.model.tokenize(normalized) == _uncut(loaded.model, normalized)


@pytest.mark.parametrize("name", [MISTRAL[0], MISTRAL[3]])
def test_cut_words_equal_the_uncut_documents(name: str) -> None:
    loaded = _loaded(name)
    docs = random.Random(0).sample(_documents("docs-multi.txt.gz"), 10)
    for doc in docs + [" ".join(EDGE_TEXTS)]:
        normalized = loaded.normalizer.normalize_str(doc)
        words = loaded.model._words(normalized)
        assert "".join(words) == normalized and len(words) > 1
        assert loaded.model.tokenize(normalized) == _uncut(loaded.model, normalized)


def test_cuts_happen_where_the_proof_allows() -> None:
    model = _loaded(MISTRAL[0]).model
    # "x▁" is in no piece: a cut before every ▁ that follows a non-▁; "▁▁" is ("▁▁" pieces)
    assert model._words("▁Hello▁▁world▁!") == ["▁Hello", "▁▁world", "▁!"]
    # no ▁ at all: one word for the regex, then cut where no piece has the pair of chars
    long_cjk = "你好世界" * 40
    parts = model._words(long_cjk)
    assert len(parts) > 1 and "".join(parts) == long_cjk
    assert model.tokenize(long_cjk) == _uncut(model, long_cjk)


@pytest.mark.parametrize("name", [MISTRAL[0], "user-defined"])
@settings(max_examples=200, deadline=None)
@given(word=TEXTS)
def test_list_and_heap_bpe_agree(name: str, word: str) -> None:
    model = _loaded(name).model
    word = word.replace(" ", "▁")  # (short words: core.engine.bpe.merge takes its list path)
    parts = [UserPiece(c) if user else c for c, user in model._matcher.split(word)]
    runs = []
    for heap in (False, True):
        rev: dict[str, tuple[str, str]] = {}
        log: list[tuple[int, int, int]] = []
        key = model._pair_key(rev)
        runs.append((merge(list(parts), model._merge_rank, key=key, log=log, heap=heap), rev, log))
    assert runs[0] == runs[1]


# ─── spans, trace, vocab ────────────────────────────────────────────────────────────────


def test_spans_point_at_the_original_characters() -> None:
    tok, sp = _mistral("tokenizer.model.v1")
    text = "Hi  wörld 𠀀"
    tokens, _ = tok.encode_spans(text)
    pieces = [(tok.id_to_token(i), text[s:e]) for i, s, e in tokens]
    assert [i for i, _, _ in tokens] == sp.encode(text)
    assert pieces[:2] == [("▁Hi", "Hi"), ("▁", " ")]
    assert pieces[-4:] == [
        ("<0xF0>", "𠀀"),
        ("<0xA0>", "𠀀"),
        ("<0x80>", "𠀀"),
        ("<0x80>", "𠀀"),
    ]
    with_bos, _ = tok.encode_spans(text, add_special_tokens=True)
    assert with_bos[0] == (1, 0, 0)


@pytest.mark.parametrize("name", MISTRAL)
@settings(max_examples=60, deadline=None)
@given(text=TEXTS)
def test_spans_cover_the_text_in_order(name: str, text: str) -> None:
    tok, _ = _mistral(name)
    tokens, _ = tok.encode_spans(text)
    ends = [e for _, _, e in tokens]
    assert ends == sorted(ends)
    if text:  # (Mistral's files drop no character: the last token ends the text)
        assert tokens[-1][2] == len(text)


def test_trace_ends_in_the_tokens() -> None:
    loaded = _loaded("tokenizer.model.v1")
    model = loaded.model
    text = loaded.normalizer.normalize_str("Hello tokenizers")
    steps = model.trace(text)
    assert steps[-1].after == tuple(
        model.id_to_token(i) for i, _, _ in model.tokenize(text)
    )
    assert all(model.vocab[s.merged] == s.rank for s in steps)
    assert steps[0].before == tuple(text)


def test_vocab_shows_bytes_and_spaces() -> None:
    tok, sp = _mistral("tokenizer.model.v1")
    assert tok.kind == "SentencePiece BPE"
    assert tok.vocab[sp.piece_to_id("▁the")] == b" the"
    assert tok.vocab[sp.piece_to_id("<0x0A>")] == b"\n"
    assert tok.n_vocab == sp.get_piece_size() == 32000


# ─── the protobuf reader ────────────────────────────────────────────────────────────────

_TRAINER_FIELDS = [
    "model_type", "vocab_size", "treat_whitespace_as_suffix", "allow_whitespace_only_pieces",
    "split_digits", "split_by_whitespace", "byte_fallback", "unk_id", "bos_id", "eos_id",
    "pad_id", "unk_piece", "bos_piece", "eos_piece", "pad_piece", "unk_surface",
]  # fmt: skip
_NORMALIZER_FIELDS = [
    "name", "precompiled_charsmap", "add_dummy_prefix", "remove_extra_whitespaces",
    "escape_whitespaces", "normalization_rule_tsv",
]  # fmt: skip


@pytest.mark.parametrize("name", MISTRAL + ["nmt_nfkc", "user-defined", "suffix"])
def test_parsed_fields_match_protobuf(name: str) -> None:
    pb2 = need_module("sentencepiece.sentencepiece_model_pb2")
    data = _mistral_bytes(name) if name in MISTRAL else VARIANTS[name]()
    want = pb2.ModelProto()
    want.ParseFromString(data)
    got = parse_model_proto(data)
    assert [(p.piece, p.score, p.type) for p in got.pieces] == [
        (p.piece, p.score, p.type) for p in want.pieces
    ]
    for field in _TRAINER_FIELDS:
        assert getattr(got.trainer_spec, field) == getattr(want.trainer_spec, field), (
            field
        )
    assert got.trainer_spec.control_symbols == list(want.trainer_spec.control_symbols)
    assert got.trainer_spec.user_defined_symbols == list(
        want.trainer_spec.user_defined_symbols
    )
    for field in _NORMALIZER_FIELDS:
        assert getattr(got.normalizer_spec, field) == getattr(
            want.normalizer_spec, field
        ), field
    assert (got.denormalizer_spec is not None) == want.HasField("denormalizer_spec")
    if hasattr(
        want, "self_test_data"
    ):  # (sentencepiece 0.2.3's classes no longer have it)
        want_samples = [(s.input, s.expected) for s in want.self_test_data.samples]
        assert got.self_test_samples == want_samples


def test_unknown_fields_and_negative_ints() -> None:
    # field 99 (varint), field 100 (fixed64), a group, then trainer_spec with pad_id = -1
    unknown = (
        bytes([0x98, 0x06, 0x05, 0xA1, 0x06])
        + bytes(8)
        + bytes([0xAB, 0x06, 0xAC, 0x06])
    )
    trainer = bytes([0x18, 0x02, 0xD8, 0x02]) + b"\xff" * 9 + b"\x01"
    piece = bytes([0x0A, 0x09, 0x0A, 0x02]) + b"ab" + bytes([0x15, 0, 0, 0x80, 0x3F])
    proto = parse_model_proto(unknown + piece + bytes([0x12, len(trainer)]) + trainer)
    assert proto.pieces == [ProtoPiece("ab", 1.0, 1)]
    assert proto.trainer_spec.model_type == 2 and proto.trainer_spec.pad_id == -1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x0a\x05ab", "byte 0: field 1 says 5 bytes follow"),
        (b"\x0a", "byte 1: a varint runs past the end"),
        (b"\x0f\x00", "wire type 7"),
        (b"\x00\x01", "field numbered 0"),
        (b"\x0a\x03\x0a\x01\xff", "pieces[0].piece is not valid UTF-8"),
        (b"\x0a" + b"\xff" * 11, "longer than 10 bytes"),
    ],
)
def test_malformed_bytes_say_where(data: bytes, message: str) -> None:
    with pytest.raises(FormatError) as err:
        parse_model_proto(data, name="x.model")
    assert message in str(err.value)
    assert str(err.value).startswith("x.model: byte ")
    assert "does not look like a SentencePiece model" in str(err.value)


@pytest.mark.parametrize("cut", [1, 100, 5000, 400_000, -3])
def test_truncated_file_is_refused(cut: int) -> None:
    data = _mistral_bytes("tokenizer.model.v1")[:cut]
    with pytest.raises(
        FormatError, match="does not look like a SentencePiece model|pieces"
    ):
        sentencepiece_tokenizer(data)
    with pytest.raises(RuntimeError):  # sentencepiece refuses it too
        _spm().SentencePieceProcessor(model_proto=data)


def test_sniff() -> None:
    for name in MISTRAL:
        assert looks_like_sentencepiece(_mistral_bytes(name))
    assert looks_like_sentencepiece(VARIANTS["nmt_nfkc"]())
    for other in [b"", b"{}", b'{"model": {"type": "BPE"}}', b"IQ== 0\nIg== 1\n",
                  b"\x80\x04\x95\x10\x00", b"\x1f\x8b\x08\x00", b"#version: 0.2\nt h\n",
                  b"\x0a\x05<unk>"]:  # fmt: skip
        assert not looks_like_sentencepiece(other), other


# ─── what is refused ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(("model_type", "kind"), [("char", "CHAR"), ("word", "WORD")])
def test_other_model_types_are_refused(model_type: str, kind: str) -> None:
    # (Unigram models load: tests/pipeline/test_unigram.py)
    data = _trained(model_type, **({"vocab_size": 300} if model_type == "word" else {}))
    with pytest.raises(
        FormatError, match=f"SentencePiece {kind} models are not supported; BPE and Unigram"
    ):
        sentencepiece_tokenizer(data, name="m.model")


def _broken(edit: Callable[[Any], None]) -> bytes:
    return _edited(_trained(byte_fallback=True), edit)


def _dup(proto: Any) -> None:
    proto.pieces[300].piece = proto.pieces[301].piece


def _no_unk(proto: Any) -> None:
    proto.pieces[0].type = 1


def _two_unks(proto: Any) -> None:
    proto.pieces[1].type = 2


def _byte_missing(proto: Any) -> None:
    proto.pieces[10].type = 1


def _bytes_without_fallback(proto: Any) -> None:
    proto.trainer_spec.byte_fallback = False


def _empty_piece(proto: Any) -> None:
    proto.pieces[400].piece = ""


def _with_self_test(data: bytes, text: str, expected: str) -> bytes:
    """``data`` plus a ModelProto.self_test_data (field 4) holding one sample."""

    def field(number: int, payload: bytes) -> bytes:
        assert len(payload) < 128
        return bytes([number << 3 | 2, len(payload)]) + payload

    sample = field(1, text.encode()) + field(2, expected.encode())
    return data + field(4, field(1, sample))


def _denormalizer(proto: Any) -> None:
    proto.denormalizer_spec.precompiled_charsmap = (
        proto.normalizer_spec.precompiled_charsmap
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_dup, "is defined twice"),
        (_two_unks, "two <unk> pieces"),
        (_byte_missing, "only 255 of the 256 byte pieces"),
        (_bytes_without_fallback, "although byte_fallback is off"),
        (_empty_piece, "piece 400 is empty"),
    ],
)
def test_files_sentencepiece_refuses_are_refused(
    edit: Callable[[Any], None], message: str
) -> None:
    data = _broken(edit)
    with pytest.raises(FormatError, match=message):
        sentencepiece_tokenizer(data)
    with pytest.raises(RuntimeError):
        _spm().SentencePieceProcessor(model_proto=data)


def test_denormalizer_is_refused() -> None:
    with pytest.raises(FormatError, match="denormalization rule .* not supported"):
        sentencepiece_tokenizer(_broken(_denormalizer))


def test_no_unknown_piece_is_refused() -> None:
    # (sentencepiece 0.2.3 loads such a file; earlier versions refuse it, as we do)
    with pytest.raises(FormatError, match="no piece of type UNKNOWN"):
        sentencepiece_tokenizer(_broken(_no_unk))


def test_self_test_samples_are_run() -> None:
    """Files may carry samples that sentencepiece (before 0.2.3) checks when it loads
    them; we check them too, so a file we would encode differently is refused."""
    data = _trained(byte_fallback=True)
    assert parse_model_proto(_with_self_test(data, "hello", "x")).self_test_samples == [
        ("hello", "x")
    ]
    expected = " ".join(
        _spm().SentencePieceProcessor(model_proto=data).encode("Hi, you", out_type=str)
    )
    assert sentencepiece_tokenizer(_with_self_test(data, "Hi, you", expected)).encode(
        "Hi"
    )
    with pytest.raises(
        FormatError, match="self-test fails here: 'Hi, you' should give"
    ):
        sentencepiece_tokenizer(_with_self_test(data, "Hi, you", expected + " x"))


# ─── the stages on their own ────────────────────────────────────────────────────────────


def test_normalizer_keeps_spans() -> None:
    n = SentencePieceNormalizer(remove_extra_whitespaces=True)
    p = n.normalize(Piece.of("  a   b "))
    assert p.text == "▁a▁b"
    assert p.spans == [(2, 2), (2, 3), (3, 4), (6, 7)]
    assert n.normalize(Piece.of("   ")).text == ""


def test_decoder_alone() -> None:
    d = SentencePieceDecoder(control={"<s>"}, byte_pieces=True)
    assert d.decode(["▁", "▁a"]) == " a"  # only the first ▁ is the dummy prefix
    assert d.decode(["<s>", "▁a"]) == "a"  # control pieces are transparent
    assert d.decode(["<0xC3>", "▁a"]) == "\ufffd a"

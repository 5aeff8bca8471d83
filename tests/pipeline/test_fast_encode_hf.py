"""The IDs-only str forms of the Hugging Face pipeline stages (``normalize_str``, ``split_str``,
``encode_word``) against their Piece forms and against ``tokenizers``.

Each str form must give exactly what the Piece path gives: ``normalize(Piece.of(t)).text``,
``[p.text for p in split([Piece.of(t)])]``, ``[t[0] for t in tokenize(w)]``. Every class and
option is checked on fixed edge cases and arbitrary Unicode (hypothesis), the character
tables on every code point against ``tokenizers``, and whole pipelines (real Mistral files
converted by ``transformers``, a BERT WordPiece trained here) against ``tokenizers``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.train.builtin_corpus import builtin_corpus_text
from core.pipeline import normalizers as N
from core.pipeline import pre_tokenizers as P
from core.pipeline.hf import pipeline_from_hf_json
from core.pipeline.models import BPEModel, WordLevelModel, WordPieceModel, model_from_json
from core.pipeline.pattern import Pattern, as_unicode_16
from core.pipeline.piece import Piece
from core.pipeline.split_runs import split_runs_str
from tests.conftest import need_module
from tests.pipeline.test_models import EDGE_WORDS, SECTIONS, TEXT_LIKELY, corpus_words, hf_model
from tests.pipeline.test_normalizers import CONFIGS as NORMALIZER_CONFIGS
from tests.pipeline.test_normalizers import EDGE_TEXTS, TEXT, every_char, hf_tokenizer
from tests.pipeline.test_normalizers import bert, replace
from tests.pipeline.test_pre_tokenizers import CLASS_CONFIGS, MORE_EDGE_TEXTS
from tests.pipeline.test_pre_tokenizers import CONFIGS as PRE_TOKENIZER_CONFIGS
from tests.pipeline.test_pre_tokenizers import metaspace, sequence, split

TEXTS = EDGE_TEXTS + MORE_EDGE_TEXTS + ["▁▁a▁", "▁", "a ", " ", "--", "a\u0898\u0301e\u0301"]


@pytest.fixture(scope="module")
def tk() -> Any:
    return need_module("tokenizers")


# ---- normalizers ------------------------------------------------------------------------------

NORMALIZERS: dict[str, dict[str, Any]] = {
    **{name: obj for name, (obj, _, _) in NORMALIZER_CONFIGS.items()},
    **{
        f"Bert-{clean:d}{chinese:d}{strip}{lower:d}": bert(clean, chinese, strip, lower)
        for clean in (False, True)
        for chinese in (False, True)
        for strip in (None, False, True)
        for lower in (False, True)
    },
    "Replace-dot": replace("String", ".", "<dot>"),
    "Replace-aa": replace("String", "aa", "b"),
    "Replace-regex-lookahead": replace("Regex", r"a(?=b)|\b", "_"),
    "Replace-regex-unicode-16": replace("Regex", r"\p{L}+", "L"),
    "Empty-sequence": {"type": "Sequence", "normalizers": []},
}


def normalizer(name: str) -> Any:
    found = N.normalizer_from_json(NORMALIZERS[name])
    assert found is not None
    return found


def check_normalizer(name: str, text: str) -> None:
    ours = normalizer(name)
    assert ours.normalize_str(text) == ours.normalize(Piece.of(text)).text, (name, text)


@pytest.mark.parametrize("name", NORMALIZERS)
def test_normalize_str_is_the_piece_text_on_edge_texts(name: str) -> None:
    for text in TEXTS:
        check_normalizer(name, text)


@pytest.mark.parametrize("name", NORMALIZERS)
@settings(max_examples=150, deadline=None)
@given(text=TEXT)
def test_normalize_str_is_the_piece_text(name: str, text: str) -> None:
    check_normalizer(name, text)


@pytest.mark.parametrize("name", NORMALIZERS)
@settings(max_examples=60, deadline=None)
@given(text=TEXT)
def test_normalize_str_matches_hf(tk: Any, name: str, text: str) -> None:
    hf = hf_tokenizer(tk, normalizer=NORMALIZERS[name]).normalizer
    expected = hf.normalize_str(text) if hf is not None else text
    assert normalizer(name).normalize_str(text) == expected


@pytest.mark.parametrize(
    "name", ["NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "Nmt", "ByteLevel",
             "Bert", "Bert-10True1", "Bert-01True0"],
)  # fmt: skip
def test_normalize_str_matches_hf_on_every_code_point(tk: Any, name: str) -> None:
    # every character, each between two "|"s (which nothing combines with), fills and
    # clears the CharTables too
    text = every_char("|")
    hf = hf_tokenizer(tk, normalizer=NORMALIZERS[name]).normalizer
    assert normalizer(name).normalize_str(text) == hf.normalize_str(text)


class PieceOnly:
    """A normalizer with no ``normalize_str``: a Sequence falls back to its Piece path."""

    def normalize(self, piece: Piece) -> Piece:
        return piece.map_chars(lambda ch: ch * 2 if ch == "a" else ch)


@given(text=TEXT)
@settings(max_examples=60, deadline=None)
def test_sequence_falls_back_to_a_members_piece_path(text: str) -> None:
    seq = N.Sequence((N.Lowercase(), PieceOnly(), N.Prepend("▁")))  # type: ignore[arg-type]
    assert seq.normalize_str(text) == seq.normalize(Piece.of(text)).text


def test_char_tables_are_bounded() -> None:
    table = N.CharTable(str.upper)
    text = "".join(map(chr, range(0x4E00, 0x4E00 + N.CharTable._MAX + 10)))
    assert text.translate(table) == text.upper()
    assert len(table) <= N.CharTable._MAX


# ---- pre-tokenizers ---------------------------------------------------------------------------

BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
PRE_TOKENIZERS: dict[str, dict[str, Any]] = {
    **PRE_TOKENIZER_CONFIGS,
    **{f"class {name}": obj for name, obj in CLASS_CONFIGS.items()},
    **{
        f"Metaspace-{scheme}-split{on}": metaspace(scheme, split=on)
        for scheme in ("always", "first", "never")
        for on in (False, True)
    },
    **{
        f"ByteLevel-{prefix:d}{regex:d}": {
            "type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True,
            "use_regex": regex,
        }
        for prefix in (False, True)
        for regex in (False, True)
    },  # fmt: skip
    **{f"Split-gpt2-{b}": split("Regex", r"'s|'t| ?\p{L}+| ?\p{N}+|\s+", b) for b in BEHAVIORS},
    **{f"Split-digits-inverted-{b}": split("Regex", r"\d+", b, True) for b in BEHAVIORS},
    **{f"Split-empty-{b}": split("Regex", r"x*|\b", b) for b in BEHAVIORS},
    "Split-group": split("Regex", r"(a)(b)?", "Isolated"),
    "Metaspace-first-then-WhitespaceSplit": sequence(
        metaspace("first"), {"type": "WhitespaceSplit"}
    ),
    "Sequence-in-sequence": sequence(
        sequence({"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": True}),
        {"type": "Punctuation", "behavior": "Contiguous"},
    ),
    "Sequence-then-Metaspace-first": sequence(
        sequence({"type": "WhitespaceSplit"}), metaspace("first", split=False)
    ),
    "Empty-sequence": {"type": "Sequence", "pretokenizers": []},
}  # fmt: skip


def pre_tokenizer(name: str) -> Any:
    found = P.pre_tokenizer_from_json(PRE_TOKENIZERS[name])
    assert found is not None
    return found


def check_pre_tokenizer(name: str, text: str) -> None:
    ours = pre_tokenizer(name)
    expected = [p.text for p in ours.split([Piece.of(text)])]
    assert ours.split_str(text) == expected, (name, text)


@pytest.mark.parametrize("name", PRE_TOKENIZERS)
def test_split_str_is_the_piece_texts_on_edge_texts(name: str) -> None:
    for text in TEXTS:
        check_pre_tokenizer(name, text)


@pytest.mark.parametrize("name", PRE_TOKENIZERS)
@settings(max_examples=120, deadline=None)
@given(text=TEXT)
def test_split_str_is_the_piece_texts(name: str, text: str) -> None:
    check_pre_tokenizer(name, text)


@pytest.mark.parametrize("name", PRE_TOKENIZERS)
@settings(max_examples=40, deadline=None)
@given(text=TEXT)
def test_split_str_matches_hf(tk: Any, name: str, text: str) -> None:
    hf = hf_tokenizer(tk, pre_tokenizer=PRE_TOKENIZERS[name]).pre_tokenizer
    expected = [t for t, _ in hf.pre_tokenize_str(text)] if hf is not None else [text]
    # (an empty sequence hands back the empty piece it was given: the caller drops it)
    assert [w for w in pre_tokenizer(name).split_str(text) if w] == [t for t in expected if t]


@pytest.mark.parametrize("name", [*CLASS_CONFIGS, "BertPreTokenizer", "Digits"])
def test_split_str_matches_hf_on_every_code_point(tk: Any, name: str) -> None:
    obj = CLASS_CONFIGS.get(name) or PRE_TOKENIZER_CONFIGS[name]
    text = every_char("")
    hf = hf_tokenizer(tk, pre_tokenizer=obj).pre_tokenizer
    ours = P.pre_tokenizer_from_json(obj)
    assert ours is not None
    assert ours.split_str(text) == [t for t, _ in hf.pre_tokenize_str(text)]


@pytest.mark.parametrize("start", [0, 1, 5])
@pytest.mark.parametrize(
    "name",
    ["Metaspace-first", "Metaspace-first-splitFalse", "Metaspace-always", "WhitespaceSplit",
     "WhitespaceSplit+Metaspace-first", "Metaspace-first-then-WhitespaceSplit"],
)  # fmt: skip
@settings(max_examples=40, deadline=None)
@given(text=TEXT)
def test_split_text_takes_where_the_piece_starts(name: str, start: int, text: str) -> None:
    ours = pre_tokenizer(name)
    expected = [p.text for p in ours.split([Piece.of(text, offset=start)])]
    assert P.split_text(ours, text, start=start) == expected


def test_uses_offsets_only_for_the_first_scheme() -> None:
    assert P.uses_offsets(pre_tokenizer("WhitespaceSplit+Metaspace-first"))
    assert P.uses_offsets(pre_tokenizer("Sequence-then-Metaspace-first"))
    assert not P.uses_offsets(pre_tokenizer("Metaspace-always"))
    assert not P.uses_offsets(pre_tokenizer("Llama3"))


# ---- patterns ---------------------------------------------------------------------------------

PATTERNS = [r"x*", r"\b", r"a|(?=b)", r"ab|(?<=b)", r"\s+(?!\S)|\s+", r"\p{L}+", r"\d{1,3}+",
            r"(?=a)", r"$|^", r"[^\s\p{L}]+"]  # fmt: skip


@pytest.mark.parametrize("source", PATTERNS)
@settings(max_examples=100, deadline=None)
@given(text=st.one_of(TEXT, st.text(st.sampled_from("ab x1\n"), max_size=12)))
def test_matches_is_the_onig_loop(source: str, text: str) -> None:
    pattern = Pattern.regex(source)
    haystack = as_unicode_16(text, keep=frozenset(source))
    assert pattern.matches(text) == (pattern._onig_matches(haystack) if text else [])
    for behavior in ("removed", "isolated", "merged_with_previous", "merged_with_next",
                     "contiguous"):  # fmt: skip
        runs = pattern.find_matches(text)
        expected = split_runs_str(text, runs, behavior)  # type: ignore[arg-type]
        assert pattern.split_str(text, behavior) == expected  # type: ignore[arg-type]


# ---- models -----------------------------------------------------------------------------------

MODEL_SECTIONS: dict[str, Any] = {
    **SECTIONS,
    "wordlevel": lambda: {
        "type": "WordLevel", "vocab": {"<unk>": 0, "the": 1, "a": 2, "▁▁▁▁": 3},
        "unk_token": "<unk>",
    },
    "bpe-byte-fallback-unk": lambda: {
        "type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": False,
        "byte_fallback": True,
        "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3,
                  **{f"<0x{b:02X}>": 4 + b for b in range(200)}},
        "merges": [["a", "b"]],
    },
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(MODEL_SECTIONS))
def model_pair(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    section = MODEL_SECTIONS[request.param]()
    return model_from_json(section), hf_model(section)


def check_word(ours: Any, oracle: Any, word: str) -> None:
    expected = [t[0] for t in ours.tokenize(word)]
    assert ours.encode_word(word) == expected, word
    if word:  # (no pipeline hands a model an empty word; HF's WordLevel makes it unknown)
        assert expected == [t.id for t in oracle.tokenize(word)], word


def test_encode_word_on_corpus_edge_and_long_words(model_pair: tuple[Any, Any]) -> None:
    ours, oracle = model_pair
    lines = builtin_corpus_text()[:20_000].replace(" ", "▁").splitlines()[:200]
    words = corpus_words(1500) + EDGE_WORDS + lines + ["▁".join(EDGE_WORDS) * 3]
    for word in words + words[:300]:  # and again from the caches
        check_word(ours, oracle, word)


#: long words (the cut path) with pivots ("▁", " "), byte-fallback characters and repeats
LONG = st.text(st.sampled_from("abcdte ▁▁▁\n日🤗é.,"), min_size=1, max_size=40).map(lambda t: t * 12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(word=st.one_of(TEXT, TEXT_LIKELY, TEXT_LIKELY.map(lambda t: t * 20), LONG))
def test_encode_word_on_arbitrary_words(model_pair: tuple[Any, Any], word: str) -> None:
    ours, oracle = model_pair
    check_word(ours, oracle, word)


@pytest.mark.parametrize("model", ["bpe", "wordpiece"])
def test_word_caches_are_bounded_per_model_and_cleared(model: str) -> None:
    vocab = {"[UNK]": 0, "a": 1, "b": 2, "##a": 3, "##b": 4, "ab": 5}
    make: Any = (
        (lambda: BPEModel(vocab, [("a", "b")], unk_token="[UNK]", cache_size=10))
        if model == "bpe"
        else (lambda: WordPieceModel(vocab, cache_size=10))
    )
    one, other = make(), make()
    for i in range(40):
        one.encode_word("ab" * (i % 13 + 1) + "a")
    assert 0 < len(one._ids) <= 10
    assert len(other._ids) == 0  # never shared across instances
    one.encode_word("a" * 1000)  # too long to keep
    assert "a" * 1000 not in one._ids
    one.clear_cache()
    assert len(one._ids) == len(one._cache) == 0


def test_wordlevel_has_no_cache_to_clear() -> None:
    model = WordLevelModel({"<unk>": 0, "hi": 1})
    model.clear_cache()
    assert model.encode_word("hi") + model.encode_word("yo") + model.encode_word("") == [1, 0]


def test_ignore_merges_and_affixes_take_the_same_path() -> None:
    vocab = {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "abab": 4, "##b": 5, "a</w>": 6, "b</w>": 7,
             "ab</w>": 8, "##a": 9}  # fmt: skip
    for options, merges in (
        ({"ignore_merges": True}, [("a", "b")]),
        ({"continuing_subword_prefix": "##"}, [("a", "##b")]),
        ({"end_of_word_suffix": "</w>"}, [("a", "b"), ("a", "b</w>")]),
    ):
        ours = BPEModel(vocab, merges, unk_token="<unk>", **options)
        for word in ("abab", "ab", "ba", "abz", "zz", "a"):
            assert ours.encode_word(word) == [t[0] for t in ours.tokenize(word)], (options, word)


# ---- whole pipelines against tokenizers ---------------------------------------------------------


def str_encode(tok: Any, text: str) -> list[int]:
    """The three str forms composed, for a text without added tokens."""
    text = N.normalize_text(tok.normalizer, text) if tok.normalizer is not None else text
    words = P.split_text(tok.pre_tokenizer, text) if tok.pre_tokenizer is not None else [text]
    return [i for word in words if word for i in tok.model.encode_word(word)]


def bert_json() -> str:
    tk = need_module("tokenizers")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    tok = tk.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=8000, special_tokens=["[UNK]", "[CLS]", "[SEP]"], show_progress=False
    )
    lines = [line for line in builtin_corpus_text().splitlines() if line.strip()]
    tok.train_from_iterator(lines, trainer)
    return tok.to_str()


@pytest.fixture(scope="module", params=["v1", "v1-legacy", "v7", "bert"])
def real(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, Any]:
    tk = need_module("tokenizers")
    if request.param == "bert":
        text = bert_json()
    else:
        from tests.test_real_models import _make_hf_json

        text = _make_hf_json(request.param, tmp_path_factory.mktemp("hf"))
    return pipeline_from_hf_json(json.loads(text)), tk.Tokenizer.from_str(text)


ADDED = ("<s>", "</s>", "<unk>", "[UNK]", "[CLS]", "[SEP]")


def documents() -> list[str]:
    """Texts without added tokens (str_encode does not cut them out)."""
    corpus = builtin_corpus_text()
    texts = [corpus[i : i + 3000] for i in range(0, 120_000, 3000)] + TEXTS
    return [t for t in texts if not any(a in t for a in ADDED)]


def test_str_forms_match_hf_on_documents(real: tuple[Any, Any]) -> None:
    ours, hf = real
    ours.model.clear_cache()
    for text in documents():
        expected = hf.encode(text, add_special_tokens=False).ids
        assert str_encode(ours, text) == expected, text[:80]
        assert ours.encode(text) == expected, text[:80]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_str_forms_match_hf_on_arbitrary_text(real: tuple[Any, Any], text: str) -> None:
    assume(not any(a in text for a in ADDED))  # (str_encode does not cut added tokens out)
    ours, hf = real
    assert str_encode(ours, text) == hf.encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize(
    "text",
    ["<s>hi there", "a<s>b", "hi </s> x", "[CLS] Hello [SEP]x", "  <s>  a", "<unk>", "x[UNK]y"],
)
def test_encode_around_added_tokens_matches_hf(real: tuple[Any, Any], text: str) -> None:
    # a piece after an added token does not start the text: Metaspace(prepend_scheme=
    # "first") puts no "▁" before it (see core.pipeline.pre_tokenizers.split_text)
    ours, hf = real
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(st.sampled_from(ADDED + (" ", "  ", "\n")), TEXT), max_size=6))
def test_encode_with_added_tokens_anywhere_matches_hf(real: tuple[Any, Any], parts: list[str]) -> None:
    # Metaspace "first" without a normalizer (Mistral's and Llama 2's files) stays on
    # strings: each piece is split knowing where it starts (core.pipeline.fast_encode)
    ours, hf = real
    text = "".join(parts)
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids


def test_metaspace_first_without_normalizer_stays_on_strings(
    real: tuple[Any, Any], request: pytest.FixtureRequest
) -> None:
    from core.pipeline import fast_encode

    ours, hf = real
    # Mistral's v1 and v7 files: Metaspace(prepend_scheme="first"), no normalizer
    first = request.node.callspec.params["real"] in ("v1", "v7")
    assert fast_encode._positional(ours.pre_tokenizer) is first
    if first:
        assert ours.normalizer is None and fast_encode._knows_offsets(ours.pre_tokenizer)
    fallback = ours._encode_ids_pieces
    ours._encode_ids_pieces = None  # the Piece fallback must not be reached
    try:
        for text in ("<s>hi there", " a</s> b", "x"):
            assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids
    finally:
        ours._encode_ids_pieces = fallback


def test_wordpiece_word_over_the_limit_is_unknown_even_as_a_token() -> None:
    model = WordPieceModel({"[UNK]": 0, "abcd": 1, "a": 2}, max_input_chars_per_word=3)
    assert model.encode_word("abcd") == [t[0] for t in model.tokenize("abcd")] == [0]
    assert model.encode_word("a") == [2]


ODD_PRE_TOKENIZERS = [
    P.Metaspace(replacement="<>"),
    P.Metaspace(replacement="", prepend_scheme="first"),
    P.Metaspace(replacement="a", split_pieces=False),
    P.CharDelimiterSplit("ab"),
    P.FixedLength(1),
    P.Sequence((P.Metaspace(prepend_scheme="never"), P.Metaspace(prepend_scheme="first"))),
]


@pytest.mark.parametrize("index", range(len(ODD_PRE_TOKENIZERS)))
@settings(max_examples=60, deadline=None)
@given(text=st.one_of(TEXT, st.text(st.sampled_from("ab <>▁"), max_size=10)))
def test_split_str_of_objects_json_cannot_make(index: int, text: str) -> None:
    ours = ODD_PRE_TOKENIZERS[index]
    assert ours.split_str(text) == [p.text for p in ours.split([Piece.of(text)])]

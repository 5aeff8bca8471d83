"""Real models' tokenizer files, loaded with no other input, against each model's own library.

One table (:data:`CASES`): each row is a released file (or a ``tokenizer.json`` that
``transformers`` makes from one, offline), what ``load_tokenizer_files({basename: bytes})``
must make of it, and the oracle it must agree with, ID for ID:

====================  =============================================  ==========================
rows                  oracle                                         typed special-token text
====================  =============================================  ==========================
Meta Llama 3 / 4      ``llama_models`` ``Tokenizer.encode(bos=...,   becomes the special's ID
``tokenizer.model``   allowed_special="all")``
OpenAI ``.tiktoken``  ``tiktoken.get_encoding(...)``, ``"all"``      becomes the special's ID
Mistral Tekken json   ``mistral_common`` ``Tekkenizer``              stays text
Mistral SP ``.model`` ``sentencepiece`` (``add_bos``)                stays text (control pieces)
``tokenizer.json``    ``tokenizers`` (``add_special_tokens``)        becomes the added token's ID
====================  =============================================  ==========================

Decoding follows each oracle too: special tokens are kept as text (tiktoken, Tekken's
``SpecialTokenPolicy.KEEP``, Hugging Face's ``skip_special_tokens=False``), except
SentencePiece, whose ``decode`` drops control pieces such as ``<s>``.

Checked on fixed Unicode edge cases, on a fixed-stride sample of real documents from both
shared corpora, and (for a few rows) on hypothesis-generated text. Also: an unknown rank file
needs ``pattern=``, and Unigram models (tokenizer.json and SentencePiece) load by content.
"""

from __future__ import annotations

import base64
import gzip
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError, PatternNeededError
from core.formats import load_tokenizer_files
from core.pipeline.tokenizer import PipelineTokenizer
from core.engine.tokenizer import Tokenizer
from tests.conftest import need_module

# ─── the table ──────────────────────────────────────────────────────────────────────────

MISTRAL_DATA = {
    "v1": "tokenizer.model.v1",
    "v2": "mistral_instruct_tokenizer_240216.model.v2",
    "v3": "mistral_instruct_tokenizer_240323.model.v3",
    "v7": "mistral_instruct_tokenizer_241114.model.v7",
    "tekken_240718": "tekken_240718.json",
    "tekken_240911": "tekken_240911.json",
}


@dataclass(frozen=True)
class Case:
    """One row: a file, what the loader must make of it, and its oracle."""

    key: str  # the test ID
    family: str  # "meta", "openai", "tekken", "sentencepiece" or "hf"
    source: str  # meta: llama3/llama4; openai: encoding; tekken/sp: MISTRAL_DATA key; hf: below
    name: str  # what tokenizer.name must be
    fast: bool  # loads as the byte-level core.engine.tokenizer.Tokenizer (else a PipelineTokenizer)
    special: str  # a special token's text, typed in test texts
    specials_in_text: bool  # whether that typed text becomes the special's ID (the convention)
    bos: str = ""  # what add_special_tokens=True puts first ("" = nothing)


CASES = [
    Case("llama3", "meta", "llama3", "Llama 3 (Meta tokenizer.model)", True,
         "<|begin_of_text|>", True, "<|begin_of_text|>"),
    Case("llama4", "meta", "llama4", "Llama 4 (Meta tokenizer.model)", True,
         "<|begin_of_text|>", True, "<|begin_of_text|>"),
    Case("cl100k_base", "openai", "cl100k_base", "cl100k_base (GPT-3.5 / GPT-4)", True,
         "<|endoftext|>", True),
    Case("o200k_base", "openai", "o200k_base", "o200k_base (GPT-4o)", True,
         "<|endoftext|>", True),
    Case("tekken_240718", "tekken", "tekken_240718",
         "Mistral Tekken (Mistral NeMo, tekken_240718)", True, "<s>", False, "<s>"),
    Case("tekken_240911", "tekken", "tekken_240911",
         "Mistral Tekken (Pixtral, tekken_240911)", True, "<s>", False, "<s>"),
    Case("sp-v1", "sentencepiece", "v1",
         "Mistral 7B v0.1 (SentencePiece v1, the Llama 2 layout)", False, "<s>", False, "<s>"),
    Case("sp-v2", "sentencepiece", "v2", "Mistral instruct v2 (SentencePiece, 240216)", False,
         "[INST]", False, "<s>"),
    Case("sp-v3", "sentencepiece", "v3", "Mistral instruct v3 (SentencePiece, 240323)", False,
         "[INST]", False, "<s>"),
    Case("sp-v7", "sentencepiece", "v7", "Mistral instruct v7 (SentencePiece, 241114)", False,
         "[INST]", False, "<s>"),
    # transformers-made tokenizer.json files: not known by SHA-256 (their bytes depend on the
    # transformers version), so they are named after the file, as every unknown file is
    Case("hf-llama3", "hf", "llama3", "tokenizer.json", True,
         "<|begin_of_text|>", True, "<|begin_of_text|>"),
    Case("hf-llama4", "hf", "llama4", "tokenizer.json", True,
         "<|begin_of_text|>", True, "<|begin_of_text|>"),
    Case("hf-tekken_240911", "hf", "tekken_240911", "tokenizer.json", True, "[INST]", True, "<s>"),
    Case("hf-mistral-v1-legacy", "hf", "v1-legacy", "tokenizer.json", False, "<s>", True, "<s>"),
    Case("hf-mistral-v1", "hf", "v1", "tokenizer.json", False, "<s>", True, "<s>"),
    Case("hf-mistral-v3", "hf", "v3", "tokenizer.json", False, "[INST]", True, "<s>"),
    Case("hf-mistral-v7", "hf", "v7", "tokenizer.json", False, "[INST]", True, "<s>"),
]  # fmt: skip
BY_KEY = {case.key: case for case in CASES}
KEYS = [case.key for case in CASES]

# ─── fixed edge cases ───────────────────────────────────────────────────────────────────

EDGE_CASES: dict[str, str] = {
    "empty": "",
    "ascii": "Hello, world! The quick brown fox jumps over the lazy dog.",
    "cjk": "我们的数据表明，自然语言处理很有趣。日本語のテキスト、ひらがなとカタカナ。",
    "korean": "안녕하세요, 세계! 한국어 텍스트입니다. 띄어쓰기  두 번",
    "arabic": "مرحبا بالعالم، هذه جملة عربية ١٢٣.",
    "devanagari": "नमस्ते दुनिया, यह हिंदी में लिखा गया वाक्य है।",
    "thai": "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "vietnamese": " việc nhiều điều hợp",
    "cyrillic-greek-hebrew": "Привет, мир! Γειά σου κόσμε. שלום עולם",
    "emoji-zwj": "👩‍👩‍👧‍👦 👨🏽‍💻 🏳️‍🌈 ❤️‍🔥 🧑‍🤝‍🧑",
    "flags": "🇫🇷🇩🇪🇯🇵🇺🇸 🏴󠁧󠁢󠁳󠁣󠁴󠁿 🇺🇳",
    "whitespace-run": "\n\n\n   \t  x",
    "leading-trailing": "   leading and trailing   ",
    "only-spaces": "     ",
    "newlines": "a\r\n\r\nb\n\n\n\nc\n",
    "tabs-nbsp": "\tx\u00a0y\u3000z\u2003 ",
    "digits": "1234567 3.14159 ٣٤٥ 0x1F 1,000,000",
    "contractions": "DON'T WE'LL I'M you're They'VE it's",
    "combining-nfkc": "e\u0301 n\u0303 Å Ａ ﬁ ① ㎒ ½",
    "controls": "a\x00b\x01\x7f\u200b\ufeffc",
    "astral-private": "\U0001f600\U000e0001\U0010fffd\ue000",
    "code": "def f(x):\n    return x ** 2  # comment\n\tif x != 0: pass\n",
    "long-word": "a" * 300 + " " + "é" * 150 + " " + "字" * 200,
    "url": "https://example.com/path?q=1&r=2#frag <a href='x'>",
    "special-llama": "<|begin_of_text|>Hi<|eot_id|> <|start_header_id|>user<|end_header_id|>",
    "special-mistral": "<s>[INST] hello [/INST]</s> [TOOL_CALLS]",
    "special-openai": "<|endoftext|><|fim_prefix|>x<|endofprompt|>",
    "special-other": "x<unk>y <|im_start|> <pad>[IMG]",
}

# ─── loading files, tokenizers and oracles ──────────────────────────────────────────────


def _meta_path(version: str) -> Path:
    return Path(str(resources.files("llama_models").joinpath(version, "tokenizer.model")))


def _mistral_path(key: str) -> Path:
    return Path(str(resources.files("mistral_common").joinpath("data", MISTRAL_DATA[key])))


def _meta_tokenizer(version: str) -> Any:
    need_module("llama_models")
    if version == "llama3":
        from llama_models.llama3.tokenizer import Tokenizer as Meta
    else:
        from llama_models.llama4.tokenizer import Tokenizer as Meta
    return Meta(_meta_path(version))


def _make_hf_json(source: str, workdir: Path) -> str:
    """A transformers-made tokenizer.json for ``source`` (no network)."""
    need_module("transformers")
    from tokenizers import processors

    if source in ("llama3", "llama4"):
        from transformers.convert_slow_tokenizer import TikTokenConverter

        meta = _meta_tokenizer(source)
        specials = sorted(meta.special_tokens, key=meta.special_tokens.get)
        hf = TikTokenConverter(
            vocab_file=str(_meta_path(source)), pattern=meta.model._pat_str,
            extra_special_tokens=specials,
        ).converted()  # fmt: skip
        bos, bos_id = "<|begin_of_text|>", meta.bos_id
    elif source.startswith("tekken"):
        from transformers.integrations.mistral.tokenizer import MistralConverter

        hf = MistralConverter(vocab_file=str(_mistral_path(source))).converted()
        bos, bos_id = "<s>", 1
    else:
        from transformers import LlamaTokenizer

        key, _, legacy = source.partition("-")
        folder = workdir / f"spm-{source}-{os.getpid()}"
        folder.mkdir(exist_ok=True)
        shutil.copy(_mistral_path(key), folder / "tokenizer.model")
        fast = LlamaTokenizer.from_pretrained(str(folder), legacy=bool(legacy), add_bos_token=True)
        return fast.backend_tokenizer.to_str()
    # the layout of the models' published tokenizer.json: ignore_merges, BOS template
    assert hf.token_to_id(bos) == bos_id
    hf.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B:1", special_tokens=[(bos, bos_id)]
        ),
    ])  # fmt: skip
    return hf.to_str()


def _hf_json(source: str, cache: Path) -> bytes:
    """The generated json, made once per run: cached in the run's temp folder (shared by the
    xdist workers; written atomically), never in the repo."""
    path = cache / f"{source}.tokenizer.json"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_make_hf_json(source, cache), encoding="utf-8")
        os.replace(tmp, path)
    return path.read_bytes()


class Oracle:
    """The model's own library: ``encode(text, special)`` and ``decode(ids)``."""

    def __init__(self, encode: Callable[[str, bool], list[int]], decode: Callable[[list[int]], str]):
        self.encode = encode
        self.decode = decode


def _oracle(case: Case, data: bytes, hf_text: str | None) -> Oracle:
    if case.family == "meta":
        meta = _meta_tokenizer(case.source)

        def meta_encode(text: str, special: bool) -> list[int]:
            if len(text) <= 25_000:  # Meta's encode, which cuts longer inputs into pieces
                return meta.encode(text, bos=special, eos=False, allowed_special="all")
            # a long document: Meta's own tiktoken Encoding without the cuts
            return [meta.bos_id] * special + meta.model.encode(text, allowed_special="all")

        return Oracle(meta_encode, meta.decode)
    if case.family == "openai":
        tiktoken = need_module("tiktoken")
        enc = tiktoken.get_encoding(case.source)  # offline: the tiktoken_cache fixture
        return Oracle(lambda text, special: enc.encode(text, allowed_special="all"), enc.decode)
    if case.family == "tekken":
        need_module("mistral_common")
        from mistral_common.tokens.tokenizers.tekken import (
            SpecialTokenPolicy,
            Tekkenizer,
        )

        tekken = Tekkenizer.from_file(str(_mistral_path(case.source)))
        return Oracle(
            lambda text, special: tekken.encode(text, bos=special, eos=False),
            lambda ids: tekken.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP),
        )
    if case.family == "sentencepiece":
        spm = need_module("sentencepiece")
        sp = spm.SentencePieceProcessor(model_proto=data)
        return Oracle(lambda text, special: sp.encode(text, add_bos=special), sp.decode)
    tokenizers = need_module("tokenizers")
    hf = tokenizers.Tokenizer.from_str(hf_text)
    return Oracle(
        lambda text, special: hf.encode(text, add_special_tokens=special).ids,
        lambda ids: hf.decode(ids, skip_special_tokens=False),
    )


@dataclass
class Loaded:
    case: Case
    file_name: str
    data: bytes
    ours: Any
    oracle: Oracle


class Models:
    """Each row loaded once per test process (ours and the oracle), on first use."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self._loaded: dict[str, Loaded] = {}

    def file(self, case: Case) -> tuple[str, bytes]:
        if case.family == "meta":
            need_module("llama_models")
            return "tokenizer.model", _meta_path(case.source).read_bytes()
        if case.family == "openai":
            shipped = resources.files("core").joinpath("data", f"{case.source}.tiktoken.gz")
            return f"{case.source}.tiktoken", gzip.decompress(shipped.read_bytes())
        if case.family in ("tekken", "sentencepiece"):
            need_module("mistral_common")
            return MISTRAL_DATA[case.source], _mistral_path(case.source).read_bytes()
        return "tokenizer.json", _hf_json(case.source, self.cache)

    def __getitem__(self, key: str) -> Loaded:
        if key not in self._loaded:
            case = BY_KEY[key]
            file_name, data = self.file(case)
            ours = load_tokenizer_files({file_name: data})
            hf_text = data.decode("utf-8") if case.family == "hf" else None
            self._loaded[key] = Loaded(case, file_name, data, ours, _oracle(case, data, hf_text))
        return self._loaded[key]


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory, tiktoken_cache: Path) -> Models:
    # the folder all xdist workers of this run share (basetemp's parent under xdist)
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = shared / "real-models-json"
    cache.mkdir(exist_ok=True)
    return Models(cache)


# ─── (0) + (a) + (b): one test per row ─────────────────────────────────────────────────
#
# One test item per row, so that each tokenizer is loaded by one xdist worker only (loading a
# 200k-token tokenizer.json takes seconds); it gathers every mismatch before failing.

DOCS_PER_CORPUS = 40
MAX_DOC_CHARS = 30_000  # longer documents are cut: ~40 documents are ~280-400 KB
CORPORA = {"docs-en": "docs_en", "docs-multi": "docs_multi"}  # corpus -> conftest fixture


def sample_docs(corpus: str, count: int = DOCS_PER_CORPUS) -> list[str]:
    """``count`` documents at a fixed stride (deterministic), each cut to MAX_DOC_CHARS."""
    docs = [d for d in corpus.split("<|endoftext|>") if d]
    stride = max(1, len(docs) // count)
    return [d[:MAX_DOC_CHARS] for d in docs[stride // 2 :: stride][:count]]


def _first_difference(ours: list[int], oracle: list[int]) -> str:
    i = next((k for k, (a, b) in enumerate(zip(ours, oracle)) if a != b), min(len(ours), len(oracle)))
    return (
        f"first difference at ID #{i} of {len(ours)} (ours) / {len(oracle)} (oracle): "
        f"ours {ours[max(0, i - 3) : i + 6]} vs oracle {oracle[max(0, i - 3) : i + 6]}"
    )


def report(key: str, problems: list[str], limit: int = 25) -> str:
    shown = problems[:limit] + ([f"... and {len(problems) - limit} more"] if len(problems) > limit else [])
    return f"{key}: {len(problems)} problem(s):\n" + "\n".join(shown)


def text_problems(model: Loaded, text: str, label: str, *, both: bool = True) -> list[str]:
    """Where ``encode`` (add_special_tokens False, and True if ``both``) or ``decode``
    differs from the oracle on ``text``."""
    problems = []
    for special in (False, True) if both else (False,):
        want = model.oracle.encode(text, special)
        got = model.ours.encode(text, add_special_tokens=special)
        if got != want:
            problems.append(f"encode(add_special_tokens={special}) of {label}: "
                            + _first_difference(got, want))  # fmt: skip
        got_text, want_text = model.ours.decode(want), model.oracle.decode(want)
        if got_text != want_text:
            problems.append(f"decode of the oracle's IDs for {label} (add_special_tokens="
                            f"{special}): ours {got_text[:80]!r} vs oracle {want_text[:80]!r}")  # fmt: skip
    return problems


def load_problems(model: Loaded) -> list[str]:
    """(0) Loaded as the known model, with its specials, BOS template and convention."""
    case, ours = model.case, model.ours
    problems = []
    if ours.name != case.name:
        problems.append(f"name {ours.name!r}, expected {case.name!r}")
    kind = Tokenizer if case.fast else PipelineTokenizer
    if not isinstance(ours, kind):
        problems.append(f"loaded as {type(ours).__name__}, expected {kind.__name__}")
    ids = ours.special_token_ids
    for special in {case.special, case.bos} - {""}:
        if special not in ids:
            problems.append(f"{special!r} is not among the special tokens")
    if case.bos in ids or not case.bos:
        want = ([ids[case.bos]] if case.bos else [], [])
        got = (list(ours.template.prefix), list(ours.template.suffix))
        if got != want:
            problems.append(f"template adds {got}, expected {want} (the model's BOS only)")
    # a special token typed in the text: its ID (tiktoken "all", Hugging Face) or text
    # (Tekken, SentencePiece control pieces), as the oracle does it
    if case.special in ids:
        typed = ours.encode(f"a {case.special} b")
        if (ids[case.special] in typed) is not case.specials_in_text:
            problems.append(
                f"typed {case.special!r} gives {typed}: expected it "
                + ("to become its ID" if case.specials_in_text else "to stay text")
            )
    return problems


# making a 128k/200k-token json with transformers and loading it: 20-60 s on a busy 2-core box
SLOW_KEYS = {"hf-llama3", "hf-llama4"}
PARAMS = [pytest.param(k, marks=pytest.mark.slow) if k in SLOW_KEYS else k for k in KEYS]


@pytest.mark.parametrize("key", PARAMS)
def test_matches_oracle(models: Models, request: pytest.FixtureRequest, key: str) -> None:
    """(0) the loader's result, (a) every edge case, then (b) ~40 documents of each corpus;
    every mismatch is listed. Without ../shared the test skips (after (0) and (a) passed)."""
    model = models[key]
    problems = load_problems(model)
    for edge, text in EDGE_CASES.items():
        problems += text_problems(model, text, edge)
    for corpus, fixture in CORPORA.items():
        try:
            text = request.getfixturevalue(fixture)
        except pytest.skip.Exception:
            if problems:
                break  # report what (0) and (a) found rather than skip
            raise
        docs = sample_docs(text)
        assert len(docs) == DOCS_PER_CORPUS and sum(len(d.encode()) for d in docs) > 250_000
        for i, doc in enumerate(docs):
            label = f"{corpus} sample {i} ({doc[:40]!r}...)"
            problems += text_problems(model, doc, label, both=i == 0)
    assert not problems, report(key, problems)


# ─── (c) properties on arbitrary text ───────────────────────────────────────────────────

# rank mode (Meta), Tekken, SentencePiece (Llama 2 layout; v7 with byte fallback), an HF pipeline
HYPOTHESIS_KEYS = ["llama3", "tekken_240911", "sp-v1", "sp-v7", "hf-mistral-v7"]
UNICODE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
MIXED = st.text(
    st.one_of(st.sampled_from(" \n\t\u00a0'.,1aZé字한🙂\u200d️"), st.characters(blacklist_categories=("Cs",))),
    max_size=40,
)


@pytest.mark.parametrize("key", HYPOTHESIS_KEYS)
@settings(max_examples=150, deadline=None)
@given(text=st.one_of(UNICODE, MIXED))
def test_arbitrary_text(models: Models, key: str, text: str) -> None:
    model = models[key]
    ids = model.ours.encode(text)
    assert ids == model.oracle.encode(text, False)
    assert model.ours.encode(text, add_special_tokens=True) == model.oracle.encode(text, True)
    back = model.ours.decode(ids)
    assert back == model.oracle.decode(ids)
    if model.oracle.decode(model.oracle.encode(text, False)) == text:
        assert back == text


# ─── files we do not recognise, formats we refuse ───────────────────────────────────────


def test_unknown_rank_file_needs_a_pattern(tmp_path: Path) -> None:
    """Meta's Llama 3 file with its last line changed: not known, so no pattern is guessed."""
    need_module("llama_models")
    tiktoken = need_module("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    lines = _meta_path("llama3").read_bytes().splitlines(keepends=True)
    last_rank = int(lines[-1].split()[1])
    lines[-1] = base64.b64encode(b"\x00playground\xff") + b" " + str(last_rank).encode() + b"\n"
    data = b"".join(lines)
    with pytest.raises(PatternNeededError, match="pattern"):
        load_tokenizer_files({"tokenizer.model": data})
    tok = load_tokenizer_files({"tokenizer.model": data}, pattern="llama3")
    assert tok.name != "Llama 3 (Meta tokenizer.model)" and not tok.template.prefix

    path = tmp_path / "changed.model"
    path.write_bytes(data)
    ranks = load_tiktoken_bpe(str(path))
    meta = _meta_tokenizer("llama3")
    enc = tiktoken.Encoding("changed", pat_str=meta.model._pat_str, mergeable_ranks=ranks,
                            special_tokens={})  # fmt: skip
    for text in EDGE_CASES.values():
        assert tok.encode(text) == enc.encode(text, disallowed_special=()), repr(text)


def test_unigram_tokenizer_json_loads(tmp_path: Path) -> None:
    tokenizers = need_module("tokenizers")
    from tokenizers import models as hf_models
    from tokenizers import pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(hf_models.Unigram())
    hf.pre_tokenizer = pre_tokenizers.Metaspace()
    texts = [f"the cat number {i} sat on the mat with {i * 7} friends" for i in range(300)]
    hf.train_from_iterator(texts, trainers.UnigramTrainer(vocab_size=60, special_tokens=["<unk>"],
                                                          unk_token="<unk>"))  # fmt: skip
    data = hf.to_str().encode("utf-8")
    assert b'"Unigram"' in data
    ours = load_tokenizer_files({"tokenizer.json": data})
    for text in texts[:20] + ["the cat number 1234 sat", "zebra ✓", ""]:
        assert ours.encode(text) == hf.encode(text).ids, text


def test_sentencepiece_unigram_model_loads(tmp_path: Path) -> None:
    spm = need_module("sentencepiece")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join(f"the cat number {i} sat on the mat with {i * 7} friends" for i in range(400)),
        encoding="utf-8",
    )
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(tmp_path / "uni"), vocab_size=60,
        model_type="unigram", minloglevel=2,
    )  # fmt: skip
    data = (tmp_path / "uni.model").read_bytes()
    ours = load_tokenizer_files({"uni.model": data})
    sp = spm.SentencePieceProcessor(model_proto=data)
    for text in ["the cat number 1234 sat", "zebra ✓ 東京", "", "  "]:
        assert ours.encode(text) == sp.encode(text), text


def test_known_openai_file_leaves_the_preset_alone(tiktoken_cache: Path) -> None:
    """Loading OpenAI's file (known: it loads as the preset) must not rename the preset that
    every other page shares."""
    from core.formats.presets import load_preset

    data = gzip.decompress(resources.files("core").joinpath("data", "cl100k_base.tiktoken.gz").read_bytes())
    preset = load_preset("cl100k_base")
    try:
        mine = load_tokenizer_files({"cl100k_base.tiktoken": data}, name="my upload")
        assert mine.name == "my upload"
        assert load_preset("cl100k_base").name == "cl100k_base"
    finally:
        preset.name = "cl100k_base"  # whatever happened, leave the shared preset as it was

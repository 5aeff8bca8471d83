"""The real models' files ``benchmarks/real_models.py`` measures, and each one's oracle: the
model's own library (tiktoken, ``tokenizers``, ``sentencepiece``, ``mistral_common``,
Meta's ``llama_models``) built from the same file.

Every file comes from an installed package, from llama.cpp's test files (``make test-data``)
or is made here: the tokenizer.json files ``transformers`` converts (tests/test_real_models.py's
recipes), two Unigram models and a BERT-style WordPiece one trained on the built-in corpus (no
installed package ships one).
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# the files' names and places, as the tests find them (tests/test_real_models.py)
from tests.test_real_models import MISTRAL_DATA as MISTRAL  # noqa: E402
from tests.test_real_models import _meta_path, _mistral_path  # noqa: E402

# llama.cpp's vocab-only GGUF files (`make test-data`) and the library each model's IDs come from
GGUF_DIR = REPO / ".cache" / "test-data" / "llama.cpp" / "models"


@dataclass
class Oracle:
    load: Callable[[], Any]  # builds the oracle from the file (timed)
    encode: Callable[[Any, str], list[int]]
    decode: Callable[[Any, list[int]], str]


@dataclass
class Row:
    key: str
    label: str  # shown in the table
    file_name: str
    data: Callable[[], bytes]
    oracle: Callable[[bytes, Path], Oracle]
    cells: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)  # ours ÷ oracle, by measure


def _meta_oracle(version: str) -> Callable[[bytes, Path], Oracle]:
    def make(data: bytes, tmp: Path) -> Oracle:
        def load() -> Any:
            if version == "llama3":
                from llama_models.llama3.tokenizer import Tokenizer as Meta
            else:
                from llama_models.llama4.tokenizer import Tokenizer as Meta
            return Meta(_meta_path(version))

        return Oracle(
            load,
            lambda meta, text: meta.model.encode(text, allowed_special="all"),
            lambda meta, ids: meta.decode(ids),
        )

    return make


def _openai_oracle(name: str) -> Callable[[bytes, Path], Oracle]:
    def make(data: bytes, tmp: Path) -> Oracle:
        def load() -> Any:
            import tiktoken
            from tiktoken_ext import openai_public

            # a fresh Encoding from the file (get_encoding would return its cached one)
            return tiktoken.Encoding(**getattr(openai_public, name)())

        return Oracle(
            load,
            lambda enc, text: enc.encode(text, allowed_special="all"),
            lambda enc, ids: enc.decode(ids),
        )

    return make


def _tekken_oracle(key: str) -> Callable[[bytes, Path], Oracle]:
    def make(data: bytes, tmp: Path) -> Oracle:
        from mistral_common.tokens.tokenizers.tekken import (
            SpecialTokenPolicy,
            Tekkenizer,
        )

        return Oracle(
            lambda: Tekkenizer.from_file(str(_mistral_path(key))),
            lambda tk, text: tk.encode(text, bos=False, eos=False),
            lambda tk, ids: tk.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP),
        )

    return make


def _sp_oracle(data: bytes, tmp: Path) -> Oracle:
    import sentencepiece as spm

    return Oracle(
        lambda: spm.SentencePieceProcessor(model_proto=data),
        lambda sp, text: sp.encode(text),
        lambda sp, ids: sp.decode(ids),
    )


def _hf_oracle(data: bytes, tmp: Path) -> Oracle:
    import tokenizers

    text = data.decode("utf-8")
    return Oracle(
        lambda: tokenizers.Tokenizer.from_str(text),
        lambda hf, s: hf.encode(s, add_special_tokens=False).ids,
        lambda hf, ids: hf.decode(ids, skip_special_tokens=False),
    )


def _gguf_bytes(name: str) -> Callable[[], bytes]:
    return lambda: (GGUF_DIR / f"ggml-vocab-{name}.gguf").read_bytes()


def _gguf_sp_oracle(data: bytes, tmp: Path) -> Oracle:
    """sentencepiece on the ``.model`` written from the GGUF (llama / t5 vocabs)."""
    from core.formats.gguf import read_gguf_metadata
    from core.formats.gguf_vocab import sentencepiece_model_from_gguf

    return _sp_oracle(sentencepiece_model_from_gguf(read_gguf_metadata(data)), tmp)


def _gguf_llama3_oracle(data: bytes, tmp: Path) -> Oracle:
    """tokenizers on Llama 3's tokenizer.json (the tests' transformers recipe)."""
    return _hf_oracle(_hf_json_bytes("llama3", tmp)(), tmp)


def _gguf_hf_oracle(data: bytes, tmp: Path) -> Oracle:
    """tokenizers on the tokenizer.json that transformers' GGUF converter makes from the
    file's metadata (read by our GGUF reader; no torch needed). The conversion runs once,
    here, untimed; the oracle's load is ``Tokenizer.from_str`` of its JSON."""
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        GGUF_TOKENIZER_MAPPING,
        convert_gguf_tokenizer,
    )

    from core.formats.gguf import read_gguf_metadata

    fields = read_gguf_metadata(data).fields
    wanted = GGUF_TOKENIZER_MAPPING["tokenizer"].items()
    found = {name: fields[f"tokenizer.{key}"] for key, name in wanted if f"tokenizer.{key}" in fields}
    converted, _ = convert_gguf_tokenizer(fields.get("general.architecture", "gemma4"), found)
    return _hf_oracle(converted.to_str().encode("utf-8"), tmp)


def _openai_bytes(name: str) -> Callable[[], bytes]:
    return lambda: gzip.decompress(
        resources.files("core").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    )


def _hf_json_bytes(source: str, tmp: Path) -> Callable[[], bytes]:
    def make() -> bytes:
        from tests.test_real_models import (
            _make_hf_json,  # the tests' transformers recipes
        )

        return _make_hf_json(source, tmp).encode("utf-8")

    return make


def _unigram_bytes(**options: Any) -> Callable[[], bytes]:
    """A Unigram ``.model`` trained here by sentencepiece on the built-in corpus (no Unigram
    model ships in a package we install): 8,000 pieces, ``nmt_nfkc`` unless told."""

    def make() -> bytes:
        import io

        import sentencepiece as spm

        from core.train.builtin_corpus import builtin_corpus_text

        lines = [ln for ln in builtin_corpus_text().splitlines() if ln.strip()]
        out = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=out, model_type="unigram",
            vocab_size=8000, minloglevel=2, **options,
        )  # fmt: skip
        return out.getvalue()

    return make


def _unigram_json_bytes(how: str, tmp: Path) -> Callable[[], bytes]:
    """That model as transformers converts it: ``T5Converter`` (the ``Precompiled``
    normalizer, as published T5 files have it) or ``XLMRobertaConverter`` (XLM-R's layout:
    four specials first, the pieces after them). Not ``XLMRobertaTokenizer(vocab_file=...)
    .backend_tokenizer``: transformers 5 no longer reads the ``.model`` there, and its file
    holds the 5 specials only."""

    def make() -> bytes:
        import importlib

        import transformers

        # (the module, not transformers' function of the same name)
        convert_slow_tokenizer = importlib.import_module("transformers.convert_slow_tokenizer")

        path = tmp / "unigram-spiece.model"
        path.write_bytes(_unigram_bytes()())
        if how == "t5":
            slow = transformers.T5Tokenizer(vocab_file=str(path))
            return convert_slow_tokenizer.T5Converter(slow).converted().to_str().encode()
        xlmr = transformers.XLMRobertaTokenizer(vocab_file=str(path))
        return convert_slow_tokenizer.XLMRobertaConverter(xlmr).converted().to_str().encode()

    return make


def _wordpiece_json_bytes() -> bytes:
    """A BERT-style ``tokenizer.json`` (BertNormalizer, BertPreTokenizer, WordPiece, 8,000
    tokens, ``[CLS] $A [SEP]``) trained by ``tokenizers`` on the built-in corpus."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers.trainers import WordPieceTrainer

    from core.train.builtin_corpus import builtin_corpus_text

    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    lines = [ln for ln in builtin_corpus_text().splitlines() if ln.strip()]
    tok.train_from_iterator(lines, WordPieceTrainer(vocab_size=8000, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    return tok.to_str().encode("utf-8")


def rows(with_json: bool, tmp: Path) -> list[Row]:
    out = [
        Row("llama3", "Llama 3 `tokenizer.model`", "tokenizer.model",
            lambda: _meta_path("llama3").read_bytes(), _meta_oracle("llama3")),
        Row("llama4", "Llama 4 `tokenizer.model`", "tokenizer.model",
            lambda: _meta_path("llama4").read_bytes(), _meta_oracle("llama4")),
        Row("cl100k_base", "`cl100k_base.tiktoken`", "cl100k_base.tiktoken",
            _openai_bytes("cl100k_base"), _openai_oracle("cl100k_base")),
        Row("o200k_base", "`o200k_base.tiktoken`", "o200k_base.tiktoken",
            _openai_bytes("o200k_base"), _openai_oracle("o200k_base")),
    ]  # fmt: skip
    for key, file_name in MISTRAL.items():
        oracle = _tekken_oracle(key) if key.startswith("tekken") else _sp_oracle
        out.append(Row(key, f"`{file_name}`", file_name,
                       (lambda k=key: _mistral_path(k).read_bytes()), oracle))  # fmt: skip
    out += [
        Row("unigram", "Unigram `.model` (8k, nmt_nfkc, trained here)", "spiece.model",
            _unigram_bytes(), _sp_oracle),
        Row("unigram-bytes", "Unigram `.model` (8k, byte fallback, trained here)",
            "spiece.model", _unigram_bytes(byte_fallback=True), _sp_oracle),
    ]  # fmt: skip
    out += [
        Row("gguf-gpt-2", "GGUF `ggml-vocab-gpt-2`", "gpt-2.gguf", _gguf_bytes("gpt-2"),
            _openai_oracle("gpt2")),
        Row("gguf-llama-bpe", "GGUF `ggml-vocab-llama-bpe` (Llama 3)", "llama-bpe.gguf",
            _gguf_bytes("llama-bpe"), _gguf_llama3_oracle),
        Row("gguf-llama-spm", "GGUF `ggml-vocab-llama-spm` (Llama 2)", "llama-spm.gguf",
            _gguf_bytes("llama-spm"), _gguf_sp_oracle),
        Row("gguf-nomic-bert-moe", "GGUF `ggml-vocab-nomic-bert-moe` (t5, Unigram)",
            "nomic-bert-moe.gguf", _gguf_bytes("nomic-bert-moe"), _gguf_sp_oracle),
        Row("gguf-gemma-4", "GGUF `ggml-vocab-gemma-4` (Gemma 4, 262k)", "gemma-4.gguf",
            _gguf_bytes("gemma-4"), _gguf_hf_oracle),
    ]  # fmt: skip
    if with_json:
        for source in ("llama3", "llama4", "tekken_240911", "v1-legacy", "v1", "v3", "v7"):
            out.append(Row(f"hf-{source}", f"HF json from {source}", "tokenizer.json",
                           _hf_json_bytes(source, tmp), _hf_oracle))  # fmt: skip
        for how in ("t5", "xlmr"):
            out.append(Row(f"hf-unigram-{how}", f"HF json from the Unigram model ({how})",
                           "tokenizer.json", _unigram_json_bytes(how, tmp), _hf_oracle))  # fmt: skip
        out.append(Row("hf-wordpiece", "HF json, BERT-style WordPiece (8k, trained here)",
                       "tokenizer.json", _wordpiece_json_bytes, _hf_oracle))  # fmt: skip
    return out

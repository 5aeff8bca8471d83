"""Tokenizer sources (core.services.sources): one table of presets, one value per kind of
source, and special tokens and a pattern that every format either uses or refuses."""

from __future__ import annotations

import base64
import json

import pytest

from core.engine.bytes_unicode import to_gpt2_str
from core.errors import FormatError, PlaygroundError
from core.formats import presets
from core.formats.detect import load_tokenizer_files
from core.formats.gguf import write_gguf
from core.formats.gguf_spm import SpmPiece, model_proto_bytes
from core.formats.known import KNOWN
from core.formats.tiktoken_file import dump_tiktoken_ranks
from core.services import sources
from core.services.library_json import InvalidIdError

# ─── one preset table ────────────────────────────────────────────────────────────────────────


def test_the_ui_labels_and_the_known_files_come_from_the_preset_table() -> None:
    from ui import state

    assert state.PRESET_LABELS is presets.PRESET_LABELS
    assert list(presets.PRESET_LABELS) == ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)",
                                           "GPT-4o (o200k_base)"]
    openai = {k: v for k, v in KNOWN.items() if v.kind == "preset"}
    assert {v.preset: sha for sha, v in openai.items()} == {
        n: presets.preset_files(n)[0].sha256 for n in ("cl100k_base", "o200k_base")}
    assert sorted(v.name for v in openai.values()) == ["cl100k_base (GPT-3.5 / GPT-4)",
                                                       "o200k_base (GPT-4o)"]


def test_a_known_openai_rank_file_keeps_its_pattern_or_specials_when_given_the_other() -> None:
    """Before: special tokens alone asked for a pattern ("a rank file we do not recognise"),
    and a pattern alone dropped the preset's special tokens."""
    (file,) = presets.preset_files("cl100k_base")
    data = presets._read(file, "")
    files = {"cl100k_base.tiktoken": data}
    tok = load_tokenizer_files(files, special_tokens=["<|endoftext|>"])
    assert tok.pattern == "cl100k" and list(tok.special_tokens) == ["<|endoftext|>"]
    assert tok.encode("hello world") == presets.load_preset("cl100k_base").encode("hello world")
    tok = load_tokenizer_files(files, pattern="o200k")
    assert tok.pattern == "o200k"
    assert tok.special_token_ids == presets.preset_specials("cl100k_base")


# ─── special tokens and a pattern: used or refused, for every format ─────────────────────────


def _tekken() -> bytes:
    vocab = [{"rank": i, "token_bytes": base64.b64encode(bytes([i])).decode(), "token_str": None}
             for i in range(256)]
    return json.dumps({"config": {"pattern": r"\S+|\s+", "default_vocab_size": 258,
                                  "default_num_special_tokens": 2, "version": "v3"},
                       "vocab": vocab}).encode()


def _sentencepiece() -> bytes:
    pieces = [SpmPiece("<unk>", 0.0, 2), SpmPiece("▁", -1.0, 1), SpmPiece("a", -2.0, 1),
              SpmPiece("▁a", -1.5, 1)]
    return model_proto_bytes(pieces, model_type=1, unk_id=0)


def _gguf() -> bytes:
    tokens = [to_gpt2_str(bytes([i])) for i in range(256)] + ["ab", "<|end|>"]
    return write_gguf({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe",
                       "tokenizer.ggml.tokens": tokens,
                       "tokenizer.ggml.token_type": [1] * 257 + [3],
                       "tokenizer.ggml.merges": ["a b"]})


def _wordpiece() -> bytes:
    return json.dumps({"model": {"type": "WordPiece", "unk_token": "[UNK]",
                                 "continuing_subword_prefix": "##",
                                 "max_input_chars_per_word": 100,
                                 "vocab": {"[UNK]": 0, "a": 1, "##b": 2}},
                       "pre_tokenizer": {"type": "Whitespace"}}).encode()


OWN_SETTINGS = {
    "tekken": ({"tekken.json": _tekken()}, "a Mistral Tekken file"),
    "sentencepiece": ({"spiece.model": _sentencepiece()}, "a SentencePiece model"),
    "gguf": ({"vocab.gguf": _gguf()}, "a GGUF model"),
    "tokenizer.json pipeline": ({"tokenizer.json": _wordpiece()},
                                "a Hugging Face pipeline other than byte-level BPE"),
}


@pytest.mark.parametrize("kind", list(OWN_SETTINGS))
def test_formats_with_their_own_settings_refuse_others_in_one_line(kind: str) -> None:
    """Before: Tekken, SentencePiece, GGUF and tokenizer.json pipelines ignored them."""
    files, what = OWN_SETTINGS[kind]
    (name,) = files
    assert load_tokenizer_files(files).n_vocab > 0  # (opens with its own)
    for options, given in (({"special_tokens": ["<x>"]}, "special tokens"),
                           ({"pattern": "gpt2"}, "a pattern"),
                           ({"special_tokens": [], "pattern": r"\w+"},
                            "special tokens or a pattern")):
        with pytest.raises(FormatError) as err:
            load_tokenizer_files(files, **options)
        message = str(err.value)
        assert message.startswith(f"{name} is {what}, wh") and "\n" not in message
        assert message.endswith(f": open it without {given} of your own")


def test_formats_that_take_special_tokens_and_a_pattern_use_them() -> None:
    tok = presets.load_preset("gpt2")
    for files in ({"vocab.json": presets._read(presets.preset_files("gpt2")[0], ""),
                   "merges.txt": presets._read(presets.preset_files("gpt2")[1], "")},
                  {"t.tiktoken": dump_tiktoken_ranks({t: i for i, t in tok.vocab.items()
                                                      if i < 50256})}):
        loaded = load_tokenizer_files(files, special_tokens=["<|endoftext|>"], pattern="o200k")
        assert loaded.pattern == "o200k" and list(loaded.special_tokens) == ["<|endoftext|>"]


# ─── one value per kind of source ────────────────────────────────────────────────────────────


def test_labels_keys_and_links_of_each_kind() -> None:
    saved = sources.from_label("📚 mine · 0123456789abcdef")
    assert saved == sources.Saved("0123456789abcdef") and saved.name == "mine"
    assert saved.key(sources.CORE) == "lib:0123456789abcdef"
    assert saved.describe(sources.CORE) == "saved in the library"
    assert sources.from_label("Word-level baseline").key(sources.CORE) == "baseline:word"
    assert sources.from_label("🤗 Qwen/Qwen3-8B") == sources.Hub("Qwen/Qwen3-8B")
    assert sources.from_label("🤗 ../etc") is None and sources.from_label("🦙 ") is None
    assert sources.from_label("mine") is None  # a session's own label is the session's
    for label, name in presets.PRESET_LABELS.items():
        preset = sources.Preset(name)
        assert sources.from_label(label) == preset == sources.from_link(name)
        assert preset.label == label and preset.key(sources.CORE) == f"preset:{name}"
        assert preset.describe(sources.CORE) == f"OpenAI preset {name} (tiktoken's files)"
    assert sources.from_link("lib:0123456789abcdef") == saved
    assert sources.from_link("🤗 Qwen/Qwen3-8B") is None  # links name Hub models by model=
    with pytest.raises(InvalidIdError):
        sources.from_link("lib:nope")


def test_the_command_line_reads_presets_files_and_hub_ids(tmp_path) -> None:
    assert sources.from_spec(" gpt2 ").origin() == \
        "preset gpt2 (OpenAI's files, shipped with the package)"
    hub = sources.from_spec("Qwen/Qwen3-8B@main")
    assert hub == sources.Hub("Qwen/Qwen3-8B", "main")
    assert hub.origin() == "Hugging Face Hub Qwen/Qwen3-8B at main"
    (tmp_path / "tokenizer.json").write_bytes(_wordpiece())
    files = sources.from_spec(str(tmp_path))
    assert isinstance(files, sources.Files) and files.origin() == "files tokenizer.json"
    assert files.load(sources.CORE).n_vocab == 3
    with pytest.raises(PlaygroundError, match="^-t is empty"):
        sources.from_spec(" ")
    with pytest.raises(PlaygroundError, match="is not a file, and -t takes a preset"):
        sources.from_spec("nope.json")


def test_core_leaves_the_apps_own_sources_to_the_app() -> None:
    with pytest.raises(PlaygroundError, match="baselines open in the app only"):
        sources.Baseline("word").load(sources.CORE)

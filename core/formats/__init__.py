"""Tokenizer file formats: load (safely) and save every format the playground knows.

- CS336 pickles ``vocab.pkl`` + ``merges.pkl`` (:mod:`core.engine.pickles`, loaded through
  the restricted unpickler in :mod:`core.engine.safe_pickle`)
- GPT-2 ``encoder.json`` + ``vocab.bpe`` (:mod:`core.formats.gpt2_files`)
- tiktoken ``.tiktoken`` rank files (:mod:`core.formats.tiktoken_file`)
- Hugging Face ``tokenizer.json`` (:mod:`core.formats.hf_json`)
- GGUF files of llama.cpp, Ollama and LM Studio: metadata only (:mod:`core.formats.gguf`),
  as tokenizers (:mod:`core.formats.gguf_vocab`, :mod:`core.formats.gguf_pre`,
  :mod:`core.formats.gguf_spm`), and the ones on this machine (:mod:`core.formats.gguf_local`)

:func:`load_tokenizer_files` guesses the format from uploaded files; :func:`export_all` writes
every format (file name -> bytes) for download buttons (both in :mod:`core.formats.detect`).

The names below are importable from ``core.formats`` itself. They load on first use
(PEP 562), so importing one format module (``core.engine.tokenizer`` reads CS336 pickles through
:mod:`core.engine.pickles`) does not import every other one, and no import cycle can form.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it (of this package, or a full dotted name).
_EXPORTS: dict[str, str] = {
    # detect
    "ACCEPTED": "detect",
    "ExportFailure": "detect",
    "ExportedFiles": "detect",
    "FileSet": "detect",
    "export_all": "detect",
    "identify_files": "detect",
    "load_tokenizer_files": "detect",
    "tokenizer_to_pickles": "detect",
    # gguf, gguf_local, gguf_vocab
    "GGUFMetadata": "gguf",
    "LocalGGUF": "gguf_local",
    "local_gguf_models": "gguf_local",
    "read_gguf_metadata": "gguf",
    "sentencepiece_model_from_gguf": "gguf_vocab",
    "tokenizer_from_gguf": "gguf_vocab",
    # gpt2_files
    "dumps_encoder_json": "gpt2_files",
    "dumps_gpt2": "gpt2_files",
    "dumps_vocab_bpe": "gpt2_files",
    "infer_special_tokens": "gpt2_files",
    "loads_encoder_json": "gpt2_files",
    "loads_gpt2": "gpt2_files",
    "loads_vocab_bpe": "gpt2_files",
    "tokenizer_from_gpt2_files": "gpt2_files",
    "tokenizer_to_gpt2_files": "gpt2_files",
    # hf_json
    "dumps_hf_json": "hf_json",
    "hf_regex": "hf_json",
    "loads_hf_json": "hf_json",
    "tokenizer_from_hf_json": "hf_json",
    "tokenizer_to_hf_json": "hf_json",
    # pickles
    "dumps_merges": "core.engine.pickles",
    "dumps_vocab": "core.engine.pickles",
    "load_pickles": "core.engine.pickles",
    "loads_merges": "core.engine.pickles",
    "loads_pickles": "core.engine.pickles",
    "loads_vocab": "core.engine.pickles",
    "save_pickles": "core.engine.pickles",
    # safe_pickle
    "MAX_PICKLE_BYTES": "core.engine.safe_pickle",
    "RestrictedUnpickler": "core.engine.safe_pickle",
    "safe_loads": "core.engine.safe_pickle",
    "scan_pickle": "core.engine.safe_pickle",
    "validate_merges": "core.engine.safe_pickle",
    "validate_merges_in_vocab": "core.engine.safe_pickle",
    "validate_vocab": "core.engine.safe_pickle",
    # tiktoken_file
    "dump_tiktoken_ranks": "tiktoken_file",
    "load_tiktoken_ranks": "tiktoken_file",
    "ranks_to_merges": "tiktoken_file",
    "tokenizer_from_tiktoken": "tiktoken_file",
    "tokenizer_to_tiktoken": "tiktoken_file",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'core.formats' has no attribute {name!r}")
    return getattr(importlib.import_module(module if "." in module else f"core.formats.{module}"), name)


def __dir__() -> list[str]:
    return __all__

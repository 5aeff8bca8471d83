"""Tokenizer files we recognise by their SHA-256, with what the file itself does not say.

A rank file (Meta's ``tokenizer.model`` for Llama 3/4, tiktoken's ``cl100k_base.tiktoken``)
holds only ranks: no pre-tokenizer pattern, no special tokens, no BOS. Guessing them would
give wrong IDs with no sign, so a rank file loads with no other input only when we know it;
any other rank file needs the user to choose a pattern. Files that carry their own settings
(Tekken json, SentencePiece ``.model``) are listed for their names.

>>> known_file(b"not a tokenizer") is None
True
>>> sorted({k.family for k in KNOWN.values()})
['Llama', 'Mistral', 'OpenAI']
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from core.formats import presets

__all__ = ["KNOWN", "KnownFile", "known_file"]


@dataclass(frozen=True)
class KnownFile:
    """What we know about one released tokenizer file.

    ``kind``: ``"tiktoken"`` (a rank file), ``"tekken"``, ``"sentencepiece"`` or ``"preset"``
    (one of OpenAI's, loaded as :func:`core.formats.presets.load_preset` ``(preset)``; its
    row comes from the preset table). ``specials``: for rank files, ``{special token: ID}``
    given the number of ranks. ``bos``: the special token ``add_special_tokens=True`` puts
    first (none: ``""``).
    """

    name: str
    family: str
    kind: str
    pattern: str = ""
    specials: Callable[[int], dict[str, int]] | None = None
    bos: str = ""
    preset: str = ""


def _llama3_specials(n_ranks: int) -> dict[str, int]:
    """Meta's llama_models/llama3/tokenizer.py: 256 special tokens after the ranks."""
    names = [
        "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
        "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
        "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
        "<|python_tag|>", "<|image|>",
    ]  # fmt: skip
    names += [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(names))]
    return {name: n_ranks + i for i, name in enumerate(names)}


@lru_cache(maxsize=1)
def _llama4_names() -> tuple[str, ...]:
    # 2,048 names (llama_models/llama4/tokenizer.py: basic + Llama 4 + reserved), shipped
    # as data because they are not a formula
    data = resources.files("core").joinpath("data", "llama4_special_tokens.txt.gz").read_bytes()
    return tuple(gzip.decompress(data).decode("utf-8").splitlines())


def _llama4_specials(n_ranks: int) -> dict[str, int]:
    return {name: n_ranks + i for i, name in enumerate(_llama4_names())}


#: SHA-256 of the file -> what it is.
KNOWN: dict[str, KnownFile] = {
    "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55": KnownFile(
        "Llama 3 (Meta tokenizer.model)", "Llama", "tiktoken", "llama3", _llama3_specials,
        "<|begin_of_text|>",
    ),
    "d0bdbaf59b0762c8c807617e2d8ea51420eb1b1de266df2495be755c8e0ed6ed": KnownFile(
        "Llama 4 (Meta tokenizer.model)", "Llama", "tiktoken", "o200k", _llama4_specials,
        "<|begin_of_text|>",
    ),
    "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516": KnownFile(
        "Mistral Tekken (Mistral NeMo, tekken_240718)", "Mistral", "tekken",
    ),
    "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316": KnownFile(
        "Mistral Tekken (Pixtral, tekken_240911)", "Mistral", "tekken",
    ),
    "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055": KnownFile(
        "Mistral 7B v0.1 (SentencePiece v1, the Llama 2 layout)", "Mistral", "sentencepiece",
    ),
    "37f00374dea48658ee8f5d0f21895b9bc55cb0103939607c8185bfd1c6ca1f89": KnownFile(
        "Mistral instruct v2 (SentencePiece, 240216)", "Mistral", "sentencepiece",
    ),
    "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33": KnownFile(
        "Mistral instruct v3 (SentencePiece, 240323)", "Mistral", "sentencepiece",
    ),
    "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a": KnownFile(
        "Mistral instruct v7 (SentencePiece, 241114)", "Mistral", "sentencepiece",
    ),
}  # fmt: skip


def _preset_file(name: str) -> tuple[str, KnownFile]:
    """A preset's rank file, known from the preset table (:mod:`core.formats.presets`)."""
    (file,) = presets.preset_files(name)
    specials = presets.preset_specials(name)
    return file.sha256, KnownFile(
        f"{name} ({presets.preset_models(name)})", "OpenAI", "preset",
        presets.preset_pattern(name), lambda _n_ranks: dict(specials), preset=name,
    )  # fmt: skip


# OpenAI's rank files (GPT-2's files are encoder.json + vocab.bpe: not a rank file)
KNOWN.update(_preset_file(name) for name in presets.PRESETS
             if len(presets.preset_files(name)) == 1)


def known_file(data: bytes) -> KnownFile | None:
    """The :class:`KnownFile` whose SHA-256 ``data`` has, or None."""
    return KNOWN.get(hashlib.sha256(data).hexdigest())

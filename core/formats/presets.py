"""OpenAI's released tokenizers (gpt2, cl100k_base, o200k_base) as our :class:`Tokenizer`.

The genuine files ship inside the package, gzipped (``core/data/``, about 3 MB for all four),
so presets work offline on any machine; each is checked against the SHA-256 tiktoken expects
when it is loaded. A ``TIKTOKEN_CACHE_DIR`` holding tiktoken's own cache files (named by the
SHA-1 of their URL) overrides the shipped copies. tiktoken is never imported. Each preset gets
tiktoken's exact pre-tokenizer pattern, special tokens and IDs; cl100k_base and o200k_base encode by rank as tiktoken
does (:mod:`core.engine.ranks`), GPT-2 with its merge list, so ``encode`` gives tiktoken's IDs.

>>> sorted(PRESETS)
['cl100k_base', 'gpt2', 'o200k_base']
>>> load_preset("gpt2").encode("Hello world")
[15496, 995]
"""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from core.engine.tokenizer import Tokenizer
from core.errors import PlaygroundError
from core.formats.gpt2_files import loads_encoder_json, loads_vocab_bpe
from core.formats.tiktoken_file import load_tiktoken_ranks

__all__ = ["PRESETS", "PRESET_LABELS", "PresetFile", "load_preset", "preset_files", "preset_label",
           "preset_models", "preset_pattern", "preset_specials"]

_BLOB = "https://openaipublic.blob.core.windows.net/"
_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX, _FIM_MIDDLE, _FIM_SUFFIX = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class PresetFile:
    """One file tiktoken downloads: its URL, the SHA-256 tiktoken expects, the name of the
    gzipped copy shipped in ``core/data/``, and the name it has in tiktoken's cache (SHA-1 of
    the URL)."""

    url: str
    sha256: str
    shipped: str

    @property
    def cache_name(self) -> str:
        return hashlib.sha1(self.url.encode()).hexdigest()


@dataclass(frozen=True)
class _Preset:
    title: str  # the UI's short name: its label is "<title> (<name>)"
    models: str  # the models that use it: a known file of it is "<name> (<models>)"
    description: str
    pattern: str  # a name from core.engine.pretokenize.PATTERNS
    special_tokens: dict[str, int]
    files: tuple[PresetFile, ...]  # gpt2: (encoder.json, vocab.bpe); others: (.tiktoken,)


_PRESETS: dict[str, _Preset] = {
    "gpt2": _Preset(
        "GPT-2", "GPT-2", "GPT-2 (2019): 50,257 tokens",
        # tiktoken's r50k pat_str is a possessive rewrite of GPT-2's pattern that splits
        # identically (tests/test_presets.py checks it), so the original is used.
        "gpt2",
        {_ENDOFTEXT: 50256},
        (
            PresetFile(
                _BLOB + "gpt-2/encodings/main/encoder.json",
                "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
                "gpt2-encoder.json.gz",
            ),
            PresetFile(
                _BLOB + "gpt-2/encodings/main/vocab.bpe",
                "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
                "gpt2-vocab.bpe.gz",
            ),
        ),
    ),
    "cl100k_base": _Preset(
        "GPT-4", "GPT-3.5 / GPT-4", "GPT-3.5 / GPT-4 (2023): ~100k tokens",
        "cl100k",
        {
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
        (
            PresetFile(
                _BLOB + "encodings/cl100k_base.tiktoken",
                "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                "cl100k_base.tiktoken.gz",
            ),
        ),
    ),
    "o200k_base": _Preset(
        "GPT-4o", "GPT-4o", "GPT-4o (2024): ~200k tokens",
        "o200k",
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
        (
            PresetFile(
                _BLOB + "encodings/o200k_base.tiktoken",
                "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                "o200k_base.tiktoken.gz",
            ),
        ),
    ),
}

#: Preset name -> one-line description, in the order a UI should list them.
PRESETS: dict[str, str] = {name: p.description for name, p in _PRESETS.items()}


def preset_label(name: str) -> str:
    """What pickers and links call the preset ``name``.

    >>> preset_label("cl100k_base")
    'GPT-4 (cl100k_base)'
    """
    return f"{_preset(name).title} ({name})"


#: Picker label -> preset name, in the order a UI should list them.
PRESET_LABELS: dict[str, str] = {f"{p.title} ({name})": name for name, p in _PRESETS.items()}


def preset_pattern(name: str) -> str:
    """The preset's pre-tokenizer pattern (a name from :data:`core.engine.pretokenize.PATTERNS`)."""
    return _preset(name).pattern


def preset_specials(name: str) -> dict[str, int]:
    """The preset's special tokens and their IDs (a new dict each call)."""
    return dict(_preset(name).special_tokens)


def preset_models(name: str) -> str:
    """The models that use the preset (``"GPT-3.5 / GPT-4"``)."""
    return _preset(name).models


def preset_files(name: str) -> tuple[PresetFile, ...]:
    """The files a preset is built from.

    >>> [(f.shipped, f.cache_name) for f in preset_files("cl100k_base")]
    [('cl100k_base.tiktoken.gz', '9b5ad71b2ce5302211f9c61530b329a4922fc6a4')]
    """
    return _preset(name).files


def load_preset(name: str, *, cache_dir: str | os.PathLike[str] | None = None) -> Tokenizer:
    """The preset ``name`` (see :data:`PRESETS`) as a :class:`Tokenizer`.

    Each file is read from ``cache_dir`` (or ``$TIKTOKEN_CACHE_DIR``) when that folder holds
    tiktoken's cache file for it, else from the copy shipped with the package. Loaded presets
    are kept per process (a few; bounded), so the second call is instant. Treat the result as
    read-only.
    """
    _preset(name)
    if cache_dir is None:
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or None
    directory = str(Path(cache_dir).resolve()) if cache_dir is not None else ""
    return _load_cached(name, directory)


def _preset(name: str) -> _Preset:
    try:
        return _PRESETS[name]
    except KeyError:
        raise PlaygroundError(
            f"unknown preset {name!r}; choose one of {', '.join(map(repr, _PRESETS))}"
        ) from None


def _read(file: PresetFile, directory: str) -> bytes:
    """The genuine bytes of ``file``: tiktoken's cache copy in ``directory`` if there is one,
    else the gzipped copy shipped in ``core/data/``; refused unless its SHA-256 matches."""
    cached = Path(directory, file.cache_name) if directory else None
    if cached is not None and cached.is_file():
        where, data = str(cached), cached.read_bytes()
    else:
        shipped = resources.files("core").joinpath("data", file.shipped)
        where = f"core/data/{file.shipped}"
        try:
            data = gzip.decompress(shipped.read_bytes())
        except (OSError, EOFError) as err:
            raise PlaygroundError(
                f"the package's copy of {file.url} ({where}) cannot be read ({err}); "
                "reinstall the package, or set TIKTOKEN_CACHE_DIR to a folder holding "
                "tiktoken's cache files."
            ) from None
    if hashlib.sha256(data).hexdigest() != file.sha256:
        raise PlaygroundError(
            f"{where} is not the genuine {file.url} (its SHA-256 differs from tiktoken's); "
            "delete it (or reinstall the package) and try again."
        )
    return data


@lru_cache(maxsize=4)  # bounded: three presets, a few MB of tables each
def _load_cached(name: str, directory: str) -> Tokenizer:
    preset = _PRESETS[name]
    if name == "gpt2":
        encoder, bpe = (_read(f, directory) for f in preset.files)
        vocab = loads_encoder_json(encoder, name="encoder.json")
        merges = loads_vocab_bpe(bpe, name="vocab.bpe")
    else:
        file = preset.files[0]
        ranks = load_tiktoken_ranks(_read(file, directory), name=f"{name}.tiktoken")
        merges = None  # BPE by rank, as tiktoken does (merges are derived when shown)
        vocab = {rank: token for token, rank in ranks.items()}
    for special, sid in preset.special_tokens.items():
        vocab[sid] = special.encode("utf-8")
    return Tokenizer(
        vocab, merges, list(preset.special_tokens),
        pattern=preset.pattern, name=name, ignore_merges=True,  # tiktoken's behaviour
    )  # fmt: skip

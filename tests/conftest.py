"""Shared fixtures: the oracle's tiktoken files and the shared corpora.

``../shared`` (corpora) exists on our machines and in CI, not on a user's: there a test that
needs it skips with a message; under ``CI=true`` its absence fails the run instead, so CI can
never go green by skipping. tiktoken's files come from the package itself (the genuine,
SHA-256-checked copies in ``core/data``), so the tiktoken oracle runs everywhere.
"""

from __future__ import annotations

import gzip
import importlib
import os
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Property tests see the same examples on every run of the README's test command (derived from
# each test's source): a test that fails only on some random seed would block every later
# landing by chance. HYPOTHESIS_PROFILE=explore searches anew with random seeds and more
# examples; what it finds becomes an @example. No deadline: a loaded machine is not a bug.
settings.register_profile("repeatable", derandomize=True, deadline=None)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPORA = SHARED / "corpora"


def need_shared(path: Path) -> Path:
    """``path`` under ../shared, or a skip (a failure under ``CI=true``) naming what is missing."""
    if not path.exists():
        message = f"{path} not found: ../shared (shared corpora) is only on our machines"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + "; CI must have it", pytrace=False)
        pytest.skip(message)
    return path


def need_module(name: str) -> Any:
    """Import an oracle package (tokenizers, sentencepiece, mistral_common, ...), or skip naming
    it (a failure under ``CI=true``, where ``make test`` installs every one of them)."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        message = f"{name} cannot be imported ({err}); `pip install -e .[dev]` installs it"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + "; CI must have it", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiktoken cache folder holding the genuine encoding files, for tiktoken as the oracle.

    Built from the package's shipped copies (tiktoken checks their SHA-256 itself when it
    reads them), so it needs no network and no ../shared.
    """
    from core.formats.presets import PRESETS, preset_files

    folder = tmp_path_factory.mktemp("tiktoken-cache")
    for name in PRESETS:
        for file in preset_files(name):
            shipped = resources.files("core").joinpath("data", file.shipped).read_bytes()
            (folder / file.cache_name).write_bytes(gzip.decompress(shipped))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return folder


def _read_corpus(name: str) -> str:
    with gzip.open(need_shared(CORPORA / name), "rt", encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture(scope="session")
def docs_en() -> str:
    """All of ../shared/corpora/docs-en.txt.gz (41 MB of English technical docs)."""
    return _read_corpus("docs-en.txt.gz")


@pytest.fixture(scope="session")
def docs_multi() -> str:
    """All of ../shared/corpora/docs-multi.txt.gz (CJK + Italian translations)."""
    return _read_corpus("docs-multi.txt.gz")


@pytest.fixture(autouse=True, scope="session")
def _isolated_library(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Saved tokenizers and stored link texts go to a temp folder, never the user's own library."""
    os.environ["TOKPLAY_LIBRARY_DIR"] = str(tmp_path_factory.mktemp("library"))


@pytest.fixture(autouse=True, scope="session")
def _no_hugging_face_hub(tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reaches the Hugging Face Hub or reads the user's own cache: an empty cache
    folder and an endpoint nothing listens on (not HF_HUB_OFFLINE: huggingface_hub reads it
    once, at import, and tests/test_hub.py needs it online). tests/test_hub.py and the browser
    tests point ``HF_ENDPOINT`` at their local stand-in (tests/hub_stub.py) instead."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE", "HF_HUB_OFFLINE",
                 "TRANSFORMERS_OFFLINE"):
        os.environ.pop(name, None)
    os.environ.update(HF_HOME=str(tmp_path_factory.mktemp("hf-home")),
                      HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_DISABLE_TELEMETRY="1")
    # subtle: huggingface_hub reads HF_HUB_OFFLINE once, when its constants are first
    # imported; read them now, online, so a test that sets HF_HUB_OFFLINE for itself (core.services.hub
    # reads the variable on each call) cannot leave every later test in this worker offline
    import huggingface_hub.constants  # noqa: F401


#: Where `make test-data` puts llama.cpp's tokenizer cases (from the llama-cpp-python sdist).
LLAMA_CPP_DATA = REPO / ".cache" / "test-data" / "llama.cpp"


@pytest.fixture(scope="session")
def llama_cpp_vocabs() -> Path:
    """llama.cpp's ``models/`` folder: ``ggml-vocab-*.gguf`` with their ``.inp``/``.out`` cases.

    A failure, not a skip, when it is missing: `make test` fetches it first (`make test-data`).
    """
    models = LLAMA_CPP_DATA / "models"
    if not any(models.glob("ggml-vocab-*.gguf.out")):
        pytest.fail(
            f"llama.cpp's tokenizer test files are not in {models}: run `make test-data` "
            "(it downloads the llama-cpp-python sdist from PyPI once)",
            pytrace=False,
        )
    return models

"""Shared fixtures: paths to the shared reference data, resolved relative to the repo."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TIKTOKEN_CACHE = SHARED / "tiktoken-cache"
CORPORA = SHARED / "corpora"


@pytest.fixture(scope="session")
def tiktoken_cache() -> Path:
    """Point tiktoken at the genuine encoding files in ../shared/tiktoken-cache (offline)."""
    if not TIKTOKEN_CACHE.is_dir():
        pytest.skip(f"tiktoken reference files not found at {TIKTOKEN_CACHE}")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_CACHE)
    return TIKTOKEN_CACHE


def _read_corpus(name: str) -> str:
    path = CORPORA / name
    if not path.is_file():
        pytest.skip(f"benchmark corpus not found at {path}")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
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

"""core.train.builtin_corpus: a deterministic, download-free corpus from standard-library docstrings."""

from __future__ import annotations

import doctest
import subprocess
import sys

import core.train.builtin_corpus as bc
from core.train.builtin_corpus import (
    BUILTIN_MODULES,
    BUILTIN_SEPARATOR,
    FALLBACK_TEXT,
    builtin_corpus_documents,
    builtin_corpus_text,
    module_document,
)
from core.train import train_bpe


def test_size_and_shape():
    text = builtin_corpus_text()
    size = len(text.encode("utf-8"))
    assert 200_000 < size < 2_000_000
    docs = builtin_corpus_documents()
    assert len(docs) > len(BUILTIN_MODULES) // 2
    assert text == BUILTIN_SEPARATOR.join(docs)
    assert all(d and BUILTIN_SEPARATOR not in d for d in docs)
    text.encode("utf-8")  # always valid UTF-8 (no lone surrogates)


def test_modules_are_sorted_and_unique():
    assert list(BUILTIN_MODULES) == sorted(set(BUILTIN_MODULES))


def test_documents_follow_the_module_order():
    assert builtin_corpus_documents()[0] == module_document(BUILTIN_MODULES[0])
    assert module_document("textwrap").startswith("Text wrapping and filling.")


def test_cached_and_bounded():
    assert builtin_corpus_text() is builtin_corpus_text()
    assert builtin_corpus_text.cache_info().maxsize == 1


def test_deterministic_across_processes():
    code = (
        "import hashlib, core.train.builtin_corpus as b;"
        "print(hashlib.sha256(b.builtin_corpus_text().encode()).hexdigest())"
    )
    import hashlib

    expected = hashlib.sha256(builtin_corpus_text().encode()).hexdigest()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


def test_missing_module_gives_empty_document():
    assert module_document("surely_not_a_module_xyz") == ""


def test_fallback_when_no_module_imports(monkeypatch):
    monkeypatch.setattr(bc, "BUILTIN_MODULES", ("surely_not_a_module_xyz",))
    bc.builtin_corpus_documents.cache_clear()
    try:
        docs = bc.builtin_corpus_documents()
        assert docs == tuple(d.strip() for d in FALLBACK_TEXT.split(BUILTIN_SEPARATOR))
        assert len(docs) == 3 and all(docs)
    finally:
        monkeypatch.undo()
        bc.builtin_corpus_documents.cache_clear()
    assert len(bc.builtin_corpus_documents()) > 3  # back to the real corpus


def test_trains_into_english_merges():
    _, merges = train_bpe([builtin_corpus_text()], 300, [BUILTIN_SEPARATOR])
    tokens = {a + b for a, b in merges}
    assert {b" t", b"he", b" the", b"in"} <= tokens


def test_doctests():
    result = doctest.testmod(bc)
    assert result.failed == 0 and result.attempted > 5

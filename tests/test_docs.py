"""docs/architecture.md's layout is generated from the code (docs/architecture.py): it must
match a fresh generation, so its line counts and module notes never drift."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "docs" / "architecture.py"
_spec = importlib.util.spec_from_file_location("docs_architecture", _PATH)
assert _spec is not None and _spec.loader is not None
architecture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(architecture)


def test_the_architecture_doc_matches_the_code():
    diff = architecture.stale_diff()
    assert not diff, (
        "docs/architecture.md is stale: run python docs/architecture.py to refresh it\n"
        + diff[:6000]
    )


def test_only_the_block_between_the_markers_changes():
    text = f"# Title\n\nprose before\n{architecture.BEGIN}\nold rows\n{architecture.END}\nafter\n"
    new = architecture.with_layout(text, "new rows")
    assert new == (f"# Title\n\nprose before\n{architecture.BEGIN}\n```\nnew rows\n```\n"
                   f"{architecture.END}\nafter\n")
    assert architecture.with_layout(new, "new rows") == new
    with pytest.raises(ValueError, match="lacks the markers"):
        architecture.with_layout("no markers here", "rows")


def test_a_row_says_the_first_sentence_of_the_docstring(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text('"""The :class:`~core.engine.tokenizer.Tokenizer` of ``x.py``, e.g. GPT-2\'s;\n'
                      'it wraps. Second sentence.\n\nSecond paragraph."""\nX = 1\n')
    assert architecture.summary(module) == "The Tokenizer of `x.py`, e.g. GPT-2's; it wraps."
    (tmp_path / "bare.py").write_text("X = 1\n")
    assert architecture.summary(tmp_path / "bare.py") == "(no docstring)"


def test_the_layout_lists_every_module_with_its_line_count():
    rows = architecture.layout().splitlines()
    tokenizer = next(r for r in rows if r.strip().startswith("tokenizer.py"))
    lines = len((architecture.REPO / "core" / "engine" / "tokenizer.py").read_text().splitlines())
    assert tokenizer.split()[1] == str(lines)
    assert any(r.strip().startswith("launch.py") for r in rows)


#: One idea per module: a module that grows past this holds two (issue 26).
MAX_MODULE_LINES = 600


def test_no_module_is_over_the_line_limit():
    """core, training, ui, pages, deploy and benchmarks: every module under 600 lines."""
    root = Path(__file__).resolve().parent.parent
    long = {
        str(path.relative_to(root)): n
        for folder in ("core", "training", "ui", "pages", "deploy", "benchmarks")
        for path in sorted((root / folder).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these by idea: {long}"

"""Speed behind the concepts (issue 37): few modules of core/ choose between the C helpers
(``tokplay_native``, reached through :mod:`core.native`) and pure Python.

Each hot loop has one home that picks C or pure and answers the same either way; every other
module calls that home and never asks whether C was built (as tiktoken keeps its speed in
``CoreBPE``). A module that starts reading ``native`` fails here, by name: call the loop's
home instead, or give the loop a function there.
"""

from __future__ import annotations

import ast
from pathlib import Path

from core import native

CORE = Path(__file__).resolve().parent.parent / "core"

#: The homes, one per loop family, and what each chooses C or pure for.
HOMES = {
    "native.py": "the C modules themselves, and decode's join",
    "engine/bpe.py": "the BPE merge loop and its C tables (tokplay_native.bpe)",
    "engine/vocab_index.py": "a merge list's rank tables (tokplay_native.tables)",
    "pipeline/sentencepiece/packed.py": "SentencePiece's and GGUF's readers, cuts, char map "
    "(tokplay_native.spm, tokplay_native.normalize)",
    "pipeline/models/unigram_lattice.py": "Unigram's search, its vocab columns "
    "(tokplay_native.unigram)",
    "train/merge.py": "training's merge loop (tokplay_native.train)",
    "train/count_table.py": "training's pre-token counts (tokplay_native.count)",
    "engine/pretoken_split.py": "the built-in patterns' pre-token cuts (tokplay_native.pretok)",
}
#: The most modules that may read ``native`` (issue 37 asks for at most 8).
MOST = 8


def _reads_native(tree: ast.AST) -> bool:
    """Whether a module reads the C helpers: a ``native`` name (``from core import native``,
    ``native.bpe``), ``core.native``, a C module imported from it (``from core.native import
    spm``) or any import of ``tokplay_native``. A plain function of core.native (its decode
    join) is a home's function like any other."""
    modules = set(native.status())
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "native":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "native":
            if isinstance(node.value, ast.Name) and node.value.id == "core":
                return True
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
            if "core.native" in names or any(n.startswith("tokplay_native") for n in names):
                return True
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if source.startswith("tokplay_native"):
                return True
            if source == "core" and any(a.name == "native" for a in node.names):
                return True
            if source == "core.native" and any(a.name in modules for a in node.names):
                return True
    return False


def modules_reading_native(root: Path = CORE) -> list[str]:
    """The modules under ``root`` that read the C helpers, as paths relative to it."""
    return sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if path.name == "native.py" or _reads_native(ast.parse(path.read_text(encoding="utf-8")))
    )


def test_few_modules_choose_c_or_pure():
    found = modules_reading_native()
    assert len(found) <= MOST, f"{len(found)} modules read native (at most {MOST}): {found}"
    assert set(found) <= set(HOMES), (
        f"not a home of a hot loop, yet reads native: {sorted(set(found) - set(HOMES))}; "
        "call the loop's home instead (tests/test_speed_homes.py HOMES)"
    )


def test_the_rule_sees_each_way_of_reading_native():
    seen = [
        "from core import native\nnative.bpe",
        "import core.native\ncore.native.spm",
        "from core.native import spm",
        "import tokplay_native.bpe",
        "from tokplay_native import bpe",
    ]
    unseen = [
        "from core.native import join_text\njoin_text([], [])",
        "charsmap.native()",  # (a method of that name is no read of the C helpers)
        "from core.engine.bpe import kept_table",
    ]
    assert [_reads_native(ast.parse(code)) for code in seen] == [True] * len(seen)
    assert [_reads_native(ast.parse(code)) for code in unseen] == [False] * len(unseen)

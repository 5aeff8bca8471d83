"""core must stay UI-free so it can run anywhere (CLI, Pyodide); training and ui's
Streamlit-free modules must import without Streamlit, numpy or pandas (training workers and
tools import them)."""

import ast
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

# A meta-path finder that makes the UI libraries impossible to import in the child process.
_BLOCK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("streamlit", "numpy", "pandas"):
            raise ImportError(f"{name} is blocked in this test")
sys.meta_path.insert(0, _Block())
"""


def test_importing_core_imports_no_ui_library():
    code = "import sys, core; print(sorted(m for m in ('streamlit', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["core", "ui.keys", "ui.limits", "ui.display", "ui.chips",
                                    "ui.charts", "ui.merge_tree", "training.snapshot",
                                    "training.inputs", "training.slots", "training.protocol", "training.manager",
                                    "training.worker", "training.inpage"])
def test_streamlit_free_modules_import_with_ui_libraries_blocked(module):
    code = _BLOCK + f"import {module}; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_blocker_really_blocks():
    code = _BLOCK + "import ui.page"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0 and "blocked in this test" in out.stderr


# ---- the import graph: no circle, TYPE_CHECKING and function-local imports included -------

_REPO = Path(__file__).resolve().parent.parent
#: what the graph covers: the packages, the pages and the entry script
_SOURCES = ("core", "training", "ui", "pages", "app.py")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(nodes: Iterable[ast.AST], where: str) -> Iterator[tuple[ast.AST, str]]:
    """Every import statement in ``nodes``, however deep, with where it runs: ``module
    level``, ``under TYPE_CHECKING`` (type checkers follow it) or ``in a function`` (runs
    on the first call)."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, where
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(node.body, "under TYPE_CHECKING")
            yield from _imports(node.orelse, where)
        else:
            local = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from _imports(ast.iter_child_nodes(node), "in a function" if local else where)


def import_graph(root: Path, sources: Iterable[str] = _SOURCES) -> dict[str, dict[str, str]]:
    """module -> {module it imports: where, e.g. ``core/engine/details.py:33 under TYPE_CHECKING``}.

    Every import in the source counts, wherever it sits; only imports between the modules of
    ``sources`` are kept. ``from core import details`` is an edge to ``core.engine.details``; a name
    imported from a package (``from core import Tokenizer``) is an edge to its ``__init__``.
    """
    files: dict[str, Path] = {}
    for source in sources:
        path = root / source
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            parts = file.relative_to(root).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    graph: dict[str, dict[str, str]] = {}
    for name, file in files.items():
        package = name if file.name == "__init__.py" else name.rpartition(".")[0]
        edges: dict[str, str] = {}
        for node, where in _imports(ast.parse(file.read_text(encoding="utf-8")).body,
                                    "module level"):
            if isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                module = ".".join(p for p in (base, node.module or "") if p)
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in files else module
                           for a in node.names]
            else:
                targets = [a.name for a in node.names]
            for target in targets:
                if target in files and target != name:
                    edges.setdefault(target, f"{file.relative_to(root)}:{node.lineno} {where}")
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """For each group of modules that import each other, the shortest circle through its
    first module (by name), as ``[a, b, ..., a]``."""
    cycles: list[list[str]] = []
    done: set[str] = set()
    for start in sorted(graph):
        group = {m for m in _reachable(graph, start) if start in _reachable(graph, m)}
        if start in done or start not in group:
            continue
        done |= group
        came_from: dict[str, str] = {}
        queue = deque([start])
        while start not in came_from:  # breadth first, back to start
            here = queue.popleft()
            for m in sorted(graph[here]):
                if m in group and m not in came_from:
                    came_from[m] = here
                    queue.append(m)
        path = [came_from[start]]
        while path[-1] != start:
            path.append(came_from[path[-1]])
        cycles.append([start, *reversed(path[:-1]), start])
    return cycles


def _reachable(graph: dict[str, dict[str, str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return seen


def _describe(graph: dict[str, dict[str, str]], cycle: list[str]) -> str:
    steps = [f"  {a} -> {b}  ({graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return " -> ".join(cycle) + "\n" + "\n".join(steps)


#: The most imports ``ui`` may run inside functions. An import at the top tells readers, tools
#: and type checkers what a module needs; one hidden in a function is for a heavy optional
#: library only a rare path needs, or a module the Pyodide build may lack, and says so.
UI_LOCAL_IMPORTS_MAX = 10


def function_local_imports(root: Path, package: str) -> list[str]:
    """``file:line: statement`` of every import inside a function in ``package``; ``(no
    reason given)`` ends those without a comment on their line or the line above."""
    found = []
    for file in sorted((root / package).rglob("*.py")):
        lines = file.read_text(encoding="utf-8").splitlines()
        for node, where in _imports(ast.parse("\n".join(lines)).body, "module level"):
            if where == "in a function":
                line = node.lineno
                said = "#" in lines[line - 1] or lines[line - 2].strip().startswith("#")
                found.append(f"{file.relative_to(root)}:{line}: {ast.unparse(node)}"
                             + ("" if said else "  (no reason given)"))
    return found


def test_ui_imports_at_the_top_with_few_exceptions_each_explained():
    found = function_local_imports(_REPO, "ui")
    listing = "\n".join(found)
    assert len(found) <= UI_LOCAL_IMPORTS_MAX, (
        f"{len(found)} imports inside functions in ui/ (at most {UI_LOCAL_IMPORTS_MAX}): "
        f"move them to the top of their module\n{listing}")
    assert "(no reason given)" not in listing, (
        "say why each import stays inside its function, in a comment on its line or the "
        f"line above:\n{listing}")


def test_function_local_imports_are_found_with_their_reasons(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(
        "import os\n\ndef f():\n    # heavy, and only f needs it\n    import json\n"
        "    from pkg import b  # a circle otherwise\n    import re\n    return json, b, re\n")
    assert function_local_imports(tmp_path, "pkg") == [
        "pkg/a.py:5: import json", "pkg/a.py:6: from pkg import b",
        "pkg/a.py:7: import re  (no reason given)"]


def test_modules_import_each_other_without_a_circle():
    """No import circle among core, training, ui, pages and app.py, counting every import:
    module level, under ``if TYPE_CHECKING:`` (a type checker follows it, and one refactor
    makes it real) and inside functions (it runs on the first call)."""
    graph = import_graph(_REPO)
    cycles = import_cycles(graph)
    assert not cycles, "import circle(s):\n" + "\n".join(_describe(graph, c) for c in cycles)
    assert "core.engine.pickles" in graph["core.engine.tokenizer"]  # the edge that used to loop back


def test_the_import_graph_sees_every_kind_of_import(tmp_path: Path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from pkg.b import B\nA = 1\n")
    (pkg / "b.py").write_text("def f():\n    from pkg import a\n    return a\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from .. import b\nfrom ..sub import d\nimport os\n")
    (pkg / "sub" / "d.py").write_text("import pkg.sub.c\n")
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.a"] == {"pkg.b": "pkg/a.py:3 under TYPE_CHECKING"}
    assert graph["pkg.b"] == {"pkg.a": "pkg/b.py:2 in a function"}
    assert graph["pkg.sub.c"] == {"pkg.b": "pkg/sub/c.py:1 module level",
                                  "pkg.sub.d": "pkg/sub/c.py:2 module level"}
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"],
                                    ["pkg.sub.c", "pkg.sub.d", "pkg.sub.c"]]
    assert "pkg.a -> pkg.b -> pkg.a\n  pkg.a -> pkg.b  (pkg/a.py:3 under TYPE_CHECKING)" in (
        _describe(graph, import_cycles(graph)[0]))


# ---- the layers of core: lower never imports higher -------------------------------------

#: core's packages, lowest first. A module may import its own layer and the ones below it,
#: never one above: the engine knows nothing of file formats, formats nothing of the Hub,
#: training nothing of the command line. (``docs/architecture.md`` draws the same ladder.)
LAYERS = ("chat", "engine", "pipeline", "formats", "explain", "services", "train", "cli")
#: core's top-level modules are the floor every layer stands on: they import no package of
#: core, except ``interface``, which names the types its protocols return (under
#: TYPE_CHECKING only, so it never runs an import upward).
FLOOR = ("errors", "native", "interface", "paths")
#: the public API and ``python -m core``, above everything
TOP = ("core", "core.__main__")


def _layer(module: str) -> int:
    parts = module.split(".")
    if module in TOP:
        return len(LAYERS)
    if parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    assert parts[1] in FLOOR, f"{module} is in no layer: add it to LAYERS or FLOOR"
    return -1


def layer_violations(graph: dict[str, dict[str, str]]) -> list[str]:
    """Every import that climbs: a layer importing a higher one, or the floor importing a
    layer (``interface`` may, under TYPE_CHECKING)."""
    found = []
    for module, edges in sorted(graph.items()):
        if not module.startswith("core"):
            continue
        for target, where in sorted(edges.items()):
            if not target.startswith("core"):
                continue
            low, high = _layer(module), _layer(target)
            types_only = module == "core.interface" and "TYPE_CHECKING" in where
            if high > low and not types_only:
                found.append(f"{module} -> {target}  ({where})")
    return found


def test_core_is_layered_lower_never_importing_higher():
    violations = layer_violations(import_graph(_REPO, ["core"]))
    assert not violations, "imports that climb a layer:\n" + "\n".join(violations)


def test_the_layer_check_sees_a_climb():
    graph = {"core.engine.bpe": {"core.formats.gguf": "core/engine/bpe.py:3 in a function"},
             "core.errors": {"core.engine.bpe": "core/errors.py:1 module level"},
             "core.interface": {"core.engine.details": "core/interface.py:9 under TYPE_CHECKING"},
             "core.train.count": {"core.engine.bpe": "core/train/count.py:5 module level"}}
    assert layer_violations(graph) == [
        "core.engine.bpe -> core.formats.gguf  (core/engine/bpe.py:3 in a function)",
        "core.errors -> core.engine.bpe  (core/errors.py:1 module level)"]


def test_core_keeps_at_most_twelve_top_level_modules():
    modules = sorted(p.name for p in (_REPO / "core").glob("*.py"))
    assert len(modules) <= 12, modules
    assert {p.removesuffix(".py") for p in modules} <= {*FLOOR, "__init__", "__main__"}


def private_imports(root: Path, sources: Iterable[str] = _SOURCES) -> list[str]:
    """``from <our module> import _name``: a module reaching into another's private names
    (the name is private to the module that defines it; make it public or move the code)."""
    found = []
    for source in sources:
        path = root / source
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.ImportFrom) and node.module
                        and node.module.split(".")[0] in ("core", "ui", "training")):
                    found += [f"{file.relative_to(root)}:{node.lineno} {node.module}.{a.name}"
                              for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names(tmp_path: Path):
    assert private_imports(_REPO) == []
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "a.py").write_text("from core.b import _hidden, shown\n")
    assert private_imports(tmp_path, ["core"]) == ["core/a.py:1 core.b._hidden"]

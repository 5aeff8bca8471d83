"""core must stay UI-free so it can run anywhere (CLI, Pyodide); ui's Streamlit-free modules
must import without Streamlit, numpy or pandas (training workers and tools import them)."""

import subprocess
import sys

import pytest

# A meta-path finder that makes the UI libraries impossible to import in the child process.
_BLOCK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("streamlit", "plotly", "numpy", "pandas"):
            raise ImportError(f"{name} is blocked in this test")
sys.meta_path.insert(0, _Block())
"""


def test_importing_core_imports_no_ui_library():
    code = "import sys, core; print(sorted(m for m in ('streamlit', 'plotly') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["core", "ui.keys", "ui.limits", "ui.display", "ui.chips",
                                    "ui.charts", "ui.jobs",
                                    "ui.training_worker"])
def test_streamlit_free_modules_import_with_ui_libraries_blocked(module):
    code = _BLOCK + f"import {module}; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_blocker_really_blocks():
    code = _BLOCK + "import ui.page"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0 and "blocked in this test" in out.stderr


def _core_import_graph():
    """module -> the core modules it imports at module level (TYPE_CHECKING blocks aside)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    graph = {}
    for path in sorted((root / "core").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        deps = set()
        for node in ast.parse(path.read_text()).body:  # module level only
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("core"):
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("core"))
        graph[name] = deps
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def test_core_modules_import_each_other_without_a_cycle():
    """Each module's imports sit at its top, and they form no circle (the package __init__
    files, which only re-export, are left out: every module imports them first anyway)."""
    graph = {m: deps - {"core", "core.formats"} for m, deps in _core_import_graph().items()
             if m not in ("core", "core.formats")}
    seen, done = set(), set()

    def visit(m, path):
        assert m not in seen or m in done, "import cycle: " + " -> ".join(path + [m])
        if m in done:
            return
        seen.add(m)
        for d in sorted(graph[m]):
            visit(d, path + [m])
        done.add(m)

    for m in sorted(graph):
        visit(m, [])
    assert "core.formats.pickles" in graph["core.tokenizer"]  # the edge that used to loop back

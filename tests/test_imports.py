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


@pytest.mark.parametrize("module", ["core", "ui.keys", "ui.limits", "ui.chips", "ui.jobs", "ui.training_worker"])
def test_streamlit_free_modules_import_with_ui_libraries_blocked(module):
    code = _BLOCK + f"import {module}; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_blocker_really_blocks():
    code = _BLOCK + "import ui.page"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0 and "blocked in this test" in out.stderr

"""core must stay UI-free so it can run anywhere (CLI, Pyodide)."""

import subprocess
import sys


def test_importing_core_imports_no_ui_library():
    code = "import sys, core; print(sorted(m for m in ('streamlit', 'plotly') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

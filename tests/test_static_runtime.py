"""The static build's code paths, run in CPython as Pyodide would run them (offline).

``tests/static_runtime_driver.py`` runs every page through AppTest in a fresh interpreter with
``sqlite3`` and ``_multiprocessing`` unimportable and the app unable to start threads, as in
Pyodide, and ``TOKPLAY_RUNTIME=browser`` (``ui.runtime``). It does so twice: on this
Streamlit, and on the Streamlit the pinned stlite bundles (1.62, in a venv made under
``.cache`` on first use that reuses this venv's other packages), so an API the static build's Streamlit lacks fails here, not in a
visitor's tab. What each run must show:

- every page opens with no exception and no error;
- a training runs in the page (``training.inpage``) to the merges ``train_bpe`` learns, with its
  downloads, and says there is no library; the URL carries no ``ws=``;
- Tokenize then shows the IDs core's encode gives with that tokenizer;
- every file of the repository the app imported or opened is in the bundle
  (``deploy.static.bundle_files``): nothing the browser needs is left out of ``app.zip``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from core.train.builtin_corpus import BUILTIN_SEPARATOR, builtin_corpus_text
from core.train import train_bpe
from tests.conftest import REPO
from tests.test_pyodide import _skip_or_fail

pytestmark = pytest.mark.xdist_group("static-runtime")

DRIVER = REPO / "tests" / "static_runtime_driver.py"
STLITE_STREAMLIT = "1.62.0"  # the wheel @stlite/browser 1.9.2 ships (deploy/static.py)
OLD_VENV = REPO / ".cache" / f"streamlit-{STLITE_STREAMLIT}"


def _load_static():
    import importlib.util

    spec = importlib.util.spec_from_file_location("deploy_static", REPO / "deploy" / "static.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Run in the old venv: the requirements of its Streamlit that no package on its path meets
#: under any version (a version outside Streamlit's pins is fine: see _old_streamlit_python).
_MISSING = """
import importlib.metadata as md
from packaging.requirements import Requirement
for line in md.requires("streamlit") or []:
    req = Requirement(line)
    if req.marker is None or req.marker.evaluate({"extra": ""}):
        try:
            md.version(req.name)
        except md.PackageNotFoundError:
            req.marker = None
            print(req)
"""


def _old_streamlit_python() -> Path:
    """A venv with stlite's Streamlit version, made once, that reuses this venv's packages.

    Only Streamlit itself and what it needs that this venv lacks are installed there (37 MB
    in a few seconds; a full install is 554 MB): Streamlit's API is what is checked here.
    Its pins on pyarrow, pillow and the like are not what the static build runs either
    (stlite brings Pyodide's own builds of them), so this venv's versions of them serve.
    """
    python = OLD_VENV / "bin" / "python"
    marker = OLD_VENV / ".installed"
    here = sysconfig.get_paths()["purelib"]
    # made again when this venv's packages change (what the old venv lacked may differ)
    ours = hashlib.sha256(" ".join(sorted(f"{d.name}=={d.version}" for d in
                                          importlib.metadata.distributions())).encode())
    recipe = f"streamlit=={STLITE_STREAMLIT} over {here} {ours.hexdigest()[:16]}"
    if marker.is_file() and marker.read_text() == recipe:
        return python
    static = _load_static()
    run = {"check": True, "capture_output": True, "text": True, "timeout": 900}
    # this venv's pip drives the old venv's python (pip >= 22.3): no pip copied in there
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    try:
        venv.create(OLD_VENV, with_pip=False, clear=True)
        there = subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"], **run).stdout.strip()
        # subtle: a .pth line puts this venv's packages on the old venv's path *after* its
        # own, so its Streamlit 1.62 wins over our 1.67
        (Path(there) / "reuse-test-venv.pth").write_text(here + "\n", encoding="utf-8")
        subprocess.run([*pip, "--no-deps", f"streamlit=={STLITE_STREAMLIT}"], **run)
        missing = subprocess.run([str(python), "-c", _MISSING], **run).stdout.split("\n")
        subprocess.run([*pip, *static.REQUIREMENTS, *filter(None, missing)], **run)
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", "") or str(err)
        _skip_or_fail(f"cannot install streamlit=={STLITE_STREAMLIT} from PyPI: "
                      f"{detail.strip().splitlines()[-1] if detail.strip() else err}")
    marker.write_text(recipe)
    return python


def _run_driver(python: Path, tmp_path: Path) -> dict:
    out = tmp_path / "report.json"
    home = tmp_path / "home"
    home.mkdir()
    # a user's environment: no TOKPLAY_* settings, no TIKTOKEN_CACHE_DIR (the presets come
    # from the files bundled in core/data), an empty HOME
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "PYTHONPATH": str(REPO),
           "LANG": "C.UTF-8"}
    proc = subprocess.run([str(python), str(DRIVER), str(out)], check=False, cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def expected() -> dict:
    vocab, merges = train_bpe([builtin_corpus_text()], 600, [BUILTIN_SEPARATOR])
    return {"vocab": vocab, "merges": merges}


def _check(report: dict, expected: dict) -> None:
    assert report["threads_blocked"] and report["training_in_page"]
    assert report["pages"] == {page: [] for page in report["pages"]}
    assert len(report["pages"]) == 1 + len(list((REPO / "pages").glob("*.py")))

    train = report["train"]
    assert train["problems"] == []
    assert report["core"]["merges"] == len(expected["merges"]) == 343
    assert train["metrics"]["Merges"] == "343"
    assert train["metrics"]["Vocab size"] == "600"
    assert {"vocab.pkl", "merges.pkl", "tokenizer.json"} <= set(train["downloads"])
    assert any("no library" in c for c in train["captions"])
    assert "ws" not in train["query"]

    tok = report["tokenize"]
    assert tok["problems"] == []
    ids = report["core"]["ids"]  # core's train_bpe + encode in the same Python
    assert ", ".join(map(str, ids)) in tok["codes"]
    assert tok["metrics"]["Tokens"] == str(len(ids))
    assert "ws" not in tok["query"]

    bundled = set(_load_static().bundle_files(REPO))
    used = set(report["repo_files"])
    assert {"app.py", "training/inpage.py", "core/train/__init__.py", "core/data/gpt2-vocab.bpe.gz",
            ".streamlit/config.toml"} <= used  # the tracing saw imports and opened files
    assert used - bundled == set(), "files the app used that app.zip lacks"


def test_static_paths_on_this_streamlit(tmp_path, expected):
    report = _run_driver(Path(sys.executable), tmp_path)
    _check(report, expected)


def test_static_paths_on_stlites_streamlit(tmp_path, expected):
    python = _old_streamlit_python()
    report = _run_driver(python, tmp_path)
    assert report["streamlit"] == STLITE_STREAMLIT
    _check(report, expected)


def test_stlite_pin_matches_the_streamlit_tested_here():
    """Upgrading @stlite/browser must come with this test's Streamlit version."""
    static = _load_static()
    assert static.STLITE_VERSION == "1.9.2" and STLITE_STREAMLIT == "1.62.0"

"""Run the playground's pages as the static build runs them, in CPython: a driver for
tests/test_static_runtime.py (run by path, in a fresh interpreter: ``python
tests/static_runtime_driver.py OUT.json``).

What Pyodide lacks is made missing here before anything is imported: ``sqlite3`` and
``_multiprocessing`` cannot be imported, and code of the app (``core``, ``training``, ``ui``,
the pages) cannot start a thread (Pyodide: "can't start new thread"; Streamlit's own threads
still run, as AppTest needs them). ``TOKPLAY_RUNTIME=browser`` turns on the static build's paths
(``ui.runtime``). Then every page runs through AppTest, a training runs in the page to its
end, Tokenize uses the result, and the driver writes what it saw to OUT.json, including
every file of the repository the app imported or opened (the bundle must hold them all).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_APP_DIRS = tuple(str(REPO / d) + os.sep for d in ("core", "training", "ui", "pages"))
_opened: set[str] = set()


def _started_by_app() -> bool:
    """True when the code starting the thread is the app's (not Streamlit's own: its
    spinner timers run as asyncio tasks in stlite, and AppTest needs its threads)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") == "threading":
        frame = frame.f_back  # Timer.start and friends: look at who called them
    if frame is None:
        return False
    name = frame.f_code.co_filename
    return name.startswith(_APP_DIRS) or name == str(REPO / "app.py")


def _audit(event: str, args: tuple) -> None:
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.abspath(os.fsdecode(args[0]))
        if path.startswith(str(REPO) + os.sep):
            _opened.add(path)


def like_pyodide() -> None:
    """Make this interpreter lack what Pyodide lacks, before the app is imported (only when
    run as a script: pytest's doctest collection imports this module too)."""
    os.environ["TOKPLAY_RUNTIME"] = "browser"
    for name in ("sqlite3", "_sqlite3", "_multiprocessing"):
        sys.modules[name] = None  # type: ignore[assignment]  # "import sqlite3" -> ImportError
    start = threading.Thread.start

    def guarded_start(self: threading.Thread) -> None:
        if _started_by_app():
            raise RuntimeError("can't start new thread")  # Pyodide's words
        start(self)

    threading.Thread.start = guarded_start  # type: ignore[method-assign]
    sys.addaudithook(_audit)
    sys.path.insert(0, str(REPO))
    os.chdir(REPO)


PAGES = ["app.py", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "pages").glob("*.py"))]


def _problems(at: Any) -> list[str]:
    return [str(e.value)[:300] for e in at.exception] + [str(e.value)[:300] for e in at.error]


def main(out: str) -> None:
    import streamlit
    from streamlit.testing.v1 import AppTest

    from tests.copy_lines import copied
    from tests.stats import stats
    from ui import runtime

    report: dict = {"streamlit": streamlit.__version__, "pages": {},
                    "threads_blocked": not runtime.can_start_threads(),
                    "training_in_page": runtime.training_in_page()}
    for page in PAGES:
        at = AppTest.from_file(str(REPO / page), default_timeout=120)
        at.run()
        report["pages"][page] = _problems(at)

    # Train in the page: built-in corpus, vocab 600, then Tokenize with the result
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/1_Train.py").run()
    at.number_input[0].set_value(600)
    at.button(key="train.start").click().run()
    runs = 0
    while not any(m.label == "Merges" for m in stats(at)) and runs < 200 and not _problems(at):
        at.run()  # each run polls the status fragment: one slice of training
        runs += 1
    report["train"] = {
        "problems": _problems(at), "runs": runs,
        "metrics": {m.label: m.value for m in stats(at)},
        "captions": [c.value for c in at.caption],
        "downloads": sorted(b.proto.label for b in at.get("download_button")),
        "query": dict(at.query_params),
    }
    # what core learns and encodes here: the built-in corpus is the docstrings of the
    # standard-library modules this Python can import, so it differs from one Python to
    # another (and without sqlite3 or _multiprocessing, as in Pyodide)
    from core import Tokenizer, builtin_corpus_text, train_bpe
    from core.train.builtin_corpus import BUILTIN_SEPARATOR

    text = "Tokenizers don't see words: they see merged bytes. naïve café ☕"
    vocab, merges = train_bpe([builtin_corpus_text()], 600, [BUILTIN_SEPARATOR])
    report["core"] = {"merges": len(merges),
                      "ids": Tokenizer(vocab, merges, [BUILTIN_SEPARATOR]).encode(text)}
    at.switch_page("pages/2_Tokenize.py").run()
    at.text_area[0].set_value(text).run()
    report["tokenize"] = {"problems": _problems(at), "text": text,
                          # the copy lines: st.code where st.html runs no script (ui.copy_line)
                          "codes": [c.value for c in at.code] + copied(at),
                          "metrics": {m.label: m.value for m in stats(at)},
                          "query": dict(at.query_params)}

    files = {os.path.abspath(m.__file__) for m in list(sys.modules.values())
             if getattr(m, "__file__", None)}
    # the app's own files: its folders and config (not the venv, caches or byte code)
    mine = ("app.py", "pages/", "ui/", "training/", "core/", ".streamlit/", "assets/")
    report["repo_files"] = sorted(
        rel for rel in (Path(p).relative_to(REPO).as_posix() for p in files | _opened
                        if p.startswith(str(REPO) + os.sep))
        if rel.startswith(mine) and "__pycache__" not in rel)
    Path(out).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    like_pyodide()
    main(sys.argv[1])

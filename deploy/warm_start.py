"""``streamlit run`` that warms the caches as soon as the server is up (``make run``, ``make
serve``): ``python deploy/warm_start.py run deploy/asgi.py [streamlit options]`` (or
``run app.py``).

It is Streamlit's own command line (``streamlit.web.cli``) in this process, plus a thread
that waits for Streamlit's runtime and then runs :func:`ui.serving.warm` there: imports,
presets, baselines. Without it the first visitor of each page waits for them (2-12 s per page
on a fresh process); with it they are loaded while nobody is waiting yet. The server answers
meanwhile (the warm-up shares its GIL, so the very first runs are a little slower).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: deploy/ is on the path, the repo is not
    sys.path.insert(0, str(REPO))

#: How long the warm-up waits for Streamlit's runtime to exist, in seconds.
RUNTIME_WAIT_S = 120.0
THREAD_NAME = "tokplay-warm-up"
#: Streamlit's logger that warns when a cached function runs outside a page run (it would
#: show a spinner): expected here, and said once per cached call.
CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


def _not_from_warm_up(record: logging.LogRecord) -> bool:
    return record.threadName != THREAD_NAME


def warm_when_up(wait_s: float = RUNTIME_WAIT_S) -> None:
    """Wait for Streamlit's runtime (the caches must be its own), then warm them; says on
    stderr how long it took and what failed."""
    from streamlit import runtime

    deadline = time.monotonic() + wait_s
    while not runtime.exists():
        if time.monotonic() > deadline:
            print("warm-up skipped: Streamlit's runtime did not start", file=sys.stderr)
            return
        time.sleep(0.1)
    from ui import serving

    logging.getLogger(CONTEXT_LOGGER).addFilter(_not_from_warm_up)
    t0 = time.perf_counter()
    problems = serving.warm()
    serving.freeze_heap()
    note = f"; failed: {'; '.join(problems)}" if problems else ""
    print(f"warm-up done in {time.perf_counter() - t0:.1f} s{note}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> None:
    """Streamlit's command line with ``argv`` (``run deploy/asgi.py ...``), warming in a thread."""
    from streamlit.web import cli

    threading.Thread(target=warm_when_up, name=THREAD_NAME, daemon=True).start()
    sys.argv = ["streamlit", *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])

"""Starting worker processes from inside an app: the one place that swaps ``__main__``, and
that picks how processes start (:func:`pool_context`).

subtle: ``spawn`` and ``forkserver`` children first re-import the parent's ``__main__``. Under
Streamlit the script thread sets ``sys.modules["__main__"]`` to the *page being run* (and in
pytest, after an AppTest, it still is one), so a child would run the page again: a second app
inside a counting or training worker. Workers need only their own module, so processes are
started while ``__main__`` is a bare stand-in.

>>> import sys
>>> with plain_main():
...     sys.modules["__main__"].__dict__.get("__file__") is None
True
"""

from __future__ import annotations

import os
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["plain_main", "pool_context", "single_threaded"]

# Re-entrant: a block that starts processes may call code that starts more. One lock for the
# whole process, because sys.modules is shared by every thread (every Streamlit session).
_MAIN_SWAP_LOCK = threading.RLock()


@contextmanager
def plain_main() -> Iterator[None]:
    """Give processes started in this block an empty ``__main__``; restore it afterwards."""
    with _MAIN_SWAP_LOCK:
        saved = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if saved is not None:
                sys.modules["__main__"] = saved
            else:
                del sys.modules["__main__"]


def single_threaded() -> bool:
    """True when this process runs exactly one thread, counting threads that C extensions
    started (Linux only: it reads ``/proc/self/task``; False wherever that cannot be seen).

    >>> isinstance(single_threaded(), bool)
    True
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def pool_context(*, preload: Sequence[str] = ()) -> Any:
    """The ``multiprocessing`` context for a short-lived pool of workers.

    ``fork`` where it is safe: Linux, and this process has one thread (a command line, a
    script). A forked child starts in ~20 ms with everything already imported, where a
    ``forkserver`` first takes 0.3-0.7 s to start (once per process). Elsewhere
    ``forkserver`` (any POSIX: the app calls from a threaded server, where fork can deadlock)
    preloading ``preload``, and ``spawn`` on Windows. Raises ImportError, OSError or
    ValueError where this Python cannot make processes (Pyodide); callers fall back.

    >>> pool_context().get_start_method() in ("fork", "forkserver", "spawn")
    True
    """
    import multiprocessing

    if os.name == "nt":
        return multiprocessing.get_context("spawn")
    if single_threaded():
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver")
    if preload:
        ctx.set_forkserver_preload(list(preload))
    return ctx

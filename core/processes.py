"""Starting worker processes from inside an app: the one place that swaps ``__main__``.

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

import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["plain_main"]

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

"""Training slots shared by every server process on the host: lock files held with ``flock``."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["TrainingSlots"]


class TrainingSlots:
    """At most ``n`` trainings at once across every process that uses the same ``folder``.

    Each slot is a lock file (``slot-0.lock`` ...) held with ``flock`` while a training runs
    in it. The kernel releases the lock when its process ends, however it ends, so a crashed
    server never leaves a slot taken. ``make serve WORKERS=N`` runs N Streamlit processes that
    share the library folder, and so these slots. Where ``fcntl`` does not exist (Windows),
    the limit is per process.

    >>> import tempfile
    >>> a, b = TrainingSlots(tempfile.mkdtemp(), 1), None
    >>> b = TrainingSlots(a.folder, 1)
    >>> held = a.try_acquire(); held is not None, b.try_acquire()
    (True, None)
    >>> a.release(held); b.try_acquire() is not None
    True
    """

    def __init__(self, folder: str | os.PathLike[str], n: int) -> None:
        self.folder = os.fspath(folder)
        self.n = max(1, int(n))

    def try_acquire(self) -> Any | None:
        """A held slot (pass it to :meth:`release`), or None when all ``n`` are taken."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: only the per-process limit
            return object()
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError:
            return object()  # no shared folder: fall back to the per-process limit
        for i in range(self.n):
            try:
                fh = open(os.path.join(self.folder, f"slot-{i}.lock"), "a+b")  # noqa: SIM115
            except OSError:
                continue
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                continue
            return fh
        return None

    @staticmethod
    def release(slot: Any) -> None:
        """Give a slot back (closing the file drops its lock)."""
        close = getattr(slot, "close", None)
        if close is not None:
            try:
                close()
            except OSError:
                pass

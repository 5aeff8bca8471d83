"""Progress bars for the command line, drawn by tqdm on stderr.

tqdm is a dependency of the command line only: it is imported when a bar is first drawn, so
the rest of core (and Pyodide) never needs it. Core reports progress through callbacks; the
classes here are such callbacks.

>>> bar = ByteBar(total=10, desc="x", enabled=False)
>>> bar(4); bar(10); bar.close()
"""

from __future__ import annotations

import sys
from typing import Any

from core.errors import PlaygroundError

__all__ = ["ByteBar", "PhaseBars"]


def _tqdm(**kwargs: Any) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        raise PlaygroundError(
            "the progress bar needs the tqdm package: pip install tqdm (or pass --quiet)"
        ) from None
    return tqdm(file=sys.stderr, mininterval=0.1, dynamic_ncols=True, **kwargs)


class ByteBar:
    """``bar(done)``: the bytes done so far, of ``total`` (None: unknown, a count only). The
    bar appears with the first progress, so input refused at once leaves none."""

    def __init__(self, *, total: int | None, desc: str, enabled: bool = True) -> None:
        self._settings = {"total": total, "desc": desc}
        self._enabled = enabled
        self._bar: Any = None

    def __call__(self, done: int) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            # leave=False: the bar is wiped when done, so an error that stops it stands alone
            self._bar = _tqdm(unit="B", unit_scale=True, unit_divisor=1000, leave=False,
                              **self._settings)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        """End the bar's line (also before an error message)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class PhaseBars:
    """``bars(phase, done, total)``: one bar per phase (training: ``counting`` then
    ``merging``), each closed when the next begins."""

    _UNITS = {"merging": "merge"}

    def __init__(self) -> None:
        self._phase: str | None = None
        self._bar: Any = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self._phase:
            self.close()
            self._phase = phase
            self._bar = _tqdm(total=total, desc=f"{phase:<9}", unit=self._UNITS.get(phase, "B"),
                              unit_scale=phase != "merging")
        self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        """End the current bar's line (once)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._phase = None

"""Settings shared by the pages' plotly charts: plain layout dicts (no plotly or Streamlit
import).

>>> integer_axis(257, 258)["dtick"]
1
"""

from __future__ import annotations

from typing import Any

__all__ = ["integer_axis"]


def integer_axis(low: float, high: float, *, max_ticks: int = 8) -> dict[str, Any]:
    """Plotly axis settings with ticks on whole numbers only, for integer quantities (vocab
    sizes, merge ranks, token lengths, counts): plotly's own ticks fall on fractions such as
    257.2 when the range is small.

    The step is the smallest of 1, 2, 5, 10, 20, 50, ... that gives at most ``max_ticks``
    ticks between ``low`` and ``high``.

    >>> integer_axis(0, 3)
    {'tick0': 0, 'dtick': 1, 'tickformat': ',d'}
    >>> integer_axis(256, 2000)["dtick"], integer_axis(0, 50_000)["dtick"]
    (500, 10000)
    """
    span = max(high - low, 1)
    step, scale = 1, 1
    while span / step > max_ticks:
        for factor in (2, 5, 10):
            step = factor * scale
            if span / step <= max_ticks:
                break
        scale *= 10
    return {"tick0": 0, "dtick": step, "tickformat": ",d"}

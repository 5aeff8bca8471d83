"""Where the marks on a chart's axis go: whole numbers 1, 2, 5 steps apart for counts and
sizes (no tick at 257.2 or 2.5 bytes), round numbers for reals, powers of ten on a log axis,
and short labels for big values. Pure functions; :mod:`ui.charts` draws with them.

>>> integer_ticks(257, 258), compact(25_000)
([257, 258], '25k')
"""

from __future__ import annotations

import math

__all__ = ["compact", "integer_ticks", "log_ticks", "nice_ticks", "tick_step"]



def tick_step(span: float, *, max_ticks: int = 8) -> int:
    """The whole-number step between ticks of an integer quantity (vocab sizes, merge numbers,
    token lengths, counts): the smallest of 1, 2, 5, 10, 20, 50, ... that cuts ``span`` in
    at most ``max_ticks`` steps (no tick at 257.2 or 2.5 bytes).

    >>> tick_step(3), tick_step(1744), tick_step(50_000)
    (1, 500, 10000)
    """
    span = max(span, 1)
    step, scale = 1, 1
    while span / step > max_ticks:
        for factor in (2, 5, 10):
            step = factor * scale
            if span / step <= max_ticks:
                break
        scale *= 10
    return step


def integer_ticks(low: float, high: float, *, max_ticks: int = 8) -> list[int]:
    """Whole-number ticks covering ``low`` to ``high``, a :func:`tick_step` apart, from a
    multiple of the step to the next one past ``high`` (the axis's ends).

    >>> integer_ticks(0, 3)
    [0, 1, 2, 3]
    >>> integer_ticks(1, 143)
    [0, 20, 40, 60, 80, 100, 120, 140, 160]
    """
    step = tick_step(high - low, max_ticks=max_ticks)
    first = math.floor(low / step) * step
    last = max(math.ceil(high / step) * step, first + step)
    return list(range(first, last + 1, step))


def nice_ticks(low: float, high: float, *, max_ticks: int = 6) -> list[float]:
    """Ticks for a real quantity (seconds, bytes per token): 1, 2 or 5 times a power of ten
    apart, at most about ``max_ticks`` steps, from ``low`` to ``high`` rounded out.

    >>> nice_ticks(0, 4.31)
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    >>> nice_ticks(1.02, 1.31)
    [1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35]
    """
    span = high - low if high > low else (abs(high) or 1.0)
    raw = span / max_ticks
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(f * magnitude for f in (1, 2, 5, 10) if f * magnitude >= raw * (1 - 1e-9))
    digits = max(0, -math.floor(math.log10(step) + 1e-9))
    first = math.floor(low / step + 1e-9)
    last = max(math.ceil(high / step - 1e-9), first + 1)
    return [round(i * step, digits) for i in range(first, last + 1)]


def log_ticks(low: float, high: float, *, max_ticks: int = 7) -> list[float]:
    """Ticks for a log axis from ``low`` to ``high`` (both above 0): 1, 2 and 5 times the
    powers of ten between them, or only the powers of ten (every one, then every other)
    when those are too many.

    >>> log_ticks(3, 40)
    [5.0, 10.0, 20.0]
    >>> log_ticks(200, 120_000)
    [1000.0, 10000.0, 100000.0]
    """
    ticks: list[float] = []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for factors, every in (((1, 2, 5), 1), ((1,), 1), ((1,), 2), ((1,), 3)):
        ticks = [f * 10.0 ** e for e in range(first, last + 1) if e % every == 0
                 for f in factors if low <= f * 10.0 ** e <= high]
        if len(ticks) <= max_ticks:
            break
    return ticks


def compact(value: float) -> str:
    """A short tick label: thousands as ``k``, millions as ``M``.

    >>> compact(500), compact(2000), compact(1_500_000), compact(0.5)
    ('500', '2k', '1.5M', '0.5')
    """
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"

"""A cell's figures and how they are printed: the markdown table and the server log's count.

A cell is one page, a number of trainings and a number of sessions; its row gives the reruns
per second, p50 and p95 latency, errors, the CPU the client and the server used, and the
server's CPU per rerun.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Cell", "fmt", "format_table", "percentile", "report_server_log"]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no values.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([1.0, 2.0, 3.0, 4.0], 95)
    (2.0, 4.0)
    """
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


@dataclass
class Cell:
    """One measurement: a page, a number of trainings and of sessions."""

    page: str
    trainings: int
    sessions: int
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    elapsed_s: float = 0.0
    client_cpu: float = float("nan")  # share of one core, percent
    server_cpu: float = float("nan")
    messages: list[str] = field(default_factory=list)  # distinct error messages

    @property
    def rate(self) -> float:
        """Reruns per second that showed what they should."""
        return len(self.latencies_ms) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def cpu_ms_per_rerun(self) -> float:
        """Server CPU per rerun, in ms (its CPU seconds over the reruns): less noisy than the
        latencies on a shared machine; nan without a server CPU figure or a rerun.

        >>> Cell("Tokenize", 0, 1, [50.0] * 20, 0, 2.0, 3.0, 40.0).cpu_ms_per_rerun
        40.0
        """
        if not self.latencies_ms or math.isnan(self.server_cpu):
            return float("nan")
        return 10 * self.server_cpu * self.elapsed_s / len(self.latencies_ms)


def fmt(value: float, spec: str) -> str:
    """``value`` in ``spec``, or ``-`` for nan (no figure).

    >>> fmt(80.4, '.0f'), fmt(float('nan'), '.0f')
    ('80', '-')
    """
    return "-" if math.isnan(value) else format(value, spec)


def format_table(cells: list[Cell]) -> str:
    """The markdown table of ``cells``.

    >>> print(format_table([Cell("Tokenize", 0, 1, [80.0, 90.0], 0, 2.0)]))
    | page | trainings | sessions | reruns/s | p50 ms | p95 ms | errors | reruns | client CPU % | server CPU % | server CPU ms/rerun |
    |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
    | Tokenize | 0 | 1 | 1.0 | 80 | 90 | 0 | 2 | - | - | - |
    """
    lines = [
        ("| page | trainings | sessions | reruns/s | p50 ms | p95 ms | errors | reruns "
         "| client CPU % | server CPU % | server CPU ms/rerun |"),
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.page} | {c.trainings} | {c.sessions} | {c.rate:.1f} "
            f"| {fmt(percentile(c.latencies_ms, 50), ',.0f')} "
            f"| {fmt(percentile(c.latencies_ms, 95), ',.0f')} | {c.errors} "
            f"| {len(c.latencies_ms)} | {fmt(c.client_cpu, '.0f')} | {fmt(c.server_cpu, '.0f')} "
            f"| {fmt(c.cpu_ms_per_rerun, '.1f')} |"
        )
    return "\n".join(lines)


def report_server_log(log: Path | None) -> int:
    """Print how many tracebacks the server logged (and the last line of the first)."""
    if log is None or not log.exists():
        return 0
    lines = log.read_text(errors="replace").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        print("server log: no tracebacks")
        return 0
    end = starts[0] + 1
    while end < len(lines) and lines[end].startswith((" ", "\t")):
        end += 1
    last = lines[end] if end < len(lines) else ""
    print(f"server log: {len(starts)} traceback(s); the first ends with: {last[:300]}")
    return len(starts)

"""Sections 1 and 2 exactly as LatencyPrism's compare script writes them (``--seed-compatible``).

Why a separate module: users check us side by side against the report they know, so in this
mode the summary and the rank table must match theirs character for character, mixed number
formats included (see :func:`perfdiff.report.table.seed_pipe_table`). Everywhere else we use
our one number format (:mod:`perfdiff.report.format`).

Times are microseconds here, as in the seed. ``cycle_ms_*`` values are converted with
``round(ms * 1000, 6)`` so that a duration recorded as 1001081.25 us prints as such and not as
1001081.2499999999 after the ms round trip.
"""

from __future__ import annotations

from perfdiff.analysis.model import Comparison, SideSummary
from perfdiff.report.table import Cell, seed_pipe_table

MISSING = "-"


def _us(ms: float) -> float:
    return round(ms * 1000.0, 6)


def _mean_us(side: SideSummary) -> float:
    if side.cycle_ms_desc:
        return sum(_us(v) for v in side.cycle_ms_desc) / len(side.cycle_ms_desc)
    return _us(side.cycle_ms_mean)


def seed_summary_section(comparison: Comparison) -> str:
    """``## 1. High-Level Performance Summary`` in the seed's layout."""
    normal, abnormal = comparison.normal, comparison.abnormal
    mean_n, mean_a = _mean_us(normal), _mean_us(abnormal)
    delta = mean_a - mean_n
    change = f"{delta / mean_n * 100:+.2f}%" if mean_n else MISSING
    headers = ["Metric", normal.label, abnormal.label,
               f"Δ ({abnormal.label} - {normal.label})", "Change (%)"]
    rows: list[list[Cell]] = [
        ["Total Cycles", str(normal.n_cycles), str(abnormal.n_cycles),
         str(abnormal.n_cycles - normal.n_cycles), MISSING],
        ["Avg Cycle Time (us)", f"{mean_n:,.2f}", f"{mean_a:,.2f}", f"{delta:,.2f}", change],
    ]
    return "## 1. High-Level Performance Summary\n\n" + seed_pipe_table(headers, rows) + "\n"


def seed_rank_section(comparison: Comparison) -> str:
    """``## 2. Cycle Duration Distribution Comparison``: cycles ranked longest first."""
    normal, abnormal = comparison.normal, comparison.abnormal
    times_n = [_us(v) for v in normal.cycle_ms_desc]
    times_a = [_us(v) for v in abnormal.cycle_ms_desc]
    headers = ["Time Rank", f"{normal.label} Time (us)", f"{abnormal.label} Time (us)",
               "Δ (us)", "Δ (%)"]
    rows: list[list[Cell]] = []
    for rank in range(max(len(times_n), len(times_a))):
        t_n: Cell = times_n[rank] if rank < len(times_n) else MISSING
        t_a: Cell = times_a[rank] if rank < len(times_a) else MISSING
        if isinstance(t_n, float) and isinstance(t_a, float):
            delta = t_a - t_n
            pct = f"{delta / t_n * 100:+.2f}%" if t_n else MISSING
            rows.append([rank + 1, t_n, t_a, f"{delta:,.2f}", pct])
        else:
            rows.append([rank + 1, t_n, t_a, MISSING, MISSING])
    table = seed_pipe_table(headers, rows)
    return "## 2. Cycle Duration Distribution Comparison\n\n" + table + "\n"

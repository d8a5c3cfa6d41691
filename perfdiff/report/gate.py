"""``--fail-on-regression PCT``: which changes in a comparison count as a regression for CI.

Why a verdict and a size: a CI gate must not fail on noise, so only changes the statistics
called *slower* (q below alpha and above the practical threshold) count, and only when they
exceed the user's PCT. Sizes are in % of the normal side's mean cycle time, the same unit as the
practical threshold, so a function's slowdown and the cycle's slowdown compare directly.
A function that *appeared* counts with its whole time per cycle. When the two sides' cycles
were cut differently, times per cycle do not compare: functions count by their change of share
of cycle time (Δβ, percentage points) and neither the cycle time nor appeared functions count.
Names are the report's compacted display names: a CI log line should not hold a 500-character
C++ signature the report itself never shows (``--format json`` has them in full).
"""

from __future__ import annotations

import math

from perfdiff.analysis.model import Comparison
from perfdiff.report.format import PROSE_NAME_WIDTH, display_name, fmt_pct, fmt_pp


def _name(function: str) -> str:
    return display_name(function, PROSE_NAME_WIDTH)


def _share_of_cycle(ms: float, comparison: Comparison) -> float:
    cycle_ms = comparison.normal.cycle_ms_mean
    return 100.0 * ms / cycle_ms if cycle_ms and math.isfinite(cycle_ms) else math.nan


def regressions(comparison: Comparison, threshold_pct: float) -> list[str]:
    """One line per slowdown above ``threshold_pct``: the cycle first, then functions."""
    found: list[str] = []
    change = comparison.cycle_time
    if change.comparable and change.verdict == "slower" and change.delta_pct > threshold_pct:
        found.append(f"mean cycle time {fmt_pct(change.delta_pct, signed=True)} "
                     f"(threshold {fmt_pct(threshold_pct)})")
    seen: set[tuple[str, str, int | None]] = set()
    for row in comparison.rows:
        key = (row.function, row.device, row.pid)
        if row.verdict != "slower" or key in seen:
            continue
        seen.add(key)
        if not change.comparable:
            if row.delta_beta > threshold_pct:
                found.append(f"{_name(row.function)} on {row.device} share of cycle time "
                             f"{fmt_pp(row.delta_beta)} (threshold {fmt_pct(threshold_pct)})")
            continue
        share = _share_of_cycle(row.time_delta_ms, comparison)
        if share > threshold_pct:
            found.append(f"{_name(row.function)} on {row.device} {fmt_pct(share, signed=True)} of "
                         f"cycle time (threshold {fmt_pct(threshold_pct)})")
    if not change.comparable:
        return found
    for inv in comparison.inventory:
        share = _share_of_cycle(inv.time_ms_per_cycle, comparison)
        if inv.change == "appeared" and share > threshold_pct:
            found.append(f"{_name(inv.function)} on {inv.device} appeared, "
                         f"{fmt_pct(share)} of cycle time (threshold {fmt_pct(threshold_pct)})")
    return found

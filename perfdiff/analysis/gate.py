"""``--fail-on-regression PCT``: which changes in a comparison count as a regression for CI.

Why a verdict and a size: a CI gate must not fail on noise, so only changes the statistics
called *slower* (q below alpha and above the practical threshold) count, and only when they
exceed the user's PCT. Sizes are in % of the normal side's mean cycle time, the same unit as the
practical threshold, so a function's slowdown and the cycle's slowdown compare directly.
A function that *appeared* counts with its whole time per cycle. When the two sides' cycles
were cut differently, times per cycle do not compare: functions count by their change of share
of cycle time (Δβ, percentage points) and neither the cycle time nor appeared functions count.
The lines CI prints are made by ``perfdiff.report.gate`` from these typed results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from perfdiff.analysis.model import Comparison

RegressionKind = Literal["cycle time", "time per cycle", "share of cycle", "appeared"]


@dataclass(frozen=True)
class Regression:
    """One slowdown above the threshold: what, where, how large (``size``: % of cycle time,
    or percentage points for ``share of cycle``), against which threshold (%)."""

    kind: RegressionKind
    function: str  # "" for the cycle time
    device: str
    size: float
    threshold_pct: float


def _share_of_cycle(ms: float, comparison: Comparison) -> float:
    cycle_ms = comparison.normal.cycle_ms_mean
    return 100.0 * ms / cycle_ms if cycle_ms and math.isfinite(cycle_ms) else math.nan


def find_regressions(comparison: Comparison, threshold_pct: float) -> list[Regression]:
    """Every slowdown above ``threshold_pct``: the cycle first, then functions, then those that
    appeared (each function and device once)."""
    found: list[Regression] = []
    change = comparison.cycle_time
    if change.comparable and change.verdict == "slower" and change.delta_pct > threshold_pct:
        found.append(Regression("cycle time", "", "", change.delta_pct, threshold_pct))
    seen: set[tuple[str, str, int | None]] = set()
    for row in comparison.rows:
        key = (row.function, row.device, row.pid)
        if row.verdict != "slower" or key in seen:
            continue
        seen.add(key)
        if not change.comparable:
            if row.delta_cycle_share_pp > threshold_pct:
                found.append(Regression("share of cycle", row.function, row.device,
                                        row.delta_cycle_share_pp, threshold_pct))
            continue
        share = _share_of_cycle(row.time_delta_ms, comparison)
        if share > threshold_pct:
            found.append(Regression("time per cycle", row.function, row.device, share,
                                    threshold_pct))
    if not change.comparable:
        return found
    for inv in comparison.inventory:
        share = _share_of_cycle(inv.time_ms_per_cycle, comparison)
        if inv.change == "appeared" and share > threshold_pct:
            found.append(Regression("appeared", inv.function, inv.device, share,
                                    threshold_pct))
    return found


__all__ = ["Regression", "find_regressions"]

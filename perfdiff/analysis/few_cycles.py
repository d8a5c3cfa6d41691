"""Few cycles: describe the changes instead of testing them.

Why: with one to five cycles per side (a single profiler trace, a short recording) no test can
tell a change from noise, so every verdict is "insufficient data" and a report built on
verdicts would say nothing, or worse, "no function needs investigation" while a kernel worth
a third of the GPU's time vanished. The report then ranks the changes of time per cycle by
size, appeared, vanished and replaced kernels included, and says they were not tested.
"""

from __future__ import annotations

from perfdiff.analysis.columns import IDLE_FUNCTION
from perfdiff.analysis.model import DescribedChange, InventoryChange, MetricRow

FEW_CYCLES = 5  # at most this many measured cycles on a side: described, not tested


def is_few(n_normal: int, n_abnormal: int) -> bool:
    """True when a side has too few cycles for the tests to say anything."""
    return min(n_normal, n_abnormal) <= FEW_CYCLES


def described_changes(rows: list[MetricRow], inventory: list[InventoryChange],
                      idle_first: bool = True) -> tuple[DescribedChange, ...]:
    """Every function's change of time per cycle, largest first (one entry per function);
    ``[GPU idle]`` never first when ``idle_first`` is False (``findings.idle_leads``)."""
    out: dict[tuple[int | None, str, str], DescribedChange] = {}
    for row in rows:
        key = (row.pid, row.device, row.function)
        delta = row.time_ms_abnormal - row.time_ms_normal
        if key in out or delta != delta or delta == 0:
            continue
        out[key] = DescribedChange(row.function, row.device, row.pid, row.func_type,
                                   "slower" if delta > 0 else "faster", row.time_ms_normal,
                                   row.time_ms_abnormal, delta)
    for item in inventory:
        key = (item.pid, item.device, item.function)
        before = item.time_ms_per_cycle if item.change == "vanished" else 0.0
        after = item.time_ms_per_cycle if item.change == "appeared" else 0.0
        kind = "family" if item.function.startswith("[") else "kernel"
        out[key] = DescribedChange(item.function, item.device, item.pid, kind, item.change,
                                   before, after, after - before)
    ranked = sorted(out.values(), key=lambda d: (-abs(d.delta_ms), d.function, d.device))
    if not idle_first and len(ranked) > 1 and ranked[0].function == IDLE_FUNCTION:
        ranked = [ranked[1], ranked[0], *ranked[2:]]
    return tuple(ranked)

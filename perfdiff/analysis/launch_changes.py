"""Functions launched more (or fewer) times per cycle: the same kernels, a different amount of work.

Why a list of its own: a change in *how often* a kernel runs per iteration is exact (launch
counts are integers, identical in every cycle of a steady loop) and says what changed in the
program: gradient checkpointing launches every forward kernel of a checkpointed layer twice
per step (the forward GEMMs, attention, layer norm 12 -> 24 launches for GPT-2 small), a
fused optimizer that fell back to a loop launches hundreds of small kernels. Each of those
kernels may take well under the practical threshold of the cycle on its own, so the time
tests alone can leave the recomputation out of the findings; the launch counts cannot.

Only for comparable cycles (launches per cycle mean nothing across cycles cut differently),
and only from tables that carry the optional ``launches`` column (run files; not imported
data). A change counts when it is at least half a launch per cycle and 10 % of the count.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.model import LaunchChange

MIN_LAUNCH_DELTA = 0.5  # launches per cycle
MIN_LAUNCH_REL = 0.10  # of the normal side's count


def launch_changes(tables: tuple[pd.DataFrame, pd.DataFrame]) -> list[LaunchChange]:
    """Functions on both sides whose mean launches per cycle changed, largest time change first."""
    if any(C.LAUNCHES not in t.columns for t in tables):
        return []
    per_side = [_per_cycle(t) for t in tables]
    both = per_side[0].add_suffix("_n").join(per_side[1].add_suffix("_a"), how="inner")
    if both.empty:
        return []
    delta = both["launches_a"] - both["launches_n"]
    keep = (delta.abs() >= MIN_LAUNCH_DELTA) & (
        delta.abs() >= MIN_LAUNCH_REL * both["launches_n"].abs())
    kept = both[keep]
    out = [
        LaunchChange(function=str(key[2]), device=str(key[1]), pid=int(key[0]),
                     launches_normal=float(ln), launches_abnormal=float(la),
                     time_ms_normal=float(tn), time_ms_abnormal=float(ta))
        for key, ln, la, tn, ta in zip(kept.index, kept["launches_n"], kept["launches_a"],
                                       kept["time_n"], kept["time_a"], strict=True)
    ]
    out.sort(key=lambda c: (-abs(c.time_ms_abnormal - c.time_ms_normal), c.function, c.device))
    return out


def _per_cycle(table: pd.DataFrame) -> pd.DataFrame:
    """Mean launches and time per measured cycle of each (pid, device, function)."""
    rows = table.drop_duplicates([C.RUN, C.PID, C.DEVICE, C.CYCLE, C.FUNCTION])
    rows = rows[rows[C.LAUNCHES].notna()]
    cycles = rows.drop_duplicates([C.RUN, C.PID, C.CYCLE]).groupby(C.PID).size()
    sums = rows.groupby([C.PID, C.DEVICE, C.FUNCTION])[[C.LAUNCHES, C.TIME_MS]].sum()
    n = cycles.reindex(sums.index.get_level_values(0)).to_numpy(dtype=np.float64)
    return pd.DataFrame({"launches": sums[C.LAUNCHES].to_numpy() / n,
                         "time": sums[C.TIME_MS].to_numpy() / n}, index=sums.index)


__all__ = ["MIN_LAUNCH_DELTA", "MIN_LAUNCH_REL", "launch_changes"]

"""The headline: the change of mean cycle time split into parts that sum to it.

Why: a report that says "faster, -40 %" and leads with ``[GPU idle]`` while the GPU's work per
cycle rose by 290 % tells the reader the wrong story. On one device, a cycle is

    cycle = sum of kernel and copy time by family + GPU idle - overlap of concurrent work

(``cycle_table.py``: idle is the cycle minus the union of the kernels' intervals), so the
change of the mean cycle is the sum of the families' changes, the change of GPU idle (the
host's part: Python, launches, synchronisation) and the change of overlap. The parts are
exact means over the same cycles, so they add up to the cycle-time change of that device.
With several processes (DDP ranks) the comparison's mean cycle time pools their cycles; the
split is of the busiest process's own cycles, and the report says so with that process's
change (the two differ when the ranks kept different numbers of cycles).

Under tracing (a torch.profiler trace, or perfdiff's traced cycles) the host's cost of
recording each launch is inside GPU idle: when a cycle is host-bound (idle >= half of it),
that cost can hide the change of GPU work, so the report leads with the GPU-work change.
"""

from __future__ import annotations

import math

import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.family_rows import work_rows
from perfdiff.analysis.model import Headline, HeadlinePart

HOST_BOUND_IDLE_SHARE = 0.5
MIX_TOP = 2  # precision/engine classes named per family and side


def headline(
    tables: tuple[pd.DataFrame, pd.DataFrame], *, traced: bool,
    works: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> Headline | None:
    """The split for the device with the most GPU work (None: no GPU work on any device).

    ``works``: the tables' ``work_rows`` when the caller shares them with the family rows."""
    if works is None:
        works = (work_rows(tables[0]), work_rows(tables[1]))
    group = _busiest(works)
    if group is None:
        return None
    pid, device = group
    sides = [_side(t, w, pid, device) for t, w in zip(tables, works, strict=True)]
    if any(s is None for s in sides):
        return None
    n, a = sides[0], sides[1]
    assert n is not None and a is not None
    families = sorted(set(n.family_ms) | set(a.family_ms))
    parts = [
        HeadlinePart(
            label=f,
            kind="family",
            ms_normal=n.family_ms.get(f, 0.0),
            ms_abnormal=a.family_ms.get(f, 0.0),
            delta_ms=a.family_ms.get(f, 0.0) - n.family_ms.get(f, 0.0),
            detail_normal=n.mix.get(f, ""),
            detail_abnormal=a.mix.get(f, ""),
        )
        for f in families
    ]
    idle_known = not (math.isnan(n.idle_ms) or math.isnan(a.idle_ms))
    if idle_known:
        parts.append(HeadlinePart("GPU idle", "idle", n.idle_ms, a.idle_ms,
                                  a.idle_ms - n.idle_ms))
    rest_n, rest_a = n.rest_ms, a.rest_ms
    if abs(rest_n) > 1e-9 or abs(rest_a) > 1e-9:
        label = ("overlap of concurrent GPU work" if idle_known
                 else "rest of the cycle (GPU idle, host time, overlap)")
        parts.append(HeadlinePart(label, "overlap" if idle_known else "host", rest_n, rest_a,
                                  rest_a - rest_n))
    parts.sort(key=lambda p: (-abs(p.delta_ms), p.label))
    work_n, work_a = sum(n.family_ms.values()), sum(a.family_ms.values())
    return Headline(
        device=device,
        pid=pid,
        cycle_ms_normal=n.cycle_ms,
        cycle_ms_abnormal=a.cycle_ms,
        delta_ms=a.cycle_ms - n.cycle_ms,
        gpu_work_delta_ms=work_a - work_n,
        gpu_work_ms_normal=work_n,
        gpu_work_ms_abnormal=work_a,
        parts=tuple(parts),
        host_bound=idle_known and any(s.idle_ms >= HOST_BOUND_IDLE_SHARE * s.cycle_ms
                                      for s in (n, a)),
        traced=traced,
        processes=max(int(t[C.PID].nunique()) for t in tables),
    )


def _busiest(works: tuple[pd.DataFrame, pd.DataFrame]) -> tuple[int, str] | None:
    both = pd.concat([w[[C.PID, C.DEVICE, C.TIME_MS]] for w in works])
    if both.empty:
        return None
    total = both.groupby([C.PID, C.DEVICE])[C.TIME_MS].sum().sort_index()
    best = total.idxmax()
    assert isinstance(best, tuple)
    return int(best[0]), str(best[1])


class _Side:
    """Means per cycle of one side on one device."""

    def __init__(self, cycle_ms: float, family_ms: dict[str, float], idle_ms: float,
                 mix: dict[str, str]) -> None:
        self.cycle_ms = cycle_ms
        self.family_ms = family_ms
        self.idle_ms = idle_ms
        self.mix = mix
        # with GPU idle known (perfdiff's tables): negative when kernels on several streams
        # ran at once (their times add to more than the time the GPU was busy); without it
        # (imported tables): the rest of the cycle, idle and host time together
        self.rest_ms = cycle_ms - sum(family_ms.values()) - (0.0 if math.isnan(idle_ms)
                                                             else idle_ms)


def _side(table: pd.DataFrame, work: pd.DataFrame, pid: int, device: str) -> _Side | None:
    # every cycle of the process counts, also one in which this device ran nothing
    # one mask per column and only the columns used: copies of the whole table's rows were
    # most of this function's time on a 1,000,000-launch compare
    of_pid = (table[C.PID] == pid).to_numpy(dtype=bool, na_value=False)
    cycles = table.loc[of_pid, [C.RUN, C.CYCLE, C.CYCLE_MS]].drop_duplicates([C.RUN, C.CYCLE])
    n_cycles = len(cycles)
    if n_cycles == 0:
        return None
    idle_rows = of_pid & (table[C.DEVICE] == device).to_numpy(dtype=bool, na_value=False) & (
        table[C.FUNCTION] == C.IDLE_FUNCTION).to_numpy(dtype=bool, na_value=False)
    idle = table.loc[idle_rows, [C.RUN, C.CYCLE, C.TIME_MS]].drop_duplicates([C.RUN, C.CYCLE])
    w = work[(work[C.PID] == pid) & (work[C.DEVICE] == device)]
    family_ms = {str(f): float(t) / n_cycles
                 for f, t in w.groupby("family")[C.TIME_MS].sum().items()}
    return _Side(
        cycle_ms=float(cycles[C.CYCLE_MS].mean()),
        family_ms=family_ms,
        idle_ms=float(idle[C.TIME_MS].sum()) / n_cycles if len(idle) else math.nan,
        mix=_mix(w),
    )


def _mix(work: pd.DataFrame) -> dict[str, str]:
    """Per family, its largest precision/engine classes by time: ``bf16, tensor core 97 %``."""
    out: dict[str, str] = {}
    for family, rows in work.groupby("family"):
        by_kind = rows.groupby("kind_label")[C.TIME_MS].sum().sort_values(ascending=False)
        total = float(by_kind.sum())
        if total <= 0 or not math.isfinite(total):
            continue
        texts = []
        for label, ms in by_kind.head(MIX_TOP).items():
            detail = str(label)[len(str(family)):].strip(" ()") or "unstated"
            texts.append(f"{detail} {100.0 * float(ms) / total:.0f} %")
        out[str(family)] = ", ".join(texts)
    return out


def host_bound_note(split: Headline, threshold_pct: float) -> str:
    """The note of a host-bound cycle under tracing (said once, at the top of the report)."""
    idle = next((p for p in split.parts if p.kind == "idle"), None)
    shares = ""
    if idle is not None and split.cycle_ms_normal > 0 and split.cycle_ms_abnormal > 0:
        shares = (f" (GPU idle {100.0 * idle.ms_normal / split.cycle_ms_normal:.0f} % and "
                  f"{100.0 * idle.ms_abnormal / split.cycle_ms_abnormal:.0f} % of the cycle)")
    work = max(split.gpu_work_ms_normal, split.gpu_work_ms_abnormal)
    return (
        f"Cycles on {split.device} are host-bound under tracing{shares}: recording each launch "
        "adds host time, so the cycle time overstates the host's part and can hide the GPU's. "
        f"Changes of GPU work count when they exceed {threshold_pct:g} % of the GPU work per "
        f"cycle ({work:.3f} ms) instead of {threshold_pct:g} % of the cycle; compare bare "
        "runs (perfdiff bench) for the wall-clock effect."
    )

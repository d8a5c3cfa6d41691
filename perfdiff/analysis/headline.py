"""The headline: the change of mean cycle time split into parts that sum to it.

Why: a report that says "faster, -40 %" and leads with ``[GPU idle]`` while the GPU's work per
cycle rose by 290 % tells the reader the wrong story. On one device, a cycle is

    cycle = sum of kernel and copy time by family + GPU idle - overlap of concurrent work

(``cycle_table.py``: idle is the cycle minus the union of the kernels' intervals), so the
change of the mean cycle is the sum of the families' changes, the change of GPU idle (the
host's part: Python, launches, synchronisation) and the change of overlap. The parts are
exact means over the same cycles, so they add up to the cycle-time change of that device.
With several processes (DDP ranks) the comparison's mean cycle time pools every process's
cycles, so the split pools them the same way: each process's cycles on its busiest device,
weighted by how many cycles it kept. Splitting one process instead (the busiest) left parts
that added up to that process's change, not the reported one: +15.9 against +14.8 ms on the
two-rank DDP shards, whose ranks kept 19 and 23 cycles on one side, 7 and 25 on the other.
Which rank moved is the findings' and ``perfdiff ranks``' answer; in a lock-step job its delay
shows here as the other ranks' communication wait.

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
DEVICES_NAMED = 4  # a pooled split names its devices up to this many


def headline(
    tables: tuple[pd.DataFrame, pd.DataFrame], *, traced: bool,
    works: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> Headline | None:
    """The split of the mean cycle time: one process's busiest device, or every process's
    pooled (None: no GPU work on any device).

    ``works``: the tables' ``work_rows`` when the caller shares them with the family rows."""
    if works is None:
        works = (work_rows(tables[0]), work_rows(tables[1]))
    groups = _busiest(works)
    if not groups:
        return None
    per_side = []
    for t, w in zip(tables, works, strict=True):
        sides = [_side(t, w, pid, device) for pid, device in groups]
        if any(s is None for s in sides):
            return None
        per_side.append(_pooled([s for s in sides if s is not None]))
    n, a = per_side[0], per_side[1]
    pid = groups[0][0] if len(groups) == 1 else None
    families = sorted(set(n.family_ms) | set(a.family_ms))
    mix_n, mix_a = _mix(n.work), _mix(a.work)
    parts = [
        HeadlinePart(
            label=f,
            kind="family",
            ms_normal=n.family_ms.get(f, 0.0),
            ms_abnormal=a.family_ms.get(f, 0.0),
            delta_ms=a.family_ms.get(f, 0.0) - n.family_ms.get(f, 0.0),
            detail_normal=mix_n.get(f, ""),
            detail_abnormal=mix_a.get(f, ""),
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
        device=_devices_label(groups),
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
        pids=tuple(p for p, _ in groups),
    )


def _busiest(works: tuple[pd.DataFrame, pd.DataFrame]) -> list[tuple[int, str]]:
    """Each process with GPU work and its device with the most of it (both sides), by pid."""
    both = pd.concat([w[[C.PID, C.DEVICE, C.TIME_MS]] for w in works])
    if both.empty:
        return []
    total = both.groupby([C.PID, C.DEVICE])[C.TIME_MS].sum().sort_index()
    best = total.groupby(level=0).idxmax()
    return [(int(pid), str(device)) for pid, device in best.to_list()]


def _devices_label(groups: list[tuple[int, str]]) -> str:
    """The device split, or the pooled processes' devices (named up to ``DEVICES_NAMED``)."""
    devices = sorted({device for _, device in groups})
    if len(devices) == 1:
        return devices[0]
    if len(devices) <= DEVICES_NAMED:
        return " + ".join(devices)
    return f"{len(devices)} devices"


def _pooled(sides: list[_Side]) -> _Side:
    """Means over every process's cycles together, as the comparison's mean cycle time is."""
    if len(sides) == 1:
        return sides[0]
    total = sum(s.n_cycles for s in sides)
    return _Side(
        cycle_ms=sum(s.cycle_ms * s.n_cycles for s in sides) / total,
        idle_ms=sum(s.idle_ms * s.n_cycles for s in sides) / total,  # NaN when one is unknown
        n_cycles=total,
        work=pd.concat([s.work for s in sides]),
    )


class _Side:
    """Means per cycle of one side: one process on one device, or several pooled."""

    def __init__(self, cycle_ms: float, idle_ms: float, n_cycles: int,
                 work: pd.DataFrame) -> None:
        self.n_cycles = n_cycles
        self.work = work  # the work rows split (families, precision mix)
        self.cycle_ms = cycle_ms
        self.family_ms = {str(f): float(t) / n_cycles
                          for f, t in work.groupby("family")[C.TIME_MS].sum().items()}
        self.idle_ms = idle_ms
        # with GPU idle known (perfdiff's tables): negative when kernels on several streams
        # ran at once (their times add to more than the time the GPU was busy); without it
        # (imported tables): the rest of the cycle, idle and host time together
        self.rest_ms = cycle_ms - sum(self.family_ms.values()) - (
            0.0 if math.isnan(idle_ms) else idle_ms)


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
    return _Side(
        cycle_ms=float(cycles[C.CYCLE_MS].mean()),
        idle_ms=float(idle[C.TIME_MS].sum()) / n_cycles if len(idle) else math.nan,
        n_cycles=n_cycles,
        work=work[(work[C.PID] == pid) & (work[C.DEVICE] == device)],
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

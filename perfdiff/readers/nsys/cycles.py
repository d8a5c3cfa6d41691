"""Cycles of one process: NVTX ranges chosen by ``--cycle-range``, or the launch period.

Why its own module: the cycle rule has two sources and one assignment. With ``--cycle-range
REGEX``, the cycles are the process's NVTX push/pop and start/end ranges whose whole text
matches REGEX (``step``, ``iteration_\\d+``); without it, the cycles are where the kernel
launch sequence repeats (:func:`perfdiff.schema.periods.detect_period`, the rule used for
torch.profiler traces without ``ProfilerStep`` and for unmarked programs). Either way a GPU
record belongs to the cycle in which its launch (the CUDA API call, host time) happened,
``[start, end)``: GPU work runs behind the host, and cutting by GPU time would split a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfdiff.errors import InputError
from perfdiff.readers.cycle_range import CycleRange
from perfdiff.readers.nsys.activity import NO_LAUNCH, int_rows
from perfdiff.readers.nsys.database import Export
from perfdiff.readers.nsys.tables import (
    NVTX_RANGE_TYPES,
    NVTX_TABLE,
    PID_MASK,
    PID_SHIFT,
    STRINGS_TABLE,
)
from perfdiff.schema.model import IntArray
from perfdiff.schema.periods import cycle_bounds_ns, detect_period


@dataclass(frozen=True)
class Cycles:
    """One process's cycles, sorted and disjoint."""

    start: IntArray
    end: IntArray
    label: str


@dataclass(frozen=True)
class NvtxRanges:
    """The ranges ``--cycle-range`` matched, per process, and the names seen (for hints)."""

    by_pid: dict[int, tuple[IntArray, IntArray]]
    pattern: str
    names: dict[str, int]  # every range name of the export -> how many times


def _text(export: Export) -> tuple[str, str]:
    """(expression, join) giving each NVTX event's text: inline ``text`` or a StringIds id."""
    cols = export.columns[NVTX_TABLE]
    if "textId" in cols:
        return "COALESCE(n.text, s.value)", f"LEFT JOIN {STRINGS_TABLE} s ON s.id = n.textId"
    return "n.text", ""


def nvtx_ranges(export: Export, pattern: str) -> NvtxRanges:
    """The NVTX ranges whose text matches ``pattern`` entirely, by process."""
    chosen = CycleRange.parse(pattern)
    if not export.has(NVTX_TABLE):
        raise InputError(f"{export.where()}: no NVTX_EVENTS table, so --cycle-range "
                         f"{pattern!r} matches nothing; record with `nsys profile --trace="
                         "cuda,nvtx` or leave --cycle-range out to find cycles by themselves")
    export.require(NVTX_TABLE, ("start", "end", "eventType", "text", "globalTid"))
    text, join = _text(export)
    kinds = ", ".join(str(k) for k in NVTX_RANGE_TYPES)
    source = f"{NVTX_TABLE} n {join}"
    where = f"n.eventType IN ({kinds}) AND n.end IS NOT NULL"
    names = {str(name): int(count) for name, count in export.rows(
        f"SELECT {text} AS t, COUNT(*) FROM {source} WHERE {where} AND t IS NOT NULL "
        "GROUP BY t")}
    matched = sorted(name for name in names if chosen.matches(name))
    if not matched:
        raise InputError(f"{export.where()}: no NVTX range matches --cycle-range {pattern!r}"
                         + range_hint(names))
    by_pid: dict[int, tuple[IntArray, IntArray]] = {}
    for begin in range(0, len(matched), 900):
        part = matched[begin:begin + 900]
        marks = ", ".join("?" * len(part))
        rows = int_rows(export, source,
                        ("n.start", "n.end", f"(n.globalTid >> {PID_SHIFT}) & {PID_MASK}"),
                        f"WHERE {where} AND {text} IN ({marks})", tuple(part))
        bad = np.flatnonzero(rows[:, 1] < rows[:, 0]) if rows.size else np.zeros(0, int)
        if bad.size:
            raise InputError(f"{export.where()}: an NVTX range ends before it starts (start "
                             f"{int(rows[bad[0], 0])}, end {int(rows[bad[0], 1])} ns); the "
                             "file is damaged; export the report again")
        for pid in np.unique(rows[:, 2]).tolist():
            mine = rows[rows[:, 2] == pid]
            old = by_pid.get(pid, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
            by_pid[pid] = (np.concatenate([old[0], mine[:, 0]]),
                           np.concatenate([old[1], mine[:, 1]]))
    return NvtxRanges(by_pid=by_pid, pattern=pattern, names=names)


def range_hint(names: dict[str, int]) -> str:
    """The export's most frequent NVTX range names, for a one-line error."""
    top = sorted(names, key=lambda n: (-names[n], n))[:5]
    if not top:
        return " (the export has no NVTX ranges)"
    return " (NVTX ranges in this export, most frequent first: " + ", ".join(
        f"{n[:60]!r} x{names[n]}" for n in top) + ")"


def range_cycles(starts: IntArray, ends: IntArray, label: str,
                 warnings: list[str]) -> Cycles:
    """Sorted, disjoint cycles from matched ranges: a range that starts inside the previous
    kept one (nested, or the same name on another thread) is left out and counted."""
    order = np.lexsort((-ends, starts))  # by start; of two with one start, the longer first
    kept_start: list[int] = []
    kept_end: list[int] = []
    for s, e in zip(starts[order].tolist(), ends[order].tolist(), strict=True):
        if kept_end and (s < kept_end[-1] or s == kept_start[-1]):  # inside, or a twin
            continue
        kept_start.append(s)
        kept_end.append(e)
    dropped = int(starts.shape[0]) - len(kept_start)
    if dropped:
        warnings.append(f"{dropped} NVTX ranges matching {label!r} start inside another "
                        "(nested, or on another thread) and were not taken as cycles")
    return Cycles(np.asarray(kept_start, dtype=np.int64), np.asarray(kept_end, dtype=np.int64),
                  label)


def detected_cycles(name_ids: IntArray, launch_ns: IntArray) -> Cycles | str:
    """Cycles where the launch sequence repeats, or the reason there are none."""
    known = launch_ns != NO_LAUNCH
    order = np.argsort(launch_ns[known], kind="stable")
    times = launch_ns[known][order]
    period = detect_period(name_ids[known][order], times)
    if not period.found:
        return period.describe()
    start, end = cycle_bounds_ns(period, times)
    return Cycles(start.astype(np.int64), end.astype(np.int64), "detected period")


def assign(cycles: Cycles, launch_ns: IntArray) -> IntArray:
    """Cycle index of each launch time, ``[start, end)``; -1 outside every cycle."""
    if cycles.start.size == 0 or launch_ns.size == 0:
        return np.full(launch_ns.shape, -1, dtype=np.int64)
    pos = np.searchsorted(cycles.start, launch_ns, side="right") - 1
    clipped = np.clip(pos, 0, None)
    inside = (pos >= 0) & (launch_ns != NO_LAUNCH) & (launch_ns < cycles.end[clipped])
    return np.where(inside, clipped, -1).astype(np.int64)

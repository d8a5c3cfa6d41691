"""Cycle time from the cycles the collector left untraced: the program as it runs without us.

Why: tracing lengthens the host's part of a cycle (CUPTI's cost per launch, buffer
hand-overs), by +45-59 % on a host-bound timm ViT-S bf16 step and about 0 on its GPU-bound
fp32 step (H100, 2026-11-28), so a pair of variants compared on traced cycles inherits the
difference: bf16 -> fp32 read +32.6 % against +100 % bare. Kernel statistics need the
kernels, so they keep the traced cycles; the cycle-time change and its verdict use the
untraced ones when both sides have enough of them.

Which untraced cycles are timed: the collector leaves them in runs of two
(``perfdiff.collect.cycles.overhead``); the first of a run follows a traced cycle, whose slower
launches let the GPU run ahead, so it waits less than the program would (timm fp32: 40 ms
against 57 ms bare). An untraced cycle counts only when the cycle before it (by index, in the
same run) was untraced too. Run files written before the runs of two have single untraced
cycles: none count, and cycle time stays traced time (the report says so).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.schema.model import CycleTable, RunFile

MIN_TIMED = 2  # per side: fewer cannot give a variance


def timed_untraced(cycles: CycleTable) -> np.ndarray:
    """Per cycle: untraced, and the cycle just before it (index - 1) untraced too."""
    n = cycles.index.size
    if cycles.traced is None or n == 0:
        return np.zeros(n, dtype=np.bool_)
    index = np.asarray(cycles.index, dtype=np.int64)
    untraced = np.asarray(cycles.traced) == 0
    untraced_ids = set(index[untraced].tolist())
    before = np.asarray([int(i) - 1 in untraced_ids for i in index], dtype=np.bool_)
    timed: np.ndarray = untraced & before
    return timed


def untraced_time_table(run_file: RunFile) -> pd.DataFrame | None:
    """One row per timed untraced cycle (run, pid, cycle, cycle_ms, anchor), the columns the
    cycle-time statistic reads; None when fewer than ``MIN_TIMED``."""
    role_pid: dict[int | None, int] = {}
    frames = []
    for run in run_file.runs:
        pid = role_pid.setdefault(run.rank, run.pid)
        c = run.cycles
        keep = timed_untraced(c)
        if not keep.any():
            continue
        frames.append(pd.DataFrame({
            C.RUN: np.full(int(keep.sum()), run.index, dtype=np.int64),
            C.PID: np.full(int(keep.sum()), pid, dtype=np.int64),
            C.CYCLE: np.asarray(c.index)[keep],
            C.CYCLE_MS: (np.asarray(c.end_ns) - np.asarray(c.start_ns))[keep] / 1e6,
            C.ANCHOR: np.asarray(c.label, dtype=object)[keep],
        }))
    if not frames:
        return None
    table = pd.concat(frames, ignore_index=True)
    return table if len(table) >= MIN_TIMED else None


def time_note(counts: tuple[int, int] | None, traced_cycles: tuple[int, int]) -> str:
    """What the cycle time is made of, for the report's notes."""
    if counts is None:
        return ("Cycle time is traced time: the inputs do not both have untraced cycles "
                "(runs of two, perfdiff >= this version), so it includes the collector's cost "
                "on the host (see each side's overhead note).")
    return (f"Cycle time is measured on the untraced cycles ({counts[0]} and {counts[1]}; "
            "the program as it runs without tracing); kernel statistics on the traced ones "
            f"({traced_cycles[0]} and {traced_cycles[1]}).")


__all__ = ["MIN_TIMED", "time_note", "timed_untraced", "untraced_time_table"]

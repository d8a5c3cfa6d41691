"""``--cycle-ms``: fixed time windows as cycles, for programs that mark no iterations.

Why from the first launch and only whole windows: the seconds a program spends importing and
loading before its first kernel are not a cycle of anything, and a last, partial window would
hold fewer kernels than the others and read as a "faster" cycle. So windows start at the
first kernel or copy launch, and only windows that end before the last launch are kept;
kernels launched after them get cycle -1 (outside any cycle). Kernels are still assigned by
launch time (see ``cycles.py``), like marked cycles.
"""

from __future__ import annotations

import numpy as np

from perfdiff.collect.cycles.cycles import launch_times
from perfdiff.collect.records import RawTrace
from perfdiff.schema.model import CycleTable


def launch_instants(raw: RawTrace) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
    """Launch time of every kernel, memcpy and memset (API start, else GPU start)."""
    cols = raw.as_columns()
    api_ids = cols.api["correlation_id"].astype(np.int64)
    api_starts = cols.api["start"].astype(np.int64)
    tables = (cols.kernels, cols.memcpy, cols.memset)
    corr = np.concatenate([t["correlation_id"].astype(np.int64) for t in tables])
    start = np.concatenate([t["start"].astype(np.int64) for t in tables])
    times, _ = launch_times(corr, start, api_ids, api_starts)
    return times


def fixed_windows(raw: RawTrace, window_ms: float, warmup: int = 0) -> CycleTable:
    """Whole windows of ``window_ms`` from the first launch; the first ``warmup`` flagged."""
    if not window_ms > 0:
        raise ValueError(f"--cycle-ms must be positive, got {window_ms}")
    times = launch_instants(raw)
    width = max(1, round(window_ms * 1e6))
    n = 0 if times.size == 0 else int((int(times.max()) - int(times.min())) // width)
    first = int(times.min()) if times.size else 0
    starts = first + width * np.arange(n, dtype=np.int64)
    return CycleTable(
        index=np.arange(n, dtype=np.int64),
        start_ns=starts,
        end_ns=starts + width,
        label=("",) * n,
        warmup=np.arange(n) < warmup,
    )


__all__ = ["fixed_windows", "launch_instants"]

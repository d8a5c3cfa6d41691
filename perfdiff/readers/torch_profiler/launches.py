"""Kernels that share one correlation id must come from one launch that starts several.

Why: a kernel's step is the step in which its launch happened (the launch with the same
``args.correlation``). A kernel whose correlation was changed to another launch's is counted in
that launch's step; two kernels with one correlation turned 7 rows to faster/slower (issue 25).
Real traces share a correlation only for graph replays (``cudaGraphLaunch``, ``hipGraphLaunch``:
every fixture and shared trace, bench/README.md); so kernels sharing the correlation of a launch
that starts one kernel (``cudaLaunchKernel``, ``cuLaunchKernel``, ...) are refused, naming the
first such event. A correlation with no launch event (a trace recorded without CPU activity)
places no kernel in a step and is left alone.
"""

from __future__ import annotations

import numpy as np

from perfdiff.readers.torch_profiler.columns import GpuColumns
from perfdiff.readers.torch_profiler.events import REEXPORT, BadTrace
from perfdiff.readers.torch_profiler.spellings import MULTI_KERNEL_LAUNCHES


def starts_several(launch_name: str) -> bool:
    """Whether a launch call may start several kernels under its one correlation id."""
    return any(mark in launch_name for mark in MULTI_KERNEL_LAUNCHES)


def check_shared_correlations(kernels: GpuColumns, launch_corr: list[int],
                              launch_name: list[str]) -> None:
    """Raise :class:`BadTrace` at the first kernel (in file order) that shares its correlation
    with an earlier kernel although their launch starts one kernel."""
    corr = np.asarray(kernels.correlation, dtype=np.int64)
    if corr.size < 2:
        return
    ordered = np.sort(corr)
    twice = ordered[1:][(ordered[1:] == ordered[:-1]) & (ordered[1:] > 0)]
    if not twice.size:
        return
    shared = set(np.unique(twice).tolist())
    single = {c: name for c, name in zip(launch_corr, launch_name, strict=True)
              if c in shared and not starts_several(name)}
    if not single:
        return
    first: dict[int, int] = {}
    for row in np.flatnonzero(np.isin(corr, np.fromiter(single, dtype=np.int64))).tolist():
        c = int(corr[row])
        if c not in first:
            first[c] = row
            continue
        earlier = first[c]
        raise BadTrace(
            f"kernel at traceEvents[{kernels.event[row]}] ({kernels.name[row][:60]!r}) has "
            f"correlation {c}, as the kernel at traceEvents[{kernels.event[earlier]}] does, but "
            f"its launch {single[c][:40]!r} starts one kernel (only graph and multi-device "
            "launches start several): its step cannot be told; " + REEXPORT)


__all__ = ["check_shared_correlations", "starts_several"]

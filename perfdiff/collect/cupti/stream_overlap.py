"""Kernels that overlap on one stream are impossible: drop them, count them, never write them.

Why: kernels of one CUDA stream run one after another, so a record that starts before the
previous kernel of its stream ended is wrong, not a measurement. CUPTI writes such records for
kernels replayed from a CUDA graph when activity is switched off before it has finalised them:
on the H100 (2026-11-28, driver 580.159.04, CUPTI 13.4) the last replay traced before an
untraced cycle got each kernel's start from its own replay and its end from the next (untraced)
replay, 300 us later (``scripts/gpu/graph_probe.py``; the collector now flushes before
switching off: ``CuptiActivityBackend.pause``). Accepted, such records made a 0.33 ms cycle hold
10 ms of "GPU busy" and every graph kernel's mean 2-18x too long. Whatever the cause, a run file
must not carry them: a measured cycle holding one loses all its kernels and is left out of the
statistics (flagged ``warmup``, like warm-up cycles; its cycle time is not trusted either), a
record outside every cycle is dropped alone, and the run file says how many of each.

Tolerance: an overlap below ``TOLERANCE_NS`` is kept (timestamps of consecutive kernels can
touch, and a kernel launched with programmatic dependent launch may start its prologue while
its predecessor finishes). It is the reader's own tolerance
(:data:`perfdiff.schema.sense.OVERLAP_TOLERANCE_NS`), so that a file the collector writes is
never one the reader refuses.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from perfdiff.collect.records import Tables
from perfdiff.schema.model import CycleTable, KernelTable
from perfdiff.schema.sense import OVERLAP_TOLERANCE_NS

TOLERANCE_NS = OVERLAP_TOLERANCE_NS
BoolArray = np.ndarray[tuple[int], np.dtype[np.bool_]]


def overlapping(kernels: KernelTable, tolerance_ns: int = TOLERANCE_NS) -> BoolArray:
    """Mask of kernels that start before an earlier kernel of their (device, stream) ended,
    and of the earlier kernels they overlap (the one holding the latest end so far)."""
    n = kernels.start_ns.size
    bad = np.zeros(n, dtype=np.bool_)
    if n < 2:
        return bad
    order = np.lexsort((kernels.end_ns, kernels.start_ns, kernels.stream, kernels.device))
    dev, stream = kernels.device[order], kernels.stream[order]
    start, end = kernels.start_ns[order], kernels.end_ns[order]
    same = np.r_[False, (dev[1:] == dev[:-1]) & (stream[1:] == stream[:-1])]
    group = np.cumsum(~same)
    # latest end of any earlier kernel of the same stream, and which kernel holds it
    for g in np.unique(group[same]):
        idx = np.flatnonzero(group == g)
        ends = end[idx]
        holder = np.maximum.accumulate(np.where(ends == np.maximum.accumulate(ends),
                                                np.arange(idx.size), 0))
        prev_end = np.r_[np.iinfo(np.int64).min, np.maximum.accumulate(ends)[:-1]]
        prev_holder = np.r_[0, holder[:-1]]
        hit = start[idx] + tolerance_ns < prev_end
        if hit.any():
            bad[order[idx[hit]]] = True
            bad[order[idx[prev_holder[hit]]]] = True
    return bad


def drop_overlapping(tables: Tables, cycles: CycleTable,
                     tolerance_ns: int = TOLERANCE_NS) -> tuple[Tables, CycleTable, str | None]:
    """Tables and cycles without impossible kernel records, and the warning that says so."""
    k = tables.kernels
    bad = overlapping(k, tolerance_ns)
    if not bad.any():
        return tables, cycles, None
    bad_cycles = np.unique(k.cycle[bad & (k.cycle >= 0)])
    measured = np.zeros(cycles.index.size, dtype=np.bool_)
    measured[bad_cycles] = True
    hit_measured = measured & ~cycles.warmup
    drop = bad | np.isin(k.cycle, bad_cycles)
    keep = ~drop
    kernels = KernelTable(**{f.name: getattr(k, f.name)[keep]
                             for f in dataclasses.fields(KernelTable)
                             if getattr(k, f.name) is not None})  # optional op columns
    tables = dataclasses.replace(tables, kernels=kernels)
    cycles = dataclasses.replace(cycles, warmup=cycles.warmup | measured)
    listed = ", ".join(str(int(c)) for c in np.flatnonzero(hit_measured)[:5])
    more = ", ..." if int(hit_measured.sum()) > 5 else ""
    warning = (
        f"{int(bad.sum())} kernel records overlapped another kernel of the same stream "
        f"(impossible; CUPTI writes such times for CUDA-graph replays it finalises late); "
        f"{int(drop.sum())} kernels dropped, and {int(hit_measured.sum())} measured cycle(s) "
        f"left out of the statistics" + (f" (cycle {listed}{more})" if listed else ""))
    return tables, cycles, warning


__all__ = ["TOLERANCE_NS", "drop_overlapping", "overlapping"]

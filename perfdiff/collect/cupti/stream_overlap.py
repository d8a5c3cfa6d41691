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

Early starts (programmatic dependent launch) are not impossible, and are clipped, not
dropped: on Hopper a kernel launched with PDL may be resident, and timed by CUPTI, before its
predecessor on the stream has ended; it waits (griddepcontrol.wait) until the predecessor's
work is complete. cuDNN does this: in a torchvision ResNet-50 training loop (H200,
2026-11-28, ``bench/record_truth/cnn_train.py``) every layout kernel
``cudnn::engines_precompiled::nchwToNhwcKernel`` was followed by a ``cask_plugin`` xmma
convolution that started up to 480 ns before it ended among the kernels kept, and 112-270
records a run overlapped by more, so all of that program's measured cycles were left out and
``perfdiff compare`` had nothing to compare. Such a pair has its own shape: two launches, the
later launched (higher correlation id) starting no earlier and ending no earlier than the
earlier one, the overlap at most :data:`EARLY_START_LIMIT_NS`. Its later kernel's start is
moved to the earlier's end (:func:`clip_early_starts`; no kernel time is invented, the waiting
is given to no one) and the run file says how many. The graph replays above are one launch (one
correlation id) and keep being dropped; so is every other overlap.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from perfdiff.collect.records import Tables
from perfdiff.schema.model import CycleTable, KernelTable
from perfdiff.schema.sense import OVERLAP_TOLERANCE_NS

TOLERANCE_NS = OVERLAP_TOLERANCE_NS
# Largest early start clipped: 100 us, generous against the cuDNN layout kernel a convolution
# overlaps (~23 us long, H200); a graph record ending a replay later overlapped by ~300 us.
EARLY_START_LIMIT_NS = 100_000
BoolArray = np.ndarray[tuple[int], np.dtype[np.bool_]]


def _by_stream(kernels: KernelTable) -> tuple[np.ndarray, BoolArray, np.ndarray]:
    """Kernels in (device, stream, start, end) order, for both rules below: the order, whether
    each kernel shares its predecessor's stream (the first never does), and the latest end of
    its stream so far, itself included. One pass per stream, slices of the sorted array."""
    order = np.lexsort((kernels.end_ns, kernels.start_ns, kernels.stream, kernels.device))
    dev, stream = kernels.device[order], kernels.stream[order]
    end = kernels.end_ns[order]
    same = np.r_[False, (dev[1:] == dev[:-1]) & (stream[1:] == stream[:-1])]
    latest = np.empty_like(end)
    bounds = np.r_[np.flatnonzero(~same), end.size]
    for first, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        latest[first:stop] = np.maximum.accumulate(end[first:stop])
    return order, same, latest


def overlapping(kernels: KernelTable, tolerance_ns: int = TOLERANCE_NS) -> BoolArray:
    """Mask of kernels that start before an earlier kernel of their (device, stream) ended,
    and of the earlier kernels they overlap (the one holding the latest end so far)."""
    n = kernels.start_ns.size
    bad = np.zeros(n, dtype=np.bool_)
    if n < 2:
        return bad
    order, same, latest = _by_stream(kernels)
    start, end = kernels.start_ns[order], kernels.end_ns[order]
    # which kernel holds its stream's latest end so far (a stream's first kernel always does)
    holder = np.maximum.accumulate(np.where(end == latest, np.arange(n), 0))
    hit = same[1:] & (start[1:] + tolerance_ns < latest[:-1])
    if hit.any():
        bad[order[1:][hit]] = True
        bad[order[holder[:-1][hit]]] = True
    return bad


def clip_early_starts(tables: Tables, tolerance_ns: int = TOLERANCE_NS,
                      limit_ns: int = EARLY_START_LIMIT_NS) -> tuple[Tables, str | None]:
    """Tables whose early-started kernels (module docstring) start at their predecessor's
    end, and the line that counts them (None when there is none)."""
    k = tables.kernels
    if k.start_ns.size < 2:
        return tables, None
    order, same, latest = _by_stream(k)
    start, end, corr = k.start_ns[order], k.end_ns[order], k.correlation_id[order]
    overlap = end[:-1] - start[1:]
    # the predecessor must hold the latest end of its stream so far (not inside another)
    early = (same[1:] & (overlap > tolerance_ns) & (overlap <= limit_ns)
             & (latest[:-1] == end[:-1]) & (end[1:] >= end[:-1])
             & (corr[:-1] > 0) & (corr[1:] > corr[:-1]))
    if not early.any():
        return tables, None
    later = order[np.flatnonzero(early) + 1]
    new_start = k.start_ns.copy()
    new_start[later] = end[np.flatnonzero(early)]
    kernels = dataclasses.replace(k, start_ns=new_start)
    note = (f"{int(early.sum())} kernel(s) started up to {int(overlap[early].max()):,} ns before "
            "the previous kernel of their stream ended (programmatic dependent launch, as "
            "cuDNN and cuBLAS use on Hopper: the later kernel waits for the earlier); each "
            "start was moved to the previous kernel's end")
    return dataclasses.replace(tables, kernels=kernels), note


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


__all__ = ["EARLY_START_LIMIT_NS", "TOLERANCE_NS", "clip_early_starts", "drop_overlapping",
           "overlapping"]

"""One decoded trace -> one Run (kernels, memcpy, memset, cycles, metrics) and its metadata.

Why its own module: it joins the pieces (columns, launch times, cycles, device metadata)
into the schema's tables and decides what a trace without GPU work or without launches
means; it knows nothing of files or of several ranks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import msgspec
import numpy as np

from perfdiff.readers.torch_profiler.columns import (
    GpuColumns,
    first_bad_time,
    gather,
    spans_ns,
)
from perfdiff.readers.torch_profiler.cycles import (
    NO_LAUNCH,
    CycleSpans,
    assign_cycles,
    cut_cycles,
    detected_cycles,
    has_steps,
    launch_times,
)
from perfdiff.readers.torch_profiler.events import REEXPORT, BadTrace
from perfdiff.readers.torch_profiler.launches import check_shared_correlations
from perfdiff.readers.torch_profiler.metadata import TraceMeta, device_for
from perfdiff.readers.torch_profiler.ops import LaunchThreads, kernel_ops
from perfdiff.readers.torch_profiler.overlaps import clip_small_overlaps
from perfdiff.readers.torch_profiler.spellings import known_gpu_spellings, torch_of
from perfdiff.readers.torch_profiler.timestamps import us_texts_to_ns
from perfdiff.schema.model import (
    CycleTable,
    DeviceInfo,
    IntArray,
    KernelTable,
    Run,
    TransferTable,
)


@dataclass
class RankData:
    """What one trace file contributes: its run and its metadata."""

    run: Run
    names: list[str]
    devices: list[DeviceInfo]
    rank: int | None
    world_size: int | None
    schema_version: str
    driver_version: str | None
    cuda_version: str | None
    cupti_version: str | None
    host: str | None
    warnings: list[str] = field(default_factory=list)
    metric_names: list[str] = field(default_factory=list)
    sample_interval_ns: int = 0
    cycles_from: str = ""
    # the traceEvents index of each row of the run's kernels / memcpy / memset, for the
    # run-file rules' error lines
    events: dict[str, Sequence[int]] = field(default_factory=dict)
    op_labels: list[str] = field(default_factory=list)  # what kernels.op_id/module_id index


def convert_trace(meta: TraceMeta, events: list[msgspec.Raw], cycle_range: str | None, *,
                  ops: bool = False) -> RankData:
    base_ns = meta.base_ns
    gathered = gather(events, base_ns, ops=ops)
    kernels, copies, sets = gathered.kernels, gathered.copies, gathered.sets
    ranges, cpu_pids = gathered.ranges, gathered.cpu_pids
    launch_corr, launch_ts = gathered.launch_corr, gathered.launch_ts
    profiler_ranges = gathered.profiler_ranges
    metrics, interval = gathered.metrics, gathered.sample_interval_ns
    if not kernels.name and not copies.name and not sets.name:
        if profiler_ranges:
            raise BadTrace(f"no GPU kernels, only {profiler_ranges} cuda_profiler_range events "
                       "(the CUPTI range profiler's counters, without kernel records); record "
                       "with ProfilerActivity.CUDA to get kernels")
        raise BadTrace("no GPU events (no category of " + known_gpu_spellings() + "): a "
                   "CPU-only trace, or one whose GPU events perfdiff does not know yet "
                   f"(categories here: {_most_frequent(gathered.categories)}; written by "
                   f"{torch_of(gathered.categories)}; {meta.writer}); record with "
                   "torch.profiler.ProfilerActivity.CUDA on a GPU, or report the categories "
                   "above")
    gpu_spans = [cols.spans(base_ns) for cols in (kernels, copies, sets)]  # checked first
    check_shared_correlations(kernels, launch_corr, gathered.launch_name)
    try:
        launch_ns = us_texts_to_ns(launch_ts) + base_ns
    except ValueError as exc:
        row = first_bad_time(launch_ts)
        where = "" if row is None else f" at traceEvents[{gathered.launch_at[row]}]"
        raise BadTrace(f"launch event{where} with a bad time ({exc}); {REEXPORT}") from None
    launches = dict(zip(launch_corr, launch_ns.tolist(), strict=True))
    names = sorted(set(kernels.name))
    warnings: list[str] = []
    range_start, range_end = spans_ns(ranges.ts, ranges.dur, base_ns, "annotation range",
                                      ranges.at)
    range_rows = list(zip(ranges.cat, ranges.name, range_start.tolist(), range_end.tolist(),
                          ranges.device, strict=True))
    if cycle_range is None and not has_steps(range_rows):
        # graph replays matter only here: with steps or ranges, a replay's kernels belong to
        # the cycle that launched the graph, as any kernel does
        replayed = _graph_replayed(kernels.correlation)
        if replayed:
            warnings.append(f"{replayed} of {len(kernels.name)} kernels were launched by "
                            "CUDA/HIP graph replays (several kernels per launch)")
        spans, mode = detected_cycles(kernels, names, range_rows, warnings, gpu_spans[0][0],
                                      replayed=bool(replayed))
    else:
        spans, mode = cut_cycles(range_rows, cycle_range, warnings)
    run = _build_run(kernels, copies, sets, gpu_spans, names, spans, mode, launches, warnings,
                     cpu_pids)
    if metrics:
        run = replace(run, metrics=metrics)
    op_labels: list[str] = []
    if gathered.host_ops.name:  # a trace without ops (ProfilerActivity.CUDA only) says nothing
        linked = kernel_ops(gathered.host_ops, LaunchThreads(launch_corr, gathered.launch_pid,
                                                             gathered.launch_tid, launch_ns),
                            kernels.correlation, base_ns)
        run = replace(run, kernels=replace(run.kernels, op_id=linked.op_id,
                                           module_id=linked.module_id if linked.with_modules
                                           else None))
        op_labels = linked.labels
    used = sorted(set(kernels.device) | set(copies.device) | set(sets.device))
    devices = [replace(device_for(d, meta.devices, warnings), index=d) for d in used]
    run = replace(run, rank=meta.rank)
    return RankData(
        run=run, names=names, devices=devices, rank=meta.rank, world_size=meta.world_size,
        schema_version=meta.schema_version, driver_version=meta.driver_version,
        cuda_version=meta.cuda_version, cupti_version=meta.cupti_version, host=meta.host,
        warnings=warnings, metric_names=sorted({m.name for m in metrics}),
        sample_interval_ns=interval, cycles_from=spans.source, op_labels=op_labels,
        events={"kernels": kernels.event, "memcpy": copies.event, "memset": sets.event},
    )


def _most_frequent(counts: dict[str, int], shown: int = 6) -> str:
    """The categories of a trace, most frequent first, for a one-line error."""
    names = sorted(counts, key=lambda c: (-counts[c], c))
    text = ", ".join(f"{n or '(none)'} x{counts[n]}" for n in names[:shown])
    return (text + (f", {len(names) - shown} more" if len(names) > shown else "")) or "none"


def _graph_replayed(correlation: list[int]) -> int:
    """How many kernels came from graph replays (``cudaGraphLaunch``, ``hipGraphLaunch``): one
    launch, several kernels, so a correlation that several kernels share. Told by the data,
    not by the launch's name, which each CUDA/HIP version spells its own way."""
    counts = Counter(correlation)
    return sum(1 for c in correlation if c != -1 and counts[c] > 1)
def _build_run(kernels: GpuColumns, copies: GpuColumns, sets: GpuColumns,
               gpu_spans: list[tuple[IntArray, IntArray]], names: list[str],
               spans: CycleSpans, mode: str, launches: dict[int, int],
               warnings: list[str], cpu_pids: dict[int, int]) -> Run:
    name_ids = {name: i for i, name in enumerate(names)}
    tables: list[tuple[GpuColumns, IntArray, IntArray, IntArray, IntArray]] = []
    unmatched_total = 0
    unmatched_kernels = 0
    for cols, (start, end) in zip((kernels, copies, sets), gpu_spans, strict=True):
        devices = np.asarray(cols.device, dtype=np.int64)
        if mode in ("gpu", "gpu-start"):
            when = start
        else:
            when = launch_times(cols.correlation, launches)
            unmatched = int((when == NO_LAUNCH).sum())
            unmatched_total += unmatched
            unmatched_kernels += unmatched if cols is kernels else 0
        tables.append((cols, devices, start, end, assign_cycles(spans, when, devices)))
    total = len(kernels.name) + len(copies.name) + len(sets.name)
    if mode == "launch" and unmatched_total:
        if unmatched_total == total:
            raise BadTrace(f"none of the {total} GPU events has a matching launch (cuda_runtime/"
                       "cuda_driver event with the same correlation), so no step can be "
                       "told; record with ProfilerActivity.CPU as well as CUDA")
        warnings.append(f"{unmatched_total} of {total} GPU events have no matching launch "
                        "(correlation) and are outside every step")
    if mode == "launch" and unmatched_kernels and unmatched_kernels == len(kernels.name):
        # every kernel outside every step while copies are in them: a report of copies only
        raise BadTrace(f"none of the {unmatched_kernels} kernels has a matching launch "
                       "(cuda_runtime/cuda_driver event with the same args.correlation), so "
                       "no kernel can be put in a step; record with ProfilerActivity.CPU as "
                       "well as CUDA (if it was, the trace was edited or damaged: re-export "
                       "it)")
    k, k_dev, k_start, k_end, k_cycle = tables[0]
    k_end, clipped = clip_small_overlaps(k_dev, np.asarray(k.stream, dtype=np.int64), k_start,
                                         k_end, np.asarray(k.correlation, dtype=np.int64))
    if clipped:
        warnings.append(clipped)
    grid = np.asarray(k.grid, dtype=np.int64).reshape(-1, 3)
    block = np.asarray(k.block, dtype=np.int64).reshape(-1, 3)
    kernel_table = KernelTable(
        name_id=np.asarray([name_ids[n] for n in k.name], dtype=np.int64),
        device=k_dev, stream=np.asarray(k.stream, dtype=np.int64),
        start_ns=k_start, end_ns=k_end,
        cycle=k_cycle, correlation_id=np.asarray(k.correlation, dtype=np.int64),
        grid_x=grid[:, 0], grid_y=grid[:, 1], grid_z=grid[:, 2],
        block_x=block[:, 0], block_y=block[:, 1], block_z=block[:, 2],
    )
    n = len(spans.index)
    cycle_table = CycleTable(
        index=np.asarray(spans.index, dtype=np.int64),
        start_ns=np.asarray(spans.start, dtype=np.int64),
        end_ns=np.asarray(spans.end, dtype=np.int64),
        label=(spans.label,) * n,
        warmup=np.zeros(n, dtype=np.bool_),
    )
    pid = max(cpu_pids, key=lambda p: cpu_pids[p]) if cpu_pids else 0
    return Run(index=0, pid=pid, rank=None, exit_code=None, cycles=cycle_table,
               kernels=kernel_table, memcpy=_transfers(tables[1], _copy_kind),
               memset=_transfers(tables[2], lambda _name: "memset"), metrics=())


def _copy_kind(name: str) -> str:
    """"Memcpy DtoD (Device -> Device)" -> "DtoD" (the kind perfdiff's collector writes)."""
    parts = name.split()
    return parts[1] if len(parts) > 1 and parts[0].lower() == "memcpy" else name


def _transfers(table: tuple[GpuColumns, IntArray, IntArray, IntArray, IntArray],
               kind: Callable[[str], str]) -> TransferTable:
    cols, devices, start, end, cycle = table
    return TransferTable(
        kind=tuple(kind(n) for n in cols.name),
        bytes=np.asarray(cols.nbytes, dtype=np.int64), device=devices,
        stream=np.asarray(cols.stream, dtype=np.int64),
        start_ns=start, end_ns=end, cycle=cycle,
    )

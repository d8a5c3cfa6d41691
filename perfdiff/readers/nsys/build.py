"""Per-process activity -> runs -> one RunFile (one run per process, ranks where named).

Why its own module: it decides what an export *means* for perfdiff: which processes become
runs (those with GPU work and cycles), how names are interned, which devices and metric
samples belong to a run, and what is said in warnings when a process is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfdiff import __version__
from perfdiff.errors import InputError
from perfdiff.readers.nsys.activity import NO_LAUNCH, Activity
from perfdiff.readers.nsys.cycles import Cycles, NvtxRanges, assign, detected_cycles, range_cycles
from perfdiff.readers.nsys.machine import Machine
from perfdiff.readers.nsys.tables import MEMCPY_KINDS
from perfdiff.schema.model import (
    Collection,
    CycleTable,
    DeviceInfo,
    Environment,
    IntArray,
    KernelName,
    KernelTable,
    MetricSeries,
    Run,
    RunFile,
    Status,
    TransferTable,
)
from perfdiff.schema.model import Workload as WorkloadInfo
from perfdiff.schema.versions import CURRENT_VERSION

SOURCE_NAME = "nsys"  # Collection.sources entry that marks a converted export
WORKLOAD_NAME = "Nsight Systems export"


@dataclass
class Gathered:
    """Everything read from one export, before it is cut into runs."""

    kernels: Activity
    memcpy: Activity
    memset: Activity
    launches: list[IntArray]  # launch time of each row of kernels, memcpy, memset
    names: dict[int, tuple[str, str]]  # demangledName id -> (mangled, demangled)
    machine: Machine
    metrics: list[MetricSeries]
    warnings: list[str] = field(default_factory=list)


def build_run_file(data: Gathered, where: str, ranges: NvtxRanges | None,
                   params: dict[str, Any]) -> RunFile:
    """The run file of an export: a run per process that has GPU work and cycles."""
    name_ids = sorted(data.names, key=lambda i: data.names[i][1])
    position = {old: new for new, old in enumerate(name_ids)}
    ids, inverse = np.unique(data.kernels.extra["demangledName"], return_inverse=True)
    local = np.asarray([position[int(i)] for i in ids.tolist()],
                       dtype=np.int64)[inverse.reshape(-1)] if ids.size else ids
    pids = sorted(set(data.kernels.pid.tolist()) | set(data.memcpy.pid.tolist())
                  | set(data.memset.pid.tolist()))
    if not pids:
        raise InputError(f"{where}: no GPU work (no kernel, memcpy or memset records); "
                         "record with `nsys profile --trace=cuda` while the program uses the GPU")
    runs: list[Run] = []
    reasons: list[str] = []
    for pid in pids:
        cycles = _process_cycles(data, local, pid, ranges)
        if isinstance(cycles, str):
            reasons.append(f"process {pid}: {cycles}")
            continue
        runs.append(_run(data, local, pid, cycles, len(runs)))
    if not runs:
        raise InputError(f"{where}: no cycles found ({'; '.join(reasons)}); "
                         + _cycle_advice(ranges))
    data.warnings.extend(f"left out {reason}" for reason in reasons)
    used = sorted({int(d) for run in runs for d in np.concatenate(
        [run.kernels.device, run.memcpy.device, run.memset.device]).tolist()})
    unknown = [d for d in used if data.machine.devices and d not in data.machine.devices]
    if unknown:
        raise InputError(f"{where}: GPU work on device {unknown[0]}, which TARGET_INFO_GPU does "
                         f"not list (devices {sorted(data.machine.devices)}); the file is "
                         "damaged; export the report again")
    if not data.machine.devices:
        data.warnings.append("the export has no TARGET_INFO_GPU table: GPU models unknown")
    devices = tuple(data.machine.devices.get(d, DeviceInfo(index=d, name="unknown GPU", uuid="",
                                                            sm_count=0, memory_bytes=0))
                    for d in used)
    return RunFile(
        schema_version=CURRENT_VERSION, tool_version=__version__,
        status=Status("complete"),
        environment=Environment(
            host=data.machine.host or "n/a", driver_version=data.machine.driver_version,
            cuda_version=data.machine.cuda_version, cupti_version=None, torch_version=None,
            python_version="n/a", devices=devices),
        collection=Collection(
            metrics=tuple(dict.fromkeys(m.name for run in runs for m in run.metrics)),
            sample_interval_ns=max((m.interval_ns or 0 for run in runs for m in run.metrics),
                                   default=0),
            sources=(SOURCE_NAME,), warnings=tuple(dict.fromkeys(data.warnings))),
        workload=WorkloadInfo(name=WORKLOAD_NAME, params={
            **params,
            "processes": [f"pid {run.pid}: {data.machine.process_names.get(run.pid, '?')}"
                          + (f" (MPI rank {run.rank})" if run.rank is not None else "")
                          for run in runs]}),
        strings=tuple(KernelName(mangled=data.names[i][0], demangled=data.names[i][1])
                      for i in name_ids),
        runs=tuple(runs), created_unix_s=None)


def _cycle_advice(ranges: NvtxRanges | None) -> str:
    if ranges is not None:
        return (f"no process has NVTX ranges matching {ranges.pattern!r} around its GPU "
                "launches; check the pattern")
    return ("pass --cycle-range REGEX to take NVTX ranges (e.g. one per training step) as "
            "the cycles, or record more iterations")


def _process_cycles(data: Gathered, local: IntArray, pid: int,
                    ranges: NvtxRanges | None) -> Cycles | str:
    launched = [launch[activity.pid == pid] for activity, launch in
                zip((data.kernels, data.memcpy, data.memset), data.launches, strict=True)]
    total = sum(int(t.size) for t in launched)
    missing = sum(int((t == NO_LAUNCH).sum()) for t in launched)
    if missing == total:
        return (f"none of its {total} GPU records has a CUDA API launch record "
                "(CUPTI_ACTIVITY_KIND_RUNTIME with the same correlationId), so no cycle can "
                "be told; record with `nsys profile --trace=cuda`")
    if missing:
        data.warnings.append(f"process {pid}: {missing} of {total} GPU records have no CUDA "
                             "API launch record and are outside every cycle")
    if ranges is not None:
        found = ranges.by_pid.get(pid)
        if found is None:
            return f"no NVTX range matching {ranges.pattern!r}"
        return range_cycles(found[0], found[1], ranges.pattern, data.warnings)
    mine = data.kernels.pid == pid
    if not mine.any():
        return "no kernels (only memcpy/memset), so no launch sequence to repeat"
    return detected_cycles(local[mine], data.launches[0][mine])


def _run(data: Gathered, local: IntArray, pid: int, cycles: Cycles, index: int) -> Run:
    k_rows = np.flatnonzero(data.kernels.pid == pid)
    k = data.kernels
    cycle_of = [assign(cycles, launch) for launch in data.launches]
    kernels = KernelTable(
        name_id=local[k_rows], device=k.device[k_rows], stream=k.stream[k_rows],
        start_ns=k.start[k_rows], end_ns=k.end[k_rows], cycle=cycle_of[0][k_rows],
        correlation_id=k.correlation[k_rows],
        grid_x=k.extra["gridX"][k_rows], grid_y=k.extra["gridY"][k_rows],
        grid_z=k.extra["gridZ"][k_rows], block_x=k.extra["blockX"][k_rows],
        block_y=k.extra["blockY"][k_rows], block_z=k.extra["blockZ"][k_rows])
    memcpy = _transfers(data.memcpy, pid, cycle_of[1],
                        lambda rows: [MEMCPY_KINDS.get(int(c), f"kind {c}")
                                      for c in data.memcpy.extra["copyKind"][rows].tolist()])
    memset = _transfers(data.memset, pid, cycle_of[2], lambda rows: ["memset"] * rows.size)
    n = int(cycles.start.shape[0])
    table = CycleTable(index=np.arange(n, dtype=np.int64), start_ns=cycles.start,
                       end_ns=cycles.end, label=(cycles.label,) * n,
                       warmup=np.zeros(n, dtype=np.bool_))
    used = set(kernels.device.tolist()) | set(memcpy.device.tolist()) | set(
        memset.device.tolist())
    return Run(index=index, pid=pid, rank=data.machine.ranks.get(pid), exit_code=None,
               cycles=table, kernels=kernels, memcpy=memcpy, memset=memset,
               metrics=tuple(_clipped(m, kernels, cycles) for m in data.metrics
                             if m.device in used))


def _transfers(activity: Activity, pid: int, cycle: IntArray, kinds: Any) -> TransferTable:
    rows = np.flatnonzero(activity.pid == pid)
    return TransferTable(kind=tuple(kinds(rows)), bytes=activity.extra["bytes"][rows],
                         device=activity.device[rows], stream=activity.stream[rows],
                         start_ns=activity.start[rows], end_ns=activity.end[rows],
                         cycle=cycle[rows])


def _clipped(series: MetricSeries, kernels: KernelTable, cycles: Cycles) -> MetricSeries:
    """The samples that cover the run's cycles and kernels: nsys samples for the whole
    session, and samples long after the run would read as a run that never ended."""
    starts = [int(cycles.start.min())] + ([int(kernels.start_ns.min())]
                                          if kernels.start_ns.size else [])
    ends = [int(cycles.end.max())] + ([int(kernels.end_ns.max())]
                                      if kernels.end_ns.size else [])
    low, high = min(starts), max(ends) + (series.interval_ns or 0)
    keep = (series.timestamps_ns >= low) & (series.timestamps_ns <= high)
    return MetricSeries(name=series.name, unit=series.unit, source=series.source,
                        device=series.device, timestamps_ns=series.timestamps_ns[keep],
                        values=series.values[keep], interval_ns=series.interval_ns)

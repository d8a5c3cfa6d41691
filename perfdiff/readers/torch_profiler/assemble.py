"""Per-rank results -> one RunFile: kernel names merged, devices renumbered, rank notes, params.

Why its own module: several traces are ranks of one job; the rules for naming their devices
(GPU r for rank r, or GPU 0..n-1 for one trace) and for refusing mixed inputs live here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from perfdiff import __version__
from perfdiff.errors import InputError
from perfdiff.readers.torch_profiler.convert import RankData
from perfdiff.schema.model import (
    Collection,
    DeviceInfo,
    Environment,
    KernelName,
    Run,
    RunFile,
    Status,
)
from perfdiff.schema.model import Workload as WorkloadInfo
from perfdiff.schema.sense import TRACE_WORKLOAD
from perfdiff.schema.versions import CURRENT_VERSION

SOURCE_NAME = "torch_profiler"  # Collection.sources entry that marks a converted trace
WORKLOAD_NAME = TRACE_WORKLOAD  # the physical-sense rules tell a trace's cycles by it


def run_order(parts: list[RankData]) -> list[RankData]:
    """The parts in the order of the run file's runs (by rank; one trace without a rank)."""
    return sorted(parts, key=lambda p: -1 if p.rank is None else p.rank)


def assemble_run_file(parts: list[RankData], sources: list[str]) -> RunFile:
    names: list[str] = sorted({n for part in parts for n in part.names})
    ids = {n: i for i, n in enumerate(names)}
    op_labels: list[str] = sorted({n for part in parts for n in part.op_labels})
    op_ids = {n: i for i, n in enumerate(op_labels)}
    ranked = len(parts) > 1 and all(part.rank is not None for part in parts)
    if len(parts) > 1 and not ranked:
        raise InputError(f"{len(parts)} traces given but not every one has a "
                         "distributedInfo rank; give the ranks of one job, or compare the "
                         f"traces one by one ({', '.join(sources)})")
    if ranked and len({part.rank for part in parts}) != len(parts):
        raise InputError("two of the traces have the same distributedInfo rank; give each "
                         f"rank once ({', '.join(sources)})")
    runs: list[Run] = []
    devices: dict[int, DeviceInfo] = {}
    rank_notes: list[str] = []
    for part in run_order(parts):
        run = _ops_renamed(_renamed(part.run, part.names, ids), part.op_labels, op_ids)
        if ranked:
            assert part.rank is not None
            run = _on_device(run, part.rank)
            for dev in part.devices[:1]:
                devices.setdefault(part.rank, replace(dev, index=part.rank))
            if part.rank is not None:
                rank_notes.append(f"rank {part.rank}: GPU {part.rank}")
        else:
            # one trace: its devices become GPU 0..n-1, so that rank 3's cuda:3 lines up with
            # rank 1's cuda:1 of another trace (HTA likewise compares "the first rank")
            in_trace = [d.index for d in part.devices]
            run = _devices_renumbered(run, in_trace)
            for new_index, dev in enumerate(part.devices):
                devices.setdefault(new_index, replace(dev, index=new_index))
            shown = ", ".join(f"GPU {i} (cuda:{d} in the trace)" for i, d in enumerate(in_trace))
            if part.rank is not None:
                rank_notes.append(f"rank {part.rank}: {shown}")
            elif in_trace != list(range(len(in_trace))):
                rank_notes.append(shown)
        runs.append(run)
    first = parts[0]
    warnings = [w for part in parts for w in part.warnings]
    intervals = {part.sample_interval_ns for part in parts}
    params: dict[str, Any] = {
        "source_format": "torch.profiler (Kineto chrome trace)",
        "source_files": sources,
        "kineto_schema_version": sorted({part.schema_version for part in parts}),
        "cycles_from": "; ".join(dict.fromkeys(part.cycles_from for part in parts)),
        "ranks": rank_notes,
    }
    worlds = sorted({part.world_size for part in parts if part.world_size is not None})
    if worlds:
        params["world_size"] = worlds[0]
    return RunFile(
        schema_version=CURRENT_VERSION,
        tool_version=__version__,
        status=Status("complete"),
        environment=Environment(
            host=first.host or "n/a", driver_version=first.driver_version,
            cuda_version=first.cuda_version, cupti_version=first.cupti_version,
            torch_version=None, python_version="n/a",
            devices=tuple(devices[i] for i in sorted(devices)),
        ),
        collection=Collection(
            metrics=tuple(dict.fromkeys(m for part in parts for m in part.metric_names)),
            sample_interval_ns=max(intervals), sources=(SOURCE_NAME,),
            warnings=tuple(dict.fromkeys(warnings)),
        ),
        workload=WorkloadInfo(name=WORKLOAD_NAME, params=params),
        strings=tuple(KernelName(mangled=n, demangled=n) for n in names),
        runs=tuple(runs),
        created_unix_s=None,
        ops=tuple(op_labels),
    )


def _renamed(run: Run, local: list[str], ids: dict[str, int]) -> Run:
    remap = np.asarray([ids[n] for n in local], dtype=np.int64)
    k = run.kernels
    if k.name_id.size:
        k = replace(k, name_id=remap[k.name_id])
    return replace(run, kernels=k)


def _ops_renamed(run: Run, local: list[str], ids: dict[str, int]) -> Run:
    """A rank's op and module ids -> ids into the merged ops table (-1 stays unknown)."""
    remap = np.asarray([*(ids[n] for n in local), -1], dtype=np.int64)  # [-1] is unknown
    k = run.kernels
    if k.op_id is not None:
        k = replace(k, op_id=remap[k.op_id])
    if k.module_id is not None:
        k = replace(k, module_id=remap[k.module_id])
    return replace(run, kernels=k)


def _devices_renumbered(run: Run, in_trace: list[int]) -> Run:
    """Device ids of the trace -> their position in ``in_trace`` (sorted ids)."""
    order = np.asarray(in_trace, dtype=np.int64)

    def moved(table: Any) -> Any:
        return replace(table, device=np.searchsorted(order, table.device).astype(np.int64))

    position = {d: i for i, d in enumerate(in_trace)}
    return replace(run, kernels=moved(run.kernels), memcpy=moved(run.memcpy),
                   memset=moved(run.memset),
                   metrics=tuple(replace(m, device=position.get(m.device, m.device))
                                 for m in run.metrics))


def _on_device(run: Run, device: int) -> Run:
    def moved(table: Any) -> Any:
        return replace(table, device=np.full_like(table.device, device))

    return replace(run, kernels=moved(run.kernels), memcpy=moved(run.memcpy),
                   memset=moved(run.memset),
                   metrics=tuple(replace(m, device=device) for m in run.metrics))

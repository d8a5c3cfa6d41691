"""Merge run files (shards of ranks, repeated runs, separate recordings) into one run file.

Why the rules below:
- Kernel names are re-interned into one string table, so every run indexes the same names.
- A run is one process. Runs keep their ``index`` (the repetition they belong to) and
  ``rank``; when two inputs hold the same (index, rank) (e.g. two separate one-run recordings)
  runs are renumbered in input order, so replicates stay distinct ``run`` values.
- Under torchrun every rank sees its own GPU under whatever ordinal its process used; the merged
  file names devices by rank (rank r -> ``GPU r``), so the report's Device column reads
  GPU 0 .. K-1 and lines up with the ranks.
- The merged file is incomplete if any input was, with every reason kept.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from perfdiff import __version__
from perfdiff.collect.merge_checks import (
    MEASURED_PARAMS,
    check_one_experiment,
    forced_differences,
)
from perfdiff.errors import InputError
from perfdiff.schema.model import (
    Collection,
    DeviceInfo,
    Environment,
    KernelName,
    Run,
    RunFile,
    Status,
)
from perfdiff.schema.versions import CURRENT_VERSION


def merge_run_files(
    files: Sequence[RunFile], sources: Sequence[str] | None = None, *, force: bool = False
) -> RunFile:
    """One run file holding every run of ``files`` (see the module docstring)."""
    if not files:
        raise InputError("nothing to merge: give at least one run file")
    names = list(sources) if sources is not None else [f"input {i}" for i in range(len(files))]
    if not force:
        check_one_experiment(files, names)
    files = _distinct_devices(files)
    strings: list[KernelName] = []
    ids: dict[tuple[str, str], int] = {}
    per_file_runs: list[list[Run]] = []
    ops: dict[str, int] = {}  # launching-op and module labels of every input, merged
    for run_file in files:
        remap = np.asarray(
            [_intern(ids, strings, name) for name in run_file.strings], dtype=np.int64
        )
        # the last entry keeps -1 (unknown op) as it is
        op_remap = np.asarray([*(ops.setdefault(o, len(ops)) for o in run_file.ops), -1],
                              dtype=np.int64)
        per_file_runs.append([_reindex_ops(_reindex_names(run, remap), op_remap)
                              for run in run_file.runs])
    runs = _numbered(per_file_runs)
    if any(run.rank is not None for run in runs):
        runs = [_devices_by_rank(run) for run in runs]
    runs.sort(key=lambda r: (r.index, -1 if r.rank is None else r.rank, r.pid))
    first = files[0]
    return RunFile(
        schema_version=CURRENT_VERSION,
        tool_version=__version__,
        status=_status(files, names),
        environment=_environment(files, runs),
        collection=_collection(files, [] if not force else forced_differences(files, names)),
        workload=dataclasses.replace(first.workload, params=merged_params(files)),
        strings=tuple(strings),
        runs=tuple(runs),
        created_unix_s=round(time.time(), 3),
        ops=tuple(ops),
    )


def merged_params(files: Sequence[RunFile]) -> dict[str, object]:
    """The first input's workload parameters, with what the collector measured of itself in
    each run (``MEASURED_PARAMS``) kept for every run, not the first's alone: decoding times
    summed (they are per run file, and the report divides them by all its cycles), what the
    untraced cycles paused united, and the schedules listed per input where they differ (the
    report summarises them)."""
    params = dict(files[0].workload.params)
    for key in sorted(MEASURED_PARAMS):
        values = [f.workload.params[key] for f in files if key in f.workload.params]
        if len(values) < 2:
            continue
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            params[key] = round(sum(float(v) for v in values), 3)
        elif all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in values):
            params[key] = sorted({x for v in values for x in v})
        elif any(v != values[0] for v in values):
            params[key] = values
    return params


def _distinct_devices(files: Sequence[RunFile]) -> list[RunFile]:
    """Give a device of a later unranked input that collides by index with a different GPU
    (another uuid or model) the next free index, in its environment and its runs alike: every
    input's devices stay in the merged environment (an H200 merged with --force into an H100 file no
    longer disappears, so a later compare still sees both models)."""
    taken: dict[int, tuple[str, str]] = {}
    out = []
    for run_file in files:
        ranked = any(run.rank is not None for run in run_file.runs)
        remap: dict[int, int] = {}
        for device in run_file.environment.devices:
            identity = (device.uuid, device.name)
            owner = taken.get(device.index)
            if owner is not None and owner != identity and not ranked:
                new = max(taken) + 1
                remap[device.index] = new
                taken[new] = identity
            else:
                taken.setdefault(device.index, identity)
        out.append(_renumbered(run_file, remap) if remap else run_file)
    return out


def _renumbered(run_file: RunFile, remap: dict[int, int]) -> RunFile:
    def column(values: np.ndarray[tuple[int], np.dtype[np.int64]]
               ) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
        out = values.copy()
        for old, new in remap.items():
            out[values == old] = new
        return out

    runs = tuple(dataclasses.replace(
        run,
        kernels=dataclasses.replace(run.kernels, device=column(run.kernels.device)),
        memcpy=dataclasses.replace(run.memcpy, device=column(run.memcpy.device)),
        memset=dataclasses.replace(run.memset, device=column(run.memset.device)),
        metrics=tuple(dataclasses.replace(m, device=remap.get(m.device, m.device))
                      for m in run.metrics),
    ) for run in run_file.runs)
    devices = tuple(dataclasses.replace(d, index=remap.get(d.index, d.index))
                    for d in run_file.environment.devices)
    return dataclasses.replace(run_file, runs=runs, environment=dataclasses.replace(
        run_file.environment, devices=devices))


def _intern(ids: dict[tuple[str, str], int], strings: list[KernelName], name: KernelName) -> int:
    key = (name.mangled, name.demangled)
    found = ids.get(key)
    if found is None:
        found = ids[key] = len(strings)
        strings.append(name)
    return found


def _reindex_names(run: Run, remap: np.ndarray[tuple[int], np.dtype[np.int64]]) -> Run:
    kernels = run.kernels
    if kernels.name_id.size:
        kernels = dataclasses.replace(kernels, name_id=remap[kernels.name_id])
    return dataclasses.replace(run, kernels=kernels)


def _reindex_ops(run: Run, remap: np.ndarray[tuple[int], np.dtype[np.int64]]) -> Run:
    """An input's op and module ids -> ids into the merged ``ops`` table."""
    k = run.kernels
    if k.op_id is not None:
        k = dataclasses.replace(k, op_id=remap[k.op_id])
    if k.module_id is not None:
        k = dataclasses.replace(k, module_id=remap[k.module_id])
    return dataclasses.replace(run, kernels=k)


def _numbered(per_file_runs: list[list[Run]]) -> list[Run]:
    """Keep run indices when (index, rank) is unique, else renumber by (input, index)."""
    flat = [run for runs in per_file_runs for run in runs]
    keys = [(run.index, run.rank) for run in flat]
    if len(set(keys)) == len(keys):
        return flat
    numbers: dict[tuple[int, int], int] = {}
    out = []
    for file_no, runs in enumerate(per_file_runs):
        for run in runs:
            number = numbers.setdefault((file_no, run.index), len(numbers))
            out.append(dataclasses.replace(run, index=number))
    return out


def _devices_by_rank(run: Run) -> Run:
    """Every device of a rank's run becomes ``rank`` (one GPU per rank, as torchrun runs)."""
    if run.rank is None:
        return run
    rank = run.rank
    k, c, s = run.kernels, run.memcpy, run.memset
    return dataclasses.replace(
        run,
        kernels=dataclasses.replace(k, device=np.full_like(k.device, rank)),
        memcpy=dataclasses.replace(c, device=np.full_like(c.device, rank)),
        memset=dataclasses.replace(s, device=np.full_like(s.device, rank)),
        metrics=tuple(dataclasses.replace(m, device=rank) for m in run.metrics),
    )


def _status(files: Sequence[RunFile], names: Sequence[str]) -> Status:
    reasons = [
        f"{name}: {f.status.reason or 'incomplete'}"
        for f, name in zip(files, names, strict=True)
        if f.status.state != "complete"
    ]
    if not reasons:
        return Status("complete")
    return Status("incomplete", "; ".join(dict.fromkeys(reasons)))


def _environment(files: Sequence[RunFile], runs: list[Run]) -> Environment:
    """The first file's environment with every input's devices (by rank when ranked)."""
    devices: dict[int, DeviceInfo] = {}
    ranked = any(run.rank is not None for run in runs)
    for run_file in files:
        file_ranks = {run.rank for run in run_file.runs}
        for device in run_file.environment.devices:
            if ranked and len(file_ranks) == 1 and None not in file_ranks:
                rank = next(iter(file_ranks))
                assert rank is not None
                device = dataclasses.replace(device, index=rank)
            devices.setdefault(device.index, device)
    first = files[0].environment
    return dataclasses.replace(first, devices=tuple(devices[i] for i in sorted(devices)))


def _collection(files: Sequence[RunFile], forced: Sequence[str] = ()) -> Collection:
    first = files[0].collection
    warnings = [*forced, *(w for f in files for w in f.collection.warnings)]
    intervals = {f.collection.sample_interval_ns for f in files}
    if len(intervals) > 1:
        warnings.append(
            f"merged inputs used different PM sampling intervals ({sorted(intervals)} ns)"
        )
    return Collection(
        metrics=tuple(dict.fromkeys(m for f in files for m in f.collection.metrics)),
        sample_interval_ns=first.sample_interval_ns,
        sources=tuple(dict.fromkeys(s for f in files for s in f.collection.sources)),
        warnings=tuple(dict.fromkeys(warnings)),
    )


__all__ = ["merge_run_files"]

"""The entry: an export (or report) path -> a validated RunFile.

Why a module that only walks the steps: open read-only, check the schema, read activity,
names, launches, machine, metrics, cycles; build; then the run-file rules once
(:func:`perfdiff.schema.sense.check_run_file`). Each step raises its own one-line error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfdiff.readers.cycle_range import CycleRange
from perfdiff.readers.nsys.activity import (
    kernel_names,
    launch_times,
    read_kernels,
    read_memcpy,
    read_memset,
)
from perfdiff.readers.nsys.budget import check_budget
from perfdiff.readers.nsys.build import Gathered, build_run_file
from perfdiff.readers.nsys.cycles import nvtx_ranges
from perfdiff.readers.nsys.database import Export, is_sqlite_file, open_export
from perfdiff.readers.nsys.machine import read_machine
from perfdiff.readers.nsys.metrics import read_metrics
from perfdiff.readers.nsys.rep import exported, is_report
from perfdiff.schema.model import RunFile
from perfdiff.schema.sense import check_run_file


def read_nsys(path: str | Path, *, cycle_range: str | None = None) -> RunFile:
    """The run file of an nsys SQLite export, or of a ``.nsys-rep`` (converted by nsys).

    ``cycle_range``: a regular expression; cycles are the NVTX ranges whose whole text matches
    it. Without it, cycles are where each process's kernel launch sequence repeats.
    """
    p = Path(path)
    if cycle_range is not None:
        CycleRange.parse(cycle_range)  # a bad pattern is a usage error before any reading
    if is_report(p) and not is_sqlite_file(p):
        with exported(p) as sqlite_path:
            return _read(sqlite_path, cycle_range, shown=p)
    return _read(p, cycle_range, shown=p)


def _read(path: Path, cycle_range: str | None, shown: Path) -> RunFile:
    with open_export(path) as export:
        export = Export(path=shown, connection=export.connection, columns=export.columns,
                        product_version=export.product_version,
                        schema_version=export.schema_version)
        data = _gather(export)
        ranges = nvtx_ranges(export, cycle_range) if cycle_range is not None else None
        params: dict[str, Any] = {
            "source_format": "Nsight Systems SQLite export",
            "source_files": [str(shown)],
            "nsys_version": export.product_version,
            "export_schema_version": export.schema_version,
            "cycles_from": (f"NVTX ranges matching {cycle_range!r}" if cycle_range
                            else "detected launch period"),
        }
        run_file = build_run_file(data, export.where(), ranges, params)
    check_run_file(run_file, str(shown))  # the run-file rules, once
    return run_file


def _gather(export: Export) -> Gathered:
    check_budget(export)  # before any row is read
    kernels, memcpy, memset = read_kernels(export), read_memcpy(export), read_memset(export)
    machine = read_machine(export)
    warnings: list[str] = []
    used = {int(d) for a in (kernels, memcpy, memset) for d in set(a.device.tolist())}
    return Gathered(kernels=kernels, memcpy=memcpy, memset=memset,
                    launches=launch_times(export, [kernels, memcpy, memset]),
                    names=kernel_names(export, kernels), machine=machine,
                    metrics=read_metrics(export, used, warnings), warnings=warnings)

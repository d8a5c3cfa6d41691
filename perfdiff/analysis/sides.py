"""Load one side of a comparison: a run file (.json/.json.gz) or a LatencyPrism folder.

Why one loader: ``compare`` takes either kind of input for either side; everything the
statistics need is the cycle table plus a little metadata (:class:`SideMeta`) for the report's
header, environment section and the "can these be compared?" check.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from perfdiff.analysis.cycle_table import cycle_table
from perfdiff.analysis.self_overhead import self_overhead_notes
from perfdiff.analysis.window_work import WindowWork, per_unit_of_work
from perfdiff.errors import InputError
from perfdiff.inputs import require_input
from perfdiff.readers.latencyprism import PERF_FILE, is_latencyprism_folder, load_latencyprism
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile

LATENCYPRISM_KIND = "latencyprism"
RUN_FILE_KIND = "run file"


@dataclass(frozen=True)
class SideMeta:
    """What the report says about an input besides its numbers."""

    source: str
    kind: str  # RUN_FILE_KIND or LATENCYPRISM_KIND
    workload: str = ""
    gpu_models: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()
    # fixed-window cycles (--cycle-ms): how they were turned into units of work
    window: WindowWork | None = None


@dataclass(frozen=True)
class Side:
    """A loaded input: its cycle table and metadata (and its run file, when it is one: the
    figures show warm-up cycles and collector marks, which the table leaves out)."""

    table: pd.DataFrame
    meta: SideMeta
    run_file: RunFile | None = None


def load_side(path: str | Path) -> Side:
    """Load a run file or a LatencyPrism ``*_perf_data`` folder (InputError on anything else)."""
    p = require_input(path, folder_ok=True)
    if p.is_file() and p.name == PERF_FILE:  # the CSV itself: take its folder
        p = p.parent
    if p.is_dir():
        if not is_latencyprism_folder(p):
            raise InputError(
                f"{p}: is a folder without result_perf_data.csv; pass a run file "
                "(.json/.json.gz) or a LatencyPrism '*_perf_data' folder"
            )
        table = load_latencyprism(p)
        return Side(table, SideMeta(source=str(p), kind=LATENCYPRISM_KIND, workload=p.parent.name))
    run_file = load_run_file(p)
    return side_from_run_file(run_file, source=str(p))


def side_from_run_file(run_file: RunFile, *, source: str = "<memory>") -> Side:
    """Cycle table and metadata of an already-loaded run file (fixed windows are turned into
    units of work: ``window_work.py``)."""
    table, window = per_unit_of_work(run_file, cycle_table(run_file))
    meta = run_file_meta(run_file, source=source)
    if window is not None:
        meta = replace(meta, window=window)
    return Side(table, meta, run_file)


def run_file_meta(run_file: RunFile, *, source: str) -> SideMeta:
    """Environment as ordered (key, value) pairs, for the report's environment section."""
    env = run_file.environment
    gpus = tuple(sorted({d.name for d in env.devices}))
    pairs: list[tuple[str, str]] = [
        ("GPU", ", ".join(gpus) or "n/a"),
        ("driver", env.driver_version or "n/a"),
        ("CUDA", env.cuda_version or "n/a"),
        ("CUPTI", env.cupti_version or "n/a"),
        ("torch", env.torch_version or "n/a"),
        ("Python", env.python_version),
        ("host", env.host),
    ]
    clocks = sorted({(d.sm_clock_mhz, d.mem_clock_mhz) for d in env.devices}, key=str)
    for sm, mem in clocks:
        pairs.append(
            (
                "clocks (SM/mem MHz)",
                f"{sm if sm is not None else 'n/a'}/{mem if mem is not None else 'n/a'}",
            )
        )
    pairs.append(("perfdiff", run_file.tool_version))
    warnings = list(run_file.collection.warnings)
    warnings.extend(self_overhead_notes(run_file, source))
    if run_file.status.state != "complete":
        warnings.append(f"{source}: incomplete run ({run_file.status.reason or 'no reason given'})")
    return SideMeta(
        source=source,
        kind=RUN_FILE_KIND,
        workload=run_file.workload.name,
        gpu_models=gpus,
        environment=tuple(pairs),
        warnings=tuple(warnings),
    )

"""Load one side of a comparison: a run file, a torch.profiler trace or a LatencyPrism folder.

Why one loader: ``compare`` takes either kind of input for either side; everything the
statistics need is the cycle table plus a little metadata (:class:`SideMeta`) for the report's
header, environment section and the "can these be compared?" check.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from perfdiff.analysis.self_overhead import self_overhead_notes
from perfdiff.errors import InputError
from perfdiff.inputs import require_input
from perfdiff.readers.dispatch import load_trace
from perfdiff.readers.latencyprism import PERF_FILE, is_latencyprism_folder
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile

if TYPE_CHECKING:
    import pandas as pd

    from perfdiff.analysis.window_work import WindowWork

# The tables (pandas) are imported by the functions that build them: reading an input
# (:func:`read_input`) loads no pandas, so that ``compare`` can read both inputs before it
# loads the analysis, and the reader's peak memory (a trace's whole text at once) does not
# sit on top of pandas and scipy (bench/README.md, issue 15).

LATENCYPRISM_KIND = "latencyprism"
RUN_FILE_KIND = "run file"
IMPORTED_KIND = "imported trace"  # a run file converted from another tool's trace
# inputs whose cycles were recorded with every launch traced (CUPTI activity records or
# torch.profiler): the recording's host cost is inside their cycles (headline.py)
TRACED_KINDS = frozenset({RUN_FILE_KIND, IMPORTED_KIND})


@dataclass(frozen=True)
class SideMeta:
    """What the report says about an input besides its numbers."""

    source: str
    kind: str  # RUN_FILE_KIND, LATENCYPRISM_KIND or IMPORTED_KIND
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


@dataclass(frozen=True)
class Input:
    """An input as read, before its table is built: a run file (perfdiff's own, or converted
    from a torch.profiler trace), or a LatencyPrism folder (whose CSV is the table)."""

    source: str
    run_file: RunFile | None = None
    latencyprism_folder: Path | None = None


def load_side(path: str | Path, *, cycle_range: str | None = None) -> Side:
    """Load a run file, a torch.profiler trace (file or folder of ranks) or a LatencyPrism
    ``*_perf_data`` folder (InputError on anything else)."""
    return side_of(read_input(path, cycle_range=cycle_range))


def read_input(path: str | Path, *, cycle_range: str | None = None) -> Input:
    """Find what ``path`` is and read it, without building its table (no pandas)."""
    p = require_input(path, folder_ok=True)
    converted = load_trace(p, cycle_range=cycle_range)
    if converted is not None:
        return Input(str(p), run_file=converted)
    if p.is_file() and p.name == PERF_FILE:  # the CSV itself: take its folder
        p = p.parent
    if p.is_dir():
        if not is_latencyprism_folder(p):
            raise InputError(
                f"{p}: is a folder without result_perf_data.csv; pass a run file "
                "(.json/.json.gz) or a LatencyPrism '*_perf_data' folder"
            )
        return Input(str(p), latencyprism_folder=p)
    return Input(str(p), run_file=load_run_file(p))


def side_of(found: Input) -> Side:
    """The cycle table and metadata of an input read by :func:`read_input`."""
    if found.run_file is not None:
        return side_from_run_file(found.run_file, source=found.source)
    from perfdiff.readers.latencyprism import load_latencyprism

    folder = found.latencyprism_folder
    assert folder is not None  # an Input is one or the other
    table = load_latencyprism(folder)
    return Side(table, SideMeta(source=found.source, kind=LATENCYPRISM_KIND,
                                workload=folder.parent.name))


def side_from_run_file(run_file: RunFile, *, source: str = "<memory>") -> Side:
    """Cycle table and metadata of an already-loaded run file (fixed windows are turned into
    units of work: ``window_work.py``)."""
    from perfdiff.analysis.cycle_table import cycle_table
    from perfdiff.analysis.window_work import per_unit_of_work

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
    imported = _imported_lines(run_file)
    pairs.extend(imported)
    warnings = list(run_file.collection.warnings)
    warnings.extend(self_overhead_notes(run_file, source))
    if run_file.status.state != "complete":
        warnings.append(f"{source}: incomplete run ({run_file.status.reason or 'no reason given'})")
    return SideMeta(
        source=source,
        kind=IMPORTED_KIND if imported else RUN_FILE_KIND,
        workload=run_file.workload.name,
        gpu_models=gpus,
        environment=tuple(pairs),
        warnings=tuple(warnings),
    )


def _imported_lines(run_file: RunFile) -> list[tuple[str, str]]:
    """Where a converted trace came from, and which rank each GPU is (readers fill
    ``workload.params``: source_format, kineto_schema_version, cycles_from, ranks)."""
    params = run_file.workload.params
    source_format = params.get("source_format")
    if not isinstance(source_format, str):
        return []
    versions = params.get("kineto_schema_version") or []
    version_text = ", ".join(map(str, versions)) if isinstance(versions, list) else ""
    line = source_format + (f", schema {version_text}" if version_text else "")
    cycles_from = params.get("cycles_from")
    if isinstance(cycles_from, str):
        line += f"; cycles from {cycles_from}"
    out = [("source", line)]
    ranks = params.get("ranks")
    if isinstance(ranks, list) and ranks:
        out.append(("ranks", "; ".join(map(str, ranks))))
    return out

"""One side of a comparison: the cycle table and metadata of an input the door has read.

Why one function (:func:`side_of`): ``compare`` takes any kind of input for either side
(``perfdiff.readers.dispatch`` reads it; analysis opens no files); everything the
statistics need is the cycle table plus a little metadata (:class:`SideMeta`) for the report's
header, environment section and the "can these be compared?" check.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from perfdiff.analysis.self_overhead import other_tool_cost_note, self_overhead_notes
from perfdiff.schema.loaded import (
    IMPORTED_KIND,
    LATENCYPRISM_KIND,
    RUN_FILE_KIND,
    CycleRows,
    LoadedInput,
)
from perfdiff.schema.model import RunFile

if TYPE_CHECKING:
    import pandas as pd

    from perfdiff.analysis.window_work import WindowWork

# The tables (pandas) are imported by the functions that build them: the door
# (``perfdiff.readers.dispatch``) reads both inputs before the analysis is loaded, so that the
# reader's peak memory (a trace's whole text at once) does not sit on top of pandas and scipy
# (bench/README.md, issue 15).

# inputs whose cycles were recorded with every launch traced (CUPTI activity records or
# torch.profiler): the recording's host cost is inside their cycles (headline.py)
TRACED_KINDS = frozenset({RUN_FILE_KIND, IMPORTED_KIND})

__all__ = ["IMPORTED_KIND", "LATENCYPRISM_KIND", "RUN_FILE_KIND", "TRACED_KINDS", "Side",
           "SideMeta", "cycle_rows_table", "run_file_meta", "side_from_run_file", "side_of"]


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


def side_of(found: LoadedInput) -> Side:
    """The cycle table and metadata of an input read by the door
    (``perfdiff.readers.dispatch.open_input``)."""
    if found.run_file is not None:
        return side_from_run_file(found.run_file, source=found.source)
    assert found.cycle_rows is not None  # a LoadedInput is one or the other
    # per-cycle rows reduced by another tool (LatencyPrism): its traced time, like a trace's
    return Side(cycle_rows_table(found.cycle_rows),
                SideMeta(source=found.source, kind=found.kind, workload=found.workload,
                         warnings=(other_tool_cost_note(found.source, "LatencyPrism folder"),)))


def cycle_rows_table(rows: CycleRows) -> pd.DataFrame:
    """Per-cycle rows reduced by another tool (LatencyPrism) as the cycle table (one run)."""
    import pandas as pd

    from perfdiff.analysis import columns as C

    return pd.DataFrame({
        C.RUN: 0, C.PID: rows.pid, C.DEVICE: rows.device, C.CYCLE: rows.cycle,
        C.CYCLE_MS: rows.cycle_ms, C.ANCHOR: rows.anchor, C.FUNCTION: rows.function,
        C.FUNC_TYPE: rows.func_type, C.METRIC: rows.metric, C.TIME_MS: rows.time_ms,
        C.CYCLE_SHARE_PCT: rows.cycle_share_pct, C.METRIC_MEAN: rows.metric_mean,
        C.LAUNCHES: rows.launches,
    })


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

"""``perfdiff import TRACE... -o run.json.gz``: save a torch.profiler trace or an nsys export
as a run file.

Why: a converted trace loads in a fraction of the time the trace takes to parse, and the run
file keeps where it came from (``workload.params``: source files, Kineto schema version, what
the cycles are). Several traces (or a folder) are the ranks of one job: devices are named by
rank, as ``perfdiff merge`` names shards.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from perfdiff.cli.options import steps_option


def import_trace(
    ctx: typer.Context,
    traces: Annotated[list[Path], typer.Argument(
        readable=False, help="torch.profiler traces (.json/.json.gz, *.pt.trace.json.gz) or "
        "folders of per-rank traces; or one Nsight Systems export (.sqlite) or report "
        "(.nsys-rep).")],
    *,
    output: Annotated[Path, typer.Option("--output", "-o", readable=False,
                                         help="Run file to write.")],
    cycle_range: Annotated[str | None, typer.Option(
        "--cycle-range", metavar="REGEX", help="Cycles are the user_annotation "
        "(record_function) or gpu_user_annotation ranges whose whole name matches REGEX "
        "instead of ProfilerStep#N; for an Nsight Systems export, the NVTX ranges whose whole "
        "text matches REGEX.")] = None,
    steps: Annotated[str | None, steps_option("each trace")] = None,
    allow_missing_ranks: Annotated[bool, typer.Option(
        "--allow-missing-ranks", help="Leave out a rank file of a folder that cannot be read "
        "(the run file notes how many) instead of stopping.")] = False,
    shards: Annotated[bool, typer.Option(
        "--shards", help="Write OUTPUT as a sharded run: a folder with one Parquet shard per "
        "rank, read rank by rank by compare and ranks (needs perfdiff[dask]).")] = False,
) -> None:
    """Convert torch.profiler (Kineto) traces into one perfdiff run file."""
    from perfdiff.readers.dispatch import ReadOptions, import_inputs
    from perfdiff.readers.steps import StepRange
    from perfdiff.schema.io import save_run_file

    read = ReadOptions(cycle_range=cycle_range,  # ops: so that the run file answers --by op
                       steps=None if steps is None else StepRange.parse(steps), ops=True)
    # the door: what each path is (one export, or traces that are ranks), checked once
    run_file = import_inputs(traces, read, ctx.obj, allow_missing_ranks=allow_missing_ranks)
    run_file = replace(run_file, created_unix_s=round(time.time(), 3))
    if shards:
        from perfdiff.schema.shards import write_shards

        written = write_shards(run_file, output, inputs=tuple(traces))
    else:
        written = save_run_file(run_file, output, inputs=traces)
    kernels = sum(int(r.kernels.name_id.size) for r in run_file.runs)
    cycles = sum(int(r.cycles.index.size) for r in run_file.runs)
    ranks = [r.rank for r in run_file.runs if r.rank is not None]
    for warning in run_file.collection.warnings:
        if "--allow-missing-ranks" in warning:
            typer.echo(f"perfdiff: warning: {warning}", err=True)
    typer.echo(f"perfdiff: wrote {written} - {len(run_file.runs)} trace(s), {cycles} cycles, "
               f"{kernels} kernels, {len(run_file.strings)} distinct"
               + (f", ranks {ranks}" if ranks else ""))

"""``perfdiff ranks RUN``: which rank of one job holds the others back, and why.

Thin on purpose: parse options, call :func:`perfdiff.analysis.ranks.entry.ranks_of_input`,
render (:mod:`perfdiff.report.ranks`), print or write through the one output helper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfdiff.analysis.ranks.model import DEFAULT_GPU_CV_PCT
from perfdiff.cli.options import (
    OutputFormat,
    alpha_option,
    format_option,
    output_option,
    steps_option,
)

# The analysis (pandas) and the renderer are imported inside the command: every perfdiff
# command, --help included, imports every command module to register it.


def ranks(
    ctx: typer.Context,
    run: Annotated[Path, typer.Argument(
        readable=False,
        help="One job with every rank: a run file (.json/.json.gz), a torch.profiler trace "
        "folder of per-rank traces, or a LatencyPrism '*_perf_data' folder.")],
    *,
    output: Annotated[Path | None, output_option("the report")] = None,
    output_format: Annotated[OutputFormat, format_option()] = OutputFormat.markdown,
    alpha: Annotated[float, alpha_option("over the ranks")] = 0.05,
    threshold: Annotated[float, typer.Option(
        "--threshold", min=0.0, help="A straggler's excess GPU work must exceed this share "
        "of its cycle (%).")] = 1.0,
    gpu_cv_pct: Annotated[float, typer.Option(
        "--gpu-cv-pct", min=0.0, help="How much the same work may differ between healthy "
        "GPUs of the job (%), added to each test's uncertainty.")] = DEFAULT_GPU_CV_PCT,
    top: Annotated[int, typer.Option(
        "--top", min=1, help="Kernels named per straggler in markdown.")] = 10,
    cycle_range: Annotated[str | None, typer.Option(
        "--cycle-range", help="torch.profiler traces: the annotation that cuts cycles.")]
    = None,
    steps: Annotated[str | None, steps_option("each rank")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", metavar="ADDRESS", help="Sharded runs: map the ranks on this Dask "
        "scheduler (default: DASK_SCHEDULER_ADDRESS, else in-process or a local cluster by "
        "size).")] = None,
) -> None:
    """Set each rank of one job against the others: name the straggler and its kernels."""
    from perfdiff.analysis.ranks.model import RanksOptions
    from perfdiff.cli.progress import rank_progress
    from perfdiff.engine.run import ranks_of_path
    from perfdiff.engine.settings import EngineSettings
    from perfdiff.report.ranks import render_ranks_json, render_ranks_markdown

    options = RanksOptions(alpha=alpha, practical_threshold_pct=threshold,
                           gpu_cv_pct=gpu_cv_pct, top=top)
    from perfdiff.readers.dispatch import ReadOptions
    from perfdiff.readers.steps import StepRange

    read = ReadOptions(cycle_range=cycle_range,
                       steps=None if steps is None else StepRange.parse(steps))
    with rank_progress() as progress:
        report = ranks_of_path(run, options, read=read, checked=ctx.obj,
                               settings=EngineSettings(scheduler=scheduler), progress=progress)
    text = (render_ranks_json(report) if output_format is OutputFormat.json
            else render_ranks_markdown(report))
    if output is None:
        typer.echo(text, nl=False)
        return
    from perfdiff.output import write_atomic

    write_atomic(output, text, inputs=[run], what="the ranks report")
    typer.echo(f"perfdiff: wrote {output}", err=True)

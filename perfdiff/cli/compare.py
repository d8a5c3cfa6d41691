"""``perfdiff compare NORMAL ABNORMAL``: the typer command (options, help, usage errors).

Thin on purpose: the options become a :class:`CompareArgs` and :func:`run_compare` does the
work (load both sides, compare, render, write, the ``--fail-on-regression`` exit code). The
console script runs plain command lines through the same ``run_compare`` without typer
(``compare_run.py`` says why); this command is the door for everything else, and its
declarations are what the fast door's option table is checked against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfdiff.cli.app import app
from perfdiff.cli.compare_run import (
    DEFAULT_FIGURES,
    CompareArgs,
    ReportFormat,
    figure_links,
    figures_folder,
    run_compare,
)
from perfdiff.cli.options import (
    alpha_option,
    fail_on_regression_option,
    output_option,
)

# The analysis (pandas, scipy) and the renderers are imported by run_compare: every perfdiff
# command, --help included, imports every command module to register it, and those imports
# cost about a second.


_D = CompareArgs  # the command's defaults are CompareArgs' (one place, both doors)


@app.command()
def compare(
    normal: Annotated[Path, typer.Argument(
        readable=False,  # perfdiff.inputs says why in one line (exit 3), not click (exit 2)
        help="Baseline: a run file (.json/.json.gz), a torch.profiler trace (or a folder of "
        "per-rank traces) or a LatencyPrism '*_perf_data' folder.")],
    abnormal: Annotated[Path, typer.Argument(
        readable=False,
        help="The run to explain, same kinds of input as NORMAL.")],
    *,
    output: Annotated[Path | None, output_option("the report")] = None,
    output_format: Annotated[ReportFormat, typer.Option(
        "--format", help="markdown (the report), json (every number, full names, "
        "versioned envelope) or html (one self-contained file: the report, every row of the "
        "detailed table sortable, the figures inline).")] = _D.output_format,
    top: Annotated[int, typer.Option(
        "--top", min=0, help="Key findings described in prose.")] = _D.top,
    rows: Annotated[int, typer.Option(
        "--rows", min=0, help="Rows of the detailed table in markdown (0: all).")] = _D.rows,
    alpha: Annotated[float, alpha_option("for the q-values")] = _D.alpha,
    threshold: Annotated[float, typer.Option(
        "--threshold", min=0.0, help="Practical threshold: a function's change of time per "
        "cycle must exceed this % of cycle time to count.")] = _D.threshold,
    run_cv_pct: Annotated[float, typer.Option(
        "--run-cv-pct", min=0.0, metavar="PCT",
        help="Run-to-run variation (CV, %) assumed for a side recorded in one run, which "
        "cannot show it; GPU idle: % of the cycle. Ignored with >= 2 runs per side (measured "
        "there).")] = _D.run_cv_pct,
    fail_on_regression: Annotated[float | None, fail_on_regression_option(
        "the cycle time, or a function's time per cycle (as % of cycle time),")] = None,
    plots: Annotated[str | None, typer.Option(
        "--plots", metavar="[DIR]", help="Write the figures (PNG and SVG) into DIR, or "
        "with no DIR beside the report (REPORT-figures/), and link them from the markdown "
        "(needs matplotlib: pip install 'perfdiff\\[plots]').")] = None,
    seed_compatible: Annotated[bool, typer.Option(
        "--seed-compatible", help="Reproduce LatencyPrism's numbers, ranking and sections "
        "1-2 layout.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Compare runs from different GPU models or workloads anyway.")] = False,
    label_normal: Annotated[str, typer.Option(
        "--label-normal", help="Name of the NORMAL side in the report.")] = _D.label_normal,
    label_abnormal: Annotated[str, typer.Option(
        "--label-abnormal", help="Name of the ABNORMAL side in the report.")] = _D.label_abnormal,
    cycle_range: Annotated[str | None, typer.Option(
        "--cycle-range", metavar="REGEX", help="torch.profiler traces: cycles are the "
        "user_annotation (record_function) or gpu_user_annotation ranges whose whole name "
        "matches REGEX (a plain name matches itself) instead of ProfilerStep#N; Nsight Systems "
        "exports: the NVTX ranges whose whole text matches REGEX.")] = None,
    steps: Annotated[str | None, typer.Option(
        "--steps", metavar="A:B", help="Compare only the measured cycles A to B-1 of each "
        "side, counted from 0 in time order (2:10, 3:, :5, -4:); any kind of input.")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", metavar="ADDRESS", help="Sharded runs: map the ranks on this Dask "
        "scheduler (tcp://host:8786; default: DASK_SCHEDULER_ADDRESS, else in-process or a "
        "local cluster by size).")] = None,
) -> None:
    """Compare two runs: which functions made ABNORMAL slower than NORMAL, and why."""
    code = run_compare(CompareArgs(
        normal=normal, abnormal=abnormal, output=output, output_format=output_format,
        top=top, rows=rows, alpha=alpha, threshold=threshold, run_cv_pct=run_cv_pct,
        fail_on_regression=fail_on_regression, plots=plots, seed_compatible=seed_compatible,
        force=force, label_normal=label_normal, label_abnormal=label_abnormal,
        cycle_range=cycle_range, steps=steps, scheduler=scheduler))
    if code:
        raise typer.Exit(code)


__all__ = ["DEFAULT_FIGURES", "ReportFormat", "compare", "figure_links", "figures_folder"]

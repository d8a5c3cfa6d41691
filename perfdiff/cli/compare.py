"""``perfdiff compare NORMAL ABNORMAL``: load both sides, compare, render, gate CI.

Thin on purpose: options become a :class:`CompareOptions`; loading, the comparability rule and
the statistics are one call (``perfdiff.analysis.entry.compare_inputs``); the text is one of
the pure renderers in ``perfdiff.report``. What lives here is only the process: where the
output goes and the ``--fail-on-regression`` exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from perfdiff.cli.app import app
from perfdiff.cli.options import (
    OutputFormat,
    alpha_option,
    fail_on_regression_option,
    format_option,
    output_option,
)
from perfdiff.errors import ExitCode

# The analysis (pandas, scipy) and the renderers are imported inside the functions that use
# them: every perfdiff command, --help included, imports every command module to register it,
# and those imports cost about a second.


@app.command()
def compare(
    normal: Annotated[Path, typer.Argument(
        readable=False,  # perfdiff.inputs says why in one line (exit 3), not click (exit 2)
        help="Baseline: a run file (.json/.json.gz) or a LatencyPrism '*_perf_data' folder.")],
    abnormal: Annotated[Path, typer.Argument(
        readable=False,
        help="The run to explain, same kinds of input as NORMAL.")],
    *,
    output: Annotated[Path | None, output_option("the report")] = None,
    output_format: Annotated[OutputFormat, format_option()] = OutputFormat.markdown,
    top: Annotated[int, typer.Option(
        "--top", min=0, help="Key findings described in prose.")] = 3,
    rows: Annotated[int, typer.Option(
        "--rows", min=0, help="Rows of the detailed table in markdown (0: all).")] = 30,
    alpha: Annotated[float, alpha_option("for the q-values")] = 0.05,
    threshold: Annotated[float, typer.Option(
        "--threshold", min=0.0, help="Practical threshold: a function's change of time per "
        "cycle must exceed this % of cycle time to count.")] = 1.0,
    run_cv_pct: Annotated[float, typer.Option(
        "--run-cv-pct", min=0.0, metavar="PCT",
        help="Run-to-run variation (CV, %) assumed for a side recorded in one run, which "
        "cannot show it; GPU idle: % of the cycle. Ignored with >= 2 runs per side (measured "
        "there).")] = 2.0,
    fail_on_regression: Annotated[float | None, fail_on_regression_option(
        "the cycle time, or a function's time per cycle (as % of cycle time),")] = None,
    plots: Annotated[Path | None, typer.Option(
        "--plots", readable=False, help="Write PNG plots into this folder (needs "
        "matplotlib: pip install 'perfdiff\\[plots]').")] = None,
    seed_compatible: Annotated[bool, typer.Option(
        "--seed-compatible", help="Reproduce LatencyPrism's numbers, ranking and sections "
        "1-2 layout.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Compare runs from different GPU models or workloads anyway.")] = False,
    label_normal: Annotated[str, typer.Option(
        "--label-normal", help="Name of the NORMAL side in the report.")] = "normal",
    label_abnormal: Annotated[str, typer.Option(
        "--label-abnormal", help="Name of the ABNORMAL side in the report.")] = "abnormal",
) -> None:
    """Compare two runs: which functions made ABNORMAL slower than NORMAL, and why."""
    from perfdiff.inputs import require_input

    for path in (normal, abnormal):  # before the heavy imports: a missing file in a blink
        require_input(path, folder_ok=True)
    from rich.console import Console

    from perfdiff.analysis.entry import compare_inputs
    from perfdiff.analysis.gate import find_regressions
    from perfdiff.analysis.model import CompareOptions
    from perfdiff.output import write_atomic
    from perfdiff.report.gate import regression_lines
    from perfdiff.report.json_report import render_json
    from perfdiff.report.markdown import render_markdown
    from perfdiff.report.terminal import render_terminal

    options = CompareOptions(alpha=alpha, practical_threshold_pct=threshold,
                             seed_compatible=seed_compatible, top=top, force=force,
                             run_cv_pct=run_cv_pct)
    if plots is not None:
        from perfdiff.report.plots import ensure_plotting

        ensure_plotting()
    comparison = compare_inputs(normal, abnormal, options, (label_normal, label_abnormal))
    if output_format is OutputFormat.json:
        text = render_json(comparison)
    else:
        text = render_markdown(comparison, max_rows=rows or None)
    if output is not None:
        write_atomic(output, text, inputs=(normal, abnormal), what="the report")
    elif output_format is OutputFormat.markdown and sys.stdout.isatty():
        render_terminal(comparison, Console())
    else:
        typer.echo(text, nl=False)
    if plots is not None:
        from perfdiff.report.plots import write_plots

        for path in write_plots(comparison, plots):
            typer.echo(f"perfdiff: wrote {path}", err=True)
    if fail_on_regression is not None:
        found = regression_lines(find_regressions(comparison, fail_on_regression))
        if found:
            typer.echo(f"perfdiff: regression: {found[0]}"
                       + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""), err=True)
            raise typer.Exit(ExitCode.REGRESSION)

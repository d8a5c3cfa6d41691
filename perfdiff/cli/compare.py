"""``perfdiff compare NORMAL ABNORMAL``: load both sides, compare, render, gate CI.

Thin on purpose: options become a :class:`CompareOptions`; loading, the comparability rule and
the statistics are one call (``perfdiff.analysis.entry.compare_inputs``); the text is one of
the pure renderers in ``perfdiff.report``. What lives here is only the process: where the
output goes and the ``--fail-on-regression`` exit code.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from perfdiff.cli.app import app
from perfdiff.cli.options import (
    alpha_option,
    fail_on_regression_option,
    output_option,
)
from perfdiff.errors import ExitCode

if TYPE_CHECKING:
    from perfdiff.analysis.model import Comparison
    from perfdiff.analysis.sides import Side
    from perfdiff.report.figure_links import FigureLink
    from perfdiff.report.figures import RenderedFigure

# The analysis (pandas, scipy) and the renderers are imported inside the functions that use
# them: every perfdiff command, --help included, imports every command module to register it,
# and those imports cost about a second.


class ReportFormat(StrEnum):
    """compare's formats: the shared markdown|json plus the self-contained HTML report."""

    markdown = "markdown"
    json = "json"
    html = "html"


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
    output_format: Annotated[ReportFormat, typer.Option(
        "--format", help="markdown (the report), json (every number, full names, "
        "versioned envelope) or html (one self-contained file: the report, every row of the "
        "detailed table sortable, the figures inline).")] = ReportFormat.markdown,
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
        "--label-normal", help="Name of the NORMAL side in the report.")] = "normal",
    label_abnormal: Annotated[str, typer.Option(
        "--label-abnormal", help="Name of the ABNORMAL side in the report.")] = "abnormal",
) -> None:
    """Compare two runs: which functions made ABNORMAL slower than NORMAL, and why."""
    from perfdiff.inputs import require_input

    for path in (normal, abnormal):  # before the heavy imports: a missing file in a blink
        require_input(path, folder_ok=True)
    from rich.console import Console

    from perfdiff.analysis.entry import compare_inputs_and_sides
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
        from perfdiff.report.figures import ensure_plotting

        ensure_plotting()
    comparison, sides = compare_inputs_and_sides(normal, abnormal, options,
                                                 (label_normal, label_abnormal))
    figures_dir = figures_folder(plots, output)
    figures = _figures(comparison, sides, figures_dir, output_format)
    if output_format is ReportFormat.json:
        text = render_json(comparison)
    elif output_format is ReportFormat.html:
        text = _html(comparison, figures)
    else:
        links = (None if figures_dir is None else
                 figure_links(figures, figures_dir, output.parent if output else Path()))
        text = render_markdown(comparison, max_rows=rows or None, figures=links)
    if output is not None:
        write_atomic(output, text, inputs=(normal, abnormal), what="the report")
    elif output_format is ReportFormat.markdown and sys.stdout.isatty():
        render_terminal(comparison, Console())
    else:
        typer.echo(text, nl=False)
    if figures_dir is not None:
        from perfdiff.report.figures import write_figures

        for written in write_figures(figures, figures_dir, inputs=(normal, abnormal)):
            typer.echo(f"perfdiff: wrote {written.png} and {written.svg.name}", err=True)
    if fail_on_regression is not None:
        found = regression_lines(find_regressions(comparison, fail_on_regression))
        if found:
            typer.echo(f"perfdiff: regression: {found[0]}"
                       + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""), err=True)
            raise typer.Exit(ExitCode.REGRESSION)


DEFAULT_FIGURES = "perfdiff-figures"  # the figures' folder when the report goes to stdout


def figures_folder(plots: str | None, output: Path | None) -> Path | None:
    """Where ``--plots`` writes: DIR, or beside the report (``report.md`` -> ``report-figures``)."""
    if plots is None:
        return None
    if plots:
        return Path(plots)
    if output is None:
        return Path(DEFAULT_FIGURES)
    return output.parent / f"{output.stem}-figures"


def figure_links(figures: list[RenderedFigure], folder: Path, report_dir: Path,
                 ) -> dict[str, FigureLink]:
    """Each figure's PNG, relative to the report's folder (the markdown links it)."""
    import os

    from perfdiff.report.figure_links import FigureLink

    rel = Path(os.path.relpath(folder.resolve(), report_dir.resolve()))
    return {f.key: FigureLink((rel / f"{f.key}.png").as_posix(), f.title) for f in figures}


def _figures(comparison: Comparison, sides: tuple[Side, Side], folder: Path | None,
             output_format: ReportFormat) -> list[RenderedFigure]:
    """The figures the output needs: files for ``--plots``, SVG for HTML (when matplotlib is
    there; without it HTML has tables and a note)."""
    from perfdiff.report.figures import plotting_available

    wanted = []
    if folder is not None:
        wanted += ["png", "svg"]
    if output_format is ReportFormat.html and plotting_available():
        wanted.append("svg")
    if not wanted:
        return []
    from perfdiff.analysis.figure_data import figure_data
    from perfdiff.report.figures import render_figures

    return render_figures(comparison, figure_data(comparison, *sides), tuple(wanted))


def _html(comparison: Comparison, figures: list[RenderedFigure]) -> str:
    from perfdiff.report.figures import INSTALL_HINT, plotting_available
    from perfdiff.report.html import InlineFigure, render_html

    note = "" if plotting_available() else (
        f"No figures: they need matplotlib, which is not installed ({INSTALL_HINT}).")
    return render_html(comparison, [InlineFigure(f.key, f.title, f.svg) for f in figures], note)

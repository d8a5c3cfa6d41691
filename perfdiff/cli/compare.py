"""``perfdiff compare NORMAL ABNORMAL``: load both sides, compare, render, gate CI.

Thin on purpose: options become a :class:`CompareOptions`; the statistics are
``perfdiff.analysis.comparison.compare_tables``; the text is one of the pure renderers in
``perfdiff.report``. What lives here is only what needs both sides' metadata or the process:
the "can these be compared?" check, labels and sources on the result, where the output goes,
and the ``--fail-on-regression`` exit code.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from perfdiff.analysis.model import CompareOptions, Comparison, SideSummary
from perfdiff.cli.app import app
from perfdiff.errors import ExitCode, IncomparableRunsError, InputError

if TYPE_CHECKING:
    from perfdiff.analysis.sides import Side, SideMeta
    from perfdiff.report.figure_links import FigureLink
    from perfdiff.report.figures import RenderedFigure

# The analysis (pandas, scipy) and the renderers are imported inside the functions that use
# them: every perfdiff command, --help included, imports every command module to register it,
# and those imports cost about a second.


class OutputFormat(StrEnum):
    markdown = "markdown"
    json = "json"
    html = "html"


def check_comparable(normal: SideMeta, abnormal: SideMeta, *, force: bool) -> list[str]:
    """Refuse different GPU models or workloads (one line), or return notes when forced."""
    from perfdiff.analysis.sides import RUN_FILE_KIND

    problems = []
    if normal.gpu_models and abnormal.gpu_models and normal.gpu_models != abnormal.gpu_models:
        problems.append(
            f"different GPU models ({', '.join(normal.gpu_models)} vs "
            f"{', '.join(abnormal.gpu_models)})"
        )
    # a LatencyPrism folder's "workload" is only its parent folder's name: never refuse on it
    both_run_files = normal.kind == abnormal.kind == RUN_FILE_KIND
    if both_run_files and normal.workload and abnormal.workload and (
        normal.workload != abnormal.workload
    ):
        problems.append(f"different workloads ({normal.workload} vs {abnormal.workload})")
    if problems and not force:
        raise IncomparableRunsError(
            f"{normal.source} and {abnormal.source} cannot be compared: {'; '.join(problems)}; "
            "pass --force to compare them anyway"
        )
    return [f"Compared with --force despite {p}." for p in problems]


def _with_meta(summary: SideSummary, meta: SideMeta, label: str) -> SideSummary:
    return replace(
        summary,
        label=label,
        source=meta.source,
        workload=summary.workload or meta.workload,
        environment=summary.environment or meta.environment,
    )


def _unique(notes: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(notes))


def build_comparison(normal_path: Path, abnormal_path: Path, options: CompareOptions,
                     labels: tuple[str, str] = ("normal", "abnormal")) -> Comparison:
    """Load both inputs and compare them (the one function this command calls)."""
    return load_and_compare(normal_path, abnormal_path, options, labels)[0]


def load_and_compare(normal_path: Path, abnormal_path: Path, options: CompareOptions,
                     labels: tuple[str, str] = ("normal", "abnormal"),
                     ) -> tuple[Comparison, tuple[Side, Side]]:
    """:func:`build_comparison`, and the loaded inputs (the figures draw their cycles)."""
    from perfdiff.analysis.comparison import compare_tables
    from perfdiff.analysis.sides import load_side

    normal = load_side(normal_path)
    abnormal = load_side(abnormal_path)
    forced_notes = check_comparable(normal.meta, abnormal.meta, force=options.force)
    try:
        result = compare_tables(normal.table, abnormal.table, options)
    except InputError as exc:
        raise InputError(_name_the_side(str(exc), normal_path, abnormal_path)) from exc
    notes = [*forced_notes, *normal.meta.warnings, *abnormal.meta.warnings, *result.notes]
    comparison = replace(
        result,
        normal=_with_meta(result.normal, normal.meta, labels[0]),
        abnormal=_with_meta(result.abnormal, abnormal.meta, labels[1]),
        notes=_unique(notes),
    )
    return comparison, (normal, abnormal)


def _name_the_side(message: str, normal_path: Path, abnormal_path: Path) -> str:
    """The statistics see tables, not files: put the input's path where they say "<table>"."""
    if not message.startswith("<table>"):
        return message
    if "abnormal side" in message:
        where = str(abnormal_path)
    elif "normal side" in message:
        where = str(normal_path)
    else:
        where = f"{normal_path} vs {abnormal_path}"
    return where + message[len("<table>"):]


def _write_output(text: str, output: Path) -> None:
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{output}: cannot write the report ({exc.strerror}); "
                         "check the path and permissions") from exc


@app.command()
def compare(
    normal: Annotated[Path, typer.Argument(
        help="Baseline: a run file (.json/.json.gz) or a LatencyPrism '*_perf_data' folder.")],
    abnormal: Annotated[Path, typer.Argument(
        help="The run to explain, same kinds of input as NORMAL.")],
    *,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the report to this file instead of stdout.")] = None,
    output_format: Annotated[OutputFormat, typer.Option(
        "--format", help="markdown (the report), json (every number, full names, "
        "versioned envelope) or html (one self-contained file: the report, every row of the "
        "detailed table sortable, the figures inline).")] = OutputFormat.markdown,
    top: Annotated[int, typer.Option(
        "--top", min=0, help="Key findings described in prose.")] = 3,
    rows: Annotated[int, typer.Option(
        "--rows", min=0, help="Rows of the detailed table in markdown (0: all).")] = 30,
    alpha: Annotated[float, typer.Option(
        "--alpha", min=0.0, max=1.0, help="False-discovery rate for the q-values.")] = 0.05,
    threshold: Annotated[float, typer.Option(
        "--threshold", min=0.0, help="Practical threshold: a function's change of time per "
        "cycle must exceed this % of cycle time to count.")] = 1.0,
    run_cv_pct: Annotated[float, typer.Option(
        "--run-cv-pct", min=0.0, metavar="PCT",
        help="Run-to-run variation (CV, %) assumed for a side recorded in one run, which "
        "cannot show it; GPU idle: % of the cycle. Ignored with >= 2 runs per side (measured "
        "there).")] = 2.0,
    fail_on_regression: Annotated[float | None, typer.Option(
        "--fail-on-regression", min=0.0, metavar="PCT",
        help="Exit with code 1 when the cycle time, or a function's time per cycle (as % of "
        "cycle time), got significantly slower by more than PCT %.")] = None,
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
    from rich.console import Console

    from perfdiff.report.gate import regressions
    from perfdiff.report.json_report import render_json
    from perfdiff.report.markdown import render_markdown
    from perfdiff.report.terminal import render_terminal

    options = CompareOptions(alpha=alpha, practical_threshold_pct=threshold,
                             seed_compatible=seed_compatible, top=top, force=force,
                             run_cv_pct=run_cv_pct)
    if plots is not None:
        from perfdiff.report.figures import ensure_plotting

        ensure_plotting()
    comparison, sides = load_and_compare(normal, abnormal, options,
                                         (label_normal, label_abnormal))
    figures_dir = figures_folder(plots, output)
    figures = _figures(comparison, sides, figures_dir, output_format)
    if output_format is OutputFormat.json:
        text = render_json(comparison)
    elif output_format is OutputFormat.html:
        text = _html(comparison, figures)
    else:
        links = (None if figures_dir is None else
                 figure_links(figures, figures_dir, output.parent if output else Path()))
        text = render_markdown(comparison, max_rows=rows or None, figures=links)
    if output is not None:
        _write_output(text, output)
    elif output_format is OutputFormat.markdown and sys.stdout.isatty():
        render_terminal(comparison, Console())
    else:
        typer.echo(text, nl=False)
    if figures_dir is not None:
        from perfdiff.report.figures import write_figures

        for written in write_figures(figures, figures_dir):
            typer.echo(f"perfdiff: wrote {written.png} and {written.svg.name}", err=True)
    if fail_on_regression is not None:
        found = regressions(comparison, fail_on_regression)
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
             output_format: OutputFormat) -> list[RenderedFigure]:
    """The figures the output needs: files for ``--plots``, SVG for HTML (when matplotlib is
    there; without it HTML has tables and a note)."""
    from perfdiff.report.figures import plotting_available

    wanted = []
    if folder is not None:
        wanted += ["png", "svg"]
    if output_format is OutputFormat.html and plotting_available():
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

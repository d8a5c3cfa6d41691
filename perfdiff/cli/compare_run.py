"""``perfdiff compare`` without typer: its settings, its work, and a parser for plain lines.

Why: typer (0.29) imports itself and pydantic and builds a pydantic validator for each of
compare's 16 parameters on every run: 0.1 s and 12 MiB before a byte is read, a tenth of
comparing two 100k-event traces (bench/README.md, issue 15). So there are two doors to one
room. The console script (``perfdiff.cli.entry``) hands a command line that
:func:`parse_compare_args` fully understands straight to :func:`run_compare`; anything else
(``--help``, a typo, an unusual spelling of a number, a value out of range, an option given
twice) goes to the typer command (``perfdiff.cli.compare``), which parses as before, says what
is wrong, and calls the same :func:`run_compare` with the same :class:`CompareArgs`.
``tests/cli/test_compare_fast_path.py`` checks that both doors give equal ``CompareArgs`` and
that the table below matches the typer command (names, types, bounds, defaults).

The parser only accepts what click and typer's validators read the same way: integers as
plain digits, decimals as plain digits with an optional point, option values not starting
with ``-``, each option once.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfdiff.analysis.model import DEFAULT_RUN_CV_PCT, HOST_RUN_CV_PCT
from perfdiff.errors import ExitCode

if TYPE_CHECKING:
    from perfdiff.analysis.model import CompareOptions, Comparison
    from perfdiff.analysis.sides import Side
    from perfdiff.engine.settings import Progress
    from perfdiff.inputs import CheckedInputs
    from perfdiff.report.figure_links import FigureLink
    from perfdiff.report.figures import RenderedFigure


class ReportFormat(StrEnum):
    """compare's formats: the shared markdown|json plus the self-contained HTML report."""

    markdown = "markdown"
    json = "json"
    html = "html"


class Grouping(StrEnum):
    """What a row of the report is (``analysis/grouping.py``)."""

    kernel = "kernel"
    family = "family"
    op = "op"
    module = "module"


@dataclass(frozen=True)
class CompareArgs:
    """Everything ``compare`` was asked; the defaults here are the command's defaults."""

    normal: Path
    abnormal: Path
    output: Path | None = None
    output_format: ReportFormat = ReportFormat.markdown
    top: int = 3
    rows: int = 30
    alpha: float = 0.05
    threshold: float = 1.0
    run_cv_pct: float = DEFAULT_RUN_CV_PCT
    host_run_cv_pct: float = HOST_RUN_CV_PCT
    fail_on_regression: float | None = None
    plots: str | None = None
    seed_compatible: bool = False
    force: bool = False
    label_normal: str = "normal"
    label_abnormal: str = "abnormal"
    cycle_range: str | None = None
    steps: str | None = None
    scheduler: str | None = None  # Dask scheduler for sharded runs (perfdiff.engine)
    by: Grouping = Grouping.kernel


@dataclass(frozen=True)
class OptionSpec:
    """One option of ``compare``, declared once: the field of :class:`CompareArgs` it sets,
    how its value is read, its bounds, its names, and its help. The fast parser reads this
    table; the typer command (``perfdiff.cli.compare``) is built from it; the console script's
    option sets (``perfdiff.cli.entry``) come from it. ``shared`` names a builder of
    ``perfdiff.cli.options`` whose option (names, bounds, help) several commands share."""

    field: str
    kind: str  # "flag", "int", "float", "str", "path", "format", "grouping"
    low: float | None = None
    high: float | None = None
    names: tuple[str, ...] = ()
    metavar: str | None = None
    help: str = ""
    shared: str = ""  # "output", "alpha", "fail_on_regression": built by cli/options.py


COMPARE_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("output", "path", names=("--output", "-o"), help="the report",
               shared="output"),
    OptionSpec("output_format", "format", names=("--format",), help=(
        "markdown (the report), json (every number, full names, versioned envelope) or html "
        "(one self-contained file: the report, every row of the detailed table sortable, "
        "the figures inline).")),
    OptionSpec("top", "int", 0, names=("--top",), help="Key findings described in prose."),
    OptionSpec("rows", "int", 0, names=("--rows",),
               help="Rows of the detailed table in markdown (0: all)."),
    OptionSpec("alpha", "float", 0.0, 1.0, names=("--alpha",), help="for the q-values",
               shared="alpha"),
    OptionSpec("threshold", "float", 0.0, names=("--threshold",), help=(
        "Practical threshold: a function's change of time per cycle must exceed this % of "
        "cycle time to count.")),
    OptionSpec("run_cv_pct", "float", 0.0, names=("--run-cv-pct",), metavar="PCT", help=(
        "Run-to-run variation (CV, %) assumed for a side recorded in one run, which cannot "
        "show it; GPU idle: % of the cycle. Ignored with >= 2 runs per side (measured "
        "there).")),
    OptionSpec("host_run_cv_pct", "float", 0.0, 1000.0, names=("--host-run-cv-pct",),
               metavar="PCT", help=(
        "Run-to-run variation (CV, %) of the host's part of a cycle: a one-run side whose GPU "
        "idles a share s of its cycle is assumed to vary by at least PCT x s (steps that "
        "wait on the host differ more between processes); 0: --run-cv-pct alone.")),
    OptionSpec("fail_on_regression", "float", 0.0, names=("--fail-on-regression",),
               help="the cycle time, or a function's time per cycle (as % of cycle time),",
               shared="fail_on_regression"),
    OptionSpec("plots", "str", names=("--plots",), metavar="[DIR]", help=(
        "Write the figures (PNG and SVG) into DIR, or with no DIR beside the report "
        "(REPORT-figures/), and link them from the markdown (needs matplotlib: pip install "
        "'perfdiff\\[plots]').")),
    OptionSpec("seed_compatible", "flag", names=("--seed-compatible",),
               help="Reproduce LatencyPrism's numbers, ranking and sections 1-2 layout."),
    OptionSpec("force", "flag", names=("--force",),
               help="Compare runs from different GPU models or workloads anyway."),
    OptionSpec("label_normal", "str", names=("--label-normal",),
               help="Name of the NORMAL side in the report."),
    OptionSpec("label_abnormal", "str", names=("--label-abnormal",),
               help="Name of the ABNORMAL side in the report."),
    OptionSpec("cycle_range", "str", names=("--cycle-range",), metavar="REGEX", help=(
        "torch.profiler traces: cycles are the user_annotation (record_function) or "
        "gpu_user_annotation ranges whose whole name matches REGEX (a plain name matches "
        "itself) instead of ProfilerStep#N; Nsight Systems exports: the NVTX ranges whose "
        "whole text matches REGEX.")),
    OptionSpec("steps", "str", names=("--steps",), metavar="A:B", help=(
        "Compare only the measured cycles A to B-1 of each side, counted from 0 in time "
        "order (2:10, 3:, :5, -4:); any kind of input.")),
    OptionSpec("by", "grouping", names=("--by",), help=(
        "What a row is: kernel, family (GEMM, attention, ...), op (the framework op that "
        "launched it, torch.profiler traces: aten::linear > aten::addmm) or module (its "
        "nn.Module path, traces recorded with_modules/with_stack).")),
    OptionSpec("scheduler", "str", names=("--scheduler",), metavar="ADDRESS", help=(
        "Sharded runs: map the ranks on this Dask scheduler (tcp://host:8786; default: "
        "DASK_SCHEDULER_ADDRESS, else in-process or a local cluster by size).")),
)
# the fast parser's view: every name of every option
OPTIONS: dict[str, OptionSpec] = {name: spec for spec in COMPARE_OPTIONS for name in spec.names}
_PLAIN_INT = re.compile(r"0|[1-9][0-9]*")
_PLAIN_DECIMAL = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")


def parse_compare_args(args: list[str]) -> CompareArgs | None:
    """compare's arguments (after the word ``compare``, bare options already expanded), or
    None when the line holds anything the typer command should judge."""
    positional: list[str] = []
    values: dict[str, Any] = {}
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            positional += args[i:]
            break
        if not token.startswith("-") or token == "-":
            positional.append(token)
            continue
        # "--name=value"; a short option's "=" is part of its value in click: left to typer
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        spec = OPTIONS.get(name)
        if spec is None or spec.field in values:
            return None
        if spec.kind == "flag":
            if eq:
                return None
            values[spec.field] = True
            continue
        if eq:
            raw = inline
        elif i < len(args):
            raw = args[i]
            i += 1
        else:
            return None
        if raw.startswith("-") or (raw == "" and spec.kind != "str"):
            return None
        value = _value(spec, raw)
        if value is None:
            return None
        values[spec.field] = value
    if len(positional) != 2 or "" in positional:
        return None
    return CompareArgs(Path(positional[0]), Path(positional[1]), **values)


def _value(spec: OptionSpec, raw: str) -> object | None:
    """An option's value as the typer command would read it, or None (leave it to typer)."""
    if spec.kind in ("int", "float"):
        pattern = _PLAIN_INT if spec.kind == "int" else _PLAIN_DECIMAL
        if not pattern.fullmatch(raw):
            return None
        number = int(raw) if spec.kind == "int" else float(raw)
        if (spec.low is not None and number < spec.low) or (
                spec.high is not None and number > spec.high):
            return None
        return number
    if spec.kind == "format":
        return ReportFormat(raw) if raw in {f.value for f in ReportFormat} else None
    if spec.kind == "grouping":
        return Grouping(raw) if raw in {g.value for g in Grouping} else None
    if spec.kind == "path":
        return Path(raw)
    return raw


def compare_paths(normal: str | Path, abnormal: str | Path,
                  options: CompareOptions | None = None,
                  labels: tuple[str, str] = ("normal", "abnormal"), *,
                  cycle_range: str | None = None, steps: str | None = None,
                  scheduler: str | None = None, progress: Progress | None = None,
                  checked: CheckedInputs | None = None,
                  ) -> tuple[Comparison, tuple[Side, Side]]:
    """Read both inputs through the door (``readers.dispatch``: what each path is, checked
    once), then compare them (``analysis.entry``); the comparison and both sides. A sharded
    run is mapped rank by rank instead (``perfdiff.engine``: in-process or on Dask)."""
    from perfdiff.readers.dispatch import ReadOptions, open_input
    from perfdiff.readers.steps import StepRange

    read = ReadOptions(cycle_range=cycle_range,
                       steps=None if steps is None else StepRange.parse(steps),
                       ops=options is not None and options.by in ("op", "module"),
                       pandas_follows=True)
    normal_input = open_input(normal, read, checked)
    abnormal_input = open_input(abnormal, read, checked)
    if normal_input.sharded is not None or abnormal_input.sharded is not None:
        from perfdiff.engine.run import compare_sharded
        from perfdiff.engine.settings import EngineSettings

        return compare_sharded(normal_input, abnormal_input, options, labels, read=read,
                               settings=EngineSettings(scheduler=scheduler), progress=progress)
    # scipy (and pandas, unless a run file's floats needed it: pandas_follows) once both are read
    from perfdiff.analysis.entry import compare_loaded

    return compare_loaded(normal_input, abnormal_input, options, labels)


def run_compare(args: CompareArgs, checked: CheckedInputs | None = None) -> int:
    """Load both sides, compare, render, write; the exit code (``--fail-on-regression``).
    ``checked``: the inputs the console script checked already (``perfdiff.inputs``)."""
    if args.output is not None:  # an output over or inside an input: said before the work
        from perfdiff.output import refuse_inputs

        refuse_inputs(args.output, (args.normal, args.abnormal))
    from perfdiff.analysis.gate import find_regressions
    from perfdiff.analysis.model import CompareOptions
    from perfdiff.cli.progress import rank_progress
    from perfdiff.output import output_file, write_together
    from perfdiff.report.gate import regression_lines
    from perfdiff.report.json_report import render_json
    from perfdiff.report.markdown import render_markdown

    options = CompareOptions(alpha=args.alpha, practical_threshold_pct=args.threshold,
                             seed_compatible=args.seed_compatible, top=args.top,
                             force=args.force, run_cv_pct=args.run_cv_pct,
                             host_run_cv_pct=args.host_run_cv_pct, by=args.by.value)
    if args.plots is not None:
        from perfdiff.report.figures import ensure_plotting

        ensure_plotting()
    with rank_progress() as progress:
        comparison, sides = compare_paths(args.normal, args.abnormal, options,
                                          (args.label_normal, args.label_abnormal),
                                          cycle_range=args.cycle_range, steps=args.steps,
                                          scheduler=args.scheduler, progress=progress,
                                          checked=checked)
    output, output_format = args.output, args.output_format
    figures_dir = figures_folder(args.plots, output)
    figures = _figures(comparison, sides, figures_dir, output_format)
    if output_format is ReportFormat.json:
        text = render_json(comparison)
    elif output_format is ReportFormat.html:
        text = _html(comparison, figures)
    else:
        links = (None if figures_dir is None else
                 figure_links(figures, figures_dir, output.parent if output else Path()))
        text = render_markdown(comparison, max_rows=args.rows or None, figures=links)
    inputs = (args.normal, args.abnormal)
    files = [] if output is None else [output_file(output, text, "the report")]
    if figures_dir is not None:  # the report and its figures land together or not at all
        from perfdiff.report.figures import figure_files

        files += figure_files(figures, figures_dir)
    written = write_together(files, inputs=inputs)
    if output is None and output_format is ReportFormat.markdown and sys.stdout.isatty():
        from rich.console import Console  # a file or a pipe never needs rich

        from perfdiff.report.terminal import render_terminal

        render_terminal(comparison, Console())
    elif output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    for png in written[1 if output is not None else 0::2]:
        print(f"perfdiff: wrote {png} and {png.with_suffix('.svg').name}", file=sys.stderr)
    if args.fail_on_regression is not None:
        found = regression_lines(find_regressions(comparison, args.fail_on_regression))
        if found:
            print(f"perfdiff: regression: {found[0]}"
                  + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""),
                  file=sys.stderr)
            return ExitCode.REGRESSION
    return ExitCode.OK


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
    if folder is None and output_format is not ReportFormat.html:
        return []  # no figures wanted: not even their module is imported
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


__all__ = ["COMPARE_OPTIONS", "OPTIONS", "CompareArgs", "OptionSpec", "ReportFormat",
           "compare_paths", "figure_links", "figures_folder", "parse_compare_args",
           "run_compare"]

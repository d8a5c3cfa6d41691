"""``perfdiff bench RUN [RUN]``: the seeds' benchmark tables from benchmark run files.

One run: its cases (the RMSNorm seed's tables for ``rmsnorm``, the linalg seed's for
``linalg``). Two runs: the second against the first, case by case, with ``***regressed``
where :mod:`perfdiff.analysis.bench_cases` finds a significant slowdown above the noise floor.
Thin on purpose: load, reduce, compare, pivot, print.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from perfdiff.cli.options import (
    OutputFormat,
    alpha_option,
    fail_on_regression_option,
    format_option,
    output_option,
)
from perfdiff.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from perfdiff.analysis.bench_cases import BenchRun, Measure


class MeasureOption(StrEnum):
    span = "span"
    kernels = "kernels"
    stream = "stream"
    call = "call"


def _check_implementations(run: BenchRun, *, baseline: str | None, target: str | None) -> None:
    """A ``--baseline``/``--target`` the run does not have is a usage error, not ignored.

    Why: a misspelt ``--baseline trtion`` used to print the tables without the speedup column,
    as if nothing had been asked.
    """
    given = {name: value for name, value in (("--baseline", baseline), ("--target", target))
             if value is not None}
    if not given:
        return
    impls = sorted({s.fields.get("impl", "") for s in run.case_summaries} - {""})
    for name, value in given.items():
        if run.workload != "rmsnorm" or not impls:
            raise UsageError(f"bench: {name} applies to rmsnorm runs (their implementations); "
                             f"{run.source} is a {run.workload} run; leave {name} out")
        if value not in impls:
            raise UsageError(f"bench: {name} {value!r} is not an implementation in "
                             f"{run.source}; it has {', '.join(impls)}")


def bench(
    ctx: typer.Context,
    runs: Annotated[list[Path], typer.Argument(
        readable=False,  # perfdiff.inputs says why in one line (exit 3), not click (exit 2)
        help="One run file (its tables) or two (BEFORE AFTER: the second flagged against "
        "the first).")],
    *,
    baseline: Annotated[str | None, typer.Option(
        help="rmsnorm: implementation in the denominator of the speedup column (default "
        "triton).")] = None,
    target: Annotated[str | None, typer.Option(
        help="rmsnorm: implementation whose speedup is shown (default cuda).")] = None,
    alpha: Annotated[float, alpha_option("(Benjamini-Hochberg) for 'regressed'")] = 0.05,
    noise_floor_pct: Annotated[float, typer.Option(
        help="A change must exceed this share of the median GPU time to be flagged.")] = 5.0,
    min_delta_us: Annotated[float, typer.Option(
        help="...and this many microseconds.")] = 1.0,
    measure: Annotated[MeasureOption, typer.Option(
        help="GPU time per call: span (first kernel start to last end), kernels (sum of "
        "kernel durations, blind to host launch gaps) or stream (end of the GPU lead to the "
        "last end: what CUDA events around the call measure) or call (like stream, but "
        "ending no earlier than the call's return to Python, from the end boundary mark: "
        "what those events measure for a host-bound call; needs a recording with mark "
        "times).")
    ] = MeasureOption.span,
    spread_factor: Annotated[float, typer.Option(
        help="...and this many times the case's within-run spread (robust CV).")] = 3.0,
    output: Annotated[Path | None, output_option("the tables")] = None,
    output_format: Annotated[OutputFormat, format_option()] = OutputFormat.markdown,
    plain: Annotated[bool, typer.Option(
        "--plain", help="Markdown even on a terminal (what a pipe gets).")] = False,
    fail_on_regression: Annotated[float | None, fail_on_regression_option(
        "a case (flagged regressed: its median GPU time per call)")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Compare runs of different workloads or GPU models.")] = False,
) -> None:
    """Benchmark tables per case (rmsnorm, linalg), optionally flagged against a first run."""
    # imported here, not at module level: scipy/pandas/numpy cost about a second, and every
    # perfdiff command (even --help) imports every command module to register it
    from rich.console import Console

    from perfdiff.analysis.bench_cases import (
        BenchRules,
        bench_run,
        check_same_bench,
        compare_cases,
        regressed_cases,
        select_measure,
    )
    from perfdiff.output import write_atomic
    from perfdiff.readers.dispatch import load_input
    from perfdiff.report.bench_table import (
        bench_view,
        render_bench_json,
        render_markdown,
        render_rich,
    )
    from perfdiff.report.format import fmt_p, fmt_pct

    if not 1 <= len(runs) <= 2:
        raise typer.BadParameter("give one or two run files", param_hint="RUNS")
    rules = BenchRules(alpha=alpha, noise_floor_pct=noise_floor_pct, min_delta_us=min_delta_us,
                       spread_factor=spread_factor)
    chosen: Measure = measure.value
    loaded = [select_measure(bench_run(load_input(path, checked=ctx.obj), str(path)), chosen)
              for path in runs]  # the door: what each path is, checked once
    before = loaded[0]
    after = loaded[1] if len(loaded) == 2 else None
    changes = None
    if after is not None:
        check_same_bench(before, after, force=force)  # the one rule, in analysis
        changes = compare_cases(before, after, rules)
    _check_implementations(after or before, baseline=baseline, target=target)
    view = bench_view(before, after, changes, rules, baseline=baseline or "triton",
                      target=target or "cuda")
    if output_format is OutputFormat.json:
        text = render_bench_json(before, after, changes, rules)
    else:
        text = render_markdown(view)
    if output is not None:
        write_atomic(output, text, inputs=runs, what="the tables")
        typer.echo(f"perfdiff: wrote {output}")
    elif output_format is OutputFormat.markdown and sys.stdout.isatty() and not plain:
        render_rich(view, Console())
    else:
        typer.echo(text, nl=False)
    if fail_on_regression is not None and changes:
        found = regressed_cases(changes, fail_on_regression)
        if found:
            first = found[0]
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            typer.echo(f"perfdiff: regression: case '{first.label}' "
                       f"{fmt_pct(100.0 * (first.ratio - 1.0), signed=True)} GPU time per call, "
                       f"q = {fmt_p(first.q)} (threshold {fmt_pct(fail_on_regression)}){more}",
                       err=True)
            raise typer.Exit(ExitCode.REGRESSION)

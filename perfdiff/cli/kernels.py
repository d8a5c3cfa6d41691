"""``perfdiff kernels RUN``: every kernel launch with its latency and utilisation, or by name.

Thin on purpose: parse options, load the run file, build the rows
(:mod:`perfdiff.analysis.kernel_rows`), format them (:mod:`perfdiff.report.kernel_table`),
print or write. Piped or with ``-o``: every row, as the seeds' text (launch order), markdown or
JSON. On a terminal: the rows with the most GPU time as a rich table and a note saying how to
see all (a recording holds up to a million launches; printing them all as a rich table took
70 s for 162,000 rows).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from perfdiff.cli.options import output_option, steps_option

if TYPE_CHECKING:
    from rich.console import Console

    from perfdiff.analysis.kernel_rows import LaunchRow, NameRow

# The report, schema (numpy) and rich tables are imported inside the functions: every perfdiff
# command, --help included, imports every command module to register it.

TERMINAL_ROWS = 40  # rows a terminal shows by default: the top by GPU time


class NamesOption(StrEnum):
    short = "short"
    full = "full"
    mangled = "mangled"


class ByOption(StrEnum):
    launch = "launch"
    name = "name"
    kernel = "kernel"  # the same as name: compare's word for it
    family = "family"
    op = "op"
    module = "module"


GROUPED = (ByOption.family, ByOption.op, ByOption.module)  # analysis/grouping.py


class KernelsFormat(StrEnum):
    """text: the seeds' fixed-width table (launch order); markdown; json."""

    text = "text"
    markdown = "markdown"
    json = "json"


def _rich_launches(rows: list[LaunchRow], console: Console) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from perfdiff.report.format import fmt_int, fmt_num

    table = Table(box=box.SIMPLE_HEAD)
    for col, right in (("Kernel", False), ("Device", True), ("Latency (ns)", True),
                       ("Tensor", True), ("DRAM", True)):
        table.add_column(col, justify="right" if right else "left", overflow="fold")
    for r in rows:
        table.add_row(escape(r.name), str(r.device), fmt_int(r.latency_ns),
                      fmt_num(r.tensor), fmt_num(r.dram))
    console.print(table)


def _rich_names(rows: list[NameRow], console: Console) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from perfdiff.report.format import fmt_int, fmt_num

    table = Table(box=box.SIMPLE_HEAD)
    for col in ("Kernel", "Launches", "Total (ms)", "Mean (us)", "Share (%)", "Tensor", "DRAM"):
        table.add_column(col, justify="left" if col == "Kernel" else "right", overflow="fold")
    for r in rows:
        table.add_row(escape(r.name), fmt_int(r.count), fmt_num(r.total_ns / 1e6, 3),
                      fmt_num(r.mean_ns / 1e3), fmt_num(r.share_pct), fmt_num(r.tensor),
                      fmt_num(r.dram))
    console.print(table)


def kernels(
    ctx: typer.Context,
    run_file: Annotated[Path, typer.Argument(
        readable=False,
        help="Run file (.json or .json.gz) or torch.profiler trace (file or folder).")],
    *,
    by: Annotated[ByOption, typer.Option(
        "--by", help="launch: every launch in launch order (the seeds' table); "
        "name (or kernel): aggregated per kernel name; family, op (launching framework op, "
        "torch.profiler traces) or module (nn.Module path): aggregated per group.")]
    = ByOption.launch,
    names: Annotated[NamesOption, typer.Option(
        "--names", help="short: bare function name (as the seeds); full: demangled "
        "signature; mangled: as CUPTI reported it.")] = NamesOption.short,
    run: Annotated[int | None, typer.Option(
        "--run", help="Only this run (index); default: all runs.")] = None,
    cycle: Annotated[int | None, typer.Option(
        "--cycle", help="Only launches of this cycle (index, warm-up or not); default: all "
        "measured cycles.")] = None,
    steps: Annotated[str | None, steps_option("each run")] = None,
    include_warmup: Annotated[bool, typer.Option(
        "--include-warmup", help="Also list warm-up cycles and launches outside any cycle "
        "(they have no PM samples: n/a).")] = False,
    output: Annotated[Path | None, output_option("every row")] = None,
    output_format: Annotated[KernelsFormat | None, typer.Option(
        "--format", help="text (the seeds' fixed-width table, launch order), markdown or "
        "json (every row, full precision, versioned envelope). Default: text for --by "
        "launch, markdown for --by name.")] = None,
    top: Annotated[int, typer.Option(
        "--top", min=1, help="On a terminal: rows shown, those with the most GPU time.")]
    = TERMINAL_ROWS,
    show_all: Annotated[bool, typer.Option(
        "--all", help="On a terminal: every row (launch order), not only the top.")] = False,
    plain: Annotated[bool, typer.Option(
        "--plain", help="Text/markdown even on a terminal (what a pipe gets).")] = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="Same as --format markdown.")] = False,
) -> None:
    """Per-kernel table: latency (ns), tensor-pipe and DRAM utilisation (fractions of peak)."""
    from perfdiff.readers.dispatch import ReadOptions, load_input
    from perfdiff.readers.steps import StepRange

    read = ReadOptions(steps=None if steps is None else StepRange.parse(steps),
                       ops=by in (ByOption.op, ByOption.module))
    loaded = load_input(run_file, read, ctx.obj)  # the door: what the path is, checked once
    from perfdiff.analysis.kernel_rows import launch_rows, name_rows
    from perfdiff.report.kernel_table import (
        render_kernels_json,
        render_launch_markdown,
        render_launch_table,
        render_name_table,
    )

    if by in GROUPED:
        from perfdiff.analysis.grouping import grouped_run_file

        loaded = grouped_run_file(loaded, by.value, str(run_file))
        names = NamesOption.full  # a group's label is not a C++ signature to shorten
    chosen = output_format or (KernelsFormat.markdown if markdown or by is not ByOption.launch
                               else KernelsFormat.text)
    launches = launch_rows(loaded, run_index=run, cycle=cycle, names=names.value,
                           warmup=include_warmup)
    grouped = name_rows(launches) if by is not ByOption.launch else None
    if output is None and sys.stdout.isatty() and not plain and output_format is None \
            and not markdown:
        _terminal(launches, grouped, top, show_all)
        return
    if chosen is KernelsFormat.json:
        text = render_kernels_json(grouped if grouped is not None else launches, by=by.value,
                                   source=str(run_file))
    elif grouped is not None:
        text = render_name_table(grouped)
    elif chosen is KernelsFormat.markdown:
        text = render_launch_markdown(launches)
    else:
        text = render_launch_table(launches, names.value)
    if output is not None:
        from perfdiff.output import write_atomic

        write_atomic(output, text, inputs=[run_file], what="the kernel table")
        typer.echo(f"perfdiff: wrote {output}", err=True)
    else:
        typer.echo(text, nl=False)


def _terminal(launches: list[LaunchRow], grouped: list[NameRow] | None, top: int,
              show_all: bool) -> None:
    """The top rows by GPU time as a rich table, and a note on how to see all."""
    from rich.console import Console

    from perfdiff.analysis.kernel_rows import top_by_time
    from perfdiff.report.kernel_table import terminal_note

    console = Console()
    if grouped is not None:  # already largest total first
        shown_names = grouped if show_all else grouped[:top]
        _rich_names(shown_names, console)
        total, shown, by = len(grouped), len(shown_names), "name"
    else:
        shown_launches = launches if show_all else top_by_time(launches, top)
        _rich_launches(shown_launches, console)
        total, shown, by = len(launches), len(shown_launches), "launch"
    if shown < total:
        console.print(terminal_note(shown, total, by=by), markup=False, highlight=False)

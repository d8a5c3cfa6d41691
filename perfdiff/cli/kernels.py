"""``perfdiff kernels RUN``: every kernel launch with its latency and utilisation, or by name.

Thin on purpose: parse options, load the run file, call :mod:`perfdiff.report.kernel_table`,
print. On a terminal the table is a rich table; piped, it is the seeds' text format (launch
order) or markdown (``--by name``).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from perfdiff.cli.app import app

if TYPE_CHECKING:
    from rich.console import Console

    from perfdiff.report.kernel_table import LaunchRow, NameRow

# The report, schema (numpy) and rich tables are imported inside the functions: every perfdiff
# command, --help included, imports every command module to register it.


class NamesOption(StrEnum):
    short = "short"
    full = "full"
    mangled = "mangled"


class ByOption(StrEnum):
    launch = "launch"
    name = "name"


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


@app.command()
def kernels(
    run_file: Annotated[Path, typer.Argument(
        readable=False, help="Run file (.json or .json.gz).")],
    *,
    by: Annotated[ByOption, typer.Option(
        "--by", help="launch: every launch in launch order (the seeds' table); "
        "name: aggregated per kernel name.")] = ByOption.launch,
    names: Annotated[NamesOption, typer.Option(
        "--names", help="short: bare function name (as the seeds); full: demangled "
        "signature; mangled: as CUPTI reported it.")] = NamesOption.short,
    run: Annotated[int | None, typer.Option(
        "--run", help="Only this run (index); default: all runs.")] = None,
    cycle: Annotated[int | None, typer.Option(
        "--cycle", help="Only launches of this cycle (index, warm-up or not); default: all "
        "measured cycles.")] = None,
    include_warmup: Annotated[bool, typer.Option(
        "--include-warmup", help="Also list warm-up cycles and launches outside any cycle "
        "(they have no PM samples: n/a).")] = False,
    plain: Annotated[bool, typer.Option(
        "--plain", help="Text/markdown even on a terminal (what a pipe gets).")] = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="Launch order as a markdown table instead of the seeds' "
        "fixed-width text.")] = False,
) -> None:
    """Per-kernel table: latency (ns), tensor-pipe and DRAM utilisation (fractions of peak)."""
    from perfdiff.inputs import require_input

    require_input(run_file)  # before the heavy imports: a missing file in a blink
    from rich.console import Console

    from perfdiff.report.kernel_table import (
        launch_rows,
        name_rows,
        render_launch_markdown,
        render_launch_table,
        render_name_table,
    )
    from perfdiff.schema.io import load_run_file

    loaded = load_run_file(run_file)
    launches = launch_rows(loaded, run_index=run, cycle=cycle, names=names.value,
                           warmup=include_warmup)
    rich_out = sys.stdout.isatty() and not plain
    if by is ByOption.name:
        grouped = name_rows(launches)
        if rich_out:
            _rich_names(grouped, Console())
        else:
            typer.echo(render_name_table(grouped), nl=False)
    elif rich_out:
        _rich_launches(launches, Console())
    elif markdown:
        typer.echo(render_launch_markdown(launches), nl=False)
    else:
        typer.echo(render_launch_table(launches, names.value), nl=False)

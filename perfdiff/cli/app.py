"""The ``perfdiff`` command: one typer app, each subcommand in its own module.

Why the app registers the commands (and not each command itself): a command module is a plain
function with its typer options; it imports nothing of the app, so imports point one way
(app -> commands) and a command can be imported, read and tested without the app.

Why a wrapper around ``app()``: every :class:`PerfdiffError` becomes one line on stderr and
its documented exit code (docs/reference/exit-codes.md, ``perfdiff.cli.guard``); no user
error prints a traceback.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import typer
import typer.main

from perfdiff import __version__
from perfdiff.cli.bench import bench
from perfdiff.cli.collect import collect
from perfdiff.cli.compare import compare
from perfdiff.cli.guard import run_guarded
from perfdiff.cli.import_trace import import_trace
from perfdiff.cli.kernels import kernels
from perfdiff.cli.merge import merge
from perfdiff.cli.ranks import ranks
from perfdiff.inputs import CheckedInputs

app = typer.Typer(
    name="perfdiff",
    help="Find which GPU kernels made a run slower, and why.\n\nEvery command that reads "
    "inputs also takes --max-input-gib N: the largest input it reads, decompressed (default "
    "PERFDIFF_MAX_INPUT_GIB, else 4).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"perfdiff {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """Find which GPU kernels made a run slower, and why."""


# One line per command; help lists them sorted by name. ``collect`` takes a program's own
# arguments after its options (``perfdiff collect -- python train.py --lr 3e-4``).
app.command()(bench)
app.command(context_settings={"allow_extra_args": True})(collect)
app.command()(compare)
app.command("import")(import_trace)
app.command()(kernels)
app.command()(merge)
app.command()(ranks)


@functools.cache
def _click_command() -> Any:
    """The click command typer builds from the commands' signatures: once per process (typer
    rebuilds it on every call, ~30 ms; a process that runs many command lines, as the test
    suites do, paid it each time). Typer's own ``app()`` adds only its exception hook, which
    ``run_guarded`` makes moot."""
    return typer.main.get_command(app)


def main(checked: CheckedInputs | None = None) -> None:
    """Console-script entry point (``checked``: the inputs ``perfdiff.cli.entry`` checked)."""
    from perfdiff.cli.bare_options import expand_bare_options
    from perfdiff.cli.input_limit import take_input_limit
    from perfdiff.cli.usage_line import run_app

    run_guarded(lambda: run_app(_click_command(),
                                expand_bare_options(take_input_limit(sys.argv[1:])), checked))

"""The ``perfdiff`` command: one typer app, each subcommand in its own module.

Why a wrapper around ``app()``: every :class:`PerfdiffError` becomes one line on stderr and
its documented exit code (docs/reference/exit-codes.md); no user error prints a traceback.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from perfdiff import __version__
from perfdiff.errors import ExitCode, InputError, PerfdiffError, exit_code_for

app = typer.Typer(
    name="perfdiff",
    help="Find which GPU kernels made a run slower, and why.",
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


def _register_commands() -> None:
    """Import the command modules; each adds its commands to ``app`` on import."""
    from perfdiff.cli import commands  # noqa: F401


def main() -> None:
    """Console-script entry point."""
    from perfdiff.cli.bare_options import expand_bare_options

    _register_commands()
    try:
        app(args=expand_bare_options(sys.argv[1:]), standalone_mode=True)
    except PerfdiffError as exc:
        print(f"perfdiff: error: {exc}", file=sys.stderr)  # as raised: one line, never edited
        sys.exit(exit_code_for(exc))
    except OSError as exc:
        if exc.filename is None or os.environ.get("PERFDIFF_DEBUG"):
            _internal(exc)
        # a file the user named or the system refused (permissions, a full disk) that no
        # reader caught: still the user's file problem, exit 3, not a bug
        print(f"perfdiff: error: {exc.filename}: {exc.strerror or type(exc).__name__}; check "
              "the path and its permissions", file=sys.stderr)
        sys.exit(exit_code_for(InputError()))
    except KeyboardInterrupt:
        print("perfdiff: interrupted", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    except Exception as exc:
        _internal(exc)


def _internal(exc: BaseException) -> NoReturn:
    """A bug, not a user error: exit INTERNAL (70), never Python's default 1, which CI would
    read as ExitCode.REGRESSION. PERFDIFF_DEBUG=1 re-raises for the traceback."""
    if os.environ.get("PERFDIFF_DEBUG"):
        raise exc
    print(
        f"perfdiff: internal error: {type(exc).__name__}: {exc}; please report it "
        "(rerun with PERFDIFF_DEBUG=1 for the traceback)",
        file=sys.stderr,
    )
    sys.exit(ExitCode.INTERNAL)

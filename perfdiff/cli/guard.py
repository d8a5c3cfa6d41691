"""Every command's errors become one line and a documented exit code, whichever door ran it.

Why its own module (no typer): the typer app (``perfdiff.cli.app``) and the console script's
fast door for plain ``compare`` lines (``perfdiff.cli.entry``) must map errors the same way,
and the fast door must not import typer to do it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn

from perfdiff.errors import ExitCode, InputError, PerfdiffError, exit_code_for


def run_guarded(work: Callable[[], int | None]) -> NoReturn:
    """Run ``work`` and exit with its code (None: 0); a :class:`PerfdiffError` becomes its one
    line on stderr and its exit code (docs/reference/exit-codes.md), never a traceback."""
    try:
        code = work()
    except PerfdiffError as exc:
        print(f"perfdiff: error: {exc}", file=sys.stderr)  # as raised: one line, never edited
        sys.exit(exit_code_for(exc))
    except BrokenPipeError:
        # the reader of stdout went away (``| head``): nothing more to say, as click does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:
        if exc.filename is None or os.environ.get("PERFDIFF_DEBUG"):
            internal_error(exc)
        # a file the user named or the system refused (permissions, a full disk) that no
        # reader caught: still the user's file problem, exit 3, not a bug
        print(f"perfdiff: error: {exc.filename}: {exc.strerror or type(exc).__name__}; check "
              "the path and its permissions", file=sys.stderr)
        sys.exit(exit_code_for(InputError()))
    except KeyboardInterrupt:
        print("perfdiff: interrupted", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    except Exception as exc:
        internal_error(exc)
    sys.exit(code or 0)


def internal_error(exc: BaseException) -> NoReturn:
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


__all__ = ["internal_error", "run_guarded"]

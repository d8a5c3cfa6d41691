"""Options shared by the commands, defined once so that they mean the same everywhere.

Why: ``--fail-on-regression`` was a percentage in compare and a switch in bench, only compare
had ``--format json``, kernels had no ``-o``, and ``--alpha 2`` exited 2 in compare and 3 in
bench. Each shared option is made here (a fresh ``typer.Option`` per command: typer keeps state
on it), with one name, one range and one meaning.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import typer


class OutputFormat(StrEnum):
    """What a command prints: the human report (markdown) or every number (json)."""

    markdown = "markdown"
    json = "json"


def output_option(what: str) -> Any:
    """``-o/--output PATH``: written atomically, never over an input (perfdiff.output)."""
    return typer.Option("--output", "-o", readable=False,
                        help=f"Write {what} to this file instead of stdout (atomically; "
                        "never over an input).")


def format_option() -> Any:
    """``--format markdown|json``."""
    return typer.Option("--format", help="markdown (for people) or json (every number, full "
                        "names, versioned envelope).")


def alpha_option(what: str) -> Any:
    """``--alpha`` in [0, 1]; outside it click refuses with exit 2 in every command."""
    return typer.Option("--alpha", min=0.0, max=1.0, help=f"False-discovery rate {what}.")


def fail_on_regression_option(what: str) -> Any:
    """``--fail-on-regression PCT``: exit 1 on a significant slowdown above PCT %."""
    return typer.Option("--fail-on-regression", min=0.0, metavar="PCT",
                        help=f"Exit with code 1 when {what} got significantly slower by more "
                        "than PCT %; stderr names the first.")


def steps_option(what: str) -> Any:
    """``--steps A:B``: a slice of the measured cycles, the same rule for every input kind
    (``perfdiff.readers.steps``); a malformed slice exits 2 in every command."""
    return typer.Option("--steps", metavar="A:B",
                        help=f"Only the measured cycles A to B-1 of {what}, counted from 0 in "
                        "time order (2:10, 3:, :5, -4:); any kind of input.")


__all__ = ["OutputFormat", "alpha_option", "fail_on_regression_option", "format_option",
           "output_option", "steps_option"]

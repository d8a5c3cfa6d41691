"""One exception hierarchy, mapped to exit codes in one table.

Why: the CLI is the only place that exits. Everything below raises a :class:`PerfdiffError`
subclass whose message is one line (what, where, what to do); ``cli`` prints it and exits with
the class's code. ``docs/reference/exit-codes.md`` documents the same table.
"""

from __future__ import annotations

from typing import ClassVar


class ExitCode:
    """Exit codes of the ``perfdiff`` command (documented in docs/reference/exit-codes.md)."""

    OK = 0
    REGRESSION = 1  # compare --fail-on-regression: a slowdown above the threshold was found
    USAGE = 2  # bad command-line usage (typer/click's own code)
    BAD_INPUT = 3  # missing, unreadable, truncated, wrong-version or malformed input file
    INCOMPARABLE = 4  # runs cannot be compared (different GPU model or workload) without --force
    COLLECTOR_UNAVAILABLE = 5  # no GPU, no CUPTI, no cupti-python: collection impossible
    WORKLOAD_FAILED = 6  # the workload raised; a partial run file was still written
    INTERNAL = 70  # a bug in perfdiff (EX_SOFTWARE); please report it
    INTERRUPTED = 130  # Ctrl-C; a partial run file was still written


class PerfdiffError(Exception):
    """Base of every error perfdiff reports to the user as one line."""

    exit_code: ClassVar[int] = ExitCode.INTERNAL


class InputError(PerfdiffError):
    """An input file is missing, unreadable, truncated or not what it claims to be."""

    exit_code: ClassVar[int] = ExitCode.BAD_INPUT


class OutputError(PerfdiffError):
    """An output cannot be written (unwritable folder, full disk) or would replace an input."""

    exit_code: ClassVar[int] = ExitCode.BAD_INPUT


class SchemaVersionError(InputError):
    """A run file's schema major version is not one this perfdiff can read."""


class IncomparableRunsError(PerfdiffError):
    """Two inputs cannot be compared meaningfully (override with --force)."""

    exit_code: ClassVar[int] = ExitCode.INCOMPARABLE


class CollectorUnavailableError(PerfdiffError):
    """Collection cannot start: no GPU, no CUPTI, or the collect extra is not installed."""

    exit_code: ClassVar[int] = ExitCode.COLLECTOR_UNAVAILABLE


class WorkloadError(PerfdiffError):
    """The workload under collection failed; what was gathered has been saved."""

    exit_code: ClassVar[int] = ExitCode.WORKLOAD_FAILED

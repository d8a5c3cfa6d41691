"""One exception hierarchy, mapped to exit codes in one table (:data:`EXIT_CODES`).

Why: the CLI is the only place that exits. Everything below raises a :class:`PerfdiffError`
subclass whose message is one line (what, where, what to do); ``cli`` prints it as given and
exits with the code this table maps the class to. ``docs/reference/exit-codes.md`` holds the
same table; ``tests/cli/test_exit_codes.py`` fails when the two differ.
"""

from __future__ import annotations

from dataclasses import dataclass


class ExitCode:
    """Exit codes of the ``perfdiff`` command (the rows of :data:`EXIT_CODES`)."""

    OK = 0
    REGRESSION = 1  # --fail-on-regression: a slowdown above the threshold was found
    USAGE = 2  # bad command-line usage (click's own code, and ours for bad option values)
    BAD_INPUT = 3  # an input cannot be read or makes no sense, or an output cannot be written
    INCOMPARABLE = 4  # runs cannot be compared (different GPU model or workload) without --force
    COLLECTOR_UNAVAILABLE = 5  # no GPU, no CUPTI, no cupti-python: collection impossible
    WORKLOAD_FAILED = 6  # the workload raised; a partial run file was still written
    CLUSTER_FAILED = 7  # the Dask cluster could not be reached or lost the work; nothing written
    INTERNAL = 70  # a bug in perfdiff (EX_SOFTWARE); please report it
    INTERRUPTED = 130  # Ctrl-C; a partial run file was still written


class PerfdiffError(Exception):
    """Base of every error perfdiff reports to the user as one line."""

    @property
    def exit_code(self) -> int:
        """This error's code, from :data:`EXIT_CODES` (the one mapping)."""
        return exit_code_for(self)


class UsageError(PerfdiffError):
    """A command-line mistake click cannot see: a bad option value, an option that cannot be
    honoured here (``--plots`` without matplotlib), an unknown workload parameter."""


class InputError(PerfdiffError):
    """An input file is missing, unreadable, truncated, not what it claims to be, or
    physically impossible (an end before its start, a reference to nothing)."""


class SchemaVersionError(InputError):
    """A run file's schema major version is not one this perfdiff can read."""


class OutputError(PerfdiffError):
    """An output cannot be written (unwritable folder, full disk) or would replace an input."""


class IncomparableRunsError(PerfdiffError):
    """Inputs cannot be compared or merged meaningfully (override with --force)."""


class CollectorUnavailableError(PerfdiffError):
    """Collection cannot start: no GPU, no CUPTI, or the collect extra is not installed."""


class WorkloadError(PerfdiffError):
    """The workload under collection failed; what was gathered has been saved."""


class ClusterError(PerfdiffError):
    """The Dask cluster a command ran on could not be reached, or lost a task past its retries;
    no output was written."""


@dataclass(frozen=True)
class ExitCodeRow:
    """One exit code: its number, name, the error classes that exit with it, and the text of
    the reference page (``meaning``, ``commands``)."""

    code: int
    name: str
    errors: tuple[type[PerfdiffError], ...]
    meaning: str
    commands: str


EXIT_CODES: tuple[ExitCodeRow, ...] = (
    ExitCodeRow(ExitCode.OK, "OK", (), "Success: the report / table / run file was written.",
                "all"),
    ExitCodeRow(ExitCode.REGRESSION, "REGRESSION", (),
                "`--fail-on-regression PCT` found a significant slowdown above PCT % (the "
                "report is still written first; stderr names the first regression, in `bench` "
                "the case).", "`compare`, `bench`"),
    ExitCodeRow(ExitCode.USAGE, "USAGE", (UsageError,),
                "Bad command-line usage: unknown option, value out of range (`--alpha 2`), "
                "missing argument, an unknown workload parameter, a bad collection setting "
                "(`--sample-interval-ns -5`); also `--plots` when matplotlib is not installed.",
                "all"),
    ExitCodeRow(ExitCode.BAD_INPUT, "BAD_INPUT", (InputError, OutputError),
                "An input is missing, unreadable (permissions, a symlink loop), a folder that "
                "is not a LatencyPrism `*_perf_data` folder, not JSON, truncated (plain or "
                "gzip), of an unknown schema major version, malformed (a missing field, columns "
                "of different lengths), physically impossible (an end before its start, a "
                "duration beyond the run, a reference to a cycle or device that does not exist, "
                "a number that is not finite), or has no measured cycles; also `--run`/`--cycle` "
                "selecting nothing, or an output that cannot be written (unwritable folder, full "
                "disk: the previous file is kept) or that would replace an input.",
                "all"),
    ExitCodeRow(ExitCode.INCOMPARABLE, "INCOMPARABLE", (IncomparableRunsError,),
                "The inputs are not one experiment: different GPU models or workloads "
                "(`compare`, `bench`); the same file twice, different GPU models or drivers, "
                "different workload parameters (`merge`). `--force` goes ahead anyway and the "
                "output says so.", "`compare`, `bench`, `merge`"),
    ExitCodeRow(ExitCode.COLLECTOR_UNAVAILABLE, "COLLECTOR_UNAVAILABLE",
                (CollectorUnavailableError,),
                "Collection cannot start: no NVIDIA GPU, no CUPTI, or the `perfdiff[collect]` "
                "extra (cupti-python) is not installed. The line names what is missing and how "
                "to get it.", "`collect`"),
    ExitCodeRow(ExitCode.WORKLOAD_FAILED, "WORKLOAD_FAILED", (WorkloadError,),
                "The workload under collection raised; a run file marked *incomplete* with "
                "every cycle gathered so far was still written.", "`collect`"),
    ExitCodeRow(ExitCode.CLUSTER_FAILED, "CLUSTER_FAILED", (ClusterError,),
                "The Dask cluster (`--scheduler ADDRESS`, `DASK_SCHEDULER_ADDRESS`, or the local "
                "one for a large sharded run) could not be reached or started, or lost a rank's "
                "task more often than it retries (workers killed again and again); nothing was "
                "written.", "`compare`, `ranks`"),
    ExitCodeRow(ExitCode.INTERNAL, "INTERNAL", (PerfdiffError,),
                "A bug in perfdiff (`EX_SOFTWARE`): one line `perfdiff: internal error: ...`; "
                "rerun with `PERFDIFF_DEBUG=1` for the traceback and report it. Never 1, so a "
                "crash cannot pass for a regression in CI.", "all"),
    ExitCodeRow(ExitCode.INTERRUPTED, "INTERRUPTED", (),
                "Ctrl-C. During `collect`, a run file marked *incomplete* was still written.",
                "all"),
)

_CODE_OF: dict[type[PerfdiffError], int] = {
    cls: row.code for row in EXIT_CODES for cls in row.errors
}


def exit_code_for(error: BaseException) -> int:
    """The exit code of ``error``: its nearest class in :data:`EXIT_CODES`, else INTERNAL."""
    for cls in type(error).__mro__:
        code = _CODE_OF.get(cls)
        if code is not None:
            return code
    return ExitCode.INTERNAL


__all__ = [
    "EXIT_CODES",
    "ClusterError",
    "CollectorUnavailableError",
    "ExitCode",
    "ExitCodeRow",
    "IncomparableRunsError",
    "InputError",
    "OutputError",
    "PerfdiffError",
    "SchemaVersionError",
    "UsageError",
    "WorkloadError",
    "exit_code_for",
]

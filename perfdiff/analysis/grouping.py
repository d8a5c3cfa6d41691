"""``--by kernel|family|op|module``: which unit the statistics compare.

Why by renaming, not by a second statistics path: a row of the report is "a named piece of GPU
work per cycle"; grouping kernels by their family, their launching framework op or their module
is giving each kernel launch the group's name and letting the one machinery (cycle table,
per-cycle shares, tests, q-values, ranking) sum and compare the groups as it compares kernels.
So ``--by op`` rows carry the same statistics as kernel rows, and nothing can drift apart.

Where the input does not know the group (a run file of perfdiff's own collector has no ops;
LatencyPrism rows are already reduced to functions), the comparison is refused in one line
rather than shown as one big "unknown" row; single kernels with no known op or module go to a
row that says so (:data:`NO_OP_LABEL`, :data:`NO_MODULE_LABEL`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

import numpy as np

from perfdiff.analysis.families import family_of
from perfdiff.errors import InputError
from perfdiff.schema.model import KernelName, Run, RunFile

BY_KERNEL: Final = "kernel"
BY_FAMILY: Final = "family"
BY_OP: Final = "op"
BY_MODULE: Final = "module"
GROUPINGS: Final = (BY_KERNEL, BY_FAMILY, BY_OP, BY_MODULE)

NO_OP_LABEL: Final = "(launched outside any framework op)"
NO_MODULE_LABEL: Final = "(launched outside any nn.Module)"

_WHAT = {BY_FAMILY: "kernel families", BY_OP: "framework ops (outermost > launching op)",
         BY_MODULE: "nn.Module paths"}


def grouped_run_file(run_file: RunFile, by: str, source: str) -> RunFile:
    """``run_file`` with each kernel named after its group; ``by == "kernel"``: unchanged.

    Raises :class:`InputError` (one line) when the run file does not know the group."""
    if by == BY_KERNEL:
        return run_file
    if by not in GROUPINGS:
        raise InputError(f"--by {by!r}: not a grouping; use one of {', '.join(GROUPINGS)}")
    if by == BY_FAMILY:
        labels = [family_of(name.demangled) for name in run_file.strings]
        return _renamed(run_file, [_by_name(run, labels) for run in run_file.runs])
    column = "op_id" if by == BY_OP else "module_id"
    if any(getattr(run.kernels, column) is None for run in run_file.runs):
        raise InputError(_unknown_line(run_file, by, source))
    unknown = NO_OP_LABEL if by == BY_OP else NO_MODULE_LABEL
    labels = [*run_file.ops, unknown]  # id -1 picks the last
    return _renamed(run_file, [_by_column(run, column, labels) for run in run_file.runs])


def grouping_note(by: str) -> str:
    """The line the report shows when rows are groups, not kernels."""
    extra = ""
    if by == BY_OP:
        extra = f"; kernels whose launch ran under no op are the row {NO_OP_LABEL!r}"
    elif by == BY_MODULE:
        extra = f"; kernels launched outside every module are the row {NO_MODULE_LABEL!r}"
    return (f"Rows are {_WHAT[by]} (--by {by}): each row sums the kernels of its group per "
            f"cycle and is tested like a kernel; the headline still splits the change by "
            f"kernel family{extra}.")


def _unknown_line(run_file: RunFile, by: str, source: str) -> str:
    if by == BY_OP:
        what = "the framework op that launched each kernel"
        fix = ("record a torch.profiler trace with ProfilerActivity.CPU and CUDA (its cpu_op "
               "events name the ops)")
    else:
        what = "the nn.Module that launched each kernel"
        fix = "record a torch.profiler trace with with_modules=True (or with_stack=True)"
    recorder = ("perfdiff collect records kernels, not their launching ops"
                if "torch_profiler" not in run_file.collection.sources
                else "this trace has no such events")
    return (f"{source}: --by {by} needs {what}, which this input does not hold ({recorder}); "
            f"{fix}, or use --by kernel or --by family")


def _by_name(run: Run, labels: list[str]) -> tuple[Run, list[str]]:
    ids = np.asarray(run.kernels.name_id, dtype=np.int64)
    return run, [labels[i] for i in ids.tolist()]


def _by_column(run: Run, column: str, labels: list[str]) -> tuple[Run, list[str]]:
    ids = getattr(run.kernels, column)
    return run, [labels[i] for i in ids.tolist()]


def _renamed(run_file: RunFile, runs: list[tuple[Run, list[str]]]) -> RunFile:
    """One string table of the group labels; each run's name ids point into it."""
    names = sorted({label for _, labels in runs for label in labels})
    ids = {name: i for i, name in enumerate(names)}
    new_runs = tuple(
        replace(run, kernels=replace(run.kernels, name_id=np.asarray(
            [ids[label] for label in labels], dtype=np.int64)))
        for run, labels in runs)
    return replace(run_file, strings=tuple(KernelName(n, n) for n in names), runs=new_runs)


def refuse_grouping_of_rows(by: str, source: str) -> None:
    """Per-cycle rows of another tool (LatencyPrism) are already reduced to functions."""
    if by != BY_KERNEL:
        raise InputError(f"{source}: --by {by} needs each kernel launch, but this input holds "
                         "per-cycle rows already reduced to functions (LatencyPrism); use "
                         "--by kernel")

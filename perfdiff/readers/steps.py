"""``--steps A:B``: which cycles of an input are compared, the same rule for every input kind.

Why at the door: a run file, a converted trace and a LatencyPrism folder number their cycles
differently (``ProfilerStep#N``, 0.. for ranges and detected periods, LatencyPrism's own
numbers), so the choice is made by position: the measured (non-warm-up) cycles of each run in
time order, counted from 0, ``A`` included and ``B`` excluded, as a Python slice (``2:``, ``:5``
and ``-3:`` work too). Cycles left out are dropped from the input and their GPU work goes
outside every cycle, so nothing downstream needs to know a choice was made; the input carries
a warning that says which cycles were kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from perfdiff.errors import InputError, UsageError
from perfdiff.schema.loaded import CycleRows, LoadedInput
from perfdiff.schema.model import KernelTable, Run, RunFile, TransferTable

_Records = TypeVar("_Records", KernelTable, TransferTable)
_STEPS = re.compile(r"(-?[0-9]+)?:(-?[0-9]+)?")


@dataclass(frozen=True)
class StepRange:
    """A slice of the measured cycles of each run (``start``/``stop`` as in Python)."""

    start: int | None = None
    stop: int | None = None

    @classmethod
    def parse(cls, text: str) -> StepRange:
        """``"A:B"``, ``"A:"``, ``":B"`` (a bare ``"N"`` means ``N:N+1``, one cycle)."""
        if text.strip().lstrip("-").isdigit():
            start = int(text)
            return cls(start, start + 1 if start != -1 else None)
        match = _STEPS.fullmatch(text.strip())
        if match is None:
            raise UsageError(f"--steps {text!r}: expected A:B (cycles A to B-1 of each side, "
                             "counted from 0), e.g. --steps 2:10 or --steps 3:")
        first, last = (None if g is None else int(g) for g in match.groups())
        return cls(first, last)

    def __str__(self) -> str:
        return f"{'' if self.start is None else self.start}:" \
               f"{'' if self.stop is None else self.stop}"

    def positions(self, count: int) -> range:
        """The positions kept among ``count`` cycles."""
        return range(count)[self.start:self.stop]


def select_steps(loaded: LoadedInput, steps: StepRange) -> LoadedInput:
    """``loaded`` with only the chosen cycles (InputError when that leaves none)."""
    if loaded.run_file is not None:
        run_file = _select_run_file(loaded.run_file, steps, loaded.source)
        return replace(loaded, run_file=run_file)
    assert loaded.cycle_rows is not None  # a LoadedInput is one or the other
    return replace(loaded, cycle_rows=_select_rows(loaded.cycle_rows, steps, loaded.source))


def _nothing_left(source: str, steps: StepRange, counts: list[int]) -> InputError:
    shown = ", ".join(map(str, sorted(set(counts))))
    return InputError(f"{source}: --steps {steps} keeps no cycle (the input has {shown} "
                      "measured cycles per run); choose positions from 0 to that count")


def _select_run_file(run_file: RunFile, steps: StepRange, source: str) -> RunFile:
    runs = [_select_run(run, steps) for run in run_file.runs]
    kept = [n for _, n, _ in runs]
    if not any(kept):
        raise _nothing_left(source, steps, [total for _, _, total in runs])
    note = (f"compared {min(kept)}" + (f"-{max(kept)}" if max(kept) != min(kept) else "")
            + f" of {max(total for _, _, total in runs)} measured cycles per run "
            f"(--steps {steps})")
    collection = replace(run_file.collection,
                         warnings=(*run_file.collection.warnings, note))
    return replace(run_file, runs=tuple(run for run, _, _ in runs), collection=collection)


def _select_run(run: Run, steps: StepRange) -> tuple[Run, int, int]:
    """The run with its chosen cycles, how many were kept, how many were measured."""
    cycles = run.cycles
    measured = np.flatnonzero(~cycles.warmup)
    measured = measured[np.argsort(cycles.start_ns[measured], kind="stable")]
    chosen = measured[list(steps.positions(measured.size))]
    keep = np.zeros(cycles.index.size, dtype=np.bool_)
    keep[chosen] = True
    kept_index = cycles.index[keep]
    new_cycles = replace(cycles, index=cycles.index[keep], start_ns=cycles.start_ns[keep],
                         end_ns=cycles.end_ns[keep],
                         label=tuple(label for label, k in zip(cycles.label, keep, strict=True)
                                     if k),
                         warmup=cycles.warmup[keep])

    def moved(table: _Records) -> _Records:
        outside = ~np.isin(table.cycle, kept_index)
        return replace(table, cycle=np.where(outside, -1, table.cycle).astype(np.int64))

    run = replace(run, cycles=new_cycles, kernels=moved(run.kernels), memcpy=moved(run.memcpy),
                  memset=moved(run.memset))
    return run, int(chosen.size), int(measured.size)


def _select_rows(rows: CycleRows, steps: StepRange, source: str) -> CycleRows:
    """Per pid, its cycles in number order (LatencyPrism numbers them in time order)."""
    keep = np.zeros(len(rows), dtype=np.bool_)
    counts = []
    for pid in np.unique(rows.pid):
        mine = rows.pid == pid
        numbers = np.unique(rows.cycle[mine])
        counts.append(int(numbers.size))
        chosen = numbers[list(steps.positions(numbers.size))]
        keep |= mine & np.isin(rows.cycle, chosen)
    if not keep.any():
        raise _nothing_left(source, steps, counts)
    return rows.selected(keep)


__all__ = ["StepRange", "select_steps"]

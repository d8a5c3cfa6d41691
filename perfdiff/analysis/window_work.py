"""Fixed windows (``--cycle-ms``) compared by work done, not by their length.

Why: a window always lasts the window. A program that got 20 % slower does 20 % less work
in it, so "cycle time 200 -> 200 ms, no change" is the only thing a window comparison can
say about its length, and it hides the slowdown. What a window tells is how much work was
launched in it. So each window is divided by its *units of work*:

- **iterations**, when the run's launch sequence repeats
  (:func:`perfdiff.schema.periods.detect_period`): a window that launched 1,848 kernels of a
  program whose iteration is 812 launches did 2.28 iterations. Counting launches rather than
  iteration starts keeps the count fractional, so a 200 ms window of a 90 ms step does not
  read as 2 or 3 iterations by where its edges fall;
- else **launches of the kernels that repeat** (those launched in every measured window).

Every time in the window's rows (the window's length, each function's time, its launches)
is divided by the window's units, so the comparison, its verdict and its findings are per
unit of work: time per iteration is the inverse of throughput. Shares (β) do not change.
When no unit can be found, cycle time is undefined for windows: the comparison says so and
compares shares only (``comparison.compare_tables`` reads :attr:`WindowWork.unit`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.schema.model import Run, RunFile
from perfdiff.schema.periods import detect_period

ITERATION = "iteration"
REPEATING_LAUNCH = "launch of the repeating kernels"
_WINDOWS = re.compile(r"fixed ([0-9.eE+-]+) ms windows")


@dataclass(frozen=True)
class WindowWork:
    """How one side's windows were turned into units of work (``unit`` "" when none was)."""

    window_ms: float
    unit: str
    launches_per_unit: float  # mean over runs: the detected period, or 1
    units_per_window: float  # mean over measured windows
    launches_per_window: float
    periods: tuple[int, ...] = ()  # detected period of each run, in launches

    def label(self) -> str:
        """The cycles' new label: what one cycle now is (same for any window length)."""
        return f"{self.unit} (from fixed windows)" if self.unit else "fixed window"

    def note(self, side: str) -> str:
        """One sentence for the report."""
        if not self.unit:
            return (f"The {side} side was cut in fixed {self.window_ms:g} ms windows and no "
                    "unit of work was found in them (no repeating launch sequence, no kernel "
                    f"launched in every window): {self.launches_per_window:,.1f} launches per "
                    "window; cycle time is undefined for windows, so only shares are compared.")
        if self.unit == ITERATION:
            period = ", ".join(f"{p:,}" for p in sorted(set(self.periods)))
            what = (f"{self.units_per_window:.3g} iterations (detected period of {period} "
                    "launches)")
        else:
            what = f"{self.units_per_window:,.1f} launches of the kernels launched in every window"
        per_unit = self.window_ms / self.units_per_window if self.units_per_window else np.nan
        return (f"The {side} side was cut in fixed {self.window_ms:g} ms windows: "
                f"{what} and {self.launches_per_window:,.1f} launches per window, so times are "
                f"per {self.unit} ({per_unit:.4g} ms each) and the cycle-time verdict is on "
                "throughput.")


def window_ms_of(run_file: RunFile) -> float | None:
    """The window length when the run file's cycles are fixed windows, else None."""
    params = run_file.workload.params
    value = params.get("cycle_ms")
    if isinstance(value, (int, float)) and value > 0:
        return float(value)
    match = _WINDOWS.fullmatch(str(params.get("cycles_from", "")))
    return float(match.group(1)) if match else None


def per_unit_of_work(run_file: RunFile,
                     table: pd.DataFrame) -> tuple[pd.DataFrame, WindowWork | None]:
    """``table`` with each window's rows divided by its units of work (module docstring).

    Returns the table unchanged and None when the cycles are not fixed windows.
    """
    window_ms = window_ms_of(run_file)
    if window_ms is None or table.empty:
        return table, None
    units: dict[tuple[int, int], float] = {}
    launches: dict[tuple[int, int], int] = {}
    kinds: set[str] = set()
    periods: list[int] = []
    per_unit: list[float] = []
    for run in run_file.runs:
        measured = run.cycles.index[~run.cycles.warmup]
        counts, unit, period = _units(run, measured)
        kinds.add(unit)
        if unit == ITERATION:
            periods.append(period)
        per_unit.append(float(max(period, 1)))
        all_launches = np.bincount(run.kernels.cycle[run.kernels.cycle >= 0],
                                   minlength=int(measured.max()) + 1 if measured.size else 0)
        for cycle in measured.tolist():
            units[(run.index, cycle)] = counts.get(cycle, 0.0)
            launches[(run.index, cycle)] = int(all_launches[cycle])
    unit = kinds.pop() if len(kinds) == 1 else ""
    mean_launches = float(np.mean(list(launches.values()))) if launches else 0.0
    if not unit:
        work = WindowWork(window_ms, "", float("nan"), float("nan"), mean_launches)
        return _relabel(table, work.label()), work
    keys = pd.MultiIndex.from_arrays([table[C.RUN].to_numpy(), table[C.CYCLE].to_numpy()])
    factor = np.asarray([units.get((int(r), int(c)), 0.0) for r, c in keys], dtype=np.float64)
    keep = factor > 0
    out = table.loc[keep].copy()
    scale = factor[keep]
    for column in (C.TIME_MS, C.CYCLE_MS, C.LAUNCHES):
        if column in out.columns:
            out[column] = out[column].to_numpy(dtype=np.float64) / scale
    positive = [v for v in units.values() if v > 0]
    work = WindowWork(window_ms, unit, float(np.mean(per_unit)),
                      float(np.mean(positive)) if positive else 0.0, mean_launches,
                      tuple(periods))
    return _relabel(out.reset_index(drop=True), work.label()), work


def _units(run: Run, measured: np.ndarray) -> tuple[dict[int, float], str, int]:
    """Units of work per window of one run: (window -> units, unit, launches per unit)."""
    k = run.kernels
    if k.name_id.size == 0 or measured.size == 0:
        return {}, "", 0
    order = np.lexsort((k.start_ns, k.correlation_id))  # launch order within the process
    period = detect_period(k.name_id[order])
    in_measured = np.isin(k.cycle, measured)
    if period.found:
        per_window = np.bincount(k.cycle[in_measured], minlength=int(measured.max()) + 1)
        counts = {int(c): per_window[c] / period.period_launches for c in measured.tolist()}
        return counts, ITERATION, period.period_launches
    repeating = _repeating_names(k.name_id[in_measured], k.cycle[in_measured], measured)
    if repeating.size == 0:
        return {}, "", 0
    chosen = in_measured & np.isin(k.name_id, repeating)
    per_window = np.bincount(k.cycle[chosen], minlength=int(measured.max()) + 1)
    return {int(c): float(per_window[c]) for c in measured.tolist()}, REPEATING_LAUNCH, 1


def _repeating_names(names: np.ndarray, cycles: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Names launched in every measured window."""
    if names.size == 0:
        return np.zeros(0, dtype=np.int64)
    pairs = np.unique(np.stack([names, cycles]), axis=1)
    ids, windows_seen = np.unique(pairs[0], return_counts=True)
    found: np.ndarray = ids[windows_seen == measured.size]
    return found


def _relabel(table: pd.DataFrame, label: str) -> pd.DataFrame:
    out = table.copy()
    out[C.ANCHOR] = pd.Series([label] * len(out), index=out.index, dtype=object)
    return out


__all__ = ["ITERATION", "REPEATING_LAUNCH", "WindowWork", "per_unit_of_work", "window_ms_of"]

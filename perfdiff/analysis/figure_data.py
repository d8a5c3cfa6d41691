"""What the figures draw, built here so that ``report/figures`` only draws.

Why in ``analysis``: a figure that selects rows, converts an interval or decides which cycle
lacks PM samples is making the same kind of decision the report makes; done here, in small
tested functions, the figure cannot disagree with the text beside it. Everything is derived
from the :class:`Comparison` (intervals, verdicts, order) and, for the per-cycle views, from the
two loaded inputs (cycle table, run file).

- :func:`forest_rows`: the "What changed" rows: the report's key findings first, in its order,
  with the same intervals, then the other functions by |change of time per cycle|.
- :func:`cycle_trace`: a side's cycle times in run order, with warm-up, collector stalls,
  cycles left untraced (the collector's overhead probe) and cycles without PM samples marked.
- :func:`metric_spreads`: per-cycle μ of each key finding's metric moves, both sides.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.findings import CHANGE, is_device_state
from perfdiff.analysis.model import Comparison, Verdict
from perfdiff.analysis.processes import align_pids
from perfdiff.analysis.self_overhead import held_cycles
from perfdiff.analysis.sides import Side
from perfdiff.schema.model import CycleTable, MetricSeries, Run, RunFile

DEFAULT_FOREST_ROWS = 12
MOVES_PER_FINDING = 2  # metric panels per key finding in the "Why" figure (the first moves)


@dataclass(frozen=True)
class ForestRow:
    """One row of the forest plot: a change with its 95 % interval and verdict.

    ``unit`` is "ms" (time per cycle) or "pp" (share of cycle time, when the two sides' cycles
    were cut differently and times are not comparable; no interval then).
    """

    function: str  # full name; "" for the cycle-time row
    device: str
    pid: int | None
    delta: float
    low: float
    high: float
    verdict: Verdict
    unit: str
    is_finding: bool


@dataclass(frozen=True)
class Forest:
    """The "What changed" figure's content."""

    cycle: ForestRow | None  # the cycle time's change in ms (None: not comparable)
    rows: tuple[ForestRow, ...]
    threshold: float  # practical threshold in the rows' unit (band ±threshold)
    unit: str


def forest_rows(comparison: Comparison, top: int = DEFAULT_FOREST_ROWS) -> Forest:
    """Findings first (report order, same numbers), then other functions by |change|."""
    comparable = comparison.cycle_time.comparable
    unit = "ms" if comparable else "pp"
    findings = [(f.function, f.device, f.pid) for f in comparison.findings]
    heads: dict[tuple[str, str, int | None], ForestRow] = {}
    for r in comparison.rows:
        key = (r.function, r.device, r.pid)
        if key in heads:
            continue
        if comparable:
            delta, low, high = r.time_delta_ms, r.time_ci_low_ms, r.time_ci_high_ms
        else:
            delta, low, high = r.delta_cycle_share_pp, math.nan, math.nan
        if not math.isfinite(delta):
            continue
        heads[key] = ForestRow(r.function, r.device, r.pid, delta, low, high, r.verdict, unit,
                               key in findings)
    first = [heads[k] for k in findings if k in heads]
    rest = sorted((row for k, row in heads.items() if k not in findings),
                  key=lambda row: (-abs(row.delta), row.function, row.device))
    rows = (first + rest)[: max(top, len(first))]
    opts = comparison.options
    threshold = (opts.practical_threshold_pct / 100.0 * comparison.normal.cycle_ms_mean
                 if comparable else opts.practical_threshold_pct)
    return Forest(cycle_row(comparison), tuple(rows), threshold, unit)


def cycle_row(comparison: Comparison) -> ForestRow | None:
    """The cycle time's change in ms: its interval is reported in % of the normal mean."""
    change = comparison.cycle_time
    if not change.comparable:
        return None
    base = comparison.normal.cycle_ms_mean
    return ForestRow("", "", None, change.delta_ms, change.ci_low_pct / 100.0 * base,
                     change.ci_high_pct / 100.0 * base, change.verdict, "ms", False)


def changed(verdict: Verdict) -> bool:
    return verdict in CHANGE


# ----------------------------------------------------------------------------- cycles in order


@dataclass(frozen=True)
class CycleTrace:
    """One side's cycles in run order (warm-up included when the input has it).

    ``warmup`` marks true warm-up only; cycles the collector left untraced to measure its own
    overhead are flagged warm-up in the run file too (no statistic sees them) but sit among
    the measured ones, so they are marked ``untraced`` instead, and drawn as such.
    ``stalled_by`` says where ``stalled`` came from, for the legend: ``"hold"`` (the run
    file's per-cycle ``hold_ns``, schema 1.3) or ``"warning"`` (the buffer hand-over warning
    of older files).
    """

    label: str
    segment: tuple[str, ...]  # one label per cycle: its run ("run 0", "rank 1"), in order
    cycle_ms: tuple[float, ...]
    warmup: tuple[bool, ...]
    stalled: tuple[bool, ...]  # the collector held the interpreter > 1 ms during it
    missing_pm: tuple[bool, ...]  # a stretch without PM samples overlaps it
    pm_recorded: bool  # the input has PM-sampled metrics at all
    untraced: tuple[bool, ...] = ()  # left untraced (overhead probe); empty: none
    stalled_by: str = "warning"


_HANDOVER = re.compile(r"CUPTI handed over an activity buffer during \d+ measured cycle\(s\) "
                       r"\(cycle ([0-9, .]+)\)")


def stalled_cycle_indices(warnings: tuple[str, ...]) -> set[int]:
    """Cycle indices named by the collector's buffer hand-over warning (collect/cupti/handovers.py).

    Why from the warning: it is all that files without per-cycle ``hold_ns`` (before schema
    1.3) record of a hand-over; it names the first five cycles only, so later ones go
    unmarked (the warning says "...").
    """
    out: set[int] = set()
    for warning in warnings:
        match = _HANDOVER.search(warning)
        if match:
            out |= {int(t) for t in match.group(1).replace(".", "").split(",") if t.strip()}
    return out


def pm_missing(cycles: CycleTable, series: list[MetricSeries]) -> np.ndarray:
    """Per cycle: does a stretch of more than two intervals without PM samples overlap it?

    A PM sample ending at t covers [t - interval, t]; the collector's coverage warning counts
    the same gaps (collect/cupti/pm_sampling.py). Several series sampled together share timestamps:
    the union is used. Warm-up cycles are never sampled and are not marked.
    """
    starts = np.asarray(cycles.start_ns, dtype=np.int64)
    ends = np.asarray(cycles.end_ns, dtype=np.int64)
    missing = np.zeros(starts.shape[0], dtype=bool)
    if not series:
        return missing
    interval = max(int(s.interval_ns or 0) for s in series)
    stamps = np.unique(np.concatenate([np.asarray(s.timestamps_ns, dtype=np.int64)
                                       for s in series]))
    if interval <= 0:
        spacing = np.diff(stamps)
        interval = int(np.median(spacing)) if spacing.size else 0
    if interval <= 0:
        return missing
    measured = ~np.asarray(cycles.warmup, dtype=bool)
    for i in np.flatnonzero(measured):
        lo = np.searchsorted(stamps, starts[i], side="right")
        hi = np.searchsorted(stamps, ends[i] + interval, side="right")
        bounds = np.concatenate(([starts[i]], stamps[lo:hi] - interval, [ends[i]]))
        missing[i] = bool((np.diff(np.sort(bounds)) > 2 * interval).any())
    return missing


def _segment_name(run: Run) -> str:
    return f"rank {run.rank}" if run.rank is not None else f"run {run.index}"


def untraced_cycles(cycles: CycleTable) -> np.ndarray:
    """Per cycle: left untraced by the collector to measure its own overhead."""
    if cycles.traced is None:
        return np.zeros(len(cycles.index), dtype=bool)
    untraced: np.ndarray = np.asarray(cycles.traced) == 0
    return untraced


def trace_of_run_file(run_file: RunFile, label: str) -> CycleTrace:
    """Every cycle of every run, in file order, with its warm-up flag and marks.

    Stalls come from per-cycle ``hold_ns`` when every run has it, else from the hand-over
    warning (older files), which names cycle indices and so only marks single-run files.
    """
    by_hold = bool(run_file.runs) and all(r.cycles.hold_ns is not None for r in run_file.runs)
    stalled_ids = set() if by_hold else stalled_cycle_indices(run_file.collection.warnings)
    single = len(run_file.runs) == 1  # the warning names cycle indices, not runs
    segment: list[str] = []
    cycle_ms: list[float] = []
    warmup: list[bool] = []
    stalled: list[bool] = []
    untraced: list[bool] = []
    missing_pm: list[bool] = []
    pm_recorded = False
    for run in run_file.runs:
        cyc = run.cycles
        by_device: dict[int, list[MetricSeries]] = {}
        for s in run.metrics:
            if s.source == "pm_sampling":
                by_device.setdefault(s.device, []).append(s)
        pm_recorded = pm_recorded or bool(by_device)
        missing = np.zeros(len(cyc.index), dtype=bool)
        for device_series in by_device.values():
            missing |= pm_missing(cyc, device_series)
        segment += [_segment_name(run)] * len(cyc.index)
        cycle_ms += [float(v) for v in (cyc.end_ns - cyc.start_ns) / 1e6]
        probe = untraced_cycles(cyc)
        warmup += [bool(w) and not bool(u) for w, u in zip(cyc.warmup, probe, strict=True)]
        untraced += [bool(u) for u in probe]
        held = held_cycles(cyc)
        if by_hold and held is not None:
            stalled += [bool(v) for v in held]
        else:
            stalled += [single and int(i) in stalled_ids and not bool(w)
                        for i, w in zip(cyc.index, cyc.warmup, strict=True)]
        missing_pm += [bool(v) for v in missing]
    return CycleTrace(label, tuple(segment), tuple(cycle_ms), tuple(warmup), tuple(stalled),
                      tuple(missing_pm), pm_recorded, tuple(untraced),
                      "hold" if by_hold else "warning")


def trace_of_table(table: pd.DataFrame, label: str) -> CycleTrace:
    """Measured cycles of a cycle table (imported data: no warm-up, no collector marks)."""
    cycles = (table[[C.RUN, C.PID, C.CYCLE, C.CYCLE_MS]]
              .drop_duplicates([C.RUN, C.PID, C.CYCLE])
              .sort_values([C.PID, C.RUN, C.CYCLE], kind="stable"))
    several_pids = cycles[C.PID].nunique() > 1
    segment = [f"pid {p}, run {r}" if several_pids else f"run {r}"
               for p, r in zip(cycles[C.PID], cycles[C.RUN], strict=True)]
    n = len(cycles)
    return CycleTrace(label, tuple(segment),
                      tuple(float(v) for v in cycles[C.CYCLE_MS]),
                      (False,) * n, (False,) * n, (False,) * n, False)


def cycle_trace(side: Side, label: str) -> CycleTrace:
    """A side's cycles in order: from its run file when it has one, else from its table."""
    if side.run_file is not None:
        return trace_of_run_file(side.run_file, label)
    return trace_of_table(side.table, label)


# ----------------------------------------------------------------------------- why


@dataclass(frozen=True)
class MetricSpread:
    """Per-cycle μ of one (function, metric) on both sides: a key finding's "why"."""

    function: str
    device: str
    pid: int | None
    metric: str
    normal: tuple[float, ...]
    abnormal: tuple[float, ...]
    metric_mean_normal: float  # the report's time-weighted means (what the prose says)
    metric_mean_abnormal: float
    p_value: float


def metric_spreads(comparison: Comparison, tables: tuple[pd.DataFrame, pd.DataFrame],
                   per_finding: int = MOVES_PER_FINDING) -> tuple[MetricSpread, ...]:
    """For each key finding shown in prose, its first metric moves, as per-cycle values.

    Why per cycle and not the test's units: the figure shows the spread a reader can see in
    the data (bimodality, outliers); the test's verdict is printed beside it. PM-sampled
    metrics come before NVML device state, as in the report's list of moves.
    """
    aligned = (tables[0], align_pids(tables[0], tables[1])[0])  # the rows' pids are normal's
    out = []
    for finding in comparison.findings[: max(comparison.options.top, 0)]:
        moves = sorted(finding.metric_moves, key=lambda m: is_device_state(m.metric))
        picked = moves[:per_finding]
        if not picked:
            continue
        rows = [_finding_rows(t, finding.pid, finding.device, finding.function) for t in aligned]
        if any(r.empty for r in rows):
            continue  # a pseudo-function of the statistics (a family, a replacement)
        for move in picked:
            values = [_values(r, move.metric) for r in rows]
            out.append(
                MetricSpread(
                    finding.function,
                    finding.device,
                    finding.pid,
                    move.metric,
                    values[0],
                    values[1],
                    move.metric_mean_normal,
                    move.metric_mean_abnormal,
                    move.p_value,
                )
            )
    return tuple(out)


def _finding_rows(table: pd.DataFrame, pid: int | None, device: str,
                  function: str) -> pd.DataFrame:
    mask = (table[C.FUNCTION] == function) & (table[C.DEVICE] == device)
    if pid is not None:
        mask &= table[C.PID] == pid
    return table.loc[mask, [C.METRIC, C.METRIC_MEAN]]


def _values(rows: pd.DataFrame, metric: str) -> tuple[float, ...]:
    values = rows.loc[rows[C.METRIC] == metric, C.METRIC_MEAN].to_numpy(dtype=np.float64)
    return tuple(float(v) for v in values[np.isfinite(values)])


# ----------------------------------------------------------------------------- all of it


@dataclass(frozen=True)
class FigureData:
    """Everything the figures draw besides the :class:`Comparison` itself."""

    forest: Forest
    traces: tuple[CycleTrace, CycleTrace]
    spreads: tuple[MetricSpread, ...]


def figure_data(comparison: Comparison, normal: Side, abnormal: Side) -> FigureData:
    """The figures' content for a comparison of these two loaded inputs."""
    return FigureData(
        forest=forest_rows(comparison),
        traces=(cycle_trace(normal, comparison.normal.label),
                cycle_trace(abnormal, comparison.abnormal.label)),
        spreads=metric_spreads(comparison, (normal.table, abnormal.table)),
    )

"""What the figures draw (analysis.figure_data): rows, intervals and per-cycle marks.

The figures must say what the report says: the forest plot's first row is the report's first
key finding with the same interval; the cycle-time row's interval is the report's, in ms.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.figure_data import (
    cycle_trace,
    forest_rows,
    metric_spreads,
    pm_missing,
    stalled_cycle_indices,
    trace_of_run_file,
)
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.self_overhead import HOLD_WARN_NS, self_overhead_notes
from perfdiff.collect.cupti.handovers import handover_warning
from perfdiff.schema.io import run_file_from_dict, run_file_to_dict
from perfdiff.schema.model import CycleTable, MetricSeries, RunFile
from tests import report_factories as rf
from tests.factories import make_run_file

REPO = Path(__file__).resolve().parents[2]
GPT = (REPO / "fixtures" / "gpt-infer-normal.json.gz",
       REPO / "fixtures" / "gpt-infer-contended.json.gz")


def test_findings_lead_the_forest_with_their_own_intervals() -> None:
    big = rf.row("big_but_not_a_finding", time_delta_ms=5.0, time_ci_low_ms=-1.0,
                 time_ci_high_ms=11.0, verdict="no change")
    comparison = rf.comparison(rows=(*rf.comparison().rows, big))
    forest = forest_rows(comparison)
    first = forest.rows[0]
    finding = comparison.findings[0]
    assert (first.function, first.delta, first.low, first.high) == (
        finding.function, finding.time_delta_ms, finding.time_ci_low_ms, finding.time_ci_high_ms)
    assert first.is_finding
    # the others by |change|, largest first, one row per function (not per metric)
    assert [r.function for r in forest.rows[1:]] == ["big_but_not_a_finding",
                                                       "elementwise_kernel"]
    assert forest.threshold == pytest.approx(0.01 * comparison.normal.cycle_ms_mean)


def test_cycle_row_interval_is_the_reports_percent_interval_in_ms() -> None:
    comparison = rf.comparison()
    row = forest_rows(comparison).cycle
    assert row is not None
    base = comparison.normal.cycle_ms_mean
    assert row.low == pytest.approx(comparison.cycle_time.ci_low_pct / 100 * base)
    assert row.high == pytest.approx(comparison.cycle_time.ci_high_pct / 100 * base)
    assert row.delta == comparison.cycle_time.delta_ms


def test_cut_differently_uses_share_changes_without_intervals() -> None:
    nan = math.nan
    comparison = rf.comparison(
        cycle_time=replace(rf.comparison().cycle_time, comparable=False),
        rows=tuple(replace(r, time_delta_ms=nan, time_ci_low_ms=nan, time_ci_high_ms=nan)
                   for r in rf.comparison().rows))
    forest = forest_rows(comparison)
    assert forest.cycle is None and forest.unit == "pp"
    assert forest.rows[0].delta == comparison.rows[0].delta_cycle_share_pp
    assert math.isnan(forest.rows[0].low)


def test_top_limits_rows_but_never_drops_a_finding() -> None:
    rows = tuple(rf.row(f"k{i}", time_delta_ms=float(i), verdict="no change") for i in range(30))
    comparison = rf.comparison(rows=(*rf.comparison().rows, *rows))
    assert len(forest_rows(comparison, top=5).rows) == 5
    assert forest_rows(comparison, top=0).rows[0].function == "gemm_kernel"


def _cycles(n: int, warmup: int = 0) -> CycleTable:
    start = np.arange(n, dtype=np.int64) * 1_000_000
    return CycleTable(index=np.arange(n, dtype=np.int64), start_ns=start,
                      end_ns=start + 900_000, label=("step",) * n,
                      warmup=np.arange(n) < warmup)


def _pm(stamps: np.ndarray, interval: int = 20_000) -> MetricSeries:
    return MetricSeries("sm__pipe_tensor", "pct", "pm_sampling", 0,
                        np.asarray(stamps, dtype=np.int64),
                        np.zeros(len(stamps), dtype=np.float64), interval)


def test_pm_missing_marks_only_cycles_a_gap_overlaps() -> None:
    cycles = _cycles(5, warmup=1)
    stamps = np.arange(20_000, 5_000_000, 20_000)
    hole = (stamps > 2_300_000) & (stamps < 2_500_000)  # a 200 us hole inside cycle 2
    missing = pm_missing(cycles, [_pm(stamps[~hole])])
    assert missing.tolist() == [False, False, True, False, False]
    assert not pm_missing(cycles, [_pm(stamps)]).any()
    assert not pm_missing(cycles, []).any()


def test_pm_missing_marks_a_missing_tail() -> None:
    cycles = _cycles(3)
    stamps = np.arange(20_000, 1_500_000, 20_000)  # nothing after 1.5 ms
    assert pm_missing(cycles, [_pm(stamps)]).tolist() == [False, True, True]


def test_stalls_come_from_the_collectors_handover_warning() -> None:
    cycles = _cycles(8)
    warning = handover_warning([(2_100_000, 2_200_000, 1000), (6_100_000, 6_300_000, 10)],
                               cycles)
    assert warning is not None
    assert stalled_cycle_indices((warning, "another warning")) == {2, 6}
    assert stalled_cycle_indices(()) == set()


def test_trace_of_a_run_file_keeps_warmup_and_run_order() -> None:
    run_file = make_run_file(n_cycles=6, n_runs=2, n_warmup=1, seed=5)
    trace = trace_of_run_file(run_file, "normal")
    assert len(trace.cycle_ms) == 12
    assert trace.warmup == (True, *([False] * 5), True, *([False] * 5))
    assert trace.segment[0] != trace.segment[-1]  # runs separated
    assert not any(trace.stalled)


def _with_hold(run_file: RunFile, hold_ms: list[float], traced: list[int],
               warning: str | None = None) -> RunFile:
    """The run file as schema 1.3 records it: per-cycle hold and traced columns (warm-up 1,
    untraced cycles also flagged warm-up), saved and loaded back."""
    (run,) = run_file.runs
    traced_arr = np.asarray(traced, dtype=np.int64)
    cycles = replace(run.cycles, hold_ns=(np.asarray(hold_ms) * 1e6).astype(np.int64),
                     traced=traced_arr,
                     warmup=np.asarray(run.cycles.warmup, dtype=bool) | (traced_arr == 0))
    warnings = (warning,) if warning else ()
    built = replace(run_file, runs=(replace(run, cycles=cycles),),
                    collection=replace(run_file.collection, warnings=warnings))
    return run_file_from_dict(run_file_to_dict(built))


def test_stalls_and_untraced_cycles_come_from_the_per_cycle_columns() -> None:
    # cycle 0 warm-up (held 5 ms: not marked, like the report's note), cycle 3 untraced,
    # cycle 2 held 1.5 ms (marked), cycle 4 exactly 1 ms (the note counts > 1 ms: not marked)
    hold = [5.0, 0.0, 1.5, 0.0, HOLD_WARN_NS / 1e6, 0.2]
    run_file = _with_hold(make_run_file(n_cycles=6, n_warmup=1, seed=7), hold,
                          [1, 1, 1, 0, 1, 1])
    trace = trace_of_run_file(run_file, "normal")
    assert trace.stalled == (False, False, True, False, False, False)
    assert trace.untraced == (False, False, False, True, False, False)
    assert trace.warmup == (True, False, False, False, False, False)  # untraced is not warm-up
    assert trace.stalled_by == "hold"
    (note,) = [n for n in self_overhead_notes(run_file, "f") if "held" in n]
    assert "inside 1 measured cycle(s)" in note  # the figure marks what the note counts


def test_the_hold_column_wins_over_the_handover_warning() -> None:
    cycles = _cycles(6)
    warning = handover_warning([(4_100_000, 4_200_000, 1000)], cycles)
    assert warning is not None and stalled_cycle_indices((warning,)) == {4}
    run_file = _with_hold(make_run_file(n_cycles=6, n_warmup=1, seed=8),
                          [0.0, 0.0, 2.0, 0.0, 0.0, 0.0], [1] * 6, warning)
    trace = trace_of_run_file(run_file, "normal")
    assert trace.stalled == (False, False, True, False, False, False)
    # without the column (files before 1.3) the warning still marks its cycles
    (run,) = run_file.runs
    old = replace(run_file, runs=(replace(run, cycles=replace(run.cycles, hold_ns=None,
                                                              traced=None)),))
    old_trace = trace_of_run_file(old, "normal")
    assert old_trace.stalled == (False, False, False, False, True, False)
    assert old_trace.stalled_by == "warning" and not any(old_trace.untraced)


def test_trace_of_a_table_has_the_measured_cycles_only() -> None:
    from perfdiff.analysis.sides import Side, side_from_run_file

    side = side_from_run_file(make_run_file(n_cycles=6, n_warmup=2, seed=6))
    trace = cycle_trace(Side(side.table, side.meta), "imported")  # no run file
    assert len(trace.cycle_ms) == 6 - 2 and not any(trace.warmup)  # n_cycles counts warm-up


def _fixture_comparison():  # type: ignore[no-untyped-def]
    from perfdiff.cli.compare_run import compare_paths as load_and_compare

    if not all(p.exists() for p in GPT):
        pytest.skip("gpt-infer fixtures not found")
    return load_and_compare(GPT[0], GPT[1], CompareOptions())


def test_device_intervals_bracket_the_change() -> None:
    comparison, _ = _fixture_comparison()
    for device in comparison.devices:
        assert device.ci_low_pct < device.delta_pct < device.ci_high_pct


def test_metric_spreads_are_per_cycle_values_of_the_findings_moves() -> None:
    comparison, sides = _fixture_comparison()
    spreads = metric_spreads(comparison, (sides[0].table, sides[1].table))
    # the first finding with metric moves (a family row such as [GEMM] has no metrics)
    first = next(f for f in comparison.findings if f.metric_moves)
    assert spreads and spreads[0].function == first.function
    first_moves = {m.metric for m in first.metric_moves}
    assert {s.metric for s in spreads if s.function == spreads[0].function} <= first_moves
    # pids differ between the two recordings: the abnormal side is matched, not empty
    assert all(len(s.normal) > 10 and len(s.abnormal) > 10 for s in spreads)
    # PM-sampled metrics before NVML device state, as in the report's list of moves
    assert not spreads[0].metric.startswith("nvml.")

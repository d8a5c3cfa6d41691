"""Regression guards on the production statistics, measured by the validation harness.

Why these numbers: issue 6 asks for a false-alarm rate at the nominal alpha, >= 95 % quiet A/A
reports, >= 80 % power at the printed MDE, interval coverage near 95 %, the injected kernel
ranked first at twice the MDE, and cost shifts never read as a cycle-time change. The full grid
(docs/explanation/validation.md) takes many minutes; these few cells with fixed seeds take
seconds and fail when a change to the statistics makes any of them clearly worse. Limits sit
where a method that meets the issue's targets would fall below them with well under 1 %
probability at these trial counts, so a failure means a regression, not bad luck (and the seeds
are fixed, so the outcome is deterministic).
"""

from __future__ import annotations

from functools import cache

import pytest

from bench.validate.criteria import (
    cycle_changes,
    cycle_changes_beyond_twin,
    mde_power,
    quiet_reports,
    row_false_positives,
)
from bench.validate.harness import (
    FIVE_RUNS,
    ONE_RUN,
    Cell,
    CellResult,
    matched_options,
    run_grid,
)
from bench.validate.markdown import score
from bench.validate.simulate import CLOCK_METRIC, Scenario, expected_kernel_ms
from bench.validate.trials import TrialDigest, run_mde_trial, run_trial, target_name
from perfdiff.analysis.model import CompareOptions

OPTIONS = CompareOptions(bootstrap_resamples=500)  # intervals only; verdicts do not use it
BASE = Scenario(n_kernels=8, metrics=(CLOCK_METRIC,))


def _cell(runs: int, lag1: float, offset_pct: float) -> Cell:
    return Cell(FIVE_RUNS if runs == 5 else ONE_RUN, lag1, offset_pct, BASE)


def _aa(runs: int, lag1: float, offset_pct: float, trials: int) -> list[TrialDigest]:
    scenario = _cell(runs, lag1, offset_pct).scenario
    return [run_trial(scenario, None, (7, runs, trial), OPTIONS) for trial in range(trials)]


@cache
def _full(runs: int, lag1: float, offset_pct: float, trials: int) -> CellResult:
    return run_grid([_cell(runs, lag1, offset_pct)], trials, OPTIONS, base_seed=6)[0]


@pytest.mark.parametrize(("runs", "lag1", "offset"), [(5, 0.6, 1.0), (1, 0.9, 0.0), (1, 0.3, 2.0)])
def test_aa_false_positive_rate_and_quiet_reports(runs: int, lag1: float, offset: float) -> None:
    aa = _aa(runs, lag1, offset, 30)
    fp = row_false_positives(aa, OPTIONS.alpha, "p_time")
    # 30 trials x 9 functions at alpha 5 %: a calibrated test rejects more than 10 % of them
    # with probability < 1 % (functions of one trial are correlated; the margin allows for it).
    assert fp.pooled.value <= 0.10, fp.pooled
    assert quiet_reports(aa).value >= 0.9  # issue 6: >= 95 %; 27 of 30 is the floor here


def test_power_rank_coverage_fdr_and_cost_shift_with_five_runs() -> None:
    s = score(_full(5, 0.3, 1.0, 16), OPTIONS.alpha)
    assert s.power.n == 16
    assert s.power.value >= 0.6, s.power  # issue 6: >= 80 %; below 10 of 16 is a clear miss
    assert s.rank_2x.value >= 0.8, s.rank_2x
    assert s.coverage_random.value >= 0.75, s.coverage_random
    assert s.coverage_mde.value >= 0.75, s.coverage_mde
    assert s.fdr <= 0.05
    result = _full(5, 0.3, 1.0, 16)
    shifts = [t.shift for t in result.trials]
    assert cycle_changes_beyond_twin(shifts, result.aa).hits == 0
    assert cycle_changes(shifts).hits == 0


def test_one_run_per_side_power_at_the_printed_mde_reaches_80_percent() -> None:
    scenario = _cell(1, 0.3, 2.0).scenario
    expected = expected_kernel_ms(scenario, runs=1000)
    trials = [run_mde_trial(scenario, 0, 1.0, (8, trial), OPTIONS, expected) for trial in range(30)]
    assert mde_power(trials, target_name(scenario, 0)).value >= 0.8


@pytest.mark.parametrize(("runs", "lag1", "offset"), [(1, 0.3, 0.0), (5, 0.0, 0.0)])
def test_aa_rate_is_not_conservative_either(runs: int, lag1: float, offset: float) -> None:
    """Issue 6 asks for the A/A rate *within* the band, not only below it: a test that never
    rejects has no power. 30 draws x 13 functions of the grid's own scenario at alpha 5 %
    (one run per side: with the true run offset assumed, as in the grid). The full grid
    measured 3.6-4.8 % in these cells; the 0.25 % SE floor and the warm-up-inflated batch
    variance gave 0.5-0.8 % (docs/explanation/validation.md), which this fails."""
    cell = Cell(FIVE_RUNS if runs == 5 else ONE_RUN, lag1, offset)
    options = matched_options(cell, OPTIONS)
    aa = [run_trial(cell.scenario, None, (11, runs, t), options) for t in range(30)]
    fp = row_false_positives(aa, OPTIONS.alpha, "p_time")
    assert 0.015 <= fp.pooled.value <= 0.10, fp.pooled

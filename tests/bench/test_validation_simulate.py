"""The simulator behind the validation harness: its tables must hold the truth they claim.

Why test a test tool: every number in docs/explanation/validation.md is measured against this
truth; a simulator whose shares do not sum to 100 % or whose slowdown is not the one asked for
would make those numbers meaningless.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.validate.simulate import (
    CLOCK_METRIC,
    CLOCK_STEP_MHZ,
    IDLE_FUNCTION,
    MAX_CLOCK_MHZ,
    TABLE_COLUMNS,
    CostShift,
    Scenario,
    Slowdown,
    ar1,
    expected_kernel_ms,
    kernel_mean_ms,
    kernel_names,
    simulate_pair,
)

SMALL = Scenario(n_kernels=6, n_cycles=40, n_runs=2)


def _time_rows(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, cycle, function): the metric rows repeat the function's time."""
    return table.drop_duplicates(["run", "cycle", "function"])


def test_table_has_the_cycle_table_columns_and_types() -> None:
    normal, abnormal = simulate_pair(SMALL, None, 0)
    assert tuple(normal.columns) == TABLE_COLUMNS
    assert normal["run"].unique().tolist() == [0, 1]
    assert abnormal["run"].unique().tolist() == [2, 3]  # distinct runs when sides are concatenated
    assert set(normal["func_type"]) == {"kernel", "idle"}
    idle = normal[normal["function"] == IDLE_FUNCTION]
    assert (idle["metric"] == "").all() and idle["metric_mean"].isna().all()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    lag1=st.sampled_from([0.0, 0.3, 0.9]),
    offset=st.floats(0.0, 2.0),
    tick=st.sampled_from([0.0, 0.001, 0.01]),
)
def test_shares_sum_to_100_and_cycle_is_the_sum_of_its_functions(
    seed: int, lag1: float, offset: float, tick: float
) -> None:
    scenario = Scenario(n_kernels=5, n_cycles=30, lag1=lag1, run_offset_pct=offset, tick_ms=tick)
    normal, _ = simulate_pair(scenario, Slowdown(1, 10.0), seed)
    rows = _time_rows(normal)
    per_cycle = rows.groupby(["run", "cycle"]).agg(
        share=("cycle_share_pct", "sum"), time=("time_ms", "sum"), cycle=("cycle_ms", "first")
    )
    np.testing.assert_allclose(per_cycle["share"], 100.0, rtol=1e-9)
    np.testing.assert_allclose(per_cycle["time"], per_cycle["cycle"], rtol=1e-9)
    assert (rows["time_ms"] > 0).all()
    if tick > 0:
        ticks = rows["time_ms"].to_numpy() / tick
        np.testing.assert_allclose(ticks, np.round(ticks), atol=1e-6)


def test_same_seed_same_table_and_other_seed_other_table() -> None:
    a, _ = simulate_pair(SMALL, None, 7)
    b, _ = simulate_pair(SMALL, None, 7)
    c, _ = simulate_pair(SMALL, None, 8)
    pd.testing.assert_frame_equal(a, b)
    assert not a["time_ms"].equals(c["time_ms"])


@pytest.mark.parametrize("lag1", [0.0, 0.3, 0.6, 0.9])
def test_ar1_has_unit_variance_and_the_requested_lag1(lag1: float) -> None:
    series = ar1(np.random.default_rng(1), (400, 500), lag1)
    assert series.var() == pytest.approx(1.0, abs=0.03)
    # Stationary from the first cycle: the first column is as variable as the last.
    assert series[:, 0].var() == pytest.approx(1.0, abs=0.2)
    centred = series - series.mean(axis=1, keepdims=True)
    lag1_hat = (centred[:, 1:] * centred[:, :-1]).sum() / (centred**2).sum()
    assert lag1_hat == pytest.approx(lag1, abs=0.02 + 0.02 * lag1 / (1 - lag1 + 1e-9) ** 0.5)


def test_slowdown_multiplies_one_kernel_and_lengthens_the_cycle() -> None:
    scenario = Scenario(n_kernels=6, n_cycles=50, tick_ms=0.0)
    _, base = simulate_pair(scenario, None, 3)
    _, slow = simulate_pair(scenario, Slowdown(2, 10.0), 3)  # same seed: same noise
    base_rows, slow_rows = _time_rows(base), _time_rows(slow)
    target = kernel_names(6)[2]
    ratio = (
        slow_rows["time_ms"].to_numpy() / base_rows["time_ms"].to_numpy()
    )  # rows align: same layout
    is_target = base_rows["function"].to_numpy() == target
    np.testing.assert_allclose(ratio[is_target], 1.10)
    np.testing.assert_allclose(ratio[~is_target], 1.0)
    added = base_rows[is_target]["time_ms"].to_numpy() * 0.10
    np.testing.assert_allclose(
        slow_rows[is_target]["cycle_ms"].to_numpy() - base_rows[is_target]["cycle_ms"].to_numpy(),
        added,
    )


def test_cost_shift_moves_time_but_keeps_every_cycle_duration() -> None:
    scenario = Scenario(n_kernels=6, n_cycles=50)
    _, base = simulate_pair(scenario, None, 4)
    _, shifted = simulate_pair(scenario, CostShift(source=0, target=1, pct=20.0), 4)
    np.testing.assert_allclose(shifted["cycle_ms"], base["cycle_ms"], rtol=0, atol=1e-9)
    names = kernel_names(6)
    rows_b, rows_s = _time_rows(base), _time_rows(shifted)
    moved = 0.2 * kernel_mean_ms(scenario)[0]
    src_b = rows_b[rows_b["function"] == names[0]]["time_ms"].mean()
    src_s = rows_s[rows_s["function"] == names[0]]["time_ms"].mean()
    assert src_b - src_s == pytest.approx(moved, rel=0.01)


def test_run_offsets_make_runs_differ_more_than_their_cycles_explain() -> None:
    def spread_of_run_means(offset: float) -> float:
        scenario = Scenario(n_kernels=4, n_cycles=100, n_runs=40, run_offset_pct=offset)
        normal, _ = simulate_pair(scenario, None, 5)
        top = normal[normal["function"] == kernel_names(4)[0]].drop_duplicates(["run", "cycle"])
        run_means = top.groupby("run")["time_ms"].mean()
        return float(run_means.std() / run_means.mean())

    assert spread_of_run_means(0.0) < 0.005
    assert spread_of_run_means(2.0) == pytest.approx(0.02 * np.sqrt(0.5 + 0.5), rel=0.35)


def test_clock_metric_is_quantised_and_mostly_at_its_maximum() -> None:
    normal, _ = simulate_pair(Scenario(n_cycles=300), None, 6)
    clock = normal.loc[normal["metric"] == CLOCK_METRIC, "metric_mean"].to_numpy()
    assert clock.max() == MAX_CLOCK_MHZ
    np.testing.assert_allclose((MAX_CLOCK_MHZ - clock) % CLOCK_STEP_MHZ, 0.0)
    assert (clock == MAX_CLOCK_MHZ).mean() > 0.8


def test_warm_up_transient_makes_the_first_cycles_slower() -> None:
    scenario = Scenario(n_runs=50, n_cycles=30, tail_prob=0.0)
    normal, _ = simulate_pair(scenario, None, 9)
    cycles = normal.drop_duplicates(["run", "cycle"]).groupby("cycle")["cycle_ms"].mean()
    assert cycles.iloc[0] > 1.07 * cycles.iloc[-10:].mean()


def test_heavy_tails_appear_only_when_asked() -> None:
    def max_over_median(tail_prob: float) -> float:
        scenario = Scenario(n_runs=20, n_cycles=200, tail_prob=tail_prob, warmup_excess_pct=0)
        normal, _ = simulate_pair(scenario, None, 10)
        cycles = normal.drop_duplicates(["run", "cycle"])["cycle_ms"]
        return float(cycles.max() / cycles.median())

    assert max_over_median(0.0) < 1.15
    assert max_over_median(0.05) > 1.3


def test_expected_kernel_ms_is_close_to_the_nominal_means() -> None:
    scenario = Scenario(n_kernels=5, n_cycles=50, warmup_excess_pct=0.0, tail_prob=0.0)
    expected = expected_kernel_ms(scenario, runs=400)
    nominal = kernel_mean_ms(scenario)
    # Only clock drops (compute kernels, ~10 % of cycles, ~3 steps of 15 MHz) move the mean.
    np.testing.assert_allclose(expected, nominal, rtol=0.01)

"""Statistical primitives against scipy and hand-computed cases; properties with hypothesis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats as sps

from perfdiff.analysis.stats import (
    batch_labels,
    bh_qvalues,
    bootstrap_delta_ci,
    mann_whitney_p,
    minimum_detectable,
    welch,
)


def test_welch_without_floor_matches_scipy() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(10, 1, size=(12, 3))
    y = rng.normal(10.5, 2, size=(9, 3))
    got = welch(x, y, rel_floor=0.0, abs_floor=0.0)
    want = sps.ttest_ind(y, x, equal_var=False, axis=0)
    assert np.allclose(got.z, want.statistic)
    assert np.allclose(got.p, want.pvalue)
    assert np.allclose(got.delta, y.mean(axis=0) - x.mean(axis=0))


def test_welch_hand_case() -> None:
    # normal 1,2,3 (mean 2, var 1); abnormal 4,6 (mean 5, var 2): se = sqrt(1/3 + 2/2)
    got = welch(np.array([[1.0], [2.0], [3.0]]), np.array([[4.0], [6.0]]), rel_floor=0.0)
    se = np.sqrt(1 / 3 + 1.0)
    assert got.se[0] == pytest.approx(se)
    assert got.z[0] == pytest.approx(3.0 / se)
    df = (1 / 3 + 1.0) ** 2 / ((1 / 3) ** 2 / 2 + 1.0**2 / 1)
    assert got.df[0] == pytest.approx(df)


def test_floor_stops_near_constant_baseline_from_exploding() -> None:
    # the seed's Z(beta)=246 case: baseline sd 0.024, abnormal sd 0.9
    normal = np.array([2.6863, 2.7188, 2.7076, 2.7065, 2.7528, 2.7294, 2.6851])[:, None]
    abnormal = np.array([9.0234, 9.1463, 8.2653, 9.4590, 9.4162, 8.0744, 6.9608])[:, None]
    got = welch(normal, abnormal)
    seed_z = (abnormal.mean() - normal.mean()) / normal.std(ddof=1)
    assert seed_z == pytest.approx(246.52, abs=0.01)
    assert 10 < got.z[0] < 30  # pooled SE: both sides' noise counts


def test_constant_on_both_sides_is_exact_and_not_tested() -> None:
    got = welch(np.full((5, 1), 1410.0), np.full((4, 1), 210.0))
    assert got.delta[0] == -1200.0
    assert bool(got.constant[0])
    assert np.isnan(got.p[0]) and np.isnan(got.z[0])


def test_too_few_samples_give_nan_not_zero() -> None:
    got = welch(np.array([[1.0]]), np.array([[2.0], [3.0]]))
    assert np.isnan(got.p[0])


def test_mann_whitney_matches_scipy_and_handles_ties() -> None:
    x = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, 5.0]])
    y = np.array([[3.5, 5.0], [5.0, 5.0], [6.0, 5.0]])
    got = mann_whitney_p(x, y)
    assert got[0] == pytest.approx(sps.mannwhitneyu(x[:, 0], y[:, 0]).pvalue)
    assert np.isnan(got[1])  # all equal: no test


def test_bh_matches_scipy_and_keeps_nan() -> None:
    p = np.array([0.01, 0.04, np.nan, 0.03, 0.5, 0.002])
    q = bh_qvalues(p)
    ok = np.isfinite(p)
    assert np.allclose(q[ok], sps.false_discovery_control(p[ok], method="bh"))
    assert np.isnan(q[2])


def test_batch_labels_are_consecutive_and_balanced() -> None:
    labels = batch_labels(23, 10)
    assert list(labels) == sorted(labels)
    assert len(set(labels)) == 10
    counts = np.bincount(labels)
    assert counts.max() - counts.min() <= 1
    assert list(batch_labels(3, 10)) == [0, 1, 2]


def test_bootstrap_is_deterministic_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, size=(10, 2))
    y = rng.normal(1, 1, size=(10, 2))
    a = bootstrap_delta_ci(x, y, resamples=500, rng=np.random.default_rng(7))
    b = bootstrap_delta_ci(x, y, resamples=500, rng=np.random.default_rng(7))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    delta = y.mean(axis=0) - x.mean(axis=0)
    assert np.all(a[0] < delta) and np.all(delta < a[1])


def test_bootstrap_interval_coverage_near_95_percent() -> None:
    """10 batch means per side: the widened interval should cover ~95 % (percentile ~90 %)."""
    rng = np.random.default_rng(11)
    trials = 400
    x = rng.normal(0, 1, size=(trials, 10)).T
    y = rng.normal(0.3, 1, size=(trials, 10)).T
    low, high = bootstrap_delta_ci(x, y, resamples=400, rng=np.random.default_rng(5))
    coverage = float(np.mean((low <= 0.3) & (high >= 0.3)))
    assert 0.91 <= coverage <= 0.985


def test_minimum_detectable_grows_with_noise() -> None:
    mde = minimum_detectable(np.array([1.0, 2.0]), np.array([18.0, 18.0]), 0.05)
    assert mde[1] == pytest.approx(2 * mde[0])
    assert mde[0] == pytest.approx(sps.t.ppf(0.975, 18) + sps.t.ppf(0.8, 18))


samples = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 8), st.integers(1, 4)),
    elements=st.one_of(st.floats(-1e6, 1e6), st.just(float("nan"))),
)


@settings(max_examples=80, deadline=None)
@given(x=samples, y=samples)
def test_every_p_and_q_is_in_unit_interval_or_nan(x: np.ndarray, y: np.ndarray) -> None:
    cols = min(x.shape[1], y.shape[1])
    res = welch(x[:, :cols], y[:, :cols])
    u = mann_whitney_p(x[:, :cols], y[:, :cols])
    q = bh_qvalues(np.concatenate((res.p, u)))
    for values in (res.p, u, q):
        finite = values[np.isfinite(values)]
        assert np.all((finite >= 0) & (finite <= 1))


@settings(max_examples=60, deadline=None)
@given(p=hnp.arrays(np.float64, st.integers(1, 30), elements=st.floats(0, 1)))
def test_bh_is_monotone_and_not_below_p(p: np.ndarray) -> None:
    q = bh_qvalues(p)
    assert np.all(q >= p - 1e-12)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(q[order]) >= -1e-12)

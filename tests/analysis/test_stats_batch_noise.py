"""The batch-means noise model: paired positions, degrees of freedom, autocorrelation fits.

Why these tests: issue 6's A/A calibration rests on them (docs/explanation/validation.md);
each checks a property with a known answer (scipy, closed forms, large simulations).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats as sps

from bench.validate.simulate import ar1
from perfdiff.analysis.stats import (
    autocorrelation_model,
    batch_df_factor,
    batch_variance_inflation,
    lag1_autocorrelation,
    paired_by_position,
    welch,
)


def test_paired_test_without_floor_is_scipys_paired_t() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(5.0, 1.0, size=(10, 3))
    y = x + rng.normal(0.4, 0.5, size=(10, 3))
    got = paired_by_position(x, y, rel_floor=0.0, abs_floor=0.0)
    want = sps.ttest_rel(y, x, axis=0)
    assert np.allclose(got.z, want.statistic)
    assert np.allclose(got.p, want.pvalue)
    assert np.allclose(got.delta, y.mean(axis=0) - x.mean(axis=0))


def test_paired_test_cancels_a_profile_shared_by_both_sides() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(10.0, 0.1, size=(10, 1))
    y = rng.normal(10.0, 0.1, size=(10, 1))
    warm = np.zeros((10, 1))
    warm[0] = 2.0  # a leftover warm-up: the first batch is 20 sds slower on both sides
    plain = paired_by_position(x, y, rel_floor=0.0, abs_floor=0.0)
    warmed = paired_by_position(x + warm, y + warm, rel_floor=0.0, abs_floor=0.0)
    assert warmed.se[0] == pytest.approx(plain.se[0])
    two_sample = welch(x + warm, y + warm, rel_floor=0.0, abs_floor=0.0)
    assert two_sample.se[0] > 5 * plain.se[0]  # what the two-sample test made of it


def test_paired_test_refuses_unequal_batches() -> None:
    with pytest.raises(ValueError):
        paired_by_position(np.zeros((10, 1)), np.zeros((9, 1)))


def test_floor_counts_as_known_variance_in_the_degrees_of_freedom() -> None:
    x = np.array([[1.0], [2.0], [3.0]])
    y = np.array([[4.0], [6.0]])
    a, b = 1.0 / 3.0, 1.0
    floor = 0.5 * 5.0  # rel_floor 0.5 of the larger mean
    got = welch(x, y, rel_floor=0.5, abs_floor=0.0)
    assert got.df[0] == pytest.approx((a + b + floor**2) ** 2 / (a**2 / 2 + b**2 / 1))
    assert got.se[0] == pytest.approx(np.sqrt(a + b + floor**2))


def test_df_factor_is_one_without_correlation_and_falls_with_it() -> None:
    factors = batch_df_factor(np.array([0.0, 0.3, 0.6, 0.9]), 200, 10)
    assert factors[0] == pytest.approx(1.0, abs=1e-3)
    assert np.all(np.diff(factors) < 0)
    assert np.all((factors > 0) & (factors <= 1))


def test_lag1_estimate_is_unbiased_for_ar1_at_0_9() -> None:
    rng = np.random.default_rng(4)
    series = ar1(rng, (2000, 200), 0.9).T  # 2000 series of 200 cycles, as columns
    assert float(lag1_autocorrelation(series).mean()) == pytest.approx(0.9, abs=0.01)


def test_autocorrelation_model_recovers_ar1_plus_jitter() -> None:
    rng = np.random.default_rng(5)
    persistent = ar1(rng, (1, 200_000), 0.9)[0]
    jitter = rng.normal(0.0, 1.0, 200_000) * np.sqrt(0.5)  # AR share of variance 2/3
    phi, share = autocorrelation_model((persistent + jitter)[:, None])
    assert phi[0] == pytest.approx(0.9, abs=0.01)
    assert share[0] == pytest.approx(2.0 / 3.0, abs=0.02)
    white_phi, white_share = autocorrelation_model(rng.normal(size=(200, 1)))
    assert white_share[0] == 1.0 and white_phi[0] < 0.2


def test_jitter_lowers_the_inflation_of_the_same_persistent_part() -> None:
    pure = batch_variance_inflation(np.array([0.9]), 200, 10)
    mixed = batch_variance_inflation(np.array([0.9]), 200, 10, ar_share=0.5)
    assert 1.0 < mixed[0] < pure[0]


def test_paired_batch_means_of_ar1_keep_alpha() -> None:
    """10 batches of 20 AR(0.9) cycles per side, 2,000 A/A pairs: about 5 % at p < 0.05."""
    rng = np.random.default_rng(6)
    trials, n, k = 2000, 200, 10
    x = ar1(rng, (trials, n), 0.9)
    y = ar1(rng, (trials, n), 0.9)
    rejections = 0
    for i in range(trials):
        bx = x[i].reshape(k, n // k).mean(axis=1)[:, None]
        by = y[i].reshape(k, n // k).mean(axis=1)[:, None]
        phi, share = autocorrelation_model((y[i] - x[i])[:, None])
        res = paired_by_position(
            bx,
            by,
            rel_floor=0.0,
            abs_floor=0.0,
            var_scale=batch_variance_inflation(phi, n, k, share),
            df_factor=batch_df_factor(phi, n, k, share),
        )
        rejections += int(res.p[0] < 0.05)
    assert 0.035 <= rejections / trials <= 0.065  # 95 % band of 2,000 draws: 4.0-6.0 %


samples = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 8), st.just(2)),
    elements=st.one_of(st.floats(-1e6, 1e6), st.just(float("nan"))),
)


@settings(max_examples=60, deadline=None)
@given(x=samples, shift=st.floats(-1e3, 1e3))
# found by a CI run (2026-12-08): a variance near 1e-160 overflowed the degrees of freedom
@example(x=np.array([[6.3387804e-78, 0.0], [9848.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0],
                     [float("nan"), 0.0], [0.0, 0.0]]), shift=0.0)
def test_paired_p_is_in_unit_interval_or_nan(x: np.ndarray, shift: float) -> None:
    res = paired_by_position(x, x[::-1] + shift)
    finite = res.p[np.isfinite(res.p)]
    assert np.all((finite >= 0) & (finite <= 1))

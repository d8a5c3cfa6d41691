"""compare's p-values and quantiles without scipy.stats, checked against scipy.stats.

``perfdiff.analysis.distributions`` replaces ``scipy.stats`` on the compare path (its import
alone cost 0.75 s and 60 MiB). scipy.stats stays the reference here: the Student t tail and
quantile, the normal quantile, and the Mann-Whitney U p-value (exact counting where scipy
counts exactly, the tie- and continuity-corrected normal approximation elsewhere) must equal
scipy's on hand cases and on whatever hypothesis generates.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats as sps

from perfdiff.analysis.distributions import (
    _u_counts,
    mann_whitney_two_sided,
    norm_ppf,
    t_ppf,
    t_sf,
)


def _scipy_mwu(a: np.ndarray, b: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)


@settings(max_examples=300, deadline=None)
@given(x=st.floats(-50, 50), df=st.floats(0.05, 1e7))
def test_t_sf_equals_scipy(x: float, df: float) -> None:
    assert t_sf(x, df) == pytest.approx(sps.t.sf(x, df), rel=1e-12, abs=1e-300)


@settings(max_examples=300, deadline=None)
@given(q=st.floats(0.0, 1.0), df=st.floats(0.05, 1e7))
def test_t_ppf_equals_scipy(q: float, df: float) -> None:
    want = sps.t.ppf(q, df)
    got = float(t_ppf(q, df))
    if math.isinf(want):
        assert got == want
    else:
        assert got == pytest.approx(want, rel=1e-10, abs=1e-12)


def test_t_and_normal_hand_cases() -> None:
    assert float(t_ppf(0.975, 10.0)) == pytest.approx(2.228138851986273, rel=1e-12)
    assert float(t_sf(2.228138851986273, 10.0)) == pytest.approx(0.025, rel=1e-12)
    assert float(t_sf(1.0, 1.0)) == pytest.approx(0.25, rel=1e-14)  # Cauchy: 1/2 - atan(1)/pi
    assert norm_ppf(0.975) == pytest.approx(1.959963984540054, rel=1e-14)
    assert float(t_ppf(0.0, 5.0)) == -np.inf and float(t_ppf(1.0, 5.0)) == np.inf
    arr = t_sf(np.array([0.0, 1.0, np.nan]), np.array([3.0, np.inf, 3.0]))
    assert arr[0] == 0.5 and arr[1] == pytest.approx(sps.norm.sf(1.0)) and np.isnan(arr[2])


def test_u_counts_are_the_exact_null_distribution() -> None:
    # sizes 2 and 3: the 10 orderings give U = 0,1,2,2,3,3,4,4,5,6
    assert _u_counts(2, 3) == [1, 1, 2, 2, 2, 1, 1]
    for m, n in ((1, 1), (3, 3), (4, 7), (8, 8), (8, 40)):
        counts = _u_counts(m, n)
        assert sum(counts) == comb(m + n, m)
        assert counts == counts[::-1]  # symmetric about m·n/2
        assert all(c > 0 for c in counts)


def test_mann_whitney_exact_for_a_small_side_against_a_long_one() -> None:
    """8 batch means against 3,000 cycles: still counted exactly (as scipy does), quickly."""
    rng = np.random.default_rng(5)
    values = rng.permutation(3008).astype(np.float64)
    a, b = values[:8] + 400.5, values[8:]  # no ties: the exact branch
    assert mann_whitney_two_sided(a, b) == pytest.approx(_scipy_mwu(a, b), rel=1e-9)


def test_mann_whitney_hand_cases() -> None:
    # complete separation, 3 vs 3, no ties: exact p = 2 / C(6, 3) = 0.1
    assert mann_whitney_two_sided(np.array([1.0, 2, 3]), np.array([4.0, 5, 6])) == 0.1
    # 9 vs 9, no ties: normal approximation (scipy's "auto" switches at > 8 per side)
    a, b = np.arange(9.0), np.arange(9.0) + 4.5
    assert mann_whitney_two_sided(a, b) == pytest.approx(_scipy_mwu(a, b), rel=1e-12)
    # ties force the approximation even for small samples
    a, b = np.array([1.0, 2, 2, 3]), np.array([2.0, 4, 5])
    assert mann_whitney_two_sided(a, b) == pytest.approx(_scipy_mwu(a, b), rel=1e-12)
    # all equal: scipy's z is -inf, its p 1
    assert mann_whitney_two_sided(np.ones(4), np.ones(5)) == 1.0


sample = hnp.arrays(np.float64, st.integers(1, 30),
                    elements=st.one_of(st.floats(-1e6, 1e6), st.sampled_from([0.0, 1.0, 2.5])))
small_ints = hnp.arrays(np.float64, st.integers(1, 12), elements=st.integers(0, 6).map(float))


@settings(max_examples=400, deadline=None)
@given(a=sample, b=sample)
def test_mann_whitney_equals_scipy(a: np.ndarray, b: np.ndarray) -> None:
    assert mann_whitney_two_sided(a, b) == pytest.approx(_scipy_mwu(a, b), rel=1e-9,
                                                         abs=1e-15)


@settings(max_examples=300, deadline=None)
@given(a=small_ints, b=small_ints)
def test_mann_whitney_equals_scipy_with_many_ties(a: np.ndarray, b: np.ndarray) -> None:
    assert mann_whitney_two_sided(a, b) == pytest.approx(_scipy_mwu(a, b), rel=1e-9,
                                                         abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 8), n=st.integers(1, 120), seed=st.integers(0, 2**32 - 1))
def test_mann_whitney_exact_branch_equals_scipy(m: int, n: int, seed: int) -> None:
    """A side of <= 8 without ties: scipy counts exactly, and so must we, at any n."""
    rng = np.random.default_rng(seed)
    values = rng.permutation(m + n).astype(np.float64)
    a, b = values[:m], values[m:] + 0.25 * rng.integers(0, 2, n)  # no ties possible
    assert mann_whitney_two_sided(a, b) == pytest.approx(_scipy_mwu(a, b), rel=1e-9,
                                                         abs=1e-15)


def test_compare_path_does_not_import_scipy_stats() -> None:
    """What compare imports to compare (the analysis entry, renderers, reader): no
    scipy.stats, no matplotlib, no rich."""
    code = ("import sys; import perfdiff.analysis.entry, perfdiff.report.markdown, "
            "perfdiff.report.json_report, perfdiff.readers.dispatch; "
            "print(sorted(m for m in ('scipy.stats', 'matplotlib', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"

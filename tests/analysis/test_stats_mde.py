"""The MDE is solved against the SE the test will have at that effect (the floor grows with it)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from perfdiff.analysis.stats import minimum_detectable, minimum_detectable_floored


def test_without_a_relative_floor_it_is_the_textbook_mde() -> None:
    se, df = np.array([0.5, 2.0]), np.array([18.0, 9.0])
    got = minimum_detectable_floored(
        se, df, 0.05, mean_normal=np.array([10.0, 100.0]), rel_floor=0.0, abs_floor=0.0
    )
    np.testing.assert_allclose(got, minimum_detectable(se, df, 0.05))


@settings(max_examples=60, deadline=None)
@given(
    sampling_sd=st.floats(0.0, 5.0),
    mean=st.floats(1.0, 1000.0),
    rel_floor=st.floats(0.0, 0.05),
    df=st.floats(3.0, 200.0),
    threshold=st.floats(0.0, 10.0),
)
def test_the_solution_satisfies_its_equation(
    sampling_sd: float, mean: float, rel_floor: float, df: float, threshold: float
) -> None:
    """Δ = max(k·SE(Δ), thr + t·SE(Δ)), SE(Δ)² = s² + (f·(m + Δ))², checked by hand."""
    floor_now = rel_floor * mean
    se_now = np.sqrt(sampling_sd**2 + floor_now**2) + 1e-12
    got = float(
        minimum_detectable_floored(
            np.array([se_now]),
            np.array([df]),
            0.05,
            mean_normal=np.array([mean]),
            rel_floor=rel_floor,
            abs_floor=0.0,
            threshold=threshold,
        )[0]
    )
    t_power = sps.t.ppf(0.8, df)
    k = sps.t.ppf(0.975, df) + t_power
    if k * rel_floor >= 1.0:
        assert got == np.inf
        return
    se_at = np.sqrt(se_now**2 - floor_now**2 + (rel_floor * (mean + got)) ** 2)
    assert np.isclose(got, max(k * se_at, threshold + t_power * se_at), rtol=1e-6, atol=1e-9)
    # and it is never smaller than the MDE computed from today's SE
    assert got >= float(minimum_detectable(np.array([se_now]), np.array([df]), 0.05)[0]) - 1e-9

"""Per-launch metric means: hand cases and a brute-force oracle (hypothesis)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.analysis.kernel_metrics import interval_means, kernel_metric_means, metric_segments
from perfdiff.schema import MetricSeries
from tests.factories import KernelSpec, make_run_file


def _pm(ts: list[int], values: list[float], interval: int, device: int = 0) -> MetricSeries:
    return MetricSeries(
        "m",
        "pct",
        "pm_sampling",
        device,
        np.asarray(ts, dtype=np.int64),
        np.asarray(values, dtype=np.float64),
        interval_ns=interval,
    )


def test_kernel_spanning_two_pm_windows_is_time_weighted() -> None:
    seg = metric_segments(_pm([10, 20, 30], [10.0, 20.0, 40.0], 10))
    # kernel [15, 28]: 5 ns at 20 (window 10-20) and 8 ns at 40 (window 20-30)
    got = interval_means([15], [28], *seg)
    assert got[0] == pytest.approx((5 * 20 + 8 * 40) / 13)


def test_uncovered_time_and_nan_samples_are_left_out() -> None:
    seg = metric_segments(_pm([10, 20, 30], [10.0, float("nan"), 40.0], 10))
    assert interval_means([15], [28], *seg)[0] == pytest.approx(40.0)
    assert np.isnan(interval_means([100], [200], *seg)[0])
    assert np.isnan(interval_means([12], [18], *seg)[0])  # only the NaN window


def test_nvml_points_hold_until_next_poll() -> None:
    series = MetricSeries(
        "clk",
        "MHz",
        "nvml",
        0,
        np.asarray([0, 100, 200], dtype=np.int64),
        np.asarray([1000.0, 2000.0, 3000.0]),
    )
    seg = metric_segments(series)
    assert interval_means([50], [150], *seg)[0] == pytest.approx(1500.0)
    assert interval_means([120], [120], *seg)[0] == pytest.approx(2000.0)  # zero-length launch


def test_factory_run_recovers_kernel_values() -> None:
    rf = make_run_file(
        [KernelSpec("a", 1.0, {"u": 80.0}), KernelSpec("b", 0.5, {"u": 20.0})],
        noise=0.0,
        sample_interval_ns=1000,
        n_cycles=3,
    )
    run = rf.runs[0]
    means = kernel_metric_means(run, run.metrics[0])
    ids = run.kernels.name_id
    # windows straddling kernel edges dilute slightly; long kernels are within 1 %
    assert np.allclose(means[ids == 0], 80.0, rtol=0.01)
    assert np.allclose(means[ids == 1], 20.0, rtol=0.01)


def test_other_device_gets_nan() -> None:
    rf = make_run_file([KernelSpec("a", 1.0, {"u": 80.0})], n_cycles=2)
    run = rf.runs[0]
    other = dataclasses.replace(run.metrics[0], device=1)
    assert np.isnan(kernel_metric_means(run, other)).all()


def _brute(qs: int, qe: int, ts: list[int], vals: list[float], interval: int) -> float:
    """Oracle: walk every nanosecond (small integers only)."""
    total = 0.0
    n = 0
    for x in range(qs, qe):
        for i, t in enumerate(ts):
            lo = max(t - interval, ts[i - 1] if i else t - interval)
            if lo <= x < t:
                total += vals[i]
                n += 1
                break
    return total / n if n else float("nan")


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.integers(1, 30), min_size=1, max_size=8),
    vals=st.lists(st.floats(0, 100), min_size=8, max_size=8),
    interval=st.integers(1, 25),
    q=st.tuples(st.integers(0, 150), st.integers(1, 60)),
)
def test_matches_brute_force(
    gaps: list[int], vals: list[float], interval: int, q: tuple[int, int]
) -> None:
    ts = list(np.cumsum(gaps) + 10)
    values = vals[: len(ts)]
    seg = metric_segments(_pm(ts, values, interval))
    got = interval_means([q[0]], [q[0] + q[1]], *seg)[0]
    want = _brute(q[0], q[0] + q[1], [int(t) for t in ts], values, interval)
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)



@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(1, 12), st.floats(0, 100)), max_size=12),
    st.lists(st.tuples(st.integers(-5, 80), st.integers(0, 20)), max_size=40),
    st.booleans(),
    st.integers(1, 5),
)
def test_blocks_and_orders_give_the_reference_means(
    segments: list[tuple[int, int, float]], queries: list[tuple[int, int]], in_order: bool,
    block: int,
) -> None:
    """Queries in blocks of any size, in time order (the cumulative-count path) or not (the
    binary search), zero-length ones included: the means of the code this replaced, bit
    for bit (tests/reference_cycle_table.py)."""
    from unittest.mock import patch

    from perfdiff.analysis import kernel_metrics
    from tests import reference_cycle_table as reference

    series = _pm(sorted({t for t, _, _ in segments}), [v for _, _, v in segments][
        :len({t for t, _, _ in segments})], max([w for _, w, _ in segments], default=5))
    seg = metric_segments(series)
    if in_order:
        queries = sorted(queries)
    qs = np.asarray([q for q, _ in queries], dtype=np.int64)
    qe = qs + np.asarray([d for _, d in queries], dtype=np.int64)
    want = reference.interval_means(qs, qe, *seg)
    with patch.object(kernel_metrics, "BLOCK", block):
        got = interval_means(qs, qe, *seg)
    assert got.tobytes() == want.tobytes()

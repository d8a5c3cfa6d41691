"""NVML clock-event reasons: the bitmask becomes a share of time with limited clocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from perfdiff.analysis.clock_reasons import (
    BITMASK_NAME,
    LIMITED_NAME,
    LIMITING_BITS,
    for_statistics,
    limited_pct,
)
from perfdiff.analysis.cycle_table import cycle_table
from perfdiff.schema import MetricSeries
from perfdiff.schema.io import load_run_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _series(name: str, values: list[float], unit: str = "bitmask") -> MetricSeries:
    ts = np.arange(len(values), dtype=np.int64) * 1000
    return MetricSeries(name, unit, "nvml", 0, ts, np.asarray(values, dtype=np.float64))


def test_hand_cases() -> None:
    # idle (1), power cap (4), idle + power cap (5), app clocks (2), HW thermal (0x40),
    # sync boost (0x10), none (0), not read (NaN)
    got = limited_pct(np.array([1.0, 4.0, 5.0, 2.0, 64.0, 16.0, 0.0, np.nan]))
    assert got[:7].tolist() == [0.0, 100.0, 100.0, 0.0, 100.0, 0.0, 0.0]
    assert np.isnan(got[7])


def test_half_idle_half_capped_reads_fifty_percent_not_a_bitmask_average() -> None:
    # the bitmask's mean would be 2.5, "application clocks"; the share is what matters
    assert float(np.mean(limited_pct(np.array([1.0, 4.0])))) == 50.0


@given(st.lists(st.integers(min_value=0, max_value=0x1FF), min_size=1, max_size=50))
def test_limited_exactly_when_a_limiting_bit_is_set(masks: list[int]) -> None:
    got = limited_pct(np.asarray(masks, dtype=np.float64))
    assert got.tolist() == [100.0 if m & LIMITING_BITS else 0.0 for m in masks]


def test_only_the_bitmask_series_is_replaced_and_keeps_its_times() -> None:
    power = _series("nvml.power", [300.0, 310.0], unit="W")
    mask = _series(BITMASK_NAME, [0.0, 4.0])
    out = for_statistics((power, mask))
    assert out[0] is power
    assert (out[1].name, out[1].unit, out[1].source) == (LIMITED_NAME, "pct", "derived")
    assert out[1].values.tolist() == [0.0, 100.0]
    assert out[1].timestamps_ns is mask.timestamps_ns
    untouched = (power,)
    assert for_statistics(untouched) is untouched


def test_recorded_fixture_compares_the_share_not_the_bitmask() -> None:
    rf = load_run_file(FIXTURES / "gpt-infer-contended.json.gz")
    assert any(m.name == BITMASK_NAME for r in rf.runs for m in r.metrics)  # file keeps it raw
    metrics = set(cycle_table(rf)["metric"].unique())
    assert LIMITED_NAME in metrics
    assert BITMASK_NAME not in metrics

"""The harness's scoring: hand-made trial digests whose scores are known exactly.

Why: a mistake in counting (a false discovery counted as true, a band off by one) would make
every number in docs/explanation/validation.md wrong while looking plausible.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats

from bench.validate.criteria import (
    Rate,
    binomial_band,
    chance_outside_band,
    covered,
    cycle_changes,
    detected,
    false_discovery_share,
    quiet_reports,
    ranked_first,
    row_false_positives,
)
from bench.validate.trials import RowDigest, TrialDigest


def _row(
    function: str, verdict: str = "no change", p: float = 0.5, ci: tuple[float, float] = (-1, 1)
) -> RowDigest:
    return RowDigest(function, "", verdict, p, p, math.nan, p, 0.0, ci[0], ci[1])


def _trial(*rows: RowDigest, cycle: str = "no change", top: str = "") -> TrialDigest:
    return TrialDigest(
        rows, cycle, 0.5, 10.0, 1.0, top or (rows[0].function if rows else ""), "runs"
    )


def test_rate_interval_is_clopper_pearson() -> None:
    r = Rate(5, 100)
    low, high = r.interval
    assert r.value == 0.05
    assert low == pytest.approx(stats.beta.ppf(0.025, 5, 96))
    assert high == pytest.approx(stats.beta.ppf(0.975, 6, 95))
    assert Rate(0, 10).interval[0] == 0.0 and Rate(10, 10).interval[1] == 1.0
    assert math.isnan(Rate(0, 0).value)


def test_binomial_band_holds_about_95_percent() -> None:
    low, high = binomial_band(200, 0.05)
    assert (low, high) == (4, 16)
    assert 0.0 < chance_outside_band(200, 0.05) < 0.06


def test_row_false_positives_counts_per_row_and_skips_nan() -> None:
    trials = [
        _trial(_row("a", p=0.01), _row("b", p=0.5), _row("c", p=math.nan)),
        _trial(_row("a", p=0.04), _row("b", p=0.06), _row("c", p=math.nan)),
    ]
    fp = row_false_positives(trials, 0.05, "p_time")
    assert fp.rejections == {("a", ""): 2, ("b", ""): 0}
    assert fp.tested == {("a", ""): 2, ("b", ""): 2}
    assert fp.pooled == Rate(2, 4)
    assert fp.max_rate == 1.0


def test_quiet_reports_count_rows_and_cycle_time() -> None:
    trials = [
        _trial(_row("a")),
        _trial(_row("a", "slower")),
        _trial(_row("a"), cycle="faster"),
        _trial(_row("a", "insufficient data")),
    ]
    assert quiet_reports(trials) == Rate(2, 4)
    assert quiet_reports(trials, include_cycle=False) == Rate(3, 4)


def test_false_discovery_share_counts_other_functions_and_wrong_direction() -> None:
    trials = [
        _trial(_row("t", "slower"), _row("x", "slower")),  # 1 false of 2
        _trial(_row("t", "slower"), _row("x")),  # 0 of 1
        _trial(_row("t", "faster")),  # wrong direction: 1 of 1
        _trial(_row("t"), _row("x")),  # no discovery: 0
    ]
    share, any_false = false_discovery_share(trials, "t")
    assert share == pytest.approx((0.5 + 0 + 1 + 0) / 4)
    assert any_false == Rate(2, 4)


def test_detection_coverage_rank_and_cycle_changes() -> None:
    trials = [
        _trial(_row("x"), _row("t", "slower", ci=(0.5, 1.5)), top="t"),
        _trial(_row("t", ci=(0.0, 0.9)), top="x", cycle="slower"),
    ]
    assert detected(trials, "t") == Rate(1, 2)
    assert covered(trials, "t", [1.0, 1.0]) == Rate(1, 2)
    assert ranked_first(trials, "t") == Rate(1, 2)
    assert cycle_changes(trials) == Rate(1, 2)

"""The noise model's statement to users: the smallest cycle-time change a pair with one-run
sides can detect at the assumed run-to-run variation (``noise.minimum_detectable_pct``), and
the change below which it never calls one (``noise.never_called_pct``), and the report note
that gives both (``comparison._unit_note``)."""

from __future__ import annotations

import dataclasses
from statistics import NormalDist

import pytest

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import DEFAULT_RUN_CV_PCT, CompareOptions, Comparison
from perfdiff.analysis.noise import minimum_detectable_pct, never_called_pct
from perfdiff.analysis.sides import side_from_run_file
from perfdiff.schema.model import RunFile
from tests.factories import DEFAULT_KERNELS, KernelSpec, make_run_file

# the fixed assumption alone (--run-cv-pct); the raise where the GPU idles: test_host_aware_cv.py
FAST = CompareOptions(bootstrap_resamples=200, host_run_cv_pct=0.0)


def _compare(a: RunFile, b: RunFile, options: CompareOptions = FAST) -> Comparison:
    sa, sb = side_from_run_file(a, source="a.json"), side_from_run_file(b, source="b.json")
    return compare_tables(sa.table, sb.table, options, normal_meta=sa.meta, abnormal_meta=sb.meta)


def _scaled(factor: float) -> tuple[KernelSpec, ...]:
    return tuple(dataclasses.replace(k, ms=k.ms * factor) for k in DEFAULT_KERNELS)


@pytest.mark.parametrize("cv", [0.5, 2.0, 5.0])
@pytest.mark.parametrize("sides", [1, 2])
def test_at_the_mde_the_floored_test_has_80_percent_power(cv: float, sides: int) -> None:
    """At the printed change Δ (relative), the SE the test will have there is
    sqrt(sides) * cv * (1 + Δ) (a slowdown raises its own floor), and Δ / SE equals
    z(1 - α/2) + z(0.8): the definition of 80 % power with no within-run noise."""
    opts = CompareOptions(run_cv_pct=cv, practical_threshold_pct=0.0)
    delta = minimum_detectable_pct(opts, sides) / 100
    se = sides ** 0.5 * cv / 100 * (1 + delta)
    z = NormalDist().inv_cdf
    assert delta / se == pytest.approx(z(1 - opts.alpha / 2) + z(0.8), rel=1e-6)


def test_more_assumed_variation_or_more_one_run_sides_cost_sensitivity() -> None:
    mde = [minimum_detectable_pct(CompareOptions(run_cv_pct=cv), 2) for cv in (1, 2, 4)]
    assert mde == sorted(mde) and mde[0] < mde[-1]
    two = CompareOptions()
    assert minimum_detectable_pct(two, 1) < minimum_detectable_pct(two, 2)
    # none assumed: only the practical threshold is left
    assert minimum_detectable_pct(CompareOptions(run_cv_pct=0.0), 2) == pytest.approx(1.0)


def test_the_cycle_time_verdict_calls_changes_past_the_bound_and_not_well_below_it() -> None:
    """The printed number is about the verdict this report gives: with little within-run
    noise, a slowdown of the printed size is called, one of half of it is not."""
    mde = minimum_detectable_pct(FAST, 2)
    normal = make_run_file(n_cycles=60, noise=0.002, seed=1)
    called = _compare(normal, make_run_file(_scaled(1 + mde / 100), n_cycles=60, noise=0.002,
                                            seed=2))
    missed = _compare(normal, make_run_file(_scaled(1 + mde / 200), n_cycles=60, noise=0.002,
                                            seed=2))
    assert called.cycle_time.verdict == "slower"
    assert missed.cycle_time.verdict == "no change"


def test_one_run_per_side_the_note_gives_the_smallest_change_and_what_to_do() -> None:
    c = _compare(make_run_file(seed=1), make_run_file(seed=2))
    note = next(n for n in c.notes if n.startswith("One run on at least one side"))
    expected = minimum_detectable_pct(FAST, 2)
    assert f"assume {DEFAULT_RUN_CV_PCT:g} % per one-run side" in note
    assert f"one of {expected:.1f} % (its minimum detectable change)" in note
    assert f"under {never_called_pct(FAST, 2):.1f} %" in note and "Each side is one run" in note
    assert "perfdiff collect --runs N" in note and "perfdiff merge" in note


def test_one_single_run_side_counts_once() -> None:
    c = _compare(make_run_file(seed=1), make_run_file(n_runs=3, seed=2))
    note = next(n for n in c.notes if n.startswith("One run on at least one side"))
    assert "One side is one run" in note
    assert f"one of {minimum_detectable_pct(FAST, 1):.1f} %" in note


def test_runs_per_side_need_no_assumption() -> None:
    c = _compare(make_run_file(n_runs=3, seed=1), make_run_file(n_runs=3, seed=2))
    assert any(n.startswith("Tests use run-level means (3 vs 3 runs)") for n in c.notes)
    assert not any("--run-cv-pct" in n for n in c.notes)


@pytest.mark.parametrize("cv", [1.0, 2.0, 5.0])
def test_below_the_never_called_bound_no_p_reaches_alpha(cv: float) -> None:
    """A change just under the bound, with no within-run noise, has z < z(1 - α/2) in both
    directions (a slowdown's floor is larger still); one just over it (a speed-up) does not."""
    opts = CompareOptions(run_cv_pct=cv, practical_threshold_pct=0.0)
    bound = never_called_pct(opts, 2) / 100
    z_alpha = NormalDist().inv_cdf(1 - opts.alpha / 2)
    floor = 2 ** 0.5 * cv / 100
    for delta in (0.999 * bound, -0.999 * bound):
        assert abs(delta) / (floor * max(1.0, 1.0 + delta)) < z_alpha
    assert 1.001 * bound / floor > z_alpha
    assert never_called_pct(opts, 2) < minimum_detectable_pct(opts, 2)

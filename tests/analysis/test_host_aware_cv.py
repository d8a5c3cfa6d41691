"""The run-to-run variation assumed for a one-run side, raised where its GPU idles
(``noise.host_aware_cv``): processes of a host-bound program differ by 4-25 % on the lent hosts,
those of a GPU-bound one by 0.02-1.4 % (bench/README.md, issue 28, 2026-12-08)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import HOST_RUN_CV_PCT, CompareOptions, Comparison
from perfdiff.analysis.noise import host_aware_cv, minimum_detectable_pct
from perfdiff.analysis.sides import side_from_run_file
from perfdiff.schema.model import RunFile
from tests.factories import DEFAULT_KERNELS, make_run_file

FAST = CompareOptions(bootstrap_resamples=200)
WORK_MS = sum(k.ms * k.launches for k in DEFAULT_KERNELS)  # 1.7 ms of kernels per cycle
# the factory idles before each of the 4 launches and after the last: GPU idle half the cycle
HALF = WORK_MS / 5


def _compare(a: RunFile, b: RunFile, options: CompareOptions = FAST) -> Comparison:
    sa, sb = side_from_run_file(a, source="a.json"), side_from_run_file(b, source="b.json")
    return compare_tables(sa.table, sb.table, options, normal_meta=sa.meta, abnormal_meta=sb.meta)


def test_each_side_gets_the_floor_or_the_host_share_times_the_host_figure() -> None:
    opts = host_aware_cv(CompareOptions(), (0.62, 0.10))
    assert opts.side_run_cv_pct == pytest.approx((0.62 * HOST_RUN_CV_PCT, 3.0))
    assert opts.side_cv(0) == pytest.approx(0.62 * HOST_RUN_CV_PCT / 100)
    # a share past 1 (rounding) is 1; no share known: the floor
    assert host_aware_cv(CompareOptions(), (1.3, math.nan)).side_run_cv_pct == (
        pytest.approx(HOST_RUN_CV_PCT), 3.0)
    # off: the options as given, one figure for both sides
    off = CompareOptions(host_run_cv_pct=0.0)
    assert host_aware_cv(off, (0.9, 0.9)) is off and off.side_cv(1) == pytest.approx(0.03)


def test_one_sided_raise_costs_less_sensitivity_than_two() -> None:
    one = host_aware_cv(CompareOptions(), (0.6, 0.0))
    both = host_aware_cv(CompareOptions(), (0.6, 0.6))
    assert minimum_detectable_pct(CompareOptions(), 2) < minimum_detectable_pct(one, 2)
    assert minimum_detectable_pct(one, 2) < minimum_detectable_pct(both, 2)


def test_two_processes_of_a_host_bound_program_on_hosts_of_different_speed_say_no_change() -> None:
    """The A/A pair the lent H100 gave (timm ViT-S bf16, GPU idle ~60 %): the same program,
    its host part 25 % slower in the second process, the cycle 12.5 % longer. One assumed
    figure (3 %) calls it; the host-aware one does not."""
    normal = make_run_file(n_cycles=60, idle_ms=HALF, noise=0.005, seed=1)
    abnormal = make_run_file(n_cycles=60, idle_ms=1.25 * HALF, noise=0.005, seed=2)
    fixed = _compare(normal, abnormal, dataclasses.replace(FAST, host_run_cv_pct=0.0))
    aware = _compare(normal, abnormal)
    assert fixed.cycle_time.delta_pct == pytest.approx(aware.cycle_time.delta_pct)
    assert 10 < aware.cycle_time.delta_pct < 15
    assert fixed.cycle_time.verdict == "slower"
    assert aware.cycle_time.verdict == "no change"
    assert aware.options.side_idle_share == pytest.approx((0.5, 0.556), abs=0.02)


def test_a_large_change_of_a_host_bound_program_is_still_called() -> None:
    normal = make_run_file(n_cycles=60, idle_ms=HALF, noise=0.005, seed=1)
    abnormal = make_run_file(n_cycles=60, idle_ms=3.0 * HALF, noise=0.005, seed=2)
    assert _compare(normal, abnormal).cycle_time.verdict == "slower"  # +100 %


def test_a_gpu_bound_pair_keeps_its_sensitivity() -> None:
    """GPU idle 13 % of the cycle (18 % x 0.13 < 3 %): the floor applies, so a 25 % slower
    GEMM (+13 % cycle) is called."""
    slower = tuple(dataclasses.replace(k, ms=k.ms * (1.25 if k.name == "gemm_kernel" else 1))
                   for k in DEFAULT_KERNELS)
    normal = make_run_file(n_cycles=60, noise=0.005, seed=1)
    abnormal = make_run_file(slower, n_cycles=60, noise=0.005, seed=2)
    c = _compare(normal, abnormal)
    assert c.options.side_run_cv_pct == (3.0, 3.0)
    assert c.cycle_time.verdict == "slower"


def test_a_kernels_gpu_time_is_not_widened_by_the_host() -> None:
    """A kernel's time per cycle does not move with the host's speed: its row's interval is
    the same whatever the host figure; the cycle's and GPU idle's widen."""
    normal = make_run_file(n_cycles=60, idle_ms=HALF, noise=0.005, seed=1)
    abnormal = make_run_file(n_cycles=60, idle_ms=HALF, noise=0.005, seed=2)
    fixed = _compare(normal, abnormal, dataclasses.replace(FAST, host_run_cv_pct=0.0))
    aware = _compare(normal, abnormal)

    def row(c: Comparison, name: str) -> tuple[float, float]:
        r = next(r for r in c.rows if r.function == name)
        return r.time_ci_low_ms, r.time_ci_high_ms

    assert row(aware, "gemm_kernel") == pytest.approx(row(fixed, "gemm_kernel"))
    idle_fixed, idle_aware = row(fixed, "[GPU idle]"), row(aware, "[GPU idle]")
    assert idle_aware[1] - idle_aware[0] > 2 * (idle_fixed[1] - idle_fixed[0])
    width = [c.cycle_time.ci_high_pct - c.cycle_time.ci_low_pct for c in (fixed, aware)]
    assert width[1] > 2 * width[0]


def test_the_note_names_each_sides_figure_and_why() -> None:
    normal = make_run_file(n_cycles=30, idle_ms=HALF, noise=0.005, seed=1)
    abnormal = make_run_file(n_cycles=30, noise=0.005, seed=2)
    note = next(n for n in _compare(normal, abnormal).notes if "run-to-run" in n)
    assert "9.0 % for the normal side (GPU idle 50 % of its cycle x 18 %)" in note
    assert "3.0 % for the abnormal side" in note and "--host-run-cv-pct" in note
    gpu_bound = _compare(abnormal, abnormal)
    note = next(n for n in gpu_bound.notes if "run-to-run" in n)
    assert "3 % per one-run side (--run-cv-pct 3; the GPU idles too little for more)" in note


def test_a_side_of_several_runs_assumes_nothing_and_is_not_named() -> None:
    """Runs measure their variation: the note speaks of the one-run side only."""
    normal = make_run_file(n_cycles=30, n_runs=2, idle_ms=HALF, noise=0.005, seed=1)
    abnormal = make_run_file(n_cycles=30, noise=0.005, seed=2)
    note = next(n for n in _compare(normal, abnormal).notes if "run-to-run" in n)
    assert "One side is one run" in note and "normal side" not in note
    assert "3 % per one-run side (--run-cv-pct 3; the GPU idles too little for more)" in note

"""Run file -> cycle table: times, idle as a union of intervals, warm-up, transfers, μ."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from perfdiff.analysis import columns as C
from perfdiff.analysis.cycle_table import cycle_table
from perfdiff.schema import KernelTable
from tests.factories import ODD_NAMES, KernelSpec, make_run_file


def _one_row_per_function(table: pd.DataFrame) -> pd.DataFrame:
    return table.drop_duplicates([C.RUN, C.PID, C.DEVICE, C.CYCLE, C.FUNCTION])


def test_columns_and_warmup_excluded() -> None:
    rf = make_run_file(n_cycles=6, n_warmup=2)
    table = cycle_table(rf)
    assert list(table.columns)[: len(C.COLUMNS)] == list(C.COLUMNS)
    assert sorted(set(table[C.CYCLE])) == [2, 3, 4, 5]


def test_kernel_time_share_and_launches() -> None:
    rf = make_run_file([KernelSpec("a", 1.0, launches=3), KernelSpec("b", 0.5)], noise=0.0,
                       idle_ms=0.1, n_cycles=3, n_warmup=0, metrics=())
    table = _one_row_per_function(cycle_table(rf))
    a = table[table[C.FUNCTION] == "a"]
    assert np.allclose(a[C.TIME_MS], 3.0)
    assert np.allclose(a[C.LAUNCHES], 3.0)
    cycle_ms = 3 * 1.0 + 0.5 + 4 * 0.1 + 0.1  # kernels + gaps before each launch + tail
    assert np.allclose(a[C.CYCLE_MS], cycle_ms, rtol=1e-6)
    assert np.allclose(a[C.CYCLE_SHARE_PCT], 100 * 3.0 / cycle_ms, rtol=1e-6)
    idle = table[table[C.FUNCTION] == C.IDLE_FUNCTION]
    assert np.allclose(idle[C.TIME_MS], 0.5, atol=1e-5)
    assert set(table[C.FUNC_TYPE]) == {"kernel", "idle"}


def test_idle_counts_overlapping_kernels_once() -> None:
    rf = make_run_file([KernelSpec("a", 1.0), KernelSpec("b", 1.0)], noise=0.0, n_cycles=1,
                       n_warmup=0, metrics=())
    run = rf.runs[0]
    k = run.kernels
    start = int(run.cycles.start_ns[0])
    # a: [0, 1 ms], b: [0.5, 1.5 ms] on another stream; cycle lasts 2 ms -> busy 1.5, idle 0.5
    new = dataclasses.replace(
        k,
        start_ns=np.asarray([start, start + 500_000], dtype=np.int64),
        end_ns=np.asarray([start + 1_000_000, start + 1_500_000], dtype=np.int64),
    )
    cycles = dataclasses.replace(run.cycles, end_ns=np.asarray([start + 2_000_000]))
    rf = dataclasses.replace(rf, runs=(dataclasses.replace(run, kernels=new, cycles=cycles),))
    table = _one_row_per_function(cycle_table(rf))
    idle = table[table[C.FUNCTION] == C.IDLE_FUNCTION][C.TIME_MS].iloc[0]
    assert idle == pytest.approx(0.5)
    assert table[table[C.FUNCTION] == "a"][C.TIME_MS].iloc[0] == pytest.approx(1.0)


def test_transfers_are_pseudo_functions() -> None:
    rf = make_run_file(n_cycles=3, memcpy_per_cycle=2, memset_per_cycle=1)
    table = _one_row_per_function(cycle_table(rf))
    assert set(table[table[C.FUNC_TYPE] == "memcpy"][C.FUNCTION]) == {"Memcpy HtoD"}
    assert set(table[table[C.FUNC_TYPE] == "memset"][C.FUNCTION]) == {"Memset"}
    assert np.allclose(table[table[C.FUNC_TYPE] == "memcpy"][C.LAUNCHES], 2.0)


def test_mu_is_time_weighted_per_function() -> None:
    rf = make_run_file([KernelSpec("gemm", 2.0, {"tensor_pct": 80.0}),
                        KernelSpec("copy", 1.0, {"tensor_pct": 0.0})],
                       noise=0.0, sample_interval_ns=1000, n_cycles=3)
    table = cycle_table(rf)
    gemm = table[(table[C.FUNCTION] == "gemm") & (table[C.METRIC] == "tensor_pct")]
    assert np.allclose(gemm[C.METRIC_MEAN], 80.0, rtol=0.01)
    idle = table[table[C.FUNCTION] == C.IDLE_FUNCTION]
    assert set(idle[C.METRIC]) == {""} and idle[C.METRIC_MEAN].isna().all()


def test_nan_metric_samples_leave_nan_not_zero() -> None:
    rf = make_run_file(nan_metric_fraction=1.0, n_cycles=3)
    table = cycle_table(rf)
    kernels = table[table[C.FUNC_TYPE] == "kernel"]
    assert kernels[C.METRIC_MEAN].isna().all()


def test_odd_names_survive_unchanged() -> None:
    rf = make_run_file([KernelSpec(n, 0.2) for n in ODD_NAMES], n_cycles=2, n_warmup=0)
    table = cycle_table(rf)
    assert set(ODD_NAMES) <= set(table[C.FUNCTION])


def test_several_runs_and_devices_kept_apart() -> None:
    rf = make_run_file(n_runs=2, n_devices=2, n_cycles=3)
    table = cycle_table(rf)
    assert set(table[C.RUN]) == {0, 1}
    assert set(table[C.DEVICE]) == {"GPU 0", "GPU 1"}
    assert set(table[C.PID]) == {1000}  # replicates of one role pool under the first pid


def test_run_without_kernels_or_cycles() -> None:
    rf = make_run_file(n_cycles=1, n_warmup=1)
    assert cycle_table(rf).empty
    rf = make_run_file([], n_cycles=2, n_warmup=0, metrics=())
    empty_kernels = rf.runs[0].kernels
    assert isinstance(empty_kernels, KernelTable)
    assert cycle_table(rf).empty

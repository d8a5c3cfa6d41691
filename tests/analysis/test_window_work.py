"""``--cycle-ms`` windows are compared per unit of work, never by their (fixed) length.

The run files are built as the collector builds a window recording: a program launches its
iteration's kernels back to back on one stream; windows of ``window_ms`` start at the first
launch and each kernel belongs to the window holding its launch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.sides import side_from_run_file
from perfdiff.analysis.window_work import ITERATION, REPEATING_LAUNCH, window_ms_of
from perfdiff.schema import (
    CURRENT_VERSION,
    Collection,
    CycleTable,
    DeviceInfo,
    Environment,
    KernelName,
    KernelTable,
    Run,
    RunFile,
    Status,
    Workload,
)
from perfdiff.schema.io import empty_transfer_table

FAST = CompareOptions(bootstrap_resamples=200)
NAMES = ("gemm", "attention", "layernorm", "recompute_gemm", "noise")


def window_run_file(iteration: Sequence[tuple[str, float]], *, window_ms: float = 20.0,
                    total_ms: float = 1000.0, warmup: int = 2, seed: int = 0,
                    shuffle: bool = False) -> RunFile:
    """A program repeating ``iteration`` ((kernel, ms) in order) for ``total_ms``, in windows."""
    rng = np.random.default_rng(seed)
    ids, starts, ends = [], [], []
    t = 0.0
    while t < total_ms:
        order = rng.permutation(len(iteration)) if shuffle else range(len(iteration))
        for j in order:
            name, ms = iteration[j]
            ms *= float(1.0 + 0.01 * rng.standard_normal())
            ids.append(NAMES.index(name))
            starts.append(t)
            t += ms
            ends.append(t)
    start_ns = np.asarray(np.round(np.asarray(starts) * 1e6), dtype=np.int64)
    end_ns = np.asarray(np.round(np.asarray(ends) * 1e6), dtype=np.int64)
    width = int(window_ms * 1e6)
    n = int((start_ns.max() - start_ns.min()) // width)
    w_start = width * np.arange(n, dtype=np.int64)
    cycle = np.where(start_ns // width < n, start_ns // width, -1).astype(np.int64)
    size = start_ns.size
    zeros = np.zeros(size, dtype=np.int64)
    kernels = KernelTable(
        name_id=np.asarray(ids, dtype=np.int64), device=zeros, stream=zeros + 7,
        start_ns=start_ns, end_ns=end_ns, cycle=cycle,
        correlation_id=np.arange(1, size + 1, dtype=np.int64),
        grid_x=zeros + 1, grid_y=zeros + 1, grid_z=zeros + 1, block_x=zeros + 128,
        block_y=zeros + 1, block_z=zeros + 1)
    cycles = CycleTable(index=np.arange(n, dtype=np.int64), start_ns=w_start,
                        end_ns=w_start + width, label=("",) * n,
                        warmup=np.arange(n) < warmup)
    run = Run(index=0, pid=42, rank=None, exit_code=0, cycles=cycles, kernels=kernels,
              memcpy=empty_transfer_table(), memset=empty_transfer_table(), metrics=())
    device = DeviceInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-x", sm_count=132,
                        memory_bytes=2**36)
    return RunFile(
        schema_version=CURRENT_VERSION, tool_version="0.1.0", status=Status("complete"),
        environment=Environment(host="h", driver_version=None, cuda_version=None,
                                cupti_version=None, torch_version=None,
                                python_version="3.12", devices=(device,)),
        collection=Collection(metrics=(), sample_interval_ns=20_000, sources=()),
        workload=Workload(name="train.py", params={"cycles_from":
                                                   f"fixed {window_ms:g} ms windows",
                                                   "cycle_ms": window_ms}),
        strings=tuple(KernelName(n, n) for n in NAMES), runs=(run,))


STEP = [("layernorm", 0.2), ("gemm", 1.0), ("attention", 0.5), ("layernorm", 0.2),
        ("gemm", 0.8)]
CHECKPOINTED = [*STEP[:3], ("recompute_gemm", 0.6), *STEP[3:]]  # 2.7 -> 3.3 ms: +22 %


def compare(normal: RunFile, abnormal: RunFile):  # type: ignore[no-untyped-def]
    n, a = side_from_run_file(normal, source="n"), side_from_run_file(abnormal, source="a")
    return compare_tables(n.table, a.table, FAST, normal_meta=n.meta, abnormal_meta=a.meta)


def test_slower_program_in_windows_is_slower_per_iteration() -> None:
    result = compare(window_run_file(STEP), window_run_file(CHECKPOINTED, seed=1))
    assert result.cycle_time.verdict == "slower"
    assert result.cycle_time.delta_pct == pytest.approx(100 * (3.3 / 2.7 - 1), abs=2.0)
    assert result.normal.cycle_ms_mean == pytest.approx(2.7, rel=0.02)
    assert result.normal.cycle_definition == "iteration (from fixed windows)"
    notes = " ".join(result.notes)
    assert "fixed 20 ms windows" in notes and "detected period of 5 launches" in notes
    assert "throughput" in notes
    # the added kernel is a finding (appeared), and a kernel's time per iteration is unchanged
    assert any(i.function == "recompute_gemm" for i in result.inventory)
    gemm = next(r for r in result.rows if r.function == "gemm")
    assert gemm.verdict == "no change"
    assert gemm.time_ms_normal == pytest.approx(1.8, rel=0.03)


def test_same_program_in_windows_is_no_change() -> None:
    result = compare(window_run_file(STEP), window_run_file(STEP, seed=3))
    assert result.cycle_time.verdict == "no change"


def test_window_length_does_not_matter() -> None:
    result = compare(window_run_file(STEP, window_ms=20.0),
                     window_run_file(CHECKPOINTED, window_ms=50.0, seed=2))
    assert result.cycle_time.verdict == "slower"
    assert result.cycle_time.delta_pct == pytest.approx(22.2, abs=2.5)


def test_without_a_period_the_unit_is_a_launch_of_the_repeating_kernels() -> None:
    """Kernels in a different order every iteration: no period, but the kernels launched in
    every window are a unit of work (time per launch)."""
    normal = window_run_file(STEP, shuffle=True)
    side = side_from_run_file(normal, source="n")
    assert side.meta.window is not None and side.meta.window.unit == REPEATING_LAUNCH
    slower = window_run_file([(name, ms * 1.3) for name, ms in STEP], shuffle=True, seed=4)
    result = compare(normal, slower)
    assert result.cycle_time.verdict == "slower"
    assert result.cycle_time.delta_pct == pytest.approx(30.0, abs=3.0)


def test_no_unit_of_work_means_shares_only() -> None:
    """Long kernels in no order (none in every window, no repetition): cycle time undefined."""
    names = np.random.default_rng(9).integers(0, len(NAMES), 40).tolist()
    sparse = [(NAMES[i], 31.0) for i in names]  # 1,240 ms of kernels: never repeated
    normal = window_run_file(sparse, seed=5)
    side = side_from_run_file(normal, source="n")
    assert side.meta.window is not None and side.meta.window.unit == ""
    result = compare(normal, window_run_file(sparse, seed=6))
    assert not result.cycle_time.comparable
    assert result.cycle_time.verdict == "insufficient data"
    assert any("cycle time is undefined for windows" in n for n in result.notes)


def test_marked_cycles_are_left_alone() -> None:
    rf = window_run_file(STEP)
    params = {"cycles_from": "optimizer step (AdamW)"}
    marked = RunFile(**{**rf.__dict__, "workload": Workload(name="train.py", params=params)})
    assert window_ms_of(marked) is None
    side = side_from_run_file(marked, source="m")
    assert side.meta.window is None
    assert side_from_run_file(rf, source="w").meta.window is not None
    assert side_from_run_file(rf, source="w").meta.window.unit == ITERATION  # type: ignore[union-attr]

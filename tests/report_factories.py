"""Build :class:`Comparison` objects in code for renderer tests (no statistics, no files).

Why: renderers are tested against the contract (``perfdiff.analysis.model``) alone, so a
change in the statistics cannot silently change what a renderer test checks. Every default
here is overridable by keyword.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from perfdiff.analysis.model import (
    CompareOptions,
    Comparison,
    CycleTimeChange,
    DeviceSummary,
    Finding,
    InventoryChange,
    MetricMove,
    MetricRow,
    SideSummary,
)

NAN = math.nan


def side(label: str = "normal", cycles_ms: tuple[float, ...] = (10.0, 10.2, 9.9),
         **kw: Any) -> SideSummary:
    desc = tuple(sorted(cycles_ms, reverse=True))
    n = len(desc)
    mean = sum(desc) / n if n else NAN
    median = (sorted(desc)[n // 2] if n % 2 else sum(sorted(desc)[n // 2 - 1:n // 2 + 1]) / 2
              ) if n else NAN
    base = SideSummary(
        label=label, source=f"/data/{label}.json.gz", n_runs=1, n_cycles=n,
        cycle_ms_mean=mean, cycle_ms_median=median, cycle_ms_desc=desc,
        cycle_definition="gpt-infer step", workload="gpt-infer",
        environment=(("GPU", "NVIDIA H100 80GB HBM3"), ("Driver", "580.159.04"),
                     ("CUDA", "13.0"), ("torch", "2.11.0")),
    )
    return replace(base, **kw)


def row(function: str = "gemm_kernel", **kw: Any) -> MetricRow:
    base = MetricRow(
        function=function,
        func_type="kernel",
        metric="tensor_active_pct",
        device="GPU 0",
        pid=1234,
        cycle_share_pct_normal=20.0,
        cycle_share_pct_abnormal=30.0,
        delta_cycle_share_pp=10.0,
        z_cycle_share=5.0,
        p_cycle_share=0.0001,
        u_p_cycle_share=0.0002,
        metric_mean_normal=60.0,
        metric_mean_abnormal=40.0,
        delta_metric_mean=-20.0,
        z_metric_mean=-4.0,
        z_log_metric_mean=-4.5,
        p_metric_mean=0.0003,
        u_p_metric_mean=0.0004,
        suspicion=95.0,
        q_value=0.0005,
        time_ms_normal=2.0,
        time_ms_abnormal=3.5,
        time_delta_ms=1.5,
        time_ci_low_ms=1.2,
        time_ci_high_ms=1.8,
        verdict="slower",
        n_normal=10,
        n_abnormal=10,
    )
    return replace(base, **kw)


def finding(function: str = "gemm_kernel", **kw: Any) -> Finding:
    base = Finding(
        function=function,
        device="GPU 0",
        pid=1234,
        verdict="slower",
        cycle_share_pct_normal=20.0,
        cycle_share_pct_abnormal=30.0,
        delta_cycle_share_pp=10.0,
        time_ms_normal=2.0,
        time_ms_abnormal=3.5,
        time_delta_ms=1.5,
        time_ci_low_ms=1.2,
        time_ci_high_ms=1.8,
        p_value=0.0001,
        q_value=0.0005,
        metric_moves=(MetricMove("tensor_active_pct", 60.0, 40.0, 0.0003),),
    )
    return replace(base, **kw)


def comparison(**kw: Any) -> Comparison:
    normal = side("normal", (10.0, 10.2, 9.9, 10.1))
    abnormal = side("abnormal", (11.5, 11.0, 11.7), environment=(
        ("GPU", "NVIDIA H100 80GB HBM3"), ("Driver", "580.159.04"), ("CUDA", "13.0"),
        ("torch", "2.12.0")))
    base = Comparison(
        normal=normal,
        abnormal=abnormal,
        cycle_time=CycleTimeChange(
            comparable=True,
            delta_ms=1.3,
            delta_pct=12.9,
            ci_low_pct=9.0,
            ci_high_pct=16.5,
            p_value=0.002,
            verdict="slower",
        ),
        rows=(
            row(),
            row(
                "elementwise_kernel",
                metric="dram_throughput_pct",
                cycle_share_pct_normal=5.0,
                cycle_share_pct_abnormal=5.1,
                delta_cycle_share_pp=0.1,
                z_cycle_share=0.3,
                p_cycle_share=0.7,
                u_p_cycle_share=0.8,
                metric_mean_normal=30.0,
                metric_mean_abnormal=30.0,
                delta_metric_mean=0.0,
                z_metric_mean=NAN,
                z_log_metric_mean=NAN,
                p_metric_mean=NAN,
                u_p_metric_mean=NAN,
                suspicion=0.03,
                q_value=0.9,
                time_ms_normal=0.5,
                time_ms_abnormal=0.52,
                time_delta_ms=0.02,
                time_ci_low_ms=-0.01,
                time_ci_high_ms=0.05,
                verdict="no change",
            ),
        ),
        findings=(finding(),),
        inventory=(InventoryChange("new_kernel", "GPU 0", 1234, "appeared", 0.25, 3.0),),
        devices=(DeviceSummary("GPU 0", 1234, 8.0, 9.4, 17.5, "slower"),),
        test_unit="batch means",
        options=CompareOptions(),
        mde_pct=0.8,
        notes=(),
    )
    return replace(base, **kw)

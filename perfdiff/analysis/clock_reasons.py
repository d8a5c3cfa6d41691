"""NVML's clock-event reasons as a share of time, not as an averaged bitmask.

Why: the collector records ``nvml.throttle_reasons`` as NVML returns it, a bitmask (0x1 GPU
idle, 0x4 software power cap, 0x20 software thermal slowdown, ...), so the run file loses
nothing. A bitmask's mean is meaningless: a kernel that ran half idle-flagged (1) and half
power-capped (4) would read 2.5, a value no reason has. The statistics therefore see, in its
place, one derived series ``nvml.clocks_limited_pct``: 100 while at least one reason that holds
the clocks down is set (power cap, thermal or hardware slowdown, power brake), 0 while none
is. Its per-kernel mean is the share of the kernel's time (%) with limited clocks, compared
like any utilisation. Reasons that do not slow a running kernel (GPU idle, application clock
setting, sync boost, display clock) are left out of it; the raw bitmask stays in the run file.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from perfdiff.schema.model import FloatArray, MetricSeries, Run

BITMASK_NAME = "nvml.throttle_reasons"
LIMITED_NAME = "nvml.clocks_limited_pct"
# nvmlClocksEventReason*: SwPowerCap, HwSlowdown, SwThermalSlowdown, HwThermalSlowdown,
# HwPowerBrakeSlowdown (the last three are also part of HwSlowdown's family)
LIMITING_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def limited_pct(values: FloatArray) -> FloatArray:
    """100 where a limiting reason is set, 0 where none is, NaN where no value was read."""
    finite = np.isfinite(values) & (values >= 0)
    bits = np.where(finite, values, 0).astype(np.int64)
    return np.where(finite, np.where(bits & LIMITING_BITS, 100.0, 0.0), np.nan)


def for_statistics(series: tuple[MetricSeries, ...]) -> tuple[MetricSeries, ...]:
    """``series`` with every clock-reason bitmask replaced by its ``nvml.clocks_limited_pct``."""
    if not any(s.name == BITMASK_NAME for s in series):
        return series
    return tuple(
        MetricSeries(LIMITED_NAME, "pct", "derived", s.device, s.timestamps_ns,
                     limited_pct(s.values), s.interval_ns)
        if s.name == BITMASK_NAME else s
        for s in series
    )


def run_for_statistics(run: Run) -> Run:
    """``run`` whose metric series are :func:`for_statistics`'s (the same run if none change)."""
    metrics = for_statistics(run.metrics)
    return run if metrics is run.metrics else replace(run, metrics=metrics)


__all__ = ["BITMASK_NAME", "LIMITED_NAME", "LIMITING_BITS", "for_statistics", "limited_pct",
           "run_for_statistics"]

"""Per-kernel-launch means of a sampled metric (PM sampling or NVML), vectorised.

Why a step function: a PM sample is the metric's average over the GPU-time window
``[t - interval_ns, t]``; an NVML poll is the value in effect from its timestamp until the next
poll. Either way the metric is a piecewise-constant function of time, so the mean over a kernel
``[start, end]`` is the integral of that function over the kernel divided by the covered time.
Cumulative sums over the segments make the integral an O(log n) lookup per kernel
(``numpy.searchsorted``), so a million launches cost well under a second.

Limits (documented because they bias short kernels):
- A kernel shorter than the sampling interval gets the mean of the window(s) it overlaps: that
  window also holds whatever else ran in it (other kernels, idle gaps), so the value is diluted
  towards its neighbours. Only kernels several intervals long get a value that is "theirs".
- Time not covered by any sample (before the first, after the last, gaps where samples were
  dropped, NaN samples) is left out of both numerator and denominator; a kernel with no covered
  time gets NaN, never 0.
- Kernels on another device than the series get NaN.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from perfdiff.schema.model import FloatArray, IntArray, MetricSeries, Run

POINT_SOURCES = frozenset({"nvml"})


def kernel_metric_means(run: Run, series: MetricSeries) -> FloatArray:
    """Time-weighted mean of ``series`` over each kernel launch of ``run`` (NaN: no sample)."""
    kernels = run.kernels
    out = np.full(kernels.start_ns.shape[0], np.nan, dtype=np.float64)
    on_device = kernels.device == series.device
    if not on_device.any():
        return out
    seg_start, seg_end, seg_value = metric_segments(series)
    out[on_device] = interval_means(
        kernels.start_ns[on_device], kernels.end_ns[on_device], seg_start, seg_end, seg_value
    )
    return out


def metric_segments(series: MetricSeries) -> tuple[IntArray, IntArray, FloatArray]:
    """The series as sorted, non-overlapping segments ``[start, end)`` with a value each.

    PM-style samples cover ``[t - interval, t]`` (interval: ``series.interval_ns``, else the
    median spacing). Point samples (NVML) hold from ``t`` until the next sample; the last one holds
    for one median spacing. Overlaps (jittered sample times) are clipped so that each instant has
    one value: the later sample wins. NaN samples are dropped (time uncovered).
    """
    order = np.argsort(series.timestamps_ns, kind="stable")
    ts = np.asarray(series.timestamps_ns, dtype=np.int64)[order]
    values = np.asarray(series.values, dtype=np.float64)[order]
    empty = np.zeros(0, dtype=np.int64)
    if ts.shape[0] == 0:
        return empty, empty, np.zeros(0, dtype=np.float64)
    spacing = _typical_spacing(ts)
    if series.source in POINT_SOURCES:
        start = ts
        end = np.empty_like(ts)
        end[:-1] = ts[1:]
        end[-1] = ts[-1] + spacing
    else:
        interval = series.interval_ns if series.interval_ns else spacing
        end = ts
        start = ts - int(interval)
        # clip each window so it does not reach back into the previous sample's window
        start[1:] = np.maximum(start[1:], end[:-1])
    keep = np.isfinite(values) & (end > start)
    return start[keep], end[keep], values[keep]


def _typical_spacing(ts: IntArray) -> int:
    if ts.shape[0] < 2:
        return 1
    gaps = np.diff(ts)
    gaps = gaps[gaps > 0]
    return int(np.median(gaps)) if gaps.shape[0] else 1


def interval_means(
    query_start: npt.ArrayLike,
    query_end: npt.ArrayLike,
    seg_start: IntArray,
    seg_end: IntArray,
    seg_value: FloatArray,
) -> FloatArray:
    """Mean of a piecewise-constant function over each query interval (NaN: nothing covered).

    Segments must be sorted and non-overlapping (as :func:`metric_segments` returns them).
    """
    qs = np.asarray(query_start, dtype=np.float64)
    qe = np.asarray(query_end, dtype=np.float64)
    if seg_start.shape[0] == 0:
        return np.full(qs.shape[0], np.nan)
    s = seg_start.astype(np.float64)
    e = seg_end.astype(np.float64)
    length = e - s
    cum_len = np.concatenate(([0.0], np.cumsum(length)))
    cum_area = np.concatenate(([0.0], np.cumsum(length * seg_value)))

    def covered_and_area(x: FloatArray) -> tuple[FloatArray, FloatArray]:
        # segments wholly before x, plus the part of the segment containing x
        k = np.searchsorted(e, x, side="right")  # segments with end <= x are complete
        covered = cum_len[k].copy()
        area = cum_area[k].copy()
        inside = k < s.shape[0]
        kk = np.where(inside, k, 0)
        partial = np.where(inside, np.clip(x - s[kk], 0.0, length[kk]), 0.0)
        covered += partial
        area += partial * np.where(inside, seg_value[kk], 0.0)
        return covered, area

    c_end, a_end = covered_and_area(qe)
    c_start, a_start = covered_and_area(qs)
    covered = c_end - c_start
    area = a_end - a_start
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(covered > 0, area / np.where(covered > 0, covered, 1.0), np.nan)
    # zero-length kernels: the value in effect at their instant, if any
    instant = qe <= qs
    if instant.any():
        k = np.searchsorted(e, qs[instant], side="right")
        inside = k < s.shape[0]
        kk = np.where(inside, k, 0)
        hit = inside & (s[kk] <= qs[instant])
        mean[np.flatnonzero(instant)] = np.where(hit, seg_value[kk], np.nan)
    return mean.astype(np.float64)

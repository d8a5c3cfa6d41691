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

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from perfdiff.schema.model import FloatArray, IntArray, MetricSeries, Run

POINT_SOURCES = frozenset({"nvml"})


def kernel_metric_means(run: Run, series: MetricSeries) -> FloatArray:
    """Time-weighted mean of ``series`` over each kernel launch of ``run`` (NaN: no sample)."""
    kernels = run.kernels
    (means,) = launch_means(kernels.start_ns, kernels.end_ns, kernels.device, [series])
    return means


def launch_means(
    start_ns: IntArray, end_ns: IntArray, device: IntArray, series: Sequence[MetricSeries]
) -> list[FloatArray]:
    """Per series, the mean over each launch ``[start, end]`` (NaN: other device, no sample).

    Why several series at once: the PM metrics of one pass share their sample times, so the
    work that depends only on where launches fall among the samples (two binary searches per
    launch) is done once per device and set of sample windows, not once per metric.
    """
    out = []
    lookups: list[tuple[int, IntArray, IntArray, _Windows]] = []
    for one in series:
        means = np.full(start_ns.shape[0], np.nan, dtype=np.float64)
        on_device = device == one.device
        if on_device.any():
            seg_start, seg_end, seg_value = metric_segments(one)
            windows = None
            for dev, known_start, known_end, known in lookups:
                if (
                    dev == one.device
                    and np.array_equal(known_start, seg_start)
                    and np.array_equal(known_end, seg_end)
                ):
                    windows = known
                    break
            if windows is None:
                windows = _Windows(start_ns[on_device], end_ns[on_device], seg_start, seg_end)
                lookups.append((one.device, seg_start, seg_end, windows))
            means[on_device] = windows.means(seg_value)
        out.append(means)
    return out


def metric_segments(series: MetricSeries) -> tuple[IntArray, IntArray, FloatArray]:
    """The series as sorted, non-overlapping segments ``[start, end)`` with a value each.

    PM-style samples cover ``[t - interval, t]`` (interval: ``series.interval_ns``, else the
    median spacing). Point samples (NVML) hold from ``t`` until the next sample; the last one holds
    for one median spacing. Overlaps (jittered sample times) are clipped so that each instant has
    one value: the later sample wins. NaN samples are dropped (time uncovered).
    """
    ts = np.asarray(series.timestamps_ns, dtype=np.int64)
    values = np.asarray(series.values, dtype=np.float64)
    if ts.shape[0] > 1 and not bool(np.all(ts[1:] >= ts[:-1])):  # recorded in order as a rule
        order = np.argsort(ts, kind="stable")
        ts = ts[order]
        values = values[order]
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
    return _Windows(query_start, query_end, seg_start, seg_end).means(seg_value)


class _Windows:
    """Where each query interval falls among the segments: the value-independent half.

    For a point x, the covered time (and the integral) up to x is the cumulative sum over the
    segments wholly before x plus the part of the segment containing x. The segment index and
    that part are found once here; :meth:`means` then needs only the values' cumulative sums.
    A sentinel segment of length 0 and value 0 past the end stands for "no segment contains x".
    """

    def __init__(
        self,
        query_start: npt.ArrayLike,
        query_end: npt.ArrayLike,
        seg_start: IntArray,
        seg_end: IntArray,
    ) -> None:
        self.qs = np.asarray(query_start, dtype=np.float64)
        self.qe = np.asarray(query_end, dtype=np.float64)
        self.n_segments = seg_start.shape[0]
        if self.n_segments == 0:
            return
        s = seg_start.astype(np.float64)
        e = seg_end.astype(np.float64)
        self.length = e - s
        cum_len = np.concatenate(([0.0], np.cumsum(self.length)))
        s_ext = np.append(s, 0.0)
        length_ext = np.append(self.length, 0.0)
        self.k_end, self.part_end = _position(e, s_ext, length_ext, self.qe)
        self.k_start, self.part_start = _position(e, s_ext, length_ext, self.qs)
        covered = (cum_len[self.k_end] + self.part_end) - (cum_len[self.k_start] + self.part_start)
        self.covered = covered
        self.instant = self.qe <= self.qs
        if self.instant.any():
            qs_instant = self.qs[self.instant]
            k = np.searchsorted(e, qs_instant, side="right")
            inside = k < self.n_segments
            kk = np.where(inside, k, 0)
            self.instant_segment = kk
            self.instant_hit = inside & (s[kk] <= qs_instant)

    def means(self, seg_value: FloatArray) -> FloatArray:
        """Time-weighted mean of the segments' values over each query (NaN: nothing covered)."""
        if self.n_segments == 0:
            return np.full(self.qs.shape[0], np.nan)
        cum_area = np.concatenate(([0.0], np.cumsum(self.length * seg_value)))
        value_ext = np.append(seg_value, 0.0)
        area = (cum_area[self.k_end] + self.part_end * value_ext[self.k_end]) - (
            cum_area[self.k_start] + self.part_start * value_ext[self.k_start]
        )
        covered = self.covered
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(covered > 0, area / np.where(covered > 0, covered, 1.0), np.nan)
        # zero-length kernels: the value in effect at their instant, if any
        if self.instant.any():
            mean[np.flatnonzero(self.instant)] = np.where(
                self.instant_hit, seg_value[self.instant_segment], np.nan
            )
        return mean.astype(np.float64)


def _position(
    seg_end: FloatArray, seg_start_ext: FloatArray, length_ext: FloatArray, x: FloatArray
) -> tuple[IntArray, FloatArray]:
    """Segments wholly before x (``end <= x``), and the covered part of the one holding x."""
    k = np.searchsorted(seg_end, x, side="right")
    part = np.subtract(x, seg_start_ext[k])
    np.maximum(part, 0.0, out=part)  # numpy.clip(part, 0, length), in place
    np.minimum(part, length_ext[k], out=part)
    return k, part

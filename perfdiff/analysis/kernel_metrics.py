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
    Why one set of windows at a time, each dropped before the next: every set holds five
    columns as long as the launches (a million launches: 40 MB each); building them on top of
    each other was the peak of ``compare`` (bench/README.md, issue 25).
    """
    out = [np.full(start_ns.shape[0], np.nan, dtype=np.float64) for _ in series]
    for dev in dict.fromkeys(one.device for one in series):
        on_device = device == dev
        if not on_device.any():
            continue
        everywhere = bool(on_device.all())
        qs = (start_ns if everywhere else start_ns[on_device]).astype(np.float64)
        qe = (end_ns if everywhere else end_ns[on_device]).astype(np.float64)
        for (seg_start, seg_end), members in _same_windows(
            [(i, one) for i, one in enumerate(series) if one.device == dev]
        ):
            windows = _Windows(qs, qe, seg_start, seg_end)
            for i, seg_value in members:
                if everywhere:
                    windows.means(seg_value, out=out[i])
                else:
                    out[i][on_device] = windows.means(seg_value)
            del windows
    return out


def _same_windows(
    members: list[tuple[int, MetricSeries]],
) -> list[tuple[tuple[IntArray, IntArray], list[tuple[int, FloatArray]]]]:
    """The series of one device grouped by their sample windows (equal segment bounds), in
    order of first appearance; each with its position among all series and its values."""
    groups: list[tuple[tuple[IntArray, IntArray], list[tuple[int, FloatArray]]]] = []
    for i, one in members:
        seg_start, seg_end, seg_value = metric_segments(one)
        for (known_start, known_end), group in groups:
            if np.array_equal(known_start, seg_start) and np.array_equal(known_end, seg_end):
                group.append((i, seg_value))
                break
        else:
            groups.append(((seg_start, seg_end), [(i, seg_value)]))
    return groups


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

    Arithmetic is done in place (``out=``) where a temporary would be as long as the queries:
    each fresh array of a million launches costs page faults that took more time than the
    arithmetic on the 2-core box (bench/README.md, issue 25). The operations and their order
    are those of the plain expressions in the comments, so the results are the same bits.
    """

    def __init__(
        self,
        query_start: npt.ArrayLike,
        query_end: npt.ArrayLike,
        seg_start: IntArray,
        seg_end: IntArray,
    ) -> None:
        qs = np.asarray(query_start, dtype=np.float64)
        qe = np.asarray(query_end, dtype=np.float64)
        self.n_queries = qs.shape[0]
        self.n_segments = seg_start.shape[0]
        if self.n_segments == 0:
            return
        s = seg_start.astype(np.float64)
        e = seg_end.astype(np.float64)
        self.length = e - s
        cum_len = np.concatenate(([0.0], np.cumsum(self.length)))
        s_ext = np.append(s, 0.0)
        length_ext = np.append(self.length, 0.0)
        self.k_end, self.part_end = _position(e, s_ext, length_ext, qe)
        self.k_start, self.part_start = _position(e, s_ext, length_ext, qs)
        # covered = (cum_len[k_end] + part_end) - (cum_len[k_start] + part_start)
        covered = cum_len.take(self.k_end)
        covered += self.part_end
        before = cum_len.take(self.k_start)
        before += self.part_start
        covered -= before
        del before
        self.uncovered = np.flatnonzero(~(covered > 0))
        self.covered = covered
        instant = qe <= qs
        self.instant = np.flatnonzero(instant)
        if self.instant.shape[0]:
            qs_instant = qs[instant]
            k = np.searchsorted(e, qs_instant, side="right")
            inside = k < self.n_segments
            kk = np.where(inside, k, 0)
            self.instant_segment = kk
            self.instant_hit = inside & (s[kk] <= qs_instant)

    def means(self, seg_value: FloatArray, out: FloatArray | None = None) -> FloatArray:
        """Time-weighted mean of the segments' values over each query (NaN: nothing covered),
        written into ``out`` when given."""
        if self.n_segments == 0:
            if out is None:
                return np.full(self.n_queries, np.nan)
            out.fill(np.nan)
            return out
        cum_area = np.concatenate(([0.0], np.cumsum(self.length * seg_value)))
        value_ext = np.append(seg_value, 0.0)
        # area = (cum_area[k_end] + part_end * value_ext[k_end])
        #        - (cum_area[k_start] + part_start * value_ext[k_start])
        area = value_ext.take(self.k_end) if out is None else value_ext.take(self.k_end, out=out)
        area *= self.part_end
        area += cum_area.take(self.k_end)
        before = value_ext.take(self.k_start)
        before *= self.part_start
        before += cum_area.take(self.k_start)
        area -= before
        del before
        # mean = area / covered where covered > 0, else NaN
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(area, self.covered, out=area)
        area[self.uncovered] = np.nan
        # zero-length kernels: the value in effect at their instant, if any
        if self.instant.shape[0]:
            area[self.instant] = np.where(
                self.instant_hit, seg_value[self.instant_segment], np.nan
            )
        return area


def _position(
    seg_end: FloatArray, seg_start_ext: FloatArray, length_ext: FloatArray, x: FloatArray
) -> tuple[IntArray, FloatArray]:
    """Segments wholly before x (``end <= x``), and the covered part of the one holding x."""
    k = _count_at_or_below(seg_end, x)
    part = seg_start_ext.take(k)
    np.subtract(x, part, out=part)  # x - start
    np.maximum(part, 0.0, out=part)  # numpy.clip(part, 0, length), in place
    np.minimum(part, length_ext.take(k), out=part)
    return k, part


def _count_at_or_below(sorted_bounds: FloatArray, x: FloatArray) -> IntArray:
    """``numpy.searchsorted(sorted_bounds, x, side="right")``: how many bounds are <= each x.

    Why not always that call: launches come in time order as a rule, and then the bounds
    (fewer than the launches: one per PM sample) can be placed among the launches instead,
    and counted with a cumulative sum: the same counts at about half the time. A bound
    counts for every x at or after the first x that is >= it.
    """
    n = x.shape[0]
    if n < 2 or not bool((x[1:] >= x[:-1]).all()):
        return np.searchsorted(sorted_bounds, x, side="right")
    first = np.searchsorted(x, sorted_bounds, side="left")
    counts = np.bincount(first, minlength=n + 1)[:n]
    return np.cumsum(counts, out=counts)

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
    Why in blocks of launches (:data:`BLOCK`): every intermediate column is then a block
    long, not a million launches long; whole-length columns cost more in page faults than in
    arithmetic on the 2-core box, and five of them per set of windows were the peak of
    ``compare`` (bench/README.md, issue 25). Each value is computed as before, bit for bit.
    """
    out = [np.full(start_ns.shape[0], np.nan, dtype=np.float64) for _ in series]
    for dev in dict.fromkeys(one.device for one in series):
        on_device = device == dev
        if not on_device.any():
            continue
        everywhere = bool(on_device.all())
        qs = start_ns if everywhere else start_ns[on_device]
        qe = end_ns if everywhere else end_ns[on_device]
        for (seg_start, seg_end), members in _same_windows(
            [(i, one) for i, one in enumerate(series) if one.device == dev]
        ):
            windows = _Windows(seg_start, seg_end, [value for _, value in members])
            targets = ([out[i] for i, _ in members] if everywhere
                       else [np.full(qs.shape[0], np.nan) for _ in members])
            windows.means_into(qs, qe, targets)
            if not everywhere:
                for (i, _), target in zip(members, targets, strict=True):
                    out[i][on_device] = target
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
    qs = np.asarray(query_start, dtype=np.float64)
    out = np.full(qs.shape[0], np.nan, dtype=np.float64)
    _Windows(seg_start, seg_end, [np.asarray(seg_value, dtype=np.float64)]).means_into(
        qs, np.asarray(query_end, dtype=np.float64), [out])
    return out


BLOCK = 1 << 15  # launches per block: each temporary column is 256 KiB


class _Windows:
    """Segments with their cumulative sums, and the means of their values over queries.

    For a point x, the covered time (and the integral) up to x is the cumulative sum over the
    segments wholly before x plus the part of the segment containing x. A sentinel segment of
    length 0 and value 0 past the end stands for "no segment contains x". Where each query
    falls is found once per block of queries and serves every series of values (the metrics
    of one PM pass share their windows).
    """

    def __init__(self, seg_start: IntArray, seg_end: IntArray,
                 values: Sequence[FloatArray]) -> None:
        self.n_segments = seg_start.shape[0]
        self.values = values
        self.s = seg_start.astype(np.float64)
        self.e = seg_end.astype(np.float64)
        length = self.e - self.s
        self.cum_len = np.concatenate(([0.0], np.cumsum(length)))
        self.s_ext = np.append(self.s, 0.0)
        self.length_ext = np.append(length, 0.0)
        self.cum_area = [np.concatenate(([0.0], np.cumsum(length * v))) for v in values]
        self.value_ext = [np.append(v, 0.0) for v in values]

    def means_into(self, query_start: npt.ArrayLike, query_end: npt.ArrayLike,
                   targets: Sequence[FloatArray]) -> None:
        """Write each series' time-weighted mean over each query into its target (NaN where
        nothing is covered), a block of queries at a time; queries are converted to float64
        as the segments are."""
        qs_all, qe_all = np.asarray(query_start), np.asarray(query_end)
        if self.n_segments == 0:
            return  # targets hold NaN already
        for lo in range(0, qs_all.shape[0], BLOCK):
            hi = min(lo + BLOCK, qs_all.shape[0])
            qs = qs_all[lo:hi].astype(np.float64)
            qe = qe_all[lo:hi].astype(np.float64)
            self._block(qs, qe, [t[lo:hi] for t in targets])

    def _block(self, qs: FloatArray, qe: FloatArray, targets: list[FloatArray]) -> None:
        k_end, part_end = self._position(qe)
        k_start, part_start = self._position(qs)
        # covered = (cum_len[k_end] + part_end) - (cum_len[k_start] + part_start)
        covered = self.cum_len.take(k_end)
        covered += part_end
        before = self.cum_len.take(k_start)
        before += part_start
        covered -= before
        uncovered = ~(covered > 0)
        instant = np.flatnonzero(qe <= qs)
        if instant.shape[0]:
            qs_instant = qs[instant]
            k = np.searchsorted(self.e, qs_instant, side="right")
            inside = k < self.n_segments
            kk = np.where(inside, k, 0)
            hit = inside & (self.s[kk] <= qs_instant)
        for cum_area, value_ext, value, area in zip(self.cum_area, self.value_ext,
                                                    self.values, targets, strict=True):
            # area = (cum_area[k_end] + part_end * value_ext[k_end])
            #        - (cum_area[k_start] + part_start * value_ext[k_start])
            value_ext.take(k_end, out=area)
            area *= part_end
            area += cum_area.take(k_end)
            value_ext.take(k_start, out=before)
            before *= part_start
            before += cum_area.take(k_start)
            area -= before
            # mean = area / covered where covered > 0, else NaN
            with np.errstate(invalid="ignore", divide="ignore"):
                np.divide(area, covered, out=area)
            area[uncovered] = np.nan
            # zero-length kernels: the value in effect at their instant, if any
            if instant.shape[0]:
                area[instant] = np.where(hit, value[kk], np.nan)

    def _position(self, x: FloatArray) -> tuple[IntArray, FloatArray]:
        """Segments wholly before x (``end <= x``), and the covered part of the one holding x.

        k is ``searchsorted(end, x, side="right")``, found among the segment ends between
        the block's smallest and largest x only (launches in time order: a few thousand PM
        samples, in cache), the count below them added back. When the block's x are in
        order and outnumber those ends, the ends are placed among the x instead and counted
        by a cumulative sum (an end counts for every x at or after the first x >= it): the
        same counts, with fewer binary searches.
        """
        low = int(np.searchsorted(self.e, x.min(), side="right"))
        high = int(np.searchsorted(self.e, x.max(), side="right"))
        ends = self.e[low:high]
        n = x.shape[0]
        if ends.shape[0] < n and bool((x[1:] >= x[:-1]).all()):
            k = np.bincount(np.searchsorted(x, ends, side="left"), minlength=n + 1)[:n]
            np.cumsum(k, out=k)
        else:
            k = np.searchsorted(ends, x, side="right")
        k += low
        part = self.s_ext.take(k)
        np.subtract(x, part, out=part)  # x - start
        np.maximum(part, 0.0, out=part)  # numpy.clip(part, 0, length), in place
        np.minimum(part, self.length_ext.take(k), out=part)
        return k, part

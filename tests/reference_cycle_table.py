"""The cycle table as perfdiff 0.1.0 built it, kept verbatim as the reference for the fast one.

Why keep it: ``perfdiff/analysis/cycle_table.py`` and ``kernel_metrics.py`` were rewritten for
speed (bench/scale.sh); their results must stay identical, row for row and bit for bit. This is
the straightforward pandas version they replaced (commit 3ee081a), used only by tests.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.schema.model import FloatArray, IntArray, MetricSeries, Run, RunFile, TransferTable

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


def cycle_table(run_file: RunFile) -> pd.DataFrame:
    """The cycle table of every run in ``run_file`` (warm-up cycles excluded)."""
    names = np.asarray(
        [s.demangled or s.mangled for s in run_file.strings] + [C.IDLE_FUNCTION], dtype=object
    )
    # Replicate runs are separate processes (new pids) of the same role: a run's pid column is
    # the pid of the first run with its rank, so replicates pool and ranks stay apart.
    role_pid: dict[int | None, int] = {}
    for run in run_file.runs:
        role_pid.setdefault(run.rank, run.pid)
    parts = [_run_table(run, names, role_pid[run.rank]) for run in run_file.runs]
    parts = [p for p in parts if len(p)]
    if not parts:
        return C.empty_cycle_table()
    table = pd.concat(parts, ignore_index=True)
    return table


def _measured_cycles(run: Run) -> pd.DataFrame:
    cyc = run.cycles
    keep = ~cyc.warmup
    return pd.DataFrame(
        {
            C.CYCLE: cyc.index[keep],
            C.CYCLE_MS: (cyc.end_ns[keep] - cyc.start_ns[keep]) / 1e6,
            C.ANCHOR: np.asarray(cyc.label, dtype=object)[keep],
        }
    )


def _run_table(run: Run, names: np.ndarray, pid: int) -> pd.DataFrame:
    cycles = _measured_cycles(run)
    if cycles.empty:
        return C.empty_cycle_table()
    idle_id = len(names) - 1
    k = run.kernels
    in_cycle = np.isin(k.cycle, cycles[C.CYCLE].to_numpy())
    dur_ms = (k.end_ns - k.start_ns)[in_cycle] / 1e6
    kern = pd.DataFrame(
        {
            "dev": k.device[in_cycle],
            C.CYCLE: k.cycle[in_cycle],
            "fid": k.name_id[in_cycle],
            C.TIME_MS: dur_ms,
        }
    )
    per_fn = (
        kern.groupby(["dev", C.CYCLE, "fid"], sort=True)[C.TIME_MS]
        .agg(["sum", "size"])
        .rename(columns={"sum": C.TIME_MS, "size": C.LAUNCHES})
        .reset_index()
    )
    per_fn[C.FUNC_TYPE] = "kernel"
    idle = _idle_rows(run, in_cycle, cycles, idle_id)
    transfers = [
        _transfer_rows(run.memcpy, cycles, prefix="Memcpy ", func_type="memcpy"),
        _transfer_rows(run.memset, cycles, prefix="", func_type="memset"),
    ]
    base = pd.concat([per_fn, idle], ignore_index=True)
    if base.empty and not any(len(t) for t in transfers):
        return C.empty_cycle_table()  # nothing ran on any device in the measured cycles
    base[C.FUNCTION] = names[base["fid"].to_numpy(dtype=np.int64)]
    base = pd.concat([base, *[t for t in transfers if len(t)]], ignore_index=True)
    base = base.merge(cycles, on=C.CYCLE, how="inner")
    base[C.CYCLE_SHARE_PCT] = 100.0 * base[C.TIME_MS] / base[C.CYCLE_MS]
    metric_rows = _metric_rows(run, in_cycle, base)
    out = pd.DataFrame(
        {
            C.RUN: run.index,
            C.PID: pid,
            C.DEVICE: "GPU " + metric_rows["dev"].astype(np.int64).astype(str),
            C.CYCLE: metric_rows[C.CYCLE].astype(np.int64),
            C.CYCLE_MS: metric_rows[C.CYCLE_MS],
            C.ANCHOR: metric_rows[C.ANCHOR],
            C.FUNCTION: metric_rows[C.FUNCTION],
            C.FUNC_TYPE: metric_rows[C.FUNC_TYPE],
            C.METRIC: metric_rows[C.METRIC],
            C.TIME_MS: metric_rows[C.TIME_MS],
            C.CYCLE_SHARE_PCT: metric_rows[C.CYCLE_SHARE_PCT],
            C.METRIC_MEAN: metric_rows[C.METRIC_MEAN],
            C.LAUNCHES: metric_rows[C.LAUNCHES].astype(np.float64),
        }
    )
    return out


def _idle_rows(run: Run, in_cycle: np.ndarray, cycles: pd.DataFrame, idle_id: int) -> pd.DataFrame:
    """Cycle time with no kernel running, per device that ran kernels in this run."""
    k = run.kernels
    devices = np.unique(k.device)
    if devices.shape[0] == 0:
        return pd.DataFrame(columns=["dev", C.CYCLE, "fid", C.TIME_MS, C.LAUNCHES, C.FUNC_TYPE])
    busy = pd.DataFrame(
        {
            "dev": k.device[in_cycle],
            C.CYCLE: k.cycle[in_cycle],
            "start": k.start_ns[in_cycle],
            "end": k.end_ns[in_cycle],
        }
    ).sort_values(["dev", C.CYCLE, "start"], kind="stable")
    # union of intervals: each kernel adds the part after the furthest end seen so far
    group = busy.groupby(["dev", C.CYCLE], sort=False)
    prev_end = group["end"].cummax().groupby([busy["dev"], busy[C.CYCLE]]).shift(1)
    start = busy["start"].to_numpy(dtype=np.float64)
    end = busy["end"].to_numpy(dtype=np.float64)
    reach = np.fmax(start, prev_end.to_numpy(dtype=np.float64))
    busy["union_ms"] = np.maximum(0.0, end - reach) / 1e6
    union = busy.groupby(["dev", C.CYCLE])["union_ms"].sum()
    grid = pd.MultiIndex.from_product([devices, cycles[C.CYCLE].to_numpy()], names=["dev", C.CYCLE])
    union = union.reindex(grid, fill_value=0.0)
    cycle_ms = cycles.set_index(C.CYCLE)[C.CYCLE_MS]
    idle_ms = np.maximum(
        0.0, cycle_ms.reindex(grid.get_level_values(C.CYCLE)).to_numpy() - union.to_numpy()
    )
    return pd.DataFrame(
        {
            "dev": grid.get_level_values("dev").to_numpy(),
            C.CYCLE: grid.get_level_values(C.CYCLE).to_numpy(),
            "fid": idle_id,
            C.TIME_MS: idle_ms,
            C.LAUNCHES: np.nan,
            C.FUNC_TYPE: "idle",
        }
    )


def _transfer_rows(
    table: TransferTable, cycles: pd.DataFrame, *, prefix: str, func_type: str
) -> pd.DataFrame:
    keep = np.isin(table.cycle, cycles[C.CYCLE].to_numpy())
    if not keep.any():
        return pd.DataFrame()
    kinds = np.asarray(table.kind, dtype=object)[keep]
    frame = pd.DataFrame(
        {
            "dev": table.device[keep],
            C.CYCLE: table.cycle[keep],
            C.FUNCTION: [f"{prefix}{kind}" if kind != "memset" else "Memset" for kind in kinds],
            C.TIME_MS: (table.end_ns - table.start_ns)[keep] / 1e6,
        }
    )
    out = (
        frame.groupby(["dev", C.CYCLE, C.FUNCTION])[C.TIME_MS]
        .agg(["sum", "size"])
        .rename(columns={"sum": C.TIME_MS, "size": C.LAUNCHES})
        .reset_index()
    )
    out[C.FUNC_TYPE] = func_type
    return out


def _metric_rows(run: Run, in_cycle: np.ndarray, base: pd.DataFrame) -> pd.DataFrame:
    """One row per metric for kernel functions (μ = time-weighted mean over their launches)."""
    k = run.kernels
    dur = (k.end_ns - k.start_ns)[in_cycle].astype(np.float64)
    frames = []
    kernel_base = base[base[C.FUNC_TYPE] == "kernel"]
    other = base[base[C.FUNC_TYPE] != "kernel"].copy()
    other[C.METRIC] = ""
    other[C.METRIC_MEAN] = np.nan
    metric_devices: set[int] = set()
    for series in run.metrics:
        means = kernel_metric_means(run, series)[in_cycle]
        on = (k.device[in_cycle] == series.device) & np.isfinite(means)
        metric_devices.add(series.device)
        launches = pd.DataFrame(
            {
                "dev": k.device[in_cycle][on],
                C.CYCLE: k.cycle[in_cycle][on],
                "fid": k.name_id[in_cycle][on],
                "w": dur[on],
                "wv": dur[on] * means[on],
            }
        )
        sums = launches.groupby(["dev", C.CYCLE, "fid"])[["w", "wv"]].sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = (sums["wv"] / sums["w"]).rename(C.METRIC_MEAN).reset_index()
        rows = kernel_base[kernel_base["dev"] == series.device].merge(
            mu, on=["dev", C.CYCLE, "fid"], how="left"
        )
        rows[C.METRIC] = series.name
        frames.append(rows)
    no_metric = kernel_base[~kernel_base["dev"].isin(sorted(metric_devices))].copy()
    no_metric[C.METRIC] = ""
    no_metric[C.METRIC_MEAN] = np.nan
    return pd.concat([*frames, no_metric, other], ignore_index=True)

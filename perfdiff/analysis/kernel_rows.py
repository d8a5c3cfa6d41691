"""Rows of ``perfdiff kernels``: every launch with its latency and utilisation, or by name.

Why in ``analysis``: selecting launches (runs, cycles, measured only), their utilisation (the
time-weighted mean of the PM samples overlapping each, :mod:`perfdiff.analysis.kernel_metrics`),
grouping by name and ranking by GPU time are computations; ``perfdiff.report.kernel_table``
only formats the rows it is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfdiff.analysis.kernel_metrics import kernel_metric_means
from perfdiff.errors import InputError
from perfdiff.schema.model import BoolArray, FloatArray, MetricSeries, Run, RunFile
from perfdiff.schema.names import NameStyle, distinct_short_names, kernel_name

TENSOR_KEY = "tensor"  # substrings that pick the metric series of each column
DRAM_KEY = "dram"


@dataclass(frozen=True)
class LaunchRow:
    """One kernel launch (launch order)."""

    name: str
    device: int
    latency_ns: int
    tensor: float  # fraction of peak, NaN when not sampled
    dram: float


@dataclass(frozen=True)
class NameRow:
    """All launches of one kernel name (``--by name``)."""

    name: str
    count: int
    total_ns: int
    mean_ns: float
    share_pct: float  # of the selected launches' summed GPU time
    tensor: float  # time-weighted over the launches with samples
    dram: float


def _series_means(run: Run, key: str) -> FloatArray:
    """Per-launch fraction of the first PM/NVML series whose name holds ``key`` (per device)."""
    out = np.full(run.kernels.start_ns.shape[0], np.nan)
    chosen: dict[int, MetricSeries] = {}
    for series in run.metrics:
        if key in series.name.lower() and series.unit == "pct" and series.device not in chosen:
            chosen[series.device] = series
    for series in chosen.values():
        means = kernel_metric_means(run, series) / 100.0
        out = np.where(np.isnan(out), means, out)
    return out


def _selected_runs(run_file: RunFile, run_index: int | None) -> list[Run]:
    if run_index is None:
        return list(run_file.runs)
    runs = [r for r in run_file.runs if r.index == run_index]
    if not runs:
        known = ", ".join(str(r.index) for r in run_file.runs) or "none"
        raise InputError(
            f"run {run_index} is not in this file (runs: {known}); pick one with --run"
        )
    return runs


def _measured_mask(run: Run) -> BoolArray:
    """Launches inside measured (non-warm-up) cycles.

    Why the default view drops the rest: warm-up cycles come first in launch order and PM
    sampling starts after them, so a listing of all launches opened with screens of ``n/a``
    rows that say nothing about the measured workload. A run without any measured cycle (no
    markers) keeps every launch rather than showing nothing.
    """
    cycles = run.cycles
    measured = cycles.index[~cycles.warmup]
    if measured.size == 0:
        return np.ones(run.kernels.start_ns.shape[0], dtype=bool)
    return np.isin(run.kernels.cycle, measured)


def launch_rows(run_file: RunFile, *, run_index: int | None = None, cycle: int | None = None,
                names: NameStyle = "short", warmup: bool = True) -> list[LaunchRow]:
    """Launches of the selected runs/cycle in launch order (by start time within each run).

    ``warmup=False`` keeps launches of measured cycles only (what ``perfdiff kernels`` shows
    by default); an explicit ``cycle`` is shown whatever it is, warm-up included.
    """
    rows: list[LaunchRow] = []
    # short names distinct per kernel of the file (schema.names.distinct_short_names): a row
    # of --by name is one kernel, never every Kernel2<...> of a cuBLAS/CUTLASS program
    short = (distinct_short_names([kernel_name(run_file, i, "full")
                                   for i in range(len(run_file.strings))])
             if names == "short" else [])
    for run in _selected_runs(run_file, run_index):
        k = run.kernels
        if cycle is not None:
            mask = k.cycle == cycle
        elif warmup:
            mask = np.ones(k.start_ns.shape[0], dtype=bool)
        else:
            mask = _measured_mask(run)
        idx = np.flatnonzero(mask)
        idx = idx[np.argsort(k.start_ns[idx], kind="stable")]
        tensor, dram = _series_means(run, TENSOR_KEY), _series_means(run, DRAM_KEY)
        latency = k.end_ns - k.start_ns
        # names once per interned id (a run has millions of launches but few distinct names)
        ids = k.name_id[idx]
        unique_ids = np.unique(ids)
        name_of = ({int(i): short[int(i)] for i in unique_ids} if names == "short" else
                   {int(i): kernel_name(run_file, int(i), names) for i in unique_ids})
        rows += [
            LaunchRow(name_of[n], d, lat, t, m)
            for n, d, lat, t, m in zip(ids.tolist(), k.device[idx].tolist(),
                                       latency[idx].tolist(), tensor[idx].tolist(),
                                       dram[idx].tolist(), strict=True)
        ]
    if not rows and cycle is not None:
        raise InputError(f"no kernel launches in cycle {cycle}; check the cycle index with --cycle")
    return rows


def name_rows(launches: list[LaunchRow]) -> list[NameRow]:
    """Aggregate launches by name, largest total time first (ties: by name, deterministic).

    Tensor and DRAM are latency-weighted over the launches that have a value (NaN: none has).
    One pass with running sums: a million launches take about a second.
    """
    # per name: count, total ns, weighted tensor sum, its weight, weighted dram sum, its weight
    acc: dict[str, list[float]] = {}
    for row in launches:
        a = acc.get(row.name)
        if a is None:
            a = acc[row.name] = [0, 0, 0.0, 0, 0.0, 0]
        a[0] += 1
        a[1] += row.latency_ns
        if row.tensor == row.tensor:  # not NaN
            a[2] += row.tensor * row.latency_ns
            a[3] += row.latency_ns
        if row.dram == row.dram:
            a[4] += row.dram * row.latency_ns
            a[5] += row.latency_ns
    grand_total = sum(a[1] for a in acc.values())
    out = [
        NameRow(
            name=name, count=int(a[0]), total_ns=int(a[1]), mean_ns=a[1] / a[0],
            share_pct=100.0 * a[1] / grand_total if grand_total else math.nan,
            tensor=a[2] / a[3] if a[3] > 0 else math.nan,
            dram=a[4] / a[5] if a[5] > 0 else math.nan,
        )
        for name, a in acc.items()
    ]
    out.sort(key=lambda r: (-r.total_ns, r.name))
    return out


def top_by_time(rows: list[LaunchRow], count: int) -> list[LaunchRow]:
    """The ``count`` launches with the most GPU time, longest first (ties: launch order)."""
    order = sorted(range(len(rows)), key=lambda i: (-rows[i].latency_ns, i))
    return [rows[i] for i in order[:count]]


__all__ = ["LaunchRow", "NameRow", "launch_rows", "name_rows", "top_by_time"]

"""``perfdiff kernels RUN``: the per-kernel table in the seeds' format, or aggregated by name.

The seeds (``kernel-table-*.txt``) list every launch in launch order as fixed-width text::

    Kernel                                                 Latency Tensor   DRAM
    elementwise_kernel_with_index                     |       4192   0.00   0.00

latency in ns, tensor-pipe and DRAM utilisation as fractions (0-1) of peak. We keep that layout
exactly for launch order, so users can diff our output against tables they already have.
``--by name`` aggregates (count, total, mean, share of GPU time) as a markdown table.

Why utilisation comes from :func:`perfdiff.analysis.kernel_metrics.kernel_metric_means`: a
kernel's value is the time-weighted mean of the PM samples overlapping it (method and limits
documented there); this module only selects, groups and formats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from perfdiff.analysis.kernel_metrics import kernel_metric_means
from perfdiff.errors import InputError
from perfdiff.report.format import base_name, fmt_int, fmt_num, md_cell
from perfdiff.report.table import pipe_table
from perfdiff.schema.model import BoolArray, FloatArray, MetricSeries, Run, RunFile

NameStyle = Literal["short", "full", "mangled"]
SEED_NAME_WIDTH = 50  # the seeds cut names to 47 characters + "..."
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


def kernel_name(run_file: RunFile, name_id: int, style: NameStyle) -> str:
    """The name of an interned kernel in the requested style."""
    entry = run_file.strings[name_id]
    if style == "mangled":
        return entry.mangled
    demangled = entry.demangled or entry.mangled
    return demangled if style == "full" else base_name(demangled)


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
        name_of = {int(i): kernel_name(run_file, int(i), names) for i in unique_ids}
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


def _fraction(value: float) -> str:
    return "   n/a" if math.isnan(value) else f"{value:6.2f}"


def _seed_name(name: str, style: NameStyle) -> str:
    if style == "short" and len(name) > SEED_NAME_WIDTH:
        return name[: SEED_NAME_WIDTH - 3] + "..."
    return name.ljust(SEED_NAME_WIDTH)


def render_launch_table(rows: list[LaunchRow], names: NameStyle = "short") -> str:
    """The seeds' fixed-width text table (one line per launch)."""
    lines = [f"{'Kernel':<{SEED_NAME_WIDTH + 1}}{'Latency':>11}{'Tensor':>7}{'DRAM':>7}"]
    lines += [
        f"{_seed_name(' '.join(r.name.split()), names)}|{r.latency_ns:>11}"
        f" {_fraction(r.tensor)} {_fraction(r.dram)}"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def render_launch_markdown(rows: list[LaunchRow]) -> str:
    """Launches as a markdown table (names escaped; utilisation as fractions, like the seeds)."""
    headers = ["#", "Kernel", "Device", "Latency (ns)", "Tensor", "DRAM"]
    cells = [
        [fmt_int(i), md_cell(r.name), str(r.device), fmt_int(r.latency_ns), fmt_num(r.tensor),
         fmt_num(r.dram)]
        for i, r in enumerate(rows, start=1)
    ]
    return pipe_table(headers, cells, right=(0, 2, 3, 4, 5)) + "\n"


def render_name_table(rows: list[NameRow]) -> str:
    """Aggregated rows as a markdown table (names escaped for the table)."""
    headers = ["Kernel", "Launches", "Total (ms)", "Mean (us)", "Share of GPU time (%)",
               "Tensor", "DRAM"]
    cells = [
        [md_cell(r.name), fmt_int(r.count), fmt_num(r.total_ns / 1e6, 3),
         fmt_num(r.mean_ns / 1e3, 2), fmt_num(r.share_pct, 2), fmt_num(r.tensor, 2),
         fmt_num(r.dram, 2)]
        for r in rows
    ]
    return pipe_table(headers, cells, right=(1, 2, 3, 4, 5, 6)) + "\n"

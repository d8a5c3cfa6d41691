"""GPU metric samples (``nsys profile --gpu-metrics-devices``) -> metric series usable as μ.

Why its own module: nsys samples device-wide counters (SMs Active, Tensor Active, DRAM
Bandwidth, clocks) at a fixed rate into ``GPU_METRICS`` (timestamp, typeId, metricId, value),
named in ``TARGET_INFO_GPU_METRICS``. A sample's value holds from its timestamp until the next
sample of the same metric (the nsys recipe ``gpu_metric_util_map`` draws it so); the run
file's sampled series are averages over ``[t - interval, t]``, so each series here is
stamped with the *next* sample's time and the last sample, whose window has no end, is left
out. The GPU is the low byte of ``typeId``. The unit is the bracket at the end of the name.
"""

from __future__ import annotations

import numpy as np

from perfdiff.readers.nsys.activity import int_rows
from perfdiff.readers.nsys.database import Export
from perfdiff.readers.nsys.tables import (
    METRIC_GPU_MASK,
    METRIC_NAMES_TABLE,
    METRIC_UNITS,
    METRICS_TABLE,
)
from perfdiff.schema.model import MetricSeries


def metric_unit(name: str) -> str:
    """"SMs Active [Throughput %]" -> "pct"; a unit not in the table is kept as written."""
    _, bracket, tail = name.rpartition("[")
    if not bracket or not tail.endswith("]"):
        return ""
    written = tail[:-1].strip()
    return METRIC_UNITS.get(written.lower(), written.lower())


def read_metrics(export: Export, devices: set[int], warnings: list[str]) -> list[MetricSeries]:
    """Every GPU metric of the given devices as a series (none when not recorded)."""
    if not export.has(METRICS_TABLE) or not export.has(METRIC_NAMES_TABLE):
        return []
    export.require(METRICS_TABLE, ("timestamp", "typeId", "metricId", "value"))
    export.require(METRIC_NAMES_TABLE, ("typeId", "metricId", "metricName"))
    names = {(int(t), int(m)): str(n) for t, m, n in export.rows(
        f"SELECT typeId, metricId, metricName FROM {METRIC_NAMES_TABLE}")
        if isinstance(t, int) and isinstance(m, int)}
    series: list[MetricSeries] = []
    for (type_id, metric_id), name in sorted(names.items()):
        device = type_id & METRIC_GPU_MASK
        if device not in devices:
            continue
        stamps = int_rows(export, METRICS_TABLE, ("timestamp",),
                          "WHERE typeId = ? AND metricId = ? ORDER BY timestamp",
                          (type_id, metric_id))[:, 0]
        values = _values(export, type_id, metric_id)
        if stamps.shape[0] < 2:
            continue
        keep = np.isfinite(values[:-1])
        step = np.diff(stamps)
        if int(step.min()) <= 0:
            warnings.append(f"GPU metric {name!r} (GPU {device}) has two samples at one time; "
                            "it was left out")
            continue
        interval = int(np.median(step))
        series.append(MetricSeries(
            name=name, unit=metric_unit(name), source="imported", device=device,
            timestamps_ns=stamps[1:][keep], values=values[:-1][keep], interval_ns=interval))
    return series


def _values(export: Export, type_id: int, metric_id: int) -> np.ndarray:
    rows = export.rows(f"SELECT value FROM {METRICS_TABLE} WHERE typeId = ? AND metricId = ? "
                       "ORDER BY timestamp", (type_id, metric_id))
    return np.asarray([v if isinstance(v, (int, float)) and not isinstance(v, bool)
                       else np.nan for (v,) in rows], dtype=np.float64)

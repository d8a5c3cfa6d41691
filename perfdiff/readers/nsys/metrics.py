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

import sqlite3

import numpy as np

from perfdiff.errors import InputError
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
    """Every GPU metric of the given devices as a series (none when not recorded).

    One pass over ``GPU_METRICS`` (it holds every sample of every metric: tens of millions of
    rows at 10 kHz), in chunks; a value that is not a number (NULL, text) becomes NaN, a
    missing sample, never 0."""
    if not devices or not export.has(METRICS_TABLE) or not export.has(METRIC_NAMES_TABLE):
        return []
    export.require(METRICS_TABLE, ("timestamp", "typeId", "metricId", "value"))
    export.require(METRIC_NAMES_TABLE, ("typeId", "metricId", "metricName"))
    names = {(int(t), int(m)): str(n) for t, m, n in export.rows(
        f"SELECT DISTINCT typeId, metricId, metricName FROM {METRIC_NAMES_TABLE}")
        if isinstance(t, int) and isinstance(m, int)}
    gpus = ", ".join(str(int(d)) for d in sorted(devices))
    where = f"WHERE (typeId & {METRIC_GPU_MASK}) IN ({gpus})"
    keys = int_rows(export, METRICS_TABLE, ("typeId", "metricId", "timestamp"), where)
    values = _values(export, where)
    order = np.lexsort((keys[:, 2], keys[:, 1], keys[:, 0]))
    keys, values = keys[order], values[order]
    series: list[MetricSeries] = []
    bounds = np.flatnonzero((np.diff(keys[:, 0]) != 0) | (np.diff(keys[:, 1]) != 0)) + 1
    for part in np.split(np.arange(keys.shape[0]), bounds):
        if part.size < 2:
            continue
        type_id, metric_id = int(keys[part[0], 0]), int(keys[part[0], 1])
        name = names.get((type_id, metric_id), f"metric {metric_id}")
        device = type_id & METRIC_GPU_MASK
        stamps, vals = keys[part, 2], values[part]
        step = np.diff(stamps)
        if int(step.min()) <= 0:
            warnings.append(f"GPU metric {name!r} (GPU {device}) has two samples at one time; "
                            "it was left out")
            continue
        series.append(MetricSeries(
            name=name, unit=metric_unit(name), source="imported", device=device,
            timestamps_ns=stamps[1:], values=vals[:-1], interval_ns=int(np.median(step))))
    return series


def _values(export: Export, where: str) -> np.ndarray:
    """The ``value`` column as float64, NaN where it is not a number."""
    chunks: list[np.ndarray] = []
    try:
        cursor = export.connection.execute(
            f"SELECT CASE WHEN typeof(value) IN ('integer', 'real') THEN value END "
            f"FROM {METRICS_TABLE} {where}")
        while batch := cursor.fetchmany(65536):
            chunks.append(np.asarray([np.nan if v is None else v for (v,) in batch],
                                     dtype=np.float64))
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{export.where()}: table {METRICS_TABLE} cannot be read ({exc}); "
                         "the file is damaged or truncated; export the report again") from None
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float64)

"""The one pass over the kept events: GPU activity columns, launches, ranges, counter samples.

Why its own module: this is where a trace event's loose fields (device or pid, stream or
tid, grid/block, bytes) become checked integer columns, copied out of the file so that its
bytes can be freed, and where end >= start is checked once for every GPU event and range.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from perfdiff.readers.torch_profiler.events import (
    _COUNTER_DECODER,
    GPU_CATEGORIES,
    LAUNCH_CATEGORIES,
    RANGE_CATEGORIES,
    _Args,
    _Bad,
    _Event,
    _kept_events,
)
from perfdiff.readers.torch_profiler.timestamps import us_text_to_ns, us_texts_to_ns
from perfdiff.schema.model import IntArray, MetricSeries


def _int_value(value: Any, what: str, event: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise _Bad(f"GPU event {event[:60]!r}: {what} {value!r} is not an integer")


@dataclass
class _Columns:
    """GPU activity of one kind gathered in the first pass (times still as JSON text)."""

    name: list[str] = field(default_factory=list)
    device: list[int] = field(default_factory=list)
    stream: list[int] = field(default_factory=list)
    ts: list[bytes] = field(default_factory=list)
    dur: list[bytes] = field(default_factory=list)
    correlation: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    grid: list[tuple[int, int, int]] = field(default_factory=list)
    block: list[tuple[int, int, int]] = field(default_factory=list)

    def add(self, event: _Event) -> None:
        args = event.args if isinstance(event.args, _Args) else _Args()
        name = sys.intern(event.name)  # a kernel name (often 200+ characters) held once
        self.name.append(name)
        self.device.append(_int_value(args.device if args.device is not None else event.pid,
                                      "device (args.device or pid)", name))
        self.stream.append(_int_value(args.stream if args.stream is not None else event.tid,
                                      "stream (args.stream or tid)", name))
        self.ts.append(bytes(event.ts))
        self.dur.append(bytes(event.dur) or b"0")
        self.correlation.append(-1 if args.correlation is None else
                                _int_value(args.correlation, "correlation", name))
        nbytes = args.bytes
        self.nbytes.append(int(nbytes) if isinstance(nbytes, (int, float)) and
                           not isinstance(nbytes, bool) and nbytes >= 0 else 0)
        self.grid.append(_dim3(args.grid))
        self.block.append(_dim3(args.block))

    def spans(self, base_ns: int) -> tuple[IntArray, IntArray]:
        """Start and end (ns) of every row; end >= start is checked here, once."""
        start, end = _spans(self.ts, self.dur, base_ns, "GPU event")
        return start, end


def _spans(ts: list[bytes], dur: list[bytes], base_ns: int,
           what: str) -> tuple[IntArray, IntArray]:
    try:
        start = us_texts_to_ns(ts) + base_ns
        duration = us_texts_to_ns(dur)
    except ValueError as exc:
        raise _Bad(f"{what} with a bad time ({exc})") from None
    if duration.size and int(duration.min()) < 0:
        raise _Bad(f"a {what} ends before it starts (dur {int(duration.min())} ns)")
    return start, start + duration


def _dim3(value: Any) -> tuple[int, int, int]:
    if not isinstance(value, list) or not value:
        return (0, 0, 0)
    padded = [*value[:3], 1, 1, 1][:3]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in padded):
        return (0, 0, 0)
    return (padded[0], padded[1], padded[2])


@dataclass
class _Ranges:
    """user_annotation / gpu_user_annotation ranges (times still as JSON text)."""

    cat: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    ts: list[bytes] = field(default_factory=list)
    dur: list[bytes] = field(default_factory=list)
    device: list[int] = field(default_factory=list)


@dataclass
class _Gathered:
    """What one pass over the events keeps, copied out of the file (no raw slice left)."""

    kernels: _Columns = field(default_factory=_Columns)
    copies: _Columns = field(default_factory=_Columns)
    sets: _Columns = field(default_factory=_Columns)
    ranges: _Ranges = field(default_factory=_Ranges)
    launch_corr: list[int] = field(default_factory=list)
    launch_ts: list[bytes] = field(default_factory=list)
    cpu_pids: dict[int, int] = field(default_factory=dict)
    profiler_ranges: int = 0
    metrics: tuple[MetricSeries, ...] = ()
    sample_interval_ns: int = 0


def _gather(events: list[msgspec.Raw], base_ns: int) -> _Gathered:
    """The one pass over the events. A function of its own so that its last decoded event
    (whose raw ``ts`` holds the whole file) is gone when it returns; ``events`` is emptied."""
    out = _Gathered()
    by_cat = {"kernel": out.kernels, "gpu_memcpy": out.copies, "gpu_memset": out.sets}
    ranges = out.ranges
    counted: dict[tuple[str, str], int] = {}
    counter_raws: list[msgspec.Raw] = []
    for event in _kept_events(events, counted, counter_raws):
        cat = event.cat
        if cat in GPU_CATEGORIES:
            if event.ph == "X":
                by_cat[cat].add(event)
        elif cat in LAUNCH_CATEGORIES:
            args = event.args
            if isinstance(args, _Args) and isinstance(args.correlation, int):
                out.launch_corr.append(args.correlation)
                out.launch_ts.append(bytes(event.ts))
            if isinstance(event.pid, int):
                out.cpu_pids[event.pid] = out.cpu_pids.get(event.pid, 0) + 1
        elif cat in RANGE_CATEGORIES and event.ph == "X":
            ranges.cat.append(cat)
            ranges.name.append(event.name)
            ranges.ts.append(bytes(event.ts))
            ranges.dur.append(bytes(event.dur) or b"0")
            ranges.device.append(event.pid if isinstance(event.pid, int) else -1)
    out.profiler_ranges = sum(n for (cat, _), n in counted.items()
                              if cat == "cuda_profiler_range")
    if counter_raws:
        out.metrics, out.sample_interval_ns = _counter_series(counter_raws, base_ns)
    del events[:]  # with the last raw slice gone, the file's bytes are freed
    return out


def _counter_series(raws: list[msgspec.Raw],
                    base_ns: int) -> tuple[tuple[MetricSeries, ...], int]:
    """``hardware_counters`` samples (one event per sample, metric -> value in its args)."""
    samples: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for raw in raws:
        try:
            event = _COUNTER_DECODER.decode(raw)
        except msgspec.ValidationError as exc:
            raise _Bad(f"malformed hardware_counters sample ({exc})") from None
        if not event.args:
            continue
        try:
            when = base_ns + us_text_to_ns(event.ts)
        except ValueError as exc:
            raise _Bad(f"hardware_counters sample: bad time ({exc})") from None
        device = event.pid if isinstance(event.pid, int) else 0
        for metric, value in event.args.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                samples.setdefault((metric, device), []).append((when, float(value)))
    series = []
    intervals = []
    for (metric, device), points in sorted(samples.items()):
        points.sort()
        ts = np.asarray([t for t, _ in points], dtype=np.int64)
        values = np.asarray([v for _, v in points], dtype=np.float64)
        if not np.isfinite(values).all():
            raise _Bad(f"hardware_counters metric {metric!r} has a non-finite value")
        interval = int(np.median(np.diff(ts))) if ts.size > 1 else 0
        intervals.append(interval)
        series.append(MetricSeries(name=metric, unit="pct" if "pct" in metric else "",
                                   source="pm_sampling", device=device, timestamps_ns=ts,
                                   values=values, interval_ns=interval or None))
    return tuple(series), (max(intervals) if intervals else 0)

"""The one pass over the kept events: GPU activity columns, launches, ranges, counter samples.

Why its own module: this is where a trace event's loose fields (device or pid, stream or
tid, grid/block, bytes) become checked integer columns, copied out of the file so that its
bytes can be freed, and where end >= start is checked once for every GPU event and range.
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from perfdiff.readers.torch_profiler.events import (
    COUNTER_DECODER,
    EVENT_DECODER,
    LAUNCH_DECODER,
    REEXPORT,
    BadTrace,
    Event,
    EventArgs,
    Launch,
    LaunchArgs,
    decode_kept,
    decode_replacing,
    sort_events,
)
from perfdiff.readers.torch_profiler.ops import HostRanges, host_ops
from perfdiff.readers.torch_profiler.spellings import (
    COUNTERS,
    KERNEL,
    LAUNCH,
    MEMCPY,
    MEMSET,
    STEP_OPERATOR,
)
from perfdiff.readers.torch_profiler.timestamps import us_text_to_ns, us_texts_to_ns
from perfdiff.schema.model import IntArray, MetricSeries


def _int_value(value: Any, what: str, event: str, at: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise BadTrace(f"GPU event at traceEvents[{at}] ({event[:60]!r}): {what} {value!r} is "
                   f"not an integer; {REEXPORT}")


def _int_values(values: list[Any], what: str, names: list[str],
                at: Sequence[int]) -> list[int]:
    """:func:`_int_value` of each; a list of plain ints (the usual case) is taken as it is."""
    if all(type(v) is int for v in values):
        return values
    return [_int_value(v, what, name, i) for v, name, i in zip(values, names, at, strict=True)]


_NO_ARGS = EventArgs()
_CHUNK = 8192  # events decoded at a time: bounds the decoded events alive at once


@dataclass
class GpuColumns:
    """GPU activity of one kind gathered in the first pass (times still as JSON text)."""

    name: list[str] = field(default_factory=list)
    device: list[int] = field(default_factory=list)
    stream: list[int] = field(default_factory=list)
    ts: list[bytes] = field(default_factory=list)
    dur: list[bytes] = field(default_factory=list)
    correlation: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    grid: list[int] = field(default_factory=list)  # x, y, z of each row, flat
    block: list[int] = field(default_factory=list)
    event: array[int] = field(default_factory=lambda: array("q"))  # in traceEvents (errors)

    def add_all(self, events: list[Event], at: array[int]) -> None:
        """Append the complete events (``ph`` "X") of a decoded list, a column at a time;
        ``at``: their positions in ``traceEvents``."""
        complete = [e.ph == "X" for e in events]
        if not all(complete):
            events = [e for e, keep in zip(events, complete, strict=True) if keep]
            at = array("q", [i for i, keep in zip(at, complete, strict=True) if keep])
        self.event += at
        # a kernel name (often 200+ characters) held once
        names = [sys.intern(e.name) for e in events]
        args = [e.args if isinstance(e.args, EventArgs) else _NO_ARGS for e in events]
        self.name += names
        pairs = list(zip(events, args, strict=True))
        self.device += _int_values([a.device if a.device is not None else e.pid
                                    for e, a in pairs], "device (args.device or pid)", names,
                                   at)
        self.stream += _int_values([a.stream if a.stream is not None else e.tid
                                    for e, a in pairs], "stream (args.stream or tid)", names,
                                   at)
        self.ts += [bytes(e.ts) for e in events]
        self.dur += [bytes(e.dur) or b"0" for e in events]
        corr = [a.correlation for a in args]
        self.correlation += _int_values([-1 if c is None else c for c in corr],
                                        "correlation", names, at)
        self.nbytes += [_nbytes(a.bytes) for a in args]
        self.grid += _dim3s([a.grid for a in args])
        self.block += _dim3s([a.block for a in args])

    def spans(self, base_ns: int) -> tuple[IntArray, IntArray]:
        """Start and end (ns) of every row; end >= start is checked here, once."""
        start, end = spans_ns(self.ts, self.dur, base_ns, "GPU event", self.event)
        return start, end


def _nbytes(value: Any) -> int:
    return (int(value) if isinstance(value, (int, float)) and not isinstance(value, bool)
            and value >= 0 else 0)


def spans_ns(ts: list[bytes], dur: list[bytes], base_ns: int, what: str,
             at: Sequence[int]) -> tuple[IntArray, IntArray]:
    """Start and end (ns) of each event; ``at`` (positions in ``traceEvents``) names the
    first bad one."""
    try:
        start = us_texts_to_ns(ts) + base_ns
        duration = us_texts_to_ns(dur)
    except ValueError as exc:
        row = first_bad_time(ts, dur)
        raise BadTrace(f"{what}{_where(at, row)} with a bad time ({exc}); {REEXPORT}") from None
    if duration.size and int(duration.min()) < 0:
        row = int(duration.argmin())
        raise BadTrace(f"{what}{_where(at, row)} ends before it starts (dur "
                       f"{int(duration[row])} ns); {REEXPORT}")
    return start, start + duration


def _where(at: Sequence[int], row: int | None) -> str:
    return "" if row is None else f" at traceEvents[{at[row]}]"


def first_bad_time(*columns: list[bytes]) -> int | None:
    """The first row whose time (in any of ``columns``) does not parse (the error path only:
    one call per value)."""
    for row, texts in enumerate(zip(*columns, strict=True)):
        try:
            for text in texts:
                us_text_to_ns(text)
        except ValueError:
            return row
    return None


def _dim3(value: Any) -> tuple[int, int, int]:
    if not isinstance(value, list) or not value:
        return (0, 0, 0)
    padded = [*value[:3], 1, 1, 1][:3]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in padded):
        return (0, 0, 0)
    return (padded[0], padded[1], padded[2])


def _dim3s(values: list[Any]) -> list[int]:
    """:func:`_dim3` of each, flat (x, y, z, x, y, z, ...); three non-negative plain ints
    each (every kernel of a Kineto trace) are taken as they are."""
    if all(type(v) is list and len(v) == 3 for v in values):
        flat = [x for v in values for x in v]
        if all(type(x) is int and x >= 0 for x in flat):
            return flat
    return [x for v in values for x in _dim3(v)]


@dataclass
class _Ranges:
    """user_annotation / gpu_user_annotation ranges (times still as JSON text)."""

    cat: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    ts: list[bytes] = field(default_factory=list)
    dur: list[bytes] = field(default_factory=list)
    device: list[int] = field(default_factory=list)
    at: array[int] = field(default_factory=lambda: array("q"))  # positions in traceEvents


@dataclass
class _Gathered:
    """What one pass over the events keeps, copied out of the file (no raw slice left)."""

    kernels: GpuColumns = field(default_factory=GpuColumns)
    copies: GpuColumns = field(default_factory=GpuColumns)
    sets: GpuColumns = field(default_factory=GpuColumns)
    ranges: _Ranges = field(default_factory=_Ranges)
    launch_corr: list[int] = field(default_factory=list)
    launch_ts: list[bytes] = field(default_factory=list)
    launch_name: list[str] = field(default_factory=list)  # the API called (interned)
    launch_at: array[int] = field(default_factory=lambda: array("q"))  # in traceEvents
    launch_pid: list[int | str] = field(default_factory=list)  # the launching thread (ops.py)
    launch_tid: list[int | str] = field(default_factory=list)
    host_ops: HostRanges = field(default_factory=lambda: HostRanges([], [], [], [], []))
    cpu_pids: dict[int, int] = field(default_factory=dict)
    profiler_ranges: int = 0
    categories: dict[str, int] = field(default_factory=dict)
    metrics: tuple[MetricSeries, ...] = ()
    sample_interval_ns: int = 0


def gather(events: list[msgspec.Raw], base_ns: int, *, ops: bool = False) -> _Gathered:
    """The one pass over the events, then each kept kind decoded into its columns. A function
    of its own so that its last decoded event (whose raw ``ts`` holds the whole file) is gone
    when it returns; ``events`` is emptied. ``ops``: decode the host ops too (ops.py)."""
    out = _Gathered()
    kept = sort_events(events)
    for cat, columns in ((KERNEL, out.kernels), (MEMCPY, out.copies), (MEMSET, out.sets)):
        for chunk, at in _chunks_at(kept.gpu[cat], kept.at[cat]):
            columns.add_all(decode_kept(chunk, EVENT_DECODER, at), at)
    for chunk, at in _chunks_at(kept.launches, kept.at[LAUNCH]):
        _add_launches(out, decode_kept(chunk, LAUNCH_DECODER, at), at)
    if ops:
        out.host_ops = host_ops(kept.host_ops)
    kept.host_ops.clear()
    for kind, raws in kept.ranges.items():
        at = kept.at[kind]
        _add_ranges(out.ranges, kind, decode_kept(raws, EVENT_DECODER, at), at)
    out.profiler_ranges = kept.profiler_ranges
    out.categories = kept.categories
    if kept.counters:
        out.metrics, out.sample_interval_ns = _counter_series(kept.counters, base_ns,
                                                              kept.at[COUNTERS])
    del events[:]  # with the last raw slice gone, the file's bytes are freed
    return out


def _chunks(raws: list[msgspec.Raw]) -> Iterator[list[msgspec.Raw]]:
    """``raws`` in order, in slices of at most ``_CHUNK``, each taken out of the list (which
    ends empty) so that a slice is freed once decoded; cut from the end of the reversed list,
    so that each cut costs its own length, not the list's."""
    raws.reverse()
    while raws:
        chunk = raws[-_CHUNK:]
        del raws[-_CHUNK:]
        chunk.reverse()
        yield chunk


def _chunks_at(raws: list[msgspec.Raw],
               at: array[int]) -> Iterator[tuple[list[msgspec.Raw], array[int]]]:
    """:func:`_chunks`, each with its events' positions in ``traceEvents``."""
    done = 0
    for chunk in _chunks(raws):
        yield chunk, at[done:done + len(chunk)]
        done += len(chunk)


def _add_launches(out: _Gathered, events: list[Launch], at: array[int]) -> None:
    """Launch events (cuda_runtime/cuda_driver, HIP's): correlation -> launch time, and which
    CPU process launched (the run's pid: the one that launched most)."""
    args = [e.args for e in events]
    with_corr = [(a.correlation, e, i) for e, a, i in zip(events, args, at, strict=True)
                 if isinstance(a, LaunchArgs) and isinstance(a.correlation, int)]
    out.launch_corr += [c for c, _, _ in with_corr]
    out.launch_ts += [bytes(e.ts) for _, e, _ in with_corr]
    out.launch_name += [sys.intern(e.name) for _, e, _ in with_corr]
    out.launch_at += array("q", [i for _, _, i in with_corr])
    out.launch_pid += [e.pid for _, e, _ in with_corr]
    out.launch_tid += [e.tid for _, e, _ in with_corr]
    # counted in C; first seen first, as the pids are met in the file
    for pid, n in Counter(e.pid for e in events if isinstance(e.pid, int)).items():
        out.cpu_pids[pid] = out.cpu_pids.get(pid, 0) + n


def _add_ranges(ranges: _Ranges, kind: str, events: list[Event], at: array[int]) -> None:
    """Complete ranges under their canonical kind (``operator``: ProfilerStep#N only)."""
    for event, position in zip(events, at, strict=True):
        if event.ph == "X" and (kind != STEP_OPERATOR or event.name.startswith("ProfilerStep#")):
            ranges.at.append(position)
            ranges.cat.append(kind)
            ranges.name.append(event.name)
            ranges.ts.append(bytes(event.ts))
            ranges.dur.append(bytes(event.dur) or b"0")
            ranges.device.append(event.pid if isinstance(event.pid, int) else -1)


def _counter_series(raws: list[msgspec.Raw], base_ns: int,
                    at: array[int]) -> tuple[tuple[MetricSeries, ...], int]:
    """``hardware_counters`` samples (one event per sample, metric -> value in its args)."""
    samples: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for raw, position in zip(raws, at, strict=True):
        try:
            event = decode_replacing(COUNTER_DECODER.decode, raw)
        except msgspec.ValidationError as exc:
            raise BadTrace(f"malformed hardware_counters sample at traceEvents[{position}] "
                           f"({exc}); {REEXPORT}") from None
        if not event.args:
            continue
        try:
            when = base_ns + us_text_to_ns(event.ts)
        except ValueError as exc:
            raise BadTrace(f"hardware_counters sample at traceEvents[{position}]: bad time "
                           f"({exc}); {REEXPORT}") from None
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
            raise BadTrace(f"hardware_counters metric {metric!r} has a non-finite value")
        interval = int(np.median(np.diff(ts))) if ts.size > 1 else 0
        intervals.append(interval)
        series.append(MetricSeries(name=metric, unit="pct" if "pct" in metric else "",
                                   source="pm_sampling", device=device, timestamps_ns=ts,
                                   values=values, interval_ns=interval or None))
    return tuple(series), (max(intervals) if intervals else 0)

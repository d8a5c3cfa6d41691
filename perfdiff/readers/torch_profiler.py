"""torch.profiler (Kineto) chrome traces -> a validated :class:`RunFile`.

Why a reader and not a second analysis path: once a trace is a run file, ``compare``,
``kernels``, ``merge`` and ``bench`` give a trace the same statistics and report as a perfdiff
recording, and ``perfdiff import`` can save the conversion.

Mapping (docs/reference/run-file.md has the table):
- ``ProfilerStep#N`` (``user_annotation`` on the CPU) -> cycle N. A GPU kernel, memcpy or
  memset belongs to the step in which its launch happened: the ``cuda_runtime``/``cuda_driver``
  event (or HIP's, same categories) with the same ``args.correlation``. GPU work runs behind
  the CPU, so cutting by the kernel's own time would split a step. ``--cycle-range NAME``
  takes ``user_annotation`` ranges of that name instead (or ``gpu_user_annotation`` ranges,
  whose kernels are those that start inside them on the same device). A trace with neither
  gets cycles where its kernel launch sequence repeats (``perfdiff.schema.periods``).
- Device = ``args.device`` (else ``pid``), stream = ``args.stream`` (else ``tid``).
- GPU and driver from ``deviceProperties`` and the top-level version keys; rank and world size
  from ``distributedInfo``; ``hardware_counters`` counter samples (``ph: "C"``) -> PM series.
- Times: ``ts``/``dur`` are microseconds, relative to ``baseTimeNanoseconds`` when the file
  has it, absolute otherwise. They are converted from the JSON text, not from a float: an
  absolute microsecond time with nanosecond decimals has 19 significant digits, which a float
  (15.9) cannot hold.

Why msgspec (bench/kineto, bench/README.md): it was the fastest decoder measured, and it can
leave each event a raw slice of the file: only an event's category is decoded, then only GPU,
launch and annotation events are decoded as typed structs (undeclared fields never built), so
CPU-side events (``cpu_op``, ``python_function``, flows) cost one short-lived slice each and
memory follows the GPU events.
"""

from __future__ import annotations

import gzip
import re
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from perfdiff import __version__
from perfdiff.errors import InputError
from perfdiff.schema.model import (
    Collection,
    CycleTable,
    DeviceInfo,
    Environment,
    IntArray,
    KernelName,
    KernelTable,
    MetricSeries,
    Run,
    RunFile,
    Status,
    TransferTable,
)
from perfdiff.schema.model import Workload as WorkloadInfo
from perfdiff.schema.periods import cycle_bounds_ns, detect_period
from perfdiff.schema.sense import check_run_file
from perfdiff.schema.versions import CURRENT_VERSION

SOURCE_NAME = "torch_profiler"  # Collection.sources entry that marks a converted trace
WORKLOAD_NAME = "torch.profiler trace"
STEP_PATTERN = re.compile(r"^ProfilerStep#(\d+)$")
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "hip_runtime", "hip_driver"})
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
RANGE_CATEGORIES = frozenset({"user_annotation", "gpu_user_annotation"})
COUNTER_CATEGORY = "hardware_counters"
_SNIFF_BYTES = 1 << 20  # how much of a (decompressed) file is looked at to tell its kind
_NS_PER_US = 1000
_MAX_WHOLE_US = (2**63 - 1) // _NS_PER_US - 1


class _Args(msgspec.Struct, gc=False):
    """The args perfdiff reads; any other key (Input Dims, Call stack, ...) is never built.

    Types are loose on purpose (a CPU event may carry a key of the same name with another
    type); a kept event's values are checked when its columns are built.
    """

    correlation: int | str | None = None
    device: int | str | None = None
    stream: int | str | None = None
    bytes: int | float | str | None = None
    grid: list[Any] | int | str | None = None
    block: list[Any] | int | str | None = None


class _Event(msgspec.Struct, gc=False):
    """One trace event, as little of it as the reader may need (the rest is never built)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: msgspec.Raw = msgspec.Raw(b"")
    args: _Args | None = None  # a non-object args fails the decode (one line)


class _Kind(msgspec.Struct, gc=False):
    """What decides whether an event is kept: its phase and category."""

    ph: str = ""
    cat: str = ""


class _Trace(msgspec.Struct, gc=False):
    """The top level of a Kineto trace: each event stays a raw slice of the file (no copy)
    until its category says it is needed; metadata keys stay raw until asked for."""

    traceEvents: list[msgspec.Raw]
    schemaVersion: msgspec.Raw = msgspec.Raw(b"")
    baseTimeNanoseconds: msgspec.Raw = msgspec.Raw(b"")
    deviceProperties: msgspec.Raw = msgspec.Raw(b"")
    distributedInfo: msgspec.Raw = msgspec.Raw(b"")
    cuda_driver_version: msgspec.Raw = msgspec.Raw(b"")
    cuda_runtime_version: msgspec.Raw = msgspec.Raw(b"")
    cupti_version: msgspec.Raw = msgspec.Raw(b"")
    host_name: msgspec.Raw = msgspec.Raw(b"")
    hostname: msgspec.Raw = msgspec.Raw(b"")


class _CounterEvent(msgspec.Struct, gc=False):
    """A ``hardware_counters`` sample: its args are metric -> value, so they stay a dict."""

    ph: str = ""
    cat: str = ""
    pid: int | str = 0
    ts: msgspec.Raw = msgspec.Raw(b"")
    args: dict[str, Any] | None = None


_TRACE_DECODER = msgspec.json.Decoder(_Trace)
_KIND_DECODER = msgspec.json.Decoder(_Kind)
_EVENT_DECODER = msgspec.json.Decoder(_Event)
_KEPT_CATEGORIES = GPU_CATEGORIES | LAUNCH_CATEGORIES | RANGE_CATEGORIES
_COUNTER_DECODER = msgspec.json.Decoder(_CounterEvent)
_ANY = msgspec.json.Decoder()


class _Bad(Exception):
    """Internal: the trace breaks a rule; the message says which (the caller adds the file)."""


# ----------------------------------------------------------------------------- timestamps


def us_text_to_ns(text: bytes | str | msgspec.Raw) -> int:
    """Microseconds as written in the JSON (``123``, ``123.456``, ``"123.4"``) -> integer ns.

    Exact for any number of digits (no float on the way); more than three decimals round half
    to even. Raises ValueError on anything that is not a finite number.
    """
    s = text if isinstance(text, str) else bytes(text).decode("ascii", "replace")
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1].strip()
    body = s[1:] if s[:1] in "+-" else s
    whole, dot, frac = body.partition(".")
    if whole.isdigit() and (not dot or frac.isdigit()) and len(frac) <= 3:
        ns = int(whole) * _NS_PER_US + (int(frac.ljust(3, "0")) if frac else 0)
        return -ns if s.startswith("-") else ns
    try:
        value = Decimal(s)
    except InvalidOperation:
        raise ValueError(f"not a number: {s[:40]!r}") from None
    if not value.is_finite():
        raise ValueError(f"not a finite number: {s[:40]!r}")
    return int((value * _NS_PER_US).to_integral_value(rounding=ROUND_HALF_EVEN))


def us_texts_to_ns(texts: Sequence[bytes]) -> IntArray:
    """:func:`us_text_to_ns` for many values at once (numpy string ops; odd ones one by one).

    Why: a trace holds tens of thousands of GPU and launch events; converting their times one
    Python call each was the reader's largest cost.
    """
    if not texts:
        return np.zeros(0, dtype=np.int64)
    arr = np.asarray(texts, dtype=np.bytes_)
    parts = np.char.partition(arr, b".")  # shape (n, 3): head, ".", tail
    head, tail = parts[:, 0], parts[:, 2]
    head_len = np.char.str_len(head)
    tail_len = np.char.str_len(tail)
    plain = (np.char.isdigit(head) & (head_len <= 18) & (tail_len <= 3)
             & (np.char.isdigit(tail) | (tail_len == 0)))
    whole = np.zeros(arr.shape[0], dtype=np.int64)
    whole[plain] = head[plain].astype(np.int64)
    plain &= whole <= _MAX_WHOLE_US  # larger ones would overflow int64 as ns
    out = np.empty(arr.shape[0], dtype=np.int64)
    if plain.any():
        frac = np.char.ljust(tail[plain], 3, b"0").astype("S3").astype(np.int64)
        out[plain] = whole[plain] * _NS_PER_US + frac
    for i in np.flatnonzero(~plain).tolist():
        value = us_text_to_ns(texts[i])
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"time out of range: {texts[i][:40]!r}")
        out[i] = value
    return out


# ----------------------------------------------------------------------------- detection


def _head(path: Path) -> bytes:
    """The first bytes of a file, decompressed when it is gzip (a damaged tail is fine here)."""
    with path.open("rb") as fh:
        data = fh.read(_SNIFF_BYTES)
    if data[:2] != b"\x1f\x8b":
        return data
    inflater = zlib.decompressobj(wbits=31)
    try:
        return inflater.decompress(data, _SNIFF_BYTES)
    except zlib.error:
        return b""


def is_trace_file(path: Path) -> bool:
    """Whether a file holds a Kineto trace (by its content: a ``traceEvents`` key)."""
    try:
        head = _head(path)
    except OSError:
        return False
    start = head.lstrip()[:1]
    if start != b"{":
        return False
    if b'"schema_version"' in head and b'"runs"' in head:  # a perfdiff run file
        return False
    return b'"traceEvents"' in head


def trace_files_in(folder: Path) -> list[Path]:
    """The Kineto traces directly in a folder (one per rank, as tensorboard_trace_handler)."""
    candidates = sorted(p for p in folder.iterdir() if p.is_file() and (
        p.name.endswith((".json", ".json.gz"))))
    return [p for p in candidates if is_trace_file(p)]


def is_torch_profiler_input(path: Path) -> bool:
    """A trace file, or a folder holding at least one trace file."""
    if path.is_dir():
        return bool(trace_files_in(path))
    return path.is_file() and is_trace_file(path)


# ----------------------------------------------------------------------------- reading


@dataclass
class _RankData:
    """What one trace file contributes: its run and its metadata."""

    run: Run
    names: list[str]
    devices: list[DeviceInfo]
    rank: int | None
    world_size: int | None
    schema_version: str
    driver_version: str | None
    cuda_version: str | None
    cupti_version: str | None
    host: str | None
    warnings: list[str] = field(default_factory=list)
    metric_names: list[str] = field(default_factory=list)
    sample_interval_ns: int = 0


def read_torch_profiler(paths: Sequence[str | Path], *, cycle_range: str | None = None) -> RunFile:
    """Read one or more traces (files or folders of per-rank files) into one run file.

    Several files are ranks of one job (or repeated runs): each becomes a run; when they carry
    ranks, devices are named by rank (GPU r for rank r), as ``perfdiff merge`` names shards.
    """
    files: list[Path] = []
    for raw_path in paths:
        p = Path(raw_path)
        if p.is_dir():
            found = trace_files_in(p)
            if not found:
                raise InputError(f"{p}: folder holds no torch.profiler trace (.json/.json.gz "
                                 "with 'traceEvents')")
            files.extend(found)
        else:
            files.append(p)
    if not files:
        raise InputError("no torch.profiler trace given")
    parts = [_read_one(p, cycle_range) for p in files]
    run_file = _assemble(parts, [str(p) for p in files], cycle_range)
    check_run_file(run_file, ", ".join(str(p) for p in files))  # the run-file rules, once
    return run_file


def _read_one(path: Path, cycle_range: str | None) -> _RankData:
    trace = _decode(path, _file_bytes(path))
    try:
        meta = _metadata(trace)
        events = trace.traceEvents
        # every raw slice (events and metadata) holds the whole decompressed file (35 MB for
        # 100k events): no slice but the events' may outlive this line, so that the file's
        # bytes are freed as soon as _convert has gone through them
        del trace
        return _convert(meta, events, cycle_range)
    except _Bad as exc:
        raise InputError(f"{path}: {exc}") from None


@dataclass(frozen=True)
class _Meta:
    """A trace's top-level keys, decoded (no raw slice of the file kept)."""

    base_ns: int
    devices: dict[int, DeviceInfo]
    rank: int | None
    world_size: int | None
    host: str | None
    schema_version: str
    driver_version: str | None
    cuda_version: str | None
    cupti_version: str | None


def _metadata(trace: _Trace) -> _Meta:
    base_text = _version_text(trace.baseTimeNanoseconds)
    try:
        base_ns = int(base_text) if base_text is not None else 0
    except ValueError:
        raise _Bad(f"baseTimeNanoseconds {base_text!r} is not an integer") from None
    rank, world = _distributed(trace.distributedInfo)
    return _Meta(
        base_ns=base_ns, devices=_device_properties(trace.deviceProperties), rank=rank,
        world_size=world,
        host=_version_text(trace.host_name) or _version_text(trace.hostname),
        schema_version=_version_text(trace.schemaVersion) or "unknown",
        driver_version=_cuda_version(trace.cuda_driver_version),
        cuda_version=_cuda_version(trace.cuda_runtime_version),
        cupti_version=_version_text(trace.cupti_version),
    )


def _file_bytes(path: Path) -> bytes:
    if not path.exists():
        raise InputError(f"{path}: no such file; check the path")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    if data[:2] == b"\x1f\x8b":
        try:
            data = _gunzip(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise InputError(f"{path}: gzip data is truncated or corrupt ({exc}); re-copy or "
                             "re-export the trace") from exc
    if not data or data.isspace():  # not data.strip(): that copies the whole file
        raise InputError(f"{path}: file is empty")
    return data


def _decode(path: Path, data: bytes) -> _Trace:
    try:
        return _TRACE_DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise InputError(f"{path}: not a torch.profiler trace as expected ({exc})") from None
    except msgspec.DecodeError as exc:
        hint = "file is truncated" if "truncated" in str(exc) else "not valid JSON"
        raise InputError(f"{path}: {hint} ({exc}); re-copy or re-export the trace") from None


def _gunzip(data: bytes) -> bytes:
    """Inflate into one buffer of the size the gzip trailer announces (peak memory: the output
    once, not the output plus its growing copies); anything unusual goes to gzip.decompress."""
    announced = int.from_bytes(data[-4:], "little") if len(data) >= 18 else 0
    if announced:
        try:
            out = zlib.decompress(data, wbits=31, bufsize=announced)
        except zlib.error:
            return gzip.decompress(data)
        if len(out) == announced:
            return out
    return gzip.decompress(data)


def _raw_json(raw: msgspec.Raw) -> Any:
    return _ANY.decode(raw) if len(raw) else None


def _version_text(raw: msgspec.Raw) -> str | None:
    value = _raw_json(raw)
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)


def _cuda_version(raw: msgspec.Raw) -> str | None:
    """Kineto writes CUDA versions as 1000*major + 10*minor (12040 -> "12.4")."""
    text = _version_text(raw)
    if text is None or not text.isdigit():
        return text
    number = int(text)
    return f"{number // 1000}.{(number % 1000) // 10}"


def _device_properties(raw: msgspec.Raw) -> dict[int, DeviceInfo]:
    value = _raw_json(raw)
    out: dict[int, DeviceInfo] = {}
    if not isinstance(value, list):
        return out
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
            continue
        major, minor = entry.get("computeMajor"), entry.get("computeMinor")
        out[entry["id"]] = DeviceInfo(
            index=entry["id"],
            name=str(entry.get("name", "unknown GPU")),
            uuid="",
            sm_count=int(entry.get("numSms", 0) or 0),
            memory_bytes=int(entry.get("totalGlobalMem", 0) or 0),
            compute_capability=f"{major}.{minor}" if major is not None else None,
        )
    return out


def _distributed(raw: msgspec.Raw) -> tuple[int | None, int | None]:
    value = _raw_json(raw)
    if not isinstance(value, dict):
        return None, None
    rank, world = value.get("rank"), value.get("world_size")
    return (rank if isinstance(rank, int) and rank >= 0 else None,
            world if isinstance(world, int) and world > 0 else None)


def _kept_events(raws: list[msgspec.Raw], counted: dict[tuple[str, str], int],
                 counters: list[msgspec.Raw]) -> Iterator[_Event]:
    """The GPU, launch and annotation events, decoded; every other event is looked at only
    for its category and phase, which ``counted`` tallies (CPU ops, Python functions and
    flows are most of a trace); ``hardware_counters`` samples go to ``counters`` as they are."""
    kind_of = _KIND_DECODER.decode
    event_of = _EVENT_DECODER.decode
    # popped from the end, each slice is freed once looked at (``raws`` ends empty): the
    # memory the kept events take is what the slices gave back, not more on top
    raws.reverse()
    try:
        while raws:
            raw = raws.pop()
            kind = kind_of(raw)
            if kind.cat in _KEPT_CATEGORIES:
                yield event_of(raw)
            else:
                key = (kind.cat, kind.ph)
                counted[key] = counted.get(key, 0) + 1
                if key == (COUNTER_CATEGORY, "C"):
                    counters.append(raw)
    except msgspec.ValidationError as exc:
        raise _Bad(f"malformed trace event ({exc})") from None


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


def _convert(meta: _Meta, events: list[msgspec.Raw], cycle_range: str | None) -> _RankData:
    base_ns = meta.base_ns
    gathered = _gather(events, base_ns)
    kernels, copies, sets = gathered.kernels, gathered.copies, gathered.sets
    ranges, cpu_pids = gathered.ranges, gathered.cpu_pids
    launch_corr, launch_ts = gathered.launch_corr, gathered.launch_ts
    profiler_ranges = gathered.profiler_ranges
    metrics, interval = gathered.metrics, gathered.sample_interval_ns
    if not kernels.name and not copies.name and not sets.name:
        if profiler_ranges:
            raise _Bad(f"no GPU kernels, only {profiler_ranges} cuda_profiler_range events "
                       "(the CUPTI range profiler's counters, without kernel records); record "
                       "with ProfilerActivity.CUDA to get kernels")
        raise _Bad("no GPU events (kernels, memcpy, memset): a CPU-only trace; record with "
                   "torch.profiler.ProfilerActivity.CUDA on a GPU")
    gpu_spans = [cols.spans(base_ns) for cols in (kernels, copies, sets)]  # checked first
    try:
        launch_ns = us_texts_to_ns(launch_ts) + base_ns
    except ValueError as exc:
        raise _Bad(f"launch event with a bad time ({exc})") from None
    launches = dict(zip(launch_corr, launch_ns.tolist(), strict=True))
    names = sorted(set(kernels.name))
    warnings: list[str] = []
    range_start, range_end = _spans(ranges.ts, ranges.dur, base_ns, "annotation range")
    range_rows = list(zip(ranges.cat, ranges.name, range_start.tolist(), range_end.tolist(),
                          ranges.device, strict=True))
    if cycle_range is None and not any(STEP_PATTERN.match(name) for name in ranges.name):
        spans, mode = _detected_cycles(kernels, names, launches, range_rows, warnings)
    else:
        spans, mode = _cycles(range_rows, cycle_range, warnings)
    run = _build_run(kernels, copies, sets, gpu_spans, names, spans, mode, launches, warnings,
                     cpu_pids)
    if metrics:
        run = replace(run, metrics=metrics)
    used = sorted(set(kernels.device) | set(copies.device) | set(sets.device))
    unknown = DeviceInfo(index=-1, name="unknown GPU", uuid="", sm_count=0, memory_bytes=0)
    devices = [replace(meta.devices.get(d, unknown), index=d) for d in used]
    run = replace(run, rank=meta.rank)
    return _RankData(
        run=run, names=names, devices=devices, rank=meta.rank, world_size=meta.world_size,
        schema_version=meta.schema_version, driver_version=meta.driver_version,
        cuda_version=meta.cuda_version, cupti_version=meta.cupti_version, host=meta.host,
        warnings=warnings, metric_names=sorted({m.name for m in metrics}),
        sample_interval_ns=interval,
    )


@dataclass(frozen=True)
class _CycleSpans:
    index: list[int]
    start: list[int]
    end: list[int]
    label: str
    by_gpu_time: bool  # gpu_user_annotation ranges: kernels by their own start time
    device: list[int]


def _cycles(ranges: list[tuple[str, str, int, int, int]], cycle_range: str | None,
            warnings: list[str]) -> tuple[_CycleSpans, str]:
    """The cycles (spans) and how work is assigned to them ("launch" or "gpu")."""
    if cycle_range is None:
        steps = sorted((int(m.group(1)), start, end) for cat, name, start, end, _ in ranges
                       if cat == "user_annotation" and (m := STEP_PATTERN.match(name)))
        if not steps:
            raise _Bad("no ProfilerStep#N ranges (call prof.step() each iteration under a "
                       "torch.profiler schedule), so there are no cycles; pass --cycle-range "
                       "NAME to take a user_annotation/record_function range as the cycle"
                       + _range_hint(ranges))
        steps = _unique_steps(steps, warnings)
        return _CycleSpans([s[0] for s in steps], [s[1] for s in steps], [s[2] for s in steps],
                           "ProfilerStep", False, []), "launch"
    cpu = sorted((start, end) for cat, name, start, end, _ in ranges
                 if cat == "user_annotation" and name == cycle_range)
    if cpu:
        return _CycleSpans(list(range(len(cpu))), [s for s, _ in cpu], [e for _, e in cpu],
                           cycle_range, False, []), "launch"
    gpu = sorted((start, end, dev) for cat, name, start, end, dev in ranges
                 if cat == "gpu_user_annotation" and name == cycle_range)
    if gpu:
        return _CycleSpans(list(range(len(gpu))), [g[0] for g in gpu], [g[1] for g in gpu],
                           cycle_range, True, [g[2] for g in gpu]), "gpu"
    raise _Bad(f"no user_annotation or gpu_user_annotation range named {cycle_range!r}"
               + _range_hint(ranges))


def _range_hint(ranges: list[tuple[str, str, int, int, int]]) -> str:
    """The most frequent range names of the trace, for the one-line error."""
    counts: dict[str, int] = {}
    for _, name, *_ in ranges:
        if not STEP_PATTERN.match(name):
            counts[name] = counts.get(name, 0) + 1
    names = sorted(counts, key=lambda n: (-counts[n], n))[:5]
    if not names:
        return ""
    return " (ranges in this trace, most frequent first: " + ", ".join(
        f"{n[:60]!r} x{counts[n]}" for n in names) + ")"


def _detected_cycles(kernels: _Columns, names: list[str], launches: dict[int, int],
                     ranges: list[tuple[str, str, int, int, int]],
                     warnings: list[str]) -> tuple[_CycleSpans, str]:
    """No ProfilerStep and no --cycle-range: cycles where the kernel launch sequence repeats
    (perfdiff.schema.periods, the rule perfdiff collect uses for unmarked programs)."""
    name_ids = {name: i for i, name in enumerate(names)}
    launch_ns = _launch_times(kernels.correlation, launches)
    known = launch_ns != _NO_LAUNCH
    order = np.argsort(launch_ns[known], kind="stable")
    ids = np.asarray([name_ids[n] for n in kernels.name], dtype=np.int64)[known][order]
    times = launch_ns[known][order]
    period = detect_period(ids, times)
    if not period.found:
        raise _Bad("no ProfilerStep#N ranges and " + period.describe() + "; pass "
                   "--cycle-range NAME to take a user_annotation/record_function range as "
                   "the cycle" + _range_hint(ranges))
    start, end = cycle_bounds_ns(period, times)
    warnings.append(f"no ProfilerStep#N in the trace: cycles from the launch sequence, "
                    f"{period.describe()}")
    n = int(start.size)
    return _CycleSpans(list(range(n)), start.tolist(), end.tolist(), "detected period",
                       False, []), "launch"


def _unique_steps(steps: list[tuple[int, int, int]],
                  warnings: list[str]) -> list[tuple[int, int, int]]:
    """One span per step number (a step seen twice, e.g. two profilers: the first kept)."""
    seen: dict[int, tuple[int, int, int]] = {}
    for step in steps:
        seen.setdefault(step[0], step)
    if len(seen) != len(steps):
        warnings.append(f"{len(steps) - len(seen)} ProfilerStep ranges repeat a step number; "
                        "the first of each was kept")
    return sorted(seen.values(), key=lambda s: s[1])


def _assign(spans: _CycleSpans, times: np.ndarray, devices: np.ndarray) -> np.ndarray:
    """Cycle index of each time (its launch, or its GPU start for GPU ranges), -1 outside."""
    if not spans.index or times.size == 0:
        return np.full(times.shape, -1, dtype=np.int64)
    start = np.asarray(spans.start, dtype=np.int64)
    end = np.asarray(spans.end, dtype=np.int64)
    index = np.asarray(spans.index, dtype=np.int64)
    if spans.by_gpu_time:
        out = np.full(times.shape, -1, dtype=np.int64)
        for i, (s, e, d) in enumerate(zip(spans.start, spans.end, spans.device, strict=True)):
            inside = (times >= s) & (times <= e) & (devices == d) & (out < 0)
            out[inside] = index[i]
        return out
    order = np.argsort(start, kind="stable")
    start, end, index = start[order], end[order], index[order]
    pos = np.searchsorted(start, times, side="right") - 1
    valid = (pos >= 0) & (times != _NO_LAUNCH)
    clipped = np.clip(pos, 0, None)
    inside = valid & (times < end[clipped])  # [start, end): as HTA assigns iterations
    return np.where(inside, index[clipped], -1).astype(np.int64)


_NO_LAUNCH = np.iinfo(np.int64).min  # a GPU event whose launch is not in the trace


def _launch_times(correlation: list[int], launches: dict[int, int]) -> IntArray:
    return np.fromiter((launches.get(c, _NO_LAUNCH) for c in correlation), dtype=np.int64,
                       count=len(correlation))


def _build_run(kernels: _Columns, copies: _Columns, sets: _Columns,
               gpu_spans: list[tuple[IntArray, IntArray]], names: list[str],
               spans: _CycleSpans, mode: str, launches: dict[int, int],
               warnings: list[str], cpu_pids: dict[int, int]) -> Run:
    name_ids = {name: i for i, name in enumerate(names)}
    tables: list[tuple[_Columns, IntArray, IntArray, IntArray, IntArray]] = []
    unmatched_total = 0
    for cols, (start, end) in zip((kernels, copies, sets), gpu_spans, strict=True):
        devices = np.asarray(cols.device, dtype=np.int64)
        if mode == "gpu":
            when = start
        else:
            when = _launch_times(cols.correlation, launches)
            unmatched_total += int((when == _NO_LAUNCH).sum())
        tables.append((cols, devices, start, end, _assign(spans, when, devices)))
    total = len(kernels.name) + len(copies.name) + len(sets.name)
    if mode == "launch" and unmatched_total:
        if unmatched_total == total:
            raise _Bad(f"none of the {total} GPU events has a matching launch (cuda_runtime/"
                       "cuda_driver event with the same correlation), so no step can be "
                       "told; record with ProfilerActivity.CPU as well as CUDA")
        warnings.append(f"{unmatched_total} of {total} GPU events have no matching launch "
                        "(correlation) and are outside every step")
    k, k_dev, k_start, k_end, k_cycle = tables[0]
    grid = np.asarray(k.grid, dtype=np.int64).reshape(-1, 3)
    block = np.asarray(k.block, dtype=np.int64).reshape(-1, 3)
    kernel_table = KernelTable(
        name_id=np.asarray([name_ids[n] for n in k.name], dtype=np.int64),
        device=k_dev, stream=np.asarray(k.stream, dtype=np.int64),
        start_ns=k_start, end_ns=k_end,
        cycle=k_cycle, correlation_id=np.asarray(k.correlation, dtype=np.int64),
        grid_x=grid[:, 0], grid_y=grid[:, 1], grid_z=grid[:, 2],
        block_x=block[:, 0], block_y=block[:, 1], block_z=block[:, 2],
    )
    n = len(spans.index)
    cycle_table = CycleTable(
        index=np.asarray(spans.index, dtype=np.int64),
        start_ns=np.asarray(spans.start, dtype=np.int64),
        end_ns=np.asarray(spans.end, dtype=np.int64),
        label=(spans.label,) * n,
        warmup=np.zeros(n, dtype=np.bool_),
    )
    pid = max(cpu_pids, key=lambda p: cpu_pids[p]) if cpu_pids else 0
    return Run(index=0, pid=pid, rank=None, exit_code=None, cycles=cycle_table,
               kernels=kernel_table, memcpy=_transfers(tables[1], _copy_kind),
               memset=_transfers(tables[2], lambda _name: "memset"), metrics=())


def _copy_kind(name: str) -> str:
    """"Memcpy DtoD (Device -> Device)" -> "DtoD" (the kind perfdiff's collector writes)."""
    parts = name.split()
    return parts[1] if len(parts) > 1 and parts[0].lower() == "memcpy" else name


def _transfers(table: tuple[_Columns, IntArray, IntArray, IntArray, IntArray],
               kind: Callable[[str], str]) -> TransferTable:
    cols, devices, start, end, cycle = table
    return TransferTable(
        kind=tuple(kind(n) for n in cols.name),
        bytes=np.asarray(cols.nbytes, dtype=np.int64), device=devices,
        stream=np.asarray(cols.stream, dtype=np.int64),
        start_ns=start, end_ns=end, cycle=cycle,
    )


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


# ----------------------------------------------------------------------------- assembling


def _assemble(parts: list[_RankData], sources: list[str], cycle_range: str | None) -> RunFile:
    names: list[str] = sorted({n for part in parts for n in part.names})
    ids = {n: i for i, n in enumerate(names)}
    ranked = len(parts) > 1 and all(part.rank is not None for part in parts)
    if len(parts) > 1 and not ranked:
        raise InputError(f"{len(parts)} traces given but not every one has a "
                         "distributedInfo rank; give the ranks of one job, or compare the "
                         f"traces one by one ({', '.join(sources)})")
    if ranked and len({part.rank for part in parts}) != len(parts):
        raise InputError("two of the traces have the same distributedInfo rank; give each "
                         f"rank once ({', '.join(sources)})")
    runs: list[Run] = []
    devices: dict[int, DeviceInfo] = {}
    rank_notes: list[str] = []
    for part in sorted(parts, key=lambda p: -1 if p.rank is None else p.rank):
        run = _renamed(part.run, part.names, ids)
        if ranked:
            assert part.rank is not None
            run = _on_device(run, part.rank)
            for dev in part.devices[:1]:
                devices.setdefault(part.rank, replace(dev, index=part.rank))
            if part.rank is not None:
                rank_notes.append(f"rank {part.rank}: GPU {part.rank}")
        else:
            # one trace: its devices become GPU 0..n-1, so that rank 3's cuda:3 lines up with
            # rank 1's cuda:1 of another trace (HTA likewise compares "the first rank")
            in_trace = [d.index for d in part.devices]
            run = _devices_renumbered(run, in_trace)
            for new_index, dev in enumerate(part.devices):
                devices.setdefault(new_index, replace(dev, index=new_index))
            shown = ", ".join(f"GPU {i} (cuda:{d} in the trace)" for i, d in enumerate(in_trace))
            if part.rank is not None:
                rank_notes.append(f"rank {part.rank}: {shown}")
            elif in_trace != list(range(len(in_trace))):
                rank_notes.append(shown)
        runs.append(run)
    first = parts[0]
    warnings = [w for part in parts for w in part.warnings]
    intervals = {part.sample_interval_ns for part in parts}
    params: dict[str, Any] = {
        "source_format": "torch.profiler (Kineto chrome trace)",
        "source_files": sources,
        "kineto_schema_version": sorted({part.schema_version for part in parts}),
        "cycles_from": cycle_range or "ProfilerStep#N",
        "ranks": rank_notes,
    }
    worlds = sorted({part.world_size for part in parts if part.world_size is not None})
    if worlds:
        params["world_size"] = worlds[0]
    return RunFile(
        schema_version=CURRENT_VERSION,
        tool_version=__version__,
        status=Status("complete"),
        environment=Environment(
            host=first.host or "n/a", driver_version=first.driver_version,
            cuda_version=first.cuda_version, cupti_version=first.cupti_version,
            torch_version=None, python_version="n/a",
            devices=tuple(devices[i] for i in sorted(devices)),
        ),
        collection=Collection(
            metrics=tuple(dict.fromkeys(m for part in parts for m in part.metric_names)),
            sample_interval_ns=max(intervals), sources=(SOURCE_NAME,),
            warnings=tuple(dict.fromkeys(warnings)),
        ),
        workload=WorkloadInfo(name=WORKLOAD_NAME, params=params),
        strings=tuple(KernelName(mangled=n, demangled=n) for n in names),
        runs=tuple(runs),
        created_unix_s=None,
    )


def _renamed(run: Run, local: list[str], ids: dict[str, int]) -> Run:
    remap = np.asarray([ids[n] for n in local], dtype=np.int64)
    k = run.kernels
    if k.name_id.size:
        k = replace(k, name_id=remap[k.name_id])
    return replace(run, kernels=k)


def _devices_renumbered(run: Run, in_trace: list[int]) -> Run:
    """Device ids of the trace -> their position in ``in_trace`` (sorted ids)."""
    order = np.asarray(in_trace, dtype=np.int64)

    def moved(table: Any) -> Any:
        return replace(table, device=np.searchsorted(order, table.device).astype(np.int64))

    position = {d: i for i, d in enumerate(in_trace)}
    return replace(run, kernels=moved(run.kernels), memcpy=moved(run.memcpy),
                   memset=moved(run.memset),
                   metrics=tuple(replace(m, device=position.get(m.device, m.device))
                                 for m in run.metrics))


def _on_device(run: Run, device: int) -> Run:
    def moved(table: Any) -> Any:
        return replace(table, device=np.full_like(table.device, device))

    return replace(run, kernels=moved(run.kernels), memcpy=moved(run.memcpy),
                   memset=moved(run.memset),
                   metrics=tuple(replace(m, device=device) for m in run.metrics))


__all__ = [
    "SOURCE_NAME",
    "WORKLOAD_NAME",
    "is_torch_profiler_input",
    "is_trace_file",
    "read_torch_profiler",
    "trace_files_in",
    "us_text_to_ns",
]

"""Physical sense of a run file, checked once where it is read.

Why at the edge: a file whose cycles end before they start, whose kernels last eleven days or
point at a cycle that does not exist, used to flow through the statistics and come out as a
confident verdict ("-658,968,213 %, p < 0.001, slower"). Nothing downstream re-checks; so the
reader refuses such a file with one line naming the file, the first offending record and what
to do, and no report is ever computed from impossible records.

The rules (each a property the collector guarantees, so a violation means the file was damaged,
edited or written by something else):

- times are non-negative; every cycle, kernel, memcpy and memset ends at or after its start;
- a record lasts no longer than the run's cycles span plus :data:`QUEUE_SLACK_NS`, and one
  launched in a cycle ends no later than that after the last cycle: GPU work runs
  asynchronously and may finish after its cycle (a program that never synchronises), but the
  launch queue holds at most about a thousand launches, not days of work;
- a record's cycle is -1 (outside any cycle) or one of the run's cycle indexes; cycle indexes
  are unique;
- a record's device is one of the environment's devices (when the file lists any);
- metric values are finite or NaN (a missing sample), never infinite, and below
  :data:`METRIC_LIMIT` in size (no unit recorded reaches it: GPU memory in bytes is ~1e11); a
  bitmask is a whole number that fits 53 bits; metric timestamps are non-negative, in order,
  and end no later than the records may (NVML keeps polling ~2 s after the last cycle);
- (issue 25) a percentage (unit ``pct``: NVML utilisation, PM-sampled pct_of_peak, Kineto
  ``hardware_counters`` named ``*pct*``) lies in 0 to :data:`PCT_HIGH` (5,000 %, 1e14 % and
  -50 % were printed as means and ranked first);
- (issue 25) a run's cycles (except annotation ranges a user chose with ``--cycle-range``,
  which real traces nest) do not overlap one another by more than
  :data:`OVERLAP_TOLERANCE_NS` and none lasts longer than :data:`CYCLE_LIMIT_NS` (overlapping
  ``ProfilerStep``s turned "+99.8 % slower" into "-33.4 % faster"; a cycle of 10^17 ns gave a
  cycle time of -99.99999 %);
- (issue 25) kernels on one stream of one device run one after another: no record twice (the
  same stream, correlation id, start and end) and no two launches overlapping by more than
  :data:`OVERLAP_TOLERANCE_NS`. Kernels of one launch (one correlation id > 0: a CUDA graph's
  kernels, which CUPTI and Kineto report on the stream the graph was launched into) may run
  concurrently and are exempt; so are kernels with no correlation id (0 or negative).
  Measured on every fixture and shared trace (bench/README.md, 2026-11-28): the largest
  overlap of different launches is 256 ns (fixtures/kineto/kineto-train-normal, clock
  conversion); HTA's trace_diff/test.json.gz has graph kernels overlapping by up to 13 us;
- (issue 25) kernels of one launch (one correlation id > 0) lie in one cycle, where cycles
  hold what was launched in them (perfdiff's collector and the Nsight Systems reader give each
  kernel the cycle of its launch): a kernel given another launch's correlation id is damage.
  Only a CUDA/HIP graph replays several kernels under one id (fixtures/cuda_graph: 71 launches
  of 32 kernels, each launch in one cycle). Not for torch.profiler traces: cycles cut by GPU
  time may split a replay, and the trace reader checks the launch call instead
  (perfdiff.readers.torch_profiler.launches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfdiff.errors import InputError
from perfdiff.schema.model import (
    IntArray,
    KernelTable,
    MetricSeries,
    Run,
    RunFile,
    TransferTable,
)

# How long GPU work may outlast the cycles that launched it (queued behind the last cycle);
# generous on purpose: it separates a busy queue from a timestamp that is days or years off.
QUEUE_SLACK_NS = 60 * 1_000_000_000
METRIC_LIMIT = 1e15
BITMASK_LIMIT = 2.0**53
PCT_HIGH = 105.0  # a percentage of a peak; a little above 100 for sampling at clock changes
# Old Kineto writes whole microseconds: an end rounded up and the next start rounded down
# overlap by up to 1 us; the largest overlap seen in a real recording is 256 ns.
OVERLAP_TOLERANCE_NS = 1_000
TRACE_WORKLOAD = "torch.profiler trace"  # the trace reader's workload name
CYCLE_LIMIT_NS = 10**14  # 28 hours: no traced iteration lasts longer; 10^17 ns is 3 years
FIX = "the file is damaged or was not written by perfdiff; re-record the run or re-copy the file"


@dataclass(frozen=True)
class Where:
    """Where a table sits, for the error line; for a run converted from another format, the
    source record of each row (a trace's ``traceEvents`` index), so that the line names what
    the user can find in the file they have."""

    text: str  # "FILE: runs[0].kernels"
    events: Sequence[int] | None = None

    def row(self, n: int) -> str:
        if self.events is not None and 0 <= n < len(self.events):
            return f"{self.text} row {n} (traceEvents[{self.events[n]}]):"
        return f"{self.text} row {n}:"

    def __str__(self) -> str:
        return self.text


def check_run_file(run_file: RunFile, source: str, *,
                   events: Mapping[tuple[int, str], Sequence[int]] | None = None,
                   fix: str = FIX) -> None:
    """Raise :class:`InputError` (one line) at the first physically impossible record.

    ``events``: (run position, table name) -> the source record of each row, for a reader of
    another format; ``fix``: what to do, in that format's words."""
    devices = {d.index for d in run_file.environment.devices}
    try:
        for position, run in enumerate(run_file.runs):
            where = f"{source}: runs[{position}]"
            rows = {name: (events or {}).get((position, name))
                    for name in ("kernels", "memcpy", "memset")}
            _check_run(run, where, devices, run_file, rows)
    except InputError as exc:
        if fix == FIX:
            raise
        raise InputError(str(exc).replace(FIX, fix)) from None


def _refuse(where: str, what: str) -> InputError:
    return InputError(f"{where} {what}; {FIX}")


def _check_run(run: Run, where: str, devices: set[int], run_file: RunFile,
               rows: Mapping[str, Sequence[int] | None]) -> None:
    cycles = run.cycles
    if cycles.index.size != np.unique(cycles.index).size:
        raise _refuse(f"{where}.cycles:", "has the same cycle index twice")
    _check_interval(Where(f"{where}.cycles"), "cycle", cycles.start_ns, cycles.end_ns,
                    cycles.index)
    if not _cycles_are_user_ranges(run_file):
        check_cycle_overlap(f"{where}.cycles", cycles.start_ns, cycles.end_ns, cycles.index)
    span = int(cycles.end_ns.max() - cycles.start_ns.min()) if cycles.index.size else 0
    last_end = int(cycles.end_ns.max()) if cycles.index.size else 0
    tables: tuple[tuple[str, KernelTable | TransferTable], ...] = (
        ("kernels", run.kernels), ("memcpy", run.memcpy), ("memset", run.memset))
    for name, table in tables:
        label = Where(f"{where}.{name}", rows.get(name))
        _check_interval(label, "record", table.start_ns, table.end_ns, None)
        _check_cycles(label, table.cycle, cycles.index)
        _check_span(label, table, span, last_end)
        if devices:
            _check_devices(label, table.device, devices)
        if name == "kernels":
            assert isinstance(table, KernelTable)
            if table.name_id.size and (table.name_id.min() < 0
                                       or table.name_id.max() >= len(run_file.strings)):
                raise _refuse(f"{label}:", "names a kernel outside the string table")
            _check_op_ids(label, table, len(run_file.ops))
    kernels = Where(f"{where}.kernels", rows.get("kernels"))
    check_stream_overlap(kernels, run.kernels)  # after the plainer faults above
    if run_file.workload.name != TRACE_WORKLOAD:
        check_one_cycle_per_launch(kernels, run.kernels)
    for k, metric in enumerate(run.metrics):
        label = Where(f"{where}.metrics[{k}] ({metric.name})")
        _check_metric(label, metric, span, last_end if cycles.index.size else None)
        if devices and metric.device >= 0 and metric.device not in devices:
            raise _refuse(f"{label}:", f"is on device {metric.device}, which the environment "
                          f"does not list (devices {sorted(devices)})")


def _check_op_ids(label: Where, table: KernelTable, n_ops: int) -> None:
    """A kernel's op and module (-1: unknown) point into the run file's ops table."""
    for column in ("op_id", "module_id"):
        ids = getattr(table, column)
        if ids is None:
            continue
        if ids.shape != table.name_id.shape:
            raise _refuse(f"{label}:", f"has {ids.size} {column} values for "
                          f"{table.name_id.size} kernels")
        if ids.size and (ids.min() < -1 or ids.max() >= n_ops):
            raise _refuse(f"{label}:", f"has a {column} outside the ops table")


def _check_metric(label: Where, metric: MetricSeries, span: int, last_end: int | None) -> None:
    values, stamps = metric.values, metric.timestamps_ns
    with np.errstate(invalid="ignore"):
        wrong = ~np.isnan(values) & ~(np.abs(values) < METRIC_LIMIT)
        if metric.unit == "bitmask":
            wrong |= ~np.isnan(values) & ((values < 0) | (values >= BITMASK_LIMIT)
                                          | (values != np.round(values)))
        if metric.unit == "pct":
            wrong |= (values < 0) | (values > PCT_HIGH)
    if wrong.any():
        row = int(wrong.argmax())
        raise _refuse(label.row(row), f"value {values[row]} is not a possible "
                      f"{metric.unit} reading")
    if not stamps.size:
        return
    if stamps.min() < 0:
        row = int((stamps < 0).argmax())
        raise _refuse(label.row(row), "has a negative timestamp")
    backwards = np.diff(stamps) < 0
    if backwards.any():
        row = int(backwards.argmax()) + 1
        raise _refuse(label.row(row), "has a timestamp earlier than the one before")
    if last_end is not None and stamps[-1] > last_end + span + QUEUE_SLACK_NS:
        raise _refuse(label.row(stamps.size - 1), f"is sampled at {stamps[-1]} ns, "
                      f"beyond the run (its cycles end at {last_end} ns)")


def _check_interval(label: Where, kind: str, start: np.ndarray, end: np.ndarray,
                    index: np.ndarray | None) -> None:
    if not start.size:
        return
    negative = start < 0
    if negative.any():
        row = int(negative.argmax())
        raise _refuse(label.row(row), f"starts at a negative time ({start[row]} ns)")
    backwards = end < start
    if kind == "cycle":  # a cycle of no time holds nothing and divides by zero (issue 25)
        backwards = end <= start
    if backwards.any():
        row = int(backwards.argmax())
        name = f"{kind} {index[row]}" if index is not None else kind
        if end[row] == start[row]:
            raise _refuse(label.row(row), f"{name} lasts 0 ns (it starts and ends at "
                          f"{start[row]} ns)")
        raise _refuse(label.row(row), f"{name} ends before it starts (end {end[row]} < "
                      f"start {start[row]} ns)")


def _cycles_are_user_ranges(run_file: RunFile) -> bool:
    """Cycles a user chose as a trace's annotation ranges (``import --cycle-range NAME``) may
    overlap: the same range on two threads, or nested (HTA's critical_path/alexnet trace has
    two forward ranges 36 ms into each other). ProfilerStep#N, perfdiff's own cycle marks and
    detected periods never do."""
    params = run_file.workload.params
    return run_file.workload.name == TRACE_WORKLOAD and \
        params.get("cycles_from", "ProfilerStep#N") != "ProfilerStep#N"


def check_cycle_overlap(where: str | Where, start: np.ndarray, end: np.ndarray,
                        index: np.ndarray) -> None:
    """Cycles of one run follow one another; none lasts longer than :data:`CYCLE_LIMIT_NS`."""
    label = where if isinstance(where, Where) else Where(where)
    if not start.size:
        return
    long = (end - start) > CYCLE_LIMIT_NS
    if long.any():
        row = int(long.argmax())
        raise _refuse(label.row(row), f"cycle {index[row]} lasts {end[row] - start[row]} "
                      f"ns, more than {CYCLE_LIMIT_NS:.0e} ns (28 hours)")
    order = np.argsort(start, kind="stable")
    ends = np.maximum.accumulate(end[order])
    overlap = ends[:-1] - start[order][1:]
    if overlap.size and overlap.max() > OVERLAP_TOLERANCE_NS:
        row = int(order[int(overlap.argmax()) + 1])
        raise _refuse(label.row(row), f"cycle {index[row]} starts {int(overlap.max())} ns "
                      "before an earlier cycle ends (cycles of one run cannot overlap)")


def stream_neighbours(device: IntArray, stream: IntArray, start: IntArray, end: IntArray
                      ) -> tuple[IntArray | None, IntArray, IntArray, IntArray, IntArray,
                                 np.ndarray, IntArray]:
    """Kernels in (device, stream, start) order, for the rules on consecutive kernels of one
    stream (this check, and the trace reader's correction of Kineto's small overlaps): the
    order (None where the table is in it already: no column is copied), start, end, device
    and stream in that order, whether each consecutive pair shares a stream, and each pair's
    overlap (the first's end minus the second's start)."""
    sort = np.lexsort((start, stream, device))
    order: IntArray | None = None if bool(np.all(np.diff(sort) == 1)) else sort

    def take(column: IntArray) -> IntArray:
        return column if order is None else column[order]

    s, e, dev, st = take(start), take(end), take(device), take(stream)
    same_stream = (dev[1:] == dev[:-1]) & (st[1:] == st[:-1])
    return order, s, e, dev, st, same_stream, e[:-1] - s[1:]


def check_stream_overlap(where: str | Where, table: KernelTable) -> None:
    """Kernels of different launches on one stream do not overlap (see the module docstring).

    Consecutive kernels (by start, per stream) are compared: when two launches overlap, some
    consecutive pair does. One stable sort of all kernels; no copy of a column when the table
    is in stream order already (a run file of one stream, as perfdiff writes many), and the
    rarer tests (same record twice, same launch) only on the few pairs that overlap at all:
    0.02 s per million kernels (bench/README.md)."""
    label = where if isinstance(where, Where) else Where(where)
    if table.start_ns.size < 2:
        return
    order, s, e, dev, stream, same_stream, overlap = stream_neighbours(
        table.device, table.stream, table.start_ns, table.end_ns)
    # a duplicate starts with its twin (overlap >= 0, maybe within the tolerance)
    pairs = np.flatnonzero(same_stream & ((overlap > OVERLAP_TOLERANCE_NS) | (s[1:] == s[:-1])))
    if not pairs.size:
        return
    rows = pairs if order is None else order[pairs]
    nexts = pairs + 1 if order is None else order[pairs + 1]
    corr, names = table.correlation_id, table.name_id
    one_launch = (corr[nexts] == corr[rows]) & (corr[nexts] > 0)
    twice = (s[pairs + 1] == s[pairs]) & (e[pairs + 1] == e[pairs]) & \
        (corr[nexts] == corr[rows]) & (names[nexts] == names[rows])
    if twice.any():
        raise _refuse(label.row(int(nexts[int(twice.argmax())])), "is the same kernel "
                      "record as another (same stream, correlation id, start and end): the "
                      "records were duplicated")
    beyond = (overlap[pairs] > OVERLAP_TOLERANCE_NS) & ~one_launch
    if beyond.any():
        at = int(pairs[int(beyond.argmax())])
        row = int(nexts[int(beyond.argmax())])
        raise _refuse(label.row(row), f"starts {int(overlap[at])} ns before the previous "
                      f"kernel on device {dev[at + 1]} stream {stream[at + 1]} ends (kernels "
                      "of one stream run one after another; tolerance "
                      f"{OVERLAP_TOLERANCE_NS} ns)")


def check_one_cycle_per_launch(where: str | Where, table: KernelTable) -> None:
    """Kernels sharing a correlation id > 0 (one launch) share a cycle (module docstring).

    Kernels are written in launch order, so the ids are usually sorted already: then one
    pass over adjacent rows; else one stable sort."""
    label = where if isinstance(where, Where) else Where(where)
    corr = table.correlation_id
    if corr.size < 2:
        return
    in_order = bool((corr[1:] >= corr[:-1]).all())
    order = None if in_order else np.argsort(corr, kind="stable")
    c = corr if order is None else corr[order]
    cycle = table.cycle if order is None else table.cycle[order]
    split = (c[1:] == c[:-1]) & (c[1:] > 0) & (cycle[1:] != cycle[:-1])
    if split.any():
        at = int(split.argmax()) + 1
        row = at if order is None else int(order[at])
        raise _refuse(label.row(row), f"has correlation id {c[at]} (one launch) like "
                      f"a kernel of cycle {cycle[at - 1]}, but is in cycle {cycle[at]} (the "
                      "kernels of one launch belong to the cycle that launched them)")


def _check_cycles(label: Where, cycle: np.ndarray, indexes: np.ndarray) -> None:
    if not cycle.size:
        return
    dangling = (cycle != -1) & ~np.isin(cycle, indexes)
    if dangling.any():
        row = int(dangling.argmax())
        raise _refuse(label.row(row), f"points at cycle {cycle[row]}, which the run "
                      "does not have")


def _check_span(label: Where, table: KernelTable | TransferTable, span: int, last_end: int) -> None:
    """No record outlasts the run's cycles by more than a full launch queue could."""
    if not table.start_ns.size:
        return
    limit = span + QUEUE_SLACK_NS
    duration = table.end_ns - table.start_ns
    too_long = (duration > limit) | ((table.cycle >= 0) & (table.end_ns > last_end + limit))
    if too_long.any():
        row = int(too_long.argmax())
        raise _refuse(label.row(row), f"lasts {duration[row]} ns (ends at "
                      f"{table.end_ns[row]}), beyond the run (its cycles span {span} ns)")


def _check_devices(label: Where, device: np.ndarray, devices: set[int]) -> None:
    if not device.size:
        return
    unknown = ~np.isin(device, np.fromiter(devices, dtype=np.int64))
    if unknown.any():
        row = int(unknown.argmax())
        raise _refuse(label.row(row), f"is on device {device[row]}, which the "
                      f"environment does not list (devices {sorted(devices)})")


__all__ = ["FIX", "TRACE_WORKLOAD", "Where", "check_cycle_overlap", "check_one_cycle_per_launch",
           "check_run_file", "check_stream_overlap"]

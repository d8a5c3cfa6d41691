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
  conversion); HTA's trace_diff/test.json.gz has graph kernels overlapping by up to 13 us.
"""

from __future__ import annotations

import numpy as np

from perfdiff.errors import InputError
from perfdiff.schema.model import KernelTable, MetricSeries, Run, RunFile, TransferTable

# How long GPU work may outlast the cycles that launched it (queued behind the last cycle);
# generous on purpose: it separates a busy queue from a timestamp that is days or years off.
QUEUE_SLACK_NS = 60 * 1_000_000_000
METRIC_LIMIT = 1e15
BITMASK_LIMIT = 2.0**53
PCT_HIGH = 105.0  # a percentage of a peak; a little above 100 for sampling at clock changes
# Old Kineto writes whole microseconds: an end rounded up and the next start rounded down
# overlap by up to 1 us; the largest overlap seen in a real recording is 256 ns.
OVERLAP_TOLERANCE_NS = 1_000
CYCLE_LIMIT_NS = 10**14  # 28 hours: no traced iteration lasts longer; 10^17 ns is 3 years
FIX = "the file is damaged or was not written by perfdiff; re-record the run or re-copy the file"


def check_run_file(run_file: RunFile, source: str) -> None:
    """Raise :class:`InputError` (one line) at the first physically impossible record."""
    devices = {d.index for d in run_file.environment.devices}
    for position, run in enumerate(run_file.runs):
        where = f"{source}: runs[{position}]"
        _check_run(run, where, devices, run_file)


def _refuse(where: str, what: str) -> InputError:
    return InputError(f"{where} {what}; {FIX}")


def _check_run(run: Run, where: str, devices: set[int], run_file: RunFile) -> None:
    cycles = run.cycles
    if cycles.index.size != np.unique(cycles.index).size:
        raise _refuse(f"{where}.cycles:", "has the same cycle index twice")
    _check_interval(f"{where}.cycles", "cycle", cycles.start_ns, cycles.end_ns, cycles.index)
    if not _cycles_are_user_ranges(run_file):
        check_cycle_overlap(f"{where}.cycles", cycles.start_ns, cycles.end_ns, cycles.index)
    span = int(cycles.end_ns.max() - cycles.start_ns.min()) if cycles.index.size else 0
    last_end = int(cycles.end_ns.max()) if cycles.index.size else 0
    tables: tuple[tuple[str, KernelTable | TransferTable], ...] = (
        ("kernels", run.kernels), ("memcpy", run.memcpy), ("memset", run.memset))
    for name, table in tables:
        label = f"{where}.{name}"
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
    check_stream_overlap(f"{where}.kernels", run.kernels)  # after the plainer faults above
    for k, metric in enumerate(run.metrics):
        label = f"{where}.metrics[{k}] ({metric.name})"
        _check_metric(label, metric, span, last_end if cycles.index.size else None)
        if devices and metric.device >= 0 and metric.device not in devices:
            raise _refuse(f"{label}:", f"is on device {metric.device}, which the environment "
                          f"does not list (devices {sorted(devices)})")


def _check_op_ids(label: str, table: KernelTable, n_ops: int) -> None:
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


def _check_metric(label: str, metric: MetricSeries, span: int, last_end: int | None) -> None:
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
        raise _refuse(f"{label} row {row}:", f"value {values[row]} is not a possible "
                      f"{metric.unit} reading")
    if not stamps.size:
        return
    if stamps.min() < 0:
        row = int((stamps < 0).argmax())
        raise _refuse(f"{label} row {row}:", "has a negative timestamp")
    backwards = np.diff(stamps) < 0
    if backwards.any():
        row = int(backwards.argmax()) + 1
        raise _refuse(f"{label} row {row}:", "has a timestamp earlier than the one before")
    if last_end is not None and stamps[-1] > last_end + span + QUEUE_SLACK_NS:
        raise _refuse(f"{label} row {stamps.size - 1}:", f"is sampled at {stamps[-1]} ns, "
                      f"beyond the run (its cycles end at {last_end} ns)")


def _check_interval(label: str, kind: str, start: np.ndarray, end: np.ndarray,
                    index: np.ndarray | None) -> None:
    if not start.size:
        return
    negative = start < 0
    if negative.any():
        row = int(negative.argmax())
        raise _refuse(f"{label} row {row}:", f"starts at a negative time ({start[row]} ns)")
    backwards = end < start
    if backwards.any():
        row = int(backwards.argmax())
        name = f"{kind} {index[row]}" if index is not None else kind
        raise _refuse(f"{label} row {row}:", f"{name} ends before it starts (end {end[row]} < "
                      f"start {start[row]} ns)")


def _cycles_are_user_ranges(run_file: RunFile) -> bool:
    """Cycles a user chose as a trace's annotation ranges (``import --cycle-range NAME``) may
    overlap: the same range on two threads, or nested (HTA's critical_path/alexnet trace has
    two forward ranges 36 ms into each other). ProfilerStep#N, perfdiff's own cycle marks and
    detected periods never do."""
    params = run_file.workload.params
    return run_file.workload.name == "torch.profiler trace" and \
        params.get("cycles_from", "ProfilerStep#N") != "ProfilerStep#N"


def check_cycle_overlap(label: str, start: np.ndarray, end: np.ndarray,
                        index: np.ndarray) -> None:
    """Cycles of one run follow one another; none lasts longer than :data:`CYCLE_LIMIT_NS`."""
    if not start.size:
        return
    long = (end - start) > CYCLE_LIMIT_NS
    if long.any():
        row = int(long.argmax())
        raise _refuse(f"{label} row {row}:", f"cycle {index[row]} lasts {end[row] - start[row]} "
                      f"ns, more than {CYCLE_LIMIT_NS:.0e} ns (28 hours)")
    order = np.argsort(start, kind="stable")
    ends = np.maximum.accumulate(end[order])
    overlap = ends[:-1] - start[order][1:]
    if overlap.size and overlap.max() > OVERLAP_TOLERANCE_NS:
        row = int(order[int(overlap.argmax()) + 1])
        raise _refuse(f"{label} row {row}:", f"cycle {index[row]} starts {int(overlap.max())} ns "
                      "before an earlier cycle ends (cycles of one run cannot overlap)")


def check_stream_overlap(label: str, table: KernelTable) -> None:
    """Kernels of different launches on one stream do not overlap (see the module docstring).

    Consecutive kernels (by start, per stream) are compared: when two launches overlap, some
    consecutive pair does. One stable sort of all kernels (0.1 s per million)."""
    start = table.start_ns
    if start.size < 2:
        return
    order = np.lexsort((start, table.stream, table.device))
    s, e = start[order], table.end_ns[order]
    dev, stream, corr = table.device[order], table.stream[order], table.correlation_id[order]
    same_stream = (dev[1:] == dev[:-1]) & (stream[1:] == stream[:-1])
    overlap = np.where(same_stream, e[:-1] - s[1:], 0)
    twice = same_stream & (s[1:] == s[:-1]) & (e[1:] == e[:-1]) & (corr[1:] == corr[:-1]) \
        & (table.name_id[order][1:] == table.name_id[order][:-1])
    if twice.any():
        row = int(order[int(twice.argmax()) + 1])
        raise _refuse(f"{label} row {row}:", "is the same kernel record as another (same "
                      "stream, correlation id, start and end): the records were duplicated")
    one_launch = (corr[1:] == corr[:-1]) & (corr[1:] > 0)
    beyond = (overlap > OVERLAP_TOLERANCE_NS) & ~one_launch
    if beyond.any():
        at = int(beyond.argmax())
        row = int(order[at + 1])
        raise _refuse(f"{label} row {row}:", f"starts {int(overlap[at])} ns before the previous "
                      f"kernel on device {dev[at + 1]} stream {stream[at + 1]} ends (kernels "
                      "of one stream run one after another; tolerance "
                      f"{OVERLAP_TOLERANCE_NS} ns)")


def _check_cycles(label: str, cycle: np.ndarray, indexes: np.ndarray) -> None:
    if not cycle.size:
        return
    dangling = (cycle != -1) & ~np.isin(cycle, indexes)
    if dangling.any():
        row = int(dangling.argmax())
        raise _refuse(f"{label} row {row}:", f"points at cycle {cycle[row]}, which the run "
                      "does not have")


def _check_span(label: str, table: KernelTable | TransferTable, span: int, last_end: int) -> None:
    """No record outlasts the run's cycles by more than a full launch queue could."""
    if not table.start_ns.size:
        return
    limit = span + QUEUE_SLACK_NS
    duration = table.end_ns - table.start_ns
    too_long = (duration > limit) | ((table.cycle >= 0) & (table.end_ns > last_end + limit))
    if too_long.any():
        row = int(too_long.argmax())
        raise _refuse(f"{label} row {row}:", f"lasts {duration[row]} ns (ends at "
                      f"{table.end_ns[row]}), beyond the run (its cycles span {span} ns)")


def _check_devices(label: str, device: np.ndarray, devices: set[int]) -> None:
    if not device.size:
        return
    unknown = ~np.isin(device, np.fromiter(devices, dtype=np.int64))
    if unknown.any():
        row = int(unknown.argmax())
        raise _refuse(f"{label} row {row}:", f"is on device {device[row]}, which the "
                      f"environment does not list (devices {sorted(devices)})")


__all__ = ["check_cycle_overlap", "check_run_file", "check_stream_overlap"]

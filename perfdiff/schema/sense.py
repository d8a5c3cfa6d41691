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
  and end no later than the records may (NVML keeps polling ~2 s after the last cycle).
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
    for k, metric in enumerate(run.metrics):
        label = f"{where}.metrics[{k}] ({metric.name})"
        _check_metric(label, metric, span, last_end if cycles.index.size else None)
        if devices and metric.device >= 0 and metric.device not in devices:
            raise _refuse(f"{label}:", f"is on device {metric.device}, which the environment "
                          f"does not list (devices {sorted(devices)})")


def _check_metric(label: str, metric: MetricSeries, span: int, last_end: int | None) -> None:
    values, stamps = metric.values, metric.timestamps_ns
    with np.errstate(invalid="ignore"):
        wrong = ~np.isnan(values) & ~(np.abs(values) < METRIC_LIMIT)
        if metric.unit == "bitmask":
            wrong |= ~np.isnan(values) & ((values < 0) | (values >= BITMASK_LIMIT)
                                          | (values != np.round(values)))
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


__all__ = ["check_run_file"]

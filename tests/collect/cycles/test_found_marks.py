"""found_marks.FoundMarks: found cycles marked, launch API records switched off once they are
(issue 28: the API kinds made every CUDA call of a timm bf16 step pass through CUPTI)."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
from perfdiff.collect.cycles.found_cycles import MIN_FOUND_CYCLES, FoundCycles, choose_cycles
from perfdiff.collect.cycles.found_marks import FoundMarks
from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace

MARK_STREAM = 99


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        self.now += 100
        return self.now


class Marker:
    """A stand-in for TorchBoundaryMarker: counts its marks."""

    def __init__(self, stream: int, fail: bool = False) -> None:
        self.stream_ids = (stream,)
        self.issued = 0
        self.fail = fail

    def mark(self) -> None:
        if self.fail:
            raise RuntimeError("capturing")
        self.issued += 1


class Trace:
    def __init__(self, answer: bool = True) -> None:
        self.stopped = 0
        self.answer = answer

    def stop_api_records(self) -> bool:
        self.stopped += 1
        return self.answer


def _found(trace: Any, streams: list[int] | None = None) -> tuple[FoundCycles, FoundMarks]:
    found = FoundCycles(Clock())
    marks = FoundMarks(found, trace, [])
    it = iter(streams or [MARK_STREAM, MARK_STREAM + 1])
    marks.attach(lambda: Marker(next(it)))
    return found, marks


def _step(found: FoundCycles, marks: FoundMarks, explicit: int = 0) -> None:
    marks.before_cycle(explicit)
    found.optimizer_log.begin_cycle("optimizer step", False)


def test_api_records_stop_once_the_found_log_has_begun_enough_marked_cycles() -> None:
    trace = Trace()
    found, marks = _found(trace)
    for i in range(MIN_FOUND_CYCLES):
        _step(found, marks)
        assert trace.stopped == 0, i
    _step(found, marks)
    assert trace.stopped == 1 and marks.switched
    _step(found, marks)
    assert trace.stopped == 1  # once


def test_no_switch_with_explicit_cycles_failed_marks_or_late_markers() -> None:
    trace = Trace()
    found, marks = _found(trace)
    for _ in range(MIN_FOUND_CYCLES + 2):
        _step(found, marks, explicit=1)
    assert trace.stopped == 0
    trace = Trace()
    found = FoundCycles(Clock())
    marks = FoundMarks(found, trace, [])
    marks.attach(lambda: Marker(MARK_STREAM, fail=True))
    for _ in range(MIN_FOUND_CYCLES + 2):
        _step(found, marks)
    assert trace.stopped == 0 and found.optimizer_log.mark_error is not None
    trace = Trace()
    found = FoundCycles(Clock())
    marks = FoundMarks(found, trace, [])
    found.optimizer_log.begin_cycle("optimizer step", False)  # a cycle before the marker
    marks.attach(lambda: Marker(MARK_STREAM))
    assert id(found.optimizer_log) not in marks.streams
    for _ in range(MIN_FOUND_CYCLES + 2):
        _step(found, marks)
    assert trace.stopped == 0


def test_a_marker_that_cannot_be_made_is_one_warning_and_no_switch() -> None:
    def broken() -> Marker:
        raise RuntimeError("no stream id")
    trace = Trace()
    found = FoundCycles(Clock())
    warnings: list[str] = []
    marks = FoundMarks(found, trace, warnings)
    marks.attach(broken)
    for _ in range(MIN_FOUND_CYCLES + 2):
        _step(found, marks)
    assert trace.stopped == 0 and len(warnings) == 1 and "launch API records kept" in warnings[0]


def _kernel(corr: int, stream: int, start: int, name: str = "work") -> KernelRecord:
    return KernelRecord(name, 0, stream, start, start + 1, corr, (1, 1, 1), (1, 1, 1))


def test_after_the_switch_the_chosen_logs_marks_replace_the_partial_launch_records() -> None:
    trace = Trace()
    found, marks = _found(trace)
    log = found.optimizer_log
    corr = iter(range(1, 1000))
    kernels: list[KernelRecord] = []
    api = [ApiRecord(1, 5)]  # CUPTI's launch record of a kernel before the first step
    kernels.append(_kernel(next(corr), 7, 10))
    marker = log.mark
    assert marker is not None

    def mark() -> None:  # each mark is a record on the marker's stream, as on the GPU
        marker()
        kernels.append(_kernel(next(corr), MARK_STREAM, 1000 * len(kernels), "mark"))
    log.mark = mark
    per_cycle: list[int] = []
    for _ in range(MIN_FOUND_CYCLES + 3):
        _step(found, marks)
        c = next(corr)
        per_cycle.append(c)
        kernels.append(_kernel(c, 7, 1000 * len(kernels)))  # one launch inside each cycle
    assert marks.switched
    raw = RawTrace(kernels=kernels, api=api)
    gpu = marks.launches(raw)
    cols = raw.as_columns()
    assert cols.kernels["stream"].tolist().count(MARK_STREAM) == 0  # marks taken out
    assert gpu[id(log)] is not None and len(gpu[id(log)] or []) == len(log.mark_ns)
    launch = dict(zip(cols.api["correlation_id"].tolist(), cols.api["start"].tolist(),
                      strict=True))
    table = log.table()
    for i, c in enumerate(per_cycle[:-1]):  # the last cycle is still open
        assert table.start_ns[i] <= launch[c] < table.end_ns[i], i
    assert launch[1] < table.start_ns[0]  # before the first step: outside every cycle
    chosen = choose_cycles(found, raw, 0, 1, gpu)
    assert chosen.log is log and chosen.table.mark_start_ns is not None
    assert bool(np.all(chosen.table.mark_start_ns >= 0))


class _Kind(enum.IntEnum):
    CONCURRENT_KERNEL = 10
    RUNTIME = 5
    DRIVER = 6
    MEMCPY = 1


class _Cupti:
    ActivityKind = _Kind

    def __init__(self) -> None:
        self.disabled: list[Any] = []

    def activity_disable(self, kind: Any) -> None:
        self.disabled.append(kind)


def test_the_backend_switches_both_api_kinds_off_and_keeps_the_others() -> None:
    backend = object.__new__(CuptiActivityBackend)
    fake = _Cupti()
    backend._cupti = fake
    backend._enabled = [_Kind.CONCURRENT_KERNEL, _Kind.RUNTIME, _Kind.DRIVER, _Kind.MEMCPY]
    backend._kept_api = [(lambda value, on: None, 3)]
    backend._trace_api = True
    assert backend.stop_api_records() is True
    assert fake.disabled == [_Kind.RUNTIME, _Kind.DRIVER]
    assert backend._enabled == [_Kind.CONCURRENT_KERNEL, _Kind.MEMCPY]
    assert backend._kept_api == [] and backend._record_kinds() == backend._enabled
    assert backend.stop_api_records() is False  # already off

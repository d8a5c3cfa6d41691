"""Cycle assignment from boundary marks (no launch API records): hand cases, properties, session.

Why: boundary marks replace CUPTI's launch API records (about 2 points of overhead on the
H100). They must give every kernel exactly the cycle the API records gave it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.collect.backends import Sources
from perfdiff.collect.cycles.boundary_marks import (
    attach_launch_records,
    launch_records_from_marks,
    take_mark_records,
)
from perfdiff.collect.cycles.cycles import CycleLog, assign_cycles
from perfdiff.collect.records import KernelRecord, RawTrace, TransferRecord
from perfdiff.collect.session import CollectSettings, run_collection
from perfdiff.collect.workloads.base import CyclePlan
from tests.collect.test_collect_session import (
    ENV,
    FakeParams,
    FakeSampler,
    FakeTrace,
    FakeWorkload,
)
from tests.factories import StepClock

MARK_STREAM = 99


def test_hand_case_inside_between_before_and_after_cycles() -> None:
    # two cycles [100, 200) and [300, 400); marks: start0 (id 10), end0 (20), start1 (30),
    # end1 (40)
    records = launch_records_from_marks([5, 15, 25, 35, 45, 0], [10, 20, 30, 40],
                                        [100, 200, 300, 400])
    assert [(r.correlation_id, r.start_ns) for r in records] == [
        (5, 99), (15, 100), (25, 200), (35, 300), (45, 400)]  # id 0: no record
    log = CycleLog(clock_ns=lambda: 0)
    log.starts, log.ends = [100, 300], [200, 400]
    log.labels, log.warmups, log.completed_flags = ["", ""], [False, False], [True, True]
    cycles = assign_cycles(np.array([r.start_ns for r in records]), log.table())
    assert cycles.tolist() == [-1, 0, -1, 1, -1]


def test_marks_out_of_order_or_miscounted_are_refused() -> None:
    with pytest.raises(ValueError, match="2 mark records for 3 marks"):
        launch_records_from_marks([1], [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="launch order"):
        launch_records_from_marks([1], [5, 4], [1, 2])
    raw = RawTrace(kernels=[KernelRecord("k", 0, 7, 0, 1, 3, (1, 1, 1), (1, 1, 1))])
    warning = attach_launch_records(raw, [1], [10, 20])
    assert warning is not None and "2 issued but 1 recorded" in warning and raw.api == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=12), st.integers(0, 2**31))
def test_marks_reproduce_the_launch_cycles_of_api_records(launches: list[int], seed: int) -> None:
    """Random cycles, random launches in and between them: marks == API records."""
    rng = np.random.default_rng(seed)
    corr, now = 0, 0
    mark_ids: list[int] = []
    kernels: list[tuple[int, int]] = []  # (correlation id, true launch time)
    starts: list[int] = []
    ends: list[int] = []
    mark_ns: list[int] = []
    for n in launches:
        for _ in range(int(rng.integers(0, 3))):  # launches between cycles
            corr, now = corr + 1, now + 10
            kernels.append((corr, now))
        now += 10
        starts.append(now)
        corr += 1
        mark_ids.append(corr)
        mark_ns.append(now)
        for _ in range(n):
            corr, now = corr + 1, now + 10
            kernels.append((corr, now))
        corr += 1
        mark_ids.append(corr)
        now += 10
        ends.append(now)
        mark_ns.append(now)
    log = CycleLog(clock_ns=lambda: 0)
    log.starts, log.ends = starts, ends
    log.labels, log.warmups = [""] * len(starts), [False] * len(starts)
    log.completed_flags = [True] * len(starts)
    table = log.table()
    truth = assign_cycles(np.array([t for _, t in kernels]), table)
    records = launch_records_from_marks([c for c, _ in kernels], mark_ids, mark_ns)
    got = assign_cycles(np.array([r.start_ns for r in records]), table)
    assert got.tolist() == truth.tolist()


class FakeMarker:
    """Issues a mark as a memset record on its own stream, through the fake trace's ids."""

    stream_ids = (MARK_STREAM,)

    def __init__(self, trace: FakeTrace, fail_after: int = -1) -> None:
        self.trace = trace
        self.issued = 0
        self.fail_after = fail_after

    def mark(self) -> None:
        if self.issued == self.fail_after:
            raise RuntimeError("stream gone")
        self.issued += 1
        self.trace._corr += 1
        t = self.trace.clock()
        self.trace.raw.memset.append(TransferRecord("memset", 1, 0, MARK_STREAM, t + 10, t + 20,
                                                    self.trace._corr))


def _collect_with_marks(fail_after: int = -1) -> tuple[object, FakeWorkload]:
    trace = FakeTrace(StepClock(), with_api=False)
    workload = FakeWorkload(FakeParams(kernels_per_cycle=3), trace)
    sources = Sources(trace=trace, samplers=[FakeSampler()],
                      boundary_marker=FakeMarker(trace, fail_after))
    outcome = run_collection(workload, CyclePlan(measured=4, warmup=1), sources, ENV,
                             CollectSettings())
    return outcome, workload


def test_session_assigns_launch_cycles_from_marks_and_drops_the_mark_records() -> None:
    outcome, workload = _collect_with_marks()
    rf = outcome.run_file  # type: ignore[attr-defined]
    run = rf.runs[0]
    assert run.kernels.cycle.tolist() == [cycle for _, cycle in workload.launch_times]
    assert run.memcpy.cycle.tolist() == [cycle for _, cycle in workload.launch_times]
    assert run.memset.stream.size == 0  # the marks' own records are gone
    assert not any("launch" in w or "mark" in w for w in rf.collection.warnings)


def test_a_failing_mark_falls_back_to_gpu_start_with_a_warning() -> None:
    outcome, _ = _collect_with_marks(fail_after=3)
    rf = outcome.run_file  # type: ignore[attr-defined]
    assert rf.status.state == "complete"
    assert any("boundary mark failed (RuntimeError: stream gone)" in w
               for w in rf.collection.warnings)


def test_take_mark_records_only_takes_the_mark_stream() -> None:
    raw = RawTrace(
        kernels=[KernelRecord("k", 0, 7, 0, 1, 5, (1, 1, 1), (1, 1, 1)),
                 KernelRecord("fill", 0, MARK_STREAM, 0, 1, 4, (1, 1, 1), (1, 1, 1))],
        memset=[TransferRecord("memset", 1, 0, MARK_STREAM, 0, 1, 2),
                TransferRecord("memset", 8, 0, 7, 0, 1, 3)],
    )
    assert take_mark_records(raw, (MARK_STREAM,)) == [2, 4]
    assert [k.name for k in raw.kernels] == ["k"] and [m.bytes for m in raw.memset] == [8]


def test_pm_coverage_warning_names_the_holes_and_stays_quiet_when_covered() -> None:
    from perfdiff.collect.cupti.pm_sampling import coverage_warning

    full = np.arange(1, 101) * 10  # samples every 10 ns over (0, 1000]
    assert coverage_warning(full, 10, (0, 1000)) is None
    holed = np.concatenate((full[:40], full[60:90]))  # a 200 ns hole and a 100 ns missing tail
    text = coverage_warning(holed, 10, (0, 1000))
    assert text is not None and "cover 70.0 %" in text and "2 stretch(es)" in text
    assert coverage_warning(np.array([], dtype=np.int64), 10, (0, 1000)) is not None
    assert coverage_warning(full, 10, (5, 5)) is None


def test_neighbour_kernels_are_left_out_by_stream_with_a_warning() -> None:
    """--contend-mode stream: the in-process neighbour's kernels are not the workload's."""
    trace = FakeTrace(StepClock())

    class Neighbour(FakeWorkload):
        def run(self, marker, plan):  # type: ignore[no-untyped-def]
            super().run(marker, plan)
            trace.raw.kernels.append(KernelRecord("gemm", 0, 13, 1, 2, 999, (1, 1, 1),
                                                  (1, 1, 1)))

    neighbour = Neighbour(FakeParams(kernels_per_cycle=2), trace)
    outcome = run_collection(neighbour, CyclePlan(measured=2, warmup=0), Sources(trace=trace), ENV,
                             CollectSettings(exclude_streams=(13,)))
    rf = outcome.run_file
    assert 13 not in rf.runs[0].kernels.stream.tolist()
    assert rf.runs[0].kernels.stream.size == 4
    assert any("1 kernels of the --contend neighbour (CUPTI stream 13)" in w
               for w in rf.collection.warnings)

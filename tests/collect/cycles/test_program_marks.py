"""program_marks.launches_from_marks: marks replace launch records only where none exist."""

from __future__ import annotations

from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.program_marks import launches_from_marks
from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace

MARK = 99


def _log(marks: bool) -> CycleLog:
    clock = [0]

    def now() -> int:
        clock[0] += 100
        return clock[0]
    log = CycleLog(clock_ns=now, wall_ns=now, mark=(lambda: None) if marks else None)
    for _ in range(2):
        log.begin_cycle("", False)
        log.end_cycle()
    return log


def _raw(with_api: bool) -> RawTrace:
    k = [KernelRecord("mark", 0, MARK, 10 * i, 10 * i + 1, 2 * i + 1, (1, 1, 1), (1, 1, 1))
         for i in range(4)]
    k += [KernelRecord("work", 0, 7, 15, 16, 2, (1, 1, 1), (1, 1, 1))]
    return RawTrace(kernels=k, api=[ApiRecord(2, 150)] if with_api else [])


def test_marks_give_launch_records_when_cupti_recorded_none() -> None:
    raw, warnings = _raw(False), []
    gpu = launches_from_marks(raw, (MARK,), _log(True), warnings)
    assert gpu == [0, 10, 20, 30] and warnings == []
    assert [k.name for k in raw.kernels] == ["work"]
    assert raw.columns is not None and raw.columns.api["correlation_id"].tolist() == [2]


def test_cuptis_launch_records_are_kept_and_unmarked_logs_change_nothing() -> None:
    raw, warnings = _raw(True), []
    assert launches_from_marks(raw, (MARK,), _log(True), warnings) == [0, 10, 20, 30]
    assert raw.as_columns().api["start"].tolist() == [150] and warnings == []
    raw = _raw(True)
    assert launches_from_marks(raw, (MARK,), _log(False), warnings) is None
    assert raw.as_columns().api["start"].tolist() == [150] and warnings == []

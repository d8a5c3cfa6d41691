"""The in-situ cross-check without a GPU: the call-timer hook, pairing, rows and summary.

Why these pieces: on the GPU, ``bench/bench_crosscheck.py --in-situ`` records CUDA events
around the very calls a collection measures. Everything but the events themselves is plain
Python: where the hook fires relative to the collector's marks, that the timer sees exactly
the run file's cycles (so pairing by order is sound), and the arithmetic of the per-case
rows. A fake event factory stands in for ``torch.cuda.Event``; the expected numbers are
written out by hand from the synthetic file's timeline (tests/bench_factories.py).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import bench.bench_crosscheck as bench_crosscheck
from bench.timers import EventPairTimer, TimedRecorder
from perfdiff.analysis.bench_cases import bench_run
from perfdiff.errors import InputError
from perfdiff.markers import (
    CycleRecorder,
    RecorderMarker,
    call_returned,
    cycle,
    set_active_recorder,
)
from tests.analysis.test_bench_call_measure import SPEC, _with_marks
from tests.bench_factories import make_bench_file
from tests.factories import StepClock


def _script() -> ModuleType:
    return bench_crosscheck


class FakeEvent:
    """``record()`` stamps the clock (and logs itself); ``elapsed_time`` is in ms."""

    def __init__(self, clock: StepClock, log: list[str] | None = None) -> None:
        self.clock = clock
        self.log = log
        self.at: int | None = None

    def record(self) -> None:
        self.at = self.clock()
        if self.log is not None:
            self.log.append("event")

    def elapsed_time(self, end_event: FakeEvent) -> float:
        assert self.at is not None and end_event.at is not None
        return (end_event.at - self.at) / 1e6


class LoggingRecorder:
    """A collector stand-in that logs where it issues its marks."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def begin_cycle(self, label: str, warmup: bool) -> None:
        self.log.append(f"start mark {label}")

    def call_returned(self) -> None:
        self.log.extend(["return stamp", "end mark"])  # as CycleLog: stamp, then mark

    def end_cycle(self, *, completed: bool = True) -> None:
        self.log.append("end")


@contextlib.contextmanager
def _installed(recorder: Any, timer: Any) -> Iterator[CycleRecorder | None]:
    """The collector's recorder, wrapped as ``bench.timers.TimedWorkload`` wraps it."""
    active = recorder if recorder is None or timer is None else TimedRecorder(recorder, timer)
    previous_recorder = set_active_recorder(active)
    try:
        yield active
    finally:
        set_active_recorder(previous_recorder)


def test_start_event_follows_the_start_mark_end_event_precedes_the_end_mark() -> None:
    """At the return: the end event first (where a user's ``end.record()`` would be), then the
    collector's stamp, then the end mark, whose issue cost is then inside neither window. A
    cycle without a return has no end time."""
    log: list[str] = []
    clock = StepClock()
    timer = EventPairTimer(lambda: FakeEvent(clock, log))
    recorder = LoggingRecorder(log)
    with _installed(recorder, timer) as active:
        assert active is not None
        marker = RecorderMarker(active)
        with marker.cycle("a", warmup=True):
            call_returned()
        with marker.cycle("cpu case"):
            pass  # e.g. linalg's CPU cases: no call_returned
    # per cycle: the start event; at the return the end event, the stamp, the end mark
    assert log == ["start mark a", "event", "event", "return stamp", "end mark", "end",
                   "start mark cpu case", "event", "end"]
    assert [(c.label, c.warmup) for c in timer.calls] == [("a", True), ("cpu case", False)]
    assert timer.calls[0].elapsed_ms() == pytest.approx(0.001)  # next clock read: 1 us
    assert math.isnan(timer.calls[1].elapsed_ms())


def test_no_collector_no_events_and_a_second_return_is_ignored() -> None:
    made: list[FakeEvent] = []
    clock = StepClock()

    def new_event() -> FakeEvent:
        made.append(FakeEvent(clock))
        return made[-1]

    timer = EventPairTimer(new_event)
    # a timer but no collector: the markers stay no-ops
    with _installed(None, timer), cycle("a"):
        call_returned()
    assert made == [] and timer.calls == []
    recorder = LoggingRecorder([])
    with _installed(recorder, timer) as active:
        assert active is not None
        with RecorderMarker(active).cycle("a"):
            call_returned()
            call_returned()
    # both events made when the call started (creation is not inside the window)
    assert len(made) == 2 and timer.calls[0].end is made[1] and timer.calls[0].returned


def test_without_a_timer_the_markers_make_no_events() -> None:
    log: list[str] = []
    recorder = LoggingRecorder(log)
    with _installed(recorder, None), RecorderMarker(recorder).cycle("a"):
        call_returned()
    assert log == ["start mark a", "return stamp", "end mark", "end"]


def test_pairing_keeps_measured_cycles_per_case_in_order() -> None:
    cc = _script()
    labels = ["a", "a", "a", "b", "b"]
    warmups = [True, False, False, False, False]
    calls = [("a", True, 9.0), ("a", False, 1.0), ("a", False, 2.0), ("b", False, 3.0),
             ("b", False, 4.0)]
    assert cc.pair_events(labels, warmups, calls) == {"a": [1.0, 2.0], "b": [3.0, 4.0]}


def test_pairing_refuses_other_cycles_in_one_line() -> None:
    cc = _script()
    labels, warmups = ["a", "a"], [True, False]
    with pytest.raises(InputError, match="2 cycles but the events cover 1"):
        cc.pair_events(labels, warmups, [("a", True, 1.0)])
    with pytest.raises(InputError, match=r"cycle 1 is 'a' \(warm-up False\)") as raised:
        cc.pair_events(labels, warmups, [("a", True, 1.0), ("b", False, 1.0)])
    assert "\n" not in str(raised.value)
    with pytest.raises(InputError, match="cycle 0"):
        cc.pair_events(labels, warmups, [("a", False, 1.0), ("a", False, 1.0)])


# The synthetic file (tests/analysis/test_bench_call_measure.py): one case, per measured cycle
# span 31 us, stream 32.2 us, and with these end-mark offsets call = 72.2, 32.2, 39.2, 132.2 us.
OFFSETS = [999_000, 40_000, 0, 7_000, 100_000]
EVENTS_MS = [0.0700, 0.0322, 0.0400, 0.1300]


def _rows(cc: ModuleType, events: list[float]) -> list[dict[str, Any]]:
    whole = bench_run(_with_marks(make_bench_file(SPEC), OFFSETS))
    rows: list[dict[str, Any]] = cc.in_situ_rows(whole, {"impl=a": events})
    return rows


def test_rows_compare_medians_and_paired_cycles_by_hand() -> None:
    cc = _script()
    (row,) = _rows(cc, EVENTS_MS)
    assert row["n"] == 4
    assert row["event_ms"] == pytest.approx(0.055)  # (0.0400 + 0.0700) / 2
    assert row["call_ms"] == pytest.approx(0.0557)  # (0.0392 + 0.0722) / 2
    assert row["diff_call_pct"] == pytest.approx(100 * 0.0007 / 0.055)
    # per cycle: +2.2/70, 0, -0.8/40, +2.2/130 -> median of (+3.14, 0, -2, +1.69) %
    assert row["paired_diff_call_pct"] == pytest.approx((0.0 + 100 * 2.2 / 130) / 2)
    assert row["paired_diff_call_us"] == pytest.approx(1.1, abs=1e-6)  # (0 + 2.2) / 2
    assert row["stream_ms"] == pytest.approx(0.0322)
    assert row["diff_stream_pct"] == pytest.approx(100 * (0.0322 - 0.055) / 0.055)
    assert row["span_ms"] == pytest.approx(0.031)


def test_summary_gates_the_chosen_measure_at_the_limit() -> None:
    cc = _script()
    rows = _rows(cc, EVENTS_MS)
    call = cc.in_situ_summary(rows, "call", 5.0)
    assert call["cases_over_20us"] == 1 and call["within_limit"] == 1
    assert call["by_measure"]["call"]["within_limit_paired"] == 1
    assert call["median_abs_diff_pct"] == pytest.approx(100 * 0.0007 / 0.055)
    assert cc.in_situ_ok(call)
    stream = cc.in_situ_summary(rows, "stream", 5.0)
    assert stream["within_limit"] == 0 and not cc.in_situ_ok(stream)
    # the verdict is the paired one: at 1 % the medians (1.27 %) miss, the paired 0.85 % holds
    at_one = cc.in_situ_summary(rows, "call", 1.0)
    assert at_one["within_limit"] == 0 and at_one["within_limit_paired"] == 1
    assert cc.in_situ_ok(at_one)
    assert not cc.in_situ_ok(cc.in_situ_summary(rows, "call", 0.8))
    # a case under 20 us by the events is not gated (nothing to fail)
    short = cc.in_situ_summary(_rows(cc, [0.010] * 4), "call", 5.0)
    assert short["cases_over_20us"] == 0 and short["within_limit"] == 0
    assert cc.in_situ_ok(short)
    # a measure the recording lacks is absent, and then nothing is "ok"
    no_call = [{k: v for k, v in r.items() if "call" not in k} for r in rows]
    absent = cc.in_situ_summary(no_call, "call", 5.0)
    assert "call" not in absent["by_measure"] and "stream" in absent["by_measure"]
    assert not cc.in_situ_ok(absent)


def test_rows_refuse_a_case_whose_event_count_differs() -> None:
    cc = _script()
    with pytest.raises(InputError, match="4 measured cycles but 3 event pairs"):
        _rows(cc, EVENTS_MS[:3])


def test_command_line_needs_exactly_one_source(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cc = _script()
    assert cc.main([]) == 2
    assert cc.main([str(tmp_path / "x.json.gz"), "--in-situ", "rmsnorm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("--in-situ WORKLOAD" in line for line in err)

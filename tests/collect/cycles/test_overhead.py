"""Untraced cycles (collect/cycles/overhead.py), holds per cycle, and the self-measured overhead."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from perfdiff.analysis.self_overhead import (
    UNTRACED_DETACHED,
    UNTRACED_IS_NOT_BARE,
    self_overhead,
    self_overhead_notes,
)
from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.overhead import UntracedCycles, with_hold
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import RunFile
from tests.support.fake_cupti import PERFDIFF_FAKE, fake_env


class _Trace:
    def __init__(self) -> None:
        self.on = True
        self.switches: list[bool] = []

    def pause(self) -> None:
        self.on = False
        self.switches.append(False)

    def resume(self) -> None:
        self.on = True
        self.switches.append(True)


def _log(clock: list[int]) -> CycleLog:
    def now() -> int:
        clock[0] += 10
        return clock[0]
    return CycleLog(clock_ns=now)


def test_the_last_two_of_every_eight_measured_cycles_are_untraced_one_switch_each_way() -> None:
    """Runs of two (a lead-in, then a timed one): tracing goes off once before the first and
    on once after the second, never between them; marks pause with it."""
    clock = [0]
    log = _log(clock)
    marks: list[int] = []
    log.mark = lambda: marks.append(len(log.starts) - 1)
    trace = _Trace()
    untraced = UntracedCycles(8, trace, log)
    states = []
    for i in range(2 + 16):
        log.begin_cycle("", i < 2)
        states.append(trace.on)
        log.end_cycle()
        if i == 9:  # the timed cycle has ended; the next is traced but has not begun
            assert not trace.on
    # off after the run: tracing goes back on before the next cycle's start is stamped, not
    # at the timed cycle's end (still inside the program's step with NVTX ranges)
    assert not trace.on
    log.begin_cycle("", False)
    assert trace.on
    log.end_cycle()
    off = [8, 9, 16, 17]  # measured #7, #8, #15, #16
    table = untraced.apply(log.table())
    assert table.traced is not None
    assert np.flatnonzero(table.traced == 0).tolist() == off
    assert [i for i, on in enumerate(states) if not on] == off
    assert trace.switches == [False, True, False, True]
    assert table.warmup.tolist() == [True, True] + [i in off for i in range(2, 19)]
    assert not set(off) & set(marks) and len(marks) == 2 * 15


def test_every_below_four_leaves_single_untraced_cycles() -> None:
    clock = [0]
    log = _log(clock)
    trace = _Trace()
    untraced = UntracedCycles(3, trace, log)
    for _ in range(9):
        log.begin_cycle("", False)
        log.end_cycle()
    table = untraced.apply(log.table())
    assert table.traced is not None
    assert np.flatnonzero(table.traced == 0).tolist() == [2, 5, 8]
    assert trace.switches == [False, True] * 2 + [False]  # on again when a next cycle begins


def test_a_run_cut_short_by_an_incomplete_cycle_switches_tracing_on_again() -> None:
    clock = [0]
    log = _log(clock)
    trace = _Trace()
    UntracedCycles(4, trace, log)
    for _ in range(3):
        log.begin_cycle("", False)
        log.end_cycle()
    log.begin_cycle("", False)  # measured #4: the timed one after the lead-in (#3)
    assert not trace.on
    log.end_cycle(completed=False)
    log.begin_cycle("", False)
    assert trace.on and trace.switches == [False, True]


def test_restart_switches_tracing_on_and_starts_a_fresh_schedule() -> None:
    """A found function's cycles were left out (found_function.py moved up): an untraced run
    open then ends, tracing is back on, and the pattern counts measured cycles from zero."""
    clock = [0]
    log = _log(clock)
    trace = _Trace()
    untraced = UntracedCycles(4, trace, log)
    for _ in range(4):  # measured #3 (lead-in) and #4 (timed) untraced
        log.begin_cycle("", False)
        log.end_cycle()
    log.begin_cycle("", False)  # measured #5 would be traced: tracing back on first
    log.end_cycle()
    log.begin_cycle("", False)
    log.end_cycle()
    log.begin_cycle("", False)  # measured #7: untraced again, still open
    assert not trace.on
    log.leave_out_all()
    untraced.restart()
    assert trace.on
    for _ in range(4):
        log.begin_cycle("", False)
        log.end_cycle()
    table = untraced.apply(log.table())
    assert table.index.size == 4  # the cycles before leave_out_all() are left out
    assert table.traced is not None and table.traced.tolist() == [1, 1, 0, 0]


class _Sampler(_Trace):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class _Broken:
    name = "pm_sampling"

    def pause(self) -> None:
        raise RuntimeError("poller gone")

    def resume(self) -> None:
        raise AssertionError("never paused, so never resumed")


def test_samplers_started_later_pause_and_resume_with_the_untraced_cycle() -> None:
    """The samplers start at the first measured cycle, after UntracedCycles exists: it reads
    the caller's list each time. A sampler that cannot pause keeps running (an error says so)
    and is not resumed; the run file's params name what was switched off."""
    log = _log([0])
    samplers: list[object] = []
    untraced = UntracedCycles(4, _Trace(), log, samplers)
    assert untraced.params() == {}
    pm = _Sampler("nvml")
    seen = []
    for i in range(8):
        if i == 1:
            samplers.extend([pm, _Broken(), object()])
        log.begin_cycle("", False)
        seen.append(pm.on)
        log.end_cycle()
    assert seen == [True, True, False, False, True, True, False, False]
    assert pm.switches == [False, True, False]  # on again when a next cycle begins
    assert untraced.errors == ["pausing pm_sampling for an untraced cycle failed (RuntimeError: "
                               "poller gone); it kept sampling there"]
    assert untraced.params()["untraced_pause"] == ["cupti_activity", "nvml"]
    assert untraced.params()["untraced_schedule"]["chosen_by"] == "--untraced-every 4"


def test_off_and_backends_without_pause_trace_every_cycle_and_say_why() -> None:
    """The run file says why every cycle was traced, so the report can (issue 28 item 4)."""
    cases = ((0, _Trace(), "", "--untraced-every 0"),
             (8, object(), "", "the tracing backend cannot switch off"),
             (None, object(), "", "the tracing backend cannot switch off"),
             (0, _Trace(), "a benchmark workload", "a benchmark workload"))
    for every, trace, reason, said in cases:
        log = _log([0])
        untraced = UntracedCycles(every, trace, log, off_reason=reason)
        for _ in range(20):
            log.begin_cycle("", False)
            log.end_cycle()
        assert untraced.apply(log.table()).traced is None
        assert untraced.params() == {"untraced_schedule": {"chosen_by": f"off: {said}"}}


def test_hold_is_clipped_to_each_cycle() -> None:
    log = _log([0])
    for _ in range(3):
        log.begin_cycle("", False)
        log.end_cycle()
    table = log.table()  # cycles [10, 20), [30, 40), [50, 60)
    held = with_hold(table, [(12, 15, 1), (18, 33, 1), (70, 80, 1)])
    assert held.hold_ns is not None and held.hold_ns.tolist() == [5, 3, 0]


PROGRAM = """
import time
import perfdiff
from tests.support.fake_cupti import launch
for i in range(33):
    with perfdiff.cycle():
        launch(f"c{i}_k", 0.1)
        time.sleep(0.002 if i % 8 in (0, 7) else 0.005)
"""


def _record(folder: Path, *options: str) -> RunFile:
    """PROGRAM recorded through ``perfdiff collect`` with the fake backend, one warm-up cycle
    and ``--untraced-every 8``, then ``options``; the run file."""
    (folder / "prog.py").write_text(PROGRAM)
    env = fake_env()
    env.pop("PERFDIFF_INJECT_CONFIG", None)
    out = folder / "run.json.gz"
    proc = subprocess.run([*PERFDIFF_FAKE, "collect", "-o", str(out), "--warmup", "1",
                           "--untraced-every", "8", *options, "--",
                           sys.executable, "prog.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return load_run_file(out)


def test_a_program_run_carries_its_own_overhead(tmp_path: Path) -> None:
    rf = _record(tmp_path)
    (run,) = rf.runs
    assert run.cycles.traced is not None and run.cycles.hold_ns is not None
    untraced = np.flatnonzero(run.cycles.traced == 0).tolist()
    # runs of two: a lead-in (8k - 1) and a timed one (8k), both slept 2 ms instead of 5
    assert untraced == [7, 8, 15, 16, 23, 24, 31, 32]
    names = [rf.strings[i].mangled for i in run.kernels.name_id.tolist()]
    assert not any(int(name.split("_")[0][1:]) in untraced for name in names)
    assert len(names) == 33 - 8
    found = self_overhead(rf)  # the timed ones only
    assert found is not None and found.untraced_cycles == 4 and found.traced_cycles == 24
    # 5 ms vs 2 ms: +150 %. Wide apart, so that a loaded host's late wake-ups (which lengthen
    # both kinds alike) cannot carry it out of bounds (5 vs 4 ms read +14.4 % under CI's load)
    assert 60 < found.overhead_pct < 250
    note, share = self_overhead_notes(rf, "run.json.gz")
    assert "tracing overhead on this run +" in note and "4 untraced cycle(s)" in note
    assert "no PM or NVML sampler ran" in note  # the fake backend has none
    assert share.startswith("run.json.gz: 75 % of 32 measured cycles traced (fixed by "
                            "--untraced-every 8)")


def _with_cycles(durations_ms: list[float], traced: list[int]) -> object:
    import dataclasses

    from tests.factories import make_run_file

    rf = make_run_file(n_cycles=len(durations_ms), n_warmup=0)
    (run,) = rf.runs
    dur = (np.asarray(durations_ms) * 1e6).astype(np.int64)
    start = np.concatenate([[0], np.cumsum(dur)[:-1]]).astype(np.int64)
    flags = np.asarray(traced, dtype=np.int64)
    cycles = dataclasses.replace(run.cycles, start_ns=start, end_ns=start + dur,
                                 traced=flags, warmup=flags == 0)
    return dataclasses.replace(rf, runs=(dataclasses.replace(run, cycles=cycles),))


def test_the_overhead_sets_each_untraced_cycle_against_its_neighbours() -> None:
    """A host that slows down 2x over the run: traced cycles 10 -> 20 ms, each untraced one 20 %
    shorter than the cycles beside it. Set against its neighbours every untraced cycle says
    +25 %. Most untraced cycles fall in the slow half, so pooled medians (all traced cycles
    against all untraced ones) would set slow untraced cycles against a faster typical traced
    one and say almost nothing."""
    base = np.linspace(10, 20, 40)
    traced = [0 if i in (3, 25, 29, 33, 37) else 1 for i in range(40)]
    durations = [float(b) * (0.8 if t == 0 else 1.0) for b, t in zip(base, traced, strict=True)]
    found = self_overhead(_with_cycles(durations, traced))  # type: ignore[arg-type]
    assert found is not None and found.untraced_cycles == 5 and found.traced_cycles == 35
    assert abs(found.overhead_pct - 25.0) < 0.5
    assert found.low_pct <= found.overhead_pct <= found.high_pct
    assert found.high_pct - found.low_pct < 1.0
    traced_all = np.asarray(durations)[np.asarray(traced) == 1]
    untraced_all = np.asarray(durations)[np.asarray(traced) == 0]
    pooled = 100 * (np.median(traced_all) / np.median(untraced_all) - 1)
    assert pooled < 5  # what the pooled figure would have said


def test_the_note_says_what_the_figure_covers_and_the_decoding_between_cycles() -> None:
    import dataclasses

    rf: Any = _with_cycles([10.0, 10.0, 8.0, 10.0, 10.0], [1, 1, 0, 1, 1])
    rf = dataclasses.replace(rf, collection=dataclasses.replace(
        rf.collection, sources=("cupti_activity", "pm_sampling", "nvml")))
    (old,) = self_overhead_notes(rf, "a")  # recorded before samplers paused
    assert "PM sampling and NVML sampling ran in both, so their cost" in old
    assert "between cycles" not in old
    rf = dataclasses.replace(rf, workload=dataclasses.replace(rf.workload, params={
        "untraced_pause": ["cupti_activity", "nvml"], "intake_between_cycles_ms": 12.5}))
    (new,) = self_overhead_notes(rf, "a")
    assert "+25.0 %" in new
    assert "PM sampling ran in both, so its cost is not in this figure" in new
    assert "between cycles perfdiff also spent 2.50 ms per cycle decoding" in new


def test_a_program_run_with_cupti_detached_in_its_untraced_runs_keeps_every_kernel(
        tmp_path: Path) -> None:
    """``--detach-untraced`` on the fake backend: each traced stretch is a new backend whose
    correlation ids start again at 1 (cupti/detached.py). The kernels still land in their own
    cycles (assigned through launch records by correlation id), none from an untraced cycle,
    and the run file says CUPTI was detached."""
    rf = _record(tmp_path, "--no-pm", "--no-nvml", "--detach-untraced")
    (run,) = rf.runs
    assert run.cycles.traced is not None
    untraced = np.flatnonzero(run.cycles.traced == 0).tolist()
    assert untraced == [7, 8, 15, 16, 23, 24, 31, 32]
    names = [rf.strings[i].mangled for i in run.kernels.name_id.tolist()]
    assert len(names) == 33 - 8
    launched_in = [int(name.split("_")[0][1:]) for name in names]
    assert launched_in == [c for c in range(33) if c not in untraced]
    assert run.kernels.cycle.tolist() == launched_in  # the cycle each was launched in
    assert "cupti_detached" in rf.workload.params["untraced_pause"]
    # the report says what the untraced cycles still carried: not "CUPTI attached"
    notes = " ".join(self_overhead_notes(rf, "a"))
    assert UNTRACED_DETACHED in notes and UNTRACED_IS_NOT_BARE not in notes
    (tmp_path / "attached").mkdir()
    notes = " ".join(self_overhead_notes(_record(tmp_path / "attached"), "a"))
    assert UNTRACED_IS_NOT_BARE in notes and UNTRACED_DETACHED not in notes


class _Decoding:
    """A sampler whose decode runs at the start of the cycles in ``during``."""

    name = "pm_sampling"

    def __init__(self, log: CycleLog, during: set[int]) -> None:
        self.log, self.during = log, during

    def busy(self) -> bool:
        return len(self.log.starts) in self.during


def _decoding_schedule(busy_from: int) -> dict[str, Any]:
    """30 cycles (2 warm-up) of a detaching trace whose PM sampler decodes at the start of
    every cycle from ``busy_from`` on; tracing stays on throughout. The run file's schedule."""
    clock = [0]
    log = _log(clock)
    trace = _Trace()
    trace.detaches_cupti = True  # type: ignore[attr-defined]
    untraced = UntracedCycles(None, trace, log, [_Decoding(log, set(range(busy_from, 30)))])
    for i in range(30):
        log.begin_cycle("", i < 2)
        assert trace.on
        log.end_cycle()
    schedule: dict[str, Any] = untraced.params()["untraced_schedule"]
    return schedule


def test_cycles_that_begin_during_a_decode_stay_traced_and_the_run_file_counts_them() -> None:
    """A GPT-2 generate run at 40 us PM (H100, 2026-12-07) had a decode running at nearly every
    boundary: 10 measured cycles, 1 asked about, all traced, and the report said the run was
    too short. With a trace that detaches CUPTI the cycles stay traced (a detach must not run
    beside a decode), the run file counts them and the report says why. (Attached, the run
    does not wait: test_detached_trace.py.)"""
    schedule = _decoding_schedule(3)
    assert schedule["traced_while_sampler_busy"] == 27
    assert schedule["measured_cycles"] == 1 and schedule["traced_cycles"] == 1
    rf = load_run_file(Path(__file__).parents[3] / "fixtures" / "generate-found.json.gz")
    params = {**rf.workload.params, "cycles_from": "function generate (found by sampling)",
              "untraced_schedule": schedule}
    rf = dataclasses.replace(rf, workload=dataclasses.replace(rf.workload, params=params))
    (note,) = self_overhead_notes(rf, "g.json.gz")
    assert "27 of its 28 measured cycles began while PM sampling was decoding" in note
    assert "the one asked about was traced too" in note and "so cycle time is traced time" in note
    assert "run more steps" not in note


def test_a_log_whose_every_measured_cycle_began_during_a_decode_still_says_so() -> None:
    """No cycle was asked about at all: the run file still counts the ones kept traced, so
    that the report can say why there is no untraced cycle (not "{}": no measured cycle)."""
    assert _decoding_schedule(2)["traced_while_sampler_busy"] == 28


class _PausedPm:
    """A PM sampler whose buffer holds ``limit_ns`` of a pause (``PmSampler.pause_limit_ns``)."""

    name = "pm_sampling"

    def __init__(self, limit_ns: int) -> None:
        self.limit_ns = limit_ns
        self.paused = False

    def pause(self) -> None:
        self.paused = True

    def hold(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def pause_limit_ns(self) -> int:
        return self.limit_ns


def _untraced_runs(detaches: bool, express: bool, cycles: int = 120) -> tuple[list[int], Any]:
    """Cycles of 1,000 ns that take 1.5 x that traced (the schedule then wants untraced runs
    of dozens), with a PM sampler whose buffer holds 5,500 ns of a pause: the untraced runs'
    lengths."""
    clock = [0]
    log = CycleLog(clock_ns=lambda: clock[0])
    trace = _Trace()
    trace.detaches_cupti = detaches  # type: ignore[attr-defined]
    untraced = UntracedCycles(None, trace, log, [_PausedPm(5_500)],
                              express_ok=lambda: express)
    for i in range(cycles):
        clock[0] += 10
        log.begin_cycle("", i < 2)
        clock[0] += 1_500 if trace.on else 1_000
        log.end_cycle()
    table = untraced.apply(log.table())
    assert table.traced is not None
    runs, run = [], 0
    for traced in [*table.traced.tolist(), 1]:
        if traced:
            if run:
                runs.append(run)
            run = 0
        else:
            run += 1
    return runs, untraced


def test_a_detached_run_ends_before_a_paused_samplers_buffer_fills() -> None:
    """A paused PM sampler decodes nothing, so a detached untraced run longer than its
    hardware buffer loses samples (GPT-2 generate, ~6.6 s at 40 us: 213,000 lost, H100
    2026-12-07). The run ends when one more cycle would pass the limit, hooks or express
    lane alike, and the run file counts those ends; attached (the sampler only held, it
    decodes by itself) runs are not bounded."""
    for express in (False, True):
        runs, untraced = _untraced_runs(detaches=True, express=express)
        assert runs and max(runs) <= 5, (express, runs)
        ended = untraced.params()["untraced_schedule"]["runs_ended_for_sampler_buffers"]
        assert ended >= len(runs) - 1
    runs, untraced = _untraced_runs(detaches=False, express=True)
    assert max(runs) > 5
    assert "runs_ended_for_sampler_buffers" not in untraced.params()["untraced_schedule"]

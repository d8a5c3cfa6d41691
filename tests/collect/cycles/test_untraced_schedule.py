"""The cost-driven schedule of untraced cycles (collect/cycles/untraced_schedule.py), driven through
UntracedCycles on synthetic cycle durations: a clock that the simulated program moves by ``u``
in an untraced cycle, ``r u`` in a traced one, and ``w / 2`` at each switch of tracing."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.overhead import UntracedCycles
from perfdiff.collect.cycles.untraced_schedule import (
    LONGEST_STRETCH,
    MAX_STRETCH,
    MIN_SAMPLES,
    RUN_FACTOR,
    CostSchedule,
    longest_stretch,
    ratio_interval,
    shortest_run,
)
from tests.support.switching_program import TARGET, SwitchingProgram


def _runs(modes: list[bool]) -> list[tuple[bool, int]]:
    out: list[tuple[bool, int]] = []
    for traced in modes:
        if out and out[-1][0] == traced:
            out[-1] = (traced, out[-1][1] + 1)
        else:
            out.append((traced, 1))
    return out


def _check_floors(modes: list[bool], longest_run: int = RUN_FACTOR * MAX_STRETCH) -> None:
    """The first stretch is the first LONGEST_STRETCH cycles; every stretch is followed by an
    untraced run of at least ``shortest_run`` (a lead-in and timed cycles), the first by one
    that times MIN_SAMPLES cycles; no run is longer than ``longest_run``."""
    runs = _runs(modes)
    assert runs[0] == (True, LONGEST_STRETCH) or (runs[0][0] and len(runs) == 1)
    for i, (traced, length) in enumerate(runs):
        last = i == len(runs) - 1
        if traced:
            assert 1 <= length <= MAX_STRETCH
        else:
            assert length <= longest_run
            assert length >= shortest_run(runs[i - 1][1]) or last
    assert len(runs) < 3 or runs[1][1] >= 1 + MIN_SAMPLES  # the first run times r


def test_a_cheap_tracer_keeps_six_traced_in_ten() -> None:
    """r = 1: nothing to save, so the shortest pattern (6 traced, then a lead-in, two timed
    cycles clear of any switch and the one before the switch-on), after a first run long
    enough to time the untraced cycles."""
    program = SwitchingProgram(1.0, 10_000_000, 0, 0.0, 0)
    untraced = program.run(60)
    assert _runs(program.modes)[:4] == [(True, 6), (False, 4), (True, 6), (False, 4)]
    params = untraced.params()["untraced_schedule"]
    assert params["chosen_by"] == "cost target" and params["cost_target"] == TARGET
    assert params["traced_cost_ratio"] == 1.0 and params["traced_share"] > 0.55


def test_most_timed_cycles_are_clear_of_a_switch_on() -> None:
    """Tracing goes back on after a run's last cycle, inside the program's own step for it
    (optimizer-step boundaries), so the program's timer for that step holds the switch-on:
    over every run the schedule chooses, fewer than half the timed cycles are such a one, so
    their median is a step clear of it (timm ViT-S on an H100: -19.4 % against the timer with
    runs of 2 and 3, -0.08 % without those cycles)."""
    for r, u_ns, w_ns in ((1.0, 10_000_000, 0), (1.4, 25_000_000, 1_000_000),
                          (1.3, 240_000, 2_000_000), (6.0, 1_000_000, 0)):
        program = SwitchingProgram(r, u_ns, w_ns, 0.02, 5)
        program.run(300)
        runs = _runs(program.modes)
        closed = [length for i, (traced, length) in enumerate(runs[:-1]) if not traced and i]
        timed = sum(length - 1 for length in closed)
        before_switch_on = len(closed)
        assert closed and before_switch_on < timed / 2, (r, runs)


def test_a_host_bound_program_gets_the_share_that_meets_the_target() -> None:
    """r = 1.4 (timm ViT-S bf16 on the H200): a share of about 0.1 / 0.4 = 0.25, the realised
    cost within the target, and the run file says what was measured and chosen."""
    program = SwitchingProgram(1.4, 25_000_000, 0, 0.05, 1)
    untraced = program.run(400)
    share = sum(program.modes) / len(program.modes)
    assert 0.2 < share < 0.3
    assert program.cost() <= TARGET + 0.01
    assert max(length for traced, length in _runs(program.modes) if traced) == LONGEST_STRETCH
    params = untraced.params()["untraced_schedule"]
    assert params["traced_cost_ratio_low"] <= 1.4 <= params["traced_cost_ratio_high"]
    assert abs(params["traced_cost_ratio"] - 1.4) < 0.05
    assert params["expected_cost"] <= TARGET + 0.01
    assert abs(params["traced_share"] - share) < 1e-3
    _check_floors(program.modes, RUN_FACTOR * LONGEST_STRETCH)


def test_switch_costs_lengthen_the_stretches_and_the_runs() -> None:
    """A CUDA-graph step of 0.24 ms with a 2 ms switch pair (eight cycles' worth): stretches of
    six would pay a switch per six traced cycles; the schedule takes longer stretches and
    longer runs, and the whole run stays within the target."""
    program = SwitchingProgram(1.3, 240_000, 2_000_000, 0.0, 2)
    untraced = program.run(2000)
    runs = _runs(program.modes)
    assert max(length for traced, length in runs if traced) == MAX_STRETCH
    assert min(length for traced, length in runs[2:-1] if not traced) >= shortest_run(MAX_STRETCH)
    params = untraced.params()["untraced_schedule"]
    assert params["switch_ms"] == 2.0
    assert program.cost() <= TARGET + 0.01
    assert sum(program.modes) / len(program.modes) > 0.15  # stretches of 6: at most 0.07
    _check_floors(program.modes)


def test_a_short_run_of_free_tracing_and_costly_switches_keeps_timed_cycles() -> None:
    """r = 1 with a 60 ms switch pair (CUPTI detached, 30 ms steps): the longest stretch is
    MAX_STRETCH, and a 46-cycle run that reached it after its second untraced run kept 6 timed
    cycles for its cycle time (ResNet-50 AMP, H100, 2026-12-07); stretches no longer than the
    timed cycles behind them keep about a third of the run timed, within the target."""
    for seed in range(4):
        program = SwitchingProgram(1.0, 30_000_000, 60_000_000, 0.03, seed)
        program.run(46)
        modes = program.modes
        timed = sum(1 for a, b in itertools.pairwise(modes) if not a and not b)
        assert timed >= 12, _runs(modes)
        assert program.cost() <= TARGET + 0.01
        _check_floors(modes)


def test_a_forced_stretch_waits_until_its_switch_is_paid_for() -> None:
    """A 0.24 ms replay whose switch pair costs 20 ms (CUPTI detached): forced every
    RUN_FACTOR x 64 = 256 cycles, each one-cycle stretch paid 83 cycles of switching and the
    run cost 1.36 x; the floor's run is now as long as the cycles that earn one pair (834)."""
    program = SwitchingProgram(1.3, 240_000, 20_000_000, 0.0, 2)
    untraced = program.run(2000)
    runs = _runs(program.modes)
    middle = [length for traced, length in runs[3:-1] if not traced]
    assert middle and min(middle) >= 800, runs
    assert program.cost() < 1.16
    assert untraced.params()["untraced_schedule"]["floor_bound_stretches"] >= 1


def test_an_unreachable_target_is_said_and_the_floor_holds() -> None:
    """r = 6: even one traced cycle in 25 costs more than the target allows; the floor keeps
    traced cycles coming and the run file says the floor, not the target, set the share."""
    program = SwitchingProgram(6.0, 1_000_000, 0, 0.0, 3)
    untraced = program.run(300)
    params = untraced.params()["untraced_schedule"]
    assert params["floor_bound_stretches"] > 0
    assert params["expected_cost"] > TARGET
    _check_floors(program.modes, RUN_FACTOR * LONGEST_STRETCH)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(r=st.floats(1.0, 3.0), u_ms=st.floats(0.2, 60.0), w_ms=st.floats(0.0, 5.0),
       noise=st.floats(0.0, 0.05), seed=st.integers(0, 2**16), n=st.integers(200, 500))
def test_realised_cost_meets_a_feasible_target_and_the_floors_hold(
        r: float, u_ms: float, w_ms: float, noise: float, seed: int, n: int) -> None:
    program = SwitchingProgram(r, int(u_ms * 1e6), int(w_ms * 1e6), noise, seed)
    program.run(n)
    _check_floors(program.modes)
    per_switch = w_ms / u_ms
    # feasible: one traced cycle per longest run stays within the target, and what the first
    # stretch spent before r was known is paid back within half the run
    longest_run = RUN_FACTOR * longest_stretch(r, per_switch)
    floor_extra = ((r - 1) * (1 + noise) + per_switch) / (longest_run + 1)
    assume(floor_extra <= (TARGET - 1) / 2)
    first_debt = LONGEST_STRETCH * (r - 1) + per_switch
    assume(first_debt / ((TARGET - 1) - floor_extra) <= n / 2)
    # the last stretch may be under way when the run ends, and noise moves the medians
    stretch = longest_stretch(r, per_switch)
    slack = (stretch * (r - 1) + per_switch) / n + noise * (r - 1) + 0.002
    assert program.cost() <= TARGET + slack


def test_ratio_interval_brackets_the_ratio_of_medians() -> None:
    ratio, low, high = ratio_interval([14, 15, 16, 15, 14, 16], [10, 10, 11, 9, 10])
    assert ratio == 1.5 and low <= ratio <= high


def test_the_schedule_waits_for_samples_before_estimating() -> None:
    """Without three timed untraced cycles the first run goes on, whatever it costs."""
    schedule = CostSchedule(TARGET)
    assert [schedule.untraced(i + 1, 0, i) for i in range(LONGEST_STRETCH + 1)] == (
        [False] * LONGEST_STRETCH + [True])
    assert all(schedule.untraced(7 + run, run, 0) for run in range(1, 100))


class _Switches:
    """A trace that checks the switches alternate (off, on, off, ...)."""

    def __init__(self) -> None:
        self.on = True
        self.count = 0

    def pause(self) -> None:
        assert self.on, "switched off twice"
        self.on = False
        self.count += 1

    def resume(self) -> None:
        assert not self.on, "switched on twice"
        self.on = True


@settings(max_examples=150, deadline=None)
@given(events=st.lists(st.tuples(st.sampled_from(["cycle", "cut", "warmup", "blocked"]),
                                 st.floats(0.5, 3.0)), min_size=1, max_size=120),
       every=st.sampled_from([None, 0, 2, 3, 4, 8]))
def test_untraced_cycles_hold_their_invariants_whatever_the_program_does(
        events: list[tuple[str, float]], every: int | None) -> None:
    """Cycles that complete, are cut short, are warm-up, or begin while another log's untraced
    cycle is open (``allowed`` False), in any order: tracing is off exactly in the cycles
    marked untraced, the switches alternate, and the run file's table says the same."""
    now = [0]
    trace = _Switches()
    log = CycleLog(clock_ns=lambda: now[0])
    blocked = [False]
    untraced = UntracedCycles(every, trace, log, allowed=lambda: not blocked[0])
    off_in: list[bool] = []
    for kind, length in events:
        blocked[0] = kind == "blocked"
        log.begin_cycle("", kind == "warmup")
        off_in.append(not trace.on)
        now[0] += int(length * 1e6)
        log.end_cycle(completed=kind != "cut")
        now[0] += 1000
    positions = set(untraced.positions)
    assert [i for i, off in enumerate(off_in) if off] == sorted(positions)
    table = untraced.apply(log.table())
    kept = [i for i, ok in enumerate(log.completed_flags) if ok]
    if every == 0:
        assert table.traced is None and trace.count == 0
        return
    assert table.traced is not None
    assert table.traced.tolist() == [0 if i in positions else 1 for i in kept]
    assert all(table.warmup[table.traced == 0])


def test_the_budget_is_looked_at_a_few_times_per_untraced_run_not_every_cycle(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget's medians and loop cost ~10 us on a slow host, between cycles, inside the
    program's step: once the untraced cycles it asked for are known, it waits for them."""
    looked = [0]
    original = CostSchedule.stretch_allowed

    def counted(self: CostSchedule) -> tuple[int, int, int, int]:
        looked[0] += 1
        return original(self)

    monkeypatch.setattr(CostSchedule, "stretch_allowed", counted)
    program = SwitchingProgram(1.4, 25_000_000, 0, 0.0, 4)
    program.run(400)
    runs = [length for traced, length in _runs(program.modes) if not traced]
    assert sum(runs) > 250 and looked[0] <= 3 * len(runs)

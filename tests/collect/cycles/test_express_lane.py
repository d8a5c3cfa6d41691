"""The express lane of untraced runs (``CycleLog.express``, ``UntracedCycles._grant_express``):
cycles the schedule is sure of skip every hook, and their bookkeeping is caught up later in
the order it would have had. What must hold: the same cycles traced, the same switches, the
same schedule figures as without the lane; hooks skipped only inside untraced runs."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.overhead import UntracedCycles
from perfdiff.collect.cycles.untraced_schedule import CostSchedule, FixedSchedule
from tests.support.switching_program import SwitchingProgram


class _Program(SwitchingProgram):
    """The schedule tests' program (noise +-20 %), cut short where ``cut`` says; counts the
    log's hooks that ran."""

    def __init__(self, r: float, u_ns: int, w_ns: int, seed: int, cut: frozenset[int]) -> None:
        super().__init__(r, u_ns, w_ns, 0.2, seed)
        self.cut = cut
        self.hooks = 0

    def count(self, *_: object) -> None:
        self.hooks += 1

    def run_lane(self, cycles: int, every: int | None, express: bool) -> UntracedCycles:
        log = CycleLog(clock_ns=self.clock_ns, wall_ns=self.clock_ns,
                       on_cycle_begin=self.count, on_cycle_end=self.count)
        untraced = UntracedCycles(every, self, log, express_ok=lambda: express)
        for i in range(cycles):
            log.begin_cycle("", i < 2)
            self.step()
            log.end_cycle(completed=i not in self.cut)
        return untraced


def _both(r: float, u_ns: int, w_ns: int, seed: int, cycles: int, every: int | None,
          cut: frozenset[int] = frozenset()) -> tuple[_Program, UntracedCycles, _Program,
                                                       UntracedCycles]:
    plain, fast = (_Program(r, u_ns, w_ns, seed, cut) for _ in range(2))
    return plain, plain.run_lane(cycles, every, False), fast, fast.run_lane(cycles, every, True)


def _same(plain: _Program, slow: UntracedCycles, fast: _Program,
          quick: UntracedCycles) -> None:
    assert fast.modes == plain.modes
    assert fast.now == plain.now  # the same switches, at the same cycles
    assert quick.params() == slow.params()
    assert quick.positions == slow.positions
    assert quick.log.completed_flags == slow.log.completed_flags
    assert quick.log.starts == slow.log.starts and quick.log.ends == slow.log.ends


@pytest.mark.parametrize(("r", "u_ns", "w_ns", "every"), [
    (1.5, 1_000_000, 1_000_000, None),  # host-bound, cheap switches
    (1.02, 250_000, 90_000_000, None),  # a CUDA-graph replay detached: dear switches
    (1.2, 30_000_000, 60_000_000, None),
    (1.3, 1_000_000, 500_000, 10),  # --untraced-every 10
])
def test_the_lane_changes_nothing_but_the_hooks_that_run(r: float, u_ns: int, w_ns: int,
                                                         every: int | None) -> None:
    plain, slow, fast, quick = _both(r, u_ns, w_ns, 3, 2_000, every)
    _same(plain, slow, fast, quick)
    untraced = len(slow.positions)
    assert untraced > 100
    # untraced cycles took the lane: at least one hook fewer per untraced cycle (runs of two:
    # the second's two; longer runs more)
    assert plain.hooks - fast.hooks >= untraced


@settings(max_examples=40, deadline=None)
@given(st.floats(1.0, 3.0), st.integers(50_000, 50_000_000), st.integers(0, 100_000_000),
       st.integers(0, 2**16), st.frozensets(st.integers(0, 600), max_size=8))
def test_the_lane_changes_nothing_whatever_the_program_does(
        r: float, u_ns: int, w_ns: int, seed: int, cut: frozenset[int]) -> None:
    _same(*_both(r, u_ns, w_ns, seed, 600, None, cut))


def test_a_cycle_cut_short_in_the_lane_ends_the_run() -> None:
    """Cut short, an untraced cycle's run is over (tracing back on at the next begin, the
    schedule asked afresh), with the lane as without it."""
    plain, slow, fast, quick = _both(1.5, 1_000_000, 1_000_000, 1, 200, None)
    lane = [i for i in slow.positions if i - 1 in slow.positions][5]  # inside a run
    plain, slow, fast, quick = _both(1.5, 1_000_000, 1_000_000, 1, 200, None, frozenset({lane}))
    _same(plain, slow, fast, quick)


def test_a_lane_cycle_open_at_release_ends_through_the_hooks() -> None:
    """release() (another log won the run) catches up with the lane; the open cycle ends as
    any other, tracing on."""
    program = _Program(1.5, 1_000_000, 1_000_000, 2, frozenset())
    log = CycleLog(clock_ns=program.clock_ns, wall_ns=program.clock_ns)
    untraced = UntracedCycles(None, program, log, express_ok=lambda: True)
    while not (log.express and untraced.paused):
        log.begin_cycle("", False)
        program.now += 1_000_000
        log.end_cycle()
    log.begin_cycle("", False)  # in the lane
    assert log.express_begun == 1
    untraced.release()
    assert program.on and not untraced.paused and log.express_begun == 0
    assert untraced.positions[-1] == len(log.starts) - 1
    program.now += 1_000_000
    log.end_cycle()
    assert log.completed_flags[-1]


def test_no_lane_without_leave_or_with_marks() -> None:
    program = _Program(1.5, 1_000_000, 1_000_000, 2, frozenset())
    program.run_lane(300, None, False)
    log = CycleLog(clock_ns=program.clock_ns, mark=lambda: None)
    log.express = 5
    log.begin_cycle("", False)  # a cycle that issues marks is never in the lane
    assert log.express_begun == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.5, 3.0), min_size=40, max_size=200), st.integers(0, 2**16))
def test_what_the_cost_schedule_is_sure_of_holds_whatever_the_cycles_take(
        durations: list[float], seed: int) -> None:
    """Asked in any state inside an untraced run, the asks it is sure of answer True whatever
    is observed between them."""
    rng = np.random.default_rng(seed)
    schedule = CostSchedule(1.10)
    run = stretch = 0
    for position, d in enumerate(durations, start=1):
        untraced = schedule.untraced(position, run, stretch)
        if untraced and run >= 1:  # asked at an untraced cycle's end: where the lane is granted
            sure = schedule.sure_untraced(position + 1, run + 1)
            probe = copy.deepcopy(schedule)
            for k in range(sure):
                probe.observe(int(rng.uniform(1e3, 1e9)), untraced=True, timed=True)
                assert probe.untraced(position + 1 + k, run + 1 + k, 0)
        run, stretch = (run + 1, 0) if untraced else (0, stretch + 1)
        schedule.observe(int(d * 1e6), untraced=untraced, timed=untraced and run > 1)
        if not untraced and stretch == 1 and position > 1:
            schedule.observe_switch(int(rng.uniform(0, 5e7)))


def test_the_fixed_schedule_is_sure_of_the_rest_of_its_run() -> None:
    schedule = FixedSchedule(10)  # positions 9 and 10 of every 10 untraced
    assert schedule.sure_untraced(9, 1) == 2
    assert schedule.sure_untraced(10, 2) == 1
    assert schedule.sure_untraced(11, 3) == 0


def test_an_nvtx_push_in_the_lane_is_stamped_before_the_recorders_work() -> None:
    """In the lane the push's own clock read is the cycle's start (the stack, lock and log
    then lie inside the cycle); out of it the log stamps after its hooks, as before."""
    from types import ModuleType

    from perfdiff.collect.cycles.nvtx_cycles import NvtxCycles
    from tests.factories import StepClock

    clock = StepClock(10)
    hooked: list[int] = []
    log = CycleLog(clock_ns=clock, on_cycle_begin=lambda _: hooked.append(clock()))
    module = ModuleType("torch.cuda.nvtx")
    module.range_push = lambda msg: 0  # type: ignore[attr-defined]
    module.range_pop = lambda: 0  # type: ignore[attr-defined]
    NvtxCycles(log, "step", clock).patch_torch_nvtx(module)
    module.range_push("step")  # type: ignore[attr-defined]
    module.range_pop()  # type: ignore[attr-defined]
    assert log.starts[-1] > hooked[-1]  # hooks first, then the stamp
    log.express = 2
    before = clock.now
    module.range_push("step")  # type: ignore[attr-defined]
    assert log.starts[-1] == before + 10  # the push's first read: no other read before it
    module.range_push("inner")  # type: ignore[attr-defined]
    module.range_pop()  # type: ignore[attr-defined]
    module.range_pop()  # type: ignore[attr-defined]
    assert log.express_begun == 1 and len(log.ends) == 2
    assert log.table().index.size == 2

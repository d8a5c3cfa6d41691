"""Which measured cycles run untraced: a fixed pattern (``--untraced-every N``), or by default
a share of traced cycles chosen, while the program runs, so that the whole run costs at most
``--cost-target`` times the program run bare.

Why chosen from the run: what tracing costs depends on the program. On the lent H200 a traced
cycle took 1.2-1.5 x a timed untraced one on a host-bound timm ViT-S bf16 step, 1.3-1.6 x on
a CUDA-graph MLP, ~1.4 x on GPT-2 ``generate``, ~1.0 x on GPU-bound fp32 steps. With a fixed 6
traced cycles in 8 the whole run costs about 1 + 0.75 (r - 1) (r: traced over untraced cycle
time): 1.30 x at r = 1.4, which changes the program being measured (issue 28). Kernel
statistics need traced cycles and the cycle time needs untraced ones, so the share is the
largest that still meets the target, within floors that keep samples of both.

The cost model (one period: a traced stretch of T cycles, then an untraced run of U, each
untraced cycle taking ``u``, each traced one ``r u``, and switching tracing off and on again
``w`` of host time between cycles): the run costs ``1 + s (r - 1) + w / ((T + U) u)`` times the
bare program, s = T / (T + U). :class:`CostSchedule` keeps a budget instead of solving for a
period, so that what the first stretch spent (before r was known) is paid back: every measured
cycle earns ``(target - 1) u``, every traced cycle spends ``(r - 1) u``, every switch pair
``w``, all from the current estimates (medians of the last :data:`WINDOW` cycles of each kind,
so a host that drifts, or one 3 s outlier, moves them little). A traced stretch starts only
when the budget stays >= 0 after it and the untraced run that must follow it.

A traced stretch is LONGEST_STRETCH cycles, or longer where a switch costs many cycles
(:func:`longest_stretch`), but never longer than the timed untraced cycles so far, so that the
cycle time keeps samples in a short run where tracing costs nothing. Floors, whatever the cost:
the first :data:`LONGEST_STRETCH` measured cycles are traced (the kernel statistics have
samples even in a short run, and r has a numerator); the first untraced run goes on until
:data:`MIN_SAMPLES` cycles are timed (r has a denominator); every untraced run is at least
:data:`COST_RUN_LENGTH` long and at least a third of the stretch before it
(:func:`shortest_run`), so at least a quarter of the cycles stay untraced; and no untraced run
is longer than :data:`RUN_FACTOR` x the stretch length (or, where a switch pair costs more, than
the cycles that earn one: :func:`longest_run`): then a stretch of at least one
traced cycle starts, and the run file says when the floor, not the budget, started one. Design and
measurements: docs/explanation/untraced-cycles.md.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from perfdiff.collect.settings import DEFAULT_COST_TARGET

RUN_LENGTH = 2  # --untraced-every's runs: a lead-in, then one timed (overhead.py)
# The default's runs at least: a lead-in, two timed cycles clear of any switch, and the one
# before the switch-on. Why: tracing goes back on at the boundary after a run's last cycle,
# which for optimizer-step cycles is inside the program's own step for that cycle, so that
# step (by the program's timer) holds the switch-on and the cycle does not. Runs of 2 made
# every timed cycle such a one (timm ViT-S, H100, 2026-12-07: -1.2..-3.5 % attached, -30..-44 %
# detached against the timer; every other timed cycle within 0.2 %); from 4 on, most of a run's
# timed cycles are clear of it, so their median is the program's step.
COST_RUN_LENGTH = 4
LONGEST_STRETCH = 6  # the first traced stretch, and the longest where switches cost little
MAX_STRETCH = 64  # the longest traced stretch where switches cost many cycles
RUN_FACTOR = 4  # untraced cycles in a row at most, per cycle of the longest stretch: then a
# traced stretch starts, whatever it costs (24 where the longest stretch is 6)
MIN_SAMPLES = 3  # traced and timed untraced cycles before r is estimated
WINDOW = 16  # recent cycles of each kind the medians are taken over
_RESAMPLES = 1_000


class Schedule(Protocol):
    """Answers, once per measured cycle in order, whether it runs untraced, and is told what
    each measured cycle and each switch of tracing took."""

    def untraced(self, position: int, run: int, stretch: int) -> bool:
        """Whether measured cycle ``position`` (1, 2, ...) runs untraced, after ``run``
        untraced (or ``stretch`` traced) measured cycles in a row."""

    def sure_untraced(self, position: int, run: int) -> int:
        """How many asks in a row, from ``untraced(position, run, 0)`` on (position and run
        one more each time), will answer True whatever the cycles between them take (they
        may skip the per-cycle calls: ``CycleLog.express``). Asks nothing, changes nothing."""

    def observe(self, duration_ns: int, *, untraced: bool, timed: bool) -> None:
        """A measured cycle completed in ``duration_ns`` (``timed``: untraced after an
        untraced one)."""

    def observe_switch(self, duration_ns: int) -> None:
        """Tracing was switched off and on again (one pair), outside every cycle, in
        ``duration_ns`` of host time."""

    def params(self) -> dict[str, Any]:
        """What the run file records of the schedule (workload params)."""


@dataclass
class Observed:
    """What the measured cycles and switches of one run took: counts over the whole run,
    durations of the last ``WINDOW`` of each kind, and every duration for the final figure."""

    traced: deque[int] = field(default_factory=lambda: deque(maxlen=WINDOW))
    timed: deque[int] = field(default_factory=lambda: deque(maxlen=WINDOW))
    switches: deque[int] = field(default_factory=lambda: deque(maxlen=WINDOW))
    all_traced: list[int] = field(default_factory=list)
    all_timed: list[int] = field(default_factory=list)
    measured: int = 0
    traced_count: int = 0
    switch_count: int = 0

    def add(self, duration_ns: int, *, untraced: bool, timed: bool) -> None:
        self.measured += 1
        if not untraced:
            self.traced_count += 1
            self.traced.append(duration_ns)
            self.all_traced.append(duration_ns)
        elif timed:
            self.timed.append(duration_ns)
            self.all_timed.append(duration_ns)

    def add_switch(self, duration_ns: int) -> None:
        self.switch_count += 1
        self.switches.append(duration_ns)

    def ready(self) -> bool:
        return len(self.traced) >= MIN_SAMPLES and len(self.timed) >= MIN_SAMPLES

    def pair_ns(self) -> float:
        """One switch off and on again, the recent pairs' median (0 before any)."""
        return float(statistics.median(self.switches)) if self.switches else 0.0

    def summary(self, target: float | None) -> dict[str, Any]:
        """The run file's record: the share realised, r over the whole run with a 95 %
        bootstrap interval (ratio of medians, traced and timed cycles resampled apart, fixed
        seed), the switch cost, and the cost they add up to."""
        out: dict[str, Any] = {"traced_share": _round(self.traced_count / max(self.measured, 1)),
                               "measured_cycles": self.measured,
                               "traced_cycles": self.traced_count,
                               "timed_untraced_cycles": len(self.all_timed)}
        if target is not None:
            out["cost_target"] = target
        if not self.all_traced or not self.all_timed:
            return out
        ratio, low, high = ratio_interval(self.all_traced, self.all_timed)
        untraced_ns = float(np.median(self.all_timed))
        share = self.traced_count / max(self.measured, 1)
        switch_share = self.switch_count * self.pair_ns() / max(self.measured * untraced_ns, 1.0)
        out.update({"traced_cost_ratio": _round(ratio), "traced_cost_ratio_low": _round(low),
                    "traced_cost_ratio_high": _round(high),
                    "switch_ms": _round(self.pair_ns() / 1e6),
                    "expected_cost": _round(1 + share * (ratio - 1) + switch_share)})
        return out


def ratio_interval(traced_ns: list[int], timed_ns: list[int]) -> tuple[float, float, float]:
    """median(traced) / median(timed), with a 95 % percentile bootstrap interval."""
    traced = np.asarray(traced_ns, dtype=np.float64)
    timed = np.maximum(np.asarray(timed_ns, dtype=np.float64), 1.0)
    rng = np.random.default_rng(0)
    top = np.median(rng.choice(traced, (_RESAMPLES, traced.size)), axis=1)
    bottom = np.median(rng.choice(timed, (_RESAMPLES, timed.size)), axis=1)
    boot = top / bottom
    return (float(np.median(traced) / np.median(timed)), float(np.percentile(boot, 2.5)),
            float(np.percentile(boot, 97.5)))


def _round(value: float) -> float:
    return round(float(value), 4)


@dataclass
class FixedSchedule:
    """``--untraced-every N``: the last ``RUN_LENGTH`` of every N measured cycles (one in N
    below 2 x RUN_LENGTH), whatever they cost; or, for the ranks of one job, the last ``run``
    of every N (:func:`make_schedule`). A pattern by position: every process that counts the
    same cycles switches at the same ones."""

    every: int
    run: int | None = None  # untraced cycles per period; None: RUN_LENGTH (or 1, see above)
    target: float | None = None  # the cost target the pattern stands in for (lock-step ranks)
    observed: Observed = field(default_factory=Observed)

    def run_length(self) -> int:
        if self.run is not None:
            return self.run
        return RUN_LENGTH if self.every >= 2 * RUN_LENGTH else 1

    def untraced(self, position: int, run: int, stretch: int) -> bool:
        return (position - 1) % self.every >= self.every - self.run_length()

    def sure_untraced(self, position: int, run: int) -> int:
        sure = 0
        while sure < self.every and self.untraced(position + sure, run + sure, 0):
            sure += 1
        return sure

    def observe(self, duration_ns: int, *, untraced: bool, timed: bool) -> None:
        self.observed.add(duration_ns, untraced=untraced, timed=timed)

    def observe_switch(self, duration_ns: int) -> None:
        self.observed.add_switch(duration_ns)

    def params(self) -> dict[str, Any]:
        if self.target is None:
            return {"chosen_by": f"--untraced-every {self.every}", **self.observed.summary(None)}
        traced = self.every - self.run_length()
        return {"chosen_by": f"ranks in lock-step: {traced} traced then {self.run_length()} "
                             f"untraced of every {self.every}",
                **self.observed.summary(self.target)}


def longest_stretch(ratio: float, switch_cycles: float) -> int:
    """The longest traced stretch for a program whose traced cycles take ``ratio`` x its
    untraced ones and whose switch pair costs ``switch_cycles`` untraced cycles: at least
    LONGEST_STRETCH, and long enough that the switch adds at most a quarter of what the
    stretch's own cycles add (a 0.24 ms CUDA-graph step with a ~1 ms switch needs dozens),
    at most MAX_STRETCH."""
    extra = max(ratio - 1, 0.05)
    return int(min(MAX_STRETCH, max(LONGEST_STRETCH, math.ceil(4 * switch_cycles / extra))))


def longest_run(stretch: int, pair_ns: float, earn_ns: float) -> int:
    """The untraced cycles in a row after which a stretch starts whatever the budget says:
    RUN_FACTOR x the longest ``stretch``, or, where a switch pair (``pair_ns``) costs more than
    that many cycles earn (``earn_ns`` each), as many as earn one pair. Why: a forced stretch
    is often one traced cycle that pays a whole switch; a detached 0.24 ms CUDA-graph replay
    (34-89 ms a pair, H100, 2026-12-07) was forced every 256 cycles and its run cost 1.7-2.2 x
    by its own figure."""
    pays = math.ceil(pair_ns / earn_ns) if earn_ns > 0 else 0
    return max(RUN_FACTOR * stretch, pays)


def shortest_run(stretch: int) -> int:
    """The untraced run that must follow a traced stretch: COST_RUN_LENGTH (a lead-in, then
    timed cycles mostly clear of the switch-on), and at least a third of the stretch, so that a
    quarter of the cycles stay untraced."""
    return max(COST_RUN_LENGTH, math.ceil(stretch / 3))


@dataclass
class CostSchedule:
    """The default: the traced share that keeps the whole run within ``target`` x bare
    (module docstring: the budget and the floors)."""

    target: float = DEFAULT_COST_TARGET
    observed: Observed = field(default_factory=Observed)
    floor_bound: int = 0  # traced stretches the longest-run floor started against the budget
    _planned: int = LONGEST_STRETCH  # length of the traced stretch under way
    _wait: int = 0  # untraced cycles to run before the budget is looked at again
    _longest_run: int = RUN_FACTOR * LONGEST_STRETCH  # the floor's run, as last estimated

    def untraced(self, position: int, run: int, stretch: int) -> bool:
        if run == 0:  # the first cycle, or inside a traced stretch
            if stretch == 0:
                self._planned = LONGEST_STRETCH
            return stretch >= self._planned
        if run < shortest_run(self._planned) or not self.observed.ready():
            return True
        # Why a countdown: the budget takes medians and a loop over stretch lengths (~10 us on
        # a slow host), and this runs between cycles, in the program's step: looked at again
        # only when the untraced cycles it said were needed have run (or the floor is near)
        if self._wait > 0 and run < self._longest_run:
            self._wait -= 1
            return True
        cap, allowed, wait, self._longest_run = self.stretch_allowed()
        if allowed >= cap:
            self._planned, self._wait = cap, 0
            return False
        if run >= self._longest_run:  # the floor: traced cycles keep coming, whatever the cost
            self.floor_bound += allowed == 0
            self._planned, self._wait = max(1, allowed), 0
            return False
        self._wait = max(wait - 1, 0)  # this cycle is one of them
        return True

    def sure_untraced(self, position: int, run: int) -> int:
        # the run's shortest length first (the budget not looked at), then the countdown: each
        # ask of it answers True, ready or not (``untraced``)
        sure = max(shortest_run(self._planned) - run, 0)
        return sure + max(min(self._wait, self._longest_run - (run + sure)), 0)

    def stretch_allowed(self) -> tuple[int, int, int, int]:
        """The longest stretch for this program (:func:`longest_stretch`); the longest (0 to
        it) after which, with the untraced run that must follow, the budget is >= 0; how
        many more untraced cycles would allow the longest (a large number where none earn);
        and the floor's longest untraced run (:func:`longest_run`)."""
        seen = self.observed
        untraced_ns = max(float(statistics.median(seen.timed)), 1.0)
        traced_ns = float(statistics.median(seen.traced))
        extra_ns = max(traced_ns - untraced_ns, 0.0)
        earn_ns = (self.target - 1) * untraced_ns
        pair_ns = seen.pair_ns()
        # no longer than the timed cycles so far (LONGEST_STRETCH at least): where tracing
        # costs nothing and a switch much, the longest stretch is MAX_STRETCH, and a short run
        # that reached it early kept 6 timed cycles of 46 for its cycle time (ResNet-50 AMP
        # detached, H100, 2026-12-07); so stretches grow with the timed cycles behind them
        cap = min(longest_stretch(traced_ns / untraced_ns, pair_ns / untraced_ns),
                  max(LONGEST_STRETCH, len(seen.all_timed)))
        budget = (earn_ns * seen.measured - extra_ns * seen.traced_count
                  - pair_ns * seen.switch_count)

        def after(stretch: int) -> float:
            return (budget + stretch * (earn_ns - extra_ns) - pair_ns
                    + shortest_run(stretch) * earn_ns)

        short = -after(cap)
        wait = 0 if short <= 0 else (math.ceil(short / earn_ns) if earn_ns > 0 else 10**9)
        floor = longest_run(cap, pair_ns, earn_ns)
        for stretch in range(cap, 0, -1):
            if after(stretch) >= 0:
                return cap, stretch, wait, floor
        return cap, 0, wait, floor

    def observe(self, duration_ns: int, *, untraced: bool, timed: bool) -> None:
        self.observed.add(duration_ns, untraced=untraced, timed=timed)

    def observe_switch(self, duration_ns: int) -> None:
        self.observed.add_switch(duration_ns)

    def params(self) -> dict[str, Any]:
        out = {"chosen_by": "cost target", **self.observed.summary(self.target)}
        if self.floor_bound:
            out["floor_bound_stretches"] = self.floor_bound
        return out


# The ranks of one job step together (a collective in every step), so a rank whose cycle is
# untraced while another's is traced waits for it, and its timed cycle holds the other's cost.
# Each rank's CostSchedule decides from its own noise, so they would drift apart; a pattern by
# position keeps them together. 2 traced in 8 keeps 1 + s (r - 1) within 1.10 up to r = 1.4
# (DDP timm ViT-S: r 1.08-1.24 bf16, 1.02-1.08 fp32 on two H200s, 2026-11-28).
LOCKSTEP_EVERY = 8
LOCKSTEP_TRACED = 2


def make_schedule(every: int | None, target: float = DEFAULT_COST_TARGET,
                  lockstep: bool = False) -> Schedule | None:
    """``every`` None: the cost-driven default (for ranks in ``lockstep``, the fixed pattern
    above); 0 (or 1): none; N >= 2: the last two of every N."""
    if every is None and lockstep:
        return FixedSchedule(LOCKSTEP_EVERY, LOCKSTEP_EVERY - LOCKSTEP_TRACED, target)
    if every is None:
        return CostSchedule(target)
    if every >= 2:
        return FixedSchedule(every)
    return None


__all__ = ["COST_RUN_LENGTH", "LOCKSTEP_EVERY", "LOCKSTEP_TRACED", "LONGEST_STRETCH",
           "MAX_STRETCH", "MIN_SAMPLES", "RUN_FACTOR", "RUN_LENGTH", "WINDOW", "CostSchedule",
           "FixedSchedule", "Observed", "Schedule", "longest_run", "longest_stretch",
           "make_schedule", "ratio_interval", "shortest_run"]

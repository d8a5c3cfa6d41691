"""A synthetic program for the untraced-cycle tests: its own clock, and the tracing backend
the untraced cycles switch.

Why one class: the schedule's tests and the express lane's run the same program (cycles of
``u`` untraced and ``r u`` traced, switches of ``w`` a pair), and each had its own copy."""

from __future__ import annotations

import numpy as np

from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.overhead import UntracedCycles

TARGET = 1.10


class SwitchingProgram:
    """A program whose cycles take ``u`` untraced and ``r u`` traced (times a seeded noise
    within +-``noise``), and whose tracing switches cost ``w`` per off-and-on pair."""

    def __init__(self, r: float, u_ns: int, w_ns: int, noise: float, seed: int) -> None:
        self.now = 0
        self.r, self.u_ns, self.w_ns, self.noise = r, u_ns, w_ns, noise
        self.rng = np.random.default_rng(seed)
        self.on = True
        self.modes: list[bool] = []  # per measured cycle: traced?

    def clock_ns(self) -> int:
        return self.now

    def pause(self) -> None:
        self.on = False
        self.now += self.w_ns // 2

    def resume(self) -> None:
        self.on = True
        self.now += self.w_ns - self.w_ns // 2

    def step(self) -> None:
        """One cycle's body: its mode noted, the clock moved by what it takes."""
        self.modes.append(self.on)
        scale = 1 + self.noise * float(self.rng.uniform(-1, 1))
        self.now += int(self.u_ns * (self.r if self.on else 1.0) * scale)

    def run(self, cycles: int, target: float = TARGET) -> UntracedCycles:
        log = CycleLog(clock_ns=self.clock_ns, wall_ns=self.clock_ns)
        untraced = UntracedCycles(None, self, log, cost_target=target)
        for _ in range(cycles):
            log.begin_cycle("", False)
            self.step()
            log.end_cycle()
        return untraced

    def cost(self) -> float:
        """The realised whole-run cost: elapsed time (switches included) over the same number
        of cycles run bare."""
        return self.now / (len(self.modes) * self.u_ns)


__all__ = ["TARGET", "SwitchingProgram"]

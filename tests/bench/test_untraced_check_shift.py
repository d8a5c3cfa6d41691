"""The timer shift of bench/record_truth/untraced_check.py: which program timer step a cycle
is, when cycles began some calls into the run (a found function, GPT-2 ``generate``). The
check it feeds (untraced cycles vs the program's own timer, issue 28) is only as right as
this line-up; the data here are the shape of a real ``generate`` run (steps scattering by
about +-15 %), not a recording."""

from __future__ import annotations

import numpy as np
import pytest

from bench.record_truth.untraced_check import aligned_offset


def _run(shift: int, *, cycles: int = 40, calls: int = 60, traced_cost: float = 1.3,
         untraced_cost: float = 1.0, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Timer steps of ``calls`` calls; cycles 0.. are calls ``shift``.., every third traced."""
    rng = np.random.default_rng(seed)
    steps = 230.0 * np.exp(rng.normal(0.0, 0.15, calls))
    idx = np.arange(cycles)
    traced = (idx % 3) != 2
    dur = steps[idx + shift] * np.where(traced, traced_cost, untraced_cost)
    dur *= np.exp(rng.normal(0.0, 0.002, cycles))  # the boundaries' few microseconds
    return dur, traced, idx, steps


@pytest.mark.parametrize("shift", [0, 1, 7, 19])
def test_the_shift_is_found_from_the_durations_shape(shift: int) -> None:
    dur, traced, idx, steps = _run(shift)
    k, clarity = aligned_offset(dur, traced, idx, steps)
    assert k == shift
    assert clarity is not None and clarity < 0.2


@pytest.mark.parametrize("level", [0.9, 1.0, 1.08])
def test_the_level_being_checked_does_not_choose_the_shift(level: float) -> None:
    """Untraced cycles 10 % faster or 8 % slower than the timer: the same shift."""
    dur, traced, idx, steps = _run(5, untraced_cost=level, seed=3)
    assert aligned_offset(dur, traced, idx, steps)[0] == 5


def test_cycles_that_are_the_timer_steps_get_shift_zero() -> None:
    """Optimizer-step and NVTX cycles: index i is step i (the method's own check)."""
    dur, traced, idx, steps = _run(0, cycles=60, calls=60, seed=7)
    assert aligned_offset(dur, traced, idx, steps)[0] == 0


def test_steady_steps_give_no_clear_shift_and_no_crash() -> None:
    steps = np.full(30, 25.0)
    idx = np.arange(20)
    traced = idx % 2 == 0
    k, clarity = aligned_offset(np.full(20, 26.0), traced, idx, steps)
    assert clarity is None  # every shift fits equally well: said so, not hidden
    assert -int(idx.max()) <= k < steps.size


def test_no_steps_or_no_cycles_is_shift_zero() -> None:
    none = np.zeros(0)
    assert aligned_offset(none, none.astype(bool), none.astype(int), np.ones(5)) == (0, None)
    assert aligned_offset(np.ones(5), np.ones(5, bool), np.arange(5), np.zeros(0)) == (0, None)

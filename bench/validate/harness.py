"""The simulation grid and its execution: which trials are run, in which cells, how many.

Why one grid for every criterion: each trial draws one noise realisation of a cell and compares
it five ways (as drawn, A/A; with a slowdown of exactly the printed MDE; of twice the MDE; with
a random 1-20 % slowdown; with a cost shift). Reusing the draw keeps the criteria comparable and
cuts the work; the A/A comparison of the draw is also the one whose printed MDE sizes the two
MDE injections.

Cells: lag-1 correlation x run-to-run offset x design (one run per side, tested on batch means;
several runs per side, tested on run means). Trials are independent and seeded by
``(base_seed, cell, trial)``, so they run in worker processes in any order with the same result.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache

import numpy as np

from bench.validate.simulate import (
    CostShift,
    Scenario,
    Slowdown,
    expected_kernel_ms,
)
from bench.validate.trials import (
    CompareFn,
    MdeTrial,
    TrialDigest,
    production_compare,
    run_mde_trial,
    run_trial,
)
from perfdiff.analysis.model import CompareOptions


@dataclass(frozen=True)
class Design:
    """How much data each side has, and hence which test unit the statistics use."""

    label: str
    n_runs: int
    n_cycles: int


ONE_RUN = Design("1 run x 200 cycles per side", 1, 200)
FIVE_RUNS = Design("5 runs x 60 cycles per side", 5, 60)

LAG1S = (0.0, 0.3, 0.6, 0.9)
OFFSETS_PCT = (0.0, 1.0, 2.0)
DESIGNS = (ONE_RUN, FIVE_RUNS)
MDE_KERNEL = 0  # the largest kernel (a GEMM), where a regression usually matters most
SLOWDOWN_RANGE_PCT = (1.0, 20.0)
SHIFT_RANGE_PCT = (5.0, 50.0)


@dataclass(frozen=True)
class Cell:
    """One point of the grid."""

    design: Design
    lag1: float
    offset_pct: float
    base: Scenario = field(default_factory=Scenario)

    @property
    def scenario(self) -> Scenario:
        return replace(
            self.base,
            n_runs=self.design.n_runs,
            n_cycles=self.design.n_cycles,
            lag1=self.lag1,
            run_offset_pct=self.offset_pct,
        )

    @property
    def label(self) -> str:
        return f"{self.design.label}, lag-1 {self.lag1:g}, offset {self.offset_pct:g} %"


def grid(
    designs: Sequence[Design] = DESIGNS,
    lag1s: Sequence[float] = LAG1S,
    offsets_pct: Sequence[float] = OFFSETS_PCT,
    base: Scenario | None = None,
) -> tuple[Cell, ...]:
    """Every (design, lag-1, offset) cell."""
    base = base or Scenario()
    return tuple(
        Cell(design, lag1, offset, base)
        for design in designs
        for lag1 in lag1s
        for offset in offsets_pct
    )


def matched_options(cell: Cell, options: CompareOptions) -> CompareOptions:
    """``options`` with the one-run assumptions set to the cell's truth.

    Why: with one run per side, run-to-run variation cannot be measured, only assumed
    (``run_cv_pct``; ``idle_run_cv_pct`` for GPU idle, in % of the cycle). A test built on an
    assumption is exact when the assumption is true, conservative when the truth is smaller,
    liberal when it is larger. The grid measures the method with the assumption true: the
    simulator gives every kernel a run offset of ``offset_pct`` and GPU idle none. What a
    wrong assumption costs is measured separately (``--assume fixed --run-cv-pct X``).
    Several runs per side measure the variation: nothing to assume.
    """
    if cell.design.n_runs > 1:
        return options
    # no raise where the GPU idles (host_run_cv_pct): the simulator's run offset does not
    # follow GPU idle, so the raise would make the assumption untrue
    return replace(options, run_cv_pct=cell.offset_pct, idle_run_cv_pct=0.0,
                   host_run_cv_pct=0.0)


@dataclass(frozen=True)
class CellTrial:
    """Everything one draw of a cell produced."""

    mde: MdeTrial  # .aa is the A/A comparison of the draw, .injected the 1 x MDE slowdown
    mde2: TrialDigest  # the same draw with 2 x the printed MDE
    slowdown: TrialDigest  # a random 1-20 % slowdown of a random top-4 kernel
    slowdown_kernel: int
    slowdown_pct: float
    slowdown_truth_ms: float  # true change of that kernel's mean time per cycle
    shift: TrialDigest  # a random 5-50 % cost shift between two top-4 kernels
    shift_pct: float


@dataclass(frozen=True)
class CellResult:
    cell: Cell
    trials: tuple[CellTrial, ...]

    @property
    def aa(self) -> list[TrialDigest]:
        return [t.mde.aa for t in self.trials]


@cache
def _expected_ms(scenario: Scenario) -> np.ndarray:
    return expected_kernel_ms(scenario, runs=max(1000, 200_000 // scenario.n_cycles))


def run_cell_trial(
    cell: Cell,
    seed: tuple[int, ...],
    options: CompareOptions,
    compare: CompareFn = production_compare,
) -> CellTrial:
    """One draw of ``cell``, compared five ways (see the module docstring)."""
    scenario = cell.scenario
    expected = _expected_ms(scenario)
    rng = np.random.default_rng(np.random.SeedSequence((*seed, 99)))
    mde = run_mde_trial(scenario, MDE_KERNEL, 1.0, seed, options, expected, compare)
    if math.isfinite(mde.slowdown_pct):
        mde2 = run_trial(
            scenario, Slowdown(MDE_KERNEL, 2.0 * mde.slowdown_pct), seed, options, compare
        )
    else:
        mde2 = mde.aa
    kernel = int(rng.integers(0, min(4, scenario.n_kernels)))
    pct = float(rng.uniform(*SLOWDOWN_RANGE_PCT))
    slowdown = run_trial(scenario, Slowdown(kernel, pct), seed, options, compare)
    source, target = (int(k) for k in rng.choice(min(4, scenario.n_kernels), 2, replace=False))
    shift_pct = float(rng.uniform(*SHIFT_RANGE_PCT))
    shift = run_trial(scenario, CostShift(source, target, shift_pct), seed, options, compare)
    return CellTrial(
        mde=mde,
        mde2=mde2,
        slowdown=slowdown,
        slowdown_kernel=kernel,
        slowdown_pct=pct,
        slowdown_truth_ms=pct / 100.0 * float(expected[kernel]),
        shift=shift,
        shift_pct=shift_pct,
    )


def _task(
    args: tuple[Cell, tuple[int, ...], CompareOptions, CompareFn, bool],
) -> CellTrial:
    cell, seed, options, compare, matched = args
    if matched:
        options = matched_options(cell, options)
    return run_cell_trial(cell, seed, options, compare)


def run_grid(
    cells: Iterable[Cell],
    n_trials: int,
    options: CompareOptions | None = None,
    *,
    base_seed: int = 2026,
    workers: int = 1,
    compare: CompareFn = production_compare,
    progress: Callable[[int, int], None] | None = None,
    matched: bool = False,
) -> tuple[CellResult, ...]:
    """Run ``n_trials`` draws of every cell, in ``workers`` processes (1: in this process);
    ``matched``: one-run cells assume their true run offset (:func:`matched_options`)."""
    options = options or CompareOptions()
    cells = tuple(cells)
    tasks = [
        (cell, (base_seed, index, trial), options, compare, matched)
        for index, cell in enumerate(cells)
        for trial in range(n_trials)
    ]
    results: list[CellTrial] = []
    if workers <= 1:
        for done, task in enumerate(tasks, 1):
            results.append(_task(task))
            if progress:
                progress(done, len(tasks))
    else:
        # spawn, not fork: forking a process that already runs BLAS threads can deadlock.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            for done, result in enumerate(
                pool.map(_task, tasks, chunksize=max(1, n_trials // 8)), 1
            ):
                results.append(result)
                if progress:
                    progress(done, len(tasks))
    return tuple(
        CellResult(cell, tuple(results[i * n_trials : (i + 1) * n_trials]))
        for i, cell in enumerate(cells)
    )

"""One simulated comparison ("trial") and the few numbers of its result the harness scores.

Why keep only a digest: the harness runs thousands of trials in worker processes; shipping whole
:class:`~perfdiff.analysis.model.Comparison` objects back would cost more than the statistics.
A trial is a pure function of ``(scenario, effect, seed, options)``, so any result can be
reproduced alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bench.validate.simulate import (
    Effect,
    Scenario,
    Slowdown,
    apply_effect,
    kernel_names,
    simulate_side,
    to_table,
)
from perfdiff.analysis.columns import PSEUDO_TYPES
from perfdiff.analysis.model import CompareOptions, Comparison

CompareFn = Callable[[pd.DataFrame, pd.DataFrame, CompareOptions], Comparison]
CHANGE_VERDICTS = frozenset({"slower", "faster"})


def production_compare(
    normal: pd.DataFrame, abnormal: pd.DataFrame, options: CompareOptions
) -> Comparison:
    """``compare_tables`` exactly as ``perfdiff compare`` calls it (imported late: the harness
    must load even while the statistics module is being written)."""
    from perfdiff.analysis.comparison import compare_tables

    return compare_tables(normal, abnormal, options)


@dataclass(frozen=True)
class RowDigest:
    """The scored fields of one row of the detailed table."""

    function: str
    metric: str
    verdict: str
    p_time: float  # Welch on time per cycle: the test behind q_value and the verdict
    p_cycle_share: float
    p_metric_mean: float
    q_value: float
    time_delta_ms: float
    time_ci_low_ms: float
    time_ci_high_ms: float


@dataclass(frozen=True)
class TrialDigest:
    """The scored fields of one comparison."""

    rows: tuple[RowDigest, ...]
    cycle_verdict: str
    cycle_p: float
    cycle_ms_normal: float
    mde_pct: float
    top_function: str  # first key finding, else first ranked row
    test_unit: str

    def changed_rows(self) -> tuple[RowDigest, ...]:
        """One row per function with a "slower" or "faster" verdict: what the report calls a
        change. (A verdict is the function's: its metric rows repeat it, and counting them
        would weigh a discovery by how many metrics the function happens to have.)"""
        seen: dict[str, RowDigest] = {}
        for row in self.rows:
            if row.verdict in CHANGE_VERDICTS:
                seen.setdefault(row.function, row)
        return tuple(seen.values())


def digest(comparison: Comparison) -> TrialDigest:
    """Keep what the harness scores of one comparison."""
    rows = tuple(
        RowDigest(
            function=row.function,
            metric=row.metric,
            verdict=row.verdict,
            p_time=row.p_time,
            p_cycle_share=row.p_cycle_share,
            p_metric_mean=row.p_metric_mean,
            q_value=row.q_value,
            time_delta_ms=row.time_delta_ms,
            time_ci_low_ms=row.time_ci_low_ms,
            time_ci_high_ms=row.time_ci_high_ms,
        )
        for row in comparison.rows
        # the harness scores functions; families and replacements (sums and pairings of
        # them, tested in a Benjamini-Hochberg family of their own) are not scored
        if row.func_type not in PSEUDO_TYPES
    )
    functions = {r.function for r in rows}
    firsts = [f.function for f in comparison.findings if f.function in functions]
    top = firsts[0] if firsts else (rows[0].function if rows else "")
    return TrialDigest(
        rows=rows,
        cycle_verdict=comparison.cycle_time.verdict,
        cycle_p=comparison.cycle_time.p_value,
        cycle_ms_normal=comparison.normal.cycle_ms_mean,
        mde_pct=comparison.mde_pct,
        top_function=top,
        test_unit=comparison.test_unit,
    )


Seed = int | tuple[int, ...]


def _sides(seed: Seed) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    normal_seq, abnormal_seq = np.random.SeedSequence(seed).spawn(2)
    return normal_seq, abnormal_seq


def run_trial(
    scenario: Scenario,
    effect: Effect | None,
    seed: Seed,
    options: CompareOptions,
    compare: CompareFn = production_compare,
) -> TrialDigest:
    """Compare two sides drawn from ``scenario``, ``effect`` applied to the abnormal one."""
    normal_seq, abnormal_seq = _sides(seed)
    normal = simulate_side(scenario, np.random.default_rng(normal_seq))
    abnormal = simulate_side(scenario, np.random.default_rng(abnormal_seq))
    abnormal = apply_effect(abnormal, scenario, effect)
    return digest(
        compare(
            to_table(normal, scenario, first_run=0),
            to_table(abnormal, scenario, first_run=scenario.n_runs),
            options,
        )
    )


@dataclass(frozen=True)
class MdeTrial:
    """A slowdown sized from the MDE the report printed for the same data without it."""

    aa: TrialDigest  # the data as drawn: its report prints the MDE
    injected: TrialDigest  # the same noise with the slowdown added
    slowdown_pct: float  # the injected kernel's slowdown, % of its own time
    added_ms: float  # the true added time per cycle


def run_mde_trial(
    scenario: Scenario,
    kernel: int,
    multiple: float,
    seed: Seed,
    options: CompareOptions,
    expected_ms: np.ndarray,
    compare: CompareFn = production_compare,
) -> MdeTrial:
    """Read the MDE the report prints for this draw, inject ``multiple`` x that MDE into
    ``kernel`` (same noise), compare again.

    Why the same draw: "power at the printed MDE" promises that a change of the size the report
    says it can see, on data like this, is seen; the printed MDE is a function of the data.
    """
    aa = run_trial(scenario, None, seed, options, compare)
    if not math.isfinite(aa.mde_pct):
        return MdeTrial(aa=aa, injected=aa, slowdown_pct=math.nan, added_ms=math.nan)
    added_ms = multiple * aa.mde_pct / 100.0 * aa.cycle_ms_normal
    slowdown_pct = 100.0 * added_ms / float(expected_ms[kernel])
    injected = run_trial(scenario, Slowdown(kernel, slowdown_pct), seed, options, compare)
    return MdeTrial(
        aa=aa,
        injected=injected,
        slowdown_pct=slowdown_pct,
        added_ms=slowdown_pct / 100.0 * float(expected_ms[kernel]),
    )


def target_name(scenario: Scenario, kernel: int) -> str:
    """The function name of kernel index ``kernel`` in tables drawn from ``scenario``."""
    return kernel_names(scenario.n_kernels)[kernel]

"""Scores of many trials against the acceptance criteria of issue 6.

Why a module of its own: the numbers in ``docs/explanation/validation.md`` and the regression
tests must be computed the same way; both call these functions. Every rate comes with its
Clopper-Pearson 95 % interval, because a rate measured on 200 trials is itself uncertain and a
criterion should only be called failed when the interval says so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scipy import stats

from bench.validate.trials import CHANGE_VERDICTS, MdeTrial, RowDigest, TrialDigest


@dataclass(frozen=True)
class Rate:
    """``hits`` out of ``n`` with its exact (Clopper-Pearson) 95 % interval."""

    hits: int
    n: int

    @property
    def value(self) -> float:
        return self.hits / self.n if self.n else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        if self.n == 0:
            return (math.nan, math.nan)
        low = (
            0.0
            if self.hits == 0
            else float(stats.beta.ppf(0.025, self.hits, self.n - self.hits + 1))
        )
        high = (
            1.0
            if self.hits == self.n
            else float(stats.beta.ppf(0.975, self.hits + 1, self.n - self.hits))
        )
        return (low, high)


def binomial_band(n: int, alpha: float) -> tuple[int, int]:
    """Central 95 % range of the number of rejections of ``n`` tests at level ``alpha``."""
    return (int(stats.binom.ppf(0.025, n, alpha)), int(stats.binom.ppf(0.975, n, alpha)))


def chance_outside_band(n: int, alpha: float) -> float:
    """Probability that an exactly calibrated row still falls outside its band."""
    low, high = binomial_band(n, alpha)
    inside = stats.binom.cdf(high, n, alpha) - stats.binom.cdf(low - 1, n, alpha)
    return float(1.0 - inside)


FUNCTION_LEVEL = frozenset(
    {"p_time", "p_cycle_share"}
)  # tests of a function, repeated on its metric rows


def _row_key(row: RowDigest, column: str) -> tuple[str, str]:
    return (row.function, "") if column in FUNCTION_LEVEL else (row.function, row.metric)


@dataclass(frozen=True)
class RowFalsePositives:
    """Per-row A/A rejection counts of one p-value column."""

    n_trials: int
    alpha: float
    rejections: dict[tuple[str, str], int]  # row -> trials with p < alpha
    tested: dict[tuple[str, str], int]  # row -> trials with a finite p

    @property
    def pooled(self) -> Rate:
        return Rate(sum(self.rejections.values()), sum(self.tested.values()))

    def rows_above_band(self) -> list[tuple[str, str]]:
        return [
            k
            for k, n in self.tested.items()
            if self.rejections[k] > binomial_band(n, self.alpha)[1]
        ]

    def rows_below_band(self) -> list[tuple[str, str]]:
        return [
            k
            for k, n in self.tested.items()
            if self.rejections[k] < binomial_band(n, self.alpha)[0]
        ]

    @property
    def max_rate(self) -> float:
        rates = [self.rejections[k] / n for k, n in self.tested.items() if n]
        return max(rates) if rates else math.nan


def row_false_positives(
    trials: Sequence[TrialDigest], alpha: float, column: str
) -> RowFalsePositives:
    """Count, per (function, metric) row, A/A trials whose ``column`` p-value is below alpha.

    Rows are the unit of the criterion "A/A false-positive rate per row within the binomial
    band": a test that is right on average but wrong for the small, noisy kernels fails it.
    """
    rejections: dict[tuple[str, str], int] = defaultdict(int)
    tested: dict[tuple[str, str], int] = defaultdict(int)
    for trial in trials:
        p_of = {_row_key(row, column): float(getattr(row, column)) for row in trial.rows}
        for key, p in p_of.items():
            if math.isfinite(p):
                tested[key] += 1
                rejections[key] += int(p < alpha)
    return RowFalsePositives(len(trials), alpha, dict(rejections), dict(tested))


def quiet_reports(trials: Sequence[TrialDigest], *, include_cycle: bool = True) -> Rate:
    """Reports with no "slower"/"faster" verdict at all (rows, and the cycle time if asked)."""
    quiet = 0
    for trial in trials:
        loud = bool(trial.changed_rows()) or (
            include_cycle and trial.cycle_verdict in CHANGE_VERDICTS
        )
        quiet += int(not loud)
    return Rate(quiet, len(trials))


def false_discovery_share(trials: Iterable[TrialDigest], target: str) -> tuple[float, Rate]:
    """Mean over trials of V / max(R, 1), and the share of trials with any false discovery.

    A discovery is a row with a "slower" or "faster" verdict; it is false unless it is a
    "slower" row of the injected kernel (no other function's time changed in the simulation,
    and shares that merely moved are not the report's verdicts).
    """
    shares: list[float] = []
    any_false = 0
    for trial in trials:
        changed = trial.changed_rows()
        false = [r for r in changed if not (r.function == target and r.verdict == "slower")]
        shares.append(len(false) / max(len(changed), 1))
        any_false += int(bool(false))
    return (sum(shares) / len(shares) if shares else math.nan, Rate(any_false, len(shares)))


def target_rows(trial: TrialDigest, target: str) -> list[RowDigest]:
    return [row for row in trial.rows if row.function == target]


def detected(trials: Iterable[TrialDigest], target: str) -> Rate:
    """Trials in which the injected kernel got a "slower" verdict."""
    hits = n = 0
    for trial in trials:
        n += 1
        hits += int(any(r.verdict == "slower" for r in target_rows(trial, target)))
    return Rate(hits, n)


def covered(trials: Iterable[TrialDigest], target: str, truths_ms: Iterable[float]) -> Rate:
    """Trials whose 95 % interval of the injected kernel's time change holds the true change."""
    hits = n = 0
    for trial, truth in zip(trials, truths_ms, strict=True):
        rows = target_rows(trial, target)
        if not rows:
            continue
        row = rows[0]  # the time interval is the function's: identical on its metric rows
        n += 1
        hits += int(row.time_ci_low_ms <= truth <= row.time_ci_high_ms)
    return Rate(hits, n)


def ranked_first(trials: Iterable[TrialDigest], target: str) -> Rate:
    """Trials whose first key finding (or first ranked row) is the injected kernel."""
    hits = n = 0
    for trial in trials:
        n += 1
        hits += int(trial.top_function == target)
    return Rate(hits, n)


def cycle_changes(trials: Iterable[TrialDigest]) -> Rate:
    """Trials whose report calls the total cycle time slower or faster."""
    hits = n = 0
    for trial in trials:
        n += 1
        hits += int(trial.cycle_verdict in CHANGE_VERDICTS)
    return Rate(hits, n)


def cycle_changes_beyond_twin(shifted: Sequence[TrialDigest], twins: Sequence[TrialDigest]) -> Rate:
    """Shifted trials called a cycle-time change while their A/A twin (same draw, no shift) was
    not: the changes the shift itself caused. A shift keeps every cycle's duration exactly, so
    a cycle-time test that reads only cycle durations can never be moved by it; a non-zero count
    means the cycle-time verdict is built from something else (shares, per-function sums)."""
    hits = 0
    for shift, twin in zip(shifted, twins, strict=True):
        hits += int(
            shift.cycle_verdict in CHANGE_VERDICTS and shift.cycle_verdict != twin.cycle_verdict
        )
    return Rate(hits, len(shifted))


def mde_power(trials: Sequence[MdeTrial], target: str) -> Rate:
    """Power at the printed MDE: injected trials (with a finite MDE) flagged "slower"."""
    return detected([t.injected for t in trials if math.isfinite(t.slowdown_pct)], target)

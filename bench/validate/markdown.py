"""Markdown tables of a validation run (what docs/explanation/validation.md quotes).

Why here and not in ``perfdiff/report``: this renders the harness's own measurements, not a
Comparison; it is a developer tool, and it must import nothing outside ``analysis``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from bench.validate.criteria import (
    Rate,
    RowFalsePositives,
    binomial_band,
    chance_outside_band,
    covered,
    cycle_changes,
    cycle_changes_beyond_twin,
    detected,
    false_discovery_share,
    mde_power,
    quiet_reports,
    ranked_first,
    row_false_positives,
)
from bench.validate.harness import MDE_KERNEL, CellResult
from bench.validate.trials import target_name


def pct(value: float, digits: int = 1) -> str:
    return "n/a" if not math.isfinite(value) else f"{100.0 * value:.{digits}f} %"


def rate(r: Rate) -> str:
    low, high = r.interval
    if r.n == 0:
        return "n/a"
    return f"{pct(r.value)} ({pct(low)}-{pct(high)})"


@dataclass(frozen=True)
class CellScores:
    """Every criterion's measurement for one cell."""

    label: str
    test_unit: str
    n: int
    fp_time: RowFalsePositives  # Welch on time per cycle: the test behind the verdicts
    fp_cycle_share: RowFalsePositives
    fp_metric_mean: RowFalsePositives
    fp_cycle: Rate
    quiet: Rate
    mde_median_pct: float
    mde_low_pct: float
    mde_high_pct: float
    power: Rate
    rank_2x: Rate
    coverage_mde: Rate
    fdr: float
    any_false: Rate
    coverage_random: Rate
    power_random: Rate
    shift_cycle_changes: Rate
    shift_caused_changes: Rate


def score(result: CellResult, alpha: float) -> CellScores:
    """Measure every criterion on one cell's trials."""
    cell = result.cell
    scenario = cell.scenario
    aa = result.aa
    cycle_fp = Rate(sum(int(t.cycle_p < alpha) for t in aa), len(aa))
    mdes = np.array([t.mde.aa.mde_pct for t in result.trials], dtype=np.float64)
    finite = mdes[np.isfinite(mdes)]
    target = target_name(scenario, MDE_KERNEL)
    with_mde = [t for t in result.trials if math.isfinite(t.mde.slowdown_pct)]
    random_targets = [target_name(scenario, t.slowdown_kernel) for t in result.trials]
    fdr_parts = [
        false_discovery_share([t.slowdown], name)
        for t, name in zip(result.trials, random_targets, strict=True)
    ]
    fdr_mde = [false_discovery_share([t.mde.injected], target) for t in with_mde]
    fdr_mde2 = [false_discovery_share([t.mde2], target) for t in with_mde]
    all_fdr = [share for share, _ in fdr_parts + fdr_mde + fdr_mde2]
    any_false = sum(r.hits for _, r in fdr_parts + fdr_mde + fdr_mde2)
    return CellScores(
        label=cell.label,
        test_unit=aa[0].test_unit if aa else "n/a",
        n=len(aa),
        fp_time=row_false_positives(aa, alpha, "p_time"),
        fp_cycle_share=row_false_positives(aa, alpha, "p_cycle_share"),
        fp_metric_mean=row_false_positives(aa, alpha, "p_metric_mean"),
        fp_cycle=cycle_fp,
        quiet=quiet_reports(aa),
        mde_median_pct=float(np.median(finite)) if finite.size else math.nan,
        mde_low_pct=float(finite.min()) if finite.size else math.nan,
        mde_high_pct=float(finite.max()) if finite.size else math.nan,
        power=mde_power([t.mde for t in result.trials], target),
        rank_2x=ranked_first([t.mde2 for t in with_mde], target),
        coverage_mde=covered(
            [t.mde.injected for t in with_mde], target, [t.mde.added_ms for t in with_mde]
        ),
        fdr=float(np.mean(all_fdr)) if all_fdr else math.nan,
        any_false=Rate(any_false, len(all_fdr)),
        coverage_random=_covered_random(result),
        power_random=Rate(
            sum(
                detected([t.slowdown], name).hits
                for t, name in zip(result.trials, random_targets, strict=True)
            ),
            len(result.trials),
        ),
        shift_cycle_changes=cycle_changes([t.shift for t in result.trials]),
        shift_caused_changes=cycle_changes_beyond_twin(
            [t.shift for t in result.trials], [t.mde.aa for t in result.trials]
        ),
    )


def _covered_random(result: CellResult) -> Rate:
    hits = n = 0
    for trial in result.trials:
        name = target_name(result.cell.scenario, trial.slowdown_kernel)
        one = covered([trial.slowdown], name, [trial.slowdown_truth_ms])
        hits, n = hits + one.hits, n + one.n
    return Rate(hits, n)


def aa_table(scores: Sequence[CellScores], alpha: float) -> str:
    """A/A: false-positive rates against the binomial band, and quiet reports."""
    n = scores[0].n if scores else 0
    low, high = binomial_band(n, alpha)
    lines = [
        f"A/A, {n} trials per cell, alpha = {alpha}: binomial 95 % band of a row's rejections "
        f"= {low}-{high} of {n} ({pct(low / max(n, 1))}-{pct(high / max(n, 1))}); an exactly "
        f"calibrated row falls outside it with probability {pct(chance_outside_band(n, alpha))}.",
        "",
        "Each test column: share of (row, trial) pairs with p < α (95 % interval), then the "
        "number of rows whose own rate lies above / below the band, of all rows tested. "
        "Time = Welch on time per cycle (the test behind q and the verdict).",
        "",
        "| cell | unit | time: p < α | rows above / below | β: p < α | rows above / below "
        "| μ: p < α | rows above / below | cycle p < α | reports with no verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in scores:
        lines.append(
            f"| {s.label} | {s.test_unit} | {_fp(s.fp_time)} | {_fp(s.fp_cycle_share)} "
            f"| {_fp(s.fp_metric_mean)} | {rate(s.fp_cycle)} | {rate(s.quiet)} |"
        )
    return "\n".join(lines)


def _fp(fp: RowFalsePositives) -> str:
    above, below = len(fp.rows_above_band()), len(fp.rows_below_band())
    return f"{rate(fp.pooled)} | {above} / {below} of {len(fp.tested)}"


def injection_table(scores: Sequence[CellScores]) -> str:
    """Power, ranking, coverage, false discoveries and cost shifts."""
    lines = [
        "| cell | printed MDE, median (min-max) | power at MDE | first at 2x MDE "
        "| CI coverage at MDE | CI coverage, 1-20 % | detected, 1-20 % | false-discovery share "
        "| trials with a false discovery | cost shift called a cycle change (A/A twin was not) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in scores:
        mde = (
            "n/a"
            if not math.isfinite(s.mde_median_pct)
            else f"{s.mde_median_pct:.2f} % ({s.mde_low_pct:.2f}-{s.mde_high_pct:.2f})"
        )
        lines.append(
            f"| {s.label} | {mde} | {rate(s.power)} | {rate(s.rank_2x)} "
            f"| {rate(s.coverage_mde)} | {rate(s.coverage_random)} | {rate(s.power_random)} "
            f"| {pct(s.fdr)} | {rate(s.any_false)} | {s.shift_cycle_changes.hits} "
            f"({s.shift_caused_changes.hits}) of {s.shift_cycle_changes.n} |"
        )
    return "\n".join(lines)


def _below(r: Rate, target: float, cells: int) -> bool:
    """A cell clearly below ``target``: one-sided binomial p < 0.05 / cells (Bonferroni: with
    24 cells of 100 trials, a per-cell 95 % check would fail a calibrated method by chance
    about a third of the time)."""
    return r.n > 0 and float(stats.binom.cdf(r.hits, r.n, target)) < 0.05 / cells


def _above(r: Rate, target: float, cells: int) -> bool:
    return r.n > 0 and float(stats.binom.sf(r.hits - 1, r.n, target)) < 0.05 / cells


def _pooled(rates: Sequence[Rate]) -> Rate:
    return Rate(sum(r.hits for r in rates), sum(r.n for r in rates))


def _status(ok: bool) -> str:
    return "holds" if ok else "FAILS"


def criteria_table(scores: Sequence[CellScores], alpha: float, q: float) -> str:
    """One line per acceptance criterion: its worst cell and whether it holds everywhere."""

    def worst(key: str, highest: bool) -> CellScores:
        ordered = sorted(
            scores,
            key=lambda s: (
                getattr(s, key).value if isinstance(getattr(s, key), Rate) else getattr(s, key)
            ),
        )
        return ordered[-1] if highest else ordered[0]

    rows: list[tuple[str, str, str, bool]] = []
    n = scores[0].n
    chance = chance_outside_band(n, alpha)
    fps: list[RowFalsePositives] = [s.fp_time for s in scores]
    above = sum(len(fp.rows_above_band()) for fp in fps)
    below = sum(len(fp.rows_below_band()) for fp in fps)
    tested = sum(len(fp.tested) for fp in fps)
    worst_cell = scores[int(np.argmax([fp.pooled.value for fp in fps]))]
    cycle_share_above = sum(len(s.fp_cycle_share.rows_above_band()) for s in scores)
    cycle_share_below = sum(len(s.fp_cycle_share.rows_below_band()) for s in scores)
    rows.append(
        (
            "A/A rate of p < α per row within the binomial band (Welch on time per cycle: the "
            "test behind q and every verdict)",
            f"{above} rows above and {below} below the band, of {tested} "
            f"(chance alone: about {chance * tested:.0f} outside); highest pooled rate "
            f"{rate(worst_cell.fp_time.pooled)} in {worst_cell.label}. Shares β, which decide "
            f"no verdict: {cycle_share_above} above, {cycle_share_below} below",
            "no more rows outside than chance",
            above + below <= max(2.0 * chance * tested, chance * tested + 3),
        )
    )
    worst_quiet = worst("quiet", False)
    pooled_quiet = _pooled([s.quiet for s in scores])
    rows.append(
        (
            "A/A reports with no slower/faster verdict (pooled over cells; no cell clearly "
            "below)",
            f"pooled {rate(pooled_quiet)}; lowest cell {rate(worst_quiet.quiet)} in "
            f"{worst_quiet.label}",
            ">= 95 %",
            pooled_quiet.value >= 0.95
            and not any(_below(s.quiet, 0.95, len(scores)) for s in scores),
        )
    )
    worst_fdr = worst("fdr", True)
    rows.append(
        (
            "realised false-discovery share",
            f"{pct(worst_fdr.fdr)} in {worst_fdr.label}",
            f"<= q = {q}",
            all(s.fdr <= q for s in scores),
        )
    )
    worst_power = worst("power", False)
    pooled_power = _pooled([s.power for s in scores])
    rows.append(
        (
            "power at the printed MDE (pooled over cells; no cell clearly below)",
            f"pooled {rate(pooled_power)}; lowest cell {rate(worst_power.power)} in "
            f"{worst_power.label}",
            ">= 80 %",
            pooled_power.value >= 0.8
            and not any(_below(s.power, 0.8, len(scores)) for s in scores),
        )
    )
    for key, name in (
        ("coverage_random", "95 % CI coverage (1-20 % slowdowns)"),
        ("coverage_mde", "95 % CI coverage (slowdown = MDE)"),
    ):
        low_cell, high_cell = worst(key, False), worst(key, True)
        pooled = _pooled([getattr(s, key) for s in scores])
        rows.append(
            (
                f"{name} (pooled over cells; no cell clearly outside)",
                f"pooled {rate(pooled)}; lowest {rate(getattr(low_cell, key))} in "
                f"{low_cell.label}; highest {rate(getattr(high_cell, key))} in "
                f"{high_cell.label}",
                "93-97 %",
                0.93 <= pooled.value <= 0.97
                and not any(
                    _below(getattr(s, key), 0.93, len(scores))
                    or _above(getattr(s, key), 0.97, len(scores))
                    for s in scores
                ),
            )
        )
    worst_rank = worst("rank_2x", False)
    rows.append(
        (
            "injected kernel first at 2x MDE",
            f"{rate(worst_rank.rank_2x)} in {worst_rank.label}",
            ">= 90 %",
            all(s.rank_2x.value >= 0.9 for s in scores),
        )
    )
    shifts = sum(s.shift_cycle_changes.hits for s in scores)
    caused = sum(s.shift_caused_changes.hits for s in scores)
    shift_n = sum(s.shift_cycle_changes.n for s in scores)
    aa_cycle = sum(s.fp_cycle.hits for s in scores)
    rows.append(
        (
            "cost shifts reported as a cycle-time change (a verdict the shift caused: "
            "slower/faster where the same draw without the shift was not)",
            f"{caused} of {shift_n}; all {shifts} cost-shift reports with a cycle-time verdict "
            f"had it without the shift too (the cycle test's own A/A rate: {aa_cycle} of "
            f"{sum(s.fp_cycle.n for s in scores)} A/A draws at p < α)",
            "never",
            caused == 0,
        )
    )
    lines = ["| criterion | measured (worst cell) | target | status |", "| --- | --- | --- | --- |"]
    lines += [f"| {c} | {m} | {t} | {_status(ok)} |" for c, m, t, ok in rows]
    return "\n".join(lines)

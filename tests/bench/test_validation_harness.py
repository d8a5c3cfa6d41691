"""The harness end to end, driven by a small textbook comparison whose behaviour is known.

Why a stand-in: the harness's plumbing (seeding, the five comparisons of a draw, MDE-sized
injections, scoring) must be right independently of the production statistics; a Welch test on
run means (or batch means) with Benjamini-Hochberg is the textbook method, so the harness must
find it calibrated on independent cycles and must catch it when it is made to over-flag.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from scipy import stats

from bench.validate.criteria import row_false_positives
from bench.validate.harness import FIVE_RUNS, ONE_RUN, Cell, run_grid
from bench.validate.markdown import aa_table, criteria_table, injection_table, score
from bench.validate.simulate import Scenario
from perfdiff.analysis.model import (
    CompareOptions,
    Comparison,
    CycleTimeChange,
    MetricRow,
    SideSummary,
)

SMALL = Scenario(n_kernels=6, metrics=())
_SET_FIELDS = {
    "function",
    "func_type",
    "metric",
    "device",
    "pid",
    "p_cycle_share",
    "p_time",
    "suspicion",
    "q_value",
    "time_delta_ms",
    "time_ci_low_ms",
    "time_ci_high_ms",
    "verdict",
    "n_normal",
    "n_abnormal",
}
_NAN_FIELDS = [f.name for f in dataclasses.fields(MetricRow) if f.name not in _SET_FIELDS]


def _units(table: pd.DataFrame, n_batches: int) -> tuple[pd.DataFrame, pd.Series]:
    """Time per cycle of each function, averaged per run (>= 2 runs) or per batch."""
    rows = table.drop_duplicates(["run", "cycle", "function"])
    runs = rows["run"].nunique()
    if runs >= 2:
        unit = rows["run"]
    else:
        unit = (rows["cycle"].rank(method="dense") - 1) * n_batches // rows["cycle"].nunique()
    per_unit = rows.assign(unit=unit.to_numpy()).pivot_table(
        index="unit", columns="function", values="time_ms", aggfunc="mean"
    )
    cycles = rows.drop_duplicates(["run", "cycle"]).assign(
        unit=unit.loc[rows.drop_duplicates(["run", "cycle"]).index].to_numpy()
    )
    return per_unit, cycles.groupby("unit")["cycle_ms"].mean()


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    t = (b.mean() - a.mean()) / se
    return float(2 * stats.t.sf(abs(t), df)), se, float(stats.t.ppf(0.975, df))


def textbook_compare(
    normal: pd.DataFrame, abnormal: pd.DataFrame, options: CompareOptions, *, inflate: float = 1.0
) -> Comparison:
    """Welch on unit means, BH, a practical threshold; ``inflate`` < 1 shrinks the standard
    errors (a deliberately over-confident method the harness must catch)."""
    un, cn = _units(normal, options.n_batches)
    ua, ca = _units(abnormal, options.n_batches)
    cycle_ms = float(cn.mean())
    rows = []
    ses = []
    for function in un.columns:
        p, se, tcrit = _welch(un[function].to_numpy(), ua[function].to_numpy())
        se *= inflate
        delta = float(ua[function].mean() - un[function].mean())
        p = float(2 * stats.norm.sf(abs(delta / se))) if inflate != 1.0 else p
        ses.append(se)
        rows.append((function, p, delta, delta - tcrit * se, delta + tcrit * se))
    q = stats.false_discovery_control([r[1] for r in rows])
    metric_rows = []
    for (function, p, delta, low, high), qv in zip(rows, q, strict=True):
        big = abs(delta) > options.practical_threshold_pct / 100 * cycle_ms
        verdict = (
            ("slower" if delta > 0 else "faster") if qv < options.alpha and big else "no change"
        )
        metric_rows.append(
            MetricRow(
                **dict.fromkeys(_NAN_FIELDS, math.nan),
                function=function,
                func_type="kernel",
                metric="",
                device="GPU 0",
                pid=0,
                p_cycle_share=p,
                p_time=p,
                suspicion=abs(delta),
                q_value=float(qv),
                time_delta_ms=delta,
                time_ci_low_ms=low,
                time_ci_high_ms=high,
                verdict=verdict,
                n_normal=len(un),
                n_abnormal=len(ua),
            )
        )
    metric_rows.sort(key=lambda r: (r.verdict == "no change", -r.suspicion))
    side = SideSummary("n", "", 1, len(normal), cycle_ms, cycle_ms, (), "", "")
    p_cycle, _, _ = _welch(cn.to_numpy(), ca.to_numpy())
    cycle_verdict = (
        "slower" if p_cycle < options.alpha and ca.mean() > 1.01 * cn.mean() else "no change"
    )
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    mde = 100 * (options.practical_threshold_pct / 100 * cycle_ms + z * max(ses)) / cycle_ms
    return Comparison(
        side,
        side,
        CycleTimeChange(True, math.nan, math.nan, math.nan, math.nan, p_cycle, cycle_verdict),
        tuple(metric_rows),
        (),
        (),
        (),
        "runs",
        options,
        mde,
    )


def _run(cell: Cell, n: int, inflate: float = 1.0) -> float:
    results = run_grid(
        [cell],
        n,
        CompareOptions(),
        base_seed=1,
        compare=lambda a, b, o: textbook_compare(a, b, o, inflate=inflate),
    )
    return row_false_positives(results[0].aa, 0.05, "p_time").pooled.value


def test_harness_finds_the_textbook_method_calibrated_on_independent_runs() -> None:
    cell = Cell(FIVE_RUNS, 0.0, 1.0, SMALL)
    assert 0.02 < _run(cell, 40) < 0.09


def test_harness_catches_an_over_confident_method() -> None:
    cell = Cell(FIVE_RUNS, 0.0, 1.0, SMALL)
    assert _run(cell, 40, inflate=0.5) > 0.15


def test_scores_and_tables_render_for_every_criterion() -> None:
    results = run_grid(
        [Cell(ONE_RUN, 0.3, 0.0, SMALL)], 6, CompareOptions(), compare=textbook_compare
    )
    scores = [score(r, 0.05) for r in results]
    s = scores[0]
    assert s.n == 6 and s.power.n == 6 and s.shift_cycle_changes.n == 6
    assert math.isfinite(s.mde_median_pct) and s.mde_median_pct >= 1.0
    for text in (
        aa_table(scores, 0.05),
        injection_table(scores),
        criteria_table(scores, 0.05, 0.05),
    ):
        assert text.count("\n") >= 2 and "n/a" not in text.split("\n")[-1][:10]

"""``--seed-compatible``: LatencyPrism's own numbers, so users can check us against its report.

Reverse-engineered from LatencyPrism's SGLang gpu_instability data and the report its compare
script produced (``seeds/strict-comparison-report.md``); every rule below reproduces that report:

- rows: every (pid, device, function, metric) with a metric, present on both sides;
- β_side, μ_side: plain means over the rows present (a cycle without the row is skipped, not 0);
- μ is in LatencyPrism's ``mu_pct`` convention (metric x 100, also for clocks and bytes);
- Z(β) = Δβ / σ_normal(β) and Z(μ) = Δμ / σ_normal(μ) with the sample σ (ddof=1), 0 when σ = 0;
- Z(log μ) = Δ mean(log1p μ) / σ_normal(log1p μ), same rule;
- p-values: scipy's Welch t-test and two-sided Mann-Whitney U on raw per-cycle rows;
- Suspicion Score = |Δβ| · (|Z(β)| + |Z(log μ)|); rows sorted by it, descending;
- section 1/2 use each cycle's duration (``anchor_dur_us``) once.

Its flaws are reproduced on purpose (z from σ_normal alone, correlated cycles as independent
samples, no multiple-testing correction); q-values and verdicts are added as extra columns.
"""

from __future__ import annotations

import math
import warnings
import zlib

import numpy as np
import pandas as pd
from scipy import stats as sps

from perfdiff.analysis import columns as C
from perfdiff.analysis.findings import finding_of
from perfdiff.analysis.inventory import inventory_changes
from perfdiff.analysis.model import (
    CompareOptions,
    Comparison,
    Finding,
    MetricMove,
    MetricRow,
    Verdict,
)
from perfdiff.analysis.sides import SideMeta
from perfdiff.analysis.stats import bh_qvalues, bootstrap_delta_ci
from perfdiff.analysis.summary import (
    cycle_frame,
    cycle_time_change,
    device_summaries,
    side_summary,
)
from perfdiff.analysis.units import side_units
from perfdiff.schema.loaded import LP_METRIC_PCT_SCALE

KEY = [C.PID, C.DEVICE, C.FUNCTION, C.METRIC]
EVERY_CYCLE = 10**9  # "batches" of one cycle each
SEED_MOVE_Z = 1.96  # a μ is listed under a key finding when p < 0.05 and |Z(μ)| exceeds this


def seed_comparison(
    tables: tuple[pd.DataFrame, pd.DataFrame],
    metas: tuple[SideMeta, SideMeta],
    labels: tuple[str, str],
    opts: CompareOptions,
    comparable: bool,
    notes: tuple[str, ...],
) -> Comparison:
    """A :class:`Comparison` whose numbers are LatencyPrism's (see the module docstring)."""
    rows = _seed_rows(tables, opts, comparable)
    cycles = [cycle_frame(t)[C.CYCLE_MS].to_numpy(dtype=np.float64) for t in tables]
    p_cycle = _welch_p(cycles[0], cycles[1])
    units = (
        side_units(tables[0], "batch means", EVERY_CYCLE),
        side_units(tables[1], "batch means", EVERY_CYCLE),
    )
    cycle_ms_by_pid = (
        tables[0].drop_duplicates([C.RUN, C.PID, C.CYCLE]).groupby(C.PID)[C.CYCLE_MS].mean()
    )
    return Comparison(
        normal=side_summary(tables[0], metas[0], labels[0]),
        abnormal=side_summary(tables[1], metas[1], labels[1]),
        cycle_time=cycle_time_change(tables, "cycles", opts, comparable, p_value=p_cycle),
        rows=tuple(rows),
        findings=tuple(_seed_findings(rows, opts.top)),
        inventory=tuple(inventory_changes(units)),
        devices=tuple(device_summaries(units, opts, comparable, cycle_ms_by_pid)),
        test_unit="cycles",
        options=opts,
        mde_pct=math.nan,
        notes=(
            *notes,
            "Seed-compatible mode: LatencyPrism's statistics (Z = Δ/σ_normal, tests on "
            "correlated raw cycles, no multiple-testing correction); μ in its x100 convention.",
        ),
    )


def _welch_p(x: np.ndarray, y: np.ndarray) -> float:
    if x.size < 2 or y.size < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sps.ttest_ind(x, y, equal_var=False).pvalue)


def _mwu_p(x: np.ndarray, y: np.ndarray) -> float:
    if x.size < 1 or y.size < 1:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)


def _z_normal(x: np.ndarray, y: np.ndarray) -> float:
    """LatencyPrism's Z: Δmean / σ_normal (ddof=1), 0 when σ_normal is 0 or undefined."""
    if x.size < 2 or y.size < 1:
        return 0.0
    sd = float(np.std(x, ddof=1))
    # equal values read from text can differ in the last bit; pandas' std (which LatencyPrism
    # used) returns exactly 0 for them, so float round-off counts as no spread
    if not sd > 1e-9 * max(abs(float(x.mean())), 1e-300):
        return 0.0
    return float((y.mean() - x.mean()) / sd)


def _seed_rows(
    tables: tuple[pd.DataFrame, pd.DataFrame], opts: CompareOptions, comparable: bool
) -> list[MetricRow]:
    sides = [t[t[C.METRIC] != ""] for t in tables]
    grouped = [dict(iter(s.groupby(KEY, sort=True))) for s in sides]
    keys = sorted(set(grouped[0]) & set(grouped[1]), key=str)
    records = []
    for key in keys:
        x, y = grouped[0][key], grouped[1][key]
        records.append(_seed_record(key, x, y, opts))
    q = bh_qvalues(np.asarray([r[1]["p_cycle_share"] for r in records], dtype=np.float64))
    rows = []
    nan = math.nan
    for (ident, rec), qv in zip(records, q, strict=True):
        verdict = _verdict(rec, float(qv), opts)
        rows.append(
            MetricRow(
                function=ident[2],
                func_type=ident[4],
                metric=ident[3],
                device=ident[1],
                pid=ident[0],
                cycle_share_pct_normal=rec["share_n"],
                cycle_share_pct_abnormal=rec["share_a"],
                delta_cycle_share_pp=rec["share_a"] - rec["share_n"],
                z_cycle_share=rec["z_cycle_share"],
                p_cycle_share=rec["p_cycle_share"],
                u_p_cycle_share=rec["u_p_cycle_share"],
                metric_mean_normal=rec["metric_n"],
                metric_mean_abnormal=rec["metric_a"],
                delta_metric_mean=rec["metric_a"] - rec["metric_n"],
                z_metric_mean=rec["z_metric_mean"],
                z_log_metric_mean=rec["z_log_metric_mean"],
                p_metric_mean=rec["p_metric_mean"],
                u_p_metric_mean=rec["u_p_metric_mean"],
                suspicion=abs(rec["share_a"] - rec["share_n"])
                * (abs(rec["z_cycle_share"]) + abs(rec["z_log_metric_mean"])),
                q_value=float(qv),
                time_ms_normal=rec["tn"] if comparable else nan,
                time_ms_abnormal=rec["ta"] if comparable else nan,
                time_delta_ms=rec["ta"] - rec["tn"] if comparable else nan,
                time_ci_low_ms=rec["ci_low"] if comparable else nan,
                time_ci_high_ms=rec["ci_high"] if comparable else nan,
                verdict=verdict,
                n_normal=int(rec["n_n"]),
                n_abnormal=int(rec["n_a"]),
                p_time=rec["p_time"] if comparable else nan,
            )
        )
    # descending score; ties keep (function, metric) order
    return sorted(rows, key=lambda r: -r.suspicion if np.isfinite(r.suspicion) else 0.0)


def _seed_record(
    key: tuple[object, ...], x: pd.DataFrame, y: pd.DataFrame, opts: CompareOptions
) -> tuple[tuple[int, str, str, str, str], dict[str, float]]:
    bx = x[C.CYCLE_SHARE_PCT].to_numpy(dtype=np.float64)
    by = y[C.CYCLE_SHARE_PCT].to_numpy(dtype=np.float64)
    mx = x[C.METRIC_MEAN].to_numpy(dtype=np.float64) * LP_METRIC_PCT_SCALE
    my = y[C.METRIC_MEAN].to_numpy(dtype=np.float64) * LP_METRIC_PCT_SCALE
    mx, my = mx[np.isfinite(mx)], my[np.isfinite(my)]
    tx = x[C.TIME_MS].to_numpy(dtype=np.float64)
    ty = y[C.TIME_MS].to_numpy(dtype=np.float64)
    rng = np.random.default_rng([opts.seed, zlib.crc32(repr(key).encode())])
    low, high = bootstrap_delta_ci(
        tx[:, None], ty[:, None], resamples=opts.bootstrap_resamples, rng=rng
    )
    log_x, log_y = np.log1p(np.abs(mx)), np.log1p(np.abs(my))
    ident = (int(str(key[0])), str(key[1]), str(key[2]), str(key[3]), str(x[C.FUNC_TYPE].iloc[0]))
    return ident, {
        "share_n": float(bx.mean()),
        "share_a": float(by.mean()),
        "z_cycle_share": _z_normal(bx, by),
        "p_cycle_share": _welch_p(bx, by),
        "u_p_cycle_share": _mwu_p(bx, by),
        "metric_n": float(mx.mean()) if mx.size else math.nan,
        "metric_a": float(my.mean()) if my.size else math.nan,
        "z_metric_mean": _z_normal(mx, my),
        "z_log_metric_mean": _z_normal(log_x, log_y),
        "p_metric_mean": _welch_p(mx, my),
        "u_p_metric_mean": _mwu_p(mx, my),
        "tn": float(tx.mean()),
        "ta": float(ty.mean()),
        "ci_low": float(low[0]),
        "ci_high": float(high[0]),
        "p_time": _welch_p(tx, ty),
        "n_n": float(bx.size),
        "n_a": float(by.size),
    }


def _verdict(rec: dict[str, float], q: float, opts: CompareOptions) -> Verdict:
    if float(rec["n_n"]) < 2 or float(rec["n_a"]) < 2:
        return "insufficient data"
    delta = float(rec["share_a"]) - float(rec["share_n"])
    if np.isfinite(q) and q < opts.alpha and abs(delta) > opts.practical_threshold_pct:
        return "slower" if delta > 0 else "faster"
    return "no change"


def _seed_findings(rows: list[MetricRow], top: int) -> list[Finding]:
    """LatencyPrism's key findings: the top functions by score, with their moved metrics."""
    seen: list[tuple[int | None, str, str]] = []
    for row in rows:
        key = (row.pid, row.device, row.function)
        if key not in seen:
            seen.append(key)
        if len(seen) >= top:
            break
    findings = []
    for key in seen:
        mine = [r for r in rows if (r.pid, r.device, r.function) == key]
        head = mine[0]
        moves = [
            MetricMove(r.metric, r.metric_mean_normal, r.metric_mean_abnormal, r.p_metric_mean)
            for r in mine
            if np.isfinite(r.p_metric_mean)
            and r.p_metric_mean < 0.05
            and abs(r.z_metric_mean) > SEED_MOVE_Z
        ]
        findings.append(finding_of(head, p_value=head.p_cycle_share, moves=moves))
    return findings

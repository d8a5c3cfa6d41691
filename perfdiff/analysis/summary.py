"""Side summaries, the cycle-time change (section 1), per-device summaries, comparability.

Why separate from the per-function statistics: these are the report's header numbers, and each
has its own rule: cycle times are compared only when both sides cut cycles at the same anchor;
inputs from different GPU models or workloads are refused unless forced.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.collectives import is_collective
from perfdiff.analysis.model import (
    CompareOptions,
    CycleTimeChange,
    DeviceSummary,
    SideSummary,
    TestUnit,
    Verdict,
)
from perfdiff.analysis.noise import single_run_floor
from perfdiff.analysis.sides import SideMeta
from perfdiff.analysis.stats import (
    REL_SE_FLOOR,
    batch_labels,
    batch_variance_inflation,
    bh_qvalues,
    bootstrap_delta_ci,
    lag1_autocorrelation,
    welch,
)
from perfdiff.analysis.units import SideUnits, group_rows, group_types, groups_of
from perfdiff.errors import IncomparableRunsError


def check_comparable(normal: SideMeta, abnormal: SideMeta, *, force: bool) -> list[str]:
    """The one comparability rule: refuse different GPU models, or different workloads of two
    run files, in one line naming both; with ``force``, return the notes the report leads with.

    A LatencyPrism folder's "workload" is only its parent folder's name: never refused on.
    """
    from perfdiff.analysis.sides import RUN_FILE_KIND

    problems = []
    if normal.gpu_models and abnormal.gpu_models and normal.gpu_models != abnormal.gpu_models:
        problems.append(
            f"different GPU models ({', '.join(normal.gpu_models)} vs "
            f"{', '.join(abnormal.gpu_models)})"
        )
    both_run_files = normal.kind == abnormal.kind == RUN_FILE_KIND
    if both_run_files and normal.workload and abnormal.workload and (
        normal.workload != abnormal.workload
    ):
        problems.append(f"different workloads ({normal.workload} vs {abnormal.workload})")
    if problems and not force:
        raise IncomparableRunsError(
            f"{normal.source} and {abnormal.source} cannot be compared: {'; '.join(problems)}; "
            "pass --force to compare them anyway"
        )
    return [f"Compared with --force despite {p}." for p in problems]


def cycles_comparable(normal: pd.DataFrame, abnormal: pd.DataFrame) -> bool:
    """Cycles are comparable when both sides cut them at the same anchor(s).

    A set, not a sequence: a multi-case benchmark re-run labels the same cases, perhaps in
    another order or with another number of cycles each, and its cycles mean the same thing.
    """
    return set(normal[C.ANCHOR]) == set(abnormal[C.ANCHOR])


LABELS_SHOWN = 3


def label_list(labels: set[str] | list[str], shown: int = LABELS_SHOWN) -> str:
    """``3 labels: a, b, c`` / ``80 labels: a, b, c, …``: a label set fit for one sentence.

    Why: a multi-case run (rmsnorm, linalg) has one cycle label per case, 40 to 300 of them;
    listing them all made the report's note one line of thousands of characters.
    """
    items = sorted(set(labels))
    if not items:
        return "no labels"
    if len(items) == 1:
        return items[0] or "unlabelled cycle markers"
    head = ", ".join(item or "(unlabelled)" for item in items[:shown])
    more = ", …" if len(items) > shown else ""
    return f"{len(items)} labels: {head}{more}"


def cut_differently_note(normal: pd.DataFrame, abnormal: pd.DataFrame) -> str:
    """The note of a comparison whose sides cut cycles at different labels: counts, a few of
    each side's own labels, never the full lists."""
    n_labels, a_labels = set(normal[C.ANCHOR]), set(abnormal[C.ANCHOR])
    only_n, only_a = n_labels - a_labels, a_labels - n_labels
    if n_labels & a_labels:  # overlapping sets: the difference is what the reader needs
        parts = [f"{len(n_labels & a_labels)} labels in common"]
        parts += [f"only in normal: {label_list(only_n)}"] if only_n else []
        parts += [f"only in abnormal: {label_list(only_a)}"] if only_a else []
    else:
        parts = [f"normal: {label_list(n_labels)}", f"abnormal: {label_list(a_labels)}"]
    return (
        f"Cycles were cut differently ({'; '.join(parts)}): cycle times and times per cycle "
        "are not comparable; only shares (β) and metrics (μ) are compared."
    )


def cycle_frame(table: pd.DataFrame) -> pd.DataFrame:
    """One row per measured cycle (run, pid, cycle), ordered by pid, run, cycle."""
    return (
        table[[C.RUN, C.PID, C.CYCLE, C.CYCLE_MS, C.ANCHOR]]
        .drop_duplicates([C.RUN, C.PID, C.CYCLE])
        .sort_values([C.PID, C.RUN, C.CYCLE], kind="stable")
        .reset_index(drop=True)
    )


def side_summary(table: pd.DataFrame, meta: SideMeta, label: str) -> SideSummary:
    """Section 1-2 numbers of one side."""
    cycles = cycle_frame(table)
    ms = cycles[C.CYCLE_MS].to_numpy(dtype=np.float64)
    return SideSummary(
        label=label,
        source=meta.source,
        n_runs=int(cycles[C.RUN].nunique()),
        n_cycles=int(ms.shape[0]),
        cycle_ms_mean=float(ms.mean()) if ms.size else math.nan,
        cycle_ms_median=float(np.median(ms)) if ms.size else math.nan,
        cycle_ms_desc=tuple(float(v) for v in np.sort(ms)[::-1]),
        cycle_definition=", ".join(sorted(set(cycles[C.ANCHOR]))),
        workload=meta.workload,
        environment=meta.environment,
    )


def cycle_units(table: pd.DataFrame, unit: TestUnit, n_batches: int) -> np.ndarray:
    """Cycle durations reduced to the test's units (run means, batch means or raw cycles)."""
    cycles = cycle_frame(table)
    ms = cycles[C.CYCLE_MS]
    if unit == "cycles":
        return ms.to_numpy(dtype=np.float64)
    labels = cycles[C.RUN] if unit == "runs" else batch_labels(len(cycles), n_batches)
    return ms.groupby(np.asarray(labels)).mean().to_numpy(dtype=np.float64)


def cycle_time_change(
    tables: tuple[pd.DataFrame, pd.DataFrame],
    unit: TestUnit,
    opts: CompareOptions,
    comparable: bool,
    *,
    p_value: float | None = None,
) -> CycleTimeChange:
    """Change of mean cycle time with a 95 % bootstrap interval (NaN when not comparable)."""
    nan = math.nan
    if not comparable:
        return CycleTimeChange(False, nan, nan, nan, nan, nan, "insufficient data")
    frames = [cycle_frame(t) for t in tables]
    means = [float(f[C.CYCLE_MS].mean()) for f in frames]
    x, y = (cycle_units(t, unit, opts.n_batches) for t in tables)
    scales = [1.0, 1.0]
    rel_floor = REL_SE_FLOOR
    if unit == "batch means":
        series = [f[C.CYCLE_MS].to_numpy(dtype=np.float64)[:, None] for f in frames]
        scales = [
            float(batch_variance_inflation(lag1_autocorrelation(s), s.shape[0], opts.n_batches)[0])
            for s in series
        ]
        single = [int(f[C.RUN].nunique()) < 2 for f in frames]
        rel_floor = max(REL_SE_FLOOR, single_run_floor(opts, single))
    w = welch(
        x[:, None],
        y[:, None],
        rel_floor=rel_floor,
        var_scale_normal=scales[0],
        var_scale_abnormal=scales[1],
    )
    low, high = bootstrap_delta_ci(
        x[:, None],
        y[:, None],
        resamples=opts.bootstrap_resamples,
        rng=np.random.default_rng([opts.seed, zlib.crc32(b"cycle time")]),
        target_se=w.se if unit != "cycles" else None,
        # the test's degrees of freedom too: its floor is a known variance, so t(df of the
        # batches alone) widened the interval past the test's (a +33.9 % change "slower" at
        # p 0.043 with an interval of -6.0 to +75.0 %, HF Trainer, H100 2026-12-08)
        target_df=w.df if unit == "batch means" else None,
    )
    delta = means[1] - means[0]
    pct = 100.0 * delta / means[0] if means[0] else nan
    p = float(w.p[0]) if p_value is None else p_value
    verdict: Verdict
    if x.size < 2 or y.size < 2:
        verdict = "insufficient data"
    elif (np.isfinite(p) and p < opts.alpha) or bool(w.constant[0]):
        verdict = (
            ("slower" if delta > 0 else "faster")
            if abs(pct) > opts.practical_threshold_pct
            else "no change"
        )
    else:
        verdict = "no change"
    return CycleTimeChange(
        comparable=True,
        delta_ms=delta,
        delta_pct=pct,
        ci_low_pct=100.0 * float(low[0]) / means[0],
        ci_high_pct=100.0 * float(high[0]) / means[0],
        p_value=p,
        verdict=verdict,
    )


def device_summaries(
    units: tuple[SideUnits, SideUnits],
    opts: CompareOptions,
    comparable: bool,
    cycle_ms_by_pid: pd.Series,
    rel_floor_of: Callable[[tuple[int, str]], float] = lambda _g: REL_SE_FLOOR,
) -> list[DeviceSummary]:
    """Kernel-busy time per cycle of each (pid, device): which GPU departs from the others.

    With several devices, collective kernels are left out: on the GPUs that wait for a
    straggler their time is waiting, not work (``collectives.py``).
    """
    busy: list[list[pd.Series]] = [[], []]
    groups = []
    common = sorted(set(groups_of(units[0].time_ms)) & set(groups_of(units[1].time_ms)))
    several = len({g[1] for g in common}) > 1
    for g in common:
        sides = []
        for u in units:
            frame = group_rows(u.time_ms, g)
            kinds = group_types(u.func_type, g)
            kernel_cols = [
                c
                for c in frame.columns
                if kinds.get(str(c), "") in C.KERNEL_TYPES
                and not (several and is_collective(str(c)))
            ]
            sides.append(frame[kernel_cols].sum(axis=1))
        if float(sides[0].sum()) > 0 or float(sides[1].sum()) > 0:
            groups.append(g)
            busy[0].append(sides[0])
            busy[1].append(sides[1])
    results = []
    ps = []
    for i, g in enumerate(groups):
        x = busy[0][i].to_numpy(dtype=np.float64)
        y = busy[1][i].to_numpy(dtype=np.float64)
        w = welch(x[:, None], y[:, None], rel_floor=rel_floor_of(g))
        # the interval has the test's width (target_se), as the functions' intervals do
        low, high = bootstrap_delta_ci(
            x[:, None],
            y[:, None],
            resamples=opts.bootstrap_resamples,
            rng=np.random.default_rng([opts.seed, zlib.crc32(f"busy|{g[0]}|{g[1]}".encode())]),
            target_se=w.se,
        )
        results.append((g, w, float(low[0]), float(high[0])))
        ps.append(float(w.p[0]))
    qs = bh_qvalues(np.asarray(ps, dtype=np.float64))
    out = []
    for (g, w, low_ms, high_ms), q in zip(results, qs, strict=True):
        m_n, m_a = float(w.mean_normal[0]), float(w.mean_abnormal[0])
        delta = m_a - m_n
        threshold = (
            opts.practical_threshold_pct / 100.0 * float(cycle_ms_by_pid.get(g[0], math.nan))
        )
        verdict: Verdict
        if not comparable or w.n_normal[0] < 2 or w.n_abnormal[0] < 2:
            verdict = "insufficient data"
        elif ((np.isfinite(q) and q < opts.alpha) or bool(w.constant[0])) and abs(
            delta
        ) > threshold:
            verdict = "slower" if delta > 0 else "faster"
        else:
            verdict = "no change"
        out.append(
            DeviceSummary(
                device=str(g[1]),
                pid=g[0],
                busy_ms_normal=m_n,
                busy_ms_abnormal=m_a,
                delta_pct=100.0 * delta / m_n if m_n else math.nan,
                verdict=verdict,
                ci_low_pct=100.0 * low_ms / m_n if m_n and comparable else math.nan,
                ci_high_pct=100.0 * high_ms / m_n if m_n and comparable else math.nan,
            )
        )
    return out

"""Two cycle tables -> a typed :class:`Comparison` (the entry point of the statistics).

The method, in order (docs/explanation/statistics.md says why):

1. Independent samples ("units"): run means with >= 2 runs per side, else ~10 batch means.
2. Per (pid, device, function): Welch tests with a floored, pooled standard error on time per
   cycle (ms) and share β (%), Mann-Whitney U on β, a 95 % bootstrap interval of the time change.
   Functions present on one side only go to the inventory, never zero-filled into the tests.
3. Per (function, metric): the same on μ and on log μ.
4. Benjamini-Hochberg q-values over the functions' primary tests (time per cycle; β when the two
   sides' cycles were cut differently). Verdict: q < alpha AND |change| > the practical threshold.
5. Findings first, then by suspicion score; key findings carry the μ moves that went with them.

``--seed-compatible`` reproduces LatencyPrism's numbers instead (see ``seed_compat``).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.collectives import collective_note
from perfdiff.analysis.family_rows import with_family_rows, work_rows
from perfdiff.analysis.few_cycles import described_changes, is_few
from perfdiff.analysis.findings import (
    CHANGE,
    abs0,
    idle_leads,
    key_findings,
    lead_with_gpu_work,
    rank_rows,
)
from perfdiff.analysis.headline import headline, host_bound_note
from perfdiff.analysis.inventory import inventory_changes, present_functions
from perfdiff.analysis.launch_changes import launch_changes
from perfdiff.analysis.model import (
    CompareOptions,
    Comparison,
    CycleTimeChange,
    Headline,
    InventoryChange,
    MetricRow,
    Replacement,
    TestUnit,
    Verdict,
)
from perfdiff.analysis.noise import (
    host_aware_cv,
    idle_cycle_floor,
    inflation,
    interval_se,
    minimum_detectable_pct,
    never_called_pct,
    noise_model,
    paired_inflation,
    paired_positions,
    relative_logs,
)
from perfdiff.analysis.processes import align_pids
from perfdiff.analysis.sides import TRACED_KINDS, SideMeta
from perfdiff.analysis.stats import (
    ABS_SE_FLOOR,
    REL_SE_FLOOR,
    WelchResult,
    bh_qvalues,
    bootstrap_delta_ci,
    mann_whitney_p,
    minimum_detectable_floored,
    paired_by_position,
    welch,
)
from perfdiff.analysis.summary import (
    check_comparable,
    cut_differently_note,
    cycle_time_change,
    cycles_comparable,
    device_summaries,
    side_summary,
)
from perfdiff.analysis.units import SideUnits, group_rows, group_types, groups_of, side_units
from perfdiff.analysis.untraced_time import time_note
from perfdiff.errors import InputError


def _kernel_tables(raw: tuple[pd.DataFrame, pd.DataFrame], metas: tuple[SideMeta, SideMeta]
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The by-kernel tables of grouped rows, as the rows' tables are prepared (the headline)."""
    normal = C.normalise_cycle_table(raw[0], source=metas[0].source)
    abnormal, _ = align_pids(normal, C.normalise_cycle_table(raw[1], source=metas[1].source))
    return normal, abnormal


def compare_tables(
    normal: pd.DataFrame,
    abnormal: pd.DataFrame,
    options: CompareOptions | None = None,
    *,
    normal_meta: SideMeta | None = None,
    abnormal_meta: SideMeta | None = None,
    labels: tuple[str, str] = ("normal", "abnormal"),
    extra_rows: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    replacements: tuple[Replacement, ...] = (),
    headline_tables: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    time_tables: tuple[pd.DataFrame | None, pd.DataFrame | None] | None = None,
) -> Comparison:
    """Compare two cycle tables (see the module docstring); raises InputError on empty input.

    ``extra_rows`` (pseudo-functions to test with the rest, such as the replaced kernels of
    ``replacements.py``) are appended to each side before the statistics. ``headline_tables``:
    the by-kernel tables when the rows are groups (``--by op``): the headline splits the
    change by kernel family, and the rows get no family rows of their own. ``time_tables``
    (run files: each side's untraced cycles, ``untraced_time.py``, or None where it has too
    few) give the cycle-time change when both sides have them.
    """
    opts = options or CompareOptions()
    metas = (
        normal_meta or SideMeta(source="<table>", kind="table"),
        abnormal_meta or SideMeta(source="<table>", kind="table"),
    )
    tables = (
        C.normalise_cycle_table(normal, source=metas[0].source),
        C.normalise_cycle_table(abnormal, source=metas[1].source),
    )
    for table, meta, label in zip(tables, metas, labels, strict=True):
        if table.empty:
            raise InputError(
                f"{meta.source}: the {label} side has no measured cycles (all warm-up or empty); "
                "record more cycles"
            )
    forced_notes = check_comparable(metas[0], metas[1], force=opts.force)
    if extra_rows is not None and not opts.seed_compatible:
        tables = (_appended(tables[0], extra_rows[0]), _appended(tables[1], extra_rows[1]))
    abnormal_aligned, pid_note = align_pids(tables[0], tables[1])
    tables = (tables[0], abnormal_aligned)
    same_cut = cycles_comparable(tables[0], tables[1])
    # fixed windows with no unit of work: their length is not a cycle time (window_work.py)
    comparable = same_cut and not any(m.window is not None and not m.window.unit for m in metas)
    notes = [*forced_notes, *(m.window.note(label) for m, label in zip(metas, labels, strict=True)
                              if m.window is not None)]
    notes += _notes(tables, metas, same_cut)
    if pid_note:
        notes.append(pid_note)
    if opts.seed_compatible:
        from perfdiff.analysis.seed_compat import seed_comparison

        return seed_comparison(tables, metas, labels, opts, comparable, tuple(notes))
    base_tables = tables
    # rows grouped by op or module (grouping.py): the headline's families come from the kernels
    by_kernel = headline_tables is None
    split_tables = tables if headline_tables is None else _kernel_tables(headline_tables, metas)
    # by kernel, the headline and the family rows classify the same work rows: built once
    works = (work_rows(tables[0]), work_rows(tables[1])) if by_kernel else None
    split = headline(split_tables, traced=all(m.kind in TRACED_KINDS for m in metas),
                     works=works) if comparable else None
    if by_kernel:
        tables = with_family_rows(tables, works)
    opts = host_aware_cv(opts, _idle_shares(split))
    n_runs = [int(t[C.RUN].nunique()) for t in tables]
    unit: TestUnit = "runs" if min(n_runs) >= 2 else "batch means"
    notes.append(_unit_note(unit, n_runs, opts))
    note = collective_note(
        set(tables[0][C.DEVICE]) | set(tables[1][C.DEVICE]),
        set(tables[0][C.FUNCTION]) | set(tables[1][C.FUNCTION]),
    )
    if note:
        notes.append(note)
    units = (
        side_units(tables[0], unit, opts.n_batches),
        side_units(tables[1], unit, opts.n_batches),
    )
    cycle_ms_by_pid = (
        tables[0].drop_duplicates([C.RUN, C.PID, C.CYCLE]).groupby(C.PID)[C.CYCLE_MS].mean()
    )
    threshold_ms_by_pid = cycle_ms_by_pid
    if split is not None and split.traced and split.host_bound:
        # tracing inflates the host's part of a host-bound cycle: a change of the GPU's work
        # is measured against that work, not against a cycle the recording lengthened (every
        # process the split pools)
        work_ms = max(split.gpu_work_ms_normal, split.gpu_work_ms_abnormal)
        threshold_ms_by_pid = cycle_ms_by_pid.copy()
        for pid in split.pids:
            threshold_ms_by_pid[pid] = min(work_ms, float(cycle_ms_by_pid.get(pid, work_ms)))
        notes.append(host_bound_note(split, opts.practical_threshold_pct))
    rows, inventory, mde_pct = _rows(units, opts, comparable, cycle_ms_by_pid, unit,
                                     threshold_ms_by_pid)
    cycle_time = _cycle_time(tables, time_tables, unit, opts, comparable, notes)
    findings = lead_with_gpu_work(key_findings(rows, opts, comparable, cycle_time), split)
    if findings and all(f.verdict not in CHANGE for f in findings) and comparable:
        notes.append(
            "The cycle time changed but no single function changed by more than "
            f"{opts.practical_threshold_pct:g} % of the cycle: the key findings are the "
            "significant contributors in the same direction (q < alpha), largest first."
        )
    rows = rank_rows(rows, findings)
    return Comparison(
        normal=side_summary(tables[0], metas[0], labels[0]),
        abnormal=side_summary(tables[1], metas[1], labels[1]),
        cycle_time=cycle_time,
        rows=tuple(rows),
        findings=tuple(findings),
        inventory=tuple(inventory),
        devices=tuple(
            device_summaries(
                units,
                opts,
                comparable,
                cycle_ms_by_pid,
                lambda g: noise_model(units, g, opts, unit)[0],
            )
        ),
        test_unit=unit,
        options=opts,
        mde_pct=mde_pct,
        notes=tuple(dict.fromkeys(notes)),
        launch_changes=tuple(launch_changes(_launched(base_tables))) if comparable else (),
        replacements=replacements,
        headline=split,
        described=described_changes(rows, inventory, split is None or idle_leads(split))
        if comparable and is_few(*_cycle_counts(tables)) else (),
    )


def _cycle_time(tables: tuple[pd.DataFrame, pd.DataFrame],
                time_tables: tuple[pd.DataFrame | None, pd.DataFrame | None] | None,
                unit: TestUnit, opts: CompareOptions, comparable: bool,
                notes: list[str]) -> CycleTimeChange:
    """The cycle-time change: from untraced cycles where both sides have them (notes say
    which), else from the cycles of the tables."""
    if time_tables is None:
        return cycle_time_change(tables, unit, opts, comparable)
    normal, abnormal = time_tables
    traced = _cycle_counts(tables)
    if normal is None and abnormal is None:
        return cycle_time_change(tables, unit, opts, comparable)  # as before untraced cycles
    if normal is None or abnormal is None:
        notes.append(time_note(None, traced))
        return cycle_time_change(tables, unit, opts, comparable)
    notes.append(time_note((len(normal), len(abnormal)), traced))
    runs = min(int(normal[C.RUN].nunique()), int(abnormal[C.RUN].nunique()))
    # one run a side: batch means under the assumed run-to-run variation, as for traced time;
    # the untraced cycles taken one by one called a 1.35 % A/A difference of two processes
    # "faster" (p 3e-13) under the note that no change below 8.3 % is called (H100, 2026-12-07)
    time_unit: TestUnit = "runs" if runs >= 2 else "batch means"
    return cycle_time_change((normal, abnormal), time_unit, opts, comparable)


def _cycle_counts(tables: tuple[pd.DataFrame, pd.DataFrame]) -> tuple[int, int]:
    """Measured cycles per side (all runs; the processes of one run share their cycles)."""
    counts = [len(t.drop_duplicates([C.RUN, C.CYCLE])) for t in tables]
    return counts[0], counts[1]


def _launched(tables: tuple[pd.DataFrame, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tables without pseudo-functions (they are not launched)."""
    kept = [t[~t[C.FUNC_TYPE].isin(C.PSEUDO_TYPES)] for t in tables]
    return kept[0], kept[1]


def _appended(table: pd.DataFrame, extra: pd.DataFrame) -> pd.DataFrame:
    if extra.empty:
        return table
    return pd.concat([table, extra.reindex(columns=table.columns)], ignore_index=True)


def _idle_shares(split: Headline | None) -> tuple[float, float]:
    """Each side's GPU idle as a share of its mean cycle, as the headline splits it (traced
    cycles; NaN where it has no idle part): how much of a cycle the host holds
    (``noise.host_aware_cv``). Why the traced cycles' share even where untraced ones give the
    cycle time: the host-speed figure it multiplies was fitted on it (bench/README.md), and a
    host's work that overlaps the GPU's (a Trainer's collation) moves the cycle too, which
    untraced idle alone would miss (its between-process CV 7.8-9.75 % at 26-40 % idle)."""
    idle = next((p for p in split.parts if p.kind == "idle"), None) if split else None
    if split is None or idle is None:
        return math.nan, math.nan
    return (_share(idle.ms_normal, split.cycle_ms_normal),
            _share(idle.ms_abnormal, split.cycle_ms_abnormal))


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 and math.isfinite(part) else math.nan


def _unit_note(unit: TestUnit, n_runs: list[int], opts: CompareOptions) -> str:
    """How the tests formed their samples; for one-run sides, what that costs in numbers:
    the cycle-time changes the pair cannot call and can detect at the assumed run-to-run
    variation (``noise.never_called_pct``, ``noise.minimum_detectable_pct``), and how to
    measure that variation instead."""
    if unit == "runs":
        return (
            f"Tests use run-level means ({n_runs[0]} vs {n_runs[1]} runs): consecutive cycles "
            "are correlated, runs are not."
        )
    single = [n < 2 for n in n_runs]
    detected = minimum_detectable_pct(opts, single)
    never = never_called_pct(opts, single)
    sides = "Each side is" if all(single) else "One side is"
    return (
        f"One run on at least one side: tests use batch means (up to {opts.n_batches} batches "
        "of consecutive cycles per side), since consecutive cycles are correlated. "
        f"{sides} one run, which cannot show run-to-run variation: the tests assume "
        f"{_assumed_cv(opts, single)}, so this pair calls no "
        f"cycle-time change under {never:.1f} % and finds one of {detected:.1f} % (its minimum "
        "detectable change) at best 4 times in 5. To measure the variation instead, record "
        "two or more runs per side (perfdiff collect --runs N, or several recordings joined "
        "by perfdiff merge) and compare those."
    )


def _assumed_cv(opts: CompareOptions, single: list[bool]) -> str:
    """The assumed run-to-run variation in words: one figure, or each one-run side's with the
    GPU idle share that raised it (``noise.host_aware_cv``)."""
    base = f"--run-cv-pct {opts.run_cv_pct:g}"
    if opts.side_run_cv_pct is None or opts.side_idle_share is None:
        return f"{opts.run_cv_pct:g} % per one-run side ({base})"
    sides = [(label, cv, share) for label, one, cv, share
             in zip(("normal", "abnormal"), single, opts.side_run_cv_pct, opts.side_idle_share,
                    strict=True) if one]
    if all(cv <= opts.run_cv_pct for _, cv, _ in sides):
        return f"{opts.run_cv_pct:g} % per one-run side ({base}; the GPU idles too little for more)"
    parts = [f"{cv:.1f} % for the {label} side"
             + (f" (GPU idle {100 * share:.0f} % of its cycle x {opts.host_run_cv_pct:g} %)"
                if cv > opts.run_cv_pct else "")
             for label, cv, share in sides]
    return (" and ".join(parts) + f": at least {opts.run_cv_pct:g} % ({base}), more where the "
            "GPU idles, since a host's speed differs between processes (--host-run-cv-pct)")


def _notes(
    tables: tuple[pd.DataFrame, pd.DataFrame],
    metas: tuple[SideMeta, SideMeta],
    comparable: bool,
) -> list[str]:
    notes: list[str] = []
    for meta in metas:
        notes.extend(meta.warnings)
    if not comparable:
        notes.append(cut_differently_note(tables[0], tables[1]))
    for table, label in zip(tables, ("normal", "abnormal"), strict=True):
        pids = sorted(set(table[C.PID]))
        if len(pids) > 1:
            notes.append(
                f"The {label} side holds {len(pids)} processes ({', '.join(map(str, pids))}); "
                "each is compared separately."
            )
    return notes


@dataclass
class _FunctionStats:
    """Function-level numbers shared by all metric rows of one (pid, device, function)."""

    pid: int
    device: str
    function: str
    func_type: str
    cycle_share_n: float
    cycle_share_a: float
    z_cycle_share: float
    p_cycle_share: float
    u_p_cycle_share: float
    time_n: float
    time_a: float
    time_ci: tuple[float, float]
    p_time: float
    p_primary: float
    constant_primary: bool
    n_n: int
    n_a: int
    threshold: float  # practical threshold on the primary change (ms or ppt)
    primary_delta: float
    size_n: float  # |mean| of the primary quantity on each side (ms or %)
    size_a: float
    mde: float  # minimum detectable primary change (same unit as threshold)
    q: float = math.nan
    verdict: Verdict = "no change"


def _rows(
    units: tuple[SideUnits, SideUnits],
    opts: CompareOptions,
    comparable: bool,
    cycle_ms_by_pid: pd.Series,
    unit: TestUnit,
    threshold_ms_by_pid: pd.Series,
) -> tuple[list[MetricRow], list[InventoryChange], float]:
    fstats: list[_FunctionStats] = []
    metric_blocks: list[pd.DataFrame] = []
    groups = sorted(set(groups_of(units[0].time_ms)) | set(groups_of(units[1].time_ms)))
    for group in groups:
        pid = group[0]
        funcs = [present_functions(group_rows(u.time_ms, group)) for u in units]
        common = sorted(funcs[0] & funcs[1])
        if not common:
            continue
        cycle_ms = float(cycle_ms_by_pid.get(pid, math.nan))
        threshold_ms = float(threshold_ms_by_pid.get(pid, math.nan))
        block = _function_stats(units, group, common, opts, comparable, cycle_ms, unit,
                                threshold_ms)
        fstats.extend(block)
        metric_blocks.append(_metric_stats(units, group, common))
    # Tests that can never pass the practical threshold (|Δ| <= mean_n + mean_a <= threshold)
    # are left out of the Benjamini-Hochberg family: they cannot yield a finding, and counting
    # them would only dilute the power of the tests that can.
    testable = [f for f in fstats if f.size_n + f.size_a > f.threshold]
    # Pseudo-functions (families, replacements) sum or pair the functions' own time: they get
    # a Benjamini-Hochberg family of their own, so that adding them leaves every function's
    # q-value, verdict and false-discovery rate exactly as it was (bench/validate scores those)
    for pseudo in (False, True):
        family = [f for f in testable if (f.func_type in C.PSEUDO_TYPES) == pseudo]
        q = bh_qvalues(np.asarray([f.p_primary for f in family], dtype=np.float64))
        for f, qv in zip(family, q, strict=True):
            f.q = float(qv)
    for f in fstats:
        f.verdict = _verdict(f, opts.alpha)
    metrics = pd.concat(metric_blocks, ignore_index=True) if metric_blocks else pd.DataFrame()
    rows = _metric_rows(fstats, metrics, comparable)
    mde_pct = _report_mde(fstats, comparable, cycle_ms_by_pid, opts)
    return rows, inventory_changes(units), mde_pct


def _rng_for(group: tuple[int, str], seed: int) -> np.random.Generator:
    """A generator that depends on the group's identity, not on the order groups are visited."""
    key = zlib.crc32(f"{group[0]}|{group[1]}".encode())
    return np.random.default_rng([seed, key])


def _function_stats(
    units: tuple[SideUnits, SideUnits],
    group: tuple[int, str],
    common: list[str],
    opts: CompareOptions,
    comparable: bool,
    cycle_ms: float,
    unit: TestUnit,
    threshold_ms: float,
) -> list[_FunctionStats]:
    t = [group_rows(u.time_ms, group).reindex(columns=common).to_numpy() for u in units]
    b = [group_rows(u.cycle_share_pct, group).reindex(columns=common).to_numpy() for u in units]
    rel_floor, batched = noise_model(units, group, opts, unit)
    paired = batched and paired_positions(units, group)
    # GPU idle is the remainder of the cycle: between runs it moves with the whole cycle (host
    # speed, launch overhead), so its run-to-run floor is relative to the cycle, not to itself.
    is_idle = np.asarray([name == C.IDLE_FUNCTION for name in common])
    cycle_floor = idle_cycle_floor(units, group, opts, unit)
    row_floor = np.where(is_idle, REL_SE_FLOOR, rel_floor)  # idle's is in `floors`
    floors = {
        "time": np.where(is_idle, cycle_floor * np.nan_to_num(cycle_ms), ABS_SE_FLOOR),
        "cycle_share": np.where(is_idle, cycle_floor * 100.0, ABS_SE_FLOOR),
    }
    tests: dict[str, WelchResult] = {}
    noise_t = inflation(units, group, common, "time", batched, opts.n_batches)
    for what, samples in (("time", t), ("cycle_share", b)):
        if paired:
            pair_noise = paired_inflation(units, group, common, what, opts.n_batches)
            tests[what] = paired_by_position(
                samples[0],
                samples[1],
                rel_floor=row_floor,
                abs_floor=floors[what],
                var_scale=pair_noise.scale,
                df_factor=pair_noise.df_factor,
            )
            continue
        side_noise = (
            noise_t
            if what == "time"
            else inflation(units, group, common, what, batched, opts.n_batches)
        )
        tests[what] = welch(
            samples[0],
            samples[1],
            rel_floor=row_floor,
            abs_floor=floors[what],
            var_scale_normal=side_noise[0].scale,
            var_scale_abnormal=side_noise[1].scale,
            df_factor_normal=side_noise[0].df_factor,
            df_factor_abnormal=side_noise[1].df_factor,
        )
    w_time, w_cycle_share = tests["time"], tests["cycle_share"]
    u_cycle_share = mann_whitney_p(b[0], b[1])
    ci_low, ci_high = bootstrap_delta_ci(
        t[0],
        t[1],
        resamples=opts.bootstrap_resamples,
        rng=_rng_for(group, opts.seed),
        target_se=interval_se(t, w_time.se, noise_t, batched),
        target_df=w_time.df if batched else None,
    )
    primary = w_time if comparable else w_cycle_share
    threshold = (
        opts.practical_threshold_pct / 100.0 * threshold_ms
        if comparable
        else opts.practical_threshold_pct
    )
    types = {**group_types(units[1].func_type, group), **group_types(units[0].func_type, group)}
    # the functions' own Benjamini-Hochberg family: pseudo-rows are tested apart from them
    m_tests = max(1, sum(types.get(name, "") not in C.PSEUDO_TYPES for name in common))
    # 80 % power for a change that must also *exceed* the practical threshold
    # ... against the SE the test will have at that change (the run-to-run floor grows with it)
    primary_abs_floor = floors["time"] if comparable else floors["cycle_share"]
    mde = minimum_detectable_floored(
        primary.se,
        primary.df,
        opts.alpha / m_tests,
        mean_normal=primary.mean_normal,
        rel_floor=row_floor,
        abs_floor=primary_abs_floor,
        threshold=threshold,
        # run-to-run offsets are factors: between runs, a slower kernel spreads more in ms
        abnormal_var_share=primary.abnormal_var_share if unit == "runs" else 0.0,
    )
    out = []
    for j, name in enumerate(common):
        out.append(
            _FunctionStats(
                pid=group[0],
                device=group[1],
                function=name,
                func_type=types.get(name, ""),
                cycle_share_n=float(w_cycle_share.mean_normal[j]),
                cycle_share_a=float(w_cycle_share.mean_abnormal[j]),
                z_cycle_share=float(w_cycle_share.z[j]),
                p_cycle_share=float(w_cycle_share.p[j]),
                u_p_cycle_share=float(u_cycle_share[j]),
                time_n=float(w_time.mean_normal[j]),
                time_a=float(w_time.mean_abnormal[j]),
                time_ci=(float(ci_low[j]), float(ci_high[j])),
                p_time=float(w_time.p[j]),
                p_primary=float(primary.p[j]),
                constant_primary=bool(primary.constant[j]),
                n_n=int(primary.n_normal[j]),
                n_a=int(primary.n_abnormal[j]),
                threshold=threshold,
                primary_delta=float(primary.delta[j]),
                size_n=abs(float(primary.mean_normal[j])),
                size_a=abs(float(primary.mean_abnormal[j])),
                mde=float(mde[j]) if np.isfinite(mde[j]) else math.nan,
            )
        )
    return out


def _verdict(f: _FunctionStats, alpha: float) -> Verdict:
    if f.n_n < 2 or f.n_a < 2 or not np.isfinite(f.primary_delta):
        return "insufficient data"
    big = abs(f.primary_delta) > f.threshold
    # constant on both sides: the change is exact, no test needed
    significant = f.constant_primary or bool(np.isfinite(f.q) and f.q < alpha)
    if significant and big:
        return "slower" if f.primary_delta > 0 else "faster"
    return "no change"


def _metric_stats(
    units: tuple[SideUnits, SideUnits], group: tuple[int, str], common: list[str]
) -> pd.DataFrame:
    """μ statistics for every (function, metric) of the group's common functions."""
    metric_means = [group_rows(u.metric_mean, group) for u in units]
    wanted = set(common)
    keys: list[tuple[str, str]] = sorted(
        {(str(k[0]), str(k[1])) for m in metric_means for k in m.columns if k[0] in wanted}
    )
    if not keys:
        return pd.DataFrame()
    x = metric_means[0].reindex(columns=pd.MultiIndex.from_tuples(keys)).to_numpy(dtype=np.float64)
    y = metric_means[1].reindex(columns=pd.MultiIndex.from_tuples(keys)).to_numpy(dtype=np.float64)
    w = welch(x, y)
    w_log = welch(*relative_logs(x, y))
    u = mann_whitney_p(x, y)
    return pd.DataFrame(
        {
            C.PID: group[0],
            C.DEVICE: group[1],
            C.FUNCTION: [k[0] for k in keys],
            C.METRIC: [k[1] for k in keys],
            "metric_mean_n": w.mean_normal,
            "metric_mean_a": w.mean_abnormal,
            "z_metric_mean": w.z,
            "z_log_metric_mean": w_log.z,
            "d_log_metric_mean": w_log.delta,
            "p_metric_mean": w.p,
            "u_p_metric_mean": u,
            "metric_mean_constant": w.constant,
        }
    )


def _metric_rows(
    fstats: list[_FunctionStats], metrics: pd.DataFrame, comparable: bool
) -> list[MetricRow]:
    by_fn: dict[tuple[int, str, str], list[dict[str, object]]] = {}
    if not metrics.empty:
        records: list[dict[str, object]] = [
            {str(k): v for k, v in r.items()} for r in metrics.to_dict("records")
        ]
        for rec in records:
            key = (int(str(rec[C.PID])), str(rec[C.DEVICE]), str(rec[C.FUNCTION]))
            by_fn.setdefault(key, []).append(rec)
    nan = math.nan
    rows = []
    for f in fstats:
        empty: list[dict[str, object]] = [{C.METRIC: ""}]
        recs = by_fn.get((f.pid, f.device, f.function)) or empty
        for rec in recs:
            z_log = _f(rec.get("z_log_metric_mean", nan))
            z_cycle_share = f.z_cycle_share
            score = abs(f.cycle_share_a - f.cycle_share_n) * (abs0(z_cycle_share) + abs0(z_log))
            metric_mean_n, metric_mean_a = (
                _f(rec.get("metric_mean_n", nan)),
                _f(rec.get("metric_mean_a", nan)),
            )
            rows.append(
                MetricRow(
                    function=f.function,
                    func_type=f.func_type,
                    metric=str(rec[C.METRIC]),
                    device=f.device,
                    pid=f.pid,
                    cycle_share_pct_normal=f.cycle_share_n,
                    cycle_share_pct_abnormal=f.cycle_share_a,
                    delta_cycle_share_pp=f.cycle_share_a - f.cycle_share_n,
                    z_cycle_share=z_cycle_share,
                    p_cycle_share=f.p_cycle_share,
                    u_p_cycle_share=f.u_p_cycle_share,
                    metric_mean_normal=metric_mean_n,
                    metric_mean_abnormal=metric_mean_a,
                    delta_metric_mean=metric_mean_a - metric_mean_n,
                    z_metric_mean=_f(rec.get("z_metric_mean", nan)),
                    z_log_metric_mean=z_log,
                    p_metric_mean=_f(rec.get("p_metric_mean", nan)),
                    u_p_metric_mean=_f(rec.get("u_p_metric_mean", nan)),
                    suspicion=score,
                    q_value=f.q,
                    time_ms_normal=f.time_n if comparable else nan,
                    time_ms_abnormal=f.time_a if comparable else nan,
                    time_delta_ms=f.time_a - f.time_n if comparable else nan,
                    time_ci_low_ms=f.time_ci[0] if comparable else nan,
                    time_ci_high_ms=f.time_ci[1] if comparable else nan,
                    verdict=f.verdict,
                    n_normal=f.n_n,
                    n_abnormal=f.n_a,
                    p_time=f.p_time if comparable else nan,
                )
            )
    return rows


def _f(value: object) -> float:
    return float(value) if isinstance(value, (int, float, np.floating, np.integer)) else math.nan


def _report_mde(
    fstats: list[_FunctionStats],
    comparable: bool,
    cycle_ms_by_pid: pd.Series,
    opts: CompareOptions,
) -> float:
    """The largest MDE among kernels taking >= 1 % of the cycle, in % of cycle time."""
    candidates = [
        f
        for f in fstats
        if f.func_type in C.KERNEL_TYPES and max(f.cycle_share_n, f.cycle_share_a) >= 1.0
    ] or fstats
    values = []
    for f in candidates:
        if not np.isfinite(f.mde):
            continue
        if comparable:
            cycle_ms = float(cycle_ms_by_pid.get(f.pid, math.nan))
            values.append(100.0 * f.mde / cycle_ms)
        else:
            values.append(f.mde)
    return float(max(values)) if values else math.nan

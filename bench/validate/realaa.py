"""Real A/A: runs of one configuration recorded in one go, compared in every split.

Why real runs too: the simulator encodes what we believe about GPU noise; real runs hold what
we did not think of (clock boosts, allocator state, thermal drift). Ten runs of gpt-infer give
45 one-vs-one pairs and 126 five-vs-five splits; every "slower" or "faster" verdict among them is
a false alarm.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.validate.trials import CompareFn, TrialDigest, digest, production_compare
from perfdiff.analysis import columns as C
from perfdiff.analysis.model import CompareOptions

AA_GLOB = "gpt-infer-aa-*.json.gz"


def load_aa_tables(folder: Path, pattern: str = AA_GLOB) -> list[tuple[str, pd.DataFrame]]:
    """Cycle tables of the A/A run files in ``folder``, sorted by name."""
    from tests.door import load_side

    return [(path.name, load_side(path).table) for path in sorted(folder.glob(pattern))]


def as_side(tables: Sequence[pd.DataFrame], first_run: int) -> pd.DataFrame:
    """Concatenate one side's recordings with distinct ``run`` values.

    Each recording is another process, so its pid differs; the statistics match rows by pid, so
    every recording's pids are renumbered by rank (0, 1, ...) to line the same process up.
    """
    parts = []
    for offset, table in enumerate(tables):
        part = table.copy()
        runs = {
            r: first_run * 1000 + offset * 100 + i
            for i, r in enumerate(sorted(part[C.RUN].unique()))
        }
        pids = {p: i for i, p in enumerate(sorted(part[C.PID].unique()))}
        part[C.RUN] = part[C.RUN].map(runs).astype("int64")
        part[C.PID] = part[C.PID].map(pids).astype("int64")
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True)
class Split:
    """One A/A comparison: which recordings went to each side, and what the report said."""

    normal: tuple[int, ...]
    abnormal: tuple[int, ...]
    result: TrialDigest


def pairs(n: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """All one-vs-one pairs."""
    return [((i,), (j,)) for i, j in itertools.combinations(range(n), 2)]


def halves(n: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """All splits into two equal halves, each split once (the half holding recording 0 is
    the normal side)."""
    k = n // 2
    out = []
    for first in itertools.combinations(range(n), k):
        if 0 not in first:
            continue
        rest = tuple(i for i in range(n) if i not in first)
        out.append((first, rest[:k]))
    return out


def compare_splits(
    tables: Sequence[pd.DataFrame],
    splits: Sequence[tuple[tuple[int, ...], tuple[int, ...]]],
    options: CompareOptions,
    compare: CompareFn = production_compare,
) -> list[Split]:
    """Compare every split."""
    out = []
    for normal, abnormal in splits:
        result = compare(
            as_side([tables[i] for i in normal], 0),
            as_side([tables[i] for i in abnormal], 1),
            options,
        )
        out.append(Split(normal, abnormal, digest(result)))
    return out


@dataclass(frozen=True)
class AaSummary:
    """False alarms among a set of A/A splits."""

    label: str
    n_splits: int
    test_unit: str
    loud_reports: int  # reports with any slower/faster verdict (rows or cycle time)
    row_verdicts: int  # slower/faster rows, all splits together
    cycle_verdicts: int
    rows_tested: int  # functions with a finite p, all splits together
    p_time_below_alpha: int  # Welch on time per cycle (the verdict's test) below alpha
    p_cycle_share_below_alpha: int
    mde_median_pct: float


def summarise(label: str, splits: Sequence[Split], alpha: float) -> AaSummary:
    results = [s.result for s in splits]
    # one entry per function: its metric rows repeat the function's tests
    per_function = [{r.function: r for r in t.rows}.values() for t in results]
    p_time = [r.p_time for rows in per_function for r in rows if math.isfinite(r.p_time)]
    p_cycle_share = [
        r.p_cycle_share for rows in per_function for r in rows if math.isfinite(r.p_cycle_share)
    ]
    mdes = [t.mde_pct for t in results if math.isfinite(t.mde_pct)]
    return AaSummary(
        label=label,
        n_splits=len(splits),
        test_unit=results[0].test_unit if results else "n/a",
        loud_reports=sum(
            int(bool(t.changed_rows()) or t.cycle_verdict in ("slower", "faster")) for t in results
        ),
        row_verdicts=sum(len(t.changed_rows()) for t in results),
        cycle_verdicts=sum(int(t.cycle_verdict in ("slower", "faster")) for t in results),
        rows_tested=len(p_time),
        p_time_below_alpha=sum(int(p < alpha) for p in p_time),
        p_cycle_share_below_alpha=sum(int(p < alpha) for p in p_cycle_share),
        mde_median_pct=float(np.median(mdes)) if mdes else math.nan,
    )


@dataclass(frozen=True)
class RunSpread:
    """How much one function's mean time per cycle moves from recording to recording."""

    function: str
    share_pct: float  # mean share of the cycle
    mean_ms: float
    between_cv_pct: float  # SD of the recordings' means / grand mean
    within_cv_pct: float  # what sampling alone would give (batch-means SE of one recording)


def run_spread(tables: Sequence[pd.DataFrame], n_batches: int = 10) -> list[RunSpread]:
    """Run-to-run variation of every function present in all recordings, largest first.

    Why: a comparison of one run per side cannot see this variation and must assume it
    (``CompareOptions.run_cv_pct``); these numbers say what the assumption should be on this GPU.
    The within-recording part is the batch-means standard error of a recording's mean; the
    excess of ``between_cv_pct`` over it is genuine run-to-run variation.
    """
    per_run: list[pd.DataFrame] = []
    for table in tables:
        rows = table.drop_duplicates([C.RUN, C.PID, C.DEVICE, C.CYCLE, C.FUNCTION])
        cycles = rows.drop_duplicates([C.RUN, C.PID, C.CYCLE])
        n_cycles = len(cycles)
        wide = rows.pivot_table(
            index=[C.RUN, C.PID, C.CYCLE], columns=C.FUNCTION, values=C.TIME_MS, aggfunc="sum"
        ).fillna(0.0)
        batch = (np.arange(len(wide)) * n_batches) // max(len(wide), 1)
        batch_means = wide.groupby(batch).mean()
        share = rows.groupby(C.FUNCTION)[C.CYCLE_SHARE_PCT].sum() / max(n_cycles, 1)
        per_run.append(
            pd.DataFrame(
                {
                    "mean": wide.mean(),
                    "se": batch_means.std(ddof=1) / np.sqrt(len(batch_means)),
                    "share": share,
                }
            )
        )
    common = sorted(set.intersection(*(set(frame.index) for frame in per_run)))
    out = []
    for function in common:
        means = np.array([frame.loc[function, "mean"] for frame in per_run])
        ses = np.array([frame.loc[function, "se"] for frame in per_run])
        grand = float(means.mean())
        if grand <= 0:
            continue
        out.append(
            RunSpread(
                function=str(function),
                share_pct=float(np.mean([frame.loc[function, "share"] for frame in per_run])),
                mean_ms=grand,
                between_cv_pct=100.0 * float(means.std(ddof=1)) / grand,
                within_cv_pct=100.0 * float(np.sqrt(np.mean(ses**2))) / grand,
            )
        )
    return sorted(out, key=lambda r: -r.share_pct)


def spread_table(spreads: Sequence[RunSpread], min_share_pct: float = 1.0) -> str:
    lines = [
        "| function | share of cycle | mean time per cycle | run-to-run CV | sampling CV |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in spreads:
        if s.share_pct < min_share_pct:
            continue
        name = s.function if len(s.function) <= 60 else s.function[:57] + "..."
        name = name.replace("|", "\\|").replace("`", "'")
        lines.append(
            f"| {name} | {s.share_pct:.2f} % | {s.mean_ms:.4f} ms | {s.between_cv_pct:.2f} % "
            f"| {s.within_cv_pct:.2f} % |"
        )
    return "\n".join(lines)


def cycle_spread(tables: Sequence[pd.DataFrame]) -> tuple[float, float]:
    """Run-to-run CV of mean cycle time (%), and the mean within-recording cycle CV (%)."""
    means, cvs = [], []
    for table in tables:
        ms = table.drop_duplicates([C.RUN, C.PID, C.CYCLE])[C.CYCLE_MS].to_numpy()
        means.append(ms.mean())
        cvs.append(ms.std(ddof=1) / ms.mean())
    m = np.asarray(means)
    return 100.0 * float(m.std(ddof=1) / m.mean()), 100.0 * float(np.mean(cvs))


def summary_table(summaries: Sequence[AaSummary]) -> str:
    lines = [
        "| splits | comparisons | unit | reports with a verdict | slower/faster rows "
        "| cycle-time verdicts | function tests with p(time) < α | with p(β) < α "
        "| printed MDE (median) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in summaries:
        n = max(s.rows_tested, 1)
        lines.append(
            f"| {s.label} | {s.n_splits} | {s.test_unit} | {s.loud_reports} | {s.row_verdicts} "
            f"| {s.cycle_verdicts} | {s.p_time_below_alpha} of {s.rows_tested} "
            f"({100 * s.p_time_below_alpha / n:.1f} %) | {s.p_cycle_share_below_alpha} "
            f"({100 * s.p_cycle_share_below_alpha / n:.1f} %) | {s.mde_median_pct:.2f} % |"
        )
    return "\n".join(lines)

"""Cycle table -> independent samples ("units") per function: run means or batch means.

Why: consecutive cycles are correlated (a slow cycle is followed by a slow cycle), so testing
per-cycle values treats n correlated samples as n independent ones and over-flags. With >= 2
runs per side each run's mean is one sample; with one run, consecutive cycles are grouped into
about ten batches whose means are nearly independent (the batch-means method).

A function absent from a cycle that its device recorded spent 0 ms there: the mean time per
cycle of a unit is its summed time divided by the unit's number of cycles (on that pid and
device), so zero-filling happens without materialising zero rows. Functions absent from a whole
side are not zero-filled: they are "appeared"/"vanished" (handled by the caller).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.stats import batch_labels

UNIT = "unit"
GROUP_KEY = [C.PID, C.DEVICE]


@dataclass(frozen=True)
class SideUnits:
    """One side's per-unit means, wide: index (pid, device, unit), columns = function names."""

    time_ms: pd.DataFrame  # mean time per cycle in the unit (0 where absent)
    cycle_share_pct: pd.DataFrame  # mean share of cycle time in the unit, % (0 where absent)
    metric_mean: pd.DataFrame  # columns (function, metric); time-weighted mean, NaN where no sample
    func_type: pd.Series  # index (pid, device, function)
    launches: pd.Series  # mean launches per cycle, index (pid, device, function)
    cycles_per_group: pd.Series  # index (pid, device)
    per_cycle_time_ms: pd.DataFrame  # index (pid, device, run, cycle) in order, 0 where absent
    per_cycle_share_pct: pd.DataFrame


def function_cycles(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, pid, device, cycle, function): its time and share (metric rows merged)."""
    keys = [C.RUN, C.PID, C.DEVICE, C.CYCLE, C.FUNCTION]
    agg: dict[str, tuple[str, str]] = {
        C.TIME_MS: (C.TIME_MS, "max"),
        C.CYCLE_SHARE_PCT: (C.CYCLE_SHARE_PCT, "max"),
        C.FUNC_TYPE: (C.FUNC_TYPE, "first"),
    }
    if C.LAUNCHES in table.columns:
        agg[C.LAUNCHES] = (C.LAUNCHES, "max")
    return table.groupby(keys, sort=False, observed=True).agg(**agg).reset_index()


def unit_assignment(table: pd.DataFrame, unit_kind: str, n_batches: int) -> pd.DataFrame:
    """The cycles each (pid, device) recorded, with the unit each belongs to."""
    cycles = (
        table[[C.RUN, C.PID, C.DEVICE, C.CYCLE]]
        .drop_duplicates()
        .sort_values([C.PID, C.DEVICE, C.RUN, C.CYCLE], kind="stable")
        .reset_index(drop=True)
    )
    if unit_kind == "runs":
        cycles[UNIT] = cycles[C.RUN].to_numpy()
    else:
        sizes = cycles.groupby(GROUP_KEY, sort=False).size().to_numpy()
        cycles[UNIT] = np.concatenate([batch_labels(int(n), n_batches) for n in sizes])
    return cycles


def side_units(table: pd.DataFrame, unit_kind: str, n_batches: int) -> SideUnits:
    """Per-unit means of time, cycle share (β) and metric mean (μ) of every function of a side."""
    cycles = unit_assignment(table, unit_kind, n_batches)
    n_in_unit = cycles.groupby([*GROUP_KEY, UNIT]).size().rename("n_cycles")
    fn = function_cycles(table).merge(cycles, on=[C.RUN, C.PID, C.DEVICE, C.CYCLE])
    sums = fn.groupby([*GROUP_KEY, UNIT, C.FUNCTION], observed=True)[
        [C.TIME_MS, C.CYCLE_SHARE_PCT]
    ].sum()
    sums = sums.join(n_in_unit, on=[*GROUP_KEY, UNIT])
    means = sums[[C.TIME_MS, C.CYCLE_SHARE_PCT]].div(sums["n_cycles"], axis=0)
    full_index = n_in_unit.index
    time_ms = means[C.TIME_MS].unstack(C.FUNCTION).reindex(full_index).fillna(0.0)
    cycle_share = means[C.CYCLE_SHARE_PCT].unstack(C.FUNCTION).reindex(full_index).fillna(0.0)
    n_cycles_group = cycles.groupby(GROUP_KEY).size()
    fn_key = [*GROUP_KEY, C.FUNCTION]
    func_type = fn.groupby(fn_key)[C.FUNC_TYPE].first()
    if C.LAUNCHES in fn.columns:
        launch_sum = fn.groupby(fn_key)[C.LAUNCHES].sum(min_count=1)
        group_of = pd.MultiIndex.from_arrays(
            [launch_sum.index.get_level_values(k) for k in GROUP_KEY], names=GROUP_KEY
        )
        launches = launch_sum / n_cycles_group.reindex(group_of).to_numpy()
    else:
        launches = pd.Series(np.nan, index=func_type.index)
    cycle_index = pd.MultiIndex.from_frame(cycles[[*GROUP_KEY, C.RUN, C.CYCLE]])
    per_cycle = {
        name: fn.pivot_table(
            index=[*GROUP_KEY, C.RUN, C.CYCLE],
            columns=C.FUNCTION,
            values=name,
            aggfunc="sum",
            observed=True,
        )
        .reindex(cycle_index)
        .fillna(0.0)
        for name in (C.TIME_MS, C.CYCLE_SHARE_PCT)
    }
    return SideUnits(
        per_cycle_time_ms=per_cycle[C.TIME_MS],
        per_cycle_share_pct=per_cycle[C.CYCLE_SHARE_PCT],
        time_ms=time_ms,
        cycle_share_pct=cycle_share,
        metric_mean=_metric_mean_units(table, cycles, full_index),
        func_type=func_type,
        launches=launches,
        cycles_per_group=n_cycles_group,
    )


def _metric_mean_units(
    table: pd.DataFrame, cycles: pd.DataFrame, full_index: pd.Index
) -> pd.DataFrame:
    """Time-weighted metric mean (μ) per unit for each (function, metric).

    A plain mean where no time is known."""
    rows = table[(table[C.METRIC] != "") & np.isfinite(table[C.METRIC_MEAN].to_numpy())]
    if rows.empty:
        return pd.DataFrame(index=full_index)
    rows = rows[
        [C.RUN, C.PID, C.DEVICE, C.CYCLE, C.FUNCTION, C.METRIC, C.TIME_MS, C.METRIC_MEAN]
    ].merge(cycles, on=[C.RUN, C.PID, C.DEVICE, C.CYCLE])
    weight = np.where(rows[C.TIME_MS].to_numpy() > 0, rows[C.TIME_MS].to_numpy(), 0.0)
    rows = rows.assign(w=weight, wv=weight * rows[C.METRIC_MEAN].to_numpy(), one=1.0)
    g = rows.groupby([*GROUP_KEY, UNIT, C.FUNCTION, C.METRIC], observed=True)[
        ["w", "wv", C.METRIC_MEAN, "one"]
    ].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(g["w"] > 0, g["wv"] / g["w"], g[C.METRIC_MEAN] / g["one"])
    metric_mean_series = pd.Series(means, index=g.index)
    return metric_mean_series.unstack([C.FUNCTION, C.METRIC]).reindex(full_index)


def groups_of(frame: pd.DataFrame | pd.Series) -> list[tuple[int, str]]:
    """The (pid, device) groups of a unit-indexed frame, sorted."""
    index = frame.index
    pids = index.get_level_values(C.PID)
    devices = index.get_level_values(C.DEVICE)
    return sorted({(int(p), str(d)) for p, d in zip(pids, devices, strict=True)})


def group_rows(frame: pd.DataFrame, group: tuple[int, str]) -> pd.DataFrame:
    """The units of one (pid, device) group (all-NaN columns dropped)."""
    index = frame.index
    mask = (index.get_level_values(C.PID) == group[0]) & (
        index.get_level_values(C.DEVICE) == group[1]
    )
    return frame.loc[mask].dropna(axis=1, how="all")


def group_types(func_type: pd.Series, group: tuple[int, str]) -> dict[str, str]:
    """Function name -> func_type within one group."""
    index = func_type.index
    mask = (index.get_level_values(C.PID) == group[0]) & (
        index.get_level_values(C.DEVICE) == group[1]
    )
    sub = func_type.loc[mask]
    return {
        str(name): str(kind)
        for name, kind in zip(sub.index.get_level_values(C.FUNCTION), sub.to_numpy(), strict=True)
    }

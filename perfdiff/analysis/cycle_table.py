"""Run file -> cycle table (one row per run, pid, device, cycle, function, metric).

Why these choices:
- A kernel belongs to the cycle that launched it (``KernelTable.cycle``): GPU work runs
  asynchronously behind the CPU, so cutting by wall-clock windows would split one step's kernels
  over two cycles. Its whole duration counts in that cycle.
- GPU idle is the cycle's time minus the union of its kernels' intervals on the device (never
  below 0): overlapping kernels on several streams must not count twice.
- Memcpy (by direction) and memset are pseudo-functions, so a copy that grew is visible.
- Warm-up cycles are dropped here, once, so no statistic can see them.
- Replicate runs (same rank, new process) share one ``pid`` value so they pool as runs; ranks
  of one job keep theirs.
- Everything is grouped on integer ids (interned names) with numpy/pandas, never a Python loop
  per launch: a million launches build in about a second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.kernel_metrics import kernel_metric_means
from perfdiff.schema.model import Run, RunFile, TransferTable


def cycle_table(run_file: RunFile) -> pd.DataFrame:
    """The cycle table of every run in ``run_file`` (warm-up cycles excluded)."""
    names = np.asarray(
        [s.demangled or s.mangled for s in run_file.strings] + [C.IDLE_FUNCTION], dtype=object
    )
    # Replicate runs are separate processes (new pids) of the same role: a run's pid column is
    # the pid of the first run with its rank, so replicates pool and ranks stay apart.
    role_pid: dict[int | None, int] = {}
    for run in run_file.runs:
        role_pid.setdefault(run.rank, run.pid)
    parts = [_run_table(run, names, role_pid[run.rank]) for run in run_file.runs]
    parts = [p for p in parts if len(p)]
    if not parts:
        return C.empty_cycle_table()
    table = pd.concat(parts, ignore_index=True)
    return table


def _measured_cycles(run: Run) -> pd.DataFrame:
    cyc = run.cycles
    keep = ~cyc.warmup
    return pd.DataFrame(
        {
            C.CYCLE: cyc.index[keep],
            C.CYCLE_MS: (cyc.end_ns[keep] - cyc.start_ns[keep]) / 1e6,
            C.ANCHOR: np.asarray(cyc.label, dtype=object)[keep],
        }
    )


def _run_table(run: Run, names: np.ndarray, pid: int) -> pd.DataFrame:
    cycles = _measured_cycles(run)
    if cycles.empty:
        return C.empty_cycle_table()
    idle_id = len(names) - 1
    k = run.kernels
    in_cycle = np.isin(k.cycle, cycles[C.CYCLE].to_numpy())
    dur_ms = (k.end_ns - k.start_ns)[in_cycle] / 1e6
    kern = pd.DataFrame(
        {
            "dev": k.device[in_cycle],
            C.CYCLE: k.cycle[in_cycle],
            "fid": k.name_id[in_cycle],
            C.TIME_MS: dur_ms,
        }
    )
    per_fn = (
        kern.groupby(["dev", C.CYCLE, "fid"], sort=True)[C.TIME_MS]
        .agg(["sum", "size"])
        .rename(columns={"sum": C.TIME_MS, "size": C.LAUNCHES})
        .reset_index()
    )
    per_fn[C.FUNC_TYPE] = "kernel"
    idle = _idle_rows(run, in_cycle, cycles, idle_id)
    transfers = [
        _transfer_rows(run.memcpy, cycles, prefix="Memcpy ", func_type="memcpy"),
        _transfer_rows(run.memset, cycles, prefix="", func_type="memset"),
    ]
    base = pd.concat([per_fn, idle], ignore_index=True)
    if base.empty and not any(len(t) for t in transfers):
        return C.empty_cycle_table()  # nothing ran on any device in the measured cycles
    base[C.FUNCTION] = names[base["fid"].to_numpy(dtype=np.int64)]
    base = pd.concat([base, *[t for t in transfers if len(t)]], ignore_index=True)
    base = base.merge(cycles, on=C.CYCLE, how="inner")
    base[C.BETA_PCT] = 100.0 * base[C.TIME_MS] / base[C.CYCLE_MS]
    metric_rows = _metric_rows(run, in_cycle, base)
    out = pd.DataFrame(
        {
            C.RUN: run.index,
            C.PID: pid,
            C.DEVICE: "GPU " + metric_rows["dev"].astype(np.int64).astype(str),
            C.CYCLE: metric_rows[C.CYCLE].astype(np.int64),
            C.CYCLE_MS: metric_rows[C.CYCLE_MS],
            C.ANCHOR: metric_rows[C.ANCHOR],
            C.FUNCTION: metric_rows[C.FUNCTION],
            C.FUNC_TYPE: metric_rows[C.FUNC_TYPE],
            C.METRIC: metric_rows[C.METRIC],
            C.TIME_MS: metric_rows[C.TIME_MS],
            C.BETA_PCT: metric_rows[C.BETA_PCT],
            C.MU: metric_rows[C.MU],
            C.LAUNCHES: metric_rows[C.LAUNCHES].astype(np.float64),
        }
    )
    return out


def _idle_rows(run: Run, in_cycle: np.ndarray, cycles: pd.DataFrame, idle_id: int) -> pd.DataFrame:
    """Cycle time with no kernel running, per device that ran kernels in this run."""
    k = run.kernels
    devices = np.unique(k.device)
    if devices.shape[0] == 0:
        return pd.DataFrame(columns=["dev", C.CYCLE, "fid", C.TIME_MS, C.LAUNCHES, C.FUNC_TYPE])
    busy = pd.DataFrame(
        {
            "dev": k.device[in_cycle],
            C.CYCLE: k.cycle[in_cycle],
            "start": k.start_ns[in_cycle],
            "end": k.end_ns[in_cycle],
        }
    ).sort_values(["dev", C.CYCLE, "start"], kind="stable")
    # union of intervals: each kernel adds the part after the furthest end seen so far
    group = busy.groupby(["dev", C.CYCLE], sort=False)
    prev_end = group["end"].cummax().groupby([busy["dev"], busy[C.CYCLE]]).shift(1)
    start = busy["start"].to_numpy(dtype=np.float64)
    end = busy["end"].to_numpy(dtype=np.float64)
    reach = np.fmax(start, prev_end.to_numpy(dtype=np.float64))
    busy["union_ms"] = np.maximum(0.0, end - reach) / 1e6
    union = busy.groupby(["dev", C.CYCLE])["union_ms"].sum()
    grid = pd.MultiIndex.from_product([devices, cycles[C.CYCLE].to_numpy()], names=["dev", C.CYCLE])
    union = union.reindex(grid, fill_value=0.0)
    cycle_ms = cycles.set_index(C.CYCLE)[C.CYCLE_MS]
    idle_ms = np.maximum(
        0.0, cycle_ms.reindex(grid.get_level_values(C.CYCLE)).to_numpy() - union.to_numpy()
    )
    return pd.DataFrame(
        {
            "dev": grid.get_level_values("dev").to_numpy(),
            C.CYCLE: grid.get_level_values(C.CYCLE).to_numpy(),
            "fid": idle_id,
            C.TIME_MS: idle_ms,
            C.LAUNCHES: np.nan,
            C.FUNC_TYPE: "idle",
        }
    )


def _transfer_rows(
    table: TransferTable, cycles: pd.DataFrame, *, prefix: str, func_type: str
) -> pd.DataFrame:
    keep = np.isin(table.cycle, cycles[C.CYCLE].to_numpy())
    if not keep.any():
        return pd.DataFrame()
    kinds = np.asarray(table.kind, dtype=object)[keep]
    frame = pd.DataFrame(
        {
            "dev": table.device[keep],
            C.CYCLE: table.cycle[keep],
            C.FUNCTION: [f"{prefix}{kind}" if kind != "memset" else "Memset" for kind in kinds],
            C.TIME_MS: (table.end_ns - table.start_ns)[keep] / 1e6,
        }
    )
    out = (
        frame.groupby(["dev", C.CYCLE, C.FUNCTION])[C.TIME_MS]
        .agg(["sum", "size"])
        .rename(columns={"sum": C.TIME_MS, "size": C.LAUNCHES})
        .reset_index()
    )
    out[C.FUNC_TYPE] = func_type
    return out


def _metric_rows(run: Run, in_cycle: np.ndarray, base: pd.DataFrame) -> pd.DataFrame:
    """One row per metric for kernel functions (μ = time-weighted mean over their launches)."""
    k = run.kernels
    dur = (k.end_ns - k.start_ns)[in_cycle].astype(np.float64)
    frames = []
    kernel_base = base[base[C.FUNC_TYPE] == "kernel"]
    other = base[base[C.FUNC_TYPE] != "kernel"].copy()
    other[C.METRIC] = ""
    other[C.MU] = np.nan
    metric_devices: set[int] = set()
    for series in run.metrics:
        means = kernel_metric_means(run, series)[in_cycle]
        on = (k.device[in_cycle] == series.device) & np.isfinite(means)
        metric_devices.add(series.device)
        launches = pd.DataFrame(
            {
                "dev": k.device[in_cycle][on],
                C.CYCLE: k.cycle[in_cycle][on],
                "fid": k.name_id[in_cycle][on],
                "w": dur[on],
                "wv": dur[on] * means[on],
            }
        )
        sums = launches.groupby(["dev", C.CYCLE, "fid"])[["w", "wv"]].sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = (sums["wv"] / sums["w"]).rename(C.MU).reset_index()
        rows = kernel_base[kernel_base["dev"] == series.device].merge(
            mu, on=["dev", C.CYCLE, "fid"], how="left"
        )
        rows[C.METRIC] = series.name
        frames.append(rows)
    no_metric = kernel_base[~kernel_base["dev"].isin(sorted(metric_devices))].copy()
    no_metric[C.METRIC] = ""
    no_metric[C.MU] = np.nan
    return pd.concat([*frames, no_metric, other], ignore_index=True)

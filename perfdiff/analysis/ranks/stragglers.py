"""One job's cycle table -> which rank the others wait for (:class:`RanksReport`).

The method (docs/explanation/stragglers.md says why):

1. Per rank and cycle, split the GPU kernel time into *work* (every kernel that is not a
   collective) and *wait* (collective kernels: NCCL all-reduce and the like). In a job whose
   ranks meet in collectives, a slow rank makes every other rank's collective kernels longer by
   its delay while their own work does not change; counted as work, that waiting would make
   the healthy ranks look slow.
2. Each rank's work per cycle is set against the median of the other ranks' work in the same
   cycle (the median: one straggler among eight does not move it). The per-cycle differences
   are correlated from cycle to cycle, so they are tested as batch means (as ``compare`` does
   for one-run sides), with a GPU-to-GPU variation (``RanksOptions.gpu_cv_pct``) added to the
   standard error: two healthy cards of one model differ by a fraction of a percent, and many
   cycles would otherwise make that significant.
3. Benjamini-Hochberg over the ranks. A straggler: significant (q < alpha), its excess work above
   the practical threshold (% of its cycle), and it waits in collectives no longer than the
   others do. A rank with more work that also waits longer is reported as such, not named.
4. For each straggler, the same test per function names the kernels that make it slow, and the
   collectives the others wait in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.collectives import is_collective
from perfdiff.analysis.distributions import t_sf
from perfdiff.analysis.ranks.model import (
    KernelExcess,
    RankRow,
    RanksOptions,
    RanksReport,
    RankVerdict,
)
from perfdiff.analysis.stats import batch_labels, bh_qvalues
from perfdiff.errors import InputError
from perfdiff.schema.model import FloatArray

_ONE_CYCLE_KEY = [C.RUN, C.PID, C.CYCLE]


@dataclass(frozen=True)
class _Job:
    """The job as arrays: per function, common cycle and rank, the time in ms."""

    pids: list[int]  # one column per rank, in rank order
    functions: list[str]
    collective: np.ndarray  # per function
    time_ms: np.ndarray  # (functions, cycles, ranks)
    cycle_ms: np.ndarray  # (cycles, ranks)
    devices: dict[int, tuple[str, ...]]
    left_out_cycles: int  # cycles some rank has and another lacks

    @property
    def work_ms(self) -> np.ndarray:
        return np.asarray(self.time_ms[~self.collective].sum(axis=0))

    @property
    def wait_ms(self) -> np.ndarray:
        return np.asarray(self.time_ms[self.collective].sum(axis=0))


def find_stragglers(table: pd.DataFrame, *, rank_of: Mapping[int, str],
                    options: RanksOptions | None = None, source: str = "<table>",
                    workload: str = "") -> RanksReport:
    """Each rank of the job in ``table`` against the others (see the module docstring).

    ``rank_of`` names each pid of the table ("rank 3"), in rank order; a pid it lacks is named
    by its pid. Raises :class:`InputError` when the table holds fewer than two processes.
    """
    opts = options or RanksOptions()
    job = _job(C.normalise_cycle_table(table, source=source), rank_of, source)
    n_cycles = job.cycle_ms.shape[0]
    work, wait = job.work_ms, job.wait_ms
    tests = [_excess_test(work, r, opts) for r in range(len(job.pids))]
    q = bh_qvalues(np.asarray([t.p for t in tests], dtype=np.float64))
    rows = []
    for r, pid in enumerate(job.pids):
        test = tests[r]
        cycle_ms = float(job.cycle_ms[:, r].mean()) if n_cycles else math.nan
        others_wait = float(_others_median(wait, r).mean()) if n_cycles else math.nan
        excess_pct = 100.0 * test.mean / cycle_ms if cycle_ms > 0 else math.nan
        verdict = _verdict(test, float(q[r]), excess_pct, float(wait[:, r].mean())
                           if n_cycles else math.nan, others_wait, opts)
        kernels: tuple[KernelExcess, ...] = ()
        waits: tuple[KernelExcess, ...] = ()
        if verdict == "straggler":
            kernels, waits = _kernels(job, r, test.mean, opts)
        rows.append(RankRow(
            rank=rank_of.get(pid, f"pid {pid}"), pid=pid, devices=job.devices[pid],
            n_cycles=n_cycles, cycle_ms=cycle_ms, work_ms=float(work[:, r].mean()),
            wait_ms=float(wait[:, r].mean()), others_work_ms=test.others,
            others_wait_ms=others_wait, excess_work_ms=test.mean, excess_work_pct=excess_pct,
            p_value=test.p, q_value=float(q[r]), verdict=verdict, kernels=kernels, waits=waits,
        ))
    order = {pid: i for i, pid in enumerate(job.pids)}
    rows.sort(key=lambda row: (row.verdict != "straggler",
                               -row.excess_work_ms if row.verdict == "straggler" else 0.0,
                               order[row.pid]))
    return RanksReport(source=source, workload=workload, n_ranks=len(job.pids),
                       n_cycles=n_cycles, ranks=tuple(rows), options=opts,
                       notes=tuple(_notes(job, opts)))


def _job(table: pd.DataFrame, rank_of: Mapping[int, str], source: str) -> _Job:
    # A function with metric samples has one row per metric, each with the same time.
    table = table.drop_duplicates([C.RUN, C.PID, C.DEVICE, C.CYCLE, C.FUNCTION])
    present = sorted({int(p) for p in table[C.PID]})
    if len(present) < 2:
        raise InputError(
            f"{source}: holds {len(present)} process with measured cycles; `perfdiff ranks` "
            "compares the ranks of one job with each other: record every rank (perfdiff "
            "collect -- torchrun ...), or compare two runs with `perfdiff compare`")
    in_order = [p for p in rank_of if p in present]
    pids = in_order + [p for p in present if p not in in_order]
    cycles = table.drop_duplicates(_ONE_CYCLE_KEY)
    per_rank = cycles.groupby(C.PID).size()
    counts = cycles.groupby([C.RUN, C.CYCLE]).size()
    common = counts[counts == len(pids)].index
    left_out = int(per_rank.sum()) - len(common) * len(pids)
    cycle_pos = pd.Series(np.arange(len(common)), index=common)
    rank_pos = {pid: i for i, pid in enumerate(pids)}
    cyc = cycles.set_index([C.RUN, C.CYCLE])
    cyc = cyc[cyc.index.isin(common)]
    cycle_ms = np.full((len(common), len(pids)), np.nan)
    cycle_ms[cycle_pos.loc[cyc.index].to_numpy(),
             cyc[C.PID].map(rank_pos).to_numpy()] = cyc[C.CYCLE_MS].to_numpy()
    kernels = table[table[C.FUNC_TYPE].isin(C.KERNEL_TYPES)]
    sums = kernels.groupby([C.FUNCTION, C.RUN, C.CYCLE, C.PID])[C.TIME_MS].sum().reset_index()
    keys = pd.MultiIndex.from_frame(sums[[C.RUN, C.CYCLE]])
    keep = keys.isin(common)
    sums, keys = sums[keep], keys[keep]
    functions = sorted({str(f) for f in sums[C.FUNCTION]})
    f_pos = {f: i for i, f in enumerate(functions)}
    time_ms = np.zeros((len(functions), len(common), len(pids)))
    time_ms[sums[C.FUNCTION].map(f_pos).to_numpy(), cycle_pos.loc[keys].to_numpy(),
            sums[C.PID].map(rank_pos).to_numpy()] = sums[C.TIME_MS].to_numpy()
    devices = {int(str(pid)): tuple(sorted({str(d) for d in group}))
               for pid, group in kernels.groupby(C.PID)[C.DEVICE]}
    return _Job(pids=pids, functions=functions,
                collective=np.asarray([is_collective(f) for f in functions], dtype=bool),
                time_ms=time_ms, cycle_ms=cycle_ms,
                devices={pid: devices.get(pid, ()) for pid in pids}, left_out_cycles=left_out)


@dataclass(frozen=True)
class _Test:
    """A rank's excess over the others' median: mean per cycle, the others' mean, p."""

    mean: float
    others: float
    p: float
    n: int


def _others_median(values: np.ndarray, r: int) -> FloatArray:
    """Per cycle (rows), the median over every column but ``r`` (last axis)."""
    return np.asarray(np.median(np.delete(values, r, axis=-1), axis=-1), dtype=np.float64)


def _excess_test(values: np.ndarray, r: int, opts: RanksOptions) -> _Test:
    """Batch-means t-test of column ``r`` minus the others' median, cycle by cycle.

    ``values``: (cycles, ranks). The GPU-to-GPU variation ``gpu_cv_pct`` of the others' level
    is added to the standard error (module docstring, step 2).
    """
    n = values.shape[0]
    if n < 2:
        return _Test(math.nan, math.nan, math.nan, n)
    others = _others_median(values, r)
    diff = values[:, r] - others
    labels = batch_labels(n, opts.n_batches)
    k = int(labels.max()) + 1
    batch_means = np.bincount(labels, weights=diff) / np.bincount(labels)
    mean, level = float(diff.mean()), float(others.mean())
    se_batches = float(batch_means.std(ddof=1)) / math.sqrt(k) if k > 1 else math.nan
    floor = opts.gpu_cv_pct / 100.0 * abs(level)
    se = math.hypot(se_batches, floor)
    if not math.isfinite(se):
        return _Test(mean, level, math.nan, n)
    if se == 0.0:
        return _Test(mean, level, math.nan if mean == 0.0 else 0.0, n)
    p = float(2.0 * t_sf(abs(mean) / se, k - 1))
    return _Test(mean, level, min(1.0, p), n)


def _verdict(test: _Test, q: float, excess_pct: float, wait_ms: float, others_wait_ms: float,
             opts: RanksOptions) -> RankVerdict:
    if test.n < 2 or not math.isfinite(test.mean):
        return "insufficient data"
    slower = (math.isfinite(q) and q < opts.alpha and test.mean > 0
              and excess_pct > opts.practical_threshold_pct)
    if not slower:
        return "no straggler"
    return "straggler" if wait_ms <= others_wait_ms else "slower, waits too"


def _kernels(job: _Job, r: int, excess_ms: float, opts: RanksOptions,
             ) -> tuple[tuple[KernelExcess, ...], tuple[KernelExcess, ...]]:
    """The kernels that make rank ``r`` slow, and the collectives the others wait in."""
    tests = [_excess_test(job.time_ms[f], r, opts) for f in range(len(job.functions))]
    p = np.asarray([t.p for t in tests], dtype=np.float64)
    compute, collective = ~job.collective, job.collective
    q = np.full(p.shape, np.nan)
    q[compute] = bh_qvalues(p[compute])
    q[collective] = bh_qvalues(p[collective])
    slow: list[KernelExcess] = []
    waits: list[KernelExcess] = []
    for f, (name, test) in enumerate(zip(job.functions, tests, strict=True)):
        if not (math.isfinite(q[f]) and q[f] < opts.alpha):
            continue
        share = 100.0 * abs(test.mean) / excess_ms if excess_ms > 0 else math.nan
        row = KernelExcess(function=name, collective=bool(job.collective[f]),
                           rank_ms=float(job.time_ms[f, :, r].mean()), others_ms=test.others,
                           excess_ms=test.mean, share_of_excess_pct=share,
                           p_value=test.p, q_value=float(q[f]))
        # a kernel worth naming moves at least 1 % of the rank's excess
        if row.collective and test.mean < 0 and share >= 1.0:
            waits.append(row)
        elif not row.collective and test.mean > 0 and share >= 1.0:
            slow.append(row)
    slow.sort(key=lambda k: (-k.excess_ms, k.function))
    waits.sort(key=lambda k: (k.excess_ms, k.function))
    return tuple(slow), tuple(waits)


def _notes(job: _Job, opts: RanksOptions) -> list[str]:
    notes = [
        "Work is GPU kernel time that is not a collective; collective kernels (NCCL and the "
        "like) are counted as waiting: on the ranks that wait for a straggler they grow by its "
        "delay, so they point at the healthy ranks, not at the slow one.",
        f"Each rank is set against the median of the others, cycle by cycle, as batch means of "
        f"consecutive cycles, with {opts.gpu_cv_pct:g} % GPU-to-GPU variation assumed "
        f"(--gpu-cv-pct); a straggler's excess work exceeds {opts.practical_threshold_pct:g} % "
        f"of its cycle at q < {opts.alpha:g} and it waits no longer than the others.",
    ]
    if not job.collective.any():
        notes.append("No collective kernels in these processes: if they are not ranks of one "
                     "job, nobody waits for anybody and a slower process is only slower.")
    if job.left_out_cycles:
        notes.append(f"{job.left_out_cycles} rank-cycles are left out: each is missing on at "
                     "least one other rank (only cycles every rank has are compared).")
    return notes


__all__ = ["find_stragglers"]

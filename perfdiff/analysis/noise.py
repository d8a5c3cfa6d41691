"""The noise model of the tests: run-to-run floors, autocorrelation, interval width, log scale.

Why separate: these are the assumptions behind every standard error (docs/explanation/
statistics.md, "The tests"); one module states them all.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from perfdiff.analysis import columns as C
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.stats import (
    REL_SE_FLOOR,
    autocorrelation_model,
    batch_df_factor,
    batch_variance_inflation,
    minimum_detectable_floored,
    welch,
)
from perfdiff.analysis.units import SideUnits, group_rows
from perfdiff.schema.model import FloatArray


def noise_model(
    units: tuple[SideUnits, SideUnits], group: tuple[int, str], opts: CompareOptions, unit: str
) -> tuple[float, bool]:
    """Relative SE floor and whether batch means are in use, for one (pid, device).

    A side recorded in one run cannot show run-to-run variation, yet a second run would differ
    by about ``run_cv_pct``: each such side adds that much (relative) to the floor of the SE.
    Not raised where the GPU idles (``host_aware_cv``): a kernel's GPU time per cycle does not
    move with the host's speed; GPU idle's floor is ``idle_cycle_floor``'s.
    """
    if unit == "runs":
        return REL_SE_FLOOR, False
    single = [_runs_in(u, group) < 2 for u in units]
    return max(REL_SE_FLOOR, single_run_floor(opts, single, host=False)), True


def single_run_floor(opts: CompareOptions, single: Sequence[bool] | int, *,
                     host: bool = True) -> float:
    """The relative SE floor the one-run sides add: the root sum of squares of their assumed
    CVs (``single[i]``: side i is one run; an int n: the first n sides). ``host``: each side's
    own CV, raised where its GPU idles (cycle time, GPU idle); False: ``run_cv_pct`` for
    every side (a kernel's GPU time, which a host's speed does not move)."""
    if isinstance(single, int):
        single = [side < single for side in range(2)]
    cvs = [opts.side_cv(i) if host else opts.run_cv_pct / 100.0 for i in range(2)]
    return float(np.sqrt(sum(cvs[i] ** 2 for i, one in enumerate(single) if one)))


def host_aware_cv(opts: CompareOptions, idle_share: tuple[float, float]) -> CompareOptions:
    """``opts`` with each side's assumed run-to-run CV: ``run_cv_pct``, raised to
    ``host_run_cv_pct`` times the share of the cycle its GPU idles.

    Why: one assumed CV for every program was either too small for steps that wait on the
    host (timm ViT-S bf16 processes of one host 29.6-36.0 ms; 2 of 15 same-variant pairs of
    recorded processes called "faster" or "slower", H100 2026-12-08) or too large for steps
    that wait on the GPU (0.02-1.4 % between processes). A process's host speed moves its
    cycle by the part of the cycle the host holds; the GPU's idle share is that part as the
    recording sees it (traced cycles: an upper bound, so the assumption errs wide). A NaN
    share keeps ``run_cv_pct``."""
    if opts.host_run_cv_pct <= 0:
        return opts
    cvs = tuple(opts.run_cv_pct if not math.isfinite(share)
                else max(opts.run_cv_pct, opts.host_run_cv_pct * min(1.0, max(0.0, share)))
                for share in idle_share)
    return replace(opts, side_run_cv_pct=(cvs[0], cvs[1]), side_idle_share=idle_share)


def minimum_detectable_pct(opts: CompareOptions, single: Sequence[bool] | int) -> float:
    """The minimum detectable cycle-time change (%, 80 % power, at ``opts.alpha``) that the
    assumed run-to-run variation alone allows a pair whose one-run sides are ``single``,
    however many cycles each has; at least the practical threshold.

    Why: each one-run side adds its assumed CV to the relative floor of the SE
    (``noise_model``, ``summary.cycle_time_change``), a known variance that no number of
    cycles shrinks. The same MDE as the report's (``stats.minimum_detectable_floored``: a
    slowdown raises its own floor), with no within-run noise, which can only add to it.
    """
    floor = single_run_floor(opts, single)
    mde = minimum_detectable_floored(
        np.zeros(1), np.full(1, np.inf), opts.alpha, mean_normal=np.ones(1), rel_floor=floor,
        abs_floor=0.0, threshold=opts.practical_threshold_pct / 100.0)
    return float(100.0 * mde[0])


def never_called_pct(opts: CompareOptions, single: Sequence[bool] | int) -> float:
    """The cycle-time change (%) below which a pair whose one-run sides are ``single`` never
    calls a change, in either direction, however many cycles it has.

    Why beside the MDE: a change between the two is sometimes called, sometimes not; users
    asking "could this pair have shown a 3 % change at all?" need this bound. The verdict needs
    p < alpha, so |Δ| > z(1 - alpha/2) times the floor (a speed-up's floor scales with the
    normal mean, the smaller one), and |Δ| above the practical threshold.
    """
    floor = 100.0 * single_run_floor(opts, single)
    z = NormalDist().inv_cdf(1.0 - opts.alpha / 2.0)  # the floor has no degrees of freedom
    return float(max(opts.practical_threshold_pct, z * floor))


def idle_cycle_floor(
    units: tuple[SideUnits, SideUnits], group: tuple[int, str], opts: CompareOptions, unit: str
) -> float:
    """Floor of GPU idle's SE as a share of the cycle time (0 when runs are the unit).

    Why apart from the kernels': idle is the remainder of the cycle; from run to run it moves
    with the whole cycle (host speed, launch queue), not by a share of itself (real A/A: idle
    0.65-0.96 ms of a 5.8 ms cycle). ``idle_run_cv_pct`` states that assumption, in % of the
    cycle, per single-run side; by default each side's assumed CV (``host_aware_cv``).
    """
    if unit == "runs":
        return 0.0
    single = [_runs_in(u, group) < 2 for u in units]
    if opts.idle_run_cv_pct is None:
        return single_run_floor(opts, single)
    return float(np.sqrt(sum(single)) * opts.idle_run_cv_pct / 100.0)


def _runs_in(u: SideUnits, group: tuple[int, str]) -> int:
    index = u.per_cycle_time_ms.index
    mask = (index.get_level_values(C.PID) == group[0]) & (
        index.get_level_values(C.DEVICE) == group[1]
    )
    return len(set(index.get_level_values(C.RUN)[mask]))


@dataclass(frozen=True)
class BatchNoise:
    """Per column: what multiplies the naive batch-means variance of the mean (AR(1)
    inflation), and the share of its degrees of freedom that variance is worth."""

    scale: FloatArray
    df_factor: FloatArray


def inflation(
    units: tuple[SideUnits, SideUnits],
    group: tuple[int, str],
    common: list[str],
    what: str,
    batched: bool,
    n_batches: int,
) -> tuple[BatchNoise, BatchNoise]:
    """Per-side correction of batch means for autocorrelated cycles (none for runs)."""
    out = []
    for series in _per_cycle(units, group, common, what):
        out.append(_batch_noise(series, n_batches) if batched else _no_correction(len(common)))
    return out[0], out[1]


def _no_correction(columns: int) -> BatchNoise:
    return BatchNoise(scale=np.ones(columns), df_factor=np.ones(columns))


def _batch_noise(series: FloatArray, n_batches: int) -> BatchNoise:
    phi, share = autocorrelation_model(series)
    n = series.shape[0]
    return BatchNoise(
        scale=batch_variance_inflation(phi, n, n_batches, share),
        df_factor=batch_df_factor(phi, n, n_batches, share),
    )


def _per_cycle(
    units: tuple[SideUnits, SideUnits], group: tuple[int, str], common: list[str], what: str
) -> list[FloatArray]:
    out = []
    for u in units:
        frame = u.per_cycle_time_ms if what == "time" else u.per_cycle_share_pct
        out.append(group_rows(frame, group).reindex(columns=common).fillna(0.0).to_numpy())
    return out


def paired_positions(units: tuple[SideUnits, SideUnits], group: tuple[int, str]) -> bool:
    """Whether batch j of one side can be paired with batch j of the other: one run on each
    side and equally many cycles, so that batches cover the same cycles of their runs and a
    profile along the run (leftover warm-up) cancels (``stats.paired_by_position``)."""
    sizes = []
    for u in units:
        if _runs_in(u, group) != 1:
            return False
        sizes.append(len(group_rows(u.per_cycle_time_ms, group).index))
    return sizes[0] == sizes[1]


def paired_inflation(
    units: tuple[SideUnits, SideUnits],
    group: tuple[int, str],
    common: list[str],
    what: str,
    n_batches: int,
) -> BatchNoise:
    """AR(1) correction of the paired batch differences, with ρ from the per-cycle differences
    (the shared profile cancels there too, so it does not pass for autocorrelation)."""
    normal, abnormal = _per_cycle(units, group, common, what)
    return _batch_noise(abnormal - normal, n_batches)


def interval_se(
    samples: list[np.ndarray],
    test_se: FloatArray,
    noise: tuple[BatchNoise, BatchNoise],
    batched: bool,
) -> FloatArray:
    """The SE an interval should have: the test's, minus the numerical floor.

    That floor keeps z finite for near-constant data; in an interval it would only add width.
    The run-to-run floor of single-run sides stays: it is real (assumed) spread.
    """
    if batched:
        return test_se
    plain = welch(
        samples[0],
        samples[1],
        rel_floor=0.0,
        abs_floor=0.0,
        var_scale_normal=noise[0].scale,
        var_scale_abnormal=noise[1].scale,
    ).se
    return np.asarray(np.where(plain > 0, plain, test_se), dtype=np.float64)


def relative_logs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(μ + ε) per column, ε = 1 % of the column's median |μ| over both sides.

    Why: Z(log μ) should measure a *relative* change whatever the unit (MHz, fractions, bytes);
    log1p would be nearly linear for fractions and the offset keeps μ = 0 finite.
    """
    both = np.abs(np.concatenate((x, y), axis=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        scale = np.nanmedian(both, axis=0)
    eps = 0.01 * np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    return np.log(np.abs(x) + eps), np.log(np.abs(y) + eps)

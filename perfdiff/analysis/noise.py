"""The noise model of the tests: run-to-run floors, autocorrelation, interval width, log scale.

Why separate: these are the assumptions behind every standard error (docs/explanation/
statistics.md, "The tests"); one module states them all.
"""

from __future__ import annotations

import warnings

import numpy as np

from perfdiff.analysis import columns as C
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.stats import (
    REL_SE_FLOOR,
    batch_variance_inflation,
    lag1_autocorrelation,
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
    """
    if unit == "runs":
        return REL_SE_FLOOR, False
    cv = opts.run_cv_pct / 100.0
    single = [_runs_in(u, group) < 2 for u in units]
    floor = float(np.sqrt(sum(cv**2 for s in single if s)))
    return max(REL_SE_FLOOR, floor), True


def _runs_in(u: SideUnits, group: tuple[int, str]) -> int:
    index = u.per_cycle_time_ms.index
    mask = (index.get_level_values(C.PID) == group[0]) & (
        index.get_level_values(C.DEVICE) == group[1]
    )
    return len(set(index.get_level_values(C.RUN)[mask]))


def inflation(
    units: tuple[SideUnits, SideUnits],
    group: tuple[int, str],
    common: list[str],
    what: str,
    batched: bool,
    n_batches: int,
) -> tuple[FloatArray, FloatArray]:
    """Per-side variance inflation of batch means for autocorrelated cycles (1 for runs)."""
    out = []
    for u in units:
        frame = u.per_cycle_time_ms if what == "time" else u.per_cycle_beta_pct
        series = group_rows(frame, group).reindex(columns=common).fillna(0.0).to_numpy()
        if not batched:
            out.append(np.ones(len(common)))
            continue
        rho = lag1_autocorrelation(series)
        out.append(batch_variance_inflation(rho, series.shape[0], n_batches))
    return out[0], out[1]


def interval_se(
    samples: list[np.ndarray],
    test_se: FloatArray,
    scale: tuple[FloatArray, FloatArray],
    batched: bool,
) -> FloatArray:
    """The SE an interval should have: the test's, minus the 0.25 % resolution floor.

    That floor keeps z finite for near-constant data; in an interval it would only add width
    (measured over-coverage). The run-to-run floor of single-run sides stays: it is real spread.
    """
    if batched:
        return test_se
    plain = welch(
        samples[0],
        samples[1],
        rel_floor=0.0,
        abs_floor=0.0,
        var_scale_normal=scale[0],
        var_scale_abnormal=scale[1],
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

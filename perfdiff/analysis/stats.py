"""Statistical primitives, vectorised over columns (one column per function or metric).

Why hand-written Welch: the standard error must include both sides *plus a variance floor*
(``se_floor``), so that a near-constant baseline cannot turn measurement noise into z = 246;
scipy's ``ttest_ind`` has no floor. The t statistic and its Welch-Satterthwaite degrees of
freedom are otherwise textbook and checked against scipy in the tests.

Conventions: NaN means "not defined" (too few samples, or both sides constant): never 0, never
a p-value of 0 for a row that did not change. Every p and q returned lies in [0, 1] or is NaN.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from perfdiff.schema.model import FloatArray

# SE floor: a mean is never known better than this share of its magnitude (timer resolution,
# clock quantisation, run-to-run drift the data cannot show); see docs/explanation/statistics.md
REL_SE_FLOOR = 0.0025
ABS_SE_FLOOR = 1e-9


@dataclass(frozen=True)
class WelchResult:
    """Per-column result of :func:`welch` (arrays of equal length)."""

    mean_normal: FloatArray
    mean_abnormal: FloatArray
    delta: FloatArray
    se: FloatArray  # floored, pooled two-sided standard error of delta
    z: FloatArray  # delta / se (NaN when undefined)
    df: FloatArray
    p: FloatArray
    n_normal: FloatArray
    n_abnormal: FloatArray
    constant: np.ndarray  # both sides without variance: exact change, no test


def _nan_stats(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Count, mean and sample variance (ddof=1) per column, ignoring NaN."""
    finite = np.isfinite(x)
    n = finite.sum(axis=0).astype(np.float64)
    filled = np.where(finite, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=0) / n
        dev = np.where(finite, x - mean, 0.0)
        var = (dev**2).sum(axis=0) / (n - 1)
    return n, mean, var


def welch(
    normal: FloatArray,
    abnormal: FloatArray,
    *,
    rel_floor: float = REL_SE_FLOOR,
    abs_floor: FloatArray | float = ABS_SE_FLOOR,
    var_scale_normal: FloatArray | float = 1.0,
    var_scale_abnormal: FloatArray | float = 1.0,
) -> WelchResult:
    """Two-sided Welch test per column with a floored standard error.

    ``normal`` and ``abnormal`` are 2-D (samples x columns), NaN for missing samples.
    SE² = s_n²/n_n + s_a²/n_a + floor², floor = max(abs_floor, rel_floor · max(|m_n|, |m_a|)).
    Columns with fewer than 2 samples on a side get NaN; columns constant on both sides get an
    exact delta, ``constant=True`` and NaN z and p. ``var_scale_*`` multiply each side's
    variance of the mean (autocorrelation inflation, see :func:`batch_variance_inflation`).
    """
    x = np.atleast_2d(np.asarray(normal, dtype=np.float64))
    y = np.atleast_2d(np.asarray(abnormal, dtype=np.float64))
    n_x, m_x, v_x = _nan_stats(x)
    n_y, m_y, v_y = _nan_stats(y)
    delta = m_y - m_x
    floor = np.maximum(abs_floor, rel_floor * np.fmax(np.abs(m_x), np.abs(m_y)))
    with np.errstate(invalid="ignore", divide="ignore"):
        a = v_x / n_x * var_scale_normal
        b = v_y / n_y * var_scale_abnormal
        se = np.sqrt(a + b + floor**2)
        z = delta / se
        # Welch-Satterthwaite; the floor counts as extra variance with infinite df
        df = (a + b) ** 2 / (a**2 / (n_x - 1) + b**2 / (n_y - 1))
    df = np.where(np.isfinite(df) & (df > 0), df, np.fmax(n_x + n_y - 2, 1.0))
    enough = (n_x >= 2) & (n_y >= 2)
    # "constant": no variance beyond float round-off (time-weighted means of equal samples)
    tiny = (1e-9 * np.fmax(np.fmax(np.abs(m_x), np.abs(m_y)), ABS_SE_FLOOR)) ** 2
    constant = enough & (v_x <= tiny) & (v_y <= tiny)
    p = 2.0 * sps.t.sf(np.abs(z), df)
    bad = ~enough | constant | ~np.isfinite(z)
    z = np.where(bad, np.nan, z)
    p = np.where(bad, np.nan, np.clip(p, 0.0, 1.0))
    return WelchResult(
        mean_normal=m_x,
        mean_abnormal=m_y,
        delta=delta,
        se=np.where(enough, se, np.nan),
        z=z,
        df=df,
        p=p,
        n_normal=n_x,
        n_abnormal=n_y,
        constant=constant,
    )


def mann_whitney_p(normal: FloatArray, abnormal: FloatArray) -> FloatArray:
    """Two-sided Mann-Whitney U p-value per column (NaN: < 2 samples or all values equal)."""
    x = np.atleast_2d(np.asarray(normal, dtype=np.float64))
    y = np.atleast_2d(np.asarray(abnormal, dtype=np.float64))
    out = np.full(x.shape[1], np.nan)
    for j in range(x.shape[1]):
        a = x[:, j][np.isfinite(x[:, j])]
        b = y[:, j][np.isfinite(y[:, j])]
        if a.size < 2 or b.size < 2:
            continue
        both = np.concatenate((a, b))
        if np.all(both == both[0]):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[j] = sps.mannwhitneyu(a, b, alternative="two-sided").pvalue
    return np.asarray(np.clip(out, 0.0, 1.0), dtype=np.float64)


def bh_qvalues(p: FloatArray) -> FloatArray:
    """Benjamini-Hochberg adjusted p-values (q); NaN p-values are ignored and stay NaN."""
    p = np.asarray(p, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    m = int(ok.sum())
    if m == 0:
        return q
    pv = p[ok]
    order = np.argsort(pv, kind="stable")
    ranked = pv[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.clip(adjusted, 0.0, 1.0)
    q[ok] = out
    return q


def batch_labels(n: int, n_batches: int) -> np.ndarray:
    """Assign ``n`` consecutive samples to ``min(n_batches, n)`` nearly equal batches."""
    k = max(1, min(n_batches, n))
    return (np.arange(n) * k) // max(n, 1)


def bootstrap_delta_ci(
    normal: FloatArray,
    abnormal: FloatArray,
    *,
    resamples: int,
    rng: np.random.Generator,
    level: float = 0.95,
    target_se: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """95 % interval of mean(abnormal) - mean(normal) per column by bootstrap over samples.

    Percentile bootstrap, then widened about the estimate by (unbiased SE / bootstrap SE) ·
    t(df)/z: with ~10 batch means the plain percentile interval is too narrow (it covers about
    90 %, not 95 %). Samples are rows; all columns share resampling weights, which keeps the
    computation one matrix product and the result independent of column order.
    ``target_se`` (per column) replaces the unbiased SE in that widening when the test's SE has
    more in it (autocorrelation inflation, the run-to-run floor): the interval then keeps the
    bootstrap's shape but the test's width.
    """
    x = np.atleast_2d(np.asarray(normal, dtype=np.float64))
    y = np.atleast_2d(np.asarray(abnormal, dtype=np.float64))
    cols = x.shape[1]
    low = np.full(cols, np.nan)
    high = np.full(cols, np.nan)
    n_x, n_y = x.shape[0], y.shape[0]
    if n_x < 2 or n_y < 2:
        return low, high
    x0 = np.nan_to_num(x)
    y0 = np.nan_to_num(y)
    w_x = _resample_weights(n_x, resamples, rng)
    w_y = _resample_weights(n_y, resamples, rng)
    boot = w_y @ y0 - w_x @ x0  # (resamples, cols)
    delta = y0.mean(axis=0) - x0.mean(axis=0)
    tail = (1.0 - level) / 2.0
    lo_q, hi_q = np.quantile(boot, [tail, 1.0 - tail], axis=0)
    v_x = x0.var(axis=0, ddof=1)
    v_y = y0.var(axis=0, ddof=1)
    se_unbiased = np.sqrt(v_x / n_x + v_y / n_y)
    se_boot = np.sqrt(v_x * (n_x - 1) / n_x**2 + v_y * (n_y - 1) / n_y**2)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = v_x / n_x
        b = v_y / n_y
        df = (a + b) ** 2 / (a**2 / (n_x - 1) + b**2 / (n_y - 1))
        df = np.where(np.isfinite(df) & (df > 0), df, n_x + n_y - 2)
        z = sps.norm.ppf(1.0 - tail)
        factor = np.where(se_boot > 0, se_unbiased / se_boot, 1.0) * sps.t.ppf(1.0 - tail, df) / z
    if target_se is not None:
        target = np.asarray(target_se, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            factor = np.where(se_boot > 0, target / se_boot, 1.0) * sps.t.ppf(1.0 - tail, df) / z
        flat = ~(se_boot > 0)  # no spread to bootstrap: symmetric interval from the SE alone
        half = sps.t.ppf(1.0 - tail, df) * target
        lo_q = np.where(flat, delta - half, lo_q)
        hi_q = np.where(flat, delta + half, hi_q)
        factor = np.where(flat, 1.0, factor)
    low = delta + (lo_q - delta) * factor
    high = delta + (hi_q - delta) * factor
    return low, high


def _resample_weights(n: int, resamples: int, rng: np.random.Generator) -> FloatArray:
    """Row i: how often each sample was drawn in resample i, divided by n."""
    draws = rng.integers(0, n, size=(resamples, n))
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.repeat(np.arange(resamples), n), draws.ravel()), 1.0)
    return counts / n


def minimum_detectable(
    se: FloatArray, df: FloatArray, alpha: float, power: float = 0.8
) -> FloatArray:
    """Smallest true change a two-sided level-``alpha`` test detects with ``power``."""
    quantiles = sps.t.ppf(1.0 - alpha / 2.0, df) + sps.t.ppf(power, df)
    return np.asarray(quantiles * se, dtype=np.float64)


def minimum_detectable_floored(
    se: FloatArray,
    df: FloatArray,
    alpha: float,
    *,
    mean_normal: FloatArray,
    rel_floor: float,
    abs_floor: FloatArray | float,
    threshold: FloatArray | float = 0.0,
    power: float = 0.8,
) -> FloatArray:
    """MDE against the standard error the test will have *at that effect*.

    Why not ``minimum_detectable(se, ...)``: :func:`welch` floors the SE with
    ``rel_floor * max(|m_n|, |m_a|)``, so a slowdown Δ raises its own SE
    (``m_a = m_n + Δ``). An MDE computed from today's SE then promises more power than the
    test delivers (measured: 71 % instead of 80 %, docs/explanation/validation.md). Here Δ
    solves ``Δ = max(k · SE(Δ), threshold + t_power · SE(Δ))`` with
    ``SE(Δ)² = s² + max(abs_floor, rel_floor · (|m_n| + Δ))²`` by fixed-point iteration
    (a contraction while ``k · rel_floor < 1``; otherwise no finite MDE exists: inf).
    """
    se = np.asarray(se, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    m = np.abs(np.asarray(mean_normal, dtype=np.float64))
    abs_f = np.asarray(abs_floor, dtype=np.float64)
    thr = np.asarray(threshold, dtype=np.float64)
    t_power = sps.t.ppf(power, df)
    k = sps.t.ppf(1.0 - alpha / 2.0, df) + t_power
    floor_now = np.maximum(abs_f, rel_floor * m)
    sampling_var = np.maximum(se**2 - floor_now**2, 0.0)

    def se_at(delta: FloatArray) -> FloatArray:
        floor = np.maximum(abs_f, rel_floor * (m + delta))
        return np.asarray(np.sqrt(sampling_var + floor**2), dtype=np.float64)

    delta = np.fmax(k * se, thr + t_power * se)
    for _ in range(200):
        se_delta = se_at(delta)
        nxt = np.fmax(k * se_delta, thr + t_power * se_delta)
        if np.allclose(nxt, delta, rtol=1e-9, atol=0.0, equal_nan=True):
            delta = nxt
            break
        delta = nxt
    divergent = k * rel_floor >= 1.0
    return np.asarray(np.where(divergent, np.inf, delta), dtype=np.float64)


def log_values(x: FloatArray) -> FloatArray:
    """Sign-preserving log1p: the scale on which a metric's relative change is tested."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.log1p(np.abs(x))


def lag1_autocorrelation(series: FloatArray) -> FloatArray:
    """Lag-1 autocorrelation per column of consecutive samples (rows), clipped to [0, 0.98].

    Negative estimates are set to 0: anti-correlation would shrink the variance, and trusting
    that from a short series is how false alarms start.
    """
    x = np.atleast_2d(np.asarray(series, dtype=np.float64))
    if x.shape[0] < 3:
        return np.zeros(x.shape[1])
    dev = np.nan_to_num(x - np.nanmean(x, axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (dev[1:] * dev[:-1]).sum(axis=0) / (dev**2).sum(axis=0)
    return np.asarray(np.clip(np.nan_to_num(rho), 0.0, 0.98), dtype=np.float64)


def batch_variance_inflation(rho: FloatArray, n_cycles: int, n_batches: int) -> FloatArray:
    """How much AR(1)-correlated batch means understate the variance of their mean.

    Batches of b consecutive cycles of an AR(1) series with coefficient rho are themselves
    correlated: lag-j correlation r_j = C_j / V_b with V_b = Var(batch sum) and C_j the covariance
    of batch sums j apart. The variance of the grand mean is (V_b / b^2)(1 + 2S)/k, while the
    sample variance of the batch means estimates (V_b / b^2)(1 - 2S/(k-1)), S = sum (1 - j/k) r_j.
    The ratio corrects the naive s^2 / k. It is 1 for independent cycles.
    """
    rho = np.asarray(rho, dtype=np.float64)
    k = max(1, min(n_batches, n_cycles))
    if k < 2:
        return np.ones_like(rho)
    b = n_cycles / k
    with np.errstate(invalid="ignore", divide="ignore"):
        one_minus = 1.0 - rho
        v_b = b * (1 + rho) / one_minus - 2 * rho * (1 - rho**b) / one_minus**2
        s = np.zeros_like(rho)
        for j in range(1, k):
            c_j = rho ** ((j - 1) * b + 1) * (1 - rho**b) ** 2 / one_minus**2
            s += (1 - j / k) * c_j / v_b
        ratio = (1 + 2 * s) / np.maximum(1 - 2 * s / (k - 1), 0.05)
    return np.asarray(np.where(np.isfinite(ratio) & (rho > 0), ratio, 1.0), dtype=np.float64)

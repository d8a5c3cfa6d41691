"""Statistical primitives, vectorised over columns (one column per function or metric).

Why hand-written Welch: the standard error must include both sides *plus a variance floor*
(``se_floor``), so that a near-constant baseline cannot turn measurement noise into z = 246;
scipy's ``ttest_ind`` has no floor. The t statistic and its Welch-Satterthwaite degrees of
freedom are otherwise textbook and checked against scipy in the tests.

Conventions: NaN means "not defined" (too few samples, or both sides constant): never 0, never
a p-value of 0 for a row that did not change. Every p and q returned lies in [0, 1] or is NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfdiff.analysis.distributions import mann_whitney_two_sided, norm_ppf, t_ppf, t_sf
from perfdiff.schema.model import FloatArray

# SE floor: a numerical guard, not a noise model. It keeps z finite and bounded when both sides
# are (nearly) constant apart from quantisation (a locked clock, a counter at 0), and sits 100x
# below the practical threshold (1 % of the cycle), so it never decides a verdict. Run-to-run
# variation is measured (run means) or assumed explicitly (``CompareOptions.run_cv_pct``), not
# hidden in here: a 0.25 % floor made five-run tests reject 0.8 % instead of 5 % of the time
# (docs/explanation/validation.md).
REL_SE_FLOOR = 0.0001
ABS_SE_FLOOR = 1e-9
# Cycles from which the O(1/n) results on the lag-1 correlation (its bias, its standard error)
# are used, and from which the "AR(1) plus jitter" fit is (docs/explanation/statistics.md)
ASYMPTOTIC_CYCLES = 20
ARMA_CYCLES = 100


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
    # share of the sampling variance of delta (floor excluded) that the abnormal side holds
    abnormal_var_share: FloatArray | float = 0.5


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
    rel_floor: FloatArray | float = REL_SE_FLOOR,
    abs_floor: FloatArray | float = ABS_SE_FLOOR,
    var_scale_normal: FloatArray | float = 1.0,
    var_scale_abnormal: FloatArray | float = 1.0,
    df_factor_normal: FloatArray | float = 1.0,
    df_factor_abnormal: FloatArray | float = 1.0,
) -> WelchResult:
    """Two-sided Welch test per column with a floored standard error.

    ``normal`` and ``abnormal`` are 2-D (samples x columns), NaN for missing samples.
    SE² = s_n²/n_n + s_a²/n_a + floor², floor = max(abs_floor, rel_floor · max(|m_n|, |m_a|)).
    Columns with fewer than 2 samples on a side get NaN; columns constant on both sides get an
    exact delta, ``constant=True`` and NaN z and p. ``var_scale_*`` multiply each side's
    variance of the mean (autocorrelation inflation, see :func:`batch_variance_inflation`);
    ``df_factor_*`` scale each side's n - 1 degrees of freedom down to what a variance from
    correlated batch means, corrected by an estimated ρ, is worth (:func:`batch_df_factor`).
    """
    x = np.atleast_2d(np.asarray(normal, dtype=np.float64))
    y = np.atleast_2d(np.asarray(abnormal, dtype=np.float64))
    n_x, m_x, v_x = _nan_stats(x)
    n_y, m_y, v_y = _nan_stats(y)
    delta = m_y - m_x
    floor = np.maximum(abs_floor, rel_floor * np.fmax(np.abs(m_x), np.abs(m_y)))
    # over: a variance near 1e-160 squares below the smallest double and the df overflows to
    # inf, which the fallback below catches (a hypothesis example, CI 2026-12-08)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        a = v_x / n_x * var_scale_normal
        b = v_y / n_y * var_scale_abnormal
        se = np.sqrt(a + b + floor**2)
        z = delta / se
        # Welch-Satterthwaite; the floor is a known variance (infinite df): when it dominates
        # the SE, the statistic is nearly normal, and t(df of the samples alone) is too wide
        df_x = (n_x - 1) * df_factor_normal
        df_y = (n_y - 1) * df_factor_abnormal
        df = (a + b + floor**2) ** 2 / (a**2 / df_x + b**2 / df_y)
    df = np.where(np.isfinite(df) & (df > 0), df, np.fmax(n_x + n_y - 2, 1.0))
    enough = (n_x >= 2) & (n_y >= 2)
    # "constant": no variance beyond float round-off (time-weighted means of equal samples)
    tiny = (1e-9 * np.fmax(np.fmax(np.abs(m_x), np.abs(m_y)), ABS_SE_FLOOR)) ** 2
    constant = enough & (v_x <= tiny) & (v_y <= tiny)
    p = 2.0 * t_sf(np.abs(z), df)
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
        abnormal_var_share=np.where(a + b > 0, b / np.where(a + b > 0, a + b, 1.0), 0.5),
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
        out[j] = mann_whitney_two_sided(a, b)
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
    target_df: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """95 % interval of mean(abnormal) - mean(normal) per column by bootstrap over samples.

    Percentile bootstrap, then widened about the estimate by (unbiased SE / bootstrap SE) ·
    t(df)/z: with ~10 batch means the plain percentile interval is too narrow (it covers about
    90 %, not 95 %). Samples are rows; all columns share resampling weights, which keeps the
    computation one matrix product and the result independent of column order.
    ``target_se`` (per column) replaces the unbiased SE in that widening when the test's SE has
    more in it (autocorrelation inflation, the run-to-run floor): the interval then keeps the
    bootstrap's shape but the test's width; ``target_df`` (the test's degrees of freedom)
    then replaces Welch's in the t quantile.
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
        z = norm_ppf(1.0 - tail)
        factor = np.where(se_boot > 0, se_unbiased / se_boot, 1.0) * t_ppf(1.0 - tail, df) / z
    if target_df is not None:
        df = np.asarray(target_df, dtype=np.float64)
    if target_se is not None:
        target = np.asarray(target_se, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            factor = np.where(se_boot > 0, target / se_boot, 1.0) * t_ppf(1.0 - tail, df) / z
        flat = ~(se_boot > 0)  # no spread to bootstrap: symmetric interval from the SE alone
        half = t_ppf(1.0 - tail, df) * target
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
    quantiles = t_ppf(1.0 - alpha / 2.0, df) + t_ppf(power, df)
    return np.asarray(quantiles * se, dtype=np.float64)


def minimum_detectable_floored(
    se: FloatArray,
    df: FloatArray,
    alpha: float,
    *,
    mean_normal: FloatArray,
    rel_floor: FloatArray | float,
    abs_floor: FloatArray | float,
    threshold: FloatArray | float = 0.0,
    power: float = 0.8,
    abnormal_var_share: FloatArray | float = 0.0,
) -> FloatArray:
    """MDE against the standard error the test will have *at that effect*.

    Why not ``minimum_detectable(se, ...)``: :func:`welch` floors the SE with
    ``rel_floor * max(|m_n|, |m_a|)``, so a slowdown Δ raises its own SE
    (``m_a = m_n + Δ``). An MDE computed from today's SE then promises more power than the
    test delivers (measured: 71 % instead of 80 %, docs/explanation/validation.md). Here Δ
    solves ``Δ = max(k · SE(Δ), threshold + t_power · SE(Δ))`` with
    ``SE(Δ)² = s² + max(abs_floor, rel_floor · (|m_n| + Δ))²`` by fixed-point iteration
    (a contraction while ``k · rel_floor < 1``; otherwise no finite MDE exists: inf).
    Run-to-run offsets are factors too (a boost state or a memory layout scales a kernel's
    time): where run means are the samples, the abnormal side's share ``abnormal_var_share`` of
    the sampling variance s² grows by ((|m_n| + Δ)/|m_n|)² (measured: power 75 % instead of
    80 % at the printed MDE with five runs per side without it). The caller passes 0 for
    within-run batch means, whose jitter is partly additive.
    """
    se = np.asarray(se, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    m = np.abs(np.asarray(mean_normal, dtype=np.float64))
    abs_f = np.asarray(abs_floor, dtype=np.float64)
    thr = np.asarray(threshold, dtype=np.float64)
    t_power = t_ppf(power, df)
    k = t_ppf(1.0 - alpha / 2.0, df) + t_power
    floor_now = np.maximum(abs_f, rel_floor * m)
    sampling_var = np.maximum(se**2 - floor_now**2, 0.0)

    share = np.asarray(abnormal_var_share, dtype=np.float64)

    def se_at(delta: FloatArray) -> FloatArray:
        floor = np.maximum(abs_f, rel_floor * (m + delta))
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            growth = np.where(m > 0, ((m + delta) / np.where(m > 0, m, 1.0)) ** 2, 1.0)
            sampling = sampling_var * (1.0 - share + share * growth)
            return np.asarray(np.sqrt(sampling + floor**2), dtype=np.float64)

    delta = np.fmax(k * se, thr + t_power * se)
    converged = np.zeros(delta.shape, dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        for _ in range(200):
            se_delta = se_at(delta)
            nxt = np.fmax(k * se_delta, thr + t_power * se_delta)
            converged = np.isclose(nxt, delta, rtol=1e-9, atol=0.0, equal_nan=True)
            delta = nxt
            if np.all(converged):
                break
    with np.errstate(invalid="ignore", divide="ignore"):
        noise_slope = np.where(m > 0, np.sqrt(share * sampling_var) / np.where(m > 0, m, 1.0), 0)
    divergent = k * (rel_floor + noise_slope) >= 1.0  # SE(Δ) would grow as fast as Δ
    return np.asarray(np.where(divergent | ~converged, np.inf, delta), dtype=np.float64)


def log_values(x: FloatArray) -> FloatArray:
    """Sign-preserving log1p: the scale on which a metric's relative change is tested."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.log1p(np.abs(x))


def lag1_autocorrelation(series: FloatArray) -> FloatArray:
    """Lag-1 autocorrelation per column of consecutive samples (rows), clipped to [0, 0.98].

    The sample estimate is biased low, by about (1 + 3ρ)/n for an AR(1) series whose mean is
    estimated (Marriott & Pope 1954): at ρ = 0.9 and n = 200 that is 0.02, which the batch-means
    inflation turns into a variance 10-15 % too small. From ``ASYMPTOTIC_CYCLES`` cycles on the
    estimate is corrected to (n ρ̂ + 1) / (n - 3); below, that O(1/n) expansion is not to be
    trusted (at n = 6 it would add 0.33). Negative estimates are set to 0:
    anti-correlation would shrink the variance, and trusting that from a short series is how
    false alarms start.
    """
    x = np.atleast_2d(np.asarray(series, dtype=np.float64))
    n = x.shape[0]
    if n < 3:
        return np.zeros(x.shape[1])
    dev = np.nan_to_num(x - np.nanmean(x, axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.nan_to_num((dev[1:] * dev[:-1]).sum(axis=0) / (dev**2).sum(axis=0))
    if n >= ASYMPTOTIC_CYCLES:
        rho = (n * rho + 1.0) / (n - 3.0)
    return np.asarray(np.clip(rho, 0.0, 0.98), dtype=np.float64)


def batch_variance_inflation(
    rho: FloatArray, n_cycles: int, n_batches: int, ar_share: FloatArray | float = 1.0
) -> FloatArray:
    """How much AR(1)-correlated batch means understate the variance of their mean.

    Batches of b consecutive cycles of an AR(1) series with coefficient rho are themselves
    correlated: lag-j correlation r_j = C_j / V_b with V_b = Var(batch sum) and C_j the covariance
    of batch sums j apart. The variance of the grand mean is (V_b / b^2)(1 + 2S)/k, while the
    sample variance of the batch means estimates (V_b / b^2)(1 - 2S/(k-1)), S = sum (1 - j/k) r_j.
    The ratio corrects the naive s^2 / k. It is 1 for independent cycles. ``ar_share`` is the
    share of the per-cycle variance in the AR(1) part when the rest is independent per-cycle
    jitter (:func:`autocorrelation_model`).
    """
    rho = np.asarray(rho, dtype=np.float64)
    k = max(1, min(n_batches, n_cycles))
    if k < 2:
        return np.ones_like(rho)
    s = np.zeros_like(rho)
    for j, r_j in enumerate(_batch_correlations(rho, n_cycles, k, ar_share), start=1):
        s = s + (1 - j / k) * r_j
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (1 + 2 * s) / np.maximum(1 - 2 * s / (k - 1), 0.05)
    return np.asarray(np.where(np.isfinite(ratio) & (rho > 0), ratio, 1.0), dtype=np.float64)


def autocorrelation_model(series: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per column: the decay φ of the persistent part of the noise and its share of the variance.

    Why not the lag-1 correlation alone: GPU cycle times mix a persistent component (clocks,
    thermal state, contention: AR(1)-like) with independent per-cycle jitter (launch timing,
    clock-bin steps, stalls). Then ρ_j = share · φ^j: the lag-1 correlation understates how
    slowly the persistent part decays, and an AR(1) fit with φ = ρ_1 understates the variance
    of batch means (measured: 7 % A/A rejections at ρ = 0.9 with jitter). Method of moments:
    φ = ρ_2 / ρ_1 (at least ρ_1), share = ρ_1 / φ, used only where ρ_1 is clearly above 0
    (2/√n) and the series has ``ARMA_CYCLES`` cycles (a ratio of two noisy correlations
    from fewer cycles is no estimate); otherwise the plain AR(1) with φ = ρ_1 (bias-corrected, see
    :func:`lag1_autocorrelation`).
    """
    x = np.atleast_2d(np.asarray(series, dtype=np.float64))
    n = x.shape[0]
    rho1 = lag1_autocorrelation(x)
    share = np.ones_like(rho1)
    if n < ARMA_CYCLES:
        return rho1, share
    dev = np.nan_to_num(x - np.nanmean(x, axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho2 = (dev[2:] * dev[:-2]).sum(axis=0) / (dev**2).sum(axis=0)
        rho2 = np.nan_to_num(rho2) + (1.0 + 3.0 * rho1) / n  # same small-sample bias as ρ_1
        phi = np.clip(np.nan_to_num(rho2 / rho1), rho1, 0.98)
    persistent = rho1 > 2.0 / np.sqrt(n)
    phi = np.where(persistent, phi, rho1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(persistent & (phi > 0), np.clip(rho1 / phi, 0.0, 1.0), 1.0)
    return np.asarray(phi, dtype=np.float64), np.asarray(share, dtype=np.float64)


def paired_by_position(
    normal: FloatArray,
    abnormal: FloatArray,
    *,
    rel_floor: FloatArray | float = REL_SE_FLOOR,
    abs_floor: FloatArray | float = ABS_SE_FLOOR,
    var_scale: FloatArray | float = 1.0,
    df_factor: FloatArray | float = 1.0,
) -> WelchResult:
    """t-test on the differences of batch means at the same position in the two runs.

    Why: a recording's first cycles are often still warming up (what the declared warm-up did
    not catch), its last ones may drain; such a profile along the run is a property of the
    workload, shared by both sides under "no change". Two-sample batch means count it as noise
    (the first batch is an outlier on each side) and the test turns conservative (measured:
    1.5 % instead of 5 % of A/A tests at p < 0.05). Differences of batch j of one side and
    batch j of the other cancel the shared profile, with no data-driven truncation (choosing
    a warm-up cut on the same data biases the variance low). The price is k - 1 degrees of
    freedom instead of about 2k - 2. Inputs are (batches x columns) with equally many batches
    of equally many cycles on each side; the mean difference equals Welch's.
    SE² = var(d) / k · ``var_scale`` + floor², floor as in :func:`welch`; ``df_factor`` as
    there.
    """
    x = np.atleast_2d(np.asarray(normal, dtype=np.float64))
    y = np.atleast_2d(np.asarray(abnormal, dtype=np.float64))
    if x.shape != y.shape:
        raise ValueError("paired_by_position needs equally many batches on both sides")
    n_x, m_x, v_x = _nan_stats(x)
    n_y, m_y, v_y = _nan_stats(y)
    n_d, _, v_d = _nan_stats(y - x)
    delta = m_y - m_x
    floor = np.maximum(abs_floor, rel_floor * np.fmax(np.abs(m_x), np.abs(m_y)))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # as in welch
        sampling = v_d / n_d * var_scale
        se = np.sqrt(sampling + floor**2)
        z = delta / se
        # Satterthwaite with the floor as a known variance (see :func:`welch`)
        df = (sampling + floor**2) ** 2 / (sampling**2 / ((n_d - 1) * df_factor))
    df = np.where(np.isfinite(df) & (df > 0), df, np.fmax(n_d - 1.0, 1.0))
    enough = (n_x >= 2) & (n_y >= 2) & (n_d >= 2)
    tiny = (1e-9 * np.fmax(np.fmax(np.abs(m_x), np.abs(m_y)), ABS_SE_FLOOR)) ** 2
    constant = enough & (v_x <= tiny) & (v_y <= tiny)
    p = 2.0 * t_sf(np.abs(z), df)
    bad = ~enough | constant | ~np.isfinite(z)
    return WelchResult(
        mean_normal=m_x,
        mean_abnormal=m_y,
        delta=delta,
        se=np.where(enough, se, np.nan),
        z=np.where(bad, np.nan, z),
        df=df,
        p=np.where(bad, np.nan, np.clip(p, 0.0, 1.0)),
        n_normal=n_x,
        n_abnormal=n_y,
        constant=constant,
    )


def _batch_correlations(
    rho: FloatArray, n_cycles: int, n_batches: int, ar_share: FloatArray | float = 1.0
) -> list[FloatArray]:
    """Lag-j correlations (j = 1 .. k-1) of the batch means of an AR(1) series (coefficient
    ``rho``, a share ``ar_share`` of the variance) plus independent per-cycle noise."""
    rho = np.asarray(rho, dtype=np.float64)
    k = max(1, min(n_batches, n_cycles))
    b = n_cycles / k
    out = []
    with np.errstate(invalid="ignore", divide="ignore"):
        one_minus = 1.0 - rho
        v_ar = b * (1 + rho) / one_minus - 2 * rho * (1 - rho**b) / one_minus**2
        v_b = ar_share * v_ar + (1.0 - ar_share) * b
        for j in range(1, k):
            c_j = ar_share * rho ** ((j - 1) * b + 1) * (1 - rho**b) ** 2 / one_minus**2
            out.append(np.where(rho > 0, c_j / v_b, 0.0))
    return out


def batch_df_factor(
    rho: FloatArray, n_cycles: int, n_batches: int, ar_share: FloatArray | float = 1.0
) -> FloatArray:
    """Share of its k - 1 degrees of freedom that a batch-means variance is worth.

    Why: two things make the variance of k batch means, inflated by
    :func:`batch_variance_inflation` at an *estimated* ρ, less certain than k - 1 independent
    samples: the batch means are themselves correlated (Bartlett: Var(s²) grows by
    1 + 2 Σ r_j²), and ρ̂ has a standard error of about √((1 - ρ²)/n) that the steep inflation
    near ρ = 0.9 turns into a relative error of the variance (both asymptotic: 1 below
    ``ASYMPTOTIC_CYCLES`` cycles, where they would claim less than one degree of freedom left
    from a handful of cycles). Both are added on the scale of
    1/df (the variance of log s² is about 2/df), the Satterthwaite way. Measured at ρ = 0.9
    and 10 batches of 20: A/A tests rejecting 6.8 % instead of 5 % without it.
    """
    rho = np.clip(np.asarray(rho, dtype=np.float64), 0.0, 0.98)
    k = max(1, min(n_batches, n_cycles))
    if k < 2 or n_cycles < ASYMPTOTIC_CYCLES:
        return np.ones_like(rho)
    bartlett = np.ones_like(rho)
    for r in _batch_correlations(rho, n_cycles, k, ar_share):
        bartlett = bartlett + 2.0 * r**2
    step = 1e-3
    up = np.clip(rho + step, 0.0, 0.98)
    down = np.clip(rho - step, 0.0, 0.98)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = (
            np.log(batch_variance_inflation(up, n_cycles, k, ar_share))
            - np.log(batch_variance_inflation(down, n_cycles, k, ar_share))
        ) / np.maximum(up - down, 1e-12)
        rho_var = (1.0 - rho**2) / n_cycles
        inverse_df = bartlett / (k - 1) + 0.5 * slope**2 * rho_var
        factor = 1.0 / (inverse_df * (k - 1))
    return np.asarray(np.where(np.isfinite(factor), np.clip(factor, 0.05, 1.0), 1.0))

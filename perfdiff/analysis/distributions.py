"""The few distribution functions ``compare`` needs, without importing ``scipy.stats``.

Why: importing ``scipy.stats`` costs about 0.75 s and 60 MiB before a byte is read (measured,
bench/README.md, issue 15), more than reading and comparing two 100k-event torch.profiler
traces. Every p-value and quantile ``compare`` uses is a Student t or normal tail, or the
Mann-Whitney U distribution: ``scipy.special``'s compiled functions (``stdtr``, ``stdtrit``,
``ndtri``, the same cephes code ``scipy.stats.t`` and ``norm`` call) give the first two, and
U's null distribution is counted here exactly where ``scipy.stats.mannwhitneyu`` counts it,
otherwise its normal approximation with the tie and continuity corrections, as scipy does.
``tests/analysis/test_distributions.py`` checks every function against ``scipy.stats``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri, stdtr, stdtrit

from perfdiff.schema.model import FloatArray

# scipy.stats.mannwhitneyu(method="auto") counts U exactly when a side has at most this many
# samples and no value is tied; otherwise it uses the normal approximation
EXACT_U_MAX_SIDE = 8


def t_sf(x: FloatArray | float, df: FloatArray | float) -> FloatArray:
    """Student t survival function P(T > x), as ``scipy.stats.t.sf(x, df)``."""
    return np.asarray(stdtr(df, -np.asarray(x, dtype=np.float64)), dtype=np.float64)


def t_ppf(q: FloatArray | float, df: FloatArray | float) -> FloatArray:
    """Student t quantile, as ``scipy.stats.t.ppf(q, df)`` (whose q = 0 gives -inf; the
    cephes function returns +inf there)."""
    q_arr = np.asarray(q, dtype=np.float64)
    return np.asarray(np.where(q_arr == 0.0, -np.inf, stdtrit(df, q_arr)), dtype=np.float64)


def norm_ppf(q: float) -> float:
    """Standard normal quantile, as ``scipy.stats.norm.ppf(q)``."""
    return float(ndtri(q))


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..n with ties given their average rank; and the size of each tie group."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # rank of each group's last member
    group_rank = ends - (counts - 1) / 2.0
    return group_rank[inverse.ravel()], counts


def _u_counts(m: int, n: int) -> list[int]:
    """How many of the C(m+n, m) orderings give U = 0, 1, ..., m·n (exact integers).

    They are the coefficients of the Gaussian binomial [m+n choose m]_q, built one factor at
    a time: [n+i choose i]_q = [n+i-1 choose i-1]_q (1 - q^(n+i)) / (1 - q^i); every
    intermediate product has integer coefficients, so Python ints (an object array) keep it
    exact, and each step is a vectorised subtraction and running sums: 8 against 100,000
    samples stays well under a second.
    """
    m, n = min(m, n), max(m, n)
    coeffs = np.zeros(m * n + 1, dtype=object)
    coeffs[0] = 1
    degree = 0
    for i in range(1, m + 1):
        k = n + i
        degree += n
        if degree >= k:  # times (1 - q^k): the right side is read before it is written
            coeffs[k:degree + 1] = coeffs[k:degree + 1] - coeffs[:degree + 1 - k]
        for residue in range(i):  # divided by (1 - q^i): running sums with step i
            coeffs[residue:degree + 1:i] = np.cumsum(coeffs[residue:degree + 1:i])
    return [int(c) for c in coeffs]


def _exact_two_sided(u: float, m: int, n: int) -> float:
    """2 · P(U >= u) under the null, U's distribution counted exactly (u >= m·n/2)."""
    counts = _u_counts(m, n)
    at_least = sum(counts[math.ceil(u - 1e-9):])
    return min(1.0, 2.0 * at_least / sum(counts))


def mann_whitney_two_sided(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value of two samples (finite values, >= 1 each), as
    ``scipy.stats.mannwhitneyu(a, b, alternative="two-sided")`` (method "auto")."""
    m, n = a.size, b.size
    ranks, ties = _average_ranks(np.concatenate((a, b)))
    u1 = float(ranks[:m].sum()) - m * (m + 1) / 2.0
    u = max(u1, m * n - u1)
    tied = bool(np.any(ties > 1))
    if not tied and min(m, n) <= EXACT_U_MAX_SIDE:
        return _exact_two_sided(u, m, n)
    total = m + n
    tie_term = float(np.sum(ties.astype(np.float64) ** 3 - ties))
    sd = math.sqrt(m * n / 12.0 * ((total + 1) - tie_term / (total * (total - 1))))
    if sd == 0.0:  # every value equal: scipy's z is -inf, its p 1
        return 1.0
    z = (u - m * n / 2.0 - 0.5) / sd  # continuity correction toward the mean
    return min(1.0, math.erfc(z / math.sqrt(2.0)))  # 2 · P(Z > z)


__all__ = ["mann_whitney_two_sided", "norm_ppf", "t_ppf", "t_sf"]

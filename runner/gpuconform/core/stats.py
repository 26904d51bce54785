"""Robust statistics of timing samples: median, MAD, Mann-Whitney U, shifts.

Pure functions over sequences of finite floats; no I/O, stdlib only.

Mann-Whitney U (Wilcoxon rank-sum), conventions as scipy.stats.mannwhitneyu:

- U is the statistic of the FIRST sample x: the number of pairs (x_i, y_j)
  with x_i > y_j, ties counting 1/2 (U = R_x - m(m+1)/2, R_x the rank sum of x
  among all m + n values, ties given their average rank).
- alternative "greater": x tends to be larger than y, p = P(U >= u);
  "less": p = P(U <= u); "two-sided": twice the smaller tail, at most 1.
- Exact p-values (the null distribution of U counted by dynamic
  programming: every one of the C(m+n, m) orderings is equally likely) when
  there are no ties and m * n <= EXACT_MAX_PAIRS; otherwise the normal
  approximation with tie-corrected variance
      var = m n / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1)))
  and a continuity correction of 1/2 towards the mean.

Shift (effect size): the Hodges-Lehmann estimate of how much y is shifted
from x (the median of all m n differences y_j - x_i) and its distribution-free
confidence interval (Moses): the order statistics of those differences at the
ranks given by the null distribution of U.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Literal, Sequence

from .hist import Hist, distinct, weighted

__all__ = [
    "median",
    "mad",
    "quantile",
    "ranks",
    "tie_sizes",
    "MannWhitney",
    "mann_whitney_u",
    "u_distribution",
    "exact_cdf",
    "min_p_value",
    "can_reach",
    "relative_change",
    "Shift",
    "hodges_lehmann",
    "EXACT_MAX_PAIRS",
]

Alternative = Literal["two-sided", "less", "greater"]

# Exact distribution up to m * n pairs (50 x 50): the DP costs O(m * m n)
# big-integer additions, a few milliseconds at this size, and beyond it the
# normal approximation is within 1e-3 of the exact p-value anyway.
EXACT_MAX_PAIRS = 2500
# Above this many pairwise differences, order statistics are found by
# bisection over values instead of sorting every difference.
_SORT_MAX_PAIRS = 250_000
_NORMAL = NormalDist()
_LOG_FLOAT_MAX = math.log(sys.float_info.max) + 1.0  # a margin over lgamma's rounding


def _sorted_finite(xs: Sequence[float], what: str = "samples") -> Sequence[float]:
    """xs sorted (a Hist already is), every sample checked finite."""
    v: Sequence[float] = xs if isinstance(xs, Hist) else sorted(float(x) for x in xs)
    if not v:
        raise ValueError(f"{what}: no samples")
    if not (math.isfinite(v[0]) and math.isfinite(v[-1])) or any(math.isnan(x)
                                                                 for x in distinct(v)):
        raise ValueError(f"{what}: not every sample is finite")
    return v


def median(xs: Sequence[float]) -> float:
    """The middle value (the mean of the two middle values for an even count)."""
    v = _sorted_finite(xs)
    n = len(v)
    mid = n // 2
    return v[mid] if n % 2 else (v[mid - 1] + v[mid]) / 2.0


def mad(xs: Sequence[float], scale: float = 1.0) -> float:
    """Median absolute deviation from the median, times scale (1.4826 makes
    it estimate the standard deviation of normal data). Raw by default, as
    lib/measure.h's gc_stat_mad()."""
    m = median(xs)
    return scale * median([abs(x - m) for x in xs])


def quantile(xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (NumPy's default), q in [0, 1]."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    v = _sorted_finite(xs)
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given the average of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            out[order[k]] = avg
        i = j + 1
    return out


def tie_sizes(values: Sequence[float]) -> list[int]:
    """Sizes of the groups of equal values that have more than one member."""
    counts: dict[float, int] = {}
    for x in values:
        counts[x] = counts.get(x, 0) + 1
    return sorted(c for c in counts.values() if c > 1)


# ------------------------------------------------------- exact distribution


@lru_cache(maxsize=64)
def u_distribution(m: int, n: int) -> tuple[int, ...]:
    """Counts of orderings giving U = 0 .. m n, for samples of sizes m and n
    without ties; they sum to C(m + n, m).

    The generating function of U is the Gaussian binomial coefficient
    prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i): multiply by each numerator
    factor and divide by each denominator factor (division by 1 - q^i is the
    running sum c[k] += c[k - i]), all in exact integers.
    """
    if m < 0 or n < 0:
        raise ValueError("sample sizes must be >= 0")
    if m > n:
        m, n = n, m  # the distribution is symmetric in m and n
    size = m * n + 1
    c = [0] * size
    c[0] = 1
    for i in range(1, m + 1):
        # times (1 - q^(n+i)): from high to low degree
        step = n + i
        for k in range(size - 1, step - 1, -1):
            c[k] -= c[k - step]
        # divided by (1 - q^i): a running sum with stride i
        for k in range(i, size):
            c[k] += c[k - i]
    return tuple(c)


def exact_cdf(u: float, m: int, n: int) -> float:
    """P(U <= u) under the null hypothesis, no ties."""
    dist = u_distribution(m, n)
    k = math.floor(u + 1e-9)
    if k < 0:
        return 0.0
    if k >= len(dist) - 1:
        return 1.0
    return sum(dist[: k + 1]) / math.comb(m + n, m)


def min_p_value(m: int, n: int) -> float:
    """The smallest one-sided p-value samples of sizes m and n can ever give:
    every x beyond every y, 1 ordering of C(m + n, m)."""
    if m <= 0 or n <= 0:
        return 1.0
    # Exact where it can matter (can_reach compares it with alpha); from
    # m = n = 520 on C(m + n, m) is past a float's range and the quotient is
    # below any alpha: 0.0, told by its logarithm, since the integer itself
    # costs seconds at a million samples a side and a histogram of every
    # gap holds millions.
    if math.lgamma(m + n + 1) - math.lgamma(m + 1) - math.lgamma(n + 1) > _LOG_FLOAT_MAX:
        return 0.0
    try:
        return 1.0 / math.comb(m + n, m)
    except OverflowError:
        return 0.0


def can_reach(m: int, n: int, alpha: float) -> bool:
    """Whether a one-sided test on sizes m and n can give p < alpha at all."""
    return min_p_value(m, n) < alpha


# ------------------------------------------------------------ Mann-Whitney


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample
    p_value: float
    alternative: str
    method: Literal["exact", "normal"]
    m: int
    n: int
    z: float | None = None  # the standardised statistic (normal method)


def _u_statistic(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, list[int]]:
    """U of xs (the pairs x > y, ties counting 1/2: R_x - m(m+1)/2) and the
    sizes of the groups of tied values, from both samples' histograms, so
    that a Hist of millions of samples costs its distinct values."""
    (xv, xc), (yv, yc) = weighted(xs), weighted(ys)
    twice_u = 0  # 2U, an integer: exact whatever the counts
    y_below = 0  # samples of y under the value at hand
    ties: list[int] = []
    i = j = 0
    while i < len(xv) or j < len(yv):
        v = min(xv[i] if i < len(xv) else math.inf, yv[j] if j < len(yv) else math.inf)
        a = xc[i] if i < len(xv) and xv[i] == v else 0
        b = yc[j] if j < len(yv) and yv[j] == v else 0
        twice_u += a * (2 * y_below + b)
        if a + b > 1:
            ties.append(a + b)
        y_below += b
        i, j = i + (a > 0), j + (b > 0)
    return twice_u / 2.0, ties


def mann_whitney_u(
    x: Sequence[float],
    y: Sequence[float],
    alternative: Alternative = "two-sided",
    method: Literal["auto", "exact", "normal"] = "auto",
) -> MannWhitney:
    """Mann-Whitney U test of x against y (see the module docstring)."""
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"alternative {alternative!r}: not two-sided, less or greater")
    xs = _sorted_finite(x, "x")
    ys = _sorted_finite(y, "y")
    m, n = len(xs), len(ys)
    u, ties = _u_statistic(xs, ys)
    if method == "auto":
        method = "exact" if not ties and m * n <= EXACT_MAX_PAIRS else "normal"
    if method == "exact":
        if ties:
            raise ValueError("the exact distribution assumes no ties")
        p_le = exact_cdf(u, m, n)
        p_ge = exact_cdf(m * n - u, m, n)  # symmetry: P(U >= u) = P(U <= mn - u)
        if alternative == "less":
            p = p_le
        elif alternative == "greater":
            p = p_ge
        else:
            p = min(1.0, 2.0 * min(p_le, p_ge))
        return MannWhitney(u, p, alternative, "exact", m, n)
    if method != "normal":
        raise ValueError(f"method {method!r}: not auto, exact or normal")
    big_n = m + n
    mu = m * n / 2.0
    tie_term = sum(t**3 - t for t in ties) / (big_n * (big_n - 1)) if big_n > 1 else 0.0
    var = m * n / 12.0 * ((big_n + 1) - tie_term)
    if var <= 0:  # every value equal: no evidence either way
        return MannWhitney(u, 1.0, alternative, "normal", m, n, 0.0)
    sd = math.sqrt(var)
    if alternative == "greater":
        z = (u - mu - 0.5) / sd
        p = _NORMAL.cdf(-z)
    elif alternative == "less":
        z = (u - mu + 0.5) / sd
        p = _NORMAL.cdf(z)
    else:
        z = (abs(u - mu) - 0.5) / sd
        p = min(1.0, 2.0 * _NORMAL.cdf(-z))
    return MannWhitney(u, p, alternative, "normal", m, n, z)


# ----------------------------------------------------------- effect sizes


def relative_change(before: float, after: float) -> float:
    """(after - before) / |before|: +0.05 is 5% more. 0 -> 0 is 0; from 0 to
    anything else is +-inf."""
    if before == 0:
        if after == 0:
            return 0.0
        return math.copysign(math.inf, after)
    return (after - before) / abs(before)


def _count_le(xs: list[float], ys: list[float], d: float) -> int:
    """Number of pairs with y_j - x_i <= d (xs, ys sorted): two pointers."""
    count = 0
    i = 0  # first x_i with y_j - x_i <= d: only moves right as y_j grows
    m = len(xs)
    for yj in ys:
        # compare the difference as computed, not x_i with y_j - d: rounding
        # must agree with the differences _kth_difference snaps to
        while i < m and yj - xs[i] > d:
            i += 1
        count += m - i
    return count


def _kth_difference(xs: list[float], ys: list[float], k: int) -> float:
    """The k-th smallest (1-based) of the m n differences y_j - x_i."""
    m, n = len(xs), len(ys)
    if m * n <= _SORT_MAX_PAIRS:
        diffs = sorted(yj - xi for yj in ys for xi in xs)
        return diffs[k - 1]
    lo = ys[0] - xs[-1]  # count_le(lo) >= 1
    hi = ys[-1] - xs[0]  # count_le(hi) = m n
    if _count_le(xs, ys, lo) >= k:
        return lo
    # invariant: count_le(lo) < k <= count_le(hi)
    for _ in range(200):
        mid = lo + (hi - lo) / 2.0
        if mid <= lo or mid >= hi:
            break
        if _count_le(xs, ys, mid) >= k:
            hi = mid
        else:
            lo = mid
    # hi is within float resolution of the k-th difference: snap to the
    # nearest difference actually present at or below hi
    best = -math.inf
    for xi in xs:  # per x_i, the largest y_j - x_i <= hi
        # ys sorted: a binary search
        lo_i, hi_i = 0, n
        while lo_i < hi_i:
            mid_i = (lo_i + hi_i) // 2
            if ys[mid_i] - xi <= hi:
                lo_i = mid_i + 1
            else:
                hi_i = mid_i
        if lo_i > 0:
            best = max(best, ys[lo_i - 1] - xi)
    return best


@dataclass(frozen=True)
class Shift:
    """Hodges-Lehmann shift of y relative to x and its confidence interval
    (lower, upper); the interval is (-inf, inf) where the sizes cannot give
    that confidence."""

    estimate: float
    lower: float
    upper: float
    confidence: float


def _lower_critical(m: int, n: int, alpha: float, ties: bool) -> int | None:
    """The largest c with P(U <= c) <= alpha (None when even U = 0 is more
    likely than alpha)."""
    if not ties and m * n <= EXACT_MAX_PAIRS:
        dist = u_distribution(m, n)
        total = math.comb(m + n, m)
        acc = 0
        c = -1
        for k, cnt in enumerate(dist):
            acc += cnt
            if acc / total <= alpha * (1 + 1e-9):  # 1 - 0.90 is 0.0999...98
                c = k
            else:
                break
        return c if c >= 0 else None
    big_n = m + n
    sd = math.sqrt(m * n * (big_n + 1) / 12.0)
    # P(U <= c) ~ Phi((c + 0.5 - mn/2) / sd) <= alpha
    c = math.floor(m * n / 2.0 - 0.5 + _NORMAL.inv_cdf(alpha) * sd)
    return c if c >= 0 else None


def hodges_lehmann(x: Sequence[float], y: Sequence[float], confidence: float = 0.95) -> Shift:
    """Shift of y from x: median of y_j - x_i, with the two-sided
    distribution-free interval at the given confidence (Moses):
    [d_(c+1), d_(mn-c)] with c the largest integer such that
    P(U <= c) <= (1 - confidence) / 2."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence} outside (0, 1)")
    xs = _sorted_finite(x, "x")
    ys = _sorted_finite(y, "y")
    m, n = len(xs), len(ys)
    total = m * n
    if total % 2:
        est = _kth_difference(xs, ys, total // 2 + 1)
    else:
        est = (_kth_difference(xs, ys, total // 2) + _kth_difference(xs, ys, total // 2 + 1)) / 2
    ties = bool(tie_sizes(xs + ys))
    c = _lower_critical(m, n, (1.0 - confidence) / 2.0, ties)
    if c is None:
        return Shift(est, -math.inf, math.inf, confidence)
    lower = _kth_difference(xs, ys, c + 1)
    return Shift(est, lower, _kth_difference(xs, ys, total - c), confidence)

"""stats.py against values computed by hand or taken from published tables.

Sources of the expected values:
- critical values of U: the standard Mann-Whitney tables (e.g. the tables in
  Siegel & Castellan, "Nonparametric Statistics", table J; reproduced in most
  statistics textbooks): the largest U with P(U <= U_crit) <= alpha;
- the scipy.stats.mannwhitneyu documentation's example (males / females
  diagnosis ages, from Conover): U = 17, exact two-sided p = 0.1111..., and
  0.11134688653314041 by the asymptotic method;
- everything else worked out by hand in the comments next to it.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from gpuconform.core import stats


# ------------------------------------------------------ location and spread


def test_median() -> None:
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.median([7]) == 7
    assert stats.median([-1.5, -0.5]) == -1.0


@pytest.mark.parametrize("bad", [[], [1.0, math.nan], [math.inf, 1.0]])
def test_median_rejects(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        stats.median(bad)


def test_mad() -> None:
    # 1 1 2 2 4 6 9: median 2, |x - 2| = 1 1 0 0 2 4 7, their median 1
    assert stats.mad([1, 1, 2, 2, 4, 6, 9]) == 1
    assert stats.mad([1, 1, 2, 2, 4, 6, 9], scale=1.4826) == pytest.approx(1.4826)
    assert stats.mad([5, 5, 5]) == 0


def test_quantile_linear() -> None:
    # positions q * (n - 1): 0.25 * 3 = 0.75 -> 1 + 0.75 * (2 - 1)
    assert stats.quantile([4, 1, 3, 2], 0.25) == 1.75
    assert stats.quantile([4, 1, 3, 2], 0.5) == 2.5
    assert stats.quantile([4, 1, 3, 2], 1.0) == 4
    with pytest.raises(ValueError):
        stats.quantile([1], 1.5)


def test_ranks_average_ties() -> None:
    assert stats.ranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    assert stats.ranks([3, 3, 3]) == [2, 2, 2]
    assert stats.tie_sizes([1, 2, 2, 3, 3, 3]) == [2, 3]


# ---------------------------------------------------- exact distribution


def test_u_distribution_by_hand() -> None:
    # m = n = 2: the 6 orderings of xx yy give U = 0, 1, 2, 2, 3, 4
    assert stats.u_distribution(2, 2) == (1, 1, 2, 1, 1)
    # m = n = 3: the Gaussian binomial [6 choose 3]_q
    assert stats.u_distribution(3, 3) == (1, 1, 2, 3, 3, 3, 3, 2, 1, 1)
    assert stats.u_distribution(1, 3) == (1, 1, 1, 1)


@pytest.mark.parametrize("m,n", [(1, 1), (2, 5), (4, 4), (3, 7), (6, 5)])
def test_u_distribution_counts_every_ordering(m: int, n: int) -> None:
    """Against brute force: every choice of the m positions of x among m + n."""
    want = [0] * (m * n + 1)
    for xpos in itertools.combinations(range(m + n), m):
        # U = pairs (x, y) with x after y: for each x, the ys before it
        u = sum(p - i for i, p in enumerate(xpos))
        want[u] += 1
    assert list(stats.u_distribution(m, n)) == want
    assert sum(want) == math.comb(m + n, m)


@pytest.mark.parametrize("n,crit", [(5, 2), (6, 5), (7, 8), (8, 13), (9, 17), (10, 23), (20, 127)])
def test_two_tailed_critical_values_of_the_tables(n: int, crit: int) -> None:
    """Two-tailed alpha = 0.05, n1 = n2 = n."""
    assert 2 * stats.exact_cdf(crit, n, n) <= 0.05
    assert 2 * stats.exact_cdf(crit + 1, n, n) > 0.05


@pytest.mark.parametrize("n,crit", [(5, 4), (6, 7), (7, 11), (8, 15), (9, 21), (10, 27)])
def test_one_tailed_critical_values_of_the_tables(n: int, crit: int) -> None:
    """One-tailed alpha = 0.05, n1 = n2 = n."""
    assert stats.exact_cdf(crit, n, n) <= 0.05
    assert stats.exact_cdf(crit + 1, n, n) > 0.05


def test_exact_cdf_edges() -> None:
    assert stats.exact_cdf(-1, 3, 3) == 0
    assert stats.exact_cdf(9, 3, 3) == 1
    assert stats.exact_cdf(0, 5, 5) == pytest.approx(1 / 252)


def test_min_p_and_reachability() -> None:
    assert stats.min_p_value(5, 5) == pytest.approx(1 / 252)
    assert stats.can_reach(5, 5, 0.01)
    assert not stats.can_reach(4, 4, 0.01)  # 1/70
    assert stats.can_reach(3, 7, 0.01)  # 1/120
    assert not stats.can_reach(3, 6, 0.01)  # 1/84
    assert not stats.can_reach(1, 99, 0.01)  # 1/100 is not < 0.01
    assert stats.can_reach(1, 100, 0.01)
    assert not stats.can_reach(0, 10, 0.01)
    # sizes of real GPU metrics: C(m + n, m) is no float, the answer still is
    assert stats.min_p_value(10_000, 10_000) == 0.0
    assert stats.can_reach(1000, 1000, 1e-300)
    assert stats.min_p_value(20, 20) == pytest.approx(1 / 137846528820)


# ---------------------------------------------------------- Mann-Whitney

MALES = [19, 22, 16, 29, 24]
FEMALES = [20, 11, 17, 12]


def test_scipy_documentation_example_exact() -> None:
    r = stats.mann_whitney_u(MALES, FEMALES)
    assert r.u == 17 and r.method == "exact"
    # P(U >= 17) = P(U <= 3) = (1 + 1 + 2 + 3) / C(9, 4) = 7/126; two-sided 14/126
    assert r.p_value == pytest.approx(1 / 9, abs=1e-15)
    assert stats.mann_whitney_u(MALES, FEMALES, "greater").p_value == pytest.approx(7 / 126)
    # P(U <= 17) = 1 - P(U >= 18) = 1 - P(U <= 2) = 1 - (1 + 1 + 2) / 126
    assert stats.mann_whitney_u(MALES, FEMALES, "less").p_value == pytest.approx(1 - 4 / 126)


def test_scipy_documentation_example_normal() -> None:
    r = stats.mann_whitney_u(MALES, FEMALES, method="normal")
    assert r.p_value == pytest.approx(0.11134688653314041, abs=1e-12)
    # by hand: mu = 10, var = 5*4*10/12, z = (|17 - 10| - 0.5) / sd
    z = 6.5 / math.sqrt(200 / 12)
    assert r.p_value == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-12)


def test_normal_with_ties_by_hand() -> None:
    x, y = [1, 2, 2, 3], [2, 3, 3, 4, 5]
    # all: 1 | 2 2 2 | 3 3 3 | 4 | 5 -> ranks 1 | 3 3 3 | 6 6 6 | 8 | 9
    # R_x = 1 + 3 + 3 + 6 = 13, U_x = 13 - 4*5/2 = 3
    # ties: two groups of 3: sum(t^3 - t) = 48; N = 9
    # var = 4*5/12 * (10 - 48/(9*8)); "less": z = (3 - 10 + 0.5) / sd
    r = stats.mann_whitney_u(x, y, "less")
    assert r.u == 3 and r.method == "normal"
    sd = math.sqrt(20 / 12 * (10 - 48 / 72))
    z = (3 - 10 + 0.5) / sd
    assert r.z == pytest.approx(z)
    assert r.p_value == pytest.approx(0.5 * math.erfc(-z / math.sqrt(2)), rel=1e-12)
    assert r.p_value == pytest.approx(0.04967, abs=1e-5)
    g = stats.mann_whitney_u(x, y, "greater")
    assert g.p_value == pytest.approx(0.5 * math.erfc((3 - 10 - 0.5) / sd / math.sqrt(2)))
    t = stats.mann_whitney_u(x, y)
    assert t.p_value == pytest.approx(math.erfc((7 - 0.5) / sd / math.sqrt(2)))


def test_separated_samples_give_the_smallest_p() -> None:
    lo, hi = [1, 2, 3, 4, 5], [6, 7, 8, 9, 10]
    r = stats.mann_whitney_u(hi, lo, "greater")
    assert r.u == 25 and r.p_value == pytest.approx(1 / 252)
    assert stats.mann_whitney_u(lo, hi, "less").p_value == pytest.approx(1 / 252)
    assert stats.mann_whitney_u(lo, hi, "greater").p_value == 1.0
    assert stats.mann_whitney_u(lo, hi).p_value == pytest.approx(2 / 252)


def test_all_equal_values_are_no_evidence() -> None:
    r = stats.mann_whitney_u([5, 5, 5, 5, 5], [5, 5, 5, 5, 5], "greater")
    assert r.p_value == 1.0 and r.u == 12.5


def test_auto_method_choice() -> None:
    assert stats.mann_whitney_u([1, 2, 3], [4, 5, 6]).method == "exact"
    assert stats.mann_whitney_u([1, 2, 3], [3, 5, 6]).method == "normal"  # a tie
    big = list(range(60))
    assert stats.mann_whitney_u(big, [x + 0.5 for x in big]).method == "normal"
    with pytest.raises(ValueError):
        stats.mann_whitney_u([1, 2], [2, 3], method="exact")
    with pytest.raises(ValueError):
        stats.mann_whitney_u([1], [2], alternative="bigger")  # type: ignore[arg-type]


def test_exact_and_normal_agree_for_larger_samples() -> None:
    rng = random.Random(7)
    x = [rng.gauss(0, 1) for _ in range(40)]
    y = [rng.gauss(0.4, 1) for _ in range(40)]
    e = stats.mann_whitney_u(x, y, "less", method="exact").p_value
    n = stats.mann_whitney_u(x, y, "less", method="normal").p_value
    assert abs(e - n) < 2e-3


def test_one_sided_mirror() -> None:
    x, y = [1.5, 2.5, 7, 9], [3, 4, 5, 6, 8]
    assert stats.mann_whitney_u(x, y, "less").p_value == pytest.approx(
        stats.mann_whitney_u(y, x, "greater").p_value)


# ---------------------------------------------------------------- effects


def test_relative_change() -> None:
    assert stats.relative_change(100, 105) == pytest.approx(0.05)
    assert stats.relative_change(100, 95) == pytest.approx(-0.05)
    assert stats.relative_change(-10, -5) == pytest.approx(0.5)
    assert stats.relative_change(0, 0) == 0
    assert stats.relative_change(0, 3) == math.inf
    assert stats.relative_change(0, -3) == -math.inf


def test_hodges_lehmann_by_hand() -> None:
    # y - x for x = 1 2 3, y = 4 5 6: 1 2 2 3 3 3 4 4 5: median 3
    # m = n = 3: P(U <= 0) = 1/20 = 0.05, so the 90% interval is [d_1, d_9]
    s = stats.hodges_lehmann([1, 2, 3], [4, 5, 6], confidence=0.90)
    assert (s.estimate, s.lower, s.upper) == (3, 1, 5)
    # 95% asks P(U <= c) <= 0.025: not even c = 0: unbounded
    s = stats.hodges_lehmann([1, 2, 3], [4, 5, 6], confidence=0.95)
    assert s.estimate == 3 and s.lower == -math.inf and s.upper == math.inf


def test_hodges_lehmann_interval_of_the_tables() -> None:
    # n1 = n2 = 5, two-sided 95%: P(U <= 2) = 4/252 <= 0.025 < P(U <= 3) = 7/252
    # so c = 2 and the interval is [d_3, d_23] of the 25 differences
    x = [0, 10, 20, 30, 40]
    y = [1, 2, 3, 4, 5]
    diffs = sorted(b - a for a in x for b in y)
    s = stats.hodges_lehmann(x, y, confidence=0.95)
    assert (s.lower, s.upper) == (diffs[2], diffs[22])
    assert s.estimate == diffs[12]


def test_hodges_lehmann_even_count_and_bisection(monkeypatch: pytest.MonkeyPatch) -> None:
    assert stats.hodges_lehmann([0, 1], [0, 2]).estimate == 0.5  # -1 0 1 2: (0 + 1) / 2
    rng = random.Random(3)
    x = [rng.uniform(10, 20) for _ in range(70)]
    y = [rng.uniform(11, 22) for _ in range(90)]
    sorted_way = stats.hodges_lehmann(x, y, 0.98)
    monkeypatch.setattr(stats, "_SORT_MAX_PAIRS", 0)  # force the bisection path
    bisected = stats.hodges_lehmann(x, y, 0.98)
    assert bisected.estimate == pytest.approx(sorted_way.estimate, abs=1e-9)
    assert bisected.lower == pytest.approx(sorted_way.lower, abs=1e-9)
    assert bisected.upper == pytest.approx(sorted_way.upper, abs=1e-9)

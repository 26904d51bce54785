"""Where a night's series changed: pure logic, no files.

A metric's series (one value a night: the gate's run statistic) is cut by
circular binary segmentation (Olshen et al., 2004, as genomics uses it for
copy-number series): every segment [i, j) of at least MIN_SIDE nights with
at least MIN_SIDE nights outside it is compared with the nights outside it
(a segment that starts at the first night or ends at the last is a plain
split before / after) by Student's t with the variance pooled from inside
and outside (so two nights that happen to agree are judged by the whole
piece's scatter, not by their own); the one with the largest t is kept when
its two-sided p-value, Bonferroni-corrected over the candidates tried, is
below ALPHA and its mean differs from the outside's by at least MIN_SHIFT; then
each piece is cut the same way, until none is kept. Each cut is a change,
first seen on the night after it. The circular step is what finds a run of
nights that differs and then comes back (one host 2% faster than the rest,
then a 2% slower kernel on it): no single split before / after sees that.

Why not the gate alone: the gate asks whether one night left the baseline's
band, whose width is the spread between leases; a shift smaller than the
band but steady from one night on is a change a reader wants dated.

A test's states: each night where its state differs from the last night
that ran it (a night it did not run breaks nothing) is a change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from scipy import stats

__all__ = ["ALPHA", "MIN_SIDE", "MIN_SHIFT", "Shift", "shifts_of", "state_changes"]

ALPHA = 0.01
MIN_SIDE = 2
MIN_SHIFT = 0.005  # 0.5%: below it a change is a rounding of the clock, not a finding
_SE_FLOOR = 1e-9  # of the mean: two constant sides have a standard error of 0, not less


@dataclass(frozen=True)
class Shift:
    index: int  # the first night after the change
    before: float  # mean of the piece before it (the final segmentation's)
    after: float  # and of the piece from index on
    p: float  # of the test that made the cut, Bonferroni-corrected

    @property
    def relative(self) -> float:
        return self.after / self.before - 1 if self.before else math.inf


class _Sums:
    """Prefix sums of x and x^2: any piece's n, mean and variance in O(1)."""

    def __init__(self, xs: Sequence[float]) -> None:
        self.s, self.q = [0.0], [0.0]
        for x in xs:
            self.s.append(self.s[-1] + x)
            self.q.append(self.q[-1] + x * x)

    def piece(self, i: int, j: int) -> tuple[int, float, float]:
        n = j - i
        m = (self.s[j] - self.s[i]) / n
        var = max((self.q[j] - self.q[i]) - n * m * m, 0.0) / (n - 1)
        return n, m, var


def _pooled_t(a: tuple[int, float, float], b: tuple[int, float, float]) -> float:
    """Student's t of b's mean against a's, the variance pooled from both."""
    (na, ma, va), (nb, mb, vb) = a, b
    pooled = ((na - 1) * va + (nb - 1) * vb) / (na + nb - 2)
    se2 = pooled * (1 / na + 1 / nb)
    floor = (_SE_FLOOR * max(abs(ma), abs(mb), 1e-300)) ** 2
    if se2 <= floor:
        return 0.0 if ma == mb else math.copysign(math.inf, mb - ma)
    return (mb - ma) / math.sqrt(se2)


def _outside(sums: _Sums, lo: int, i: int, j: int, hi: int) -> tuple[int, float, float]:
    """n, mean, variance of [lo, i) and [j, hi) together: one level, as the
    segment's alternative says (a step outside it is scatter, and weakens it)."""
    n = (i - lo) + (hi - j)
    s = (sums.s[i] - sums.s[lo]) + (sums.s[hi] - sums.s[j])
    q = (sums.q[i] - sums.q[lo]) + (sums.q[hi] - sums.q[j])
    m = s / n
    return n, m, max(q - n * m * m, 0.0) / (n - 1)


def _best_cut(sums: _Sums, lo: int, hi: int) -> tuple[int, int, float] | None:
    """The segment [i, j) of [lo, hi) kept as a change, with its p; None."""
    best, tried = None, 0
    for i in range(lo, hi - MIN_SIDE + 1):
        for j in range(i + MIN_SIDE, hi + 1):
            if (i - lo) + (hi - j) < MIN_SIDE or (i == lo and j == hi):
                continue
            tried += 1
            inside, out = sums.piece(i, j), _outside(sums, lo, i, j, hi)
            t = _pooled_t(out, inside)
            if best is None or abs(t) > abs(best[0]):
                best = (t, i, j, inside[1], out[1])
    if best is None:
        return None
    t, i, j, m_in, m_out = best
    df = hi - lo - 2
    p = min(1.0, float(2 * stats.t.sf(abs(t), df)) * tried) if math.isfinite(t) else 0.0
    if p >= ALPHA or (m_out and abs(m_in / m_out - 1) < MIN_SHIFT):
        return None
    return i, j, p


def shifts_of(series: Sequence[float]) -> list[Shift]:
    """Every change of the series (module docstring), in order of nights."""
    if len(series) < 2 * MIN_SIDE:
        return []
    sums, cuts = _Sums(series), {}  # cut index -> p
    todo = [(0, len(series))]
    while todo:
        lo, hi = todo.pop()
        found = _best_cut(sums, lo, hi) if hi - lo >= 2 * MIN_SIDE else None
        if found is None:
            continue
        i, j, p = found
        for c in (i, j):
            if lo < c < hi:
                cuts[c] = p
        todo += [(a, b) for a, b in ((lo, i), (i, j), (j, hi)) if b > a]
    bounds = [0, *sorted(cuts), len(series)]
    means = [sums.piece(a, b)[1] if b - a > 1 else series[a] for a, b in zip(bounds, bounds[1:])]
    return [Shift(c, means[k], means[k + 1], cuts[c]) for k, c in enumerate(bounds[1:-1])]


def state_changes(states: Sequence[str | None]) -> list[int]:
    """Indices of the nights whose state differs from the last night that
    ran the test (None: not run that night)."""
    out, last = [], None
    for i, s in enumerate(states):
        if s is None:
            continue
        if last is not None and s != last:
            out.append(i)
        last = s
    return out

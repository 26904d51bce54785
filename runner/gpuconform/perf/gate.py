"""The regression gate: from K clean runs of a fingerprint, per metric, the
change a night must exceed to be a regression (the limit), the smallest change
it catches 19 times in 20 (the minimum detectable effect, MDE), and whether
the metric is steady enough to gate at all or is kept for trends.

The unit of replication is the run, not the sample. The samples of one run
share that run's offset (the host, the boot, the clocks, what else ran), so
clean runs compared sample by sample routinely differ at p < 1e-10, and the
baselines' own measurements show it (data/baselines/README.md): on the H100
machines a GPU-timed graph's time agrees within 0.1% between runs on one host
and differs by 1% between hosts, while host-side latencies move 10-70% from
run to run on one host. So each run is reduced to one number and a night is
judged as one more draw of it:

  statistic  g = the mean of the run's good half: its samples at or better
             than the median (the smaller half when lower is better). The
             good half, because interference only ever makes a sample worse,
             so the best half is what the environment disturbs least while a
             slower driver moves every sample; its mean rather than a
             quartile, because many GPU timings are quantized (a 32 ns clock
             under 768 ns gaps: a quartile jumps 4% at a time while the mean
             of hundreds of samples resolves far less).
  spread     s = the standard deviation of ln g over the K baseline runs.
  limit      L = the largest of
               ln(1 + min_effect / 2)  no change smaller than half the
                                       smallest effect worth catching is a
                                       regression, however steady the metric;
               ln(1 + 2 res / c)       two steps of the metric's resolution
                                       res (the smallest difference between
                                       two of its samples) relative to its
                                       centre c: a timing that can only move
                                       in steps must move by two;
               t(1 - a, K - 1) s sqrt(1 + 1/K)
                                       the prediction bound: for normal run
                                       offsets a clean run lies beyond it with
                                       probability a, s estimated from K runs
                                       (Student's t); a = alpha / M, M the
                                       baseline's metrics with 3 runs or more
                                       and a positive g, so that a clean night
                                       of all of them is flagged with
                                       probability at most alpha (Bonferroni).
  verdict    regression when the night's ln g lies more than L beyond the mean
             of the runs' ln g in the bad direction, improvement in the good.
  copies     a run on a node of several GPUs measures a per-device metric
             once a GPU and its g is the mean of the copies' (statistic).
             Such a g varies less than one GPU's: the GPUs' own offsets
             (w, the pooled standard deviation of ln of a copy's good-half
             mean about its run's, each run with m_i copies) average out. A
             night on fewer GPUs than the runs' (1/m > h, the mean of 1/m_i)
             is judged with s' = sqrt(s^2 (1 + 1/K) + w^2 (1/m - h)) and
             Welch-Satterthwaite's degrees of freedom for t, its limit never
             below the runs' own; otherwise, and when no run had two copies,
             with s' = s sqrt(1 + 1/K) as above.
             (Var ln g_i = b^2 + w^2/m_i, so s^2 estimates b^2 + w^2 h; a night
             of m GPUs draws b^2 + w^2/m.) Measured: an H200 baseline of runs
             on 2 and 4 GPUs had s 0.36% for a traced graph's time while its
             GPUs differed by w 1.2%; one GPU of a later node read +3.8%.
  MDE        exp(L + z(power) s') - 1: the change that lands beyond L in
             `power` of the nights.
  trend      a metric gates only when its MDE is at most trend_above (20%)
             and its spread is known (K >= 3, g > 0, and the runs differ or
             its resolution is known), when it is not a maximum (a name whose
             first part is "max" or ends in "-max", as lib/gaps' gap-max: one
             extreme a run, whose run-to-run spread is nothing like normal:
             leaving each of 5 H100 runs out of a baseline of the others
             flagged 3 maxima, +3.4% to +11% against a 0.1-0.2% spread), and,
             when each run recorded one sample (a percentile or a ratio the
             test computed), when its runs all differ: ties mean a statistic
             of quantized samples (a p99 ratio of 32 ns steps: 1.179 in 4 of
             5 runs, 1.222 on a third host, +3.7%, one step) whose next step
             no spread of the runs foretells; and when it is a tail, a p99 or
             a ratio of them: on H100s their runs tie, while the mean of a
             run's GPUs hides the steps, and one GPU's p99 of the mixed
             graph read 8513 ns where the other GPUs of 12 H200 runs read
             4544-5056 ns, which left out of the baseline flagged it +20%.
             Otherwise it is kept for trends:
             compared, plotted, reported with its change, never a failure.

Pure functions of numbers; scipy.stats gives Student's t.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..core.hist import Hist, best_mean
from ..core.stats import quantile

if TYPE_CHECKING:
    from ..core.runmetrics import RunMetric

__all__ = ["Gate", "RunSummary", "Assessment", "good_half_mean", "statistic", "run_statistic",
           "summarize", "resolution", "is_maximum", "is_tail", "within_spread", "assess", "shift",
           "judge",
           "MIN_RUNS", "SUMMARY_FIELDS"]

MIN_RUNS = 3
# What a baseline keeps of each run of a metric, in this order.
SUMMARY_FIELDS = ("run", "n", "min", "p25", "p50", "p75", "max", "g", "copies")


@dataclass(frozen=True)
class Gate:
    min_effect: float = 0.05  # the smallest change the suite means to catch
    alpha: float = 0.05  # chance that a clean night flags any metric
    power: float = 0.95  # how often a change of the MDE is caught
    trend_above: float = 0.20  # an MDE above this: kept for trends

    def to_json(self) -> dict[str, float]:
        return {"min_effect": self.min_effect, "alpha": self.alpha, "power": self.power,
                "trend_above": self.trend_above}


def good_half_mean(samples: Sequence[float], better: str) -> float:
    """The mean of the better half: the ceil(n/2) smallest samples when lower
    is better, the largest when higher is better."""
    if not samples:
        raise ValueError("no samples")
    if isinstance(samples, Hist):
        return best_mean(samples, (len(samples) + 1) // 2, largest=(better == "higher"))
    xs = sorted(samples, reverse=(better == "higher"))
    half = xs[: (len(xs) + 1) // 2]
    return math.fsum(half) / len(half)


@dataclass(frozen=True)
class RunSummary:
    """One run of one metric, as a baseline keeps it."""
    run: int  # index into the baseline's runs
    n: int
    min: float
    p25: float
    p50: float
    p75: float
    max: float
    g: float  # good_half_mean: what the gate compares
    # Each copy's good-half mean when copies on several GPUs measured it
    # (g is their mean), else (): what the GPUs' own spread is read from.
    copies: tuple[float, ...] = ()

    def to_json(self) -> list[Any]:
        return [self.run, self.n, self.min, self.p25, self.p50, self.p75, self.max, self.g,
                list(self.copies)]


def _round(v: float, digits: int = 6) -> float:
    """`digits` significant digits (6: a baseline stays readable); the gate is
    computed from the rounded numbers, so a file agrees with itself."""
    return float(f"{v:.{digits}g}")


# A statistic of one sample a run (a ratio of two means, a p99) is kept to 10
# digits: at 6, two runs of a ratio that varies by 0.1% between runs land on
# the same value by chance (two nights of one host: 1.0957895 and 1.0957930),
# and the gate would take that for a quantized statistic (assess: `single`).
SINGLE_DIGITS = 10


def statistic(parts: Sequence[Sequence[float]], better: str) -> float:
    """A run's g when the metric was measured by several copies of its test
    (one a GPU, placement.py): the mean of each copy's good-half mean, so
    that every GPU weighs the same whatever its sample count, and one slow
    GPU moves the statistic by its share rather than being left out of a
    pooled good half."""
    if not parts:
        raise ValueError("no samples")
    return math.fsum(good_half_mean(p, better) for p in parts) / len(parts)


def run_statistic(m: RunMetric) -> float:
    """A run's g of one metric (runmetrics.RunMetric): over its copies when
    there are several (statistic), else good_half_mean of its samples."""
    if len(m.parts) > 1:
        return statistic(m.parts, m.better)
    return good_half_mean(m.samples, m.better)


def summarize(run: int, samples: Sequence[float], better: str,
              parts: Sequence[Sequence[float]] = ()) -> RunSummary:
    """One run of one metric: its samples' quartiles and its g (over its
    parts when copies on several GPUs measured it); n is the samples of one
    copy (the fewest), what the noise of g goes with."""
    xs = samples if isinstance(samples, Hist) else sorted(samples)
    if not xs:
        raise ValueError("no samples")
    several = len(parts) > 1
    g = statistic(parts, better) if several else good_half_mean(xs, better)
    n = min(len(p) for p in parts) if several else len(xs)
    digits = SINGLE_DIGITS if n == 1 else 6
    copies = tuple(_round(good_half_mean(p, better), digits) for p in parts) if several else ()
    return RunSummary(run, n, *(_round(v, digits) for v in (
        xs[0], quantile(xs, 0.25), quantile(xs, 0.5), quantile(xs, 0.75), xs[-1], g)), copies)


def resolution(values: Iterable[float]) -> float | None:
    """The smallest positive difference between two of the values: the step a
    quantized timing moves by (a clock's tick); None when they are all equal."""
    v = sorted(set(values))
    steps = [b - a for a, b in zip(v, v[1:]) if b > a]
    return _round(min(steps)) if steps else None


@dataclass(frozen=True)
class Assessment:
    """What K baseline runs of one metric say about it."""
    runs: int
    center: float | None  # exp(mean ln g): the reference
    spread: float | None  # s: the standard deviation of ln g
    limit: float | None  # exp(L) - 1: the relative change a night must exceed
    mde: float | None  # exp(L + z s') - 1
    trend: str | None  # why it is kept for trends only; None: it gates
    # w, the GPUs' own spread, when it widened s' for a night on fewer GPUs
    # than the runs' (else None), and that night's GPU count.
    within: float | None = None
    night: int = 1

    @property
    def gates(self) -> bool:
        return self.trend is None


def is_tail(name: str) -> bool:
    """A metric of a run's tail: a p99, or a ratio of p99s ("gap-p99.graph.wide256",
    "overhead.gap-p99-serial-over-graph.mixed")."""
    return "p99" in (t for part in name.split(".") for t in part.split("-"))


def is_maximum(name: str) -> bool:
    """A metric of one extreme a run ("gap-max.graph.chain16", "max.x")."""
    kind = name.split(".", 1)[0]
    return kind == "max" or kind.endswith("-max")


def within_spread(copies: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """w and its degrees of freedom: the pooled standard deviation of ln of
    each copy's good-half mean about the mean of its run's (the runs with two
    copies or more); None when no run had two positive ones."""
    ss, df = 0.0, 0
    for run in copies:
        if len(run) < 2 or min(run) <= 0:
            continue
        logs = [math.log(c) for c in run]
        mean = math.fsum(logs) / len(logs)
        ss += math.fsum((y - mean) ** 2 for y in logs)
        df += len(logs) - 1
    return (math.sqrt(ss / df), df) if df else None


def _widened(sp: float, k: int, copies: Sequence[Sequence[float]],
             night: int) -> tuple[float, float, float | None]:
    """s' and t's degrees of freedom for a night on `night` GPUs, and w when
    it widened them (module doc, "copies")."""
    w = within_spread(copies) if len(copies) == k else None
    if w is None:
        return sp, k - 1, None
    h = math.fsum(1 / max(1, len(c)) for c in copies) / k
    extra = w[0] ** 2 * (1 / night - h)
    if extra <= 0:
        return sp, k - 1, None
    base = sp * sp
    df = (base + extra) ** 2 / (base * base / (k - 1) + extra * extra / w[1])
    return math.sqrt(base + extra), df, w[0]


def assess(gs: Sequence[float], res: float | None, family: int, gate: Gate,
           name: str = "", single: bool = False, copies: Sequence[Sequence[float]] = (),
           night: int = 1) -> Assessment:
    """gs: each run's g; res: the metric's resolution; family: how many
    metrics of the baseline can gate (the Bonferroni count); name: the
    metric's NAME; single: every run recorded one sample; copies: each run's
    copies' good-half means (() for a run of one copy, or none given); night:
    how many GPUs the night to judge measured it on."""
    k = len(gs)
    if k < MIN_RUNS:
        return Assessment(k, None, None, None, None,
                          f"{k} run(s): its run-to-run spread needs {MIN_RUNS}")
    if min(gs) <= 0:
        return Assessment(k, None, None, None, None,
                          "a run's statistic is 0 or less: a relative change means nothing")
    logs = [math.log(g) for g in gs]
    mean = math.fsum(logs) / k
    center = math.exp(mean)
    # equal runs: exactly 0, not the rounding residue of their logs
    s = 0.0 if max(gs) == min(gs) else math.sqrt(math.fsum((y - mean) ** 2 for y in logs) / (k - 1))
    if s == 0 and res is None:
        return Assessment(k, center, 0.0, None, None,
                          f"all {k} runs gave {center:.6g} and it has no finer step: "
                          "its spread is unknown")
    plain = s * math.sqrt(1 + 1 / k)
    sp, df, within = _widened(plain, k, copies, night)
    p = 1 - gate.alpha / max(1, family)
    # never narrower than for a night like the runs: more degrees of freedom
    # must not make a noisier night's limit the tighter one
    bound = max(_student_t(p, k - 1) * plain, _student_t(p, df) * sp)
    floor = math.log(1 + gate.min_effect / 2)
    step = math.log(1 + 2 * res / center) if res is not None else 0.0
    log_limit = max(floor, step, bound)
    mde = math.exp(log_limit + NormalDist().inv_cdf(gate.power) * sp) - 1
    limit = math.exp(log_limit) - 1
    trend = None
    if single and len(set(gs)) < k:
        trend = (f"one sample a run, and {k - len(set(gs)) + 1} of its {k} runs gave the same "
                 "value: a statistic of quantized samples, whose next step it cannot show")
    elif is_maximum(name):
        trend = "a maximum: one extreme a run, its run-to-run spread is not normal"
    elif is_tail(name):
        trend = "a tail (p99): one value a run from its tail, its run-to-run spread is not normal"
    elif mde > gate.trend_above:
        why = ("the spread of its runs" if bound >= max(floor, step)
               else "its resolution" if step > floor else "the gate's floor")
        trend = (f"MDE {mde:.3g} > {gate.trend_above:g}: too noisy to gate "
                 f"(limit {limit:.3g}, set by {why})")
    return Assessment(k, center, s, limit, mde, trend, within, night)


@lru_cache(maxsize=256)
def _student_t(p: float, df: float) -> float:
    """Student's t quantile, from scipy (imported here: only the gate needs it)."""
    try:
        from scipy.stats import t
    except ImportError:
        raise ImportError(f"the regression gate needs scipy (Student's t) in {sys.executable}: "
                          "sudo apt-get install python3-scipy, or python3 -m pip install "
                          "scipy") from None
    return float(t.ppf(p, df))


def shift(center: float, g: float, better: str) -> float:
    """The night's change relative to the centre, positive when worse:
    g / center - 1 for lower-is-better, center / g - 1 for higher (so that a
    throughput halved reads +1.0, a time doubled +1.0, alike)."""
    if g <= 0:
        return -math.inf if better == "lower" else math.inf
    return g / center - 1 if better == "lower" else center / g - 1


def judge(a: Assessment, g: float, better: str) -> str:
    """regression / improvement / unchanged for a gating metric; trend else."""
    if not a.gates or a.center is None or a.limit is None:
        return "trend"
    worse = shift(a.center, g, better)
    if worse > a.limit:
        return "regression"
    if worse < 1 / (1 + a.limit) - 1:  # the same distance in log terms, the good way
        return "improvement"
    return "unchanged"

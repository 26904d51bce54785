"""gate.py: the run statistic, a run's summary, the resolution, the limit and
MDE of a metric from its baseline runs, and the verdict on a night. Pure
logic, including its error rates, simulated with fixed seeds."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import t as student_t

from gpuconform.perf import gate
from gpuconform.perf.gate import Gate, assess, good_half_mean, judge, resolution, summarize

G = Gate()


def test_good_half_mean_takes_the_better_half() -> None:
    xs = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert good_half_mean(xs, "lower") == 2.0  # 1, 2, 3
    assert good_half_mean(xs, "higher") == 4.0  # 5, 4, 3
    assert good_half_mean([7.0], "lower") == 7.0
    assert good_half_mean([1.0, 9.0], "lower") == 1.0
    assert good_half_mean([1.0, 9.0], "higher") == 9.0
    # the worse half can be anything: interference never moves the statistic
    assert good_half_mean([1.0, 2.0, 3.0, 1e9, 1e12], "lower") == 2.0
    with pytest.raises(ValueError):
        good_half_mean([], "lower")


def test_summary_of_a_run() -> None:
    s = summarize(3, [4.0, 1.0, 3.0, 2.0, 5.0], "lower")
    assert s.to_json() == [3, 5, 1.0, 2.0, 3.0, 4.0, 5.0, 2.0, []]
    # 6 significant digits, and the statistic is of the unrounded samples
    s = summarize(0, [1.23456789, 2.0], "higher")
    assert (s.min, s.g) == (1.23457, 2.0)


def test_one_sample_a_run_keeps_ten_digits_so_chance_is_no_tie() -> None:
    # traced-concurrent's chain256 overhead on two nights of one host: equal to 6 digits
    a, b = 1.0957895285064723, 1.0957929982401202
    ga, gb = summarize(0, [a], "lower").g, summarize(1, [b], "lower").g
    assert (ga, gb) == (1.095789529, 1.095792998)
    assert summarize(0, [a], "lower").to_json()[2:8] == [ga] * 6
    gs = [ga, gb, 1.0946, 1.0932, 1.0940]
    assert assess(gs, 3.5e-6, 1, G, "overhead.graph-time-trace-over-graph.chain256",
                  single=True).gates
    # rounded to 6 as a many-sample run is, they would tie and stop gating
    six = [float(f"{g:.6g}") for g in gs]
    assert not assess(six, 3.5e-6, 1, G, "x", single=True).gates
    # two GPUs of one sample each: their mean and each GPU's value, 10 digits
    s = summarize(0, [a, b], "lower", [[a], [b]])
    assert s.n == 1 and s.copies == (ga, gb)


def test_a_summary_keeps_each_gpus_statistic() -> None:
    parts = [[1.0, 2.0, 9.0], [3.0, 4.0, 5.0, 6.0]]  # good halves 1, 2 and 3, 4
    s = summarize(0, [x for p in parts for x in p], "lower", parts)
    assert s.copies == (1.5, 3.5) and s.g == 2.5 and s.n == 3
    assert s.to_json()[-1] == [1.5, 3.5]
    assert summarize(0, [1.0, 2.0], "lower", [[1.0, 2.0]]).copies == ()


def test_the_gpus_spread_is_pooled_within_runs() -> None:
    e = math.exp
    w = gate.within_spread([(e(0.01), e(-0.01)), (), (5.0,), (e(0.03), e(0.0), e(-0.03))])
    # sums of squares 2e-4 and 18e-4 over 1 + 2 degrees of freedom
    assert w is not None and w[1] == 3 and w[0] == pytest.approx(math.sqrt(20e-4 / 3))
    assert gate.within_spread([(), (5.0,)]) is None
    assert gate.within_spread([(0.0, 1.0)]) is None


def test_a_night_on_fewer_gpus_than_the_runs_is_judged_with_their_spread() -> None:
    e = math.exp
    gs = [100.0, 100.3, 99.8, 100.1, 100.2]
    copies = [(g * e(0.012), g * e(-0.012)) for g in gs]  # two GPUs 2.4% apart
    plain = assess(gs, None, 100, G)
    two = assess(gs, None, 100, G, copies=copies, night=2)
    one = assess(gs, None, 100, G, copies=copies, night=1)
    # a night of as many GPUs as the runs: the runs' spread says it all
    assert (two.limit, two.mde, two.within) == (plain.limit, plain.mde, None)
    # one GPU: s'^2 = s^2 (1 + 1/K) + w^2 (1 - 1/2), t with Satterthwaite's df
    logs = [math.log(g) for g in gs]
    m = sum(logs) / 5
    base = sum((y - m) ** 2 for y in logs) / 4 * 1.2
    w2 = 2 * 0.012 ** 2 / 1  # each run: SS 2 (0.012)^2, 1 df; pooled over 5
    extra = w2 * 0.5
    df = (base + extra) ** 2 / (base ** 2 / 4 + extra ** 2 / 5)
    bound = student_t.ppf(1 - 0.05 / 100, df) * math.sqrt(base + extra)
    assert one.within == pytest.approx(math.sqrt(w2)) and one.night == 1
    assert one.limit == pytest.approx(math.exp(max(math.log(1.025), bound)) - 1)
    assert one.limit > plain.limit  # type: ignore[operator]
    # never narrower than the runs' own spread: a night on more GPUs than them
    assert assess(gs, None, 100, G, copies=copies, night=4).limit == plain.limit
    # nor when the GPUs' many degrees of freedom would shrink t below the runs'
    # (3 runs: t(2 df) at 1 - 0.05/400 is 63)
    few = [100.0, 100.5, 99.7]
    eight = [tuple(g * e(0.002 * (i - 3.5)) for i in range(8)) for g in few]
    wide = assess(few, None, 400, G, copies=eight, night=1)
    assert wide.within is not None and wide.limit == assess(few, None, 400, G).limit


def _copies_nights(night_gpus: int, with_copies: bool, trials: int, seed: int) -> float:
    """Clean nights flagged: runs on 4 GPUs whose own offsets (w 4%) dwarf
    the runs' (b 0.2%), judged on night_gpus GPUs drawn from the same model."""
    rng = random.Random(seed)

    def run(gpus: int) -> tuple[float, ...]:
        b = rng.gauss(0, 0.002)
        return tuple(100 * math.exp(b + rng.gauss(0, 0.04)) for _ in range(gpus))

    flagged = 0
    for _ in range(trials):
        runs = [run(4) for _ in range(5)]
        gs = [sum(r) / 4 for r in runs]
        a = assess(gs, None, 1, G, copies=runs if with_copies else (), night=night_gpus)
        night = run(night_gpus)
        flagged += judge(a, sum(night) / night_gpus, "lower") == "regression"
    return flagged / trials


def test_fewer_gpus_than_the_runs_keep_the_stated_level() -> None:
    """The runs' spread alone, of means over 4 GPUs, flags clean one-GPU
    nights far above alpha; with the GPUs' spread the level holds."""
    noise = 3 * math.sqrt(0.05 * 0.95 / 4000)
    assert _copies_nights(1, False, 4000, 5) > 0.05 + noise
    for gpus in (1, 2, 4):
        assert _copies_nights(gpus, True, 4000, 5 + gpus) <= 0.05 + noise


def test_resolution_is_the_smallest_step() -> None:
    assert resolution([768.0, 800.0, 768.0, 832.0]) == 32.0
    assert resolution([1.0, 1.0, 1.0]) is None
    assert resolution([]) is None
    assert resolution([0.5, 0.75, 2.0]) == 0.25


def test_fewer_than_three_runs_cannot_gate() -> None:
    for gs in ([], [1.0], [1.0, 1.01]):
        a = assess(gs, None, 10, G)
        assert not a.gates and a.limit is None
        assert a.trend == f"{len(gs)} run(s): its run-to-run spread needs 3"


def test_a_statistic_of_zero_cannot_gate() -> None:
    a = assess([0.0, 0.0, 1.0], None, 1, G)
    assert not a.gates and "0 or less" in (a.trend or "")


def test_equal_runs_gate_only_with_a_known_step() -> None:
    a = assess([800.0] * 5, None, 1, G)
    assert not a.gates and a.spread == 0 and "all 5 runs gave 800" in (a.trend or "")
    # a graph time of 2816 ns in every run, on a 32 ns clock: two steps are 2.27%,
    # under the floor, so min_effect / 2 decides
    a = assess([2.816] * 5, 0.032, 1, G)
    assert a.gates and a.limit == pytest.approx(0.025) and a.mde == pytest.approx(0.025)
    # 768 ns gaps: two steps of 32 ns are 8.3%
    a = assess([768.0] * 5, 32.0, 1, G)
    assert a.limit == pytest.approx(64 / 768)


def test_the_limit_is_the_prediction_bound() -> None:
    gs = [100.0, 101.0, 99.5, 100.4, 100.9]
    logs = [math.log(g) for g in gs]
    mean = sum(logs) / 5
    s = math.sqrt(sum((y - mean) ** 2 for y in logs) / 4)
    for family in (1, 10, 400):
        a = assess(gs, 0.001, family, G)
        bound = student_t.ppf(1 - 0.05 / family, 4) * s * math.sqrt(1.2)
        assert a.spread == pytest.approx(s)
        assert a.center == pytest.approx(math.exp(mean))
        assert a.limit == pytest.approx(math.exp(max(math.log(1.025), bound)) - 1)
        z = 1.6448536269514722  # the 95% point
        assert a.mde == pytest.approx(math.exp(math.log(1 + a.limit) + z * s * math.sqrt(1.2))
                                      - 1)
    # more metrics, a stricter bound; more runs, a looser t
    assert assess(gs, None, 400, G).limit > assess(gs, None, 10, G).limit  # type: ignore


def test_too_noisy_is_kept_for_trends() -> None:
    a = assess([60.0, 90.0, 122.0, 65.0, 70.0], None, 100, G)  # cuda_interrupt's vmm cycle
    assert not a.gates and a.mde is not None and a.mde > 0.2
    assert a.trend is not None and a.trend.startswith("MDE ") and "set by the spread" in a.trend
    assert assess([60.0, 90.0, 122.0, 65.0, 70.0], None, 100, Gate(trend_above=1e9)).gates


def test_maxima_and_tied_single_samples_are_trends() -> None:
    gs = [67936.0, 67712.0, 67680.0, 67690.0, 67700.0]
    assert not assess(gs, 32.0, 1, G, "gap-max.graph.wide256").gates
    assert not assess(gs, 32.0, 1, G, "max").gates
    assert assess(gs, 32.0, 1, G, "gap-p50.graph.wide256").gates
    # a tail: a p99 or a ratio of p99s (one GPU's p99 of the mixed graph read
    # 8513 ns where the others read 4544-5056)
    for tail in ("gap-p99.graph.wide256", "overhead.gap-p99-serial-over-graph.mixed"):
        a = assess(gs, 32.0, 1, G, tail)
        assert not a.gates and (a.trend or "").startswith("a tail (p99)")
    assert not gate.is_tail("overhead.gap-p50-trace-over-graph.mixed")
    assert not gate.is_tail("graph-time.graph.p990")
    tied = [1.17857, 1.17857, 1.17857, 1.17857, 1.17893]
    a = assess(tied, 0.00036, 1, G, "overhead.gap-p99-trace-over-graph.chain256", single=True)
    assert not a.gates and "4 of its 5 runs gave the same value" in (a.trend or "")
    assert assess(tied, 0.00036, 1, G, "x", single=False).gates


def test_judge() -> None:
    a = assess([100.0, 100.0, 100.0, 100.0], 0.1, 1, G)  # limit 2.5%
    assert a.limit == pytest.approx(0.025)
    assert judge(a, 102.4, "lower") == "unchanged"
    assert judge(a, 102.6, "lower") == "regression"
    assert judge(a, 100 / 1.026, "lower") == "improvement"
    assert judge(a, 100 / 1.024, "lower") == "unchanged"
    # higher is better: the same distances the other way
    assert judge(a, 100 / 1.026, "higher") == "regression"
    assert judge(a, 102.6, "higher") == "improvement"
    assert judge(a, 0.0, "higher") == "regression" and judge(a, 0.0, "lower") == "improvement"
    assert judge(assess([1.0], None, 1, G), 5.0, "lower") == "trend"


def _simulate(k: int, family: int, drift: float, shift: float, trials: int,
              seed: int) -> float:
    """The fraction of nights flagged as regressions: K baseline runs and one
    night, each run's statistic exp(N(0, drift)), the night's times 1+shift."""
    rng = random.Random(seed)
    flagged = 0
    for _ in range(trials):
        gs = [100 * math.exp(rng.gauss(0, drift)) for _ in range(k)]
        a = assess(gs, None, family, G)
        night = 100 * math.exp(rng.gauss(0, drift)) * (1 + shift)
        flagged += judge(a, night, "lower") == "regression"
    return flagged / trials


@pytest.mark.parametrize("k,drift", [(5, 0.004), (5, 0.03), (8, 0.01), (12, 0.05)])
def test_clean_nights_are_flagged_at_the_stated_level(k: int, drift: float) -> None:
    """With family 1 the one-sided level is alpha = 5%; the floor only lowers it."""
    rate = _simulate(k, 1, drift, 0.0, 4000, seed=k * 1000 + int(drift * 1e4))
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)  # at most alpha, within noise
    if drift >= 0.03:  # the t bound decides, not the floor: the level is reached
        assert rate >= 0.05 - 3 * math.sqrt(0.05 * 0.95 / 4000)


@pytest.mark.parametrize("k,drift", [(5, 0.004), (8, 0.01)])
def test_a_change_of_the_mde_is_caught_about_as_often_as_promised(k: int, drift: float) -> None:
    """The MDE is computed as if the spread were known; with it estimated from
    K runs the power scatters around 95%: at least 80% here."""
    rng = random.Random(7)
    gs = [100 * math.exp(rng.gauss(0, drift)) for _ in range(k)]
    mde = assess(gs, None, 1, G).mde
    assert mde is not None
    rate = _simulate(k, 1, drift, mde, 2000, seed=11)
    assert rate >= 0.8


def test_bonferroni_keeps_a_family_of_clean_nights_quiet() -> None:
    """400 independent metrics, each of 5 runs: a clean night flags any of them
    in at most alpha = 5% of nights (plus noise)."""
    rng = random.Random(3)
    nights, flagged = 200, 0
    for _ in range(nights):
        any_flag = False
        for _ in range(400):
            drift = rng.choice((0.002, 0.01, 0.05))
            gs = [math.exp(rng.gauss(0, drift)) for _ in range(5)]
            a = assess(gs, None, 400, G)
            any_flag |= judge(a, math.exp(rng.gauss(0, drift)), "lower") == "regression"
        flagged += any_flag
    assert flagged / nights <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / nights)


def test_summary_fields() -> None:
    assert gate.SUMMARY_FIELDS == ("run", "n", "min", "p25", "p50", "p75", "max", "g", "copies")

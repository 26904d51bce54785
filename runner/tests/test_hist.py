"""hist.py: a metric's samples as a histogram give every statistic the
expanded samples give (stats, the gate, compare), and bad counts are refused
with the line or path that holds them."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from gpuconform.core import stats
from gpuconform.core.hist import Hist, best_mean, counts_problem, samples_of
from gpuconform.core.metrics import Metric, parse_metrics
from gpuconform.core.runmetrics import RunMetric, read_results
from gpuconform.core.jsondoc import DocError
from gpuconform.perf import gate
from gpuconform.perf.compare import compare_samples


def quantized(n: int, seed: int, step: float = 32.0) -> list[float]:
    """n gaps on a 32 ns clock: a bulk near 700 ns and a sparse tail."""
    rnd = random.Random(seed)
    return [step * round(rnd.lognormvariate(3.1, 0.08 if rnd.random() < 0.97 else 1.0))
            for _ in range(n)]


def test_a_hist_reads_as_its_sorted_samples() -> None:
    h = Hist([1.0, 2.5, 7.0], [2, 1, 3])
    assert len(h) == 6
    assert list(h) == [1.0, 1.0, 2.5, 7.0, 7.0, 7.0]
    assert list(reversed(h)) == [7.0, 7.0, 7.0, 2.5, 1.0, 1.0]
    assert [h[i] for i in range(6)] == list(h) and h[-1] == 7.0 and h[-6] == 1.0
    assert h[1:4] == [1.0, 2.5, 7.0]
    with pytest.raises(IndexError):
        h[6]
    assert h == Hist.of([7.0, 1.0, 7.0, 2.5, 7.0, 1.0])
    assert h.scaled(2.0) == Hist([2.0, 5.0, 14.0], [2, 1, 3])


def test_joining_copies_adds_their_counts_whatever_the_side() -> None:
    a, b = Hist([1.0, 3.0], [2, 1]), Hist([3.0, 4.0], [5, 1])
    assert a + b == Hist([1.0, 3.0, 4.0], [2, 6, 1])
    assert (0.5, 3.0) + a == Hist([0.5, 1.0, 3.0], [1, 2, 2])
    assert a + [4.0] == Hist([1.0, 3.0, 4.0], [2, 1, 1])
    # what joining two GPUs' copies of one metric does (runmetrics)
    key = Metric("t", "s", "gpu0", "gap.graph.chain2", "ns", "lower", a).key
    rm = RunMetric(key, "ns", "lower", a).joined(RunMetric(key, "ns", "lower", b), 1)
    assert rm.samples == a + b and rm.parts == (a, b) and rm.per_copy == 3


@pytest.mark.parametrize("samples,counts,why", [
    ([1.0, 2.0], [1], "'counts' has 1 entries for 2 samples"),
    ([1.0, 2.0], "1,1", "'counts' is str, not a list"),
    ([1.0, 2.0], [1, 0], "count 1 is not a positive integer: 0"),
    ([1.0, 2.0], [1, 1.0], "count 1 is not a positive integer: 1.0"),
    ([1.0, 2.0], [True, 1], "count 0 is not a positive integer: True"),
    ([2.0, 1.0], [1, 1], "sample 1 (1.0) does not ascend from 2.0"),
    ([1.0, 1.0], [1, 1], "sample 1 (1.0) does not ascend from 1.0"),
])
def test_bad_counts_say_which_entry(samples: list[float], counts: Any, why: str) -> None:
    assert why in (counts_problem(samples, counts) or "")
    with pytest.raises(ValueError, match="count|ascend"):
        Hist(samples, counts)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_statistics_of_a_hist_equal_those_of_its_samples(seed: int) -> None:
    xs = quantized(3001, seed)
    h = Hist.of(xs)
    assert len(h.values) < 200 < len(xs)  # what makes it worth it
    assert stats.median(h) == stats.median(xs)
    for q in (0.0, 0.25, 0.5, 0.75, 0.99, 1.0):
        assert stats.quantile(h, q) == stats.quantile(xs, q)
    assert stats.mad(h) == stats.mad(xs)
    for better in ("lower", "higher"):
        assert gate.good_half_mean(h, better) == gate.good_half_mean(xs, better)
        assert gate.summarize(0, h, better) == gate.summarize(0, xs, better)
    assert best_mean(h, 5, largest=True) == sum(sorted(xs)[-5:]) / 5


@pytest.mark.parametrize("shift", [0.0, 32.0])
def test_mann_whitney_of_hists_equals_that_of_their_samples(shift: float) -> None:
    xs, ys = quantized(800, 7), [v + shift for v in quantized(900, 8)]
    # U from the ranks of all samples, ties given their average rank: R_x - m(m+1)/2
    assert stats.mann_whitney_u(Hist.of(xs), Hist.of(ys)).u == (
        sum(stats.ranks(xs + ys)[:800]) - 800 * 801 / 2)
    for alt in ("two-sided", "less", "greater"):
        want = stats.mann_whitney_u(xs, ys, alt)  # type: ignore[arg-type]
        assert stats.mann_whitney_u(Hist.of(xs), Hist.of(ys), alt) == want  # type: ignore
        assert stats.mann_whitney_u(Hist.of(xs), ys, alt) == want  # type: ignore[arg-type]
    # small and untied: still the exact distribution
    mw = stats.mann_whitney_u(Hist.of([1.0, 3.0, 5.0]), [2.0, 4.0, 6.0, 8.0])
    assert mw.method == "exact" and mw.u == stats.mann_whitney_u([1, 3, 5], [2, 4, 6, 8]).u


def test_compare_of_two_runs_reads_histograms() -> None:
    xs, ys = quantized(3000, 11), [v * 1.2 for v in quantized(3000, 12)]
    key = Metric("t", "s", None, "gap.graph.chain16", "ns", "lower", ()).key

    def run(s: Any) -> RunMetric:
        return RunMetric(key, "ns", "lower", s)

    plain = compare_samples(run(tuple(xs)), run(tuple(ys)))
    hist = compare_samples(run(Hist.of(xs)), run(Hist.of(ys)))
    assert plain.verdict == hist.verdict == "regression"
    assert (hist.p_value, hist.quartile_change, hist.n_base) == (
        plain.p_value, plain.quartile_change, plain.n_base)
    j = hist.to_json()
    assert sum(j["counts_base"]) == 3000 and len(j["samples_base"]) == len(Hist.of(xs).values)
    assert "counts_run" in j and "counts_base" not in plain.to_json()


def test_compare_of_millions_of_gaps_a_side_reads_their_counts_only() -> None:
    # a chain8192 graph on two GPUs: 16.4 million gaps a run, three values
    key = Metric("t", "s", None, "gap.graph.chain8192", "ns", "lower", ()).key
    a = Hist([608.0, 640.0, 704.0, 2539620.0], [4_000_000, 4_190_000, 8_192_000, 10])
    b = Hist([640.0, 704.0, 736.0, 2539620.0], [4_000_000, 4_190_000, 8_192_000, 10])
    assert stats.min_p_value(len(a), len(b)) == 0.0  # C(m + n, m) never built
    c = compare_samples(RunMetric(key, "ns", "lower", a), RunMetric(key, "ns", "lower", b))
    assert (c.n_base, c.n_run) == (16_382_010, 16_382_010)
    assert c.verdict == "regression" and c.quartile_change == pytest.approx(704 / 640 - 1)


def hist_line(**over: Any) -> str:
    obj: dict[str, Any] = {"test": "cuda_bubbles", "subtest": "gaps", "dynamic": "graph-chain2",
                           "name": "gap.graph.chain2", "unit": "ns", "better": "lower",
                           "samples": [704, 736, 2539620], "counts": [600, 399, 1]}
    obj.update(over)
    return json.dumps(obj) + "\n"


def test_a_binary_s_histogram_line_round_trips() -> None:
    metrics, errors = parse_metrics(hist_line())
    assert errors == []
    m = metrics[0]
    assert isinstance(m.samples, Hist) and len(m.samples) == 1000
    assert stats.median(m.samples) == 704.0 and m.samples[-1] == 2539620.0
    j = m.to_json()
    assert j["samples"] == [704.0, 736.0, 2539620.0] and j["counts"] == [600, 399, 1]
    assert Metric.from_json(j) == m
    assert samples_of({"samples": [1, 2]}) == (1.0, 2.0)  # no counts: plain samples


def test_the_line_lib_metrics_c_writes_is_read_as_its_gaps() -> None:
    # the very line tests/unit/test_gaps.c (metric-hist) checks gc_metric_hist writes
    line = ('{"test":"unit_gaps","subtest":"metric-hist","dynamic":null,'
            '"name":"gap.unit.hist","unit":"ns","better":"lower",'
            '"samples":[992,1024,1056,1088,5000.5],"counts":[2,2,2,1,1]}\n')
    assert line.rstrip("\n") in (Path(__file__).parents[2] / "tests/unit/test_gaps.c").read_text(
        ).replace('\\"', '"').replace('"\n\t\t"', "")
    (m,), errors = parse_metrics(line, test="unit_gaps", subtest="metric-hist")
    assert errors == [] and list(m.samples) == [992, 992, 1024, 1024, 1056, 1056, 1088, 5000.5]
    assert stats.median(m.samples) == 1040.0  # the median the binary prints


@pytest.mark.parametrize("over,why", [
    ({"counts": [600, 399]}, "'counts' has 2 entries for 3 samples"),
    ({"counts": [600, -1, 1]}, "count 1 is not a positive integer"),
    ({"samples": [736, 704, 9]}, "sample 1 (704) does not ascend from 736"),
])
def test_a_bad_histogram_line_is_one_message_naming_it(over: dict[str, Any], why: str) -> None:
    metrics, errors = parse_metrics(hist_line(name="ok") + hist_line(**over), source="M")
    assert [m.name for m in metrics] == ["ok"]
    assert len(errors) == 1 and errors[0].startswith("M line 2: ") and why in errors[0]


def test_results_json_with_bad_counts_names_the_path(tmp_path: Path) -> None:
    metric = json.loads(hist_line(counts=[1, 0, 1]))
    (tmp_path / "results.json").write_text(json.dumps(
        {"format": "gpuconform-results",
         "tests": {"cuda_bubbles@gaps": {"result": "pass", "metrics": [metric]}}}, indent=1))
    with pytest.raises(DocError) as ei:
        read_results(tmp_path)
    msg = str(ei.value)
    assert "\n" not in msg and str(tmp_path / "results.json") in msg
    assert 'tests["cuda_bubbles@gaps"].metrics[0].counts' in msg
    assert "count 1 is not a positive integer: 0" in msg

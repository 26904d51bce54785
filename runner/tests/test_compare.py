"""compare.py: `gpuconform compare A B` -- test state changes, the
sample-level verdict of each metric, and the trend-only marks of the
committed baseline of B's fingerprint."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from gc_testutil import gate_baseline
from gpuconform.perf.baseline import BaselineError, write_baseline
from gpuconform.core.metrickey import MetricKey
from gpuconform.core.runmetrics import RunMetric
from gpuconform.perf.compare import SampleComparison, compare_results, compare_samples
from gpuconform.perf.judge import GateComparison
from test_baseline import FP, metric, record, results, write_results

BASE = [100.0 + 0.37 * i + (i % 7) * 0.9 for i in range(30)]  # 30 distinct values, ~17% wide


def rm(samples: list[float], better: str = "lower") -> RunMetric:
    return RunMetric(MetricKey("b@s", "lat"), "ns", better, tuple(samples))


def test_sample_verdicts() -> None:
    assert compare_samples(rm(BASE), rm([x * 1.2 for x in BASE])).verdict == \
        "regression"
    assert compare_samples(rm(BASE), rm([x / 1.2 for x in BASE])).verdict == \
        "improvement"
    assert compare_samples(rm(BASE), rm(BASE)).verdict == "unchanged"
    # significant, but the good-side quartile moved less than min_effect / 2
    tight = [1000.0 + 0.1 * i for i in range(50)]  # 0.5% wide
    c = compare_samples(rm(tight), rm([x * 1.02 for x in tight]))
    assert c.verdict == "unchanged" and "significant, but the 25th percentile moved by less " \
        "than 2.5%" in c.explain()
    assert compare_samples(rm([1.0] * 4), rm([2.0] * 4)).verdict == "insufficient"
    hb = compare_samples(rm(BASE, "higher"), rm([x / 1.2 for x in BASE], "higher"))
    assert hb.verdict == "regression"


def test_a_metric_of_one_side_is_explained() -> None:
    """new / missing: the note (or what is missing where), the one side's
    statistic and what it stands on, in both kinds of comparison."""
    new = compare_samples(None, rm([100.0, 102.0, 104.0]))
    assert new.explain() == "new: not in A (median 102 ns over 3 samples)"
    gone = compare_samples(rm([100.0, 102.0]), None, note="its subtest was skipped")
    assert gone.explain() == "missing: its subtest was skipped (A's median 101 ns over 2 samples)"
    traced = SampleComparison("b@s", "lat", "ns", "lower", "new", trend="noisy", n_run=1,
                              median_run=7.0)
    assert traced.explain() == "new: not in A (median 7 ns over 1 samples) [trend only: noisy]"
    gnew = GateComparison("b@s", "lat", "ns", "lower", "new", n_run=4, value=99.5)
    assert gnew.explain() == "new: not in the baseline (good-half mean 99.5 ns over 4 samples)"
    gone_g = GateComparison("b@s", "lat", "ns", "lower", "missing", base_runs=5, center=100.25)
    assert gone_g.explain() == ("missing: in the baseline, not recorded by this run (baseline "
                                "100.2 ns over 5 runs)")
    gone_g.note = "another node's GPU"
    assert gone_g.explain() == "missing: another node's GPU (baseline 100.2 ns over 5 runs)"


def test_compare_results(tmp_path: Path) -> None:
    a = write_results(tmp_path / "a", results({
        "b@fixed": record("fail"),
        "b@broke": record("pass"),
        "b@same": record("pass", [metric("b", "same", "lat", BASE)]),
        "b@skip": record("pass"),
        "b@gone": record("pass"),
    }))
    b = write_results(tmp_path / "b", results({
        "b@fixed": record("pass"),
        "b@broke": record("crash", reason="killed by SIGSEGV\nsecond line"),
        "b@same": record("pass", [metric("b", "same", "lat", [x * 1.2 for x in BASE])]),
        "b@skip": record("skip"),
        "b@added": record("pass"),
    }))
    text = compare_results(a, b)
    assert "tests: 1 fixed, 1 regressed, 1 changed, 1 new, 1 removed; metrics: 1 regression\n" \
        in text
    assert "fixed (1):\n  b@fixed: fail -> pass\n" in text
    assert "regressed (1):\n  b@broke: pass -> crash: killed by SIGSEGV second line\n" in text
    assert "changed (1):\n  b@skip: pass -> skip\n" in text
    assert "new (1):\n  b@added: pass\n" in text
    assert "removed (1):\n  b@gone: pass\n" in text
    m = statistics.median(BASE)
    assert f"  b@same:lat: regression: median {m:.4g} ns -> {m * 1.2:.4g} ns (+20.00%" in text
    same = compare_results(a, a)
    assert "0 fixed, 0 regressed" in same and "b@same:lat: unchanged" in same


def test_compare_marks_what_the_baseline_keeps_for_trends(tmp_path: Path) -> None:
    """B's fingerprint has a committed baseline: its trend-only metrics are
    marked, listed after the gated ones, and counted in the summary line."""
    steady = [[100.0, 101.0], [100.2, 101.1], [99.9, 100.8], [100.1, 101.0], [100.0, 100.9]]
    noisy = [[60.0, 61.0], [90.0, 92.0], [122.0, 125.0], [65.0, 66.0], [70.0, 71.0]]
    bdir = tmp_path / "baselines"
    write_baseline(gate_baseline({"b@s:steady": ("ns", "lower", steady),
                                  "b@s:noisy": ("ns", "lower", noisy)}, FP.to_json()),
                   bdir / f"{FP.key()}.json")
    def run(scale: float) -> dict:
        return results({"b@s": record("pass", [
            metric("b", "s", "steady", [x * scale for x in BASE]),
            metric("b", "s", "noisy", [x * scale for x in BASE])])}, fingerprint=FP.to_json())
    a = write_results(tmp_path / "a", run(1.0))
    b = write_results(tmp_path / "b", run(1.3))
    text = compare_results(a, b, baselines=[bdir])
    assert f"metrics: 2 regression (1 of them trend only in {bdir / FP.key()}.json)" in text
    lines = text.splitlines()
    steady_at = next(i for i, x in enumerate(lines) if x.startswith("  b@s:steady: regression"))
    noisy_at = next(i for i, x in enumerate(lines) if x.startswith("  b@s:noisy: regression"))
    assert steady_at < noisy_at and "[trend only: MDE" in lines[noisy_at]
    assert "trend only" not in lines[steady_at]
    # no baseline of B's fingerprint: nothing marked
    assert "trend only" not in compare_results(a, b, baselines=[tmp_path / "none"])


def test_compare_results_bad_input(tmp_path: Path) -> None:
    a = write_results(tmp_path / "a", results({}))
    (tmp_path / "b").mkdir()
    with pytest.raises(BaselineError, match=r"^\S+/b/results\.json: cannot read results"):
        compare_results(a, tmp_path / "b")
    (tmp_path / "b" / "results.json").write_text('{"format": "gpuconform-results",\n"tests": []}')
    with pytest.raises(BaselineError, match=r"b/results\.json:2: tests: is array, not object"):
        compare_results(a, tmp_path / "b")

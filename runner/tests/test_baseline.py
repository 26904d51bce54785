"""baseline.py: the file format and its errors, update, find, the verdict rule,
`compare A B`; and the real selftest_metrics@spin through the runner."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import REPO_ROOT, Selftests
from gpuconform import baseline as bl
from gpuconform.baseline import (
    Baseline,
    BaselineError,
    BaselineMetric,
    compare_results,
    compare_run,
    find_baseline,
    load_baseline,
    update_baseline,
    write_baseline,
)
from gpuconform.fingerprint import Fingerprint

FP = Fingerprint("1x NVIDIA H100 80GB HBM3", "nvidia 550.54.15", "cuda 12.4", "6.1", "x86_64",
                 "AMD EPYC 7763", "6.1.0-18-amd64")

# `gpuconform run` options: no checked-in baseline nor other jobs' kernel messages
# may decide these runs
RUN_ISOLATED = ["--no-baseline", "--kmsg", "off", "--taint-file", "off"]


def metric(test: str, sub: str, name: str, samples: list[float], *, dyn: str | None = None,
           unit: str = "ns", better: str = "lower") -> dict[str, Any]:
    return {"test": test, "subtest": sub, "dynamic": dyn, "name": name, "unit": unit,
            "better": better, "samples": samples}


def record(result: str = "pass", metrics: list[dict[str, Any]] | None = None,
           duration: float = 1.0, dynamic: dict[str, str] | None = None,
           reason: str = "") -> dict[str, Any]:
    return {"result": result, "reason": reason, "duration": duration,
            "metrics": metrics or [],
            "dynamic": {k: {"result": v, "reason": "", "time": None}
                        for k, v in (dynamic or {}).items()}}


def results(tests: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"format": "gpuconform-results", "version": 1, "run": {}, "tests": tests,
            "totals": {}, **extra}


def write_results(d: Path, data: dict[str, Any]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "results.json").write_text(json.dumps(data, indent=1))
    return d


BASE = [100.0 + 0.37 * i + (i % 7) * 0.9 for i in range(30)]  # 30 distinct values, ~17% wide
TIGHT = [1000.0 + 0.1 * i for i in range(50)]  # 50 distinct values, 0.5% wide


def scaled(xs: list[float], f: float) -> list[float]:
    return [x * f for x in xs]


def baseline_of(metrics: dict[str, BaselineMetric]) -> Baseline:
    return Baseline(FP.to_json(), "2024-01-01T00:00:00Z", "test", metrics, {})


# ----------------------------------------------------------------- format


def good_baseline_text() -> str:
    b = Baseline(FP.to_json(), "2024-01-01T00:00:00Z", "results/x",
                 {"bin@sub:lat": BaselineMetric("ns", "lower", (1.0, 2.0, 3.5)),
                  "bin@sub@gpu0:bw": BaselineMetric("MB/s", "higher", (10.0,))},
                 {"bin@sub": 1.25, "bin@other": 0.0})
    return bl._render_baseline(b)


def test_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "b.json"
    p.write_text(good_baseline_text())
    b = load_baseline(p)
    assert b.metrics["bin@sub:lat"] == BaselineMetric("ns", "lower", (1.0, 2.0, 3.5))
    assert b.metrics["bin@sub@gpu0:bw"].better == "higher"
    assert b.durations == {"bin@sub": 1.25, "bin@other": 0.0}
    assert Fingerprint.from_json(b.fingerprint) == FP
    write_baseline(b, tmp_path / "c.json")
    assert load_baseline(tmp_path / "c.json").to_json() == b.to_json()
    assert json.loads(p.read_text())["format"] == "gpuconform-baseline"


def _mutate(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# (mutation of the good file, what the message must contain: line and field)
BAD_FILES = [
    (lambda t: t[:-3], ":", "malformed baseline JSON"),
    (lambda t: _mutate(t, '"gpuconform-baseline"', '"gpuconform-results"'), ":2:",
     "format: unknown format"),
    (lambda t: _mutate(t, '"version": 1', '"version": 2'), ":3:", "version: unknown version 2"),
    (lambda t: _mutate(t, '"version": 1', '"version": true'), ":3:", "unknown version true"),
    (lambda t: _mutate(t, '"created": "2024-01-01T00:00:00Z"', '"created": 5'), ":5:",
     "created: is number, not string"),
    (lambda t: _mutate(t, ' "source": "results/x",\n', ""), ":1:", "missing field 'source'"),
    (lambda t: _mutate(t, '"durations": {', '"durations_": {'), ":1:",
     "missing field 'durations'"),
    (lambda t: _mutate(t, '"samples": [1.0, 2.0, 3.5]', '"samples": [1.0, NaN, 3.5]'), ":8:",
     'metrics["bin@sub:lat"].samples[1]: sample is not finite'),
    (lambda t: _mutate(t, '"samples": [1.0, 2.0, 3.5]', '"samples": [1.0, 2.0, 1e999]'), ":8:",
     'metrics["bin@sub:lat"].samples[2]: sample is not finite'),
    (lambda t: _mutate(t, '"samples": [1.0, 2.0, 3.5]', '"samples": [1.0, "2", 3.5]'), ":8:",
     "samples[1]: sample is string"),
    (lambda t: _mutate(t, '"samples": [1.0, 2.0, 3.5]', '"samples": [true]'), ":8:",
     "samples[0]: sample is boolean"),
    (lambda t: _mutate(t, '"samples": [1.0, 2.0, 3.5]', '"samples": []'), ":8:",
     'metrics["bin@sub:lat"].samples: empty sample set'),
    (lambda t: _mutate(t, '"samples": [1.0, 2.0, 3.5]', '"samples": 3'), ":8:",
     "samples: is number, not an array"),
    (lambda t: _mutate(t, '"better": "lower"', '"better": "smaller"'), ":8:",
     'metrics["bin@sub:lat"].better: is "smaller"'),
    (lambda t: _mutate(t, '"unit": "ns", ', ""), ":8:", "missing field 'unit'"),
    (lambda t: _mutate(t, '"bin@sub:lat"', '"bin-sub-lat"'), ":8:", "metric key is not"),
    (lambda t: _mutate(t, '"bin@other": 0.0', '"bin@other": -1'), ":12:",
     'durations["bin@other"]: duration is negative'),
    (lambda t: _mutate(t, '"bin@other": 0.0', '"bin@other": null'), ":12:",
     "duration is null"),
    (lambda t: _mutate(t, '"arch": "x86_64"', '"arch": 64'), ":4:", "fingerprint.arch"),
    (lambda t: "[1, 2]\n", ":1:", "not a baseline object"),
]


@pytest.mark.parametrize("mutate,where,why", BAD_FILES)
def test_bad_files_give_one_line(tmp_path: Path, mutate: Any, where: str, why: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(mutate(good_baseline_text()))
    with pytest.raises(BaselineError) as ei:
        load_baseline(p)
    msg = str(ei.value)
    assert "\n" not in msg
    assert msg.startswith(f"{p}{where}"), msg
    assert why in msg, msg


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"nope\.json: cannot read baseline"):
        load_baseline(tmp_path / "nope.json")


def test_locate_points_at_the_field() -> None:
    text = '{\n "a": [1,\n  2, {"b":\n   3}],\n "c": "x"\n}'
    assert bl._locate(text, ["a"]) == 2
    assert bl._locate(text, ["a", 1]) == 3
    assert bl._locate(text, ["a", 2, "b"]) == 4
    assert bl._locate(text, ["c"]) == 5
    assert bl._locate(text, ["zz"]) is None
    assert bl._locate(text, ["a", 7]) is None


# ------------------------------------------------------------ find, update


def test_find_baseline(tmp_path: Path) -> None:
    d1, d2 = tmp_path / "one", tmp_path / "two"
    d1.mkdir()
    d2.mkdir()
    assert find_baseline(FP, [d1, d2]) is None
    (d2 / f"{FP.key()}.json").write_text(good_baseline_text())
    assert find_baseline(FP, [d1, d2]) == d2 / f"{FP.key()}.json"
    (d1 / f"{FP.key()}.json").write_text(good_baseline_text())
    assert find_baseline(FP, [d1, d2]) == d1 / f"{FP.key()}.json"
    other = Fingerprint(**{**FP.to_json(), "gpu_model": "1x NVIDIA L4"})
    assert find_baseline(other, [d1, d2]) is None


def run_data() -> dict[str, Any]:
    return results({
        "b@ok": record("pass", [metric("b", "ok", "lat", [1, 2, 3]),
                                metric("b", "ok", "bw", [9, 8], unit="MB/s", better="higher")],
                       duration=2.5),
        "b@bad": record("fail", [metric("b", "bad", "lat", [5, 6])], duration=0.5),
        "b@dyn": record("fail", [metric("b", "dyn", "lat", [7], dyn="gpu0"),
                                 metric("b", "dyn", "lat", [8], dyn="gpu1")],
                        dynamic={"gpu0": "pass", "gpu1": "fail"}, duration=3.0),
        "b@never": record("notrun", duration=0.0),
        "b@skipped": record("skip", duration=0.01),
    }, fingerprint=FP.to_json())


def test_update_baseline_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bl, "DEFAULT_BASELINE_DIR", tmp_path / "baselines")
    rd = write_results(tmp_path / "run", run_data())
    out = update_baseline(rd)
    assert out == tmp_path / "baselines" / f"{FP.key()}.json"  # the fingerprint of the run
    b = load_baseline(out)
    # passing tests' metrics and the passing dynamic subtest's; not the failed ones
    assert sorted(b.metrics) == ["b@dyn@gpu0:lat", "b@ok:bw", "b@ok:lat"]
    assert b.metrics["b@ok:bw"] == BaselineMetric("MB/s", "higher", (9.0, 8.0))
    assert b.durations == {"b@ok": 2.5, "b@bad": 0.5, "b@dyn": 3.0, "b@skipped": 0.01}
    assert b.source == str(rd.absolute()) and b.fingerprint == FP.to_json()
    assert find_baseline(FP, [tmp_path / "baselines"]) == out


def test_update_merges_with_the_existing_baseline(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    first = results({"b@one": record("pass", [metric("b", "one", "x", [1.0])], duration=1),
                     "b@two": record("pass", [metric("b", "two", "x", [2.0])], duration=2)},
                    fingerprint=FP.to_json())
    update_baseline(write_results(tmp_path / "r1", first), out)
    second = results({"b@two": record("pass", [metric("b", "two", "x", [3.0])], duration=4)},
                     fingerprint=FP.to_json())
    update_baseline(write_results(tmp_path / "r2", second), out)
    b = load_baseline(out)
    assert b.metrics["b@one:x"].samples == (1.0,)  # kept
    assert b.metrics["b@two:x"].samples == (3.0,)  # replaced
    assert b.durations == {"b@one": 1.0, "b@two": 4.0}


def test_update_appends_samples_of_several_runs(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    for i, samples in enumerate(([1.0, 2.0], [3.0], [4.0])):
        data = results({"b@x": record("pass", [metric("b", "x", "t", samples)], duration=i)},
                       fingerprint=FP.to_json())
        update_baseline(write_results(tmp_path / f"r{i}", data), out, append=True)
    b = load_baseline(out)
    assert b.metrics["b@x:t"].samples == (1.0, 2.0, 3.0, 4.0)
    assert b.durations == {"b@x": 2.0}
    assert b.source.count("/r") == 3


def test_update_refuses_another_machines_file(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    out.write_text(good_baseline_text())
    other = Fingerprint(**{**FP.to_json(), "gpu_model": "1x NVIDIA L4"})
    rd = write_results(tmp_path / "r", results({"b@x": record()}, fingerprint=other.to_json()))
    with pytest.raises(BaselineError,
                       match=r"b\.json: fingerprint: the baseline is for 1x NVIDIA H100"):
        update_baseline(rd, out)
    assert out.read_text() == good_baseline_text()


def test_update_without_stored_fingerprint_uses_this_machine(tmp_path: Path) -> None:
    from gpuconform.fingerprint import current_fingerprint
    rec = record("pass", [metric("b", "x", "t", [1])])
    rd = write_results(tmp_path / "r", results({"b@x": rec}))
    out = update_baseline(rd, tmp_path / "b.json")
    assert load_baseline(out).fingerprint == current_fingerprint().to_json()


@pytest.mark.parametrize("text,where,why", [
    ("{", ":1:", "malformed results JSON"),
    ('{"format": "x", "tests": {}}', ":1:", "format: unknown format"),
    ('{"format": "gpuconform-results"}', ":1:", "missing field 'tests'"),
    ('{"format": "gpuconform-results",\n "tests": {"a@b": {"result": 3}}}', ":2:",
     'tests["a@b"].result: is number'),
    ('{"format": "gpuconform-results",\n "tests": {"a@b": {"result": "pass",\n "metrics": '
     '[{"test": "a", "subtest": "b", "name": "n", "unit": "ns", "better": "lower", '
     '"samples": [1, Infinity]}]}}}', ":3:",
     'tests["a@b"].metrics[0].samples[1]: sample is not finite'),
    ('{"format": "gpuconform-results", "tests": {}}', ":", "no test records"),
])
def test_update_bad_results(tmp_path: Path, text: str, where: str, why: str) -> None:
    (tmp_path / "results.json").write_text(text)
    with pytest.raises(BaselineError) as ei:
        update_baseline(tmp_path, tmp_path / "b.json")
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"{tmp_path / 'results.json'}{where}"), msg
    assert why in msg
    assert not (tmp_path / "b.json").exists()


# -------------------------------------------------------- run sizes ("runs")


def runs_baseline_text() -> str:
    b = Baseline(FP.to_json(), "2024-01-01T00:00:00Z", "results/x",
                 {"bin@sub:lat": BaselineMetric("ns", "lower", (9.0, 1.0, 2.0, 3.5, 4.0),
                                                (2, 2))},
                 {"bin@sub": 1.25})
    return bl._render_baseline(b)


def test_run_sizes_round_trip(tmp_path: Path) -> None:
    text = runs_baseline_text()
    assert '"runs": [2, 2]' in text and '"version": 1' in text
    p = tmp_path / "b.json"
    p.write_text(text)
    m = load_baseline(p).metrics["bin@sub:lat"]
    assert m.runs == (2, 2) and m.ungrouped == 1
    assert m.run_groups == ((1.0, 2.0), (3.5, 4.0))  # the last 4 samples; 9.0 is of no run
    write_baseline(load_baseline(p), tmp_path / "c.json")
    assert (tmp_path / "c.json").read_text() == text
    # a file of before (no "runs") is written back without them
    assert '"runs"' not in good_baseline_text()
    assert BaselineMetric("ns", "lower", (1.0,)).to_json() == {
        "unit": "ns", "better": "lower", "samples": [1.0]}


def test_run_sizes_do_not_change_equality_but_are_checked() -> None:
    assert BaselineMetric("ns", "lower", (1.0, 2.0), (2,)) == BaselineMetric("ns", "lower",
                                                                             (1.0, 2.0))
    assert BaselineMetric("ns", "lower", (1.0, 2.0), (1, 1)).run_groups == ((1.0,), (2.0,))
    assert BaselineMetric("ns", "lower", (1.0, 2.0)).run_groups == ()
    for bad in ((3,), (0, 2), (-1,), (True,)):
        with pytest.raises(ValueError):
            BaselineMetric("ns", "lower", (1.0, 2.0), bad)


@pytest.mark.parametrize("old,new,why", [
    ('"runs": [2, 2]', '"runs": 4', 'metrics["bin@sub:lat"].runs: is number, not an array of '
     'run sizes'),
    ('"runs": [2, 2]', '"runs": [2, 0]', 'metrics["bin@sub:lat"].runs[1]: run size is number 0, '
     'not a positive integer'),
    ('"runs": [2, 2]', '"runs": [2, -2]', "runs[1]: run size is number -2"),
    ('"runs": [2, 2]', '"runs": [2.5, 2]', "runs[0]: run size is number 2.5"),
    ('"runs": [2, 2]', '"runs": [true]', "runs[0]: run size is boolean true"),
    ('"runs": [2, 2]', '"runs": ["2"]', 'runs[0]: run size is string "2"'),
    ('"runs": [2, 2]', '"runs": [2, 4]', 'metrics["bin@sub:lat"].runs: run sizes add up to 6, '
     'more than the 5 samples'),
])
def test_bad_run_sizes_give_one_line(tmp_path: Path, old: str, new: str, why: str) -> None:
    p = tmp_path / "bad.json"
    text = runs_baseline_text()
    line = text[:text.index(old)].count("\n") + 1
    p.write_text(_mutate(text, old, new))
    with pytest.raises(BaselineError) as ei:
        load_baseline(p)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"{p}:{line}: "), msg
    assert why in msg, msg


def test_empty_run_sizes_are_no_runs(tmp_path: Path) -> None:
    p = tmp_path / "b.json"
    p.write_text(_mutate(runs_baseline_text(), '"runs": [2, 2]', '"runs": []'))
    assert load_baseline(p).metrics["bin@sub:lat"].runs == ()


def one_run(tmp_path: Path, name: str, samples: list[float], *, unit: str = "ns",
            better: str = "lower", extra: list[float] | None = None) -> Path:
    mets = [metric("b", "x", "t", samples, unit=unit, better=better)]
    if extra is not None:
        mets.append(metric("b", "x", "u", extra))
    data = results({"b@x": record("pass", mets)}, fingerprint=FP.to_json())
    return write_results(tmp_path / name, data)


def test_update_records_one_run_and_append_adds_one(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    update_baseline(one_run(tmp_path, "r0", [1.0, 2.0], extra=[7.0]), out)  # a fresh update
    assert load_baseline(out).metrics["b@x:t"].runs == (2,)
    update_baseline(one_run(tmp_path, "r1", [3.0]), out, append=True)
    update_baseline(one_run(tmp_path, "r2", [4.0, 5.0, 6.0]), out, append=True)
    b = load_baseline(out)
    m = b.metrics["b@x:t"]
    assert m.samples == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0) and m.runs == (2, 1, 3)
    assert m.run_groups == ((1.0, 2.0), (3.0,), (4.0, 5.0, 6.0))
    assert b.metrics["b@x:u"].runs == (1,)  # not measured since: kept as it was
    assert '"runs": [2, 1, 3]' in out.read_text()
    # without append the run replaces the metric: one run again
    update_baseline(one_run(tmp_path, "r3", [8.0]), out)
    assert load_baseline(out).metrics["b@x:t"].runs == (1,)
    # append to a metric whose unit changed: replaced, one run
    update_baseline(one_run(tmp_path, "r4", [9.0, 9.5], unit="us"), out, append=True)
    m = load_baseline(out).metrics["b@x:t"]
    assert (m.unit, m.samples, m.runs) == ("us", (9.0, 9.5), (2,))


def test_append_to_a_file_without_runs(tmp_path: Path) -> None:
    """A file of before, pooled from unknown runs: its samples stay, in no
    run; the runs appended after are recorded."""
    out = tmp_path / "b.json"
    write_baseline(baseline_of({"b@x:t": BaselineMetric("ns", "lower", (1.0, 2.0, 3.0))}), out)
    assert '"runs"' not in out.read_text()
    update_baseline(one_run(tmp_path, "r1", [4.0, 5.0]), out, append=True)
    m = load_baseline(out).metrics["b@x:t"]
    assert m.samples == (1.0, 2.0, 3.0, 4.0, 5.0) and m.runs == (2,) and m.ungrouped == 3
    assert m.run_groups == ((4.0, 5.0),)


# ----------------------------------------------------------------- verdicts


def compare(base: list[float], run: list[float], better: str = "lower",
            **kw: Any) -> bl.Comparison:
    b = baseline_of({"t@s:m": BaselineMetric("ns", better, tuple(base))})
    recs = {"t@s": record("pass", [metric("t", "s", "m", run, better=better)])}
    (c,) = compare_run(recs, b, **kw)
    return c


def test_regression_and_improvement() -> None:
    c = compare(BASE, scaled(BASE, 1.10))
    assert c.verdict == "regression" and c.p_value is not None and c.p_value < 0.01
    assert c.rel_change == pytest.approx(0.10) and c.quartile_change == pytest.approx(0.10)
    assert c.shift is not None and c.shift == pytest.approx(0.10, abs=0.01)
    m = statistics.median(BASE)  # the standard library's, not the code under test
    q1 = statistics.quantiles(BASE, n=4, method="inclusive")[0]
    assert c.quartile_base == pytest.approx(q1)
    assert c.explain() == (
        f"regression: median {m:.4g} ns -> {m * 1.1:.4g} ns (+10.00%, lower is better); "
        f"25th percentile {q1:.4g} ns -> {q1 * 1.1:.4g} ns (+10.00%); Mann-Whitney one-sided "
        f"p={c.p_value:.2g} (exact, n=30/30): p < 0.01 and the 25th percentile moved by 2.5% "
        "or more")
    assert compare(BASE, scaled(BASE, 0.90)).verdict == "improvement"
    # higher is better: the same data read the other way, on the 75th percentile
    c = compare(BASE, scaled(BASE, 1.10), better="higher")
    assert c.verdict == "improvement" and "75th percentile" in c.explain()
    assert c.quartile_base == pytest.approx(statistics.quantiles(BASE, n=4, method="inclusive")[2])
    assert compare(BASE, scaled(BASE, 0.90), better="higher").verdict == "regression"


def test_same_samples_are_unchanged() -> None:
    c = compare(BASE, list(reversed(BASE)))
    assert c.verdict == "unchanged" and c.p_value is not None and c.p_value > 0.4
    assert "no evidence of a change" in c.explain()


def test_significant_but_too_small_to_matter() -> None:
    """Run-to-run drift: every sample 2% slower is certain (p ~ 1e-17) and
    below min_effect / 2."""
    c = compare(TIGHT, scaled(TIGHT, 1.02))
    assert c.p_value is not None and c.p_value < 1e-10
    assert c.verdict == "unchanged"
    assert "significant, but the 25th percentile moved by less than 2.5%" in c.explain()
    assert compare(TIGHT, scaled(TIGHT, 1.03)).verdict == "regression"


def test_a_true_min_effect_change_observed_below_it_is_flagged() -> None:
    """The threshold is half of min_effect: a true +5% seen as +4% after a
    drift of -1% is still caught; a rule at min_effect would miss it."""
    c = compare(BASE, scaled(BASE, 1.04))
    assert c.verdict == "regression"
    assert compare(BASE, scaled(BASE, 1.04), min_effect=0.10).verdict == "unchanged"


def test_interference_on_part_of_the_run_is_not_a_regression() -> None:
    """A co-tenant preempting every other sample makes it 50% slower: the
    run is significantly slower and its median moved, but the fastest
    quarter did not: unchanged. A real slowdown moves every sample."""
    run = [x * 1.5 if i % 2 else x for i, x in enumerate(TIGHT)]
    c = compare(TIGHT, run)
    assert c.p_value is not None and c.p_value < 0.01
    assert c.rel_change is not None and c.rel_change > 0.05
    assert c.quartile_change is not None and abs(c.quartile_change) < 0.005
    assert c.verdict == "unchanged"
    # the same run with a real +5% under the interference
    assert compare(TIGHT, scaled(run, 1.05)).verdict == "regression"


def test_insufficient_samples() -> None:
    c = compare([1, 2, 3, 4], [10, 20, 30, 40])  # 4 + 4: at best p = 1/70
    assert c.verdict == "insufficient" and c.p_value is None
    assert "4 + 4 samples cannot give p < 0.01" in c.explain()
    # 5 + 5 entirely apart reach p = 1/252
    c = compare([1, 2, 3, 4, 5], [10, 20, 30, 40, 50])
    assert c.verdict == "regression" and c.p_value == pytest.approx(1 / 252)
    assert c.method == "exact"


def test_zero_baseline_median() -> None:
    c = compare([0.0] * 10, [1.0] * 10)
    assert c.verdict == "regression" and c.rel_change == math.inf
    j = c.to_json()
    assert j["rel_change"] is None
    json.dumps(j, allow_nan=False)


def test_new_missing_and_unselected() -> None:
    b = baseline_of({
        "t@s:m": BaselineMetric("ns", "lower", tuple(BASE)),
        "t@s:gone": BaselineMetric("ns", "lower", (1.0, 2.0)),
        "t@skipped:m": BaselineMetric("ns", "lower", (1.0,)),
        "t@elsewhere:m": BaselineMetric("ns", "lower", (1.0,)),  # not in this run at all
        "t@s:unit": BaselineMetric("us", "lower", (1.0,)),
    })
    recs = {"t@s": record("pass", [metric("t", "s", "m", BASE), metric("t", "s", "fresh", [5.0]),
                                   metric("t", "s", "unit", [1.0])]),
            "t@skipped": record("skip")}
    got = {c.key: c for c in compare_run(recs, b)}
    assert set(got) == {"t@s:m", "t@s:gone", "t@s:fresh", "t@skipped:m", "t@s:unit"}
    assert got["t@s:fresh"].verdict == "new" and got["t@s:fresh"].n_base == 0
    assert got["t@s:gone"].verdict == "missing"
    assert "t@s passed without recording it" in got["t@s:gone"].explain()
    assert got["t@skipped:m"].verdict == "missing"
    assert "ended skip" in got["t@skipped:m"].explain()
    assert got["t@s:unit"].verdict == "new" and "changed from 'us'" in got["t@s:unit"].explain()
    assert got["t@s:m"].verdict == "unchanged"
    for c in got.values():
        j = c.to_json()
        assert j["verdict"] in bl.VERDICTS and "\n" not in j["explain"]
        json.dumps(j, allow_nan=False)


def test_compare_run_rejects_bad_arguments() -> None:
    b = baseline_of({})
    with pytest.raises(ValueError):
        compare_run({}, b, alpha=0)
    with pytest.raises(ValueError):
        compare_run({}, b, min_effect=math.nan)
    with pytest.raises(BaselineError, match=r'tests\["t@s"\].metrics\[0\].samples: empty'):
        compare_run({"t@s": record("pass", [metric("t", "s", "m", [])])}, b)


# ---------------------------------------------------- between-run drift


def runs_of(offsets: list[float], base: list[float] = TIGHT) -> tuple[list[float], tuple[int, ...]]:
    """Clean runs of TIGHT (0.5% wide), each run offset as a whole."""
    samples = [x * f for f in offsets for x in base]
    return samples, tuple(len(base) for _ in offsets)


def compare_runs(offsets: list[float], run: list[float], better: str = "lower",
                 **kw: Any) -> bl.Comparison:
    samples, runs = runs_of(offsets)
    b = baseline_of({"t@s:m": BaselineMetric("ns", better, tuple(samples), runs)})
    recs = {"t@s": record("pass", [metric("t", "s", "m", run, better=better)])}
    (c,) = compare_run(recs, b, **kw)
    return c


DRIFTY = [1.00, 1.06, 0.95, 1.03, 0.98]  # 5 clean runs that drift by up to 6%


def test_a_shift_within_the_drift_is_not_a_regression() -> None:
    run = scaled(TIGHT, 1.06)  # exactly like one of the baseline's own runs
    c = compare_runs(DRIFTY, run)
    assert c.p_value is not None and c.p_value < 1e-10  # certain, and meaningless
    assert c.quartile_change is not None and c.quartile_change > 0.05
    assert c.verdict == "unchanged"
    # the pooled 25th percentile, and how far each run's own lay from it
    samples, runs = runs_of(DRIFTY)
    q = statistics.quantiles(samples, n=4, method="inclusive")[0]
    spread = max(abs(statistics.quantiles(scaled(TIGHT, f), n=4, method="inclusive")[0] - q) / q
                 for f in DRIFTY)
    assert c.quartile_base == pytest.approx(q)
    assert c.base_runs == 5 and c.drift == pytest.approx(spread)
    assert c.drift_factor == bl.drift_factor(5) == 2.17
    assert c.limit == pytest.approx(2.17 * spread) and c.limit > 0.05
    med = statistics.median(samples)
    assert c.drift_median == pytest.approx(max(abs(statistics.median(scaled(TIGHT, f)) - med)
                                               for f in DRIFTY) / med)
    e = c.explain()
    assert c.drift_median is not None
    assert "significant, but the 25th percentile moved by no more than " \
        f"{100 * c.limit:.3g}%; limit {100 * c.limit:.3g}% = the larger of min_effect/2 = 2.5% " \
        f"and 2.17 x the between-run drift {100 * spread:.3g}% (the farthest any of the 5 " \
        "baseline runs' 25th percentiles lay from the pooled one; their medians: " \
        f"{100 * c.drift_median:.3g}%)" in e, e
    assert "\n" not in e and c.note == ""
    j = c.to_json()
    assert (j["baseline_runs"], j["drift_factor"]) == (5, 2.17)
    assert j["drift"] == pytest.approx(spread) and j["limit"] == pytest.approx(c.limit)
    # the rule without the runs (the same samples pooled) calls it a regression
    assert compare(samples, run).verdict == "regression"
    # and an improvement within the drift is no improvement either
    assert compare_runs(DRIFTY, scaled(TIGHT, 0.95)).verdict == "unchanged"
    assert compare(samples, scaled(TIGHT, 0.95)).verdict == "improvement"


def test_a_shift_far_beyond_the_drift_is_flagged() -> None:
    c = compare_runs(DRIFTY, scaled(TIGHT, 1.6))
    assert c.verdict == "regression" and c.limit > 0.05
    assert c.quartile_change is not None and c.quartile_change > c.limit
    assert f"p < 0.01 and the 25th percentile moved by more than {100 * c.limit:.3g}%; limit " \
        in c.explain()
    assert compare_runs(DRIFTY, scaled(TIGHT, 0.6)).verdict == "improvement"
    # higher is better: the 75th percentile, the other way round
    c = compare_runs(DRIFTY, scaled(TIGHT, 0.6), better="higher")
    assert c.verdict == "regression" and "75th percentiles lay from the pooled" in c.explain()
    assert compare_runs(DRIFTY, scaled(TIGHT, 1.06), better="higher").verdict == "unchanged"
    assert compare_runs(DRIFTY, scaled(TIGHT, 1.6), better="higher").verdict == "improvement"


def test_small_drift_leaves_min_effect_in_charge() -> None:
    """Runs that agree within 0.3%: k x drift is below min_effect / 2, which
    decides as before: a 5% change is caught, 1.5% is not."""
    quiet = [1.0, 1.003, 0.998, 1.001, 0.999]
    c = compare_runs(quiet, scaled(TIGHT, 1.05))
    assert c.drift is not None and c.drift_factor is not None
    assert c.drift_factor * c.drift < 0.025 and c.limit == 0.025
    assert c.verdict == "regression"
    assert compare_runs(quiet, scaled(TIGHT, 1.015)).verdict == "unchanged"
    assert compare_runs(quiet, scaled(TIGHT, 0.95)).verdict == "improvement"


def test_the_drift_limit_scales_with_the_number_of_runs() -> None:
    """The same largest deviation counts for more with more runs."""
    three = compare_runs([1.0, 1.02, 0.99], scaled(TIGHT, 1.10))
    ten = compare_runs([1.0, 1.02, 0.99, 1.0, 1.01, 1.0, 0.995, 1.005, 1.0, 1.01],
                       scaled(TIGHT, 1.10))
    assert three.drift_factor == 4.53 and ten.drift_factor == 1.36
    assert three.verdict == "unchanged" and ten.verdict == "regression"


@pytest.mark.parametrize("n", [1, 2])
def test_fewer_than_three_runs_say_the_drift_is_unknown(n: int) -> None:
    samples, runs = runs_of(DRIFTY[:n])
    for f, verdict in ((1.06, "regression"), (1.0, "unchanged")):
        c = compare_runs(DRIFTY[:n], scaled(TIGHT, f))
        assert c.verdict == verdict == compare(samples, scaled(TIGHT, f)).verdict
        assert c.base_runs == n and c.drift is None and c.limit == 0.025
        note = f"baseline has {n} run(s): between-run drift unknown"
        assert c.note == note and c.explain().endswith(f"; {note}")
        assert c.to_json()["drift"] is None and c.to_json()["baseline_runs"] == n


def test_a_baseline_without_runs_compares_as_before(tmp_path: Path) -> None:
    """A file written before run sizes: loads, same verdicts, same figures,
    same explain line; only the note says that the drift is unknown."""
    samples, _ = runs_of(DRIFTY)
    text = bl._render_baseline(baseline_of({"t@s:m": BaselineMetric("ns", "lower",
                                                                   tuple(samples))}))
    assert '"runs"' not in text and '"version": 1' in text
    p = tmp_path / "old.json"
    p.write_text(text)
    b = load_baseline(p)
    assert b.metrics["t@s:m"].runs == ()
    for f, verdict in ((1.06, "regression"), (0.95, "improvement"), (1.0, "unchanged")):
        recs = {"t@s": record("pass", [metric("t", "s", "m", scaled(TIGHT, f))])}
        (c,) = compare_run(recs, b)
        old = compare(samples, scaled(TIGHT, f))
        assert c.verdict == old.verdict == verdict
        assert c.explain() == old.explain() and "drift" not in c.explain()
        assert (c.p_value, c.quartile_change, c.limit) == (old.p_value, old.quartile_change,
                                                          0.025)
        assert c.base_runs == 0 and c.drift is None
        assert c.note == "baseline records no runs: between-run drift unknown"
    # samples of unrecorded runs before 2 recorded ones
    m = BaselineMetric("ns", "lower", tuple(samples), (50, 50))
    (c,) = compare_run({"t@s": record("pass", [metric("t", "s", "m", TIGHT)])},
                       baseline_of({"t@s:m": m}))
    assert c.note == ("baseline has 2 run(s) (and 150 samples of unrecorded runs): "
                      "between-run drift unknown")


def test_drift_with_a_zero_quartile() -> None:
    assert bl.run_spread([[0.0, 0.0], [1.0, 1.0], [0.0]], 0.0, 0.25) == math.inf
    assert bl.run_spread([[0.0], [0.0], [0.0]], 0.0, 0.5) == 0.0
    assert bl.run_spread([[9.0, 10.0, 11.0], [12.0]], 10.0, 0.5) == pytest.approx(0.2)
    c = compare_runs([1.0, 1.0, 1.0], [0.0] * 50)  # identical runs: no drift
    assert c.drift is not None and c.drift < 1e-4 and c.limit == 0.025
    assert c.verdict == "improvement"
    # runs whose quartile is 0 and 1: any change is within the drift
    samples = [0.0] * 20 + [1.0] * 10 + [0.0] * 10
    b = baseline_of({"t@s:m": BaselineMetric("ns", "lower", tuple(samples), (10, 10, 10, 10))})
    (c,) = compare_run({"t@s": record("pass", [metric("t", "s", "m", [5.0] * 10)])}, b)
    assert c.drift == math.inf and c.limit == math.inf and c.verdict == "unchanged"
    j = c.to_json()
    assert j["drift"] is None and j["limit"] is None
    json.dumps(j, allow_nan=False)
    assert "\n" not in c.explain()


def test_drift_factor_table() -> None:
    ks = [bl.drift_factor(k) for k in range(3, 31)]
    assert ks == sorted(ks, reverse=True) and ks[0] == 4.53 and ks[-1] == 0.94
    assert bl.drift_factor(31) == bl.drift_factor(500) == 0.94
    for k in (0, 1, 2):
        with pytest.raises(ValueError):
            bl.drift_factor(k)


@pytest.mark.parametrize("runs", [3, 5, 10])
def test_drift_factor_is_the_level_point(runs: int) -> None:
    """Re-derive k(K) (fewer draws than the table's): the k at which
    E[1 - Phi(k M / sqrt(1 + 1/K))] = DRIFT_LEVEL, M the largest deviation
    of K normal draws from their mean."""
    import random
    rng = random.Random(runs)
    norm = statistics.NormalDist()
    scale = math.sqrt(1 + 1 / runs)
    ms = []
    for _ in range(20000):
        xs = [rng.gauss(0.0, 1.0) for _ in range(runs)]
        mean = sum(xs) / runs
        ms.append(max(abs(x - mean) for x in xs) / scale)

    def tail(k: float) -> float:
        return sum(1.0 - norm.cdf(k * m) for m in ms) / len(ms)

    k = bl.drift_factor(runs)
    assert tail(k * 0.93) > bl.DRIFT_LEVEL > tail(k * 1.07)


def test_clean_runs_of_a_drifting_machine_are_rarely_flagged() -> None:
    """The whole rule on simulated runs: 50 samples each with 0.5% noise,
    runs drifting by 3% (normal), baselines of 5 runs. Against the pooled
    samples alone about half the clean runs are flagged; with the drift
    limit about 2.5% a direction (the level of k; over 600 trials 1.8-2.5%
    as regressions, 3-3.7% either way), and a slowdown of 18% (6 drifts) is
    caught (95% over 600 trials)."""
    import random
    rng = random.Random(11)

    def run(offset: float) -> list[float]:
        return [1000.0 * (1 + offset) * (1 + rng.gauss(0.0, 0.005)) for _ in range(50)]

    regressions = flagged = old_flagged = detected = 0
    trials = 150
    for _ in range(trials):
        groups = [run(rng.gauss(0.0, 0.03)) for _ in range(5)]
        samples = tuple(x for g in groups for x in g)
        b = baseline_of({"t@s:m": BaselineMetric("ns", "lower", samples, (50,) * 5)})
        b0 = baseline_of({"t@s:m": BaselineMetric("ns", "lower", samples)})
        clean = {"t@s": record("pass", [metric("t", "s", "m", run(rng.gauss(0.0, 0.03)))])}
        slow = {"t@s": record("pass", [metric("t", "s", "m",
                                              run(0.18 + rng.gauss(0.0, 0.03)))])}
        verdict = compare_run(clean, b)[0].verdict
        regressions += verdict == "regression"
        flagged += verdict != "unchanged"
        old_flagged += compare_run(clean, b0)[0].verdict != "unchanged"
        detected += compare_run(slow, b)[0].verdict == "regression"
    assert old_flagged > trials // 3
    assert regressions <= trials * 0.06 and flagged <= trials * 0.08
    assert detected >= trials * 0.85


# --------------------------------------------------------------- A vs B


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
        "b@same": record("pass", [metric("b", "same", "lat", scaled(BASE, 1.2))]),
        "b@skip": record("skip"),
        "b@added": record("pass"),
    }))
    text = compare_results(a, b)
    assert "tests: 1 fixed, 1 regressed, 1 changed, 1 new, 1 removed; metrics: 1 regression" in text
    assert "fixed (1):\n  b@fixed: fail -> pass\n" in text
    assert "regressed (1):\n  b@broke: pass -> crash: killed by SIGSEGV second line\n" in text
    assert "changed (1):\n  b@skip: pass -> skip\n" in text
    assert "new (1):\n  b@added: pass\n" in text
    assert "removed (1):\n  b@gone: pass\n" in text
    m = statistics.median(BASE)
    assert f"  b@same:lat: regression: median {m:.4g} ns -> {m * 1.2:.4g} ns (+20.00%" in text
    same = compare_results(a, a)
    assert "0 fixed, 0 regressed" in same and "b@same:lat: unchanged" in same
    # A is one run: the drift between runs is unknown, and said so
    assert "b@same:lat: unchanged" in same
    assert "; baseline has 1 run(s): between-run drift unknown\n" in same


def test_compare_results_bad_input(tmp_path: Path) -> None:
    a = write_results(tmp_path / "a", results({}))
    (tmp_path / "b").mkdir()
    with pytest.raises(BaselineError, match=r"^\S+/b/results\.json: cannot read results"):
        compare_results(a, tmp_path / "b")
    (tmp_path / "b" / "results.json").write_text('{"format": "gpuconform-results",\n"tests": []}')
    with pytest.raises(BaselineError, match=r"b/results\.json:2: tests: is array, not object"):
        compare_results(a, tmp_path / "b")


# ------------------------------------------------------------- real runs


def gpuconform(selftests: Selftests, results_dir: Path, keyword: str,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO_ROOT / "gpuconform"), "run", "--build", str(selftests.build),
         "--selftest", "-k", keyword, "--results", str(results_dir),
         *RUN_ISOLATED],
        env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300)


def test_spin_through_the_runner(selftests: Selftests, tmp_path: Path) -> None:
    """The real selftest: its slowdown knob scales the work (the iteration
    count it prints), its 50 samples land in a baseline and compare. No
    verdict is asserted: that would be a wall-clock threshold."""
    p = gpuconform(selftests, tmp_path / "r", "spin",
                   {"GPUCONFORM_SELFTEST_SLOWDOWN": "1.05"})
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    rec = data["tests"]["selftest_metrics@spin"]
    assert "50 samples of 18900000 iterations (slowdown 1.05)" in rec["out"]
    out = update_baseline(tmp_path / "r", tmp_path / "b.json")
    b = load_baseline(out)
    assert len(b.metrics["selftest_metrics@spin:spin"].samples) == 50
    assert b.durations["selftest_metrics@spin"] > 0
    (c,) = compare_run(data["tests"], b)
    assert (c.key, c.n_base, c.n_run, c.unit, c.better) == \
        ("selftest_metrics@spin:spin", 50, 50, "ns", "lower")
    assert c.verdict == "unchanged" and c.p_value is not None and c.p_value > 0.4  # itself


def test_spin_refuses_a_bad_knob(selftests: Selftests) -> None:
    p = subprocess.run([str(selftests.binary("selftest_metrics")), "--run-subtest", "spin"],
                       env={**os.environ, "GPUCONFORM_SELFTEST_SLOWDOWN": "fast"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 98
    assert '$GPUCONFORM_SELFTEST_SLOWDOWN="fast": not a factor' in p.stdout + p.stderr

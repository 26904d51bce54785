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
        [sys.executable, str(REPO_ROOT / "gpuconform"), "run", "--build", str(selftests.build),
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

"""baseline.py: the version 2 file and each of its one-line errors, finding
one, the fingerprint check, update from clean runs, and a run judged against
it; and the real selftest_metrics@spin through the runner."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from gc_testutil import HANG_GUARD_S, REPO_ROOT, CliRun, Selftests, gate_baseline, run_launcher
from gpuconform.perf import baseline as bl
from gpuconform.perf import gate
from gpuconform.core import jsondoc
from gpuconform.perf.baseline import (
    BaselineError,
    check_fingerprint,
    find_baseline,
    load_baseline,
    write_baseline,
)
from gpuconform.perf.baseline_update import update_baseline
from gpuconform.core.metrickey import MetricKey
from gpuconform.perf.scope import catalogue_of, labeler, node_label
from gpuconform.perf.judge import compare_run
from gpuconform.core.fingerprint import Fingerprint

FP = Fingerprint("1x NVIDIA H100 80GB HBM3", "nvidia 550.54.15", "cuda 12.4", "6.1", "x86_64",
                 "AMD EPYC 7763", "6.1.0-18-amd64")
OTHER = Fingerprint(**{**FP.to_json(), "gpu_model": "1x NVIDIA L4"})

# `gpuconform run` options: no checked-in baseline nor other jobs' kernel messages
# may decide these runs
RUN_ISOLATED = ["--no-baseline", "--kmsg", "off", "--taint-file", "off"]


def metric(test: str, sub: str, name: str, samples: list[float], *, dyn: str | None = None,
           unit: str = "ns", better: str = "lower") -> dict[str, Any]:
    return {"test": test, "subtest": sub, "dynamic": dyn, "name": name, "unit": unit,
            "better": better, "samples": samples}


def record(result: str = "pass", metrics: list[dict[str, Any]] | None = None,
           duration: float = 1.0, dynamic: dict[str, str] | None = None,
           reason: str = "", expected: bool | None = None) -> dict[str, Any]:
    rec = {"result": result, "reason": reason, "duration": duration, "metrics": metrics or [],
           "dynamic": {k: {"result": v, "reason": "", "time": None}
                       for k, v in (dynamic or {}).items()}}
    if expected is not None:
        rec["expected"] = expected
    return rec


def results(tests: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"format": "gpuconform-results", "version": 1, "run": {}, "tests": tests,
            "totals": {}, **extra}


def write_results(d: Path, data: dict[str, Any]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "results.json").write_text(json.dumps(data, indent=1))
    return d


RUNS = [[100.0, 101.0, 105.0], [100.5, 101.5, 109.0], [99.8, 100.9, 104.0],
        [100.2, 100.7, 111.0], [100.1, 101.2, 103.0]]  # good-half means 100.5 +- 0.4%


def good() -> Any:
    return gate_baseline({
        "bin@sub:lat": ("ns", "lower", RUNS),
        "bin@sub@gpu0:bw": ("MB/s", "higher", [[10.0, 11.0], [10.5, 11.5], [9.0, 12.0]]),
        "bin@sub:noisy": ("ns", "lower", [[60.0], [90.0], [122.0], [65.0], [70.0]]),
    }, FP.to_json(), {"bin@sub": 1.25, "bin@other": 0.0})


def good_text() -> str:
    return bl._render(good())


# ----------------------------------------------------------------- format


def test_round_trip_and_what_a_reviewer_sees(tmp_path: Path) -> None:
    p = write_baseline(good(), tmp_path / "b.json")
    b = load_baseline(p)
    assert b.to_json() == good().to_json()
    assert b.durations == {"bin@sub": 1.25, "bin@other": 0.0}
    assert Fingerprint.from_json(b.fingerprint) == FP
    j = json.loads(p.read_text())
    assert (j["format"], j["version"], j["gate"]["family"]) == ("gpuconform-baseline", 3, 3)
    assert j["summary"] == ["run", "n", "min", "p25", "p50", "p75", "max", "g", "copies"]
    lat = j["metrics"]["bin@sub:lat"]
    assert lat["runs"][0] == [0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, []]
    assert lat["res"] == 0.1 and "trend" not in lat and lat["limit"] == pytest.approx(0.025)
    assert j["metrics"]["bin@sub:noisy"]["trend"].startswith("MDE ")
    assert "3 run(s)" not in p.read_text()
    # one run and one metric a line: a diff of a refreshed baseline reads line by line
    lines = p.read_text().splitlines()
    assert sum(1 for x in lines if x.startswith('  "bin@sub') and '"unit"' in x) == 3
    assert sum(1 for x in lines if x.startswith('  {"source"')) == 5


def test_a_version_2_file_reads_each_run_as_one_gpu(tmp_path: Path) -> None:
    text = good_text().replace('"version": 3', '"version": 2').replace(', "copies"]', ']')
    text = text.replace(", []]", "]")
    p = tmp_path / "v2.json"
    p.write_text(text)
    b = load_baseline(p)
    assert b.metrics["bin@sub:lat"].copies == [()] * 5
    assert b.assessments() == good().assessments()


def test_copies_round_trip_and_widen_a_one_gpu_night(tmp_path: Path) -> None:
    e = math.exp
    runs = tuple(gate.RunSummary(i, 3, 90.0, 95.0, 100.0, 105.0, 110.0, g,
                                 (round(g * e(0.02), 4), round(g * e(-0.02), 4)))
                 for i, g in enumerate([100.0, 100.3, 99.8, 100.1, 100.2]))
    runs = tuple(dataclasses.replace(r, g=sum(r.copies) / 2) for r in runs)
    b = good()
    b.metrics["bin@sub:two"] = bl.BaselineMetric("ns", "lower", runs, 0.1)
    b = load_baseline(write_baseline(b, tmp_path / "b.json"))
    assert b.metrics["bin@sub:two"].runs == runs
    one, two = b.assessments(1)["bin@sub:two"], b.assessments(2)["bin@sub:two"]
    assert one.within == pytest.approx(0.02 * math.sqrt(2), rel=1e-3) and two.within is None
    assert one.limit > two.limit  # type: ignore[operator]
    # the file states the one-GPU night's
    j = json.loads((tmp_path / "b.json").read_text())["metrics"]["bin@sub:two"]
    assert j["limit"] == pytest.approx(one.limit, rel=1e-3)


def _mutate(old: str, new: str) -> Callable[[str], str]:
    def f(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return f


LAT_RUN0 = "[0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, []]"


def _line_of(text: str, needle: str) -> int:
    return next(i for i, x in enumerate(text.splitlines(), 1) if needle in x)


# (mutation of the good file, the line's needle (None: any line), what the message says)
BAD_FILES: list[tuple[Callable[[str], str], str | None, str]] = [
    (lambda t: t[: len(t) // 2], None, "malformed baseline JSON"),
    (_mutate('"gpuconform-baseline"', '"gpuconform-results"'), '"format"',
     "format: unknown format"),
    (_mutate('"version": 3', '"version": 1'), '"version"',
     "version: a version 1 baseline (every sample of every run); this runner reads versions 2 "
     "and 3"),
    (_mutate('"version": 3', '"version": 4'), '"version"', "unknown version 4"),
    (_mutate('"version": 3', '"version": true'), '"version"', "unknown version true"),
    (_mutate('"version": 3', '"version": 2'), '"summary"', "is not version 2's summary"),
    (_mutate('"created": "2026-01-01T00:00:00Z"', '"created": 5'), '"created"',
     "created: is number, not string"),
    (_mutate('"alpha": 0.05', '"alpha": 0.7'), '"gate"', "gate.alpha: 0.7 is outside (0.0, 0.5)"),
    (_mutate('"power": 0.95, ', ''), '"gate"', "gate: missing field 'power'"),
    (_mutate('"family": 3', '"family": 4'), '"gate"',
     "gate.family: 4 does not follow from the metrics (3 of them can gate)"),
    (_mutate('"p25", "p50"', '"p50", "p25"'), '"summary"', "is not version 3's summary"),
    (_mutate('"host": "host1"', '"host": 1'), '"host": 1', "runs[1].host: is number"),
    (_mutate('"durations": {', '"durations_": {'), None, "missing field 'durations'"),
    (_mutate(LAT_RUN0, "[0, 3, 100.0, 100.5, NaN, 103.0, 105.0, 100.5, []]"), '"bin@sub:lat"',
     'metrics["bin@sub:lat"].runs[0][4]: p50 is not finite'),
    (_mutate(LAT_RUN0, "[0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5]"), '"bin@sub:lat"',
     'runs[0]: is array, not an array of the 9 summary fields'),
    (_mutate(LAT_RUN0, "[0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, [100.5]]"),
     '"bin@sub:lat"', 'runs[0][8]: copies is array [100.5], not an array of each GPU'),
    (_mutate(LAT_RUN0, "[0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, {}]"),
     '"bin@sub:lat"', 'runs[0][8]: copies is object {}, not an array'),
    (_mutate(LAT_RUN0, "[0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, [100.0, 102.0]]"),
     '"bin@sub:lat"', "runs[0][8]: the copies' mean 101 is not the run's g 100.5"),
    (_mutate(LAT_RUN0, '[0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, [100.0, "x"]]'),
     '"bin@sub:lat"', "runs[0][8][1]: copy is string"),
    (_mutate(LAT_RUN0, "[0, 3, 100.0, 102.5, 101.0, 103.0, 105.0, 100.5, []]"), '"bin@sub:lat"',
     "runs[0]: min <= p25 <= p50 <= p75 <= max does not hold"),
    (_mutate(LAT_RUN0, "[0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 99.0, []]"), '"bin@sub:lat"',
     "runs[0][7]: g 99.0 is outside [min, max]"),
    (_mutate(LAT_RUN0, "[9, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, []]"), '"bin@sub:lat"',
     "runs[0][0]: run 9 is not one of the 5 runs"),
    (_mutate(LAT_RUN0, "[1, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, []]"), '"bin@sub:lat"',
     "runs: a run appears twice: [1, 1, 2, 3, 4]"),
    (_mutate(LAT_RUN0, "[0, 0, 100.0, 100.5, 101.0, 103.0, 105.0, 100.5, []]"), '"bin@sub:lat"',
     "runs[0][1]: n is number 0, not an integer >= 1"),
    (_mutate('"bin@sub:lat"', '"binsub:lat"'), "binsub:lat", "metric key is not"),
    (_mutate('"better": "higher"', '"better": "up"'), '"up"', 'better: is "up", not'),
    (_mutate(LAT_RUN0, "[0, 3, 100.0, 100.5, 101.0, 103.0, 105.0, 101.5, []]"), '"bin@sub:lat"',
     'metrics["bin@sub:lat"].mde: 0.02966 does not follow from its runs (they give 0.0336)'),
]


@pytest.mark.parametrize("mutate,needle,why", BAD_FILES)
def test_bad_files_give_one_line_naming_the_line(tmp_path: Path, mutate: Any, needle: str | None,
                                                 why: str) -> None:
    text = mutate(good_text())
    p = tmp_path / "b.json"
    p.write_text(text)
    with pytest.raises(BaselineError) as ei:
        load_baseline(p)
    msg = str(ei.value)
    assert "\n" not in msg
    where = f"{p}:{_line_of(text, needle)}: " if needle else f"{p}:"
    assert msg.startswith(where), msg
    assert why in msg, msg


def test_hand_edits_that_change_the_gate_are_refused(tmp_path: Path) -> None:
    """Marking a noisy metric as gating, or a gating one as trend only, by hand."""
    j = json.loads(good_text())
    trend = j["metrics"]["bin@sub:noisy"].pop("trend")
    p = tmp_path / "b.json"
    p.write_text(json.dumps(j, indent=1))
    with pytest.raises(BaselineError, match=r'metrics\["bin@sub:noisy"\]\.runs: the file has it '
                       r"gated, its runs say otherwise \(MDE"):
        load_baseline(p)
    j["metrics"]["bin@sub:noisy"]["trend"] = trend
    j["metrics"]["bin@sub:lat"]["trend"] = "by hand"
    p.write_text(json.dumps(j, indent=1))
    with pytest.raises(BaselineError, match=r'bin@sub:lat"\]\.trend: the file has it kept for '
                       r"trends, its runs say otherwise \(it gates\)"):
        load_baseline(p)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"nope\.json: cannot read baseline"):
        load_baseline(tmp_path / "nope.json")


def test_locate_points_at_the_field() -> None:
    text = '{\n "a": [1,\n  2, {"b":\n   3}],\n "c": "x"\n}'
    assert jsondoc._locate(text, ["a"]) == 2
    assert jsondoc._locate(text, ["a", 1]) == 3
    assert jsondoc._locate(text, ["a", 2, "b"]) == 4
    assert jsondoc._locate(text, ["c"]) == 5
    assert jsondoc._locate(text, ["zz"]) is None
    assert jsondoc._locate(text, ["a", 7]) is None


# ------------------------------------------------------ find, fingerprint


def test_find_baseline(tmp_path: Path) -> None:
    d1, d2 = tmp_path / "one", tmp_path / "two"
    d1.mkdir()
    d2.mkdir()
    assert find_baseline(FP, [d1, d2]) is None
    (d2 / f"{FP.key()}.json").write_text(good_text())
    assert find_baseline(FP, [d1, d2]) == d2 / f"{FP.key()}.json"
    (d1 / f"{FP.key()}.json").write_text(good_text())
    assert find_baseline(FP, [d1, d2]) == d1 / f"{FP.key()}.json"
    assert find_baseline(OTHER, [d1, d2]) is None


def test_a_baseline_of_another_fingerprint_is_named(tmp_path: Path) -> None:
    """A file copied under this machine's key: one line naming it and the line."""
    p = write_baseline(good(), tmp_path / f"{OTHER.key()}.json")
    b = load_baseline(p)
    check_fingerprint(b, FP)
    with pytest.raises(BaselineError) as ei:
        check_fingerprint(b, OTHER)
    assert str(ei.value).startswith(f"{p}:4: fingerprint: the baseline is for 1x NVIDIA H100 "
                                    "80GB HBM3; driver nvidia 550.54.15")
    assert "this machine is 1x NVIDIA L4;" in str(ei.value)


# ----------------------------------------------------------------- update


def run_data(fp: Fingerprint = FP, scale: float = 1.0, host: str = "vm") -> dict[str, Any]:
    """A run that is not clean (b@bad and b@dyn failed unexpectedly): only
    --force makes a baseline of it."""
    return results({
        "b@ok": record("pass", [metric("b", "ok", "lat", [scale * x for x in (1, 2, 3)]),
                                metric("b", "ok", "bw", [9, 8], unit="MB/s", better="higher")],
                       duration=2.5),
        "b@bad": record("fail", [metric("b", "bad", "lat", [5, 6])], duration=0.5),
        "b@known": record("fail", [metric("b", "known", "lat", [4, 5])], expected=True),
        "b@dyn": record("fail", [metric("b", "dyn", "lat", [7], dyn="gpu0"),
                                 metric("b", "dyn", "lat", [8], dyn="gpu1")],
                        dynamic={"gpu0": "pass", "gpu1": "fail"}, duration=3.0),
        "b@never": record("notrun", duration=0.0),
        "b@skipped": record("skip", duration=0.01),
    }, fingerprint=fp.to_json(), run={"start": 1.7e9, "hostname": host, "devices": ["GPU-a"],
                                      "run_id": f"{host}-{scale}"})


def clean_data(fp: Fingerprint = FP, rid: str = "c1") -> dict[str, Any]:
    return results({"b@ok": record("pass", [metric("b", "ok", "lat", [1, 2, 3])]),
                    "b@known": record("fail", [metric("b", "known", "lat", [4, 5])],
                                      expected=True)},
                   fingerprint=fp.to_json(), run={"start": 1.7e9, "run_id": rid})


def test_update_from_several_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bl, "DEFAULT_BASELINE_DIR", tmp_path / "baselines")
    dirs = [write_results(tmp_path / f"r{i}", run_data(scale=1 + i / 100, host=f"h{i}"))
            for i in range(3)]
    said: list[str] = []
    out = update_baseline(dirs, force=True, forced=said.append)
    assert out == tmp_path / "baselines" / f"{FP.key()}.json"  # the fingerprint of the runs
    b = load_baseline(out)
    # forced, each run says why it was not clean
    assert [(r.run_id, r.unclean) for r in b.runs] == \
        [(f"h{i}-{1 + i / 100}", "2 unexpected results (2 fail)") for i in range(3)]
    assert said == [f"{d / 'results.json'}: not a clean run, taken (--force): 2 unexpected "
                    "results (2 fail)" for d in dirs]
    # tests that ended as expected (passed, or failed as a rule says) and the passing
    # dynamic subtest; not an unexpected failure
    assert sorted(b.metrics) == ["b@dyn@gpu0:lat", "b@known:lat", "b@ok:bw", "b@ok:lat"]
    assert [r.run for r in b.metrics["b@ok:lat"].runs] == [0, 1, 2]
    assert [r.g for r in b.metrics["b@ok:lat"].runs] == [1.5, 1.515, 1.53]
    assert b.metrics["b@ok:bw"].runs[0].g == 9.0 and b.metrics["b@ok:bw"].better == "higher"
    assert [(r.source, r.host, r.devices) for r in b.runs] == \
        [(str(d), f"h{i}", ("GPU-a",)) for i, d in enumerate(dirs)]
    assert b.runs[0].start == "2023-11-14T22:13:20Z"
    assert b.durations == {"b@ok": 2.5, "b@bad": 0.5, "b@known": 1.0, "b@dyn": 3.0,
                           "b@skipped": 0.01}
    assert b.fingerprint == FP.to_json()


def test_update_replaces_or_appends(tmp_path: Path) -> None:
    out = tmp_path / "b.json"

    def one(name: str, metrics: dict[str, list[float]], dur: float) -> Path:
        return write_results(tmp_path / name, results(
            {f"b@{k}": record("pass", [metric("b", k, "x", v)], duration=dur)
             for k, v in metrics.items()}, fingerprint=FP.to_json(), run={"run_id": name}))

    update_baseline([one("r1", {"one": [1.0], "two": [2.0]}, 1)], out)
    update_baseline([one("r2", {"two": [3.0]}, 4)], out)  # replaces b@two's runs only
    b = load_baseline(out)
    assert [r.g for r in b.metrics["b@one:x"].runs] == [1.0]
    assert [r.g for r in b.metrics["b@two:x"].runs] == [3.0]
    assert b.durations == {"b@one": 1.0, "b@two": 4.0}
    update_baseline([one("r3", {"two": [5.0]}, 6), one("r4", {"two": [7.0]}, 8)], out,
                    append=True)
    b = load_baseline(out)
    assert [r.g for r in b.metrics["b@two:x"].runs] == [3.0, 5.0, 7.0]
    assert b.metrics["b@two:x"].res == 2.0  # the smallest step over every run
    # run 0 (r1) is still b@one's; r1's b@two was replaced: every run listed is used
    assert [r.source for r in b.runs] == [str(tmp_path / n) for n in ("r1", "r2", "r3", "r4")]
    update_baseline([one("r5", {"one": [1.5]}, 1)], out)
    b = load_baseline(out)
    assert [r.source for r in b.runs] == [str(tmp_path / n) for n in ("r2", "r3", "r4", "r5")]
    assert [r.run for r in b.metrics["b@one:x"].runs] == [3]


def test_update_refuses_mixed_fingerprints(tmp_path: Path) -> None:
    a = write_results(tmp_path / "a", clean_data(rid="a"))
    b = write_results(tmp_path / "b", clean_data(OTHER, rid="b"))
    with pytest.raises(BaselineError, match=r"b/results\.json: fingerprint: this run is 1x NVIDIA "
                       r"L4;.*the first is 1x NVIDIA H100.*one baseline is one fingerprint"):
        update_baseline([a, b], tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_update_refuses_another_machines_file(tmp_path: Path) -> None:
    out = write_baseline(good(), tmp_path / "b.json")
    before = out.read_text()
    rd = write_results(tmp_path / "r", clean_data(OTHER))
    with pytest.raises(BaselineError, match=r"b\.json:4: fingerprint: the baseline is for 1x "
                       r"NVIDIA H100.*give another output file$"):
        update_baseline(rd, out)
    assert out.read_text() == before


def test_update_without_stored_fingerprint_uses_this_machine(tmp_path: Path) -> None:
    from gpuconform.core.fingerprint import current_fingerprint
    rec = record("pass", [metric("b", "x", "t", [1])])
    rd = write_results(tmp_path / "r", results({"b@x": rec}, run={"run_id": "x"}))
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


# ------------------------------------------------------------- comparison


def night(samples: dict[str, list[float]], better: str = "lower") -> dict[str, Any]:
    """results.json records of a run that measured these bin@sub:NAME metrics."""
    mets = [metric("bin", "sub", k, v, better=better) for k, v in samples.items()]
    return {"bin@sub": record("pass", mets)}


def verdicts(b: Any, samples: dict[str, list[float]]) -> dict[str, str]:
    return {c.key: c.verdict for c in compare_run(night(samples), b)}


def test_a_night_against_the_baseline() -> None:
    b = good()
    same = verdicts(b, {"lat": RUNS[0], "noisy": [300.0]})
    assert same == {"bin@sub:lat": "unchanged", "bin@sub:noisy": "trend",
                    "bin@sub@gpu0:bw": "missing"}
    slow = [x * 1.03 for x in RUNS[0]]
    assert verdicts(b, {"lat": slow})["bin@sub:lat"] == "regression"
    fast = [x / 1.03 for x in RUNS[0]]
    assert verdicts(b, {"lat": fast})["bin@sub:lat"] == "improvement"
    # interference on the worse half of the samples does not move the statistic
    assert verdicts(b, {"lat": [100.0, 101.0, 140.0, 150.0]})["bin@sub:lat"] == "unchanged"
    (c,) = [c for c in compare_run(night({"lat": slow}), b) if c.key == "bin@sub:lat"]
    assert c.gated and c.base_runs == 5 and c.samples_base == tuple(r.g for r in
                                                                     b.metrics["bin@sub:lat"].runs)
    assert c.explain() == ("regression: good-half mean 100.6 ns (baseline, 5 runs) -> 103.5 ns "
                           "(+2.91%, lower is better); beyond the limit 2.5% (MDE 2.97%, "
                           "run-to-run spread 0.252%)")
    j = c.to_json()
    assert (j["verdict"], j["gated"], j["trend"]) == ("regression", True, None)


def test_a_one_gpu_night_is_judged_with_the_gpus_spread() -> None:
    """Runs on two GPUs 6% apart, whose means agree within 0.3%: one GPU's
    night 3% slower is what one GPU of the model does, not a regression; the
    same runs without their copies (a version 2 file) would flag it."""
    e = math.exp
    parts = [[[100 * f * e(d)] * 3 for d in (0.03, -0.03)]
             for f in (1.0, 1.003, 0.998, 1.001, 1.002)]
    runs = tuple(gate.summarize(i, p[0] + p[1], "lower", p) for i, p in enumerate(parts))
    b = gate_baseline({"bin@sub:lat": ("ns", "lower", RUNS)})
    b.metrics["bin@sub:two"] = bl.BaselineMetric("ns", "lower", runs, 0.1)
    (c,) = [c for c in compare_run(night({"two": [103.0] * 3}), b) if c.key == "bin@sub:two"]
    assert c.verdict == "unchanged" and c.gpus == 1
    assert c.within == pytest.approx(0.03 * math.sqrt(2), rel=1e-3)
    assert "GPU-to-GPU spread 4.24% for this run's 1 GPU)" in c.explain()
    v2 = tuple(dataclasses.replace(r, copies=()) for r in runs)
    b = gate_baseline({"bin@sub:lat": ("ns", "lower", RUNS)})
    b.metrics["bin@sub:two"] = bl.BaselineMetric("ns", "lower", v2, 0.1)
    assert verdicts(b, {"two": [103.0] * 3})["bin@sub:two"] == "regression"


def test_trend_metrics_never_regress() -> None:
    b = good()
    (c,) = [c for c in compare_run(night({"noisy": [1e6]}), b) if c.key == "bin@sub:noisy"]
    assert c.verdict == "trend" and not c.gated
    assert "kept for trends only: MDE" in c.explain()


def test_a_maximum_of_the_nodes_scope_is_kept_for_trends() -> None:
    """The gate reads the metric's NAME: in a node's key it is followed by
    the node, which must not hide that the metric is a maximum."""
    node = "1 of 1 GPUs, 1 at once, AMD EPYC 7763 64-Core Processor"
    b = gate_baseline({f"bin@sub:{n} [{node}]": ("ns", "lower", RUNS)
                       for n in ("gap-max", "lat")})
    a = b.assessments()
    assert a[f"bin@sub:gap-max [{node}]"].trend == ("a maximum: one extreme a run, its "
                                                     "run-to-run spread is not normal")
    assert a[f"bin@sub:lat [{node}]"].trend is None


def test_new_missing_insufficient_and_unselected() -> None:
    b = good()
    recs = {"bin@sub": record("pass", [metric("bin", "sub", "fresh", [1.0]),
                                       metric("bin", "sub", "lat", [100.0])])}
    got = {c.key: c for c in compare_run(recs, b)}
    assert got["bin@sub:fresh"].verdict == "new"
    assert got["bin@sub:lat"].verdict == "insufficient"  # 1 sample where the runs had 3
    assert "this run has 1 samples, the baseline's runs a median of 3" in got[
        "bin@sub:lat"].explain()
    assert got["bin@sub@gpu0:bw"].verdict == "missing"
    assert got["bin@sub@gpu0:bw"].note == "bin@sub passed without recording it"
    assert "bin@sub:noisy" in got  # missing too
    assert compare_run({"other@x": record()}, b) == []  # bin@sub not selected: no verdict
    # bin@sub ran other dynamic subtests (a level or a node without gpu0): no verdict for gpu0
    other = {"bin@sub": record("pass", [metric("bin", "sub", "lat", RUNS[0])],
                               dynamic={"gpu1": "pass"})}
    assert "bin@sub@gpu0:bw" not in {c.key for c in compare_run(other, b)}
    unit = {"bin@sub": record("pass", [metric("bin", "sub", "lat", RUNS[0], unit="us")])}
    (c,) = [c for c in compare_run(unit, b) if c.key == "bin@sub:lat"]
    assert c.verdict == "new" and "changed from 'ns'" in c.note


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
    verdict on the slowdown is asserted: that would be a wall-clock threshold."""
    runs = [tmp_path / f"r{i}" for i in range(3)]
    for r in runs:
        p = gpuconform(selftests, r, "spin", {"GPUCONFORM_SELFTEST_SLOWDOWN": "1.05"})
        assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((runs[0] / "results.json").read_text())
    rec = data["tests"]["selftest_metrics@spin"]
    assert "50 samples of 18900000 iterations (slowdown 1.05)" in rec["out"]
    out = update_baseline(runs, tmp_path / "b.json")
    b = load_baseline(out)
    # spin is timed on the host: keyed by the node it ran on (data/metrics.txt, scope.py)
    fp = Fingerprint.from_json(data["fingerprint"])
    key = str(MetricKey("selftest_metrics@spin", "spin",
                        node_label(fp.gpu_count(), fp.gpu_count(), 1, fp.cpu_model)))
    m = b.metrics[key]
    assert [r.n for r in m.runs] == [50, 50, 50] and b.durations["selftest_metrics@spin"] > 0
    (c,) = compare_run(data["tests"], b, labeler(data, catalogue_of(data)))
    assert (c.key, c.base_runs, c.n_run, c.unit, c.better) == (key, 3, 50, "ns", "lower")
    # run 0 of the baseline is the run compared: its statistic, no timing asserted
    (spin,) = [x for x in rec["metrics"] if x["name"] == "spin"]
    assert m.runs[0] == gate.summarize(0, spin["samples"], "lower")


def run_selected(selftests: Selftests, results_dir: Path, include: str, status: int) -> None:
    """A real run of the selftests that match the regex include, ending in status."""
    p = subprocess.run(
        [str(REPO_ROOT / "gpuconform"), "run", "--build", str(selftests.build), "--selftest",
         "--include", include, "--results", str(results_dir), "--progress", "off",
         *RUN_ISOLATED], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert p.returncode == status and (results_dir / "results.json").is_file(), \
        p.stdout + p.stderr


def test_spin_refuses_a_bad_knob(selftests: Selftests) -> None:
    p = subprocess.run([str(selftests.binary("selftest_metrics")), "--run-subtest", "spin"],
                       env={**os.environ, "GPUCONFORM_SELFTEST_SLOWDOWN": "fast"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 98
    assert '$GPUCONFORM_SELFTEST_SLOWDOWN="fast": not a factor' in p.stdout + p.stderr


# ------------------------------------- distinct clean runs only (real runs)


def update_cli(*args: Any) -> CliRun:
    """`gpuconform baseline update ARGS`, the real command."""
    return run_launcher(["baseline", "update", *map(str, args)], dict(os.environ), None)


def refused(r: CliRun) -> str:
    """The one line of a refused update (exit 2, no traceback)."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stdout + r.stderr, r.stderr
    assert "baseline written" not in r.stdout
    return r.stderr.strip()


def run_id_of(results_dir: Path) -> str:
    rid: str = json.loads((results_dir / "results.json").read_text())["run"]["run_id"]
    return rid


@pytest.fixture(scope="module")
def clean_runs(selftests: Selftests, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three real clean runs: two of selftest_metrics@metrics, one of @spin."""
    base = tmp_path_factory.mktemp("clean")
    out = []
    for name, test in (("a", "metrics"), ("b", "metrics"), ("c", "spin")):
        run_selected(selftests, base / name, f"^selftest_metrics@{test}$", 0)
        out.append(base / name)
    return out


def test_update_refuses_the_same_run_twice(clean_runs: list[Path], tmp_path: Path) -> None:
    """One run is one run of the baseline: given twice (by the same path or
    another), or added to a baseline that has it, it is refused; the file
    stays as it was. Before: "baseline written", the run counted twice."""
    a, b, _ = clean_runs
    out = tmp_path / "b.json"
    err = refused(update_cli(a, a, "--out", out))
    assert err == (f"gpuconform: {a / 'results.json'}: run {run_id_of(a)[:12]} is given twice "
                   f"(also as {a / 'results.json'}): a baseline is made of distinct runs")
    (tmp_path / "link").symlink_to(a)
    for other in (a / "results.json", tmp_path / "link"):  # the run, by another path
        assert "is given twice" in refused(update_cli(a, other, "--out", out))
    assert not out.exists()
    assert update_cli(a, "--out", out).returncode == 0
    before = out.read_text()
    err = refused(update_cli(a, "--out", out, "--append"))
    assert err == (f"gpuconform: {a}: run {run_id_of(a)[:12]} is already in {out} (its run 0, "
                   f"from {a}): a baseline is made of distinct runs")
    assert out.read_text() == before
    assert update_cli(b, "--out", out, "--append").returncode == 0
    assert [r.run_id for r in load_baseline(out).runs] == [run_id_of(a), run_id_of(b)]
    # without --append a run replaces the runs of what it measured: itself included
    assert update_cli(a, "--out", out).returncode == 0
    assert [r.run_id for r in load_baseline(out).runs] == [run_id_of(a)]


def test_a_merge_is_the_runs_it_merged(clean_runs: list[Path], tmp_path: Path) -> None:
    """A merge is its runs: given with one of them it is the same run twice;
    a merge that is not complete (here: one test in two runs, a conflict) is
    not a clean run."""
    a, b, c = clean_runs
    whole = tmp_path / "bc"
    assert run_launcher(["merge", str(whole), str(b), str(c)], dict(os.environ),
                        None).returncode == 0
    assert "is given twice" in refused(update_cli(whole, b, "--out", tmp_path / "x.json"))
    assert update_cli(a, whole, "--out", tmp_path / "b.json").returncode == 0
    assert [r.run_id for r in load_baseline(tmp_path / "b.json").runs] == \
        [run_id_of(a), "+".join(sorted([run_id_of(b), run_id_of(c)]))]
    both = tmp_path / "ab"
    assert run_launcher(["merge", str(both), str(a), str(b)], dict(os.environ),
                        None).returncode == 1
    assert refused(update_cli(both, "--out", tmp_path / "y.json")).endswith(
        "/ab/results.json: not a clean run: an incomplete merge (1 conflict): a baseline is "
        "made of clean runs (--force takes it all the same, and the baseline records why)")


def test_update_refuses_a_run_that_is_not_clean(selftests: Selftests, tmp_path: Path) -> None:
    """A run with unexpected results (a failure, an abort) is refused with
    why; --force takes it, only its tests that ended as expected, and the
    baseline's run entry says why. Before: "baseline written", exit 0."""
    r = tmp_path / "r"
    run_selected(selftests, r, "^selftest_metrics@metrics$|^selftest_results@(fail|abort)$", 1)
    out = tmp_path / "b.json"
    why = "2 unexpected results (1 abort, 1 fail)"
    assert refused(update_cli(r, "--out", out)) == (
        f"gpuconform: {r / 'results.json'}: not a clean run: {why}: a baseline is made of "
        "clean runs (--force takes it all the same, and the baseline records why)")
    assert not out.exists()
    forced = update_cli(r, "--out", out, "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stderr == (f"gpuconform: baseline update: {r / 'results.json'}: not a clean "
                             f"run, taken (--force): {why}\n")
    b = load_baseline(out)
    assert [(x.run_id, x.unclean) for x in b.runs] == [(run_id_of(r), why)]
    assert b.metrics and all(k.startswith("selftest_metrics@metrics:") for k in b.metrics)
    assert f'"unclean": "{why}"' in out.read_text()  # a reader of the file sees it


def test_a_resumed_run_with_an_incomplete_is_not_clean(selftests: Selftests, tmp_path: Path,
                                                      marker_env: bytes) -> None:
    """kill -9 while a test runs, then `resume`: the run completes with that
    test incomplete, which no baseline takes."""
    r = tmp_path / "r"
    env = {**os.environ, "GPUCONFORM_SELFTEST_LONG_SLEEP_MS": "600000"}
    proc = subprocess.Popen([str(REPO_ROOT / "gpuconform"), "run", "--build",
                             str(selftests.build), "--selftest", "--results", str(r),
                             "--include", "^selftest_flow@sleep-long$|^selftest_metrics@metrics$",
                             "--progress", "off", *RUN_ISOLATED], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + HANG_GUARD_S  # a hung runner, not a timing bound
        while '"test":"selftest_flow@sleep-long"' not in _text(r / "journal.jsonl"):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        proc.kill()
        proc.wait()
    res = run_launcher(["resume", str(r), "--progress", "off"], env, r)
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.tests()["selftest_flow@sleep-long"]["result"] == "incomplete"
    assert res.tests()["selftest_metrics@metrics"]["result"] == "pass"
    assert refused(update_cli(r, "--out", tmp_path / "b.json")).endswith(
        ": not a clean run: 1 unexpected result (1 incomplete): a baseline is made of clean "
        "runs (--force takes it all the same, and the baseline records why)")


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def test_a_baseline_without_run_ids_still_loads_and_knows_its_runs(tmp_path: Path) -> None:
    """A version 2 file written before run ids were kept (the committed H100
    one) loads; a run it has is known by its start, host and GPUs."""
    rd = write_results(tmp_path / "r", results(
        {"b@ok": record("pass", [metric("b", "ok", "lat", [1, 2, 3])])}, fingerprint=FP.to_json(),
        run={"start": 1.7e9, "hostname": "h", "devices": ["GPU-a"], "run_id": "r1"}))
    out = update_baseline(rd, tmp_path / "b.json")
    text = out.read_text()
    assert ', "run_id": "r1"}' in text
    out.write_text(text.replace(', "run_id": "r1"}', "}"))
    assert load_baseline(out).runs[0].run_id is None
    with pytest.raises(BaselineError, match=r"/r: run r1 is already in .*b\.json \(its run 0, "
                       r"from .*/r: no run id there, the same start, host and GPUs\)"):
        update_baseline(rd, out, append=True)
    later = write_results(tmp_path / "r2", json.loads((rd / "results.json").read_text()))
    data = json.loads((later / "results.json").read_text())
    data["run"].update(start=1.7e9 + 60, run_id="r2")
    write_results(later, data)
    update_baseline(later, out, append=True)
    assert [x.run_id for x in load_baseline(out).runs] == [None, "r2"]


@pytest.mark.parametrize("extra,why", [
    ({"run": {"run_id": "x", "collection_errors": ["a.txt: boom\nmore"]}},
     "1 collection error(s): a.txt: boom more"),
    ({"run": {"run_id": "x", "aborted": "GPU reset"}}, "aborted: GPU reset"),
    ({"run": {"merged_from": [{"run": {"run_id": "s1", "aborted": "node lost"}}],
              "merge": {"ok": False, "gaps": ["b@x", "b@y"], "missing_shards": [2]}}},
     "aborted: node lost; an incomplete merge (2 gaps, 1 missing shard)"),
])
def test_what_makes_a_run_unclean(tmp_path: Path, extra: dict[str, Any], why: str) -> None:
    from gpuconform.perf.cleanrun import unclean

    data = results({"b@ok": record("pass", expected=True),
                    "b@flaky": {**record("pass", expected=False), "final": "flake"},
                    "b@known": record("fail", expected=True)}, **extra)
    assert unclean(data) == f"{why}; 1 unexpected result (1 flake)"
    data["tests"].pop("b@flaky")
    assert unclean(data) == why


def test_the_committed_baselines_load() -> None:
    """Every file in data/baselines/ is a valid baseline whose derived figures
    follow from its runs, and is named by its own fingerprint's key."""
    files = sorted(bl.DEFAULT_BASELINE_DIR.glob("*.json"))
    for p in files:
        b = load_baseline(p)
        assert p.stem == Fingerprint.from_json(b.fingerprint).key(), p
        assert len({r.devices for r in b.runs}) >= 2, f"{p}: runs of one host only"


def test_update_leaves_out_metrics_the_catalogue_no_longer_names(tmp_path: Path) -> None:
    """A run from before a test changed its metrics: what no catalogue line names is left
    out, once, said; the binary's catalogued metrics and an uncatalogued binary's stay."""
    old_name = "residual.session1-concurrent.gap-p50.old-chain16"
    new_name = "residual.session1-concurrent.gap-p50.graphs"
    rd = write_results(tmp_path / "r1", results({
        "cuda_bubbles@profiler-sessions": record(
            "pass", [metric("cuda_bubbles", "profiler-sessions", old_name, [1.0], unit="x"),
                     metric("cuda_bubbles", "profiler-sessions", new_name, [1.1], unit="x",
                            dyn="kernel-cs")], dynamic={"kernel-cs": "pass"}),
        "b@ok": record("pass", [metric("b", "ok", "lat", [1.0])])},
        fingerprint=FP.to_json(), run={"run_id": "r1"}))
    said: list[str] = []
    b = load_baseline(update_baseline([rd], tmp_path / "b.json", left_out=said.append))
    assert sorted(b.metrics) == ["b@ok:lat", f"cuda_bubbles@profiler-sessions@kernel-cs:{new_name}"]
    assert said == ["1 metrics left out, no line of the catalogue names them (no binary records "
                    f"them now), e.g. cuda_bubbles@profiler-sessions:{old_name}"]

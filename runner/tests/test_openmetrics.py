"""`gpuconform run --openmetrics FILE`: the run's verdict, counts by state and
gated metrics in the Prometheus text format, read back by the Prometheus
project's own Python parser (python3-prometheus-client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import Selftests
from gpuconform.report.openmetrics import render
from test_run_flow import one_line_error, run

parser = pytest.importorskip("prometheus_client.parser",
                             reason="python3-prometheus-client is not installed "
                             "(scripts/deps.sh test installs it)")


def families(text: str) -> dict[str, list[Any]]:
    return {f.name: f.samples for f in parser.text_string_to_metric_families(text)}


def test_a_real_run_writes_a_file_the_parser_reads(selftests: Selftests, tmp_path: Path) -> None:
    out = tmp_path / "textfile" / "gpuconform.prom"
    out.parent.mkdir()
    r = run(selftests, tmp_path / "r", "-k", "selftest_flow", "--openmetrics", str(out))
    assert r.returncode == 0, r.stderr
    fam = families(out.read_text(encoding="utf-8"))
    (ok,) = fam["gpuconform_run_ok"]
    assert ok.value == 1.0 and ok.labels["machine"]
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    by_state: dict[str, int] = {}
    for rec in data["tests"].values():
        by_state[rec["result"]] = by_state.get(rec["result"], 0) + 1
    assert {s.labels["state"]: s.value for s in fam["gpuconform_tests"]} == by_state
    assert fam["gpuconform_unexpected_tests"][0].value == 0.0
    assert list(out.parent.iterdir()) == [out]  # no temporary file left beside it


def test_gated_metrics_and_a_failed_verdict_with_hostile_labels() -> None:
    data = {"format": "gpuconform-results", "tests": {
        "bin@a": {"result": "fail", "expected": False},
        "bin@b": {"result": "fail", "expected": True}},
        "comparisons": [
            {"key": "k1", "test": 'bin@"x"\\\n', "metric": "lat", "unit": "ns", "better": "lower",
             "gated": True, "verdict": "regression", "value": 120.0, "center": 100.0,
             "limit": 0.05},
            {"key": "k2", "test": "bin@a", "metric": "noisy", "gated": False, "value": 1.0}]}
    fam = families(render(data))
    assert fam["gpuconform_run_ok"][0].value == 0.0
    assert fam["gpuconform_unexpected_tests"][0].value == 1.0
    assert fam["gpuconform_metric_regressions"][0].value == 1.0
    assert {(s.labels["state"], s.labels["expected"]) for s in fam["gpuconform_tests"]} == {
        ("fail", "false"), ("fail", "true")}
    (v,) = fam["gpuconform_metric_value"]  # the trend-only metric is not exported
    assert v.labels["test"] == 'bin@"x"\\\n' and v.value == 120.0
    assert fam["gpuconform_metric_limit_ratio"][0].value == 0.05
    assert fam["gpuconform_metric_verdict"][0].labels["verdict"] == "regression"


def test_an_unwritable_place_stops_the_run_before_it_starts(selftests: Selftests,
                                                           tmp_path: Path) -> None:
    r = run(selftests, tmp_path / "r", "-k", "selftest_flow", "--openmetrics",
            str(tmp_path / "missing" / "x.prom"))
    assert f"--openmetrics {tmp_path}/missing/x.prom: no directory" in one_line_error(r)
    assert not (tmp_path / "r" / "results.json").exists()

"""RESULTS' verdict, counts and gated metrics for Prometheus, in the text
exposition format (version 0.0.4) that node_exporter's textfile collector
reads: `gpuconform run --openmetrics FILE` writes FILE after results.json,
through a temporary file renamed into place (the collector must never read
half a file, and it reads FILE's directory at any time).

    gpuconform_run_ok{machine}                       1: nothing unexpected (exit 0), else 0
    gpuconform_run_end_seconds{machine}              when results.json was written
    gpuconform_tests{machine,state,expected}         tests by state; expected="true": an
                                                     expected failure
    gpuconform_unexpected_tests{machine}             tests judged unexpected
    gpuconform_metric_regressions{machine}           regressions counted against the run
    gpuconform_metric_value{machine,test,metric,unit,better[,node]}
                                                     a gated metric's gate statistic
    gpuconform_metric_baseline{...}                  its baseline's center (where it has one)
    gpuconform_metric_limit_ratio{...}               the gate's limit, a fraction of the center
    gpuconform_metric_verdict{...,verdict}           1, the verdict in its label

machine is the fingerprint's key: two machines' files on one dashboard stay apart.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..core.atomic import atomic_write
from ..core.fingerprint import Fingerprint
from ..core.results import expected_failure, outcome_of
from ..core.runmetrics import load_results

__all__ = ["render", "write_openmetrics"]

_HELP = {
    "gpuconform_run_ok": ("gauge", "1 when the run's verdict is nothing unexpected (its exit "
                          "status 0), else 0."),
    "gpuconform_run_end_seconds": ("gauge", "When the run's results were written, seconds "
                                   "since 1970."),
    "gpuconform_tests": ("gauge", "Tests of the run by final state; expected is true for a "
                         "failure an expectation rule foresaw."),
    "gpuconform_unexpected_tests": ("gauge", "Tests judged unexpected (failures without a "
                                    "rule, flakes, fixed tests)."),
    "gpuconform_metric_regressions": ("gauge", "Metric regressions counted against the run."),
    "gpuconform_metric_value": ("gauge", "A gated metric's gate statistic in this run, in its "
                                "unit."),
    "gpuconform_metric_baseline": ("gauge", "The center of the metric's baseline, in its unit."),
    "gpuconform_metric_limit_ratio": ("gauge", "The gate's limit, a fraction of the baseline's "
                                      "center."),
    "gpuconform_metric_verdict": ("gauge", "1, with the comparison's verdict as a label."),
}


def _label(v: Any) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(d: Mapping[str, Any]) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in d.items()) + "}"


def _num(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) else ("NaN" if math.isnan(v) else
                                                     ("+Inf" if v > 0 else "-Inf"))


def _samples(data: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], float]]:
    fp = data.get("fingerprint")
    machine = {"machine": (Fingerprint.from_json(fp) if isinstance(fp, Mapping)
                           else Fingerprint()).key()}
    out = outcome_of(data)
    run = data.get("run") if isinstance(data.get("run"), Mapping) else {}
    yield "gpuconform_run_ok", machine, float(out.status == 0)
    if isinstance(run.get("end"), (int, float)):
        yield "gpuconform_run_end_seconds", machine, float(run["end"])
    counts: dict[tuple[str, str], int] = {}
    for rec in data["tests"].values():
        key = (str(rec.get("result", "?")), "true" if expected_failure(rec) else "false")
        counts[key] = counts.get(key, 0) + 1
    for (state, expected), n in sorted(counts.items()):
        yield "gpuconform_tests", {**machine, "state": state, "expected": expected}, float(n)
    yield "gpuconform_unexpected_tests", machine, float(len(out.unexpected))
    yield "gpuconform_metric_regressions", machine, float(out.regressions)
    for c in data.get("comparisons") or []:
        if not isinstance(c, Mapping) or c.get("gated") is not True:
            continue
        m = {**machine, "test": c.get("test", ""), "metric": c.get("metric", ""),
             "unit": c.get("unit", ""), "better": c.get("better", "")}
        if c.get("node") is not None:
            m["node"] = c["node"]
        for name, field in (("gpuconform_metric_value", "value"),
                            ("gpuconform_metric_baseline", "center"),
                            ("gpuconform_metric_limit_ratio", "limit")):
            v = c.get(field)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                yield name, m, float(v)
        yield "gpuconform_metric_verdict", {**m, "verdict": c.get("verdict", "")}, 1.0


def render(data: Mapping[str, Any]) -> str:
    """The exposition of parsed results.json data: each family's HELP and
    TYPE, then its samples (families in _HELP's order)."""
    by: dict[str, list[str]] = {name: [] for name in _HELP}
    for name, labels, value in _samples(data):
        by[name].append(f"{name}{_labels(labels)} {_num(value)}")
    lines = []
    for name, (kind, text) in _HELP.items():
        if by[name]:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *by[name]]
    return "\n".join(lines) + "\n"


def write_openmetrics(results_dir: Path, out: Path) -> Path:
    """out from results_dir/results.json, replaced whole (atomic_write)."""
    atomic_write(out, render(load_results(results_dir / "results.json")))
    return out

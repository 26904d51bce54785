"""Metrics a binary appends to $GPUCONFORM_METRICS_FILE, one JSON object a line:

    {"test":"host_io","subtest":"throughput","dynamic":null,"name":"direct-read-16MiB",
     "unit":"MB/s","better":"higher","samples":[812.5, ...]}

or, for a histogram (hist.py: every gap between kernels, say), the distinct
values strictly ascending and how many times each occurred:

    {..., "name":"gap.graph.chain8192","unit":"ns","better":"lower",
     "samples":[608, 640, ...],"counts":[12, 4170034, ...]}

parse_metrics() validates every line and never raises on bad input: each
problem becomes one message naming the line.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

from .hist import counts_problem, samples_json, samples_of
from .jsondoc import Doc
from .metrickey import MetricKey, case_name, name_problem
from .soak import check_soak, is_soak_line

__all__ = ["Metric", "parse_metrics", "parse_better", "METRICS_ENV"]

METRICS_ENV = "GPUCONFORM_METRICS_FILE"

Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class Metric:
    test: str
    subtest: str
    dynamic: str | None
    name: str
    unit: str
    better: Better
    samples: Sequence[float]  # a tuple, or a Hist (its counts)

    @property
    def key(self) -> MetricKey:
        """test@subtest[@dynamic]:name, the identity a baseline is kept under
        (without a node: scope.py adds it to a node's metric)."""
        return MetricKey(case_name(self.test, self.subtest, self.dynamic), self.name)

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "subtest": self.subtest,
            "dynamic": self.dynamic,
            "name": self.name,
            "unit": self.unit,
            "better": self.better,
            **samples_json(self.samples),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Metric":
        return cls(
            test=obj["test"],
            subtest=obj["subtest"],
            dynamic=obj.get("dynamic"),
            name=obj["name"],
            unit=obj["unit"],
            better=obj["better"],
            samples=samples_of(obj),
        )



def parse_better(doc: Doc, v: Any, path: list[str | int]) -> str:
    """A metric's direction in a JSON file (results.json, a baseline): "lower"
    or "higher", else doc's one-line error at path."""
    if v not in ("lower", "higher"):
        raise doc.error(path, f"is {json.dumps(v)[:40]}, not \"lower\" or \"higher\"")
    return str(v)

def _check(obj: Any) -> tuple[Metric | None, str]:
    if not isinstance(obj, dict):
        return None, f"not a JSON object but {type(obj).__name__}"
    for key in ("test", "subtest", "name", "unit"):
        v = obj.get(key)
        if not isinstance(v, str) or not v:
            return None, f"{key!r} missing or not a non-empty string"
    dyn = obj.get("dynamic")
    if dyn is not None and (not isinstance(dyn, str) or not dyn):
        return None, "'dynamic' is neither null nor a non-empty string"
    bad_name = name_problem(obj["name"])
    if bad_name is not None:
        return None, bad_name
    better = obj.get("better")
    if better not in ("lower", "higher"):
        return None, f"'better' is {better!r}, not \"lower\" or \"higher\""
    samples = obj.get("samples")
    if not isinstance(samples, list) or not samples:
        return None, "'samples' missing, empty or not a list"
    for i, x in enumerate(samples):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            return None, f"sample {i} is not a number: {x!r}"
        if not math.isfinite(x):
            return None, f"sample {i} is not finite: {x!r}"
    if "counts" in obj:
        why = counts_problem(samples, obj["counts"])
        if why is not None:
            return None, why
    return Metric.from_json(obj), ""


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


def parse_metrics(
    data: bytes | str,
    *,
    source: str = "metrics",
    test: str | None = None,
    subtest: str | None = None,
    max_errors: int = 20,
    soaks: list[dict[str, Any]] | None = None,
) -> tuple[list[Metric], list[str]]:
    """Metrics of data (JSON lines) and one message per bad line.

    soaks, when given, receives the soak lines (soak.py), each validated;
    without it a soak line is a bad line.

    test / subtest, when given, are what the runner ran: a metric naming
    another is reported (it would be filed under the wrong baseline).
    """
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    metrics: list[Metric] = []
    errors: list[str] = []
    seen: set[MetricKey] = set()
    dropped = 0

    def err(msg: str) -> None:
        nonlocal dropped
        if len(errors) < max_errors:
            errors.append(msg)
        else:
            dropped += 1

    lines = text.split("\n")
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source} line {lineno}"
        try:
            obj = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as e:
            unterminated = lineno == len(lines) and not text.endswith("\n")
            hint = " (last line, unterminated: the writer died mid-line?)" if unterminated else ""
            err(f"{where}: malformed JSON{hint}: {e}: {line[:120]!r}")
            continue
        if soaks is not None and is_soak_line(obj):
            why = check_soak(obj)
            if why:
                err(f"{where}: {why}")
            elif test is not None and obj["test"] != test:
                err(f"{where}: soak {obj['soak']} names test {obj['test']!r}, ran {test!r}")
            else:
                soaks.append(obj)
            continue
        metric, why = _check(obj)
        if metric is None:
            err(f"{where}: {why}")
            continue
        if test is not None and metric.test != test:
            err(f"{where}: metric {metric.name} names test {metric.test!r}, ran {test!r}")
            continue
        if subtest is not None and metric.subtest != subtest:
            err(f"{where}: metric {metric.name} names subtest {metric.subtest!r}, ran {subtest!r}")
            continue
        if metric.key in seen:
            err(f"{where}: metric {metric.key} recorded twice")
            continue
        seen.add(metric.key)
        metrics.append(metric)
    if dropped:
        errors.append(f"{source}: {dropped} more bad lines not listed")
    return metrics, errors

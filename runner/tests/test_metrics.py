"""metrics.py: validation of the JSON lines a binary appends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpuconform.core.metrics import Metric, parse_metrics


def line(**over: Any) -> str:
    obj: dict[str, Any] = {
        "test": "host_io", "subtest": "throughput", "dynamic": None, "name": "read-16MiB",
        "unit": "MB/s", "better": "higher", "samples": [812.5, 799, 805.25],
    }
    obj.update(over)
    return json.dumps(obj) + "\n"


def test_valid_lines() -> None:
    data = line() + line(name="latency", unit="ns", better="lower", samples=[1, 2], dynamic="gpu0")
    metrics, errors = parse_metrics(data, test="host_io", subtest="throughput")
    assert errors == []
    assert [m.name for m in metrics] == ["read-16MiB", "latency"]
    assert metrics[0].samples == (812.5, 799.0, 805.25)
    assert metrics[1].dynamic == "gpu0" and metrics[1].better == "lower"
    assert str(metrics[1].key) == "host_io@throughput@gpu0:latency"


def test_round_trip() -> None:
    m = parse_metrics(line())[0][0]
    assert Metric.from_json(m.to_json()) == m


def test_empty_and_blank_lines() -> None:
    assert parse_metrics("") == ([], [])
    assert parse_metrics("\n\n") == ([], [])


@pytest.mark.parametrize(
    "bad,why",
    [
        ("not json\n", "malformed JSON"),
        ("[1, 2]\n", "not a JSON object"),
        (line(samples=[]), "'samples'"),
        (line(samples="1,2"), "'samples'"),
        (line(samples=[1, "2"]), "sample 1 is not a number"),
        (line(samples=[True]), "sample 0 is not a number"),
        ('{"test":"t","subtest":"s","dynamic":null,"name":"n","unit":"u","better":"lower",'
         '"samples":[1,NaN]}\n', "malformed JSON"),
        (line(samples=[1.5]).replace("1.5", "1e400"), "not finite"),
        (line(better="smaller"), "'better'"),
        (line(name="no spaces"), "metric name"),
        (line(name=""), "'name'"),
        (line(unit=None), "'unit'"),
        (line(test=3), "'test'"),
        (line(dynamic=""), "'dynamic'"),
        (line(dynamic=7), "'dynamic'"),
    ],
)
def test_bad_lines_are_reported_never_raised(bad: str, why: str) -> None:
    metrics, errors = parse_metrics(line() + bad, source="M")
    assert len(metrics) == 1
    assert len(errors) == 1
    assert errors[0].startswith("M line 2: ")
    assert why in errors[0]


def test_truncated_last_line() -> None:
    metrics, errors = parse_metrics(line() + line()[:30])
    assert len(metrics) == 1
    assert "unterminated" in errors[0]


def test_wrong_test_or_subtest() -> None:
    _, errors = parse_metrics(line(), test="other", subtest="throughput")
    assert "names test 'host_io', ran 'other'" in errors[0]
    _, errors = parse_metrics(line(), test="host_io", subtest="x")
    assert "names subtest 'throughput', ran 'x'" in errors[0]


def test_duplicate_metric() -> None:
    metrics, errors = parse_metrics(line() + line())
    assert len(metrics) == 1 and "recorded twice" in errors[0]


def test_binary_garbage_and_error_cap() -> None:
    metrics, errors = parse_metrics(b"\xff\xfe\x00\n" * 100, max_errors=5)
    assert metrics == []
    assert len(errors) == 6 and "95 more" in errors[-1]


def soak_line(**over: Any) -> str:
    obj: dict[str, Any] = {
        "test": "nvml_session", "subtest": "concurrent-sessions", "dynamic": None,
        "soak": "concurrent-sessions", "cycle": "one round", "level": "standard",
        "cycles": 9800, "seconds": 20.01, "stopped": "budget", "cycles_asked": 256000,
        "budget_s": 20,
        "series": [{"name": "rss", "unit": "KiB", "x": [0, 9800], "y": [1.0, 1.0], "from": 0,
                    "to": 9800, "slope": 0, "growth": 0, "relative": 0, "bound": "b",
                    "verdict": "ok"}],
    }
    obj.update(over)
    return json.dumps({k: v for k, v in obj.items() if v is not ...}) + "\n"


def test_soak_lines_say_how_they_ended() -> None:
    """lib/soak.c's "stopped", "cycles_asked", "budget_s": kept as written; a
    line from before they existed is still valid."""
    soaks: list[dict[str, Any]] = []
    data = (soak_line() + soak_line(stopped="seconds", level="long", cycles_asked=None,
                                    budget_s=None)
            + soak_line(stopped=..., cycles_asked=..., budget_s=...))
    _, errors = parse_metrics(data, test="nvml_session", soaks=soaks)
    assert errors == []
    assert [(s.get("stopped"), s.get("cycles_asked"), s.get("budget_s")) for s in soaks] == [
        ("budget", 256000, 20), ("seconds", None, None), (None, None, None)]


@pytest.mark.parametrize("over, why", [
    ({"stopped": "tired"}, "'stopped' 'tired' is not one of cycles, budget, seconds, caller"),
    ({"cycles_asked": -1}, "'cycles_asked' is not a count or null"),
    ({"cycles_asked": 2.5}, "'cycles_asked' is not a count or null"),
    ({"budget_s": 0}, "'budget_s' is not a positive number of seconds or null"),
    ({"budget_s": "20"}, "'budget_s' is not a positive number of seconds or null"),
])
def test_bad_soak_stop(over: dict[str, Any], why: str) -> None:
    soaks: list[dict[str, Any]] = []
    _, errors = parse_metrics(soak_line(**over), soaks=soaks)
    assert soaks == [] and len(errors) == 1
    assert errors[0] == f"metrics line 1: soak concurrent-sessions: {why}"

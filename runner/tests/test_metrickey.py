"""The metric name rule and the metric key (metrickey.py): made and read back
in one place, over every key a committed baseline holds."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest

from gpuconform.core.metrickey import NAME_CHARS, MetricKey, name_problem, record_of, case_name

REPO_ROOT = Path(__file__).resolve().parents[2]
BASELINES = sorted((REPO_ROOT / "data" / "baselines").glob("*.json"))


def _baseline_keys() -> list[str]:
    return [k for f in BASELINES for k in json.loads(f.read_text(encoding="utf-8"))["metrics"]]


def test_every_committed_baseline_key_round_trips() -> None:
    keys = _baseline_keys()
    assert BASELINES and keys, "no committed baseline in data/baselines"
    parsed = [MetricKey.parse(k) for k in keys]
    assert [k for k, p in zip(keys, parsed) if p is None] == []
    assert [str(p) for p in parsed] == keys
    # both kinds are there: keys of the device's scope and keys of a node
    assert {p.node is None for p in parsed if p is not None} == {True, False}


def test_a_node_key_parts() -> None:
    text = "nvml_session@cost@gpu0:first-handle-cold [1 of 1 GPUs, 1 at once, Intel(R) Xeon(R)]"
    k = MetricKey.parse(text)
    assert k == MetricKey("nvml_session@cost@gpu0", "first-handle-cold",
                          "1 of 1 GPUs, 1 at once, Intel(R) Xeon(R)")
    assert k is not None and k.record == "nvml_session@cost" and str(k) == text
    assert str(k.with_node(None)) == "nvml_session@cost@gpu0:first-handle-cold"
    assert MetricKey("b@s", "n", "") == MetricKey.parse("b@s:n").with_node("")  # type: ignore[union-attr]
    assert str(MetricKey("b@s", "n", "")) == "b@s:n"


@pytest.mark.parametrize("text", [
    "bin@sub",             # no ':'
    "bin@sub:",            # no name
    "bin@sub:a b",         # a name that breaks the rule
    "bin@sub:lat [",       # a broken node: the name is "lat [" then
    "binsub:lat",          # no '@'
    "@sub:lat",            # '@' first: no binary
    "bin@sub:lat [a [b]]",  # brackets inside the node
])
def test_what_is_not_a_key(text: str) -> None:
    assert MetricKey.parse(text) is None


def test_a_colon_in_the_test_part_leaves_the_name_after_the_last() -> None:
    assert MetricKey.parse("bin@sub@x:y:lat") == MetricKey("bin@sub@x:y", "lat")


def test_case_name_and_record() -> None:
    assert case_name("host_io", "throughput", None) == "host_io@throughput"
    assert case_name("host_io", "throughput", "gpu0") == "host_io@throughput@gpu0"
    assert record_of("host_io@throughput@gpu0") == "host_io@throughput"
    assert record_of("host_io@throughput") == "host_io@throughput"


def test_the_name_rule() -> None:
    assert NAME_CHARS == frozenset(string.ascii_letters + string.digits + "._-")
    assert name_problem("gap-p99.graph.chain16_x") is None
    assert name_problem("no spaces") == "metric name 'no spaces' is not [A-Za-z0-9._-]+"
    assert name_problem("") == "metric name '' is not [A-Za-z0-9._-]+"
    assert name_problem("a\n") is not None  # \Z: no newline at the end slips through
    assert name_problem("x/y", "soak name") == "soak name 'x/y' is not [A-Za-z0-9._-]+"


def test_binary_dynamic_and_a_baseline_key() -> None:
    k = MetricKey.of_baseline("cuda_bubbles@profiler-sessions@kernel-cs:residual.fresh.gap-p50.graphs")
    assert (k.binary, k.dynamic, k.record) == ("cuda_bubbles", "kernel-cs",
                                               "cuda_bubbles@profiler-sessions")
    own = MetricKey.of_baseline("nvml_session@cost:first-handle-cold [1 of 1 GPUs, 1 at once, x]")
    assert (own.binary, own.dynamic, own.node) == ("nvml_session", None, "1 of 1 GPUs, 1 at once, x")
    with pytest.raises(ValueError, match="is not BINARY@SUBTEST"):
        MetricKey.of_baseline("no-key")

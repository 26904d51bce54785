"""A metric through its formats unchanged: the committed baselines read and
written back byte for byte, and a real run's results.json metrics read into
Metric (metrics.py) and RunMetric (runmetrics.py) and written back as they
were, under the keys their fields spell."""

from __future__ import annotations

import json
from pathlib import Path

from gc_testutil import REPO_ROOT, Selftests
from gpuconform.perf.baseline import load_baseline, write_baseline
from gpuconform.core.metrics import Metric
from gpuconform.core.runmetrics import load_results, run_metrics
from gpuconform.perf.scope import catalogue_of, labeler
from test_baseline import gpuconform

BASELINES = sorted((REPO_ROOT / "data" / "baselines").glob("*.json"))


def test_the_committed_baselines_are_written_back_byte_for_byte(tmp_path: Path) -> None:
    assert BASELINES, "no committed baseline in data/baselines"
    for f in BASELINES:
        out = write_baseline(load_baseline(f), tmp_path / f.name)
        assert out.read_bytes() == f.read_bytes(), f.name


def _spelled(m: dict[str, object]) -> str:
    """The key a results.json metric's fields spell, written out here by hand."""
    dyn = f"@{m['dynamic']}" if m["dynamic"] else ""
    return f"{m['test']}@{m['subtest']}{dyn}:{m['name']}"


def test_a_real_runs_metrics_round_trip(selftests: Selftests, tmp_path: Path) -> None:
    r = tmp_path / "r"
    p = gpuconform(selftests, r, "selftest_metrics and not bad and not finite and not spin")
    assert p.returncode == 0, p.stdout + p.stderr
    data = load_results(r)
    written = [m for rec in data["tests"].values() for m in rec.get("metrics") or []]
    assert written, "the run recorded no metric"
    for m in written:
        # the format of results.json's metric (metrics.py's docstring)
        assert [k for k in m if k != "gpu"] == ["test", "subtest", "dynamic", "name", "unit",
                                               "better", "samples"]
        metric = Metric.from_json(m)
        # results.json's metric is Metric.to_json(), plus the GPU of a copy (gang.py)
        assert json.dumps(metric.to_json()) == json.dumps({k: v for k, v in m.items()
                                                           if k != "gpu"})
        assert str(metric.key) == _spelled(m)
    got = run_metrics(data["tests"], node=labeler(data, catalogue_of(data)))
    # a metric of the node's scope carries its node: the same key, then " [NODE]"
    assert sorted(k.partition(" [")[0] for k in got) == sorted({_spelled(m) for m in written})
    assert any(rm.key.node for rm in got.values()), "no metric of the node's scope"
    for text, rm in got.items():
        assert str(rm.key) == text and rm.key.node == (text.partition(" [")[2][:-1] or None)

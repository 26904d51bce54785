"""A run's metrics judged against its baseline by the gate (gate.py): one
verdict a metric, as results.json's "comparisons", the summary and the report
show them.

Its job: did tonight's run regress. It is the one place that decides it: a
night is one more draw of each metric's run statistic, judged against the K
clean runs of its fingerprint's baseline, whose run-to-run spread sets the
limit. A "regression" here fails `gpuconform run` (results.RunOutcome,
unless --regressions-expected). compare.py answers another question (what
differs between two given runs, with no baseline's spread to go by) and
decides nothing a run's status depends on."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from . import gate
from ..core import fmt
from .baseline import Baseline, BaselineMetric
from .gate import Assessment
from ..core.metrickey import MetricKey
from ..core.runmetrics import RunMetric, run_metrics

__all__ = ["VERDICTS", "MetricComparison", "GateComparison", "compare_run", "judge_run"]

VERDICTS = ("regression", "improvement", "unchanged", "trend", "new", "missing",
            "insufficient")
# A night's sample count under this fraction of the baseline runs' median: its
# statistic is noisier than the spread the limit was made for.
MIN_SAMPLE_FRACTION = 0.5


@dataclass
class MetricComparison:
    """One metric of a run against a reference: what every kind of
    comparison has (results.json's "comparisons", the report, the summary)."""
    test: str  # BIN@SUB[@DYN]
    metric: str  # NAME
    unit: str
    better: str
    verdict: str
    note: str = ""  # why a verdict that is not a measurement was given
    trend: str | None = None  # why the baseline keeps this metric for trends only
    samples_base: Sequence[float] = field(default=(), repr=False)
    samples_run: Sequence[float] = field(default=(), repr=False)  # a tuple or a Hist
    node: str | None = None  # a metric of the node's scope: the node (scope.py)

    @property
    def key(self) -> str:
        return str(MetricKey(self.test, self.metric, self.node))

    def one_side(self, absent: str, stat: str, value: float | None, count: int,
                 what: str) -> str:
        """A "new" or "missing" metric: "VERDICT: NOTE (STAT VALUE over COUNT WHAT)",
        absent standing for the note when none was given."""
        return (f"{self.verdict}: {self.note or absent} ({stat} "
                f"{fmt.value(value, self.unit)} over {count} {what})")


@dataclass
class GateComparison(MetricComparison):
    """One metric of a run against the baseline (gate.py's rule);
    samples_base holds each baseline run's statistic g."""
    n_run: int = 0
    base_runs: int = 0
    center: float | None = None  # the baseline runs' geometric mean of g
    value: float | None = None  # this run's g
    change: float | None = None  # value / center - 1
    limit: float | None = None
    mde: float | None = None
    spread: float | None = None
    within: float | None = None  # the GPUs' own spread, when it widened the limit
    gpus: int = 1  # how many GPUs this run measured it on

    @property
    def gated(self) -> bool:
        return self.trend is None and self.verdict in ("regression", "improvement",
                                                       "unchanged")

    def explain(self) -> str:
        v = self.verdict
        if v == "new":
            return self.one_side("not in the baseline", "good-half mean", self.value,
                                 self.n_run, "samples")
        if v == "missing":
            return self.one_side("in the baseline, not recorded by this run", "baseline",
                                 self.center, self.base_runs, "runs")
        head = (f"good-half mean {fmt.value(self.center, self.unit)} (baseline, "
                f"{self.base_runs} runs) -> {fmt.value(self.value, self.unit)} "
                f"({fmt.pct(self.change)}, {self.better} is better)")
        if v == "insufficient":
            return f"insufficient: {head}; {self.note}"
        if v == "trend":
            return f"trend: {head}; kept for trends only: {self.trend}"
        where = "beyond" if v in ("regression", "improvement") else "within"
        gpus = "" if self.within is None else (
            f", GPU-to-GPU spread {fmt.pct_abs(self.within)} for this run's "
            f"{self.gpus} GPU{'s' if self.gpus > 1 else ''}")
        return (f"{v}: {head}; {where} the limit {fmt.pct_abs(self.limit)} "
                f"(MDE {fmt.pct_abs(self.mde)}, run-to-run spread "
                f"{fmt.pct_abs(self.spread)}{gpus})")

    def to_json(self) -> dict[str, Any]:
        def num(v: float | None) -> float | None:
            return v if v is not None and math.isfinite(v) else None

        return {"key": self.key, "test": self.test, "metric": self.metric, "node": self.node,
                "unit": self.unit, "better": self.better, "verdict": self.verdict,
                "gated": self.gated,
                "n_run": self.n_run, "baseline_runs": self.base_runs,
                "center": num(self.center), "value": num(self.value),
                "change": num(self.change), "limit": num(self.limit), "mde": num(self.mde),
                "spread": num(self.spread), "within": num(self.within), "gpus": self.gpus,
                "trend": self.trend, "note": self.note,
                "explain": self.explain(), "samples_base": list(self.samples_base)}
        # The run's samples are not copied here: they are its tests' metrics
        # ("tests" of results.json), stored once.


def _judge_metric(bm: BaselineMetric, a: Assessment, rm: RunMetric) -> GateComparison:
    g = gate.run_statistic(rm)
    c = GateComparison(rm.key.test, rm.key.name, rm.unit, rm.better, "unchanged", trend=a.trend,
                       samples_base=tuple(bm.gs), samples_run=rm.samples,
                       n_run=len(rm.samples), base_runs=len(bm.runs), center=a.center, value=g,
                       limit=a.limit, mde=a.mde, spread=a.spread, within=a.within,
                       gpus=a.night, node=rm.key.node)
    if (bm.unit, bm.better) != (rm.unit, rm.better):
        c.verdict = "new"
        c.note = (f"the metric changed from {bm.unit!r}, {bm.better} is better, to "
                  f"{rm.unit!r}, {rm.better} is better: not comparable")
        return c
    if a.center is not None:
        c.change = g / a.center - 1
    typical = sorted(r.n for r in bm.runs)[len(bm.runs) // 2]
    if a.gates and rm.per_copy < MIN_SAMPLE_FRACTION * typical:
        c.verdict = "insufficient"
        each = " a GPU" if len(rm.parts) > 1 else ""
        c.note = (f"this run has {rm.per_copy} samples{each}, the baseline's runs a median "
                  f"of {typical}: its statistic is noisier than the limit was made for")
        return c
    c.verdict = gate.judge(a, g, rm.better)
    return c


def _other_dynamics(k: MetricKey, rec: Mapping[str, Any]) -> bool:
    """k is a dynamic subtest's and rec's subtest ran dynamic subtests, that
    one not among them: a plan of another level, a case of another node's GPUs."""
    ran = rec.get("dynamic")
    return k.dynamic is not None and isinstance(ran, Mapping) and bool(ran) and \
        k.dynamic not in ran


def compare_run(records: Mapping[str, Any], baseline: Baseline,
                node: Any = None) -> list[GateComparison]:
    """Every metric of records (results.json's "tests") against baseline,
    plus the baseline's metrics that tests of records ran without recording
    (of this node's shape: scope.labeler's node). Sorted by key."""
    run = run_metrics(records, source="results", node=node)
    assessed = baseline.assessments()
    out: list[GateComparison] = []
    for key, rm in run.items():
        bm = baseline.metrics.get(key)
        if bm is None:
            out.append(GateComparison(rm.key.test, rm.key.name, rm.unit, rm.better, "new",
                                      samples_run=rm.samples, n_run=len(rm.samples),
                                      value=gate.run_statistic(rm), node=rm.key.node))
        else:  # judged for a night on as many GPUs as measured it (gate.py, "copies")
            out.append(_judge_metric(bm, baseline.assessments(max(1, len(rm.parts)))[key], rm))
    for key, bm in baseline.metrics.items():
        if key in run:
            continue
        k = MetricKey.of_baseline(key)
        rec = records.get(k.record)
        if not isinstance(rec, Mapping):
            continue  # not selected in this run: no verdict
        if _other_dynamics(k, rec):
            continue  # its subtest ran other dynamic subtests (another level's, node's)
        theirs = k.node
        if theirs is not None and (node is None or node(str(k.with_node(None)), rec) != theirs):
            continue  # measured on a node of another shape
        state = rec.get("result", "?")
        a = assessed[key]
        out.append(GateComparison(
            k.test, k.name, bm.unit, bm.better, "missing", trend=a.trend,
            samples_base=tuple(bm.gs), base_runs=len(bm.runs), center=a.center, node=theirs,
            note=(f"{k.record} ended {state} without recording it" if state != "pass"
                  else f"{k.record} passed without recording it")))
    out.sort(key=lambda c: c.key)
    return out


def judge_run(tests: Mapping[str, Any], data: Mapping[str, Any],
              baseline: Baseline) -> list[GateComparison]:
    """A run's metrics (results.json's "tests"; data: its "fingerprint" and
    "run") judged against baseline, each node-scoped metric keyed by its
    node: the run's end calls it (runend.RunEnd.compare), in a child."""
    from .scope import catalogue_of, labeler

    return list(compare_run(tests, baseline, labeler(data, catalogue_of(data))))

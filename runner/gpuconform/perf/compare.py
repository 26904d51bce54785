"""`gpuconform compare A B`: what changed from one run to another.

Its job: two given runs against each other (a driver before and after, two
hosts), where there is no baseline of K runs to give the run-to-run spread.
It reports and decides nothing: `gpuconform compare` exits 0 whatever it
finds, and its verdicts are never written into a run's results.json. Whether
a night regressed is judge.py's question, answered with gate.py's rule
against the baseline's runs.

Test states (fixed, regressed, changed, new, removed) and, per metric, A's
samples against B's. Two single runs carry no run-to-run spread, so the rule
is the sample-level one, and it says so: a metric is

  insufficient  when the sizes cannot give p < alpha whatever the data (the
                smallest one-sided Mann-Whitney p-value is 1 / C(m+n, m)):
                5 + 5 samples at alpha 0.01, 4 + 6, 3 + 7, 2 + 13, 1 + 100;
  regression    when the one-sided Mann-Whitney test finds B worse (p < alpha)
                AND B's good-side quartile (the 25th percentile when lower is
                better, the 75th when higher) moved the bad way by at least
                min_effect / 2: significance alone is not enough, because the
                samples of one run share its offset and two clean runs differ
                at p < 1e-10 all the time; the good side, because interference
                only makes samples worse;
  improvement   the same the good way; unchanged otherwise;
  new, missing  in one run only.

Where a committed baseline (data/baselines/) exists for B's fingerprint, its
per-metric verdict on whether the metric can gate at all is shown beside each
line: a metric that baseline keeps for trends only (gate.py) is marked
"trend only", since a difference between two runs of it says little. A
night's regressions are judged against that baseline by `gpuconform run`, not
here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from ..core import fmt, stats
from ..core.hist import samples_json
from .baseline import Baseline, find_baseline
from .scope import catalogue_of, labeler
from .judge import MetricComparison
from ..core.runmetrics import RunMetric, load_results, results_fingerprint, run_metrics

__all__ = ["SampleComparison", "ResultsDiff", "compare_samples", "diff_results",
           "compare_results", "DECISION_FRACTION", "FAILURE_STATES"]

# A change is flagged from this fraction of min_effect on.
DECISION_FRACTION = 0.5
FAILURE_STATES = frozenset(
    {"dmesg-warn", "dmesg-fail", "fail", "error", "incomplete", "timeout", "crash", "abort"})


@dataclass
class SampleComparison(MetricComparison):
    """One metric of A (the reference) against the same metric of B;
    samples_base are A's samples; trend: the committed baseline of B's
    fingerprint keeps the metric for trends only."""
    n_base: int = 0
    n_run: int = 0
    median_base: float | None = None
    median_run: float | None = None
    rel_change: float | None = None  # of the median
    p_value: float | None = None  # one-sided Mann-Whitney, in the direction of the change
    method: str = ""  # "exact" | "normal" | ""
    quartile_base: float | None = None  # the good-side quartile: the decision
    quartile_run: float | None = None
    quartile_change: float | None = None
    alpha: float = 0.01
    min_effect: float = 0.05

    @property
    def threshold(self) -> float:
        return self.min_effect * DECISION_FRACTION

    def explain(self) -> str:
        """The evidence for the verdict, in one line."""
        v = self.verdict
        tag = f" [trend only: {self.trend}]" if self.trend else ""
        if v == "new":
            return self.one_side("not in A", "median", self.median_run, self.n_run,
                                 "samples") + tag
        if v == "missing":
            return self.one_side("in A but not recorded by B", "A's median", self.median_base,
                                 self.n_base, "samples") + tag
        head = (f"median {fmt.value(self.median_base, self.unit)} -> "
                f"{fmt.value(self.median_run, self.unit)} "
                f"({fmt.pct(self.rel_change)}, {self.better} is better)")
        if v == "insufficient":
            return (f"insufficient: {head}; {self.n_base} + {self.n_run} samples cannot give "
                    f"p < {self.alpha:g} (smallest possible p "
                    f"{stats.min_p_value(self.n_base, self.n_run):.3g}){tag}")
        q = "25th" if self.better == "lower" else "75th"
        quart = (f"{q} percentile {fmt.value(self.quartile_base, self.unit)} -> "
                 f"{fmt.value(self.quartile_run, self.unit)} ({fmt.pct(self.quartile_change)})")
        mw = (f"Mann-Whitney one-sided p={fmt.p_value(self.p_value)} ({self.method}, "
              f"n={self.n_base}/{self.n_run})")
        limit = fmt.pct_abs(self.threshold)
        if v in ("regression", "improvement"):
            why = f"p < {self.alpha:g} and the {q} percentile moved by {limit} or more"
        elif self.p_value is not None and self.p_value < self.alpha:
            why = f"significant, but the {q} percentile moved by less than {limit}"
        else:
            why = f"p >= {self.alpha:g}: no evidence of a change"
        return f"{v}: {head}; {quart}; {mw}: {why}{tag}"

    def to_json(self) -> dict[str, Any]:
        def num(v: float | None) -> float | None:
            return v if v is not None and math.isfinite(v) else None

        return {"key": self.key, "test": self.test, "metric": self.metric, "unit": self.unit,
                "better": self.better, "verdict": self.verdict, "n_base": self.n_base,
                "n_run": self.n_run, "median_base": num(self.median_base),
                "median_run": num(self.median_run), "rel_change": num(self.rel_change),
                "p_value": num(self.p_value), "method": self.method,
                "quartile_base": num(self.quartile_base), "quartile_run": num(self.quartile_run),
                "quartile_change": num(self.quartile_change), "alpha": self.alpha,
                "min_effect": self.min_effect, "note": self.note, "trend": self.trend,
                "explain": self.explain(), **_samples_json("base", self.samples_base),
                **_samples_json("run", self.samples_run)}


def _samples_json(side: str, samples: Sequence[float]) -> dict[str, Any]:
    """samples_SIDE, and counts_SIDE for a histogram (hist.py)."""
    j = samples_json(samples)
    return {f"samples_{side}": j["samples"],
            **({f"counts_{side}": j["counts"]} if "counts" in j else {})}


def compare_samples(a: RunMetric | None, b: RunMetric | None,
                    min_effect: float = 0.05, alpha: float = 0.01,
                    note: str = "") -> SampleComparison:
    """The verdict on one metric, A's samples against B's (the module's rule).
    It is shown by its key without its node."""
    ref = b if b is not None else a
    assert ref is not None, "compare_samples needs a metric of A or of B"
    test, name = ref.key.test, ref.key.name
    sa: Sequence[float] = a.samples if a is not None else ()
    sb: Sequence[float] = b.samples if b is not None else ()
    c = SampleComparison(test, name, ref.unit, ref.better, "unchanged", note=note,
                         samples_base=sa, samples_run=sb, n_base=len(sa),
                         n_run=len(sb), median_base=stats.median(sa) if sa else None,
                         median_run=stats.median(sb) if sb else None, alpha=alpha,
                         min_effect=min_effect)
    if a is None or b is None:
        c.verdict = "new" if a is None else "missing"
        return c
    assert c.median_base is not None and c.median_run is not None
    c.rel_change = stats.relative_change(c.median_base, c.median_run)
    if (a.unit, a.better) != (b.unit, b.better):
        c.verdict = "new"
        c.note = (f"the metric changed from {a.unit!r}, {a.better} is better, to {b.unit!r}, "
                  f"{b.better} is better: not comparable")
        return c
    if not stats.can_reach(len(sa), len(sb), alpha):
        c.verdict = "insufficient"
        return c
    worse: Literal["greater", "less"] = "greater" if b.better == "lower" else "less"
    good: Literal["greater", "less"] = "less" if b.better == "lower" else "greater"
    p_worse = stats.mann_whitney_u(sb, sa, worse).p_value
    mw = stats.mann_whitney_u(sb, sa, good)
    level = 0.25 if b.better == "lower" else 0.75
    c.quartile_base, c.quartile_run = stats.quantile(sa, level), stats.quantile(sb, level)
    c.quartile_change = stats.relative_change(c.quartile_base, c.quartile_run)
    sign = 1.0 if b.better == "lower" else -1.0
    c.method = mw.method
    if p_worse < alpha and sign * c.quartile_change >= c.threshold:
        c.verdict, c.p_value = "regression", p_worse
    elif mw.p_value < alpha and -sign * c.quartile_change >= c.threshold:
        c.verdict, c.p_value = "improvement", mw.p_value
    else:
        c.verdict, c.p_value = "unchanged", min(p_worse, mw.p_value)
    return c


@dataclass
class ResultsDiff:
    a: str
    b: str
    n_a: int
    n_b: int
    fixed: list[tuple[str, str, str]]  # (name, state in A, state in B)
    regressed: list[tuple[str, str, str, str]]  # (name, A, B, reason in B)
    changed: list[tuple[str, str, str]]
    new: list[tuple[str, str]]  # (name, state in B)
    removed: list[tuple[str, str]]  # (name, state in A)
    comparisons: list[SampleComparison]
    baseline: str | None = None  # the committed baseline whose trend marks are shown

    def render(self) -> str:
        lines = [f"gpuconform compare: A = {self.a} ({self.n_a} tests), "
                 f"B = {self.b} ({self.n_b} tests)"]
        counts: dict[str, int] = {}
        for c in self.comparisons:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
        trend = sum(1 for c in self.comparisons if c.trend)
        lines.append(
            f"tests: {len(self.fixed)} fixed, {len(self.regressed)} regressed, "
            f"{len(self.changed)} changed, {len(self.new)} new, {len(self.removed)} removed; "
            "metrics: " + (", ".join(f"{n} {v}" for v, n in counts.items()) or "none")
            + (f" ({trend} of them trend only in {self.baseline})" if trend else ""))

        def section(title: str, rows: list[str]) -> None:
            if rows:
                lines.append(f"{title} ({len(rows)}):")
                lines.extend(f"  {r}" for r in rows)

        section("fixed", [f"{n}: {a} -> {b}" for n, a, b in self.fixed])
        section("regressed", [f"{n}: {a} -> {b}" + (f": {fmt.one_line(r, 200)}" if r else "")
                              for n, a, b, r in self.regressed])
        section("changed", [f"{n}: {a} -> {b}" for n, a, b in self.changed])
        section("new", [f"{n}: {s}" for n, s in self.new])
        section("removed", [f"{n}: {s}" for n, s in self.removed])
        order = {v: i for i, v in enumerate(("regression", "improvement", "missing", "new",
                                              "insufficient", "unchanged"))}
        perf = sorted(self.comparisons,
                      key=lambda c: (c.trend is not None, order.get(c.verdict, 9), c.key))
        if perf:
            lines.append(f"perf ({len(perf)} metrics, A is the reference):")
            lines.extend(f"  {c.key}: {c.explain()}" for c in perf)
        return "\n".join(lines) + "\n"


def _trend_marks(data: Mapping[str, Any], baselines: list[Path] | None) -> tuple[
        dict[str, str], str | None]:
    """The committed baseline of the results' fingerprint: its trend-only
    metrics (key -> why) and its path; nothing when there is none."""
    from .baseline import load_baseline

    fp = results_fingerprint(data)
    path = find_baseline(fp, baselines) if fp is not None else None
    if path is None:
        return {}, None
    b: Baseline = load_baseline(path)
    return {k: a.trend for k, a in b.assessments().items() if a.trend}, str(path)


def diff_results(a_dir: Path, b_dir: Path, min_effect: float = 0.05, alpha: float = 0.01,
                 baselines: list[Path] | None = None) -> ResultsDiff:
    da = load_results(Path(a_dir))
    db = load_results(Path(b_dir))
    ta: dict[str, Any] = da["tests"]
    tb: dict[str, Any] = db["tests"]
    fixed: list[tuple[str, str, str]] = []
    regressed: list[tuple[str, str, str, str]] = []
    changed: list[tuple[str, str, str]] = []
    for name in ta:
        if name not in tb:
            continue
        sa, sb = ta[name]["result"], tb[name]["result"]
        if sa == sb:
            continue
        if sa in FAILURE_STATES and sb == "pass":
            fixed.append((name, sa, sb))
        elif sa == "pass" and sb in FAILURE_STATES:
            regressed.append((name, sa, sb, str(tb[name].get("reason", ""))))
        else:
            changed.append((name, sa, sb))
    new = [(n, tb[n]["result"]) for n in tb if n not in ta]
    removed = [(n, ta[n]["result"]) for n in ta if n not in tb]
    ma = run_metrics(ta, source=str(a_dir), node=labeler(da, catalogue_of(da)))
    mb = run_metrics(tb, source=str(b_dir), node=labeler(db, catalogue_of(db)))
    trends, used = _trend_marks(db, baselines)
    comps: list[SampleComparison] = []
    for key in sorted(set(ma) | set(mb)):
        a, b = ma.get(key), mb.get(key)
        if a is not None and b is None:
            if a.key.record not in tb:
                continue  # B did not run that test at all
            c = compare_samples(a, None, min_effect, alpha,
                                note=f"B's {a.key.record} did not record it")
        else:
            c = compare_samples(a, b, min_effect, alpha)
        c.trend = trends.get(key)
        comps.append(c)
    return ResultsDiff(str(a_dir), str(b_dir), len(ta), len(tb), fixed, regressed, changed,
                       new, removed, comps, used)


def compare_results(a_dir: Path, b_dir: Path, baselines: list[Path] | None = None) -> str:
    """The `gpuconform compare A B` report."""
    return diff_results(a_dir, b_dir, baselines=baselines).render()

#!/usr/bin/python3
"""Benchmark (not a test): how well the baseline comparison tells a 5%
slowdown from noise, on this machine.

    /usr/bin/python3 bench/detection_power.py [--build DIR] [--runs 20] [--slowdown 1.05]
                                              [--baseline-runs 1] [--min-effect 0.05]
                                              [--alpha 0.01] [--keep DIR]

Drives selftest_metrics@spin (a fixed CPU workload timed 50 times, its work
multiplied by $GPUCONFORM_SELFTEST_SLOWDOWN) through the real runner
(`gpuconform run --selftest`): one clean run makes the baseline
(update_baseline; --baseline-runs K pools K clean runs, append=True), then
RUNS clean runs and RUNS runs with the slowdown,
interleaved so that a drift of the machine hits both alike, each compared
with the baseline by compare_run. Prints the baseline's between-run drift
(with 3 or more baseline runs) and the limit it sets, every comparison, the
false alarms (clean runs flagged), the detections (slow runs flagged as
regressions), the noise within and between runs, and, for contrast, what
the rule without the between-run drift limit (the same samples, no run
sizes) and the rule "p < alpha and the median moved by more than
min_effect" would have said.

Target of the issue: >= 19/20 detected, <= 1/20 false alarms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "runner"))

from gpuconform.baseline import (  # noqa: E402
    DECISION_FRACTION,
    MIN_DRIFT_RUNS,
    Baseline,
    BaselineMetric,
    Comparison,
    compare_run,
    drift_factor,
    load_baseline,
    run_spread,
    update_baseline,
)
from gpuconform import stats  # noqa: E402
from gpuconform.fingerprint import current_fingerprint  # noqa: E402

KEY = "selftest_metrics@spin:spin"
KEYWORD = "selftest_metrics and spin"


@dataclass
class Outcome:
    label: str
    slowdown: float
    comparison: Comparison
    seconds: float
    without_drift: Comparison  # the same run against the baseline without its run sizes

    @property
    def median(self) -> float:
        return num(self.comparison.median_run)

    @property
    def qchange(self) -> float:
        return num(self.comparison.quartile_change)

    @property
    def p(self) -> float:
        return num(self.comparison.p_value)

    @property
    def run_cv(self) -> float:
        s = self.comparison.samples_run
        med = statistics.median(s)
        return 1.4826 * statistics.median(abs(x - med) for x in s) / med


def num(v: float | None) -> float:
    """A figure compare_run gives for every comparison of two sample sets."""
    assert v is not None, "a comparison without its figures (insufficient samples?)"
    return v


def run_once(build: Path, results: Path, slowdown: float) -> tuple[dict, float]:
    env = {**os.environ, "GPUCONFORM_SELFTEST_SLOWDOWN": repr(slowdown),
           "GPUCONFORM_PYTHON": sys.executable}
    t0 = time.monotonic()
    # The kernel log is not watched: on a shared machine other jobs' messages
    # would end runs; the comparison is done here, not by the run.
    p = subprocess.run(
        [str(REPO_ROOT / "gpuconform"), "run", "--build", str(build), "--selftest",
         "-k", KEYWORD, "--results", str(results), "--kmsg", "off", "--taint-file", "off",
         "--no-baseline", "--no-report", "--retries", "0", "--progress", "off"],
        env=env, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t0
    try:
        data = json.loads((results / "results.json").read_text())
        rec = data["tests"]["selftest_metrics@spin"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"detection_power: no selftest_metrics@spin result ({e}; an old build?); "
                 f"exit {p.returncode}:\n{p.stdout}\n{p.stderr}")
    if not any(m.get("name") == "spin" for m in rec.get("metrics", [])):
        sys.exit(f"detection_power: selftest_metrics@spin recorded no metric "
                 f"({rec.get('result')}: {rec.get('reason')})")
    if rec.get("result") != "pass":
        print(f"  (note: {results.name} ended {rec.get('result')}: {rec.get('reason')})")
    return data, took


def pct(v: float | None) -> str:
    return "?" if v is None else f"{100 * v:+6.2f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, default=REPO_ROOT / "build")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--slowdown", type=float, default=1.05)
    ap.add_argument("--baseline-runs", type=int, default=1,
                    help="clean runs pooled into the baseline (default 1)")
    ap.add_argument("--min-effect", type=float, default=0.05)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--keep", type=Path, default=None, help="keep the result directories here")
    args = ap.parse_args()
    build = args.build.absolute()
    if not (build / "gpuconform-selftest.txt").is_file():
        sys.exit(f"detection_power: {build} is not a gpuconform build (meson setup, ninja)")

    work = args.keep or Path(tempfile.mkdtemp(prefix="gpuconform-detection-"))
    work.mkdir(parents=True, exist_ok=True)
    fp = current_fingerprint()
    print(f"machine: {fp.describe()}; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"rule: min_effect {args.min_effect:g}, alpha {args.alpha:g}; "
          f"{args.runs} clean + {args.runs} x{args.slowdown:g} runs; results in {work}")

    bpath = work / "baseline.json"
    if bpath.exists():
        bpath.unlink()
    for k in range(args.baseline_runs):
        _, took = run_once(build, work / f"baseline-run-{k + 1}", 1.0)
        update_baseline(work / f"baseline-run-{k + 1}", bpath, append=True)
    base = load_baseline(bpath)
    bs = base.metrics[KEY].samples
    bmed = statistics.median(bs)
    print(f"baseline: {args.baseline_runs} run(s), {len(bs)} samples, median {bmed / 1e6:.3f} ms, "
          f"robust CV {100 * 1.4826 * statistics.median(abs(x - bmed) for x in bs) / bmed:.2f}% "
          f"({took:.1f} s a run through the runner)")
    bm = base.metrics[KEY]
    # the rule before the between-run drift: the same samples, no run sizes
    pooled = Baseline(base.fingerprint, base.created, base.source,
                      {**base.metrics, KEY: BaselineMetric(bm.unit, bm.better, bm.samples)},
                      base.durations)
    groups = bm.run_groups
    if len(groups) >= MIN_DRIFT_RUNS:
        kf = drift_factor(len(groups))
        dq = run_spread(groups, stats.quantile(bs, 0.25), 0.25)
        dm = run_spread(groups, bmed, 0.5)
        floor = args.min_effect * DECISION_FRACTION
        print(f"between-run drift of the baseline's {len(groups)} runs: 25th percentile "
              f"{100 * dq:.2f}%, median {100 * dm:.2f}%; limit max({100 * floor:g}%, "
              f"{kf:.2f} x {100 * dq:.2f}%) = {100 * max(floor, kf * dq):.2f}%")
    else:
        print(f"between-run drift unknown ({len(groups)} baseline run(s), "
              f"{MIN_DRIFT_RUNS} needed): limit min_effect / 2")
    print(f"{'run':<8} {'verdict':<12} {'median':>10} {'change':>8} {'25th pct':>9} "
          f"{'p':>9} {'run CV':>7}  {'w/o drift limit':<12}")

    outcomes: list[Outcome] = []
    for i in range(args.runs):
        pair = [("clean", 1.0), ("slow", args.slowdown)]
        if i % 2:
            pair.reverse()  # neither kind always first
        for kind, factor in pair:
            label = f"{kind}-{i + 1:02d}"
            data, took = run_once(build, work / label, factor)
            (c,) = [c for c in compare_run(data["tests"], base, args.min_effect, args.alpha)
                    if c.key == KEY]
            (c0,) = [c for c in compare_run(data["tests"], pooled, args.min_effect, args.alpha)
                     if c.key == KEY]
            o = Outcome(label, factor, c, took, c0)
            outcomes.append(o)
            print(f"{label:<8} {c.verdict:<12} {o.median / 1e6:>8.3f}ms "
                  f"{pct(c.rel_change):>8} {pct(c.quartile_change):>9} {o.p:>9.2g} "
                  f"{100 * o.run_cv:>6.2f}%  {c0.verdict:<12}", flush=True)

    clean = [o for o in outcomes if o.slowdown == 1.0]
    slow = [o for o in outcomes if o.slowdown != 1.0]

    def naive(o: Outcome) -> bool:
        c = o.comparison
        return c.p_value is not None and c.p_value < args.alpha and \
            c.rel_change is not None and c.rel_change > args.min_effect

    false_reg = sum(o.comparison.verdict == "regression" for o in clean)
    spurious = sum(o.comparison.verdict in ("regression", "improvement") for o in clean)
    detected = sum(o.comparison.verdict == "regression" for o in slow)
    clean_meds = [o.median for o in clean]
    slow_changes = [o.qchange for o in slow]
    clean_changes = [o.qchange for o in clean]
    print()
    print(f"false alarms: {false_reg}/{len(clean)} clean runs flagged as regressions "
          f"({spurious}/{len(clean)} flagged either way)")
    print(f"detections:   {detected}/{len(slow)} runs with a x{args.slowdown:g} slowdown "
          "flagged as regressions")
    print(f"  without the between-run drift limit (min_effect / 2 only): "
          f"{sum(o.without_drift.verdict == 'regression' for o in clean)}/{len(clean)} false "
          f"alarms ({sum(o.without_drift.verdict in ('regression', 'improvement') for o in clean)}"
          f" either way), {sum(o.without_drift.verdict == 'regression' for o in slow)}/{len(slow)}"
          " detections")
    print(f"  the rule 'p < alpha and median change > min_effect' instead: "
          f"{sum(naive(o) for o in clean)}/{len(clean)} false alarms, "
          f"{sum(naive(o) for o in slow)}/{len(slow)} detections")
    print(f"noise within a run: robust CV (1.4826 MAD / median) median "
          f"{100 * statistics.median(o.run_cv for o in outcomes):.2f}%, max "
          f"{100 * max(o.run_cv for o in outcomes):.2f}%")
    print(f"noise between runs: clean medians' CV "
          f"{100 * statistics.stdev(clean_meds) / statistics.mean(clean_meds):.2f}%; the "
          f"baseline run's median sits {pct(bmed / statistics.median(clean_meds) - 1)} from "
          "the clean runs' median")
    print(f"25th percentile change: clean {pct(min(clean_changes))}..{pct(max(clean_changes))}, "
          f"slow {pct(min(slow_changes))}..{pct(max(slow_changes))}")
    print(f"p-values: clean median {statistics.median(o.p for o in clean):.2g}; "
          f"slow max {max(o.p for o in slow):.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

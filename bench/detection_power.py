#!/usr/bin/env python3
"""Benchmark (not a test): does the regression gate (runner/gpuconform/perf/gate.py)
catch a slowdown made on purpose, and stay quiet on clean runs?

    bench/detection_power.py cpu [--build DIR] [--runs 20] [--slowdown 0.05]
                                 [--baseline-runs 5]
    bench/detection_power.py gpu [--build DIR] [--runs 20] [--slowdown 0.05]
                                 [--shapes chain16,chain256] [--baseline FILE] [--json FILE]

cpu: selftest_metrics@spin (a fixed CPU workload timed 50 times; its work is
multiplied by $GPUCONFORM_SELFTEST_SLOWDOWN) through the real runner. A
baseline of --baseline-runs clean runs is made here, in a temporary file.

gpu: cuda_bubbles' gaps subtest, its graph-SHAPE dynamic subtests (1000 graph
launches each, as in the suite), run directly with GPUCONFORM_METRICS_FILE;
the slowdown lengthens every stamp kernel's spin ($GPUCONFORM_BUBBLES_WORK_NS,
set only here) so that each graph's time grows by --slowdown, computed from
the baseline's own graph time per kernel. Judged against the COMMITTED
baseline of this machine's fingerprint (data/baselines/), so the figures say
what a night on this machine would say. The gap metrics of the same shapes
are the control: a longer kernel does not change the gap between two, so
they must stay unflagged in every run.

Both: RUNS clean runs and RUNS slowed runs, interleaved so that a drift of
the machine hits both alike, each compared with the baseline by the runner's
own compare_run. Per metric: its limit and MDE, the change the slowdown
achieved (median of the slowed runs' statistic over the clean runs'),
detections (slowed runs flagged as regressions) and false alarms (clean runs
flagged, either way). Target: >= 19/20 detected, <= 1/20 false alarms,
for the metrics whose MDE is below the slowdown.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "runner"))

from gpuconform.core.fingerprint import current_fingerprint  # noqa: E402
from gpuconform.perf.baseline import Baseline, find_baseline, load_baseline  # noqa: E402
from gpuconform.perf.baseline_update import update_baseline  # noqa: E402
from gpuconform.perf.judge import GateComparison, compare_run  # noqa: E402

# One run: (slowed?) -> results.json's "tests" records.
Runner = Callable[[bool], dict[str, Any]]


@dataclass
class Tally:
    key: str
    clean: list[GateComparison] = field(default_factory=list)
    slow: list[GateComparison] = field(default_factory=list)

    def flagged(self, side: list[GateComparison], verdicts: tuple[str, ...]) -> int:
        return sum(1 for c in side if c.verdict in verdicts)

    def achieved(self) -> float | None:
        clean = [c.value for c in self.clean if c.value is not None]
        slow = [c.value for c in self.slow if c.value is not None]
        if not clean or not slow:
            return None
        return statistics.median(slow) / statistics.median(clean) - 1

    def row(self) -> str:
        c = (self.slow or self.clean)[0]
        mde = "trend" if c.trend else f"{100 * (c.mde or 0):.2f}%"
        lim = "-" if c.limit is None else f"{100 * c.limit:.2f}%"
        got = self.achieved()
        n = len(self.clean)
        return (f"{self.key}\n    limit {lim}, MDE {mde}; slowdown achieved "
                f"{'?' if got is None else f'{100 * got:+.2f}%'}; detected "
                f"{self.flagged(self.slow, ('regression',))}/{len(self.slow)}, false alarms "
                f"{self.flagged(self.clean, ('regression', 'improvement'))}/{n} "
                f"(verdicts clean: {_counts(self.clean)}; slowed: {_counts(self.slow)})")


def _counts(cs: list[GateComparison]) -> str:
    out: dict[str, int] = {}
    for c in cs:
        out[c.verdict] = out.get(c.verdict, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(out.items()))


def measure(run: Runner, baseline: Baseline, keys: list[str], runs: int) -> dict[str, Tally]:
    tallies = {k: Tally(k) for k in keys}
    for i in range(2 * runs):
        slowed = i % 2 == 1
        by_key = {c.key: c for c in compare_run(run(slowed), baseline)}
        for k in keys:
            if k not in by_key:
                sys.exit(f"detection_power: run {i + 1} recorded no {k}")
            (tallies[k].slow if slowed else tallies[k].clean).append(by_key[k])
        line = ", ".join(f"{by_key[k].verdict} {100 * (by_key[k].change or 0):+.2f}%"
                         for k in keys)
        print(f"  run {i + 1:2d} {'slowed' if slowed else 'clean '}: {line}", flush=True)
    return tallies


# --------------------------------------------------------------------- cpu

CPU_KEY = "selftest_metrics@spin:spin"


def cpu_runner(build: Path, tmp: Path, slowdown: float) -> Runner:
    count = [0]

    def run(slowed: bool) -> dict[str, Any]:
        count[0] += 1
        results = tmp / f"r{count[0]}"
        env = {**os.environ, "GPUCONFORM_PYTHON": sys.executable,
               "GPUCONFORM_SELFTEST_SLOWDOWN": repr(1 + slowdown if slowed else 1.0)}
        subprocess.run(
            [str(REPO_ROOT / "gpuconform"), "run", "--build", str(build), "--selftest", "-k",
             "selftest_metrics and spin", "--results", str(results), "--kmsg", "off",
             "--taint-file", "off", "--no-baseline", "--no-report", "--retries", "0",
             "--progress", "off"], env=env, capture_output=True, text=True, timeout=600)
        try:
            tests: dict[str, Any] = json.loads((results / "results.json").read_text())["tests"]
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"detection_power: {results}: no results ({e}): is {build} a build?")
        return tests

    return run


def cpu(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="gc-detect-") as t:
        tmp = Path(t)
        run = cpu_runner(args.build, tmp, args.slowdown)
        dirs = []
        for i in range(args.baseline_runs):
            run(False)
            dirs.append(tmp / f"r{i + 1}")
        baseline = load_baseline(update_baseline(dirs, tmp / "baseline.json"))
        print(f"baseline: {args.baseline_runs} clean runs of {CPU_KEY}")
        tallies = measure(run, baseline, [CPU_KEY], args.runs)
    report(tallies, args)
    return 0


# --------------------------------------------------------------------- gpu


def gpu_keys(shape: str) -> tuple[str, str]:
    test = f"cuda_bubbles@gaps@graph-{shape}"
    return f"{test}:graph-time.graph.{shape}", f"{test}:gap.graph.{shape}"


def work_for(baseline: Baseline, shapes: list[str], slowdown: float, default_ns: int) -> int:
    """The spin per kernel that lengthens the first shape's graph time by at
    least slowdown: a chain's time is its kernels' spin plus their gaps, so
    each kernel needs slowdown x (graph time / kernels) more. The spin ends
    at a tick of the device clock, whose step is the graph time's resolution
    (32 ns on an H100: 1000 ns spins 1024, 1088 spins 1088, +3.6% of a chain
    kernel, where 5% was asked), so the spin is rounded up to whole ticks."""
    key = gpu_keys(shapes[0])[0]
    a = baseline.assessments().get(key)
    bm = baseline.metrics.get(key)
    if a is None or a.center is None or bm is None or bm.res is None:
        sys.exit(f"detection_power: the baseline has no usable {key}")
    kernels = int(shapes[0].removeprefix("chain")) if shapes[0].startswith("chain") else 0
    if kernels <= 0:
        sys.exit(f"detection_power: {shapes[0]}: the slowdown is computed for chain shapes")
    per_kernel_ns = a.center * 1000 / kernels  # graph-time is in us
    tick = bm.res * 1000
    spun = math.ceil(default_ns / tick) * tick  # what default_ns really spins
    return int(math.ceil((spun + slowdown * per_kernel_ns) / tick) * tick)


def gpu_runner(build: Path, tmp: Path, shapes: list[str], work_ns: int) -> Runner:
    binary = build / "tests" / "cuda" / "cuda_bubbles"
    count = [0]

    def run(slowed: bool) -> dict[str, Any]:
        count[0] += 1
        metrics: list[dict[str, Any]] = []
        for shape in shapes:
            mfile = tmp / f"m{count[0]}-{shape}.jsonl"
            env = {**os.environ, "GPUCONFORM_METRICS_FILE": str(mfile)}
            if slowed:
                env["GPUCONFORM_BUBBLES_WORK_NS"] = str(work_ns)
            p = subprocess.run([str(binary), "--run-subtest", "gaps", "--dynamic-subtest",
                                f"graph-{shape}"], env=env, capture_output=True, text=True,
                               timeout=300)
            if p.returncode != 0:
                sys.exit(f"detection_power: {binary} gaps graph-{shape} exited "
                         f"{p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
            metrics += [json.loads(x) for x in mfile.read_text().splitlines() if x.strip()]
        return {"cuda_bubbles@gaps": {"result": "pass", "metrics": metrics}}

    return run


def gpu(args: argparse.Namespace) -> int:
    path = args.baseline or find_baseline(current_fingerprint())
    if path is None:
        sys.exit(f"detection_power: no committed baseline for {current_fingerprint().key()}")
    baseline = load_baseline(Path(path))
    shapes = args.shapes.split(",")
    work_ns = work_for(baseline, shapes, args.slowdown, 1000)
    print(f"baseline: {path} ({len(baseline.runs)} runs); slowed runs spin {work_ns} ns "
          f"per kernel instead of 1000")
    keys = [k for s in shapes for k in gpu_keys(s)]
    with tempfile.TemporaryDirectory(prefix="gc-detect-") as t:
        tallies = measure(gpu_runner(args.build, Path(t), shapes, work_ns), baseline, keys,
                          args.runs)
    report(tallies, args)
    if args.json:
        args.json.write_text(json.dumps({k: {"clean": [c.value for c in v.clean],
                                             "slow": [c.value for c in v.slow],
                                             "limit": v.clean[0].limit, "mde": v.clean[0].mde,
                                             "trend": v.clean[0].trend}
                                         for k, v in tallies.items()}, indent=1))
    return 0


def report(tallies: dict[str, Tally], args: argparse.Namespace) -> None:
    print(f"\n{args.subject}: {args.runs} clean + {args.runs} slowed runs "
          f"(slowdown {100 * args.slowdown:g}%):")
    for t in tallies.values():
        print(t.row())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("subject", choices=("cpu", "gpu"))
    ap.add_argument("--build", type=Path, default=REPO_ROOT / "build")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--slowdown", type=float, default=0.05)
    ap.add_argument("--baseline-runs", type=int, default=5, help="cpu: clean runs of the "
                    "baseline made here (default 5)")
    ap.add_argument("--shapes", default="chain16,chain256", help="gpu: graph shapes (chains)")
    ap.add_argument("--baseline", type=Path, default=None, help="gpu: baseline file (default: "
                    "the committed one of this machine's fingerprint)")
    ap.add_argument("--json", type=Path, default=None, help="gpu: every run's statistic")
    args = ap.parse_args()
    return cpu(args) if args.subject == "cpu" else gpu(args)


if __name__ == "__main__":
    sys.exit(main())

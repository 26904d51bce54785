#!/usr/bin/python3
"""Benchmark (not a test): the runner's cost per subtest.

Runs selftest_many's N trivial subtests, in rounds: directly, one process per
subtest (`BIN --run-subtest tNNN`, output to files, as the runner does: the
spawn floor), then through `gpuconform run` (and through the gpuconform of
each --also checkout, e.g. another commit's, so that both are timed under
the same load). Prints, per round and as ranges over the rounds, the median
per subtest, the runner's wall time per subtest and its ratio to the floor.
--tmpdir puts the results, the output files and the runner's TMPDIR
elsewhere (a tmpfs: the journal's fsyncs cost nothing there, which leaves the
runner's own work). Usage:
    bench/runner_overhead.py [--build DIR] [--n N] [--rounds R] [--kmsg]
                             [--tmpdir DIR] [--also CHECKOUT]...
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def direct(binary: Path, names: list[str], tmp: Path) -> list[float]:
    times: list[float] = []
    for name in names:
        with open(tmp / "out", "wb") as out, open(tmp / "err", "wb") as err:
            t0 = time.monotonic()
            subprocess.run([str(binary), "--run-subtest", name], stdout=out, stderr=err,
                           check=True)
            times.append(time.monotonic() - t0)
    return times


def through_runner(repo: Path, binary: Path, n: int, tmp: Path,
                   kmsg: bool) -> tuple[float, list[float]]:
    build = tmp / "build"
    build.mkdir()
    (build / "gpuconform-selftest.txt").write_text(f"{binary}\n")
    results = tmp / "results"
    t0 = time.monotonic()
    subprocess.run([str(repo / "gpuconform"), "run", "--build", str(build),
                    "--selftest", "--results", str(results), "--progress", "off",
                    "--no-baseline", "--no-report",
                    *([] if kmsg else ["--kmsg", "off", "--taint-file", "off"]),
                    "--", "-q", "-k", " or ".join(f"t{i:03d}" for i in range(n)) if n < 1000
                    else "selftest_many"],
                   check=False, stdout=subprocess.DEVNULL,
                   env={**os.environ, "GPUCONFORM_PYTHON": sys.executable,
                        "TMPDIR": str(tmp)})
    wall = time.monotonic() - t0
    tests = json.loads((results / "results.json").read_text())["tests"]
    ran = [t for t in tests.values() if t["result"] == "pass"]
    if len(ran) != n:  # an abort (another process's kernel line), a failure: not timed
        print(f"  ({repo}: {len(ran)} of {n} tests passed: this round is left out)")
        return 0.0, []
    return wall, [t["time"]["end"] - t["time"]["start"] for t in ran]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kmsg", action="store_true",
                    help="watch the kernel log and taint as a real run does (root)")
    ap.add_argument("--tmpdir", default=None, help="where the temporary directories go")
    ap.add_argument("--also", action="append", default=[], metavar="CHECKOUT",
                    help="also time this checkout's gpuconform, in the same rounds")
    a = ap.parse_args()
    binary = Path(a.build).resolve() / "tests/selftest/selftest_many"
    names = [f"t{i:03d}" for i in range(a.n)]
    repos = [REPO, *(Path(r).resolve() for r in a.also)]
    floor: list[float] = []
    per: dict[Path, list[float]] = {r: [] for r in repos}
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    for rnd in range(a.rounds):
        with tempfile.TemporaryDirectory(dir=a.tmpdir) as d:
            d_med = statistics.median(direct(binary, names, Path(d)))
        floor.append(d_med)
        print(f"round {rnd + 1}: direct median {d_med * 1e3:.2f} ms per subtest (spawn to exit)")
        for repo in repos:
            with tempfile.TemporaryDirectory(dir=a.tmpdir) as d:
                wall, r_times = through_runner(repo, binary, a.n, Path(d), a.kmsg)
            if not r_times:
                per[repo].append(float("nan"))
                continue
            per[repo].append(wall / len(r_times))
            print(f"  {repo}: {per[repo][-1] * 1e3:.2f} ms per subtest of wall time "
                  f"(ratio {per[repo][-1] / d_med:.2f}); median "
                  f"{statistics.median(r_times) * 1e3:.2f} ms per item (start to end)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(f"floor: {min(floor) * 1e3:.2f}-{max(floor) * 1e3:.2f} ms per subtest")
    for repo in repos:
        timed = [(p, p / f) for p, f in zip(per[repo], floor) if p == p]  # NaN: left out
        if not timed:
            print(f"{repo}: no round timed")
            continue
        walls, ratios = [t[0] for t in timed], [t[1] for t in timed]
        print(f"{repo}: {min(walls) * 1e3:.2f}-{max(walls) * 1e3:.2f} ms per subtest, "
              f"ratio {min(ratios):.2f}-{max(ratios):.2f} ({len(timed)} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

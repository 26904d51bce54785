#!/usr/bin/python3
"""Benchmark (not a test): the runner's cost per subtest.

Runs selftest_many's 1000 trivial subtests twice in one go: directly, one
process per subtest (`BIN --run-subtest tNNN`, output to files, as the runner
does), and through `gpuconform run`. Prints the medians per subtest, the
runner's overhead (wall time per subtest minus the direct median) and the
ratio. Usage: bench/runner_overhead.py [--build DIR] [--n N] [--kmsg]
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


def through_runner(binary: Path, n: int, tmp: Path, kmsg: bool) -> tuple[float, list[float]]:
    build = tmp / "build"
    build.mkdir()
    (build / "gpuconform-selftest.txt").write_text(f"{binary}\n")
    results = tmp / "results"
    t0 = time.monotonic()
    subprocess.run([str(REPO / "gpuconform"), "run", "--build", str(build),
                    "--selftest", "--results", str(results), "--progress", "off",
                    "--no-baseline", "--no-report",
                    *([] if kmsg else ["--kmsg", "off", "--taint-file", "off"]),
                    "--", "-q", "-k", " or ".join(f"t{i:03d}" for i in range(n)) if n < 1000
                    else "selftest_many"],
                   check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "GPUCONFORM_PYTHON": sys.executable})
    wall = time.monotonic() - t0
    tests = json.loads((results / "results.json").read_text())["tests"]
    return wall, [t["time"]["end"] - t["time"]["start"] for t in tests.values()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--kmsg", action="store_true",
                    help="watch the kernel log and taint as a real run does (root)")
    a = ap.parse_args()
    binary = Path(a.build).resolve() / "tests/selftest/selftest_many"
    names = [f"t{i:03d}" for i in range(a.n)]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        d_times = direct(binary, names, tmp)
        wall, r_times = through_runner(binary, a.n, tmp, a.kmsg)
    d_med = statistics.median(d_times)
    r_med = statistics.median(r_times)
    per = wall / a.n
    print(f"direct:  median {d_med * 1e3:.2f} ms per subtest (spawn to exit, {a.n} runs)")
    print(f"runner:  median {r_med * 1e3:.2f} ms per item (start to end in results.json), "
          f"{per * 1e3:.2f} ms per subtest of wall time (collection and writing included)")
    print(f"overhead: {(per - d_med) * 1e3:.2f} ms per subtest; ratio runner/direct "
          f"{per / d_med:.2f} (wall), {r_med / d_med:.2f} (per item)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

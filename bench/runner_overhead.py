#!/usr/bin/python3
"""Benchmark (not a test): the runner's cost per subtest.

Runs selftest_many's N trivial subtests, in rounds: directly, one process per
subtest (`BIN --run-subtest tNNN`, output to files, as the runner does: the
spawn floor); then as the least that DESIGN.md's runner must do, in one
pytest run of N items, each spawning its subtest in its own session with
output to files and appending two fsync'd lines (start, result) to a journal
(the engine floor: what is left above it is the runner's own work); then
through `gpuconform run` (and through the gpuconform of each --also
checkout, e.g. another commit's, so that all are timed under the same load).
Prints, per round and as ranges over the rounds, the spawn floor (the
median spawn-to-exit time, and the direct loop's wall time per subtest), the
wall time per subtest of the engine floor and of each runner, and their
ratios to the median floor. A runner's figure is wall time (a mean, with
pytest's start), the floor's a median of the spawn alone: the ratios to the
direct loop's wall time and to the engine floor are printed beside it.
--tmpdir puts the results, the output files, the journals and the runner's
TMPDIR elsewhere (a tmpfs: the fsyncs cost nothing there). Usage:
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


def direct(binary: Path, names: list[str], tmp: Path) -> tuple[float, list[float]]:
    """Wall seconds per subtest of the loop, and each spawn-to-exit time."""
    times: list[float] = []
    w0 = time.monotonic()
    for name in names:
        with open(tmp / "out", "wb") as out, open(tmp / "err", "wb") as err:
            t0 = time.monotonic()
            subprocess.run([str(binary), "--run-subtest", name], stdout=out, stderr=err,
                           check=True)
            times.append(time.monotonic() - t0)
    return (time.monotonic() - w0) / len(names), times


ENGINE_TEST = """\
import os, subprocess
import pytest

BINARY = {binary!r}
NAMES = {names!r}


@pytest.fixture(scope="module")
def journal():
    fd = os.open("journal.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    yield fd
    os.close(fd)


def line(fd, text):
    os.write(fd, text.encode() + b"\\n")
    os.fsync(fd)


@pytest.mark.parametrize("name", NAMES)
def test_subtest(name, journal):
    with open("out", "wb") as out, open("err", "wb") as err:
        proc = subprocess.Popen([BINARY, "--run-subtest", name], stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        line(journal, '{{"event": "start", "test": "%s"}}' % name)
        assert proc.wait() == 0
    line(journal, '{{"event": "result", "test": "%s"}}' % name)
"""


def engine_floor(binary: Path, names: list[str], tmp: Path) -> float:
    """Wall seconds per subtest of the engine floor (see the module comment):
    pytest as the runner starts it (its lean arguments, no plugin autoload
    unless the environment says)."""
    (tmp / "test_floor.py").write_text(ENGINE_TEST.format(binary=str(binary), names=names))
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **os.environ}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "--capture=no", "-p", "no:logging", "test_floor.py"],
                   cwd=tmp, check=True, stdout=subprocess.DEVNULL, env=env)
    return (time.monotonic() - t0) / len(names)


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
    engine: list[float] = []
    walls: list[float] = []  # the direct loop's wall time per subtest
    per: dict[Path, list[float]] = {r: [] for r in repos}
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    for rnd in range(a.rounds):
        with tempfile.TemporaryDirectory(dir=a.tmpdir) as d:
            d_wall, d_times = direct(binary, names, Path(d))
        d_med = statistics.median(d_times)
        floor.append(d_med)
        walls.append(d_wall)
        print(f"round {rnd + 1}: direct median {d_med * 1e3:.2f} ms per subtest (spawn to exit), "
              f"wall {d_wall * 1e3:.2f} ms per subtest")
        with tempfile.TemporaryDirectory(dir=a.tmpdir) as d:
            engine.append(engine_floor(binary, names, Path(d)))
        print(f"  engine floor: {engine[-1] * 1e3:.2f} ms per subtest of wall time "
              f"(ratio {engine[-1] / d_med:.2f}; to the direct wall {engine[-1] / d_wall:.2f})")
        for repo in repos:
            with tempfile.TemporaryDirectory(dir=a.tmpdir) as d:
                wall, r_times = through_runner(repo, binary, a.n, Path(d), a.kmsg)
            if not r_times:
                per[repo].append(float("nan"))
                continue
            per[repo].append(wall / len(r_times))
            print(f"  {repo}: {per[repo][-1] * 1e3:.2f} ms per subtest of wall time "
                  f"(ratio {per[repo][-1] / d_med:.2f}; to the direct wall "
                  f"{per[repo][-1] / d_wall:.2f}; to the engine floor "
                  f"{per[repo][-1] / engine[-1]:.2f}); median "
                  f"{statistics.median(r_times) * 1e3:.2f} ms per item (start to end)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(f"floor: {min(floor) * 1e3:.2f}-{max(floor) * 1e3:.2f} ms per subtest (median), "
          f"{min(walls) * 1e3:.2f}-{max(walls) * 1e3:.2f} ms (wall)")
    e_ratios = [e / f for e, f in zip(engine, floor)]
    print(f"engine floor: {min(engine) * 1e3:.2f}-{max(engine) * 1e3:.2f} ms per subtest, "
          f"ratio {min(e_ratios):.2f}-{max(e_ratios):.2f}")
    for repo in repos:
        timed = [(p, p / f, p / w, p / e) for p, f, w, e in zip(per[repo], floor, walls, engine)
                 if p == p]  # NaN: left out
        if not timed:
            print(f"{repo}: no round timed")
            continue
        cols = list(zip(*timed))
        print(f"{repo}: {min(cols[0]) * 1e3:.2f}-{max(cols[0]) * 1e3:.2f} ms per subtest, "
              f"ratio {min(cols[1]):.2f}-{max(cols[1]):.2f}; to the direct wall "
              f"{min(cols[2]):.2f}-{max(cols[2]):.2f}; to the engine floor "
              f"{min(cols[3]):.2f}-{max(cols[3]):.2f} ({len(timed)} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

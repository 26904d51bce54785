#!/usr/bin/python3
"""Benchmark (not a test): where the runner's time per subtest goes.

Runs `gpuconform run` in this process over selftest_many's subtests with
timers wrapped around the runner's phases (exclusive time: a phase nested in
another is counted once, in the inner one), and prints a table in ms per
subtest, wall and the runner's own CPU (its main thread; the CPU column
is the steadier one on a shared machine). "pytest per item" is what pytest's item protocol costs around the
plugin's own hooks; "child running" is the wait for the binary to exit (the
spawn floor's own time, mostly). Usage:
    bench/runner_phases.py [--build DIR] [--n N] [--kmsg]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "runner"))

_totals: dict[str, list[float]] = {}  # phase -> [wall, CPU] seconds, exclusive
_stack: list[list[Any]] = []  # [start wall, start CPU, nested wall, nested CPU]


def _timed(phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kw: Any) -> Any:
        frame = [time.perf_counter(), time.thread_time(), 0.0, 0.0]
        _stack.append(frame)
        try:
            return fn(*args, **kw)
        finally:
            _stack.pop()
            wall = time.perf_counter() - frame[0]
            cpu = time.thread_time() - frame[1]
            tot = _totals.setdefault(phase, [0.0, 0.0])
            tot[0] += wall - frame[2]
            tot[1] += cpu - frame[3]
            if _stack:
                _stack[-1][2] += wall
                _stack[-1][3] += cpu

    if not fn.__name__.startswith("pytest_"):
        return wrapper
    # pluggy calls a hook with the arguments its signature names
    # (getfullargspec, which does not follow __wrapped__): the same names here
    params = ", ".join(inspect.getfullargspec(fn).args)
    ns: dict[str, Any] = {"timed": wrapper}
    exec(f"def hook({params}):\n    return timed({params})\n", ns)
    hook = ns["hook"]
    hook.__dict__.update(fn.__dict__)  # the hookimpl marks (tryfirst...)
    return hook


# (module, attribute path, phase); a missing one is skipped (the code moved)
PHASES = [
    ("_pytest.main", "pytest_runtestloop", "pytest per item"),
    ("_pytest.main", "Session.perform_collect", "collection (--list-subtests, items)"),
    ("gpuconform.plugin", "GcSession.run_item", "plugin bookkeeping"),
    ("gpuconform.plugin", "GcSession.pytest_runtest_logreport", "record onto the report"),
    ("gpuconform.core.attempts", "run_attempt", "classify, record"),
    ("gpuconform.core.execute", "run_command", "execute: temp files, env, capture"),
    ("gpuconform.core.execute", "_metrics_file", "execute: temp files, env, capture"),
    ("gpuconform.core.execute", "run_subtest", "execute: parse output, metrics"),
    ("subprocess", "Popen.__init__", "spawn (Popen: fork+exec)"),
    ("gpuconform.core.execute", "_wait_leader", "child running (wait)"),
    ("gpuconform.core.execute", "_clean_up", "stray-process check"),
    ("gpuconform.core.execute", "fork_count", "stray-process check"),
    ("gpuconform.core.journal", "Journal.start", "journal start line (write+fsync)"),
    ("gpuconform.core.journal", "Journal.result", "journal result line (write+fsync)"),
    ("gpuconform.core.kwatch", "KernelWatch.between", "kernel log + taint"),
    ("gpuconform.core.kwatch", "KernelWatch.after", "kernel log + taint"),
    ("gpuconform.core.runend", "RunEnd.write", "results.json + summary.txt"),
]


def install() -> None:
    for mod_name, path, phase in PHASES:
        try:
            obj: Any = importlib.import_module(mod_name)
            *owners, attr = path.split(".")
            for o in owners:
                obj = getattr(obj, o)
            fn = getattr(obj, attr)
        except (ImportError, AttributeError):
            print(f"(no {mod_name}.{path}: not timed)", file=sys.stderr)
            continue
        timed = _timed(phase, fn)
        setattr(obj, attr, timed)
        if not isinstance(obj, type):  # a function: also where it was imported by name
            for mod in list(sys.modules.values()):
                if mod is not None and getattr(mod, attr, None) is fn:
                    setattr(mod, attr, timed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--kmsg", action="store_true", help="watch the kernel log and taint (root)")
    a = ap.parse_args()
    binary = Path(a.build).resolve() / "tests/selftest/selftest_many"
    t_import = time.perf_counter()
    from gpuconform.cli import main as cli_main
    import gpuconform.plugin  # noqa: F401 - its names are patched too

    install()

    imported = time.perf_counter() - t_import
    with tempfile.TemporaryDirectory() as d:
        build = Path(d) / "build"
        build.mkdir()
        (build / "gpuconform-selftest.txt").write_text(f"{binary}\n")
        sel = " or ".join(f"t{i:03d}" for i in range(a.n)) if a.n < 1000 else "selftest_many"
        argv = ["run", "--build", str(build), "--selftest", "--results", str(Path(d) / "r"),
                "--progress", "off", "--no-baseline", "--no-report",
                *([] if a.kmsg else ["--kmsg", "off", "--taint-file", "off"]),
                "--", "-q", "-k", sel, *os.environ.get("PHASES_PYTEST_ARGS", "").split()]
        t0, c0 = time.perf_counter(), time.thread_time()
        with open(os.devnull, "w") as null, redirect_stdout(null):
            cli_main(argv)
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    rows = sorted(_totals.items(), key=lambda kv: -kv[1][0])
    rows.append(("other (option parsing, run start, end of run)",
                 [wall - sum(t[0] for t in _totals.values()),
                  cpu - sum(t[1] for t in _totals.values())]))
    ms = 1e3 / a.n
    print(f"{'phase':<48} {'wall ms':>8} {'CPU ms':>8}  (per subtest; load {os.getloadavg()[0]:.2f})")
    for phase, (w, c) in rows:
        print(f"{phase:<48} {w * ms:>8.3f} {c * ms:>8.3f}")
    print(f"{'total in the run (imports not counted)':<48} {wall * ms:>8.3f} {cpu * ms:>8.3f}")
    print(f"{'runner imports, once':<48} {imported * ms:>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

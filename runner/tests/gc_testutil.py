"""Helpers of the runner's own tests (a module name of its own: test modules
import it, while every test directory's conftest.py is called conftest)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

RUNNER_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = RUNNER_DIR.parent
if str(RUNNER_DIR) not in sys.path:
    sys.path.insert(0, str(RUNNER_DIR))

# Environment variable every process started by a test inherits, so that
# leftovers can be found in /proc however they detached.
MARKER_ENV = "GPUCONFORM_RUNNER_TEST_MARKER"

# The `gpuconform` command, as the end-to-end tests start it.
LAUNCHER = REPO_ROOT / "gpuconform"
HANG_GUARD_S = 300  # guards against a hung runner only; never a performance bound


def build_dir() -> Path:
    return Path(os.environ.get("GPUCONFORM_BUILD_DIR", REPO_ROOT / "build")).absolute()


@dataclass(frozen=True)
class Selftests:
    build: Path
    manifest: Path
    binaries: dict[str, Path]

    def binary(self, name: str) -> Path:
        return self.binaries[name]


def signal_when_running(args: list[str], env: dict[str, str], needle: bytes, running: str,
                        copies: int = 1, sig: int = signal.SIGTERM) -> tuple[int, str]:
    """Start the launcher with args, send it sig once `copies` processes marked
    by needle have `running` in their command line; (its exit status, its output)."""
    proc = subprocess.Popen([str(LAUNCHER), *args], env=env, cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + HANG_GUARD_S  # a guard against hanging, nothing more
        while sum(running in cmd for _, cmd in processes_with(needle)) < copies:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, f"{running!r} never started"
            time.sleep(0.02)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out


def processes_with(needle: bytes) -> list[tuple[int, str]]:
    """Live (non-zombie) processes whose environment contains needle."""
    found: list[tuple[int, str]] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 :].split()[0]
        if state in (b"Z", b"X"):
            continue
        if needle in env.split(b"\0"):
            found.append((int(entry), cmd))
    return found


def kill_marked(needle: bytes) -> list[tuple[int, str]]:
    """processes_with(needle), each sent SIGKILL (one already gone is passed
    over); returns them as found."""
    left = processes_with(needle)
    for pid, _cmd in left:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return left


@dataclass
class CliRun:
    """One finished `gpuconform` command and the results directory it wrote."""

    returncode: int
    stdout: str
    stderr: str
    results: Path

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.results / "results.json").read_text())
        return data

    def tests(self) -> dict[str, Any]:
        tests: dict[str, Any] = self.json()["tests"]
        return tests

    def journal(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in (self.results / "journal.jsonl").read_text().splitlines()]


def launcher_process(argv: list[str], env: dict[str, str], *,
                     text: bool) -> subprocess.CompletedProcess[Any]:
    """`gpuconform ARGV` from the repository root, under HANG_GUARD_S; its
    output as text, or (text=False) as the bytes written, carriage returns kept."""
    return subprocess.run([str(LAUNCHER), *argv], capture_output=True, text=text,
                          timeout=HANG_GUARD_S, env=env, cwd=REPO_ROOT)


def run_launcher(argv: list[str], env: dict[str, str], results: Path | None) -> CliRun:
    """`gpuconform ARGV` from the repository root, under HANG_GUARD_S."""
    p = launcher_process(argv, env, text=True)
    return CliRun(p.returncode, p.stdout, p.stderr, results or Path("/nonexistent"))


def gate_baseline(metrics: dict[str, tuple[str, str, list[list[float]]]],
                  fingerprint: dict[str, str] | None = None,
                  durations: dict[str, float] | None = None) -> Any:
    """A baseline.Baseline of made-up clean runs: per metric key (unit,
    better, one sample list per run), summarized as `baseline update` does."""
    from gpuconform.perf import gate
    from gpuconform.perf.baseline import Baseline, BaselineMetric, RunInfo

    n = max(len(rs) for _, _, rs in metrics.values())
    runs = [RunInfo(f"results/run{i}", "2026-01-01T00:00:00Z", f"host{i % 2}", (f"GPU-{i % 2}",))
            for i in range(n)]
    ms = {k: BaselineMetric(unit, better,
                            tuple(gate.summarize(i, r, better) for i, r in enumerate(rs)),
                            gate.resolution(x for r in rs for x in r))
          for k, (unit, better, rs) in metrics.items()}
    return Baseline(fingerprint or {}, "2026-01-01T00:00:00Z", runs, ms, durations or {})


def fake_gpus(root: Path, n: int) -> list[str]:
    """A directory standing for / with n NVIDIA GPUs' /proc files (what
    devices.find_gpus reads), for GPUCONFORM_DEVICE_ROOT: the runner's
    placement on a machine without a GPU. Their UUIDs, in index order."""
    uuids = []
    for i in range(n):
        bus = f"0000:{0x18 + 8 * i:02x}:00.0"
        d = root / "proc/driver/nvidia/gpus" / bus
        d.mkdir(parents=True)
        uuid = f"GPU-{i:08x}-5e1f-7e57-0000-{i:012x}"
        (d / "information").write_text(
            f"Model: \t\t Placement Subject (no GPU)\nIRQ: \t\t 0\nGPU UUID: \t {uuid}\n"
            f"Bus Location: \t {bus}\n")
        uuids.append(uuid)
    return uuids


def alive(pid: int) -> bool:
    """pid names a live process (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")


@contextmanager
def journal_held(path: Path) -> Iterator["subprocess.Popen[str]"]:
    """A real process holding path's lock as a run does, for the with block;
    killed (SIGKILL) and reaped when the block ends, however it ends."""
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); "
            "from gpuconform.core.journal import Journal; "
            "Journal(__import__('pathlib').Path(sys.argv[2])); print('locked', flush=True);"
            " time.sleep(300)")
    p = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).resolve().parents[1]),
                          str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline() == "locked\n"
        yield p
    finally:
        p.kill()
        p.wait()

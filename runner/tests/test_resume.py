"""Resume, proven: `gpuconform run` is killed with SIGKILL at chosen moments,
`gpuconform resume` finishes the run, and nothing completed is lost or
duplicated, every selected test appears exactly once, the test that was
running is incomplete, and no process of the dead run is left.

Choosing the moment without sleeping: the run watches a kernel taint file
(--taint-file) that is a FIFO here. The runner reads it once at the start,
before each test (the gap since the previous one) and after each attempt, and
every read blocks until this test writes "0" into the FIFO. So while the
runner is blocked, the journal holds still; the driver below feeds the FIFO
one read at a time, looks at the journal, and kills the runner where the
scenario says:

    start K   as soon as the K-th start line is in the journal (the test runs)
    after K   the runner waits after the attempt of the K-th start line: the
              test has ended, its record is not written yet
    result K  the runner waits before the next test, the K-th result line the
              last one: between a record and the next start
"""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import HANG_GUARD_S, LAUNCHER, REPO_ROOT, Selftests, alive

# Collection order, with the start lines each test writes (fail: two attempts;
# crash-segv: a skip rule, a record without a start line).
SELECTION = [
    "selftest_results@pass",        # start 1
    "selftest_results@fail",        # starts 2, 3
    "selftest_results@skip",        # start 4
    "selftest_results@crash-segv",  # skipped by rule: no start
    "selftest_dynamic@all-pass",    # start 5
    "selftest_flow@sleep-1",        # start 6
    "selftest_flow@sleep-2",        # start 7
    "selftest_flow@sleep-long",     # start 8
]


def journal(results: Path) -> list[dict[str, Any]]:
    """The complete lines of the journal (a line being written is left out)."""
    try:
        data = (results / "journal.jsonl").read_bytes()
    except FileNotFoundError:
        return []
    return [json.loads(x) for x in data.split(b"\n")[:-1] if x]


@dataclass
class Stop:
    kind: str  # "start", "after", "result"
    k: int

    def met(self, lines: list[dict[str, Any]], blocked: bool) -> bool:
        starts = [x for x in lines if x["event"] == "start"]
        results = [x for x in lines if x["event"] == "result"]
        if self.kind == "start":
            return len(starts) >= self.k
        if not blocked or not lines:
            return False
        if self.kind == "after":
            return (len(starts) == self.k and lines[-1]["event"] == "start")
        return len(results) == self.k and lines[-1]["event"] == "result"


def open_fifo_writer(fifo: Path) -> int | None:
    """A write end, only while the runner is waiting on its read end.

    The FIFO is replaced by a new one at once: the runner's next read opens
    the new one, so a reader found there later is always a fresh read (never
    the previous one between its read() and its close(), which could take
    data meant for the read after it)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:
            return None
        raise
    os.unlink(fifo)
    os.mkfifo(fifo)
    return fd


def drive(proc: subprocess.Popen[bytes], fifo: Path, results: Path, stop: Stop | None,
          offset: int = 0) -> bool:
    """Feed the runner's taint reads until it exits (False) or stop is met and
    it is killed (True). offset: journal lines already there (a resume)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the runner hung"
        if stop is not None and stop.kind == "start" and stop.met(journal(results)[offset:], False):
            proc.kill()
            proc.wait()
            return True
        fd = open_fifo_writer(fifo)
        if fd is None:
            time.sleep(0.001)
            continue
        try:
            if stop is not None and stop.met(journal(results)[offset:], True):
                proc.kill()
                proc.wait()
                return True
            os.write(fd, b"0\n")
        finally:
            os.close(fd)
        time.sleep(0.001)  # let the runner close its end before the next look
    return False


def last_starts(lines: list[dict[str, Any]], done: dict[str, Any]) -> list[dict[str, Any]]:
    """The last start line of each test that has no result: what was running."""
    last: dict[str, dict[str, Any]] = {}
    for x in lines:
        if x["event"] == "start" and x["test"] not in done:
            last.pop(x["test"], None)
            last[x["test"]] = x
    return list(last.values())


def launch(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(LAUNCHER), *args], env=env, cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def scenario_env(long_sleep_ms: int) -> dict[str, str]:
    env = dict(os.environ)  # carries conftest's marker
    for var in ("GPUCONFORM_SELFTEST_KMSG", "GPUCONFORM_SELFTEST_TAINT_FILE",
                "GPUCONFORM_SELFTEST_FIXTURE_SKIP"):
        env.pop(var, None)
    env.update(GPUCONFORM_SELFTEST_SLEEP_MS="150",
               GPUCONFORM_SELFTEST_LONG_SLEEP_MS=str(long_sleep_ms))
    return env


def resume(results: Path, fifo: Path, env: dict[str, str], stop: Stop | None = None,
           offset: int = 0) -> tuple[subprocess.Popen[bytes], bool, str]:
    proc = launch(["resume", str(results), "--progress", "off"], env)
    try:
        killed = drive(proc, fifo, results, stop, offset)
        out = proc.communicate(timeout=HANG_GUARD_S)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, killed, out


SCENARIOS = {
    "start-1": ([Stop("start", 1)], 20),
    "start-3-a-retry": ([Stop("start", 3)], 20),
    "result-2": ([Stop("result", 2)], 20),
    "result-4-after-a-skip-rule": ([Stop("result", 4)], 20),
    "after-6": ([Stop("after", 6)], 20),
    "start-8-long-test-orphaned": ([Stop("start", 8)], 120_000),
    "torn-line": ([Stop("result", 2)], 20),
    "killed-twice": ([Stop("start", 3), Stop("start", 3)], 20),  # the resume is killed too
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_kill_9_and_resume(selftests: Selftests, tmp_path: Path, marker_env: bytes,
                           name: str) -> None:
    stops, long_ms = SCENARIOS[name]
    env = scenario_env(long_ms)
    fifo = tmp_path / "tainted.fifo"
    os.mkfifo(fifo)
    tl = tmp_path / "list.txt"
    tl.write_text("\n".join(SELECTION) + "\n")
    exp = tmp_path / "exp.txt"
    exp.write_text("skip selftest_results@crash-segv  # not on this machine\n")
    results = tmp_path / "results"
    proc = launch(["run", "--build", str(selftests.build), "--selftest", "--results",
                   str(results), "--testlist", str(tl), "--expectations", str(exp),
                   "--taint-file", str(fifo), "--kmsg", "off", "--no-baseline", "--no-report",
                   "--progress", "off"], env)
    try:
        assert drive(proc, fifo, results, stops[0]), \
            proc.communicate()[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    run_json = json.loads((results / "run.json").read_text())
    assert run_json["tests"] == SELECTION == run_json["selection"]
    before = journal(results)
    done_before = {x["test"]: x["record"] for x in before if x["event"] == "result"}
    running = last_starts(before, done_before)
    interrupted = {s["test"] for s in running}
    pgid_alive = {s["test"]: alive(s["pgid"]) for s in running}
    if name == "start-8-long-test-orphaned":
        assert pgid_alive == {"selftest_flow@sleep-long": True}  # the orphan sleeps on
    if name == "torn-line":
        with open(results / "journal.jsonl", "ab") as f:
            f.write(b'{"event":"start","test":"selftest_results@fa')  # power loss

    for stop in stops[1:]:  # a resume that dies as well
        p, killed, out = resume(results, fifo, env, stop, offset=len(journal(results)))
        assert killed, out
        mid = journal(results)
        for x in mid:
            if x["event"] == "result":
                done_before.setdefault(x["test"], x["record"])
        running = last_starts(mid, done_before)
        interrupted |= {s["test"] for s in running}

    p, killed, out = resume(results, fifo, env)
    assert not killed and p.returncode in (0, 1), out
    assert "Traceback" not in out

    final = journal(results)
    data = json.loads((results / "results.json").read_text())
    tests = data["tests"]
    # Every selected test exactly once, in order; one result line each in the journal.
    assert list(tests) == SELECTION
    result_lines = [x["test"] for x in final if x["event"] == "result"]
    assert sorted(result_lines) == sorted(SELECTION), result_lines
    # Nothing completed before the kill is lost or changed.
    for test, record in done_before.items():
        assert tests[test] == record, test
    # The test that was running is incomplete, with the reason.
    for s in running:
        rec = tests[s["test"]]
        assert rec["result"] == "incomplete", (s, rec)
        assert rec["reason"].startswith("the runner stopped while this test was running "
                                        f"(attempt {s['attempt']}, started ")
        if pgid_alive.get(s["test"]):
            assert f"its orphaned process group {s['pgid']} was killed by resume" in rec["reason"]
            assert not alive(s["pgid"])
    # Everything else ran to its usual end.
    usual = {"selftest_results@pass": "pass", "selftest_results@skip": "skip",
             "selftest_results@fail": "fail", "selftest_results@crash-segv": "skip",
             "selftest_dynamic@all-pass": "pass", "selftest_flow@sleep-1": "pass",
             "selftest_flow@sleep-2": "pass", "selftest_flow@sleep-long": "pass"}
    for test, state in usual.items():
        if test not in interrupted:
            assert tests[test]["result"] == state, (test, tests[test]["reason"])
    assert tests["selftest_results@crash-segv"]["reason"] == "not on this machine"
    resumes = [x for x in final if x["event"] == "resume"]
    assert len(resumes) == len(stops)
    if name == "torn-line":
        assert resumes[0]["torn"] and "torn last line" in resumes[0]["torn"]
        assert "journal: " in out and "torn last line" in out
    assert data["run"]["resumed"]["incomplete"] == [s["test"] for s in running]
    # marker_env's teardown fails the test if any process of the run is left.


def test_resume_errors(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(LAUNCHER), *args], capture_output=True,
                              text=True, timeout=HANG_GUARD_S, cwd=REPO_ROOT)

    r = cli("resume", str(tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"{tmp_path / 'run.json'}: no such file" in r.stderr
    (tmp_path / "run.json").write_text("{broken\n")
    r = cli("resume", str(tmp_path))
    assert r.returncode == 2 and f"{tmp_path / 'run.json'}:1: not JSON" in r.stderr
    r = cli("resume")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "RESULTS_DIR" in r.stderr


def test_resume_of_a_live_run_is_refused(selftests: Selftests, tmp_path: Path,
                                         marker_env: bytes) -> None:
    env = scenario_env(20)
    fifo = tmp_path / "tainted.fifo"
    os.mkfifo(fifo)
    results = tmp_path / "results"
    proc = launch(["run", "--build", str(selftests.build), "--selftest", "--results",
                   str(results), "--include", "^selftest_results@pass$", "--taint-file",
                   str(fifo), "--progress", "off", "--no-baseline"], env)
    try:
        # Its first taint read blocks right after run.json and the journal (locked).
        deadline = time.monotonic() + HANG_GUARD_S
        while not (results / "run.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        r = subprocess.run([str(LAUNCHER), "resume", str(results)],
                           capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=REPO_ROOT)
        assert r.returncode == 2 and r.stderr.count("\n") == 1
        assert "the run is still going" in r.stderr
        assert drive(proc, fifo, results, None) is False
        assert proc.wait() == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert stat.S_ISFIFO(fifo.stat().st_mode)


"""Faults a real user meets, made real: a results directory on a file system
that fills mid-run (a small tmpfs mounted here), two runs started into one
directory at once (real concurrent runners), a bad -k and a read-only results
directory (a read-only tmpfs), a runner killed with SIGKILL (its temporary
files), a kernel log path that cannot be opened.

Mounting needs root (or CAP_SYS_ADMIN): without it those tests skip, saying so.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from gc_testutil import HANG_GUARD_S, LAUNCHER, REPO_ROOT, Selftests

from gpuconform.core.journal import read_journal
from test_resume import open_fifo_writer
from test_run_flow import base_env


def launch(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([str(LAUNCHER), *args], env=env, cwd=REPO_ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def gpuconform(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LAUNCHER), *args], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env=env or base_env(), cwd=REPO_ROOT)


def run_args(st: Selftests, results: Path, *more: str) -> list[str]:
    kmsg = [] if "--kmsg" in more else ["--kmsg", "off"]
    return ["run", "--build", str(st.build), "--selftest", "--results", str(results),
            "--no-baseline", "--progress", "off", *kmsg, *more]


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout and "INTERNALERROR" not in r.stdout
    return r.stderr.strip()


def wait_for(what: str, cond: object, proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"waited too long for {what}"
        if proc is not None:
            assert proc.poll() is None, (what, proc.communicate())
        time.sleep(0.01)


# ------------------------------------------------------------- mounts


def _mount(args: list[str]) -> str | None:
    """None, or why this machine cannot mount (the skip's one line)."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root: not root here"
    if shutil.which("mount") is None:
        return "no mount command on this machine"
    p = subprocess.run(["mount", *args], capture_output=True, text=True)
    if p.returncode != 0:
        return f"mount {' '.join(args)} is not permitted here: {p.stderr.strip()[:200]}"
    return None


@pytest.fixture
def mount_tmpfs(tmp_path: Path) -> Iterator[object]:
    """mount_tmpfs(name, options) -> a tmpfs mounted at tmp_path/name (skips,
    naming why, where mounting is not permitted); unmounted at the end."""
    mounted: list[Path] = []

    def mount(name: str, options: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        why = _mount(["-t", "tmpfs", "-o", options, "tmpfs", str(where)])
        if why is not None:
            pytest.skip(why)
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


# ------------------------------------------------------- a disk that fills

# Two floods: each record keeps 64 KiB of head and of tail of its stdout
# (or stderr), so a 200 KiB tmpfs takes the first flood's and not the second's.
FLOOD_SELECTION = [  # in the manifest's order, the order they run in
    "selftest_results@pass",
    "selftest_results@skip",
    "selftest_flood@stdout-flood",
    "selftest_flood@stderr-flood",
    "selftest_dynamic@all-pass",
    "selftest_flow@sleep-1",
]


def fill(fs: Path) -> Path:
    """A file that takes every byte fs has left."""
    filler = fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    return filler


def test_a_full_results_disk_stops_the_run_in_one_line_and_resume_recovers(
        selftests: Selftests, tmp_path: Path, mount_tmpfs: object, marker_env: bytes) -> None:
    fs = mount_tmpfs("fs", "size=200k")  # type: ignore[operator]
    results = fs / "results"
    tl = tmp_path / "list.txt"
    tl.write_text("\n".join(FLOOD_SELECTION) + "\n")
    r = gpuconform(*run_args(selftests, results, "--testlist", str(tl), "--no-report"))
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Traceback" not in out and "INTERNALERROR" not in out and "cannot append" not in out
    assert r.stderr.count("\n") == 1, r.stderr  # the one line, last
    m = re.fullmatch(rf"gpuconform: {results}: no space left on device \(tmpfs {fs}, "
                     r"(\d+) KiB free\): the run stopped after (\d+) of 6 tests; free space, "
                     rf"then `gpuconform resume {results}`\n", r.stderr)
    assert m, r.stderr
    done = int(m.group(2))
    assert 1 <= done < len(FLOOD_SELECTION)
    # Stopped at once, what was recorded kept whole: the first tests' results,
    # nothing of the test that could not be recorded (a resume runs it again).
    state = read_journal(results / "journal.jsonl")
    assert list(state.records) == FLOOD_SELECTION[:done] and state.torn is None
    assert state.running == [] and not (results / "results.json").exists()
    kept = dict(state.records)

    # Resume on a disk still full: one line, exit 2, the journal as it was.
    filler = fill(fs)
    r = gpuconform("resume", str(results), "--progress", "off")
    err = one_line_error(r)
    assert err.startswith(f"gpuconform: {results}: no space left on device (tmpfs {fs}, "), err
    assert err.endswith(f"free space, then `gpuconform resume {results}`"), err
    assert read_journal(results / "journal.jsonl").records == kept

    # Space again: the resume finishes the run, every earlier result kept.
    filler.unlink()
    subprocess.run(["mount", "-o", "remount,size=16m", str(fs)], check=True)
    r = gpuconform("resume", str(results), "--progress", "off")
    assert r.returncode == 0, r.stdout + r.stderr
    tests = json.loads((results / "results.json").read_text())["tests"]
    assert list(tests) == FLOOD_SELECTION
    for name, rec in kept.items():
        assert tests[name] == rec, name
    assert all(t["result"] in ("pass", "skip") for t in tests.values()), tests


# ------------------------------------------------- two starts at one place


def feed_until_exit(proc: subprocess.Popen[str], fifo: Path, data: bytes) -> tuple[str, str]:
    """Answer each read of fifo with data (b"": an empty file) until proc exits."""
    deadline = time.monotonic() + HANG_GUARD_S
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the runner hung"
        fd = open_fifo_writer(fifo)
        if fd is not None:
            try:
                if data:
                    os.write(fd, data)
            finally:
                os.close(fd)
        time.sleep(0.005)
    return proc.communicate(timeout=HANG_GUARD_S)


def test_a_run_losing_the_start_writes_nothing_in_the_winners_directory(
        selftests: Selftests, tmp_path: Path, marker_env: bytes) -> None:
    """The loser passed its check of the directory before the winner started
    (its expectations file is a FIFO it waits on after that check); the
    winner then claims the directory and waits on its taint FIFO: the loser,
    let go, must leave the directory as the winner has it."""
    results = tmp_path / "results"
    exp_fifo, taint_fifo = tmp_path / "exp.fifo", tmp_path / "taint.fifo"
    os.mkfifo(exp_fifo)
    os.mkfifo(taint_fifo)
    sel = ["--include", "^selftest_results@(pass|skip)$"]
    loser = launch(run_args(selftests, results, *sel, "--expectations", str(exp_fifo)),
                   base_env())
    winner: subprocess.Popen[str] | None = None
    try:
        held: list[int] = []

        def loser_waits() -> bool:  # on its expectations, its check of the directory done
            fd = open_fifo_writer(exp_fifo)
            if fd is not None:
                held.append(fd)
            return bool(held)

        wait_for("the loser to read its expectations", loser_waits, loser)
        winner = launch(run_args(selftests, results, *sel, "--taint-file", str(taint_fifo)),
                        base_env())
        wait_for("the winner to claim the directory", (results / "run.json").exists, winner)
        run_json = (results / "run.json").read_text()
        os.close(held[0])  # the loser reads an empty file and goes on
        out, err = feed_until_exit(loser, exp_fifo, b"")
        assert loser.returncode == 2, out + err
        assert err == (f"gpuconform: cannot start the run in {results}: "
                       f"{results / 'journal.jsonl'}: another gpuconform process is using this "
                       "run (its journal is locked)\n"), err
        assert not re.search(r"^results: ", out, re.M) and "notrun" not in out
        assert sorted(os.listdir(results)) == ["journal.jsonl", "run.json"]
        assert (results / "run.json").read_text() == run_json
        out, err = feed_until_exit(winner, taint_fifo, b"0\n")
        assert winner.returncode == 0, out + err
    finally:
        for p in (loser, winner):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    data = json.loads((results / "results.json").read_text())
    assert data["run"]["run_id"] == json.loads(run_json)["run_id"]
    assert sorted(data["tests"]) == ["selftest_results@pass", "selftest_results@skip"]


def test_four_runs_started_at_once_into_one_directory(selftests: Selftests, tmp_path: Path,
                                                      marker_env: bytes) -> None:
    results = tmp_path / "results"
    sel = ["--include", "^selftest_(results@(pass|skip)|flow@sleep-[12])$"]
    procs = [launch(run_args(selftests, results, *sel), base_env()) for _ in range(4)]
    ends = [(p.communicate(timeout=HANG_GUARD_S), p.returncode) for p in procs]
    won = [(out, err) for (out, err), rc in ends if rc == 0]
    lost = [(out, err) for (out, err), rc in ends if rc != 0]
    assert len(won) == 1, ends
    for (out, err), rc in ends:
        if rc != 0:
            assert rc == 2 and err.count("\n") == 1, (rc, out, err)
            assert ("another gpuconform process is using this run" in err
                    or f"{results} already holds a run" in err), err
            assert not re.search(r"^results: ", out, re.M)
    assert len(lost) == 3
    run_id = json.loads((results / "run.json").read_text())["run_id"]
    assert json.loads((results / "results.json").read_text())["run"]["run_id"] == run_id
    lines = [json.loads(x) for x in (results / "journal.jsonl").read_text().splitlines()]
    assert sorted(x["test"] for x in lines if x["event"] == "result") == sorted(
        ["selftest_results@pass", "selftest_results@skip", "selftest_flow@sleep-1",
         "selftest_flow@sleep-2"])


# ------------------------------------- checked before the run: -k, results


def test_a_bad_k_expression_is_one_line_and_writes_nothing(selftests: Selftests,
                                                           tmp_path: Path) -> None:
    results = tmp_path / "r"
    err = one_line_error(gpuconform(*run_args(selftests, results, "-k", "foo and (")))
    assert err == ("gpuconform: -k 'foo and (': not a pytest -k expression: at column 10: "
                   "expected not OR left parenthesis OR identifier; got end of input")
    assert not results.exists()
    # Given to pytest itself (after --): pytest's own one line, nothing written either.
    r = gpuconform(*run_args(selftests, results, "--", "-k", "foo and ("))
    assert r.returncode == 2 and "Wrong expression passed to '-k'" in r.stderr, r.stderr
    assert "notrun" not in r.stdout and "Traceback" not in r.stdout + r.stderr
    assert not results.exists()


def test_a_read_only_results_directory_is_one_line_and_writes_nothing(
        selftests: Selftests, tmp_path: Path, mount_tmpfs: object) -> None:
    ro = mount_tmpfs("ro", "size=1m,ro")  # type: ignore[operator]
    for results, verb in ((ro, "written"), (ro / "x" / "y", f"created ({ro} cannot be written)")):
        r = gpuconform(*run_args(selftests, results))
        assert one_line_error(r) == (f"gpuconform: results directory {results}: cannot be "
                                     f"{verb}: read-only file system (tmpfs {ro})")
        assert "notrun" not in r.stdout
    # Under pytest alone (the plugin): the same, no summary of tests that never ran.
    p = subprocess.run(
        [os.environ.get("GPUCONFORM_PYTHON", "python3"), "-m", "pytest", "-p", "no:cacheprovider",
         "-p", "gpuconform.plugin", "--gc-results", str(ro / "x"), "--gc-kmsg", "off",
         "--gc-no-baseline", "-k", "selftest_results", str(selftests.manifest)],
        capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=REPO_ROOT / "runner")
    assert p.returncode == 4, p.stdout + p.stderr
    assert f"gpuconform: cannot start the run in {ro / 'x'}: {ro / 'x'}: read-only file " \
           f"system (tmpfs {ro}" in p.stdout
    assert "notrun" not in p.stdout and "Traceback" not in p.stdout + p.stderr
    assert os.listdir(ro) == []


# ----------------------------------------------------- a killed runner's files


def test_resume_removes_the_killed_runners_temporary_files(selftests: Selftests, tmp_path: Path,
                                                          marker_env: bytes) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = base_env(TMPDIR=str(tmp), GPUCONFORM_SELFTEST_LONG_SLEEP_MS="120000")
    results = tmp_path / "results"
    sel = ["--include", "^selftest_(results@pass|flow@sleep-long)$"]
    proc = launch(run_args(selftests, results, *sel), env)
    try:
        def running_long() -> bool:
            st = read_journal(results / "journal.jsonl")
            return [s.test for s in st.running] == ["selftest_flow@sleep-long"]

        wait_for("sleep-long to run", running_long, proc)
        proc.kill()  # SIGKILL: the runner cleans nothing up
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    left = os.listdir(tmp)
    assert left and all(x.startswith("gpuconform-") for x in left), left  # what resume cleans
    r = gpuconform("resume", str(results), "--progress", "off", env=env)
    assert r.returncode == 1, r.stdout + r.stderr  # sleep-long: incomplete
    assert os.listdir(tmp) == []
    for name in left:
        assert f"resume removed the dead run's temporary files {tmp / name}" in r.stdout
    # A run that ends removes its own.
    r = gpuconform(*run_args(selftests, tmp_path / "r2", "--include", "^selftest_results@pass$"),
                   env=env)
    assert r.returncode == 0 and os.listdir(tmp) == [], r.stdout + r.stderr


# ---------------------------------------------------------- kernel sources


@pytest.mark.parametrize("option", ["--kmsg", "--taint-file"])
def test_a_kernel_source_given_that_cannot_be_read_is_one_line(selftests: Selftests,
                                                               tmp_path: Path,
                                                               option: str) -> None:
    results = tmp_path / "r"
    missing = tmp_path / "missing"
    r = gpuconform(*run_args(selftests, results, option, str(missing)))
    assert one_line_error(r) == (f"gpuconform: {option} {missing}: cannot be read: No such file "
                                 f"or directory (give one that can, or {option} off)")
    assert not results.exists()


def test_the_default_kernel_log_unreadable_stays_a_note(selftests: Selftests,
                                                        tmp_path: Path) -> None:
    """As a user (nobody, when the tests run as root) whom dmesg_restrict keeps
    from /dev/kmsg: the run goes on, saying the log is not watched."""
    try:
        restrict = Path("/proc/sys/kernel/dmesg_restrict").read_text().strip()
    except OSError as e:
        pytest.skip(f"/proc/sys/kernel/dmesg_restrict: {e.strerror}")
    prefix: list[str] = []
    if os.geteuid() == 0:
        if restrict != "1":
            pytest.skip("kernel.dmesg_restrict is 0 here: /dev/kmsg is readable by every user")
        if shutil.which("setpriv") is None:
            pytest.skip("no setpriv to run the runner as nobody")
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    else:
        try:
            os.close(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
            pytest.skip("/dev/kmsg is readable by this user here")
        except OSError:
            pass
    # Not under tmp_path: nobody must reach the results directory.
    home = Path(tempfile.mkdtemp(prefix="gc-kmsg-", dir="/tmp"))
    try:
        os.chmod(home, 0o777)
        results = home / "r"
        p = subprocess.run(
            [*prefix, "env", f"TMPDIR={home}", str(LAUNCHER), "run", "--build",
             str(selftests.build), "--selftest", "--results", str(results), "--no-baseline",
             "--progress", "off", "--include", "^selftest_results@pass$",
             "--", "-p", "no:cacheprovider"],
            capture_output=True, text=True, timeout=HANG_GUARD_S, env=base_env(), cwd=home)
        assert p.returncode == 0, p.stdout + p.stderr
        data = json.loads((results / "results.json").read_text())
        assert data["kernel_log"]["watched"] is False
        assert data["kernel_log"]["note"].startswith("not watched (/dev/kmsg: ")
        summary = (results / "summary.txt").read_text().splitlines()
        said = [x for x in summary if x.startswith("kernel log: not watched (/dev/kmsg: ")]
        assert len(said) == 1, summary  # said once
    finally:
        shutil.rmtree(home, ignore_errors=True)

"""The `gpuconform` command end to end, over the REAL selftest binaries.

One full run of the selftest manifest (hang subjects with --timeout 2
--grace 1) is shared by most checks; each check reads its results.json.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import (
    MARKER_ENV,
    CliRun,
    Selftests,
    kill_marked,
    processes_with,
    run_launcher,
    signal_when_running,
)


def gpuconform(*args: str, results: Path | None = None, env: dict[str, str] | None = None) -> CliRun:
    argv = list(args)
    if results is not None and args and args[0] == "run":
        argv[1:1] = ["--results", str(results)]
    return run_launcher(argv, env if env is not None else dict(os.environ), results)


@pytest.fixture(scope="module")
def full_run(selftests: Selftests, tmp_path_factory: pytest.TempPathFactory) -> tuple[CliRun, list[Any]]:
    """The whole selftest manifest; returns the run and processes it left behind."""
    results = tmp_path_factory.mktemp("full") / "results"
    marker = uuid.uuid4().hex
    env = dict(os.environ, **{MARKER_ENV: marker})
    env.pop("GPUCONFORM_SELFTEST_FIXTURE_SKIP", None)
    for var in ("GPUCONFORM_SELFTEST_KMSG", "GPUCONFORM_SELFTEST_TAINT_FILE"):
        env.pop(var, None)  # the flow subjects that touch the kernel log / taint skip
    env.update(GPUCONFORM_SELFTEST_SLEEP_MS="20", GPUCONFORM_SELFTEST_LONG_SLEEP_MS="50")
    run = gpuconform("run", "--build", str(selftests.build), "--selftest", "--timeout", "2",
                     # spin is a CPU workload of about a second: never a timeout on a slow VM
                     "--timeout-override", "selftest_metrics@spin=300",
                     # a loaded CI machine's own kernel warnings must not turn passes into
                     # dmesg-warn here (test_run_flow watches the kernel log for real)
                     "--kmsg", "off",
                     "--grace", "1", "--", "-q", "--junitxml", str(results / "junit.xml"),
                     results=results, env=env)
    left = kill_marked(f"{MARKER_ENV}={marker}".encode())
    return run, left


EXPECTED: dict[str, tuple[str, str]] = {
    # name: (state, a piece of the reason)
    "selftest_results@pass": ("pass", ""),
    "selftest_results@fail": ("fail", "Failed assertion: got == 4; got = 5"),
    "selftest_results@skip": ("skip", "selftest: skipped on purpose (42)"),
    "selftest_results@crash-segv": ("crash", "killed by SIGSEGV"),
    "selftest_results@crash-abort": ("crash", "killed by SIGABRT"),
    "selftest_results@abort": ("abort", "the binary aborted (exit status 112)"),
    "selftest_results@child-segv": ("pass", ""),
    "selftest_results@child-survives": ("fail", "expected death by signal 11"),
    "selftest_results@child-hangs": ("fail", "still running at the timeout"),
    "selftest_results@thread-fail": ("fail", "a helper thread's assertion failed"),
    "selftest_hang@sleep-forever": ("timeout", "timed out after 2s"),
    "selftest_hang@ignore-sigterm": ("timeout", "timed out after 2s"),
    "selftest_flood@stdout-flood": ("pass", ""),
    "selftest_flood@stderr-flood": ("pass", ""),
    "selftest_child@escaped-child": ("pass", ""),
    "selftest_child@lingering-child": ("pass", ""),
    "selftest_metrics@metrics": ("pass", ""),
    "selftest_metrics@bad-name": ("fail", "is not [A-Za-z0-9._-]+"),
    "selftest_metrics@not-finite": ("fail", "is not finite"),
    "selftest_metrics@spin": ("pass", ""),
    "selftest_dynamic@mixed": ("fail", "1 dynamic subtest failed: fail-1"),
    "selftest_dynamic@all-pass": ("pass", ""),
    "selftest_dynamic@filtered": ("pass", ""),
    "selftest_dynamic@bad-name": ("fail", "invalid dynamic subtest name"),
    "selftest_fixture@clean": ("pass", ""),
    "selftest_fixture@leaky": ("fail", "leak: 1 resource(s) open"),
    "selftest_flow@kmsg-warn": ("skip", "writes to /dev/kmsg only with GPUCONFORM_SELFTEST_KMSG=1"),
    "selftest_flow@kmsg-warn-fail": ("skip", "only with GPUCONFORM_SELFTEST_KMSG=1"),
    "selftest_flow@kmsg-gpu-reset": ("skip", "only with GPUCONFORM_SELFTEST_KMSG=1"),
    "selftest_flow@taint": ("skip", "needs GPUCONFORM_SELFTEST_TAINT_FILE"),
    "selftest_flow@sleep-1": ("pass", ""),
    "selftest_flow@sleep-2": ("pass", ""),
    "selftest_flow@sleep-3": ("pass", ""),
    "selftest_flow@sleep-long": ("pass", ""),
    "selftest_flow@print-env": ("pass", ""),
    "selftest_checks@checks-fail": ("fail", "FAIL: 2 failed checks in checks-fail:; "),
    "selftest_checks@checks-pass": ("pass", ""),
    "selftest_checks@check-then-assert": ("fail", "Failed assertion: 3 < 2"),
    "selftest_checks@check-then-skip": ("fail", "FAIL: 1 failed check in check-then-skip"),
    "selftest_checks@skip-here": ("skip", "selftest: skipped with its location (7)"),
    "selftest_checks@variants": ("fail", "1 dynamic subtest failed: beta"),
    "selftest_checks@variants-f": ("pass", ""),
    "selftest_checks@product": ("fail", "1 dynamic subtest failed: n2-here"),
    "selftest_checks@pairs": ("pass", ""),
    "selftest_checks@forked-check": ("pass", ""),
    "selftest_defer@lifo-pass": ("pass", ""),
    "selftest_defer@lifo-assert": ("fail", "Failed assertion: 1 + 1 == 3"),
    "selftest_defer@lifo-skip": ("skip", "skipped after deferring two cleanups"),
    "selftest_defer@calloc-record": ("pass", ""),
    "selftest_defer@dynamic": ("fail", "2 dynamic subtests failed: fail, bad-cleanup"),
    "selftest_defer@cleanup-fails": ("fail", "cleanup 2 breaks on purpose"),
    "selftest_defer@cleanup-skips": ("fail", "a deferred cleanup cannot skip"),
    "selftest_defer@overflow": ("fail", "more than GC_DEFER_MAX (64) cleanups"),
    "selftest_defer@thread": ("fail", "gc_defer() from a helper thread"),
    "selftest_defer@child": ("pass", ""),
    "selftest_garbage@noise": ("incomplete", "exit status 0 but no 'Subtest noise:' result line"),
    "selftest_garbage@silent": ("incomplete", "exit status 0 but no 'Subtest silent:' result line"),
    "selftest_soak@steady": ("pass", ""),
    "selftest_soak@threads": ("pass", ""),
    "selftest_soak@held": ("pass", ""),
    "selftest_soak@rss-leak": ("fail", "rss grows by more than 0.25 KiB a cycle"),
    "selftest_soak@fd-leak": ("fail", "fds grows by more than 1 fd per 1000 cycles"),
    "selftest_soak@slowdown": ("fail", "latency per-cycle time grows by more than half"),
    "selftest_soak@undeclared": ("fail", "which is not in the test's .soaks"),
    # no GPU on this node: one unpinned copy each (test_placement.py gives it a node)
    "selftest_placement@hide-device": ("skip", "needs GPUCONFORM_SELFTEST_HIDE"),
    "selftest_placement@xid": ("skip", "needs GPUCONFORM_SELFTEST_XID"),
    "selftest_placement@env": ("pass", ""),
    "selftest_placement@rendezvous": ("skip", "needs GPUCONFORM_SELFTEST_PLACEMENT_DIR"),
    "selftest_placement@alone": ("skip", "needs GPUCONFORM_SELFTEST_PLACEMENT_DIR"),
    "selftest_placement@fail-on": ("skip", "needs GPUCONFORM_SELFTEST_FAIL_ON"),
    "selftest_placement@node": ("pass", ""),
    "selftest_placement@host": ("pass", ""),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_full_run_states_and_reasons(full_run: tuple[CliRun, list[Any]], name: str) -> None:
    run, _ = full_run
    tests = run.tests()
    state, reason = EXPECTED[name]
    if name not in tests:
        pytest.fail(f"{name} missing from results.json (has {sorted(tests)})")
    assert tests[name]["result"] == state, tests[name]["reason"]
    assert reason in tests[name]["reason"]
    if state == "pass":
        assert tests[name]["reason"] == ""


def test_full_run_exit_status_totals_and_nothing_left(full_run: tuple[CliRun, list[Any]]) -> None:
    run, left = full_run
    assert left == [], f"processes outlived the run: {left}"
    assert run.returncode == 1, run.stderr
    data = run.json()
    new = set(data["tests"]) - set(EXPECTED)
    assert not new, f"subtests this test does not know yet: {new}"
    totals = data["totals"]
    assert sum(totals.values()) == len(data["tests"])
    for state in ("pass", "fail", "skip", "crash", "timeout", "abort", "incomplete", "notrun"):
        assert totals[state] == sum(1 for t in data["tests"].values() if t["result"] == state)
    assert data["run"]["timeout"] == 2.0 and data["run"]["grace"] == 1.0
    assert "gpuconform: failed:" in run.stderr


def test_full_run_record_fields(full_run: tuple[CliRun, list[Any]]) -> None:
    tests = full_run[0].tests()
    # a skip's place, from lib/core.h's stderr line; nothing for the tests that did not skip
    assert re.fullmatch(r".*/selftest/checks\.c:\d+ \(skip_here\(\)\)",
                        tests["selftest_checks@skip-here"]["skip_at"])
    assert tests["selftest_results@pass"]["skip_at"] is None
    rec = tests["selftest_results@pass"]
    assert rec["command"][1:] == ["--run-subtest", "pass"]
    assert rec["returncode"] == 0
    assert "Subtest pass: SUCCESS" in rec["out"]
    assert rec["time"]["start"] <= rec["time"]["end"]
    assert isinstance(rec["reported_time"], float)
    assert tests["selftest_results@crash-segv"]["returncode"] == -11
    assert "Received signal SIGSEGV" in tests["selftest_results@crash-segv"]["err"]


def test_full_run_timeouts_term_then_kill(full_run: tuple[CliRun, list[Any]]) -> None:
    tests = full_run[0].tests()
    assert "sent SIGTERM to the process group" in tests["selftest_hang@sleep-forever"]["notes"][0]
    assert tests["selftest_hang@sleep-forever"]["returncode"] == -15
    assert "sent SIGTERM then SIGKILL" in tests["selftest_hang@ignore-sigterm"]["notes"][0]
    assert tests["selftest_hang@ignore-sigterm"]["returncode"] == -9


def test_full_run_children(full_run: tuple[CliRun, list[Any]]) -> None:
    tests = full_run[0].tests()
    esc = tests["selftest_child@escaped-child"]
    pid = esc["out"].split("escaped child pid: ")[1].split()[0]
    assert any(n.startswith(f"escaped children: pid {pid} ") for n in esc["notes"]), esc["notes"]
    ling = tests["selftest_child@lingering-child"]
    pid = ling["out"].split("lingering child pid: ")[1].split()[0]
    assert any("left in the process group" in n and f"pid {pid} " in n for n in ling["notes"])


def test_full_run_floods_are_truncated(full_run: tuple[CliRun, list[Any]]) -> None:
    tests = full_run[0].tests()
    for name, stream in (("selftest_flood@stdout-flood", "out"), ("selftest_flood@stderr-flood", "err")):
        rec = tests[name]
        assert rec[f"{stream}_bytes"] >= 64 << 20
        assert len(rec[stream]) < 200_000
        assert "bytes cut ...]" in rec[stream]
    assert tests["selftest_flood@stdout-flood"]["out"].rstrip().endswith(")")


def test_full_run_metrics(full_run: tuple[CliRun, list[Any]]) -> None:
    metrics = {m["name"]: m for m in full_run[0].tests()["selftest_metrics@metrics"]["metrics"]}
    assert set(metrics) == {"latency", "bandwidth"}
    assert metrics["latency"]["unit"] == "ns" and metrics["latency"]["better"] == "lower"
    assert metrics["bandwidth"]["unit"] == "MB/s" and metrics["bandwidth"]["better"] == "higher"
    assert metrics["latency"]["samples"] == [1200, 1100, 1150, 1300, 1125]
    assert len(metrics["bandwidth"]["samples"]) == 3
    assert metrics["latency"]["subtest"] == "metrics" and metrics["latency"]["dynamic"] is None


def test_full_run_dynamic(full_run: tuple[CliRun, list[Any]]) -> None:
    tests = full_run[0].tests()
    dyn = tests["selftest_dynamic@mixed"]["dynamic"]
    assert {k: v["result"] for k, v in dyn.items()} == {"pass-0": "pass", "fail-1": "fail",
                                                        "skip-2": "skip"}
    assert dyn["skip-2"]["reason"] == "dynamic skip 2"
    assert set(tests["selftest_dynamic@all-pass"]["dynamic"]) == {"a", "b"}
    grid = tests["selftest_checks@product"]["dynamic"]
    assert {k: v["result"] for k, v in grid.items()} == {
        "n1-here": "pass", "n1-there": "skip", "n2-here": "fail", "n2-there": "skip"}
    assert grid["n1-there"]["reason"] == "there is not reachable"
    assert "Failed check: *n < 2" in tests["selftest_checks@product"]["err"]


def test_full_run_summary_and_junit(full_run: tuple[CliRun, list[Any]]) -> None:
    run, _ = full_run
    summary = (run.results / "summary.txt").read_text()
    assert summary.startswith(f"gpuconform: {len(EXPECTED)} tests: ")
    skips = summary.split("skip reasons:\n")[1]
    assert "  selftest: skipped on purpose (42) [1]: selftest_results@skip\n" in skips
    assert "crash:\n  selftest_results@crash-segv: killed by SIGSEGV" in summary
    assert "gpuconform summary" in run.stdout and "skip reasons:" in run.stdout
    cases = ET.parse(run.results / "junit.xml").getroot().iter("testcase")
    names = {c.get("name") for c in cases}
    assert "selftest_results@crash-segv" in names and len(names) == len(EXPECTED)


def test_failure_report_has_no_python_traceback(full_run: tuple[CliRun, list[Any]]) -> None:
    out = full_run[0].stdout
    block = out.split("selftest_results@crash-segv _")[1].split("\n____")[0]
    assert "crash: killed by SIGSEGV" in block
    assert "---- stdout (tail;" in block and "Starting subtest: crash-segv" in block
    assert "Traceback" not in out and "plugin.py" not in out


# ------------------------------------------------------------- selections


def test_keyword_selection_passing_run_exits_0(selftests: Selftests, tmp_path: Path) -> None:
    run = gpuconform("run", "--build", str(selftests.build), "--selftest",
                     "-k", "selftest_results and (pass or skip) and not child", results=tmp_path / "r")
    assert run.returncode == 0, run.stdout + run.stderr
    assert set(run.tests()) == {"selftest_results@pass", "selftest_results@skip"}
    assert "gpuconform: ok: 2 subtests" in run.stdout


def test_fixture_skip_from_the_environment(selftests: Selftests, tmp_path: Path) -> None:
    env = dict(os.environ, GPUCONFORM_SELFTEST_FIXTURE_SKIP="1")
    run = gpuconform("run", "--build", str(selftests.build), "--selftest", "-k", "selftest_fixture",
                     results=tmp_path / "r", env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    tests = run.tests()
    assert {t["result"] for t in tests.values()} == {"skip"} and len(tests) == 2
    assert "fixture: no device (GPUCONFORM_SELFTEST_FIXTURE_SKIP=1) [2]" in run.stdout


def test_installed_pytest_plugins_stay_out_unless_the_environment_says(
        selftests: Selftests, tmp_path: Path) -> None:
    """A plugin installed in the runner's Python (an entry point "pytest11") is
    not loaded into a run; PYTEST_DISABLE_PLUGIN_AUTOLOAD set by the caller,
    even empty, is left to pytest."""
    site = tmp_path / "site"
    info = site / "gc_spy-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gc-spy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\ngc_spy = gc_spy_plugin\n")
    (site / "gc_spy_plugin.py").write_text(
        "import os\n\n\ndef pytest_configure(config):\n"
        "    with open(os.environ['GC_SPY_FILE'], 'a') as f:\n        f.write('loaded\\n')\n")
    spy = tmp_path / "spy"
    env = dict(os.environ, GC_SPY_FILE=str(spy),
               PYTHONPATH=os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    args = ("run", "--build", str(selftests.build), "--selftest", "-k", "selftest_results and pass")
    run = gpuconform(*args, results=tmp_path / "off", env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not spy.exists()
    run = gpuconform(*args, results=tmp_path / "on", env=dict(env, PYTEST_DISABLE_PLUGIN_AUTOLOAD=""))
    assert run.returncode == 0, run.stdout + run.stderr
    assert spy.read_text() == "loaded\n"


def test_nothing_selected_exits_1(selftests: Selftests, tmp_path: Path) -> None:
    run = gpuconform("run", "--build", str(selftests.build), "--selftest", "-k", "no_such_thing",
                     results=tmp_path / "r")
    assert run.returncode == 1
    assert "no subtest ran" in run.stderr


def test_stop_on_first_failure_marks_the_rest_notrun(selftests: Selftests, tmp_path: Path) -> None:
    run = gpuconform("run", "--build", str(selftests.build), "--selftest",
                     "-k", "selftest_results and not child", "--", "-x", results=tmp_path / "r")
    assert run.returncode == 1
    tests = run.tests()
    assert tests["selftest_results@pass"]["result"] == "pass"
    assert tests["selftest_results@fail"]["result"] == "fail"
    assert tests["selftest_results@skip"]["result"] == "notrun"
    assert tests["selftest_results@abort"]["result"] == "notrun"


def test_list(selftests: Selftests) -> None:
    run = gpuconform("list", "--build", str(selftests.build), "--selftest")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "selftest_results@crash-segv" in lines and "selftest_hang@ignore-sigterm" in lines
    assert all("@" in line for line in lines)


# ------------------------------------------------- errors (no build needed)


def test_missing_build_dir(tmp_path: Path) -> None:
    for cmd in ("run", "list"):
        run = gpuconform(cmd, "--build", str(tmp_path / "nope"))
        assert run.returncode == 2
        assert run.stderr.count("\n") == 1
        assert run.stderr.startswith(f"gpuconform: build directory {tmp_path / 'nope'} does not exist")


def test_missing_manifest(tmp_path: Path) -> None:
    run = gpuconform("run", "--build", str(tmp_path), "--selftest")
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert f"{tmp_path / 'gpuconform-selftest.txt'}: no such manifest" in run.stderr


def test_manifest_naming_a_missing_binary(tmp_path: Path) -> None:
    (tmp_path / "gpuconform-suite.txt").write_text("# suite\ntests/host/host_gone\n")
    run = gpuconform("run", "--build", str(tmp_path))
    assert run.returncode == 2
    assert run.stderr == (f"gpuconform: {tmp_path / 'gpuconform-suite.txt'}:2: tests/host/host_gone: "
                          f"no such binary ({tmp_path / 'tests/host/host_gone'}; is the build finished?)\n")


def subject(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)


def test_broken_binaries_become_failing_items(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    subject(build / "t_nolist", "echo 'cannot open /dev/kfd' >&2; exit 3\n")
    subject(build / "t_junk", """\
        if [ "$1" = --list-subtests ]; then echo ok; echo 'Not A Name'; exit 0; fi
        echo "Starting subtest: $2"; echo "Subtest $2: SUCCESS (0.000s)"
        """)
    (build / "gpuconform-suite.txt").write_text("t_nolist\nt_junk\n")
    run = gpuconform("run", "--build", str(build), results=tmp_path / "r")
    assert run.returncode == 1, run.stdout + run.stderr
    tests = run.tests()
    assert tests["t_nolist"]["result"] == "fail"
    assert tests["t_nolist"]["reason"] == \
        "--list-subtests exited with status 3 (stderr: cannot open /dev/kfd)"
    assert tests["t_junk"]["result"] == "fail"
    assert "not subtest names: line 2" in tests["t_junk"]["reason"]
    assert tests["t_junk@ok"]["result"] == "pass"
    assert "Traceback" not in run.stdout


def test_sigterm_to_the_runner_kills_the_running_test(
        selftests: Selftests, tmp_path: Path, marker_env: bytes) -> None:
    needle = marker_env
    env = dict(os.environ)  # marker_env's marker included
    results = tmp_path / "r"
    rc, out = signal_when_running(
        ["run", "--results", str(results), "--build", str(selftests.build), "--selftest",
         "--timeout", "600", "-k", "sleep-forever"],
        env, needle, "--run-subtest sleep-forever")
    left = processes_with(needle)
    assert left == [], left
    assert rc == 1, out
    rec = json.loads((results / "results.json").read_text())["tests"]["selftest_hang@sleep-forever"]
    assert rec["result"] == "incomplete"
    assert "interrupted" in rec["reason"] and "SIGTERM" in rec["reason"]

"""`gpuconform run` end to end over the REAL selftest binaries: expectations and
retries, selection, sharding, timeouts and devices, the kernel log and taint,
baselines, progress, and the one-line errors of bad input."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import CliRun, Selftests, launcher_process, processes_with, run_launcher


def base_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("GPUCONFORM_SELFTEST_KMSG", "GPUCONFORM_SELFTEST_TAINT_FILE",
                "GPUCONFORM_SELFTEST_FIXTURE_SKIP"):
        env.pop(var, None)
    env.update(GPUCONFORM_SELFTEST_SLEEP_MS="20", GPUCONFORM_SELFTEST_LONG_SLEEP_MS="20")
    env.update(extra)
    return env


def cli(*args: str, env: dict[str, str] | None = None, results: Path | None = None) -> CliRun:
    return run_launcher(list(args), env if env is not None else base_env(), results)


def run(st: Selftests, results: Path, *args: str, env: dict[str, str] | None = None) -> CliRun:
    """gpuconform run on the selftests. The kernel log is not watched unless
    asked for: a loaded CI machine's own kernel warnings must not turn a pass
    into dmesg-warn in tests about something else."""
    kmsg = [] if "--kmsg" in args else ["--kmsg", "off"]
    return cli("run", "--build", str(st.build), "--selftest", "--results", str(results),
               "--no-baseline", *kmsg, *args, env=env, results=results)


def one_line_error(r: CliRun) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    return r.stderr.strip()


# -------------------------------------------------- expectations, retries


def test_expected_failures_skip_rules_and_stale_rules(selftests: Selftests, tmp_path: Path) -> None:
    exp = tmp_path / "exp.txt"
    exp.write_text(textwrap.dedent("""\
        fail  selftest_results@fail          # bug 1: asserts 5 == 4
        flake selftest_results@crash-segv    # bug 2
        skip  selftest_results@abort         # aborts the binary: not on this machine
        fail  selftest_results@no-such-*     # stale
        """))
    r = run(selftests, tmp_path / "r", "--expectations", str(exp), "--include",
            r"^selftest_results@(pass|fail|crash-segv|abort)$")
    assert r.returncode == 0, r.stdout + r.stderr
    t = r.tests()
    assert list(t) == ["selftest_results@pass", "selftest_results@fail",
                       "selftest_results@crash-segv", "selftest_results@abort"]
    fail = t["selftest_results@fail"]
    assert fail["result"] == "fail" and fail["expected"] is True
    assert [a["result"] for a in fail["attempts"]] == ["fail"]  # expected: not retried
    assert fail["rule"] == f"{exp}:1: fail selftest_results@fail"
    assert t["selftest_results@crash-segv"]["expected"] is True
    ab = t["selftest_results@abort"]
    assert ab["result"] == "skip" and ab["reason"] == "aborts the binary: not on this machine"
    assert ab["command"] == [] and ab["attempts"] == []
    assert not [x for x in r.journal() if x.get("test") == "selftest_results@abort"
                and x["event"] == "start"]  # never started
    data = r.json()
    assert data["expectations"]["stale"] == [f"{exp}:4: fail selftest_results@no-such-*"]
    assert data["outcome"]["status"] == 0 and data["outcome"]["unexpected"] == []
    summary = (r.results / "summary.txt").read_text()
    assert "UNEXPECTED" not in summary
    lines = summary.splitlines()
    assert lines.index("expected failures: 2") < lines.index(
        "stale expectation rules (matched no test): 1") < lines.index("skip reasons:")
    assert "xfailed" in r.stdout


def test_retries_zero_runs_once(selftests: Selftests, tmp_path: Path) -> None:
    r = run(selftests, tmp_path / "r", "--retries", "0", "--include", "^selftest_results@fail$")
    assert r.returncode == 1
    rec = r.tests()["selftest_results@fail"]
    assert len(rec["attempts"]) == 1 and rec["expected"] is False
    assert len([x for x in r.journal() if x["event"] == "start"]) == 1


def flaky_build(tmp_path: Path) -> Path:
    """A protocol-speaking script: `flaky` fails on its first run, passes after."""
    build = tmp_path / "build"
    build.mkdir()
    script = build / "t_flaky"
    script.write_text(textwrap.dedent("""\
        #!/bin/sh
        if [ "$1" = --list-subtests ]; then echo flaky; echo steady; exit 0; fi
        echo "Starting subtest: $2"
        if [ "$2" = flaky ] && [ ! -e "$FLAKY_STATE" ]; then
            : > "$FLAKY_STATE"; echo "Subtest flaky: FAIL (0.000s)"; exit 98
        fi
        echo "Subtest $2: SUCCESS (0.000s)"
        """))
    script.chmod(0o755)
    (build / "gpuconform-suite.txt").write_text("t_flaky\n")
    return build


def test_flake_is_unexpected_without_a_flake_rule(tmp_path: Path) -> None:
    build = flaky_build(tmp_path)
    env = base_env(FLAKY_STATE=str(tmp_path / "state1"))
    none = tmp_path / "none.txt"
    none.write_text("# no rules\n")
    r = cli("run", "--build", str(build), "--results", str(tmp_path / "r1"), "--no-baseline",
            "--kmsg", "off",
            "--expectations", str(none), env=env, results=tmp_path / "r1")
    assert r.returncode == 1, r.stdout + r.stderr
    rec = r.tests()["t_flaky@flaky"]
    assert rec["result"] == "pass" and rec["final"] == "flake" and rec["expected"] is False
    assert "flaky: passed on attempt 2 (fail, pass)" in rec["judgement"]
    assert "flake (unexpected):\n  t_flaky@flaky: flaky: passed on attempt 2" in \
        (r.results / "summary.txt").read_text()
    exp = tmp_path / "exp.txt"
    exp.write_text("flake t_flaky@flaky  # lost wakeup\nfail t_flaky@steady\n")
    env = base_env(FLAKY_STATE=str(tmp_path / "state2"))
    r = cli("run", "--build", str(build), "--results", str(tmp_path / "r2"), "--no-baseline",
            "--kmsg", "off",
            "--expectations", str(exp), env=env, results=tmp_path / "r2")
    assert r.returncode == 1  # the flake is expected now, but steady passes: "fixed"
    t = r.tests()
    assert t["t_flaky@flaky"]["expected"] is True
    assert t["t_flaky@steady"]["expected"] is False
    assert "fixed: passes although expected to fail" in t["t_flaky@steady"]["judgement"]
    summary = (r.results / "summary.txt").read_text()
    assert summary.index("UNEXPECTED: 1") < summary.index("flakes (expected): 1")


# ---------------------------------------------------------------- selection


def test_testlists_include_exclude(selftests: Selftests, tmp_path: Path) -> None:
    tl = tmp_path / "mine.txt"
    tl.write_text("# a list\nselftest_results@pass\nselftest_flow@sleep-*   # the nappers\n")
    r = run(selftests, tmp_path / "r", "--testlist", str(tl), "--exclude", "sleep-3",
            "--exclude", "sleep-long")
    assert r.returncode == 0, r.stdout + r.stderr
    want = ["selftest_results@pass", "selftest_flow@sleep-1", "selftest_flow@sleep-2"]
    assert list(r.tests()) == want and r.json()["selection"] == want
    assert r.json()["shard"] is None
    r = run(selftests, tmp_path / "r2", "--testlist", str(tl), "--include", "sleep-2")
    assert list(r.tests()) == ["selftest_flow@sleep-2"]
    lst = cli("list", "--build", str(selftests.build), "--selftest", "--testlist", str(tl),
              "--exclude", "sleep-[3l]")
    assert lst.returncode == 0 and lst.stdout.split() == want


def test_testlist_naming_an_unknown_test(selftests: Selftests, tmp_path: Path) -> None:
    tl = tmp_path / "typo.txt"
    tl.write_text("selftest_results@pass\nselftest_results@crash-segfault\n")
    r = run(selftests, tmp_path / "r", "--testlist", str(tl))
    err = one_line_error(r)
    assert err.startswith(f"gpuconform: {tl}:2: no such test 'selftest_results@crash-segfault'")
    assert "closest: selftest_results@crash-segv" in err
    assert not (tmp_path / "r" / "results.json").exists()
    lst = cli("list", "--build", str(selftests.build), "--selftest", "--testlist", str(tl))
    assert one_line_error(lst) == err


# what -> (the text of a bad file BAD, or None; the arguments; words of the one-line error).
BAD_INPUT: dict[str, tuple[str | None, list[str], str]] = {
    "testlist": ("selftest_results@pass\nnot a test\n", ["--testlist", "BAD"],
                 "BAD:2: spaces inside the entry"),
    "expectations": ("fail selftest_results@pass\nbogus selftest_results@fail\n",
                     ["--expectations", "BAD"], "BAD:2: unknown kind 'bogus'"),
    "patterns": ("warn ok\nabort (\n", ["--dmesg-patterns", "BAD"], "BAD:2: bad regular expression"),
    "catalogue": ("selftest_metrics@spin:spin ns node\nselftest_metrics@metrics:* ns host\n",
                  ["--catalogue", "BAD"], "BAD:2: unknown scope 'host': device or node"),
    "named": (None, ["--testlist", "no-such-list"], "unknown test list 'no-such-list'"),
    "shard": (None, ["--shard", "3/2"], "argument --shard: bad shard '3/2'"),
    "devices": (None, ["--devices", "0, 1"], "argument --devices: --devices '0, 1': expected"),
    "override": (None, ["--timeout-override", "selftest_hang@*=soon"], "is not a positive number"),
    "retries": (None, ["--retries", "-1"], "--retries -1: must be 0..100"),
}


@pytest.mark.parametrize("what", list(BAD_INPUT))
def test_bad_input_is_a_one_line_error(selftests: Selftests, tmp_path: Path, what: str) -> None:
    text, args, want = BAD_INPUT[what]
    bad = tmp_path / "bad.txt"
    if text is not None:
        bad.write_text(text)
    r = run(selftests, tmp_path / "r", *(str(bad) if a == "BAD" else a for a in args))
    assert want.replace("BAD", str(bad)) in one_line_error(r)
    assert not (tmp_path / "r").exists()


def test_a_metric_outside_the_catalogue_fails_its_test(selftests: Selftests,
                                                     tmp_path: Path) -> None:
    """selftest_metrics@metrics records latency (ns) and bandwidth (MB/s): a
    catalogue without bandwidth, and one that says latency is in us, each
    fail it with one line naming the metric and the file; data/metrics.txt
    passes it."""
    sel = ["--include", "^selftest_metrics@metrics$", "--retries", "0"]
    lacking = tmp_path / "lacking.txt"
    lacking.write_text("selftest_metrics@metrics:latency ns node\n")
    r = run(selftests, tmp_path / "a", "--catalogue", str(lacking), *sel)
    rec = r.tests()["selftest_metrics@metrics"]
    assert r.returncode == 1 and rec["result"] == "fail"
    assert rec["reason"] == (f"metric selftest_metrics@metrics:bandwidth (MB/s) is not in "
                             f"{lacking}: add a line PATTERN UNIT SCOPE")
    assert rec["reason"] in (r.results / "summary.txt").read_text()
    assert [m["name"] for m in rec["metrics"]] == ["latency", "bandwidth"]  # kept, not dropped
    other_unit = tmp_path / "unit.txt"
    other_unit.write_text("selftest_metrics@metrics:latency us node\n"
                          "selftest_metrics@metrics:bandwidth MB/s node\n")
    r = run(selftests, tmp_path / "b", "--catalogue", str(other_unit), *sel)
    rec = r.tests()["selftest_metrics@metrics"]
    assert rec["result"] == "fail" and rec["reason"] == (
        f"metric selftest_metrics@metrics:latency is recorded in 'ns', but {other_unit}:1 "
        "(selftest_metrics@metrics:latency) says 'us': fix the binary or that line")
    r = run(selftests, tmp_path / "c", *sel)
    assert r.returncode == 0 and r.tests()["selftest_metrics@metrics"]["result"] == "pass"
    assert r.json()["run"]["options"]["catalogue"].endswith("data/metrics.txt")


def test_results_dir_holding_a_run_is_refused(selftests: Selftests, tmp_path: Path) -> None:
    r = run(selftests, tmp_path / "r", "--include", "^selftest_results@pass$")
    assert r.returncode == 0
    again = run(selftests, tmp_path / "r", "--include", "^selftest_results@pass$")
    assert f"gpuconform resume {tmp_path / 'r'}" in one_line_error(again)


def test_shards_split_the_selection_and_merge_back(selftests: Selftests, tmp_path: Path) -> None:
    sel = ["--include", r"^selftest_(results@(pass|skip)|flow@sleep-[123]|dynamic@all-pass)$"]
    a = run(selftests, tmp_path / "a", "--shard", "1/2", *sel)
    b = run(selftests, tmp_path / "b", "--shard", "2/2", *sel)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert a.json()["selection"] == b.json()["selection"] and len(a.json()["selection"]) == 6
    assert a.json()["shard"] == [1, 2] and b.json()["shard"] == [2, 2]
    ta, tb = set(a.tests()), set(b.tests())
    assert not ta & tb and ta | tb == set(a.json()["selection"])
    m = cli("merge", str(tmp_path / "m"), str(tmp_path / "a"), str(tmp_path / "b"))
    assert m.returncode == 0, m.stdout + m.stderr
    merged = json.loads((tmp_path / "m" / "results.json").read_text())
    assert list(merged["tests"]) == a.json()["selection"]


def test_timeout_override(selftests: Selftests, tmp_path: Path) -> None:
    r = run(selftests, tmp_path / "r", "--include", r"^selftest_(hang@sleep-forever|flow@print-env)$",
            "--timeout", "600", "--timeout-override", "selftest_hang@*=1", "--grace", "0.5",
            "--retries", "0")
    t = r.tests()
    hang = t["selftest_hang@sleep-forever"]
    assert hang["result"] == "timeout" and hang["reason"].startswith("timed out after 1s")
    assert hang["timeout"] == 1.0 and t["selftest_flow@print-env"]["timeout"] == 600.0
    out = t["selftest_flow@print-env"]["out"]
    assert f"env GPUCONFORM_RUN_ID={r.json()['run']['run_id']}\n" in out


# ------------------------------------------------------- kernel log, taint


def test_new_taint_aborts_the_run_then_resume_finishes_it(
        selftests: Selftests, tmp_path: Path, marker_env: bytes) -> None:
    taint = tmp_path / "tainted"
    taint.write_text("0\n")
    env = base_env(GPUCONFORM_SELFTEST_TAINT_FILE=str(taint))  # marker_env's marker included
    r = run(selftests, tmp_path / "r", "--include", r"^selftest_flow@(taint|sleep-[12])$",
            "--taint-file", str(taint), env=env)
    assert r.returncode == 1
    t = r.tests()
    assert t["selftest_flow@taint"]["result"] == "abort"
    why = "kernel taint 0 -> 512: new W (kernel issued a warning (WARN_ON))"
    assert t["selftest_flow@taint"]["reason"] == f"run aborted: {why}"
    assert t["selftest_flow@taint"]["notes"][0] == "the test itself ended pass"
    for n in ("selftest_flow@sleep-1", "selftest_flow@sleep-2"):
        assert t[n]["result"] == "notrun" and why in t[n]["reason"]
    assert r.json()["run"]["aborted"] == f"selftest_flow@taint: {why}"
    summary = (r.results / "summary.txt").read_text()
    assert summary.splitlines()[1] == f"RUN ABORTED: selftest_flow@taint: {why}"
    assert [x["event"] for x in r.journal()][-2:] == ["abort", "end"]
    # After the machine is looked at, resume runs what the abort left.
    res = cli("resume", str(r.results), env=env, results=r.results)
    assert res.returncode == 1  # the abort stays
    t = res.tests()
    assert t["selftest_flow@taint"]["result"] == "abort"
    assert t["selftest_flow@sleep-1"]["result"] == "pass"
    assert t["selftest_flow@sleep-2"]["result"] == "pass"


def kmsg_usable() -> str | None:
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError as e:
        return f"/dev/kmsg not readable: {e.strerror}"
    if not os.access("/dev/kmsg", os.W_OK):
        return "/dev/kmsg not writable (not root)"
    return None


def test_kernel_log_warnings_and_gpu_reset_for_real(selftests: Selftests, tmp_path: Path) -> None:
    why = kmsg_usable()
    if why:
        pytest.skip(why)
    r = run(selftests, tmp_path / "r", "--include", r"^selftest_flow@(kmsg-.*|sleep-[12])$",
            "--retries", "0", "--kmsg", "/dev/kmsg", env=base_env(GPUCONFORM_SELFTEST_KMSG="1"))
    assert r.returncode == 1
    t = r.tests()
    w = t["selftest_flow@kmsg-warn"]
    assert w["result"] == "dmesg-warn"
    assert w["reason"].startswith("kernel log: <4>[") and \
        w["reason"].endswith("] gpuconform-selftest: simulated warning")
    assert any(x.endswith("gpuconform-selftest: simulated warning") for x in w["dmesg"])
    wf = t["selftest_flow@kmsg-warn-fail"]
    assert wf["result"] == "dmesg-fail" and "selftest: failing after a kernel warning" in wf["reason"]
    reset = t["selftest_flow@kmsg-gpu-reset"]
    assert reset["result"] == "abort" and "GPU reset begin! (simulated)" in reset["reason"]
    assert t["selftest_flow@sleep-1"]["result"] == "notrun"
    assert t["selftest_flow@sleep-2"]["result"] == "notrun"
    assert r.json()["kernel_log"]["watched"] is True
    assert "RUN ABORTED: selftest_flow@kmsg-gpu-reset: kernel log: <3>[" in r.stdout


def test_a_kernel_log_given_that_cannot_be_read_stops_before_the_run(selftests: Selftests,
                                                                     tmp_path: Path) -> None:
    """Given by name, it must open (test_run_faults: the default unreadable
    stays a note, said once)."""
    r = run(selftests, tmp_path / "r", "--include", r"^selftest_results@(pass|skip)$",
            "--kmsg", str(tmp_path / "no-kmsg"))
    assert one_line_error(r) == (f"gpuconform: --kmsg {tmp_path / 'no-kmsg'}: cannot be read: "
                                 "No such file or directory (give one that can, or --kmsg off)")
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------- baselines


def latency_key() -> str:
    """selftest_metrics@metrics:latency as this machine's runs key it: timed on
    the host, so by the node (data/metrics.txt, scope.py)."""
    from gpuconform.core.metrickey import MetricKey
    from gpuconform.core.fingerprint import current_fingerprint
    from gpuconform.perf.scope import node_label

    fp = current_fingerprint()
    n = fp.gpu_count()
    return str(MetricKey("selftest_metrics@metrics", "latency", node_label(n, n, 1, fp.cpu_model)))


def write_baseline(directory: Path, latency: list[float]) -> Path:
    """A baseline of this machine's fingerprint: 5 clean runs of
    selftest_metrics@metrics:latency, latency scaled by 1.000-1.004."""
    from gc_testutil import gate_baseline
    from gpuconform.perf.baseline import write_baseline as wb
    from gpuconform.core.fingerprint import current_fingerprint

    fp = current_fingerprint()
    runs = [[x * (1 + i / 1000) for x in latency] for i in range(5)]
    b = gate_baseline({latency_key(): ("ns", "lower", runs)}, fp.to_json(),
                      {"selftest_metrics@metrics": 0.01})
    directory.mkdir(parents=True, exist_ok=True)
    path: Path = wb(b, directory / f"{fp.key()}.json")
    return path


def test_baseline_regression_is_unexpected_unless_expected(selftests: Selftests,
                                                          tmp_path: Path) -> None:
    bdir = tmp_path / "baselines"
    write_baseline(bdir, [100.0, 101.0, 102.0, 103.0, 104.0])  # the run says ~1150 ns
    sel = ["--include", "^selftest_metrics@metrics$", "--baselines", str(bdir)]
    r = cli("run", "--build", str(selftests.build), "--selftest", "--results",
            str(tmp_path / "r"), "--kmsg", "off", *sel, results=tmp_path / "r")
    assert r.returncode == 1, r.stdout + r.stderr
    comps = {c["key"]: c for c in r.json()["comparisons"]}
    assert comps[latency_key()]["verdict"] == "regression"
    bandwidth = latency_key().replace(":latency ", ":bandwidth ")
    assert comps[bandwidth]["verdict"] == "new"
    assert r.json()["outcome"]["regressions"] == 1
    assert f"metric regressions:\n  {latency_key()}: regression: good-half mean" in r.stdout
    assert "1 metric regression(s)" in r.stderr
    assert (r.results / "report.html").is_file()
    summary = (r.results / "summary.txt").read_text().splitlines()
    i = summary.index("metrics with no baseline entry (never gated): 1")
    assert summary[i + 1] == "  selftest_metrics@metrics: bandwidth [" + \
        latency_key().partition(" [")[2]
    ok = cli("run", "--build", str(selftests.build), "--selftest", "--results",
             str(tmp_path / "r2"), "--kmsg", "off", *sel, "--regressions-expected",
             results=tmp_path / "r2")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "metric regressions (expected: --regressions-expected): 1" in ok.stdout
    off = cli("run", "--build", str(selftests.build), "--selftest", "--results",
              str(tmp_path / "r3"), "--kmsg", "off", *sel, "--no-baseline",
              results=tmp_path / "r3")
    assert off.returncode == 0 and off.json()["comparisons"] == []


def damaged_baseline(bdir: Path, damage: str) -> tuple[Path, str]:
    """This machine's baseline in bdir, damaged; and the start of the line
    that names it: cut short, another fingerprint's filed under this
    machine's key, edited by hand, of the old format."""
    path = write_baseline(bdir, [100.0, 101.0, 102.0])
    text = path.read_text()
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
        return path, f"{path}:"
    if damage == "other-fingerprint":
        j = json.loads(text)
        j["fingerprint"]["gpu_model"] = "1x NVIDIA L4"
        path.write_text(json.dumps(j, indent=1))
        line = next(i for i, x in enumerate(path.read_text().splitlines(), 1)
                    if '"fingerprint"' in x)
        return path, f"{path}:{line}: fingerprint: the baseline is for 1x NVIDIA L4;"
    if damage == "hand-edited":
        path.write_text(text.replace('"power": 0.95', '"power": 0.9'))
        return path, f"{path}:"
    path.write_text('{"format": "gpuconform-baseline",\n "version": 1,\n "metrics": 7}\n')
    return path, f"{path}:2: version: a version 1 baseline"


DAMAGES = ["truncated", "other-fingerprint", "hand-edited", "version-1"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_bad_baseline_found_by_fingerprint_is_one_line_after_the_run(
        selftests: Selftests, tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline the run found itself (data/baselines/, none asked for)
    damaged: the run keeps every result, exits 1, and says which file and
    line in one line. (In this process: data/baselines/ is the checkout's.)"""
    from gpuconform.perf import baseline as bl
    from gpuconform import cli as gc_cli

    bdir = tmp_path / "baselines"
    _, want = damaged_baseline(bdir, damage)
    monkeypatch.setattr(bl, "DEFAULT_BASELINE_DIR", bdir)
    results = tmp_path / "r"
    status = gc_cli.main(["run", "--build", str(selftests.build), "--selftest", "--results",
                          str(results), "--kmsg", "off", "--progress", "off",
                          "--include", "^selftest_metrics@metrics$"])
    out = capsys.readouterr()
    assert status == 1, out.out + out.err
    r = CliRun(status, out.out, out.err, results)
    assert r.tests()["selftest_metrics@metrics"]["result"] == "pass"  # nothing lost
    err = r.json()["baseline"]["error"]
    assert err.startswith(f"baseline: {want}") and "\n" not in err, err
    assert f"gpuconform: {err}" in r.stdout and "Traceback" not in r.stdout + r.stderr
    assert "BASELINE NOT COMPARED" in (r.results / "summary.txt").read_text()


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_bad_baseline_asked_for_stops_before_the_run(selftests: Selftests, tmp_path: Path,
                                                       damage: str) -> None:
    """A baseline asked for (--baselines DIR, --baseline FILE) is loaded and
    checked before anything runs: damaged, one line naming the file and line,
    exit 2, no results directory. (It used to be found after the run.)"""
    bdir = tmp_path / "baselines"
    path, want = damaged_baseline(bdir, damage)
    for asked in (["--baselines", str(bdir)], ["--baseline", str(path)]):
        r = cli("run", "--build", str(selftests.build), "--selftest", "--results",
                str(tmp_path / "r"), "--kmsg", "off", "--include", "^selftest_metrics@metrics$",
                *asked)
        assert one_line_error(r).startswith(f"gpuconform: {want}"), r.stderr
        assert not (tmp_path / "r").exists()


def test_a_baseline_asked_for_and_not_there_stops_before_the_run(selftests: Selftests,
                                                               tmp_path: Path) -> None:
    """--baselines naming nothing, a file, or a directory without this
    machine's baseline; --baseline naming nothing or a directory: one line,
    exit 2, nothing written. Before: the run went on, compared nothing, and
    exited 0 with a note (a nightly with a typo green for ever)."""
    from gpuconform.core.fingerprint import current_fingerprint

    key = current_fingerprint().key()
    other = tmp_path / "other"
    other.mkdir()
    (other / "nvidia-l4__x.json").write_text("{}")
    (other / "README.md").write_text("baselines of other machines\n")
    (tmp_path / "empty").mkdir()
    afile = other / "README.md"
    cases = {
        ("--baselines", str(tmp_path / "nowhere")):
            f"--baselines {tmp_path / 'nowhere'}: no such directory",
        ("--baselines", str(afile)):
            f"--baselines {afile}: not a directory (one baseline file is --baseline FILE)",
        ("--baselines", str(other)):
            f"--baselines {other}: no baseline of this machine's fingerprint: looked for "
            f"{key}.json (",
        ("--baselines", str(tmp_path / "empty"), "--baselines", str(other)):
            f"--baselines {tmp_path / 'empty'}, {other}: no baseline of this machine's "
            f"fingerprint: looked for {key}.json (",
        ("--baseline", str(tmp_path / "nowhere.json")):
            f"--baseline {tmp_path / 'nowhere.json'}: no such file",
        ("--baseline", str(other)):
            f"--baseline {other}: a directory (a directory of baselines, searched by this "
            "machine's fingerprint, is --baselines DIR)",
        ("--baseline", str(afile)): f"{afile}:1: malformed baseline JSON",
    }
    for asked, want in cases.items():
        r = cli("run", "--build", str(selftests.build), "--selftest", "--results",
                str(tmp_path / "r"), "--kmsg", "off", "--include", "^selftest_results@pass$",
                *asked)
        assert one_line_error(r).startswith(f"gpuconform: {want}"), (asked, r.stderr)
        assert not (tmp_path / "r").exists()
    # the directory's files are named, so a wrong directory or key shows
    r = cli("run", "--build", str(selftests.build), "--selftest", "--results",
            str(tmp_path / "r"), "--kmsg", "off", "--baselines", str(tmp_path / "empty"),
            "--baselines", str(other))
    assert one_line_error(r).endswith(f"; {tmp_path / 'empty'} holds no .json file; {other} "
                                      "holds nvidia-l4__x.json"), r.stderr
    # none asked for and none for this machine in data/baselines/: a note, the run goes on
    ok = run(selftests, tmp_path / "ok", "--include", "^selftest_results@pass$")
    assert ok.returncode == 0


def test_baseline_file_is_compared_with(selftests: Selftests, tmp_path: Path) -> None:
    """--baseline FILE: that file, wherever it is and whatever its name."""
    path = write_baseline(tmp_path / "b", [100.0, 101.0, 102.0, 103.0, 104.0])
    named = path.rename(tmp_path / "nightly-baseline.json")
    r = cli("run", "--build", str(selftests.build), "--selftest", "--results",
            str(tmp_path / "r"), "--kmsg", "off", "--include", "^selftest_metrics@metrics$",
            "--baseline", str(named), "--regressions-expected", results=tmp_path / "r")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.json()["baseline"] == {"path": str(named), "error": None}
    assert {c["key"]: c["verdict"] for c in r.json()["comparisons"]}[latency_key()] == \
        "regression"


def test_resume_checks_the_baseline_asked_for_again(selftests: Selftests,
                                                    tmp_path: Path) -> None:
    """The run's --baselines is gone when it is resumed: one line, exit 2."""
    bdir = tmp_path / "baselines"
    write_baseline(bdir, [100.0, 101.0, 102.0])
    r = cli("run", "--build", str(selftests.build), "--selftest", "--results",
            str(tmp_path / "r"), "--kmsg", "off", "--include", "^selftest_results@pass$",
            "--baselines", str(bdir), results=tmp_path / "r")
    assert r.returncode == 0, r.stdout + r.stderr
    for f in bdir.iterdir():
        f.unlink()
    bdir.rmdir()
    before = (tmp_path / "r" / "results.json").read_text()
    assert one_line_error(cli("resume", str(tmp_path / "r"))) == \
        f"gpuconform: --baselines {bdir}: no such directory"
    assert (tmp_path / "r" / "results.json").read_text() == before


def test_no_option_is_taken_for_another_it_begins(selftests: Selftests, tmp_path: Path) -> None:
    """argparse's abbreviations are off in every command: `--baselin X` is
    not --baselines, `baseline update --app` not --append."""
    from gpuconform.cli import build_parser

    def parsers(p: Any) -> Any:
        yield p
        for a in p._actions:
            for sub in (getattr(a, "choices", None) or {}).values() \
                    if hasattr(a, "_name_parser_map") else ():
                yield from parsers(sub)

    every = list(parsers(build_parser()))
    assert len(every) > 10 and not [p.prog for p in every if p.allow_abbrev]
    r = cli("run", "--build", str(selftests.build), "--selftest", "--results",
            str(tmp_path / "r"), "--kmsg", "off", "--baselin", str(tmp_path))
    assert "unrecognized arguments: --baselin" in one_line_error(r)
    assert not (tmp_path / "r").exists()
    r = cli("baseline", "update", str(tmp_path), "--app")
    assert "unrecognized arguments: --app" in one_line_error(r)


# ---------------------------------------------------------------- progress


def test_progress_line(selftests: Selftests, tmp_path: Path) -> None:
    sel = ["--include", r"^selftest_results@(pass|skip)$"]
    r = run(selftests, tmp_path / "r", *sel, "--progress", "plain")
    assert r.returncode == 0
    assert "gpuconform: [2/2] 1 pass, 1 skip | ETA 0s\n" in r.stderr
    p = launcher_process(["run", "--build", str(selftests.build), "--selftest", "--results",
                          str(tmp_path / "r2"), "--no-baseline", "--kmsg", "off", *sel,
                          "--progress", "tty"], base_env(), text=False)
    assert b"\rgpuconform: [1/2] 1 pass | ETA " in p.stderr and p.stderr.endswith(b"\r\x1b[K")
    assert b"\n" not in p.stderr  # redrawn in place, erased at the end
    r = run(selftests, tmp_path / "r3", *sel, "--progress", "off")
    assert "gpuconform: [" not in r.stderr


def test_nothing_left_behind(selftests: Selftests, tmp_path: Path, marker_env: bytes) -> None:
    r = run(selftests, tmp_path / "r", "--include", r"^selftest_child@")
    assert r.returncode == 0, r.stdout + r.stderr
    assert processes_with(marker_env) == []


# ------------------------------------------- the other subcommands' plumbing


@pytest.mark.parametrize("argv", [["run"], ["list"], ["resume"], ["compare"], ["baseline"],
                                  ["baseline", "update"], ["report"], ["merge"]])
def test_every_subcommand_has_help(argv: list[str]) -> None:
    r = cli(*argv, "--help")
    assert r.returncode == 0 and r.stdout.startswith(f"usage: gpuconform {' '.join(argv)}")


@pytest.mark.parametrize("argv, want", [
    ([], "gpuconform: error: the following arguments are required: COMMAND"),
    (["bogus"], "gpuconform: error: argument COMMAND: invalid choice: 'bogus'"),
    (["compare", "/nonexistent/a"], "gpuconform compare: error: the following arguments"),
    (["merge", "/tmp/out"], "gpuconform merge: error: the following arguments are required: DIR"),
    (["baseline"], "gpuconform baseline: error: the following arguments are required: ACTION"),
    (["run", "--timeout", "0"], "gpuconform run: error: argument --timeout: must be a positive"),
])
def test_usage_errors_are_one_line(argv: list[str], want: str) -> None:
    assert one_line_error(cli(*argv)).startswith(want)


def test_compare_report_baseline_merge(selftests: Selftests, tmp_path: Path) -> None:
    sel = ["--include", r"^selftest_(metrics@metrics|results@pass)$", "--no-report"]
    a = run(selftests, tmp_path / "a", *sel)
    b = run(selftests, tmp_path / "b", *sel)
    assert a.returncode == 0 and b.returncode == 0, a.stdout + a.stderr
    assert not (tmp_path / "a" / "report.html").exists()  # --no-report
    c = cli("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert c.returncode == 0, c.stderr
    assert "selftest_metrics@metrics" in c.stdout
    rep = cli("report", str(tmp_path / "a"))
    assert rep.returncode == 0 and (tmp_path / "a" / "report.html").is_file()
    out = tmp_path / "bl.json"
    bl = cli("baseline", "update", str(tmp_path / "a"), "--out", str(out))
    assert bl.returncode == 0 and json.loads(out.read_text())["format"] == "gpuconform-baseline"
    m = cli("merge", str(tmp_path / "m"), str(tmp_path / "a"), str(tmp_path / "b"))
    assert m.returncode == 1 and "conflicting" in m.stdout  # same tests, other samples
    for argv in (["compare", str(tmp_path / "a"), str(tmp_path / "none")],
                 ["report", str(tmp_path / "none")],
                 ["baseline", "update", str(tmp_path / "none")],
                 ["merge", str(tmp_path / "m2"), str(tmp_path / "none")]):
        err = one_line_error(cli(*argv))
        assert str(tmp_path / "none") in err, argv

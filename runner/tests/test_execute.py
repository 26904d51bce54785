"""execute.py (+ verdict_of): running binaries for real.

Most subjects are the REAL selftest binaries (skipped without a build); a few
process-handling cases use small shell scripts written here.
"""

from __future__ import annotations

import os
import re
import signal
import textwrap
from pathlib import Path

import pytest

from gc_testutil import Selftests
from gpuconform.core.catalogue import load_catalogue
from gpuconform.core.execute import ExecOptions, list_subtests, run_command, run_subtest
from gpuconform.core.outfiles import Spares
from gpuconform.core.protocol import parse_output
from gpuconform.core.results import verdict_of
from gpuconform.core.states import State, classify

FAST = ExecOptions(timeout_s=20, grace_s=1, list_timeout_s=20)


def script(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    p.chmod(0o755)
    return p


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] in (b"Z", b"X")


# ------------------------------------------------------ real selftest binaries


def test_escaped_child_is_found_reported_and_killed(selftests: Selftests, marker_env: bytes) -> None:
    run = run_subtest(selftests.binary("selftest_child"), "escaped-child", FAST)
    m = re.search(r"escaped child pid: (\d+)", run.command.stdout.text())
    assert m, run.command.stdout.text()
    pid = int(m.group(1))
    assert [(s.pid, s.escaped, s.dead) for s in run.command.strays] == [(pid, True, True)]
    assert gone(pid)
    v = verdict_of(run)
    assert v.state is State.PASS
    assert any(n.startswith(f"escaped children: pid {pid} ") for n in v.notes), v.notes


def test_lingering_child_in_the_group_is_killed(selftests: Selftests, marker_env: bytes) -> None:
    run = run_subtest(selftests.binary("selftest_child"), "lingering-child", FAST)
    m = re.search(r"lingering child pid: (\d+)", run.command.stdout.text())
    assert m
    pid = int(m.group(1))
    assert [(s.pid, s.escaped, s.dead) for s in run.command.strays] == [(pid, False, True)]
    assert gone(pid)
    v = verdict_of(run)
    assert v.state is State.PASS
    assert any("left in the process group" in n and f"pid {pid}" in n for n in v.notes)


def test_fixture_skip_skips_with_the_setup_reason(selftests: Selftests) -> None:
    for sub in ("clean", "leaky"):
        run = run_subtest(selftests.binary("selftest_fixture"), sub, FAST,
                          env_extra={"GPUCONFORM_SELFTEST_FIXTURE_SKIP": "1"})
        v = verdict_of(run)
        assert v.state is State.SKIP, (sub, v)
        assert v.reason == "fixture: no device (GPUCONFORM_SELFTEST_FIXTURE_SKIP=1)"


def test_no_dynamic_subtest_ran_skips(selftests: Selftests) -> None:
    cmd_chunks: list[bytes] = []
    binary = selftests.binary("selftest_dynamic")
    cmd = run_command([str(binary), "--run-subtest", "filtered", "--dynamic-subtest", "nomatch"],
                      FAST, stdout_sink=cmd_chunks.append)
    v = classify("filtered", parse_output(b"".join(cmd_chunks)), returncode=cmd.returncode)
    assert v.state is State.SKIP
    assert v.reason == "no dynamic subtest matched the filter"
    assert v.dynamic == {}


def test_unknown_subtest_is_an_error(selftests: Selftests) -> None:
    v = verdict_of(run_subtest(selftests.binary("selftest_results"), "no-such-subtest", FAST))
    assert v.state is State.ERROR
    assert "exit status 79" in v.reason


def test_flood_is_parsed_whole_and_kept_in_part(selftests: Selftests) -> None:
    opts = ExecOptions(timeout_s=60, grace_s=1, keep_bytes=1024)
    run = run_subtest(selftests.binary("selftest_flood"), "stdout-flood", opts)
    out = run.command.stdout
    assert out.total > 64 << 20
    assert len(out.head) <= 1024 and len(out.tail) <= 1024 and out.cut > 0
    text = out.text()
    assert f"[... gpuconform: {out.cut} bytes cut ...]" in text
    assert text.rstrip().endswith("Subtest stdout-flood: SUCCESS (" + text.rstrip().split("(")[-1])
    assert verdict_of(run).state is State.PASS


def test_list_subtests_of_a_real_binary(selftests: Selftests) -> None:
    ls = list_subtests(selftests.binary("selftest_results"), FAST)
    assert ls.error is None and ls.problems == []
    assert ls.names[:6] == ["pass", "fail", "skip", "crash-segv", "crash-abort", "abort"]


# ---------------------------------------------------------- shell subjects


def test_cannot_execute(tmp_path: Path) -> None:
    run = run_subtest(tmp_path / "missing", "x", FAST)
    assert run.command.spawn_error is not None
    assert "cannot execute" in run.command.spawn_error
    v = verdict_of(run)
    assert v.state is State.ERROR and "cannot execute" in v.reason


def test_environment_token_and_metrics_file(tmp_path: Path) -> None:
    s = script(tmp_path, "t_env", """\
        echo "token=$GPUCONFORM_RUN_TOKEN"
        echo "metrics=$GPUCONFORM_METRICS_FILE"
        echo 'Starting subtest: s'
        echo 'Subtest s: SUCCESS (0.000s)'
        """)
    run = run_subtest(s, "s", FAST)
    out = run.command.stdout.text()
    assert f"token={run.command.token}" in out
    assert re.search(r"metrics=/\S+", out)
    assert verdict_of(run).state is State.PASS


def test_metrics_are_read_and_bad_lines_fail_a_pass(tmp_path: Path) -> None:
    good = ('{"test":"t_metrics","subtest":"s","dynamic":null,"name":"lat","unit":"ns",'
            '"better":"lower","samples":[1,2,3]}')
    s = script(tmp_path, "t_metrics", f"""\
        echo 'Starting subtest: s'
        echo '{good}' >> "$GPUCONFORM_METRICS_FILE"
        echo 'this is not json' >> "$GPUCONFORM_METRICS_FILE"
        echo 'Subtest s: SUCCESS (0.000s)'
        """)
    run = run_subtest(s, "s", FAST)
    assert [m.name for m in run.metrics] == ["lat"]
    assert len(run.metric_errors) == 1 and "line 2: malformed JSON" in run.metric_errors[0]
    v = verdict_of(run)
    assert v.state is State.FAIL
    assert v.reason.startswith("invalid metrics: GPUCONFORM_METRICS_FILE line 2")


def _metric_line(dyn: str, name: str, unit: str) -> str:
    return (f'{{"test":"t_cat","subtest":"s","dynamic":"{dyn}","name":"{name}","unit":"{unit}",'
            '"better":"lower","samples":[1,2,3]}')


def test_a_metric_the_catalogue_lacks_fails_the_test_and_its_dynamic(tmp_path: Path) -> None:
    cat = tmp_path / "metrics.txt"
    cat.write_text("t_cat@s@*:lat   ns   node\nt_cat@s@*:bw  MB/s  node\n")
    s = script(tmp_path, "t_cat", f"""\
        echo 'Starting subtest: s'
        for d in a b c; do
          echo "Starting dynamic subtest: $d"
          echo "Dynamic subtest $d: SUCCESS (0.000s)"
        done
        echo '{_metric_line("a", "lat", "ns")}' >> "$GPUCONFORM_METRICS_FILE"
        echo '{_metric_line("b", "new-one", "ns")}' >> "$GPUCONFORM_METRICS_FILE"
        echo '{_metric_line("c", "bw", "GB/s")}' >> "$GPUCONFORM_METRICS_FILE"
        echo 'Subtest s: SUCCESS (0.000s)'
        """)
    run = run_subtest(s, "s", FAST)
    assert len(run.metrics) == 3 and not run.metric_errors
    assert verdict_of(run).state is State.PASS  # no catalogue: not judged
    v = verdict_of(run, load_catalogue(cat))
    assert v.state is State.FAIL
    assert v.reason == (f"metric t_cat@s@b:new-one (ns) is not in {cat}: add a line PATTERN "
                        "UNIT SCOPE (+1 more in the notes)")
    assert f"metrics: metric t_cat@s@c:bw is recorded in 'GB/s', but {cat}:2 (t_cat@s@*:bw) " \
           "says 'MB/s': fix the binary or that line" in v.notes
    assert {k: d.state for k, d in v.dynamic.items()} == {
        "a": State.PASS, "b": State.FAIL, "c": State.FAIL}
    assert v.dynamic["b"].reason.startswith("metric t_cat@s@b:new-one (ns) is not in")


def test_a_catalogued_metric_leaves_a_pass_alone(tmp_path: Path) -> None:
    cat = tmp_path / "metrics.txt"
    cat.write_text("t_cat@s@*:lat ns node\n")
    s = script(tmp_path, "t_cat", f"""\
        echo 'Starting subtest: s'
        echo '{_metric_line("a", "lat", "ns")}' >> "$GPUCONFORM_METRICS_FILE"
        echo 'Subtest s: SUCCESS (0.000s)'
        """)
    v = verdict_of(run_subtest(s, "s", FAST), load_catalogue(cat))
    assert (v.state, v.reason) == (State.PASS, "") and not any("metrics:" in n for n in v.notes)


def test_stderr_is_separate_and_truncation_is_stated(tmp_path: Path) -> None:
    s = script(tmp_path, "t_err", """\
        echo 'Starting subtest: s'
        i=0; while [ $i -lt 2000 ]; do echo "err line $i" >&2; i=$((i+1)); done
        echo 'Subtest s: SUCCESS (0.000s)'
        """)
    run = run_subtest(s, "s", ExecOptions(timeout_s=20, keep_bytes=256))
    err = run.command.stderr
    assert err.total > 10000 and err.cut > 0
    assert err.text().startswith("err line 0\n")
    assert err.text().rstrip().endswith("err line 1999")
    assert "err line" not in run.command.stdout.text()


def test_timeout_kills_the_whole_group(tmp_path: Path, marker_env: bytes) -> None:
    s = script(tmp_path, "t_hang", """\
        trap '' TERM
        sleep 300 &
        echo 'Starting subtest: s'
        while :; do sleep 1; done
        """)
    run = run_subtest(s, "s", ExecOptions(timeout_s=0.5, grace_s=0.2))
    assert run.command.timed_out
    assert run.command.signals_sent == ["SIGTERM", "SIGKILL"]
    assert run.command.returncode == -signal.SIGKILL
    v = verdict_of(run)
    assert v.state is State.TIMEOUT and v.reason == "timed out after 0.5s"


def test_exit_by_signal_outside_the_protocol(tmp_path: Path) -> None:
    s = script(tmp_path, "t_kill", "echo 'Starting subtest: s'\nkill -BUS $$\n")
    v = verdict_of(run_subtest(s, "s", FAST))
    assert v.state is State.CRASH and v.reason == "killed by SIGBUS"


def test_list_failures(tmp_path: Path) -> None:
    bad_exit = script(tmp_path, "t_list_exit", "echo 'oops' >&2\nexit 3\n")
    ls = list_subtests(bad_exit, FAST)
    assert ls.error == "--list-subtests exited with status 3 (stderr: oops)"
    empty = script(tmp_path, "t_list_empty", "exit 0\n")
    assert list_subtests(empty, FAST).error == "--list-subtests printed no subtest names"
    junk = script(tmp_path, "t_list_junk", "echo good\necho 'not a name'\n")
    ls = list_subtests(junk, FAST)
    assert ls.error is None and ls.names == ["good"]
    assert ls.problems == ["line 2: not a subtest name: 'not a name'"]
    hang = script(tmp_path, "t_list_hang", "exec sleep 300\n")
    ls = list_subtests(hang, ExecOptions(list_timeout_s=0.3, grace_s=0.1))
    assert ls.error == "--list-subtests timed out after 0.3s"


def test_output_files_are_not_left_in_tmp(tmp_path: Path) -> None:
    s = script(tmp_path, "t_tmp", "echo 'Subtest s: SUCCESS (0.0s)'\n")
    root = tmp_path / "scratch"
    root.mkdir()
    run_subtest(s, "s", ExecOptions(timeout_s=20, tmp_root=root))
    assert os.listdir(root) == []


def test_spares_give_each_run_files_of_its_own_and_close_the_used(tmp_path: Path) -> None:
    root = tmp_path / "run-tmp"
    root.mkdir(mode=0o700)
    fds = set(os.listdir("/proc/self/fd"))
    spares = Spares(str(root))
    opts = ExecOptions(timeout_s=20, tmp_root=root, private_tmp=True, spares=spares)
    s = script(tmp_path, "t_sp", "echo \"pid $$\"\necho 'Subtest s: SUCCESS (0.0s)'\n")
    outs = [run_subtest(s, "s", opts).command.stdout.text() for _ in range(3)]
    assert [o.count("pid ") for o in outs] == [1, 1, 1] and len(set(outs)) == 3, outs
    used = spares.take()
    os.write(used[0], b"written by a run")
    spares.retire(used)
    spares.refill()  # the used pair closed, a new spare made
    fresh = spares.take()
    assert [os.fstat(fd).st_size for fd in fresh] == [0, 0]
    spares.retire(fresh)
    spares.close()
    assert set(os.listdir("/proc/self/fd")) == fds
    assert os.listdir(root) == []


def test_spares_that_cannot_be_made_fail_the_run_not_the_refill(tmp_path: Path) -> None:
    spares = Spares(str(tmp_path / "gone"))
    spares.refill()  # a test is running: nothing raised here
    with pytest.raises(FileNotFoundError):
        spares.take()


@pytest.mark.parametrize("private", [False, True])
def test_metrics_are_read_and_nothing_is_left_in_tmp_root(tmp_path: Path, private: bool) -> None:
    good = ('{"test":"t_m","subtest":"s","dynamic":null,"name":"lat","unit":"ns",'
            '"better":"lower","samples":[1,2,3]}')
    s = script(tmp_path, "t_m", f"""\
        echo "metrics=$GPUCONFORM_METRICS_FILE"
        echo 'Starting subtest: s'
        echo '{good}' >> "$GPUCONFORM_METRICS_FILE"
        echo 'Subtest s: SUCCESS (0.000s)'
        """)
    root = tmp_path / "run-tmp"
    root.mkdir(mode=0o700)
    opts = ExecOptions(timeout_s=20, tmp_root=root, private_tmp=private)
    run = run_subtest(s, "s", opts)
    assert [m.name for m in run.metrics] == ["lat"] and not run.metric_errors
    m = re.search(r"metrics=(\S+)", run.command.stdout.text())
    assert m
    where = Path(m.group(1)).parent  # named in the run's directory, or in one of its own
    assert where == root if private else where.parent == root
    assert os.listdir(root) == []
    again = re.search(r"metrics=(\S+)", run_subtest(s, "s", opts).command.stdout.text())
    assert again and again.group(1) != m.group(1)  # copies side by side never share one


@pytest.mark.parametrize("private", [False, True])
def test_a_test_without_metrics_has_none_and_no_error(tmp_path: Path, private: bool) -> None:
    s = script(tmp_path, "t_none", "echo 'Starting subtest: s'\necho 'Subtest s: SUCCESS (0.0s)'\n")
    root = tmp_path / "run-tmp"
    root.mkdir(mode=0o700)
    run = run_subtest(s, "s", ExecOptions(timeout_s=20, tmp_root=root, private_tmp=private))
    assert run.metrics == [] and run.metric_errors == []
    assert verdict_of(run).state is State.PASS
    assert os.listdir(root) == []


def test_a_metrics_file_the_test_removed_is_an_error_where_the_runner_made_it(
        tmp_path: Path) -> None:
    s = script(tmp_path, "t_rm", """\
        rm -f "$GPUCONFORM_METRICS_FILE"
        echo 'Starting subtest: s'
        echo 'Subtest s: SUCCESS (0.0s)'
        """)
    run = run_subtest(s, "s", FAST)
    assert len(run.metric_errors) == 1 and "cannot read" in run.metric_errors[0]


def test_without_pidfd_the_polling_fallback_works(tmp_path: Path, marker_env: bytes,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuconform.core.execute as ex

    monkeypatch.setattr(ex, "_pidfd_open", lambda pid: None)  # as on a kernel before 5.3
    ready = tmp_path / "ready"
    s = script(tmp_path, "t_nopidfd", f"""\
        setsid sh -c 'echo $$ > {ready}; exec sleep 300' &
        sleep 300 &
        while [ ! -s {ready} ]; do sleep 0.01; done
        echo 'Starting subtest: s'
        echo 'Subtest s: SUCCESS (0.000s)'
        """)
    run = run_subtest(s, "s", FAST)
    assert verdict_of(run).state is State.PASS
    assert sorted(s.escaped for s in run.command.strays) == [False, True]
    assert all(s.dead for s in run.command.strays)
    hang = script(tmp_path, "t_nopidfd_hang", "trap '' TERM\nwhile :; do sleep 1; done\n")
    run = run_subtest(hang, "s", ExecOptions(timeout_s=0.3, grace_s=0.2))
    assert run.command.signals_sent == ["SIGTERM", "SIGKILL"]
    assert verdict_of(run).state is State.TIMEOUT


def test_an_interrupt_inside_the_spawn_leaves_nothing_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """^C or SIGTERM while Popen waits for the child's exec: Popen has forked,
    returns nothing and kills nothing; the child (found by its token) must not
    outlive the interrupt."""
    import subprocess
    import gpuconform.core.execute as ex

    real = subprocess.Popen
    spawned: list[int] = []

    def interrupted_popen(*args: object, **kw: object) -> subprocess.Popen[bytes]:
        p = real(*args, **kw)  # type: ignore[call-overload]
        spawned.append(p.pid)
        raise KeyboardInterrupt("gpuconform: received SIGTERM")

    s = script(tmp_path, "t_sleep", "exec sleep 300\n")
    monkeypatch.setattr(ex.subprocess, "Popen", interrupted_popen)
    with pytest.raises(KeyboardInterrupt):
        run_command([str(s)], ExecOptions(timeout_s=60))
    assert spawned and gone(spawned[0]), spawned

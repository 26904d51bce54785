"""states.py: classify() over exit statuses, signals, timeouts and result lines."""

from __future__ import annotations

import signal

import pytest

from gpuconform.core.protocol import parse_output
from gpuconform.core.states import FAILURE_STATES, State, Verdict, classify, signal_name, worst

SEGV = -int(signal.SIGSEGV)
ABRT = -int(signal.SIGABRT)
TERM = -int(signal.SIGTERM)
KILL = -int(signal.SIGKILL)


def run(sub: str, body: str, rc: int | None, *, timed_out: bool = False,
        timeout_s: float | None = None, failures: list[str] | None = None) -> Verdict:
    return classify(sub, parse_output(body), returncode=rc, timed_out=timed_out,
                    timeout_s=timeout_s, failures=failures)


def started(sub: str, result: str | None = None, reason: str | None = None) -> str:
    text = f"Starting subtest: {sub}\n"
    if reason is not None:
        text += f"Skip reason: {reason}\n"
    if result is not None:
        text += f"Subtest {sub}: {result} (0.010s)\n"
    return text


# ----------------------------------------------------------------- the basics


def test_pass() -> None:
    v = run("a", started("a", "SUCCESS"), 0)
    assert v.state is State.PASS and v.reason == "" and v.notes == []


def test_skip_with_reason() -> None:
    v = run("a", started("a", "SKIP", "needs 2 GPUs, found 1"), 77)
    assert v.state is State.SKIP
    assert v.reason == "needs 2 GPUs, found 1"


def test_skip_without_reason_is_noted() -> None:
    v = run("a", started("a", "SKIP"), 77)
    assert v.state is State.SKIP
    assert "no skip reason" in v.reason
    assert any("Skip reason" in n for n in v.notes)


def test_fixture_skip_without_start_line() -> None:
    v = run("a", "Skip reason: fixture: no device\nSubtest a: SKIP (0.000s)\n", 77)
    assert v.state is State.SKIP and v.reason == "fixture: no device"


def test_fail_uses_the_first_failure_message() -> None:
    v = run("a", started("a", "FAIL"), 98, failures=["x.c:1: f(): Failed assertion: 1 == 2"])
    assert v.state is State.FAIL
    assert v.reason == "the subtest reported FAIL: x.c:1: f(): Failed assertion: 1 == 2"


def test_fail_without_messages() -> None:
    v = run("a", started("a", "FAIL"), 98)
    assert v.state is State.FAIL and v.reason == "the subtest reported FAIL"


# ------------------------------------------------------------------- crashes


@pytest.mark.parametrize("rc,name", [(SEGV, "SIGSEGV"), (ABRT, "SIGABRT"), (-7, "SIGBUS")])
def test_crash_names_the_signal(rc: int, name: str) -> None:
    v = run("a", started("a", "CRASH"), rc)
    assert v.state is State.CRASH
    assert v.reason == f"killed by {name}"


def test_crash_without_any_line() -> None:
    v = run("a", "", SEGV)
    assert v.state is State.CRASH and v.reason == "killed by SIGSEGV"


def test_crash_after_success_line() -> None:
    v = run("a", started("a", "SUCCESS"), SEGV)
    assert v.state is State.CRASH
    assert v.reason == "killed by SIGSEGV after the subtest reported SUCCESS"


def test_crash_during_a_dynamic_subtest() -> None:
    body = "Starting subtest: s\nStarting dynamic subtest: gpu0\nDynamic subtest gpu0: SUCCESS (0s)\n" \
           "Starting dynamic subtest: gpu1\n"
    v = run("s", body, SEGV)
    assert v.state is State.CRASH
    assert v.reason == "killed by SIGSEGV during dynamic subtest gpu1"
    assert v.dynamic["gpu0"].state is State.PASS
    assert v.dynamic["gpu1"].state is State.CRASH
    assert "SIGSEGV" in v.dynamic["gpu1"].reason


def test_crash_line_but_normal_exit() -> None:
    v = run("a", started("a", "CRASH"), 98)
    assert v.state is State.CRASH
    assert "reported CRASH" in v.reason and "98" in v.reason


def test_unknown_signal_number() -> None:
    assert signal_name(11) == "SIGSEGV"
    assert signal_name(200) == "signal 200"
    v = run("a", "", -200)
    assert v.state is State.CRASH and v.reason == "killed by signal 200"


# ------------------------------------------------------------------ timeouts


def test_runner_timeout_wins() -> None:
    v = run("a", started("a"), TERM, timed_out=True, timeout_s=2.0)
    assert v.state is State.TIMEOUT
    assert v.reason == "timed out after 2s"


def test_runner_timeout_after_a_result_line() -> None:
    v = run("a", started("a", "SUCCESS"), KILL, timed_out=True, timeout_s=2.0)
    assert v.state is State.TIMEOUT
    assert "reported SUCCESS" in v.reason and "did not exit" in v.reason


def test_runner_timeout_before_the_subtest_started() -> None:
    v = run("a", "", KILL, timed_out=True)
    assert v.state is State.TIMEOUT and "never started" in v.reason


def test_runner_timeout_unkillable() -> None:
    v = run("a", started("a"), None, timed_out=True, timeout_s=1.5)
    assert v.state is State.TIMEOUT
    assert "after 1.5s" in v.reason and "SIGKILL" in v.reason


def test_runner_timeout_in_a_dynamic_subtest() -> None:
    body = "Starting subtest: s\nStarting dynamic subtest: d\n"
    v = run("s", body, TERM, timed_out=True, timeout_s=3)
    assert v.state is State.TIMEOUT
    assert "during dynamic subtest d" in v.reason
    assert v.dynamic["d"].state is State.TIMEOUT


def test_binary_own_timeout_exit_78() -> None:
    v = run("a", started("a", "TIMEOUT"), 78)
    assert v.state is State.TIMEOUT and "78" in v.reason


# ---------------------------------------------------- abort, invalid, others


def test_abort() -> None:
    v = run("a", started("a"), 112, failures=["x.c:1: f(): Test abort in a: bad state"])
    assert v.state is State.ABORT
    assert v.reason == "the binary aborted (exit status 112): x.c:1: f(): Test abort in a: bad state"


def test_invalid_is_an_error() -> None:
    v = run("a", "", 79)
    assert v.state is State.ERROR
    assert "79" in v.reason and "invalid" in v.reason


@pytest.mark.parametrize("rc", [1, 2, 3, 255, 99])
def test_unexpected_exit_status_is_a_fail(rc: int) -> None:
    v = run("a", started("a", "SUCCESS"), rc)
    assert v.state is State.FAIL
    assert f"unexpected exit status {rc}" in v.reason
    assert "reported SUCCESS" in v.reason


def test_wrapper_style_exit_status_hint() -> None:
    v = run("a", started("a"), 139)
    assert v.state is State.FAIL and "SIGSEGV" in v.reason


def test_unknown_returncode_without_timeout_is_an_error() -> None:
    assert run("a", "", None).state is State.ERROR


# ---------------------------------------------- missing or disagreeing lines


def test_success_exit_without_result_line_is_incomplete() -> None:
    v = run("a", "garbage\n", 0)
    assert v.state is State.INCOMPLETE
    assert v.reason == "exit status 0 but no 'Subtest a:' result line"


def test_success_exit_with_only_a_start_line_is_incomplete() -> None:
    assert run("a", started("a"), 0).state is State.INCOMPLETE


def test_skip_exit_without_result_line_is_incomplete() -> None:
    v = run("a", "", 77)
    assert v.state is State.INCOMPLETE and "77" in v.reason


def test_fail_exit_without_result_line_is_a_fail() -> None:
    v = run("a", "", 98, failures=["x.c:1: f(): FAIL: setup"])
    assert v.state is State.FAIL
    assert "no 'Subtest a:' result line" in v.reason and "FAIL: setup" in v.reason


@pytest.mark.parametrize(
    "word,rc",
    [("FAIL", 0), ("SKIP", 0), ("SUCCESS", 77), ("FAIL", 77), ("SUCCESS", 98), ("SKIP", 98)],
)
def test_result_line_disagreeing_with_exit_status_is_a_fail(word: str, rc: int) -> None:
    v = run("a", started("a", word), rc)
    assert v.state is State.FAIL
    assert f"reported {word}" in v.reason and str(rc) in v.reason


def test_result_line_of_another_subtest_does_not_count() -> None:
    v = run("a", started("b", "SUCCESS"), 0)
    assert v.state is State.INCOMPLETE
    assert any("other subtests" in n for n in v.notes)


def test_protocol_anomalies_become_notes() -> None:
    v = run("a", "Starting subtest: a\nSubtest a: MAYBE (0.1s)\nSubtest a: SUCCESS (0.1s)\n", 0)
    assert v.state is State.PASS
    assert any("unknown result" in n for n in v.notes)


# ---------------------------------------------------------------- dynamic


MIXED = (
    "Starting subtest: mixed\n"
    "Starting dynamic subtest: pass-0\nDynamic subtest pass-0: SUCCESS (0.000s)\n"
    "Starting dynamic subtest: fail-1\nDynamic subtest fail-1: FAIL (0.000s)\n"
    "Starting dynamic subtest: skip-2\nSkip reason: dynamic skip 2\n"
    "Dynamic subtest skip-2: SKIP (0.000s)\n"
    "Subtest mixed: FAIL (0.000s)\n"
)


def test_dynamic_mixed() -> None:
    v = run("mixed", MIXED, 98, failures=["dyn.c:12: f(): Failed assertion: x == 0"])
    assert v.state is State.FAIL
    assert v.reason.startswith("1 dynamic subtest failed: fail-1")
    assert {k: d.state for k, d in v.dynamic.items()} == {
        "pass-0": State.PASS,
        "fail-1": State.FAIL,
        "skip-2": State.SKIP,
    }
    assert v.dynamic["skip-2"].reason == "dynamic skip 2"


def test_dynamic_all_pass() -> None:
    body = (
        "Starting subtest: all-pass\n"
        "Starting dynamic subtest: a\nDynamic subtest a: SUCCESS (0.000s)\n"
        "Starting dynamic subtest: b\nDynamic subtest b: SUCCESS (0.000s)\n"
        "Subtest all-pass: SUCCESS (0.000s)\n"
    )
    v = run("all-pass", body, 0)
    assert v.state is State.PASS
    assert [d.state for d in v.dynamic.values()] == [State.PASS, State.PASS]


def test_dynamic_none_ran_skips() -> None:
    body = "Starting subtest: none\nSkip reason: no dynamic subtest matched the filter\n" \
           "Subtest none: SKIP (0.000s)\n"
    v = run("none", body, 77)
    assert v.state is State.SKIP and v.dynamic == {}
    assert v.reason == "no dynamic subtest matched the filter"


def test_dynamic_failure_under_a_success_parent_is_a_fail() -> None:
    body = (
        "Starting subtest: s\nStarting dynamic subtest: d\nDynamic subtest d: FAIL (0s)\n"
        "Subtest s: SUCCESS (0s)\n"
    )
    v = run("s", body, 0)
    assert v.state is State.FAIL and "dynamic subtest(s) did not pass: d" in v.reason


def test_dynamic_unfinished_under_a_normal_exit_is_incomplete() -> None:
    body = "Starting subtest: s\nStarting dynamic subtest: d\nSubtest s: SUCCESS (0s)\n"
    v = run("s", body, 0)
    assert v.dynamic["d"].state is State.INCOMPLETE
    assert v.state is State.FAIL


def test_dynamic_unfinished_when_the_binary_aborts() -> None:
    v = run("s", "Starting subtest: s\nStarting dynamic subtest: d\n", 112)
    assert v.state is State.ABORT and v.dynamic["d"].state is State.ABORT


# ------------------------------------------------------------------ states


def test_state_values_and_failure_set() -> None:
    assert {s.value for s in State} >= {
        "pass", "fail", "skip", "crash", "timeout", "abort", "incomplete", "notrun",
        "dmesg-warn", "dmesg-fail",
    }
    assert State.PASS not in FAILURE_STATES and State.SKIP not in FAILURE_STATES
    assert State.NOTRUN not in FAILURE_STATES
    for s in (State.FAIL, State.CRASH, State.TIMEOUT, State.ABORT, State.INCOMPLETE, State.ERROR):
        assert s.is_failure


def test_worst() -> None:
    assert worst([State.PASS, State.SKIP]) is State.PASS
    assert worst([State.PASS, State.FAIL, State.SKIP]) is State.FAIL
    assert worst([State.FAIL, State.CRASH]) is State.CRASH
    assert worst([State.TIMEOUT, State.ABORT]) is State.ABORT
    assert worst([]) is State.NOTRUN

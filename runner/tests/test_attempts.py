"""attempts.py: one test's run, with fake attempts and a fake kernel, then
one real attempt of a selftest binary."""

from __future__ import annotations

from pathlib import Path

from gc_testutil import Selftests
from gpuconform.core.attempts import TestRun, run_attempt, run_test, skip_record
from gpuconform.core.execute import ExecOptions
from gpuconform.core.expectations import Rule, parse_rule
from gpuconform.core.results import TestRecord
from gpuconform.core.states import State

NAME = "bin@sub"


class Script:
    """Attempts that end in the given states, a kernel that says the given
    things between them; what was called, in order."""

    def __init__(self, states: list[str], gaps: list[tuple[str | None, list[str]]] | None = None,
                 aborts: dict[int, str] | None = None) -> None:
        self.states = states
        self.gaps = list(gaps or [])
        self.aborts = aborts or {}
        self.calls: list[str] = []

    def attempt(self, number: int) -> tuple[TestRecord, str | None]:
        self.calls.append(f"attempt {number}")
        state = State(self.states[number - 1])
        abort = self.aborts.get(number)
        rec = TestRecord(NAME, "/b/bin", "sub", State.ABORT if abort else state,
                         reason=f"attempt {number}", duration=0.5)
        return rec, abort

    def gap(self) -> tuple[str | None, list[str]]:
        self.calls.append("gap")
        return self.gaps.pop(0) if self.gaps else (None, [])

    def run(self, retries: int, rule: Rule | None = None, aborted: bool = False) -> TestRun:
        return run_test(NAME, "/b/bin", "sub", rule, retries, self.attempt, self.gap,
                        aborted=aborted)


def rule(text: str, comment: str = "") -> Rule:
    return parse_rule(text, Path("rules.txt"), 7, comment)


def test_retries_until_a_pass_make_a_flake() -> None:
    s = Script(["fail", "crash", "pass"], gaps=[(None, ["before"]), (None, ["between 1-2"])])
    run = s.run(retries=2)
    assert s.calls == ["gap", "attempt 1", "gap", "attempt 2", "gap", "attempt 3"]
    rec = run.record
    assert run.abort is None and run.journaled
    assert rec.result is State.PASS and rec.final == "flake" and rec.expected is False
    assert [a["result"] for a in rec.attempts] == ["fail", "crash", "pass"]
    assert rec.notes[:2] == ["before", "between 1-2"]
    assert rec.notes[-1] == "3 attempts: fail, crash, pass"


def test_retries_run_out() -> None:
    s = Script(["fail", "fail", "pass"])
    run = s.run(retries=1)
    assert s.calls == ["gap", "attempt 1", "gap", "attempt 2"]
    assert run.record.result is State.FAIL and run.record.reason == "attempt 2"
    assert run.record.final == "fail" and not run.record.expected


def test_no_retry_after_a_pass_a_skip_or_without_retries() -> None:
    for states, retries in ((["pass"], 3), (["skip"], 3), (["fail"], 0), (["error"], 3)):
        s = Script(states + ["pass"])
        run = s.run(retries)
        assert s.calls == ["gap", "attempt 1"], states
        assert run.record.result.value == states[0]
        assert [a["result"] for a in run.record.attempts] == states


def test_a_fail_rule_takes_the_first_failure_without_a_retry() -> None:
    s = Script(["fail", "timeout"])
    run = s.run(retries=1, rule=rule("fail bin@*"))
    assert s.calls == ["gap", "attempt 1"]
    assert run.record.result is State.FAIL and run.record.expected is True
    assert run.record.rule == "rules.txt:7: fail bin@*"


def test_a_flake_rule_judges_the_last_attempt() -> None:
    s = Script(["fail", "timeout"])
    run = s.run(retries=1, rule=rule("flake bin@*"))
    assert run.record.result is State.TIMEOUT and run.record.expected is True
    assert run.record.rule == "rules.txt:7: flake bin@*"


def test_a_kernel_abort_in_an_attempt_stops_the_retries() -> None:
    s = Script(["fail", "fail", "pass"], aborts={1: "bin@sub: GPU reset"})
    run = s.run(retries=2)
    assert s.calls == ["gap", "attempt 1"]
    assert run.abort == "bin@sub: GPU reset" and run.journaled
    assert run.record.result is State.ABORT and not run.record.expected


def test_a_kernel_abort_between_attempts_stops_the_retries() -> None:
    s = Script(["fail", "pass"], gaps=[(None, []), ("taint: D", ["kernel said x"])])
    run = s.run(retries=2)
    assert s.calls == ["gap", "attempt 1", "gap"]
    assert run.abort == "taint: D" and run.journaled
    assert run.record.result is State.FAIL and run.record.notes[0] == "kernel said x"


def test_a_kernel_abort_before_the_test_leaves_it_notrun_unjournaled() -> None:
    s = Script(["pass"], gaps=[("GPU reset before bin@sub", ["a note"])])
    run = s.run(retries=2)
    assert s.calls == ["gap"]
    assert run.abort == "GPU reset before bin@sub" and not run.journaled
    rec = run.record
    assert rec.result is State.NOTRUN
    assert rec.reason == "not run: the run aborted: GPU reset before bin@sub"
    assert rec.notes == ["a note"] and rec.expected is False and rec.final == "notrun"


def test_a_run_aborted_before_retries_nothing() -> None:
    s = Script(["fail", "pass"])
    run = s.run(retries=3, aborted=True)
    assert s.calls == ["gap", "attempt 1"] and run.abort is None
    assert run.record.result is State.FAIL


def test_a_skip_rule_runs_nothing() -> None:
    s = Script(["pass"])
    run = s.run(retries=2, rule=rule("skip bin@sub", "hangs the machine"))
    assert s.calls == [] and run.journaled and run.abort is None
    rec = run.record
    assert rec.result is State.SKIP and rec.reason == "hangs the machine" and rec.expected
    assert rec.notes == ["not run: expectation rule rules.txt:7: skip bin@sub"]
    assert rec.judgement == "not run (rule rules.txt:7: skip bin@sub)"
    plain = skip_record(NAME, "/b/bin", "sub", rule("skip bin@*"))
    assert plain is not None and plain.reason == "skipped by the rule rules.txt:7: skip bin@*"
    assert skip_record(NAME, "/b/bin", "sub", rule("flake bin@*")) is None
    assert skip_record(NAME, "/b/bin", "sub", None) is None


def test_one_real_attempt(selftests: Selftests) -> None:
    binary = selftests.binary("selftest_results")
    spawned: list[tuple[str, int, int, str]] = []
    seen: list[TestRecord] = []

    def after(rec: TestRecord) -> str | None:
        seen.append(rec)
        return "kernel log: GPU reset" if rec.subtest == "fail" else None

    def on_spawn(name: str, number: int, pid: int, token: str) -> None:
        spawned.append((name, number, pid, token))

    opts = ExecOptions(timeout_s=20, grace_s=1, list_timeout_s=20)
    rec, abort = run_attempt("selftest_results@pass", binary, "pass", 2, opts,
                             {"GPUCONFORM_X": "1"}, 7.5,
                             on_spawn=on_spawn, after=after)
    assert rec.result is State.PASS and abort is None and rec.timeout == 7.5
    assert rec.command == [str(binary), "--run-subtest", "pass"]
    assert seen == [rec]
    ((name, number, pid, token),) = spawned
    assert (name, number) == ("selftest_results@pass", 2) and pid > 0 and len(token) == 32
    rec, abort = run_attempt("selftest_results@fail", binary, "fail", 1, opts, {}, 7.5,
                             after=after)
    assert rec.result is State.FAIL and abort == "selftest_results@fail: kernel log: GPU reset"

"""results.py and the plugin's failure text: records, results.json, summary."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from gpuconform.plugin import format_failure
from gpuconform.core.results import (
    RunNotes,
    run_outcome,
    DynamicRecord,
    TestRecord,
    render_summary,
    results_json,
    totals,
    write_results,
)
from gpuconform.core.states import State


def rec(name: str, state: State, reason: str = "", **kw: object) -> TestRecord:
    return TestRecord(name, f"/b/{name.split('@')[0]}", name.split("@")[-1], state, reason,
                      **kw)  # type: ignore[arg-type]


def test_record_round_trip() -> None:
    r = rec("kfd_multigpu@map-partial", State.FAIL, "1 dynamic subtest failed: gpu1-gpu2",
            notes=["n"], out="o", err="e", out_bytes=1, err_bytes=1, start=1.0, end=2.0,
            duration=0.9, reported_time=0.8, returncode=98, command=["/b/x", "--run-subtest", "y"],
            dynamic={"gpu1-gpu2": DynamicRecord(State.FAIL, "", 0.1)},
            metrics=[{"name": "m"}])
    obj = json.loads(json.dumps(r.to_json()))
    assert obj["time"] == {"start": 1.0, "end": 2.0}
    assert obj["dynamic"]["gpu1-gpu2"]["result"] == "fail"
    assert TestRecord.from_json(r.name, obj) == r


def test_totals_list_every_state() -> None:
    t = totals([rec("a@x", State.PASS), rec("a@y", State.PASS), rec("a@z", State.CRASH)])
    assert t["pass"] == 2 and t["crash"] == 1
    assert t["dmesg-warn"] == 0 and t["notrun"] == 0 and t["abort"] == 0


def test_results_json_shape() -> None:
    data = results_json({"a@x": rec("a@x", State.SKIP, "why")}, {"hostname": "h"})
    assert data["tests"]["a@x"]["result"] == "skip"
    assert data["tests"]["a@x"]["reason"] == "why"
    assert data["totals"]["skip"] == 1 and data["run"] == {"hostname": "h"}


def test_summary_groups_skip_reasons_and_lists_failures() -> None:
    recs = [
        rec("a@1", State.SKIP, "needs 2 GPUs, found 1"),
        rec("a@2", State.SKIP, "needs 2 GPUs, found 1"),
        rec("b@1", State.SKIP, "/dev/kfd: No such file or directory"),
        rec("c@1", State.CRASH, "killed by SIGSEGV"),
        rec("c@2", State.PASS, notes=["escaped children: pid 7 (x); killed"]),
        rec("c@3", State.FAIL, "the subtest reported FAIL\nsecond line"),
    ]
    text = render_summary(recs, ["m.txt: broken"])
    lines = text.splitlines()
    assert lines[0] == "gpuconform: 6 tests: 1 crash, 1 fail, 1 pass, 3 skip"
    assert "collection errors: 1" in lines and "  m.txt: broken" in lines
    assert lines.index("crash:") < lines.index("fail:")
    assert "  c@1: killed by SIGSEGV" in lines
    assert "  c@3: the subtest reported FAIL" in lines
    i = lines.index("skip reasons:")
    assert lines[i + 1] == "  needs 2 GPUs, found 1 [2]: a@1, a@2"
    assert lines[i + 2] == "  /dev/kfd: No such file or directory [1]: b@1"
    assert "  c@2: escaped children: pid 7 (x); killed" in lines


def test_summary_of_nothing() -> None:
    assert render_summary([]) == "gpuconform: 0 tests: none\n"


def test_write_results(tmp_path: Path) -> None:
    d = tmp_path / "deep" / "run"
    rj, st = write_results(d, {"a@x": rec("a@x", State.PASS)}, {"collection_errors": []})
    assert json.loads(rj.read_text())["totals"]["pass"] == 1
    assert st.read_text().startswith("gpuconform: 1 tests: 1 pass")
    assert stat.S_IMODE(rj.stat().st_mode) & 0o044  # readable by others, like any output
    assert sorted(p.name for p in d.iterdir()) == ["results.json", "summary.txt"]


def test_failure_text() -> None:
    r = rec("g@noise", State.INCOMPLETE, "exit status 0 but no 'Subtest noise:' result line",
            out="Subtest?? noise: MAYBE\n\x01\x02 binary junk \ufffd\n", out_bytes=40,
            command=["/b/g", "--run-subtest", "noise"], returncode=0, duration=0.5,
            notes=["protocol: x"], dynamic={"d": DynamicRecord(State.SKIP, "why")})
    text = format_failure(r)
    lines = text.splitlines()
    assert lines[0] == "incomplete: exit status 0 but no 'Subtest noise:' result line"
    assert lines[1] == "dynamic: d skip (why)"
    assert lines[2] == "note: protocol: x"
    assert lines[3] == "command: /b/g --run-subtest noise -> exit status 0 after 0.500s"
    assert "---- stdout (tail; 40 bytes in all) ----" in lines
    assert "\\x01\\x02 binary junk" in text and "\x01" not in text
    assert "---- stderr: empty ----" in lines


# --------------------------------------------- judged records and the outcome


def judged(name: str, state: State, expected: bool, final: str | None = None,
           reason: str = "", judgement: str = "") -> TestRecord:
    return rec(name, state, reason, final=final or state.value, expected=expected,
               judgement=judgement)


def test_unexpected_is_the_judgement_or_a_failure_state() -> None:
    assert judged("a@1", State.FAIL, True).unexpected is False
    assert judged("a@1", State.PASS, False).unexpected is True  # fixed
    assert rec("a@1", State.CRASH).unexpected is True  # never judged
    assert rec("a@1", State.SKIP).unexpected is False


def test_outcome() -> None:
    ok = {"a@1": judged("a@1", State.PASS, True), "a@2": judged("a@2", State.FAIL, True)}
    out = run_outcome(ok)
    assert (out.status, out.unexpected, out.line) == (0, [], "ok: 2 subtests, nothing unexpected")
    bad = dict(ok, **{"a@3": judged("a@3", State.PASS, False, final="flake"),
                      "a@4": judged("a@4", State.PASS, False),
                      "a@5": judged("a@5", State.CRASH, False)})
    out = run_outcome(bad)
    assert out.status == 1 and out.unexpected == ["a@3", "a@4", "a@5"]
    assert out.line == "failed: 3 unexpected (1 crash, 1 fixed, 1 flake)"
    out = run_outcome(ok, notes=RunNotes(regressions=["a@1:m: regression: ..."]))
    assert (out.status, out.regressions) == (1, 1) and "1 metric regression(s)" in out.line
    out = run_outcome(ok, notes=RunNotes(regressions=["x"], regressions_expected=True))
    assert out.status == 0 and out.regressions == 0
    out = run_outcome(ok, notes=RunNotes(baseline_error="baseline: b.json:3: metrics: bad"))
    assert out.status == 1 and out.line.startswith("no comparison with the baseline: baseline:")
    assert run_outcome({}).line.startswith("no subtest ran")
    assert run_outcome(ok, collection_errors=["m: broken"]).status == 1
    notrun = {"a@1": judged("a@1", State.ABORT, False),
              "a@2": judged("a@2", State.NOTRUN, False, reason="not run: the run aborted (x)")}
    out = run_outcome(notrun, notes=RunNotes(aborted="a@1: kernel log: GPU reset"))
    assert out.line == "run aborted: a@1: kernel log: GPU reset; 2 unexpected"


def test_summary_order_unexpected_first() -> None:
    recs = [
        judged("a@1", State.SKIP, True, reason="needs 2 GPUs"),
        judged("a@2", State.FAIL, True, reason="known", judgement="fail, as expected"),
        judged("a@3", State.PASS, True, final="flake", judgement="flaky as expected: fail, pass"),
        judged("a@4", State.CRASH, False, reason="killed by SIGSEGV"),
        judged("a@5", State.PASS, False, judgement="fixed: passes although expected to fail"),
        judged("a@6", State.NOTRUN, False, reason="not run: the run aborted (x)"),
        judged("a@7", State.NOTRUN, False, reason="not run: the run aborted (x)"),
    ]
    notes = RunNotes(aborted="a@4: x", stale_rules=["e.txt:3: fail b@*"],
                     kernel_log="not watched (/dev/kmsg: Permission denied)",
                     regressions=["a@2:lat: regression: median 1 -> 2"])
    lines = render_summary(recs, notes=notes).splitlines()
    assert lines[1] == "RUN ABORTED: a@4: x"
    order = ["UNEXPECTED: 5", "crash:", "notrun:", "pass (unexpected):", "metric regressions:",
             "flakes (expected): 1", "expected failures: 1",
             "stale expectation rules (matched no test): 1", "skip reasons:",
             "kernel log: not watched (/dev/kmsg: Permission denied)"]
    assert [lines.index(x) for x in order] == sorted(lines.index(x) for x in order)
    assert "  2 test(s): not run: the run aborted (x): a@6, a@7" in lines
    assert "  a@5: fixed: passes although expected to fail" in lines
    assert "  a@2: fail: known" in lines


def test_summary_lists_metrics_without_a_baseline_entry_by_test() -> None:
    few = RunNotes(unbaselined=["a@1:lat", "a@1:bw",
                                "b@2@gpu0:lat (its unit or direction changed)"],
                   improvements=["a@3:x: improvement"], stale_rules=["e.txt:1: fail z@*"])
    lines = render_summary([judged("a@1", State.PASS, True)], notes=few).splitlines()
    i = lines.index("metrics with no baseline entry (never gated): 3")
    assert lines[i + 1:i + 4] == ["  a@1: lat, bw",
                                  "  b@2@gpu0: lat (its unit or direction changed)",
                                  "stale expectation rules (matched no test): 1"]
    assert lines.index("metric improvements: 1") < i
    many = RunNotes(unbaselined=[f"t@{i}:m{j}" for i in range(10) for j in range(10)])
    lines = render_summary([], notes=many).splitlines()
    i = lines.index("metrics with no baseline entry (never gated): 100")
    assert lines[i + 1] == "  t@0: m0, m1, m2, m3, m4, m5, m6, m7, ... (10 in all)"
    assert lines[i + 8].startswith("  t@7: m0, ")
    assert lines[i + 9] == "  ... 2 more tests (10 tests, 100 metrics in all)"
    assert len(lines) == i + 10
    assert "no baseline entry" not in render_summary([], notes=RunNotes())


def test_attempts_make_one_record() -> None:
    """The flake rule on a test's attempts (results.record_of_attempts)."""
    from gpuconform.core.expectations import parse_rule
    from gpuconform.core.results import record_of_attempts

    flaky = record_of_attempts([rec("b@s", State.FAIL, "first"), rec("b@s", State.PASS)], None,
                               ["kernel log note"])
    assert flaky.result is State.PASS and flaky.final == "flake" and not flaky.expected
    assert flaky.notes[0] == "kernel log note" and flaky.notes[-1] == "2 attempts: fail, pass"
    assert len(flaky.attempts) == 2
    twice = record_of_attempts([rec("b@s", State.FAIL, "one"), rec("b@s", State.FAIL, "two")],
                               None)
    assert twice.result is State.FAIL and twice.reason == "two" and not twice.expected
    rule = parse_rule("fail b@s", Path("rules.txt"), 3, "a known driver bug")
    known = record_of_attempts([rec("b@s", State.FAIL, "x"), rec("b@s", State.FAIL, "y")], rule)
    assert known.result is State.FAIL and known.expected and known.rule == rule.describe()
    once = record_of_attempts([rec("b@s", State.PASS)], None)
    assert once.result is State.PASS and once.final == "pass" and once.expected
    assert not any("attempts" in n for n in once.notes)

"""runend.py: a finished run's records in order, its notes, results.json,
the comparison written into it and the report, each step's failure kept to
itself."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import pytest

from gpuconform.perf.judge import GateComparison
from gpuconform.core.options import RunOptions
from gpuconform.plugin import write_report
from gpuconform.core.results import TestRecord
from gpuconform.core.runend import RunEnd, ordered_records, run_info
from gpuconform.core.states import State


def rec(name: str, state: State, expected: bool | None = True) -> TestRecord:
    r = TestRecord(name, f"/b/{name.split('@')[0]}", name.split("@")[1], state, reason=state.value)
    r.expected = expected
    return r


def judged_here(r: TestRecord) -> TestRecord:
    r.expected, r.final, r.judgement = r.result is State.PASS, r.result.value, "by the test"
    return r


def end_of(records: dict[str, TestRecord], **kw: Any) -> RunEnd:
    args: dict[str, Any] = dict(
        records=records, collection_errors=[], selection=list(records), shard=None,
        fingerprint={"key": "fp"}, expectation_files=["e.txt"], platform="plat",
        stale_rules=[], kernel_log={"watched": False, "note": "not watched (--kmsg off)",
                                    "taint": None},
        aborted=None, regressions_expected=False, messages=["hello"], errors=[])
    args.update(kw)
    return RunEnd(**args)


def comparison(test: str, verdict: str) -> GateComparison:
    return GateComparison(test, "bw", "GB/s", "higher", verdict, n_run=9, base_runs=5,
                          center=10.0, value=8.0, change=-0.2, limit=0.05, mde=0.04,
                          spread=0.01)


INFO = {"start": 1.0, "end": 2.0, "hostname": "h", "collection_errors": []}


def test_records_in_selection_order_with_notrun_for_the_rest() -> None:
    selected = {"a@1": ("/b/a", "1"), "a@2": ("/b/a", "2"), "a@3": ("/b/a", "3")}
    ran = {"x@9": rec("x@9", State.FAIL, None), "a@2": rec("a@2", State.PASS, None),
           "a@1": rec("a@1", State.FAIL)}
    out = ordered_records(selected, ran, None, judged_here)
    assert list(out) == ["a@1", "a@2", "a@3", "x@9"]
    assert out["a@1"] is ran["a@1"] and out["a@1"].judgement == ""  # judged already
    assert out["a@2"].judgement == "by the test" and out["x@9"].judgement == "by the test"
    assert out["a@3"].result is State.NOTRUN
    assert out["a@3"].reason == "not run (the run stopped before it)"
    assert (out["a@3"].binary, out["a@3"].subtest) == ("/b/a", "3")
    aborted = ordered_records(selected, {}, "a@1: GPU reset", judged_here)
    assert aborted["a@2"].reason == "not run: the run aborted (a@1: GPU reset)"


def test_run_info() -> None:
    o = RunOptions(retries=2)
    info = run_info(start=5.0, args=["m.txt"], run_id="r1", opts=o, platform="p",
                    exitstatus=1, collection_errors=["c"], aborted=None, resumed=None)
    assert list(info)[:5] == ["start", "end", "argv", "args", "run_id"]
    assert info["start"] == 5.0 and info["end"] >= 5.0 and info["retries"] == 2
    assert info["options"] == o.to_json() and info["kernel"].startswith(os.uname().sysname)
    assert info["pytest_exitstatus"] == 1 and info["collection_errors"] == ["c"]
    assert "resumed" not in info
    again = run_info(start=5.0, args=[], run_id="r1", opts=o, platform="p", exitstatus=0,
                     collection_errors=[], aborted="x", resumed={"kept": 3})
    assert again["resumed"] == {"kept": 3} and again["aborted"] == "x"


def test_notes_count_the_comparisons() -> None:
    end = end_of({"a@1": rec("a@1", State.PASS)}, errors=["report.html not written: x"],
                 baseline_path=Path("b.json"), stale_rules=["e.txt:3: fail z@*"],
                 comparisons=[comparison("a@1", "regression"), comparison("a@1", "new"),
                              comparison("a@2", "regression")])
    n = end.notes()
    assert n.messages == ["hello", "baseline b.json: 3 metrics: 1 new, 2 regression",
                          "report.html not written: x"]
    assert [r.split(": ")[0] for r in n.regressions] == ["a@1:bw", "a@2:bw"]
    assert n.improvements == [] and n.stale_rules == ["e.txt:3: fail z@*"]
    assert n.unbaselined == ["a@1:bw"]
    assert n.kernel_log == "not watched (--kmsg off)"
    assert end_of({}).notes().messages == ["hello"]


def test_notes_list_the_metrics_without_a_baseline_entry() -> None:
    changed = comparison("a@3", "new")
    changed.note = "the metric changed from 'MB/s', higher is better, to 'GB/s', ..."
    end = end_of({"a@1": rec("a@1", State.PASS)}, baseline_path=Path("b.json"),
                 comparisons=[comparison("a@1", "new"), comparison("a@2", "unchanged"),
                              changed, comparison("a@4", "missing")])
    assert end.notes().unbaselined == ["a@1:bw", "a@3:bw (its unit or direction changed)"]
    assert end_of({}).notes().unbaselined == []


def test_write_then_compare(tmp_path: Path) -> None:
    end = end_of({"a@1": rec("a@1", State.PASS), "a@2": rec("a@2", State.NOTRUN, False)},
                 baseline_path=Path("b.json"), shard=[1, 2])
    assert not end.complete
    rj, st = end.write(tmp_path, INFO)
    data = json.loads(rj.read_text())
    assert list(data)[5:] == ["selection", "shard", "fingerprint", "expectations",
                              "kernel_log", "baseline", "comparisons", "outcome"]
    assert data["run"]["end"] > INFO["end"] and data["run"]["hostname"] == "h"
    assert data["outcome"]["unexpected"] == ["a@2"] and end.outcome is not None
    assert data["baseline"] == {"path": "b.json", "error": None}
    assert "hello" in st.read_text() and end.written == (rj, st)

    seen: list[Any] = []

    def judge(tests: Mapping[str, Any], data: Mapping[str, Any],
              baseline: Any) -> list[GateComparison]:
        seen.append((sorted(tests), data, baseline))
        return [comparison("a@1", "regression")]

    end.compare(INFO, "the baseline", judge)
    assert seen == []  # judged in a child: what it saw stays there
    assert [c.verdict for c in end.comparisons] == ["regression"]
    end.write(tmp_path, INFO)
    data = json.loads(rj.read_text())
    assert [c["verdict"] for c in data["comparisons"]] == ["regression"]
    assert data["outcome"]["regressions"] == 1 and end.baseline_error is None


def test_a_failed_comparison_is_a_baseline_error(tmp_path: Path) -> None:
    end = end_of({"a@1": rec("a@1", State.PASS)}, baseline_path=Path("b.json"))

    def broken(tests: Mapping[str, Any], data: Mapping[str, Any],
               baseline: Any) -> list[GateComparison]:
        raise ValueError("metric m: bad\nsecond line")

    end.compare(INFO, None, broken)
    assert end.comparisons == []
    assert end.baseline_error == "baseline comparison with b.json failed: metric m: bad second line"
    end.write(tmp_path, INFO)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["baseline"]["error"] == end.baseline_error
    assert data["outcome"]["status"] == 1 and data["comparisons"] == []


def test_a_comparison_that_hangs_is_a_baseline_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from gpuconform.core import runend as runend_module

    monkeypatch.setattr(runend_module, "STEP_TIMEOUT_S", 1.0)
    end = end_of({"a@1": rec("a@1", State.PASS)}, baseline_path=Path("b.json"))
    end.compare(INFO, None, lambda tests, data, baseline: time.sleep(3600))  # type: ignore
    assert end.comparisons == [] and end.baseline_error == (
        "baseline comparison with b.json failed: still running after 1 s: killed")


def test_report(tmp_path: Path) -> None:
    end = end_of({"a@1": rec("a@1", State.PASS)})
    end.report(tmp_path / "nothing-written", write_report)
    assert end.messages == ["hello"] and len(end.errors) == 1
    assert end.errors[0].startswith("report.html not written: ")
    pytest.importorskip("jinja2")
    end.write(tmp_path, INFO)
    end.report(tmp_path, write_report)
    assert end.messages == ["hello", f"report: {tmp_path / 'report.html'}"]
    assert (tmp_path / "report.html").is_file()


def test_a_report_that_hangs_costs_one_line(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A report that never ends (an axis drawn forever once took 108 GiB and
    kept a night from its verdict) is killed at its limit."""
    import time

    from gpuconform.core import runend as runend_module

    monkeypatch.setattr(runend_module, "STEP_TIMEOUT_S", 1.0)
    end = end_of({"a@1": rec("a@1", State.PASS)})
    end.report(tmp_path, lambda d: time.sleep(3600))  # type: ignore[arg-type,return-value]
    assert end.errors == ["report.html not written: still running after 1 s: killed"]

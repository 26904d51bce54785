"""results.py and the plugin's failure text: records, results.json, summary."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from gpuconform.plugin import format_failure
from gpuconform.results import (
    DynamicRecord,
    TestRecord,
    render_summary,
    results_json,
    totals,
    write_results,
)
from gpuconform.states import State


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

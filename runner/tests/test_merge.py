"""merge.py: merging synthetic results directories (shards, overlaps, gaps, bad inputs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuconform.cli import run_status
from gpuconform.fleet.merge import MergeError, merge_results, read_input
from gpuconform.core.results import TestRecord, write_results
from gpuconform.core.shard import shard
from gpuconform.core.states import State

SELECTION = [f"bin_{b}@sub-{s}" for b in range(3) for s in range(10)]


def rec(name: str, state: State = State.PASS, reason: str = "", **kw: Any) -> TestRecord:
    return TestRecord(name, f"/b/{name.split('@')[0]}", name.split("@", 1)[-1], state, reason,
                      start=kw.pop("start", 100.0), end=kw.pop("end", 101.0), **kw)


def results_dir(path: Path, records: list[TestRecord], selection: list[str] | None = None,
                shard_spec: tuple[int, int] | None = None, **run: Any) -> Path:
    info: dict[str, Any] = {"start": 100.0, "end": 200.0, "hostname": path.name,
                            "collection_errors": [], **run}
    if selection is not None:
        info["selection"] = selection
        info["shard"] = list(shard_spec) if shard_spec else None
    write_results(path, {r.name: r for r in records}, info)
    return path


def shards(tmp_path: Path, total: int, selection: list[str] = SELECTION,
           state_of: dict[str, State] | None = None) -> list[Path]:
    state_of = state_of or {}
    return [
        results_dir(tmp_path / f"s{i}", [rec(t, state_of.get(t, State.PASS))
                                         for t in shard(selection, i, total)],
                    selection, (i, total), start=100.0 + i, end=200.0 + i)
        for i in range(1, total + 1)
    ]


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "results.json").read_text())
    return data


def merge_error(dirs: list[Path], out: Path) -> str:
    with pytest.raises(MergeError) as ei:
        merge_results(dirs, out)
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


# ------------------------------------------------------------------ complete merges


def test_shards_merge_into_the_whole_run(tmp_path: Path) -> None:
    dirs = shards(tmp_path, 4, state_of={"bin_1@sub-3": State.CRASH, "bin_2@sub-0": State.SKIP})
    out = tmp_path / "out"
    report = merge_results(dirs, out)
    assert report.ok, report.render()
    assert report.overlaps == [] and report.gaps == [] and report.missing_shards == []
    assert report.shard_total == 4 and report.tests == len(SELECTION)
    data = load(out)
    assert list(data["tests"]) == SELECTION  # the selection's order, not the inputs'
    assert data["totals"]["pass"] == len(SELECTION) - 2
    assert data["totals"]["crash"] == 1 and data["totals"]["skip"] == 1
    run = data["run"]
    assert run["selection"] == SELECTION and run["shard"] is None
    assert (run["start"], run["end"]) == (101.0, 204.0)
    assert [m["shard"] for m in run["merged_from"]] == [[1, 4], [2, 4], [3, 4], [4, 4]]
    assert "selection" not in run["merged_from"][0]["run"]
    assert run["merge"]["ok"] is True
    assert TestRecord.from_json("bin_1@sub-3", data["tests"]["bin_1@sub-3"]).result is State.CRASH
    summary = (out / "summary.txt").read_text()
    assert summary.startswith(f"gpuconform: {len(SELECTION)} tests: 1 crash")
    assert "merge: 4 inputs" in summary and "complete: 30 tests" in summary
    assert "bin_1@sub-3: " in summary  # the failure is listed like in any summary
    # what `gpuconform run` would say about it
    assert run_status(out / "results.json", 0)[0] == 1


def test_merged_results_read_back_and_merge_again(tmp_path: Path) -> None:
    dirs = shards(tmp_path, 2)
    out = tmp_path / "out"
    merge_results(dirs, out)
    again = read_input(out)
    assert list(again.records) == SELECTION and again.shard is None
    assert again.selection == SELECTION
    assert run_status(out / "results.json", 0)[0] == 0
    # merging again into the same output (a merge, not a run) is allowed
    assert merge_results(dirs, out).ok


def test_unsharded_runs_and_inputs_without_selection(tmp_path: Path) -> None:
    a = results_dir(tmp_path / "a", [rec("x@1"), rec("x@2")])
    b = results_dir(tmp_path / "b", [rec("y@1", State.FAIL, "boom")])
    report = merge_results([a, b], tmp_path / "out")
    assert report.ok and report.shard_total is None
    data = load(tmp_path / "out")
    assert list(data["tests"]) == ["x@1", "x@2", "y@1"]
    assert "selection" not in data["run"]


def test_keys_at_the_top_level_are_read_too(tmp_path: Path) -> None:
    d = results_dir(tmp_path / "d", [rec("x@1")])
    data = load(d)
    data["selection"], data["shard"] = ["x@1", "x@2"], [1, 1]
    (d / "results.json").write_text(json.dumps(data))
    inp = read_input(d / "results.json")
    assert inp.dir == d and inp.selection == ["x@1", "x@2"] and inp.shard == (1, 1)
    report = merge_results([d], tmp_path / "out")
    assert report.gaps == ["x@2"] and not report.ok


def test_collection_errors_are_kept(tmp_path: Path) -> None:
    a = results_dir(tmp_path / "a", [rec("x@1")], collection_errors=["m.txt: broken"])
    b = results_dir(tmp_path / "b", [rec("y@1")])
    merge_results([a, b], tmp_path / "out")
    data = load(tmp_path / "out")
    assert data["run"]["collection_errors"] == [f"{a}: m.txt: broken"]
    assert "collection errors: 1" in (tmp_path / "out" / "summary.txt").read_text()
    assert run_status(tmp_path / "out" / "results.json", 0)[0] == 1


# ------------------------------------------------------------------ gaps


def test_missing_shard_is_a_gap(tmp_path: Path) -> None:
    dirs = shards(tmp_path, 3)
    report = merge_results([dirs[0], dirs[2]], tmp_path / "out")
    assert not report.ok
    assert report.missing_shards == [2] and report.shard_total == 3
    assert report.gaps == shard(SELECTION, 2, 3)
    text = (tmp_path / "out" / "summary.txt").read_text()
    assert "missing shards: 2/3" in text
    assert f"gaps: {len(report.gaps)} selected tests in no input" in text
    assert "INCOMPLETE" in text and "missing shards 2/3" in report.verdict()
    # what was there is still merged
    assert len(load(tmp_path / "out")["tests"]) == len(SELECTION) - len(report.gaps)


def test_a_shard_that_lost_tests_leaves_gaps(tmp_path: Path) -> None:
    mine = shard(SELECTION, 1, 2)
    a = results_dir(tmp_path / "a", [rec(t) for t in mine[:-2]], SELECTION, (1, 2))
    b = results_dir(tmp_path / "b", [rec(t) for t in shard(SELECTION, 2, 2)], SELECTION, (2, 2))
    report = merge_results([a, b], tmp_path / "out")
    assert report.gaps == mine[-2:] and report.missing_shards == []


def test_long_gap_lists_are_cut_in_the_summary(tmp_path: Path) -> None:
    dirs = shards(tmp_path, 2)
    report = merge_results(dirs[:1], tmp_path / "out")
    assert len(report.gaps) > 10
    assert f"({len(report.gaps)} in all)" in report.render()
    assert load(tmp_path / "out")["run"]["merge"]["gaps"] == report.gaps


# ------------------------------------------------------------------ overlaps


def test_identical_overlap_is_fine(tmp_path: Path) -> None:
    a = results_dir(tmp_path / "a", [rec("x@1"), rec("x@2")])
    b = results_dir(tmp_path / "b", [rec("x@2"), rec("x@3")])
    report = merge_results([a, b], tmp_path / "out")
    assert report.ok
    [o] = report.overlaps
    assert (o.name, o.kind, o.dirs, o.is_conflict) == ("x@2", "identical", [a, b], False)
    assert list(load(tmp_path / "out")["tests"]) == ["x@1", "x@2", "x@3"]


def test_conflicting_overlap_keeps_the_worst_and_names_both(tmp_path: Path) -> None:
    a = results_dir(tmp_path / "a", [rec("x@1", State.PASS), rec("x@2", State.FAIL, "first")])
    b = results_dir(tmp_path / "b", [rec("x@1", State.CRASH, "killed by SIGSEGV\nmore"),
                                     rec("x@2", State.FAIL, "second")])
    report = merge_results([a, b], tmp_path / "out")
    assert not report.ok and len(report.conflicts) == 2
    by = {o.name: o for o in report.overlaps}
    assert by["x@1"].results == ["pass", "crash"] and by["x@1"].kept == b
    assert by["x@2"].kept == a  # a tie: the first input's
    tests = load(tmp_path / "out")["tests"]
    assert tests["x@1"]["result"] == "crash"
    assert tests["x@1"]["notes"] == [f"merge: also in {a} with result pass"]
    assert tests["x@2"]["reason"] == "first"
    assert tests["x@2"]["notes"] == [f"merge: also in {b} with result fail: second"]
    text = (tmp_path / "out" / "summary.txt").read_text()
    assert f"x@1: {a} pass, {b} crash -> kept {b} [CONFLICT]" in text
    assert "2 conflicting overlaps" in text
    # the inputs are untouched
    assert load(b)["tests"]["x@1"]["notes"] == []


def test_notrun_is_resolved_by_the_record_that_ran(tmp_path: Path) -> None:
    first = results_dir(tmp_path / "first", [rec("x@1"), rec("x@2", State.NOTRUN, "not run")])
    rerun = results_dir(tmp_path / "rerun", [rec("x@2", State.FAIL, "real")])
    report = merge_results([first, rerun], tmp_path / "out")
    assert report.ok
    [o] = report.overlaps
    assert o.kind == "notrun" and o.kept == rerun
    assert load(tmp_path / "out")["tests"]["x@2"]["result"] == "fail"


# ------------------------------------------------------------------ inconsistent shards


def test_shard_given_twice(tmp_path: Path) -> None:
    dirs = shards(tmp_path, 2)
    copy = results_dir(tmp_path / "copy", [rec(t) for t in shard(SELECTION, 2, 2)],
                       SELECTION, (2, 2))
    report = merge_results(dirs + [copy], tmp_path / "out")
    assert report.problems == [f"shard 2/2 given twice: {dirs[1]} and {copy}"]
    assert not report.ok and report.conflicts == []  # identical records


def test_different_shard_totals(tmp_path: Path) -> None:
    a = shards(tmp_path / "two", 2)
    b = shards(tmp_path / "three", 3)
    report = merge_results([a[0], b[1]], tmp_path / "out")
    assert len(report.problems) == 1
    assert report.problems[0].startswith("inputs disagree on the number of shards: ")
    assert "1/2" in report.problems[0] and "2/3" in report.problems[0]


def test_shards_of_different_selections(tmp_path: Path) -> None:
    other = SELECTION + ["bin_9@extra"]
    a = shards(tmp_path / "a", 2)
    b = shards(tmp_path / "b", 2, selection=other)
    report = merge_results([a[0], b[1]], tmp_path / "out")
    assert any("shards of different selections" in p and "bin_9@extra only in" in p
               for p in report.problems), report.problems


def test_tests_in_the_wrong_shard(tmp_path: Path) -> None:
    # a runner that cut by position, not by name
    half = len(SELECTION) // 2
    a = results_dir(tmp_path / "a", [rec(t) for t in SELECTION[:half]], SELECTION, (1, 2))
    b = results_dir(tmp_path / "b", [rec(t) for t in SELECTION[half:]], SELECTION, (2, 2))
    report = merge_results([a, b], tmp_path / "out")
    assert report.gaps == [] and report.conflicts == []
    assert [p.split(" has ")[0] for p in report.problems] == [f"{a} (shard 1/2)", f"{b} (shard 2/2)"]
    assert "tests of other shards" in report.problems[0]


# ------------------------------------------------------------------ bad inputs


def assert_nothing_written(out: Path) -> None:
    assert not (out / "results.json").exists() and not (out / "summary.txt").exists()


def test_unreadable_inputs_are_one_line_errors(tmp_path: Path) -> None:
    good = results_dir(tmp_path / "good", [rec("x@1")])
    out = tmp_path / "out"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert merge_error([good, empty], out).startswith(f"{empty / 'results.json'}: no such file")

    def bad(name: str, text: str) -> Path:
        d = tmp_path / name
        d.mkdir()
        (d / "results.json").write_text(text)
        return d

    cases = {
        bad("notjson", "{\n  nope"): "not JSON",
        bad("list", "[]"): "not a gpuconform results file",
        bad("other", '{"format": "junit"}'): "not a gpuconform results file",
        bad("v2", '{"format": "gpuconform-results", "version": 2, "tests": {}}'):
            "results version 2, this runner reads version 1",
        bad("tests", '{"format": "gpuconform-results", "version": 1, "tests": []}'):
            '"tests" is not an object',
        bad("rec", '{"format": "gpuconform-results", "version": 1, '
            '"tests": {"x@1": {"result": "splendid"}}}'): "test 'x@1': bad record: ValueError",
        bad("rec2", '{"format": "gpuconform-results", "version": 1, '
            '"tests": {"x@1": {"reason": "no result"}}}'): "test 'x@1': bad record: KeyError",
        bad("rec3", '{"format": "gpuconform-results", "version": 1, '
            '"tests": {"x@1": 3}}'): "test 'x@1': bad record",
        bad("run", '{"format": "gpuconform-results", "version": 1, "tests": {}, "run": 1}'):
            '"run" is not an object',
        bad("sel", '{"format": "gpuconform-results", "version": 1, "tests": {}, '
            '"run": {"selection": "x@1"}}'): '"selection" is not a list',
    }
    for spec in ([0, 2], [3, 2], [1], "1/2", [True, 2], [1.0, 2]):
        d = bad(f"shard{len(cases)}", json.dumps(
            {"format": "gpuconform-results", "version": 1, "tests": {}, "shard": spec}))
        cases[d] = '"shard" is not [INDEX, TOTAL]'
    for d, words in cases.items():
        msg = merge_error([good, d], out)
        assert msg.startswith(f"{d / 'results.json'}: "), msg
        assert words in msg, msg
        assert_nothing_written(out)


def test_bad_invocations(tmp_path: Path) -> None:
    a = results_dir(tmp_path / "a", [rec("x@1")])
    b = results_dir(tmp_path / "b", [rec("y@1")])
    out = tmp_path / "out"
    assert "nothing to merge" in merge_error([], out)
    assert "given twice" in merge_error([a, b, tmp_path / "a" / ".." / "a"], out)
    assert "the output is one of the inputs" in merge_error([a, b], b)
    assert load(b)["tests"] == {"y@1": load(b)["tests"]["y@1"]}
    run = results_dir(tmp_path / "run", [rec("z@1")])
    assert "exists and is not a merge" in merge_error([a, b], run)
    assert list(load(run)["tests"]) == ["z@1"]
    assert_nothing_written(out)


def test_unwritable_output_is_a_one_line_error(tmp_path: Path) -> None:
    a = results_dir(tmp_path / "a", [rec("x@1")])
    blocker = tmp_path / "file"
    blocker.write_text("")
    msg = merge_error([a], blocker / "out")
    assert msg.startswith(f"{blocker / 'out'}: cannot write the merged results")

"""`gpuconform export --format piglit`: a run's results.json as piglit's
TestrunResult JSON (the format of IGT's igt_runner), read by the real piglit.

The conversion is checked on made-up results (names, dynamic subtests, error
as fail, totals, runtimes, time attributes), then read back by Debian's piglit
framework, then, end to end, `piglit summary console` and `piglit summary html`
over two real runs of the selftest binaries of which the second regresses.
Where piglit is not installed (scripts/deps.sh test installs it), the tests
that need it skip, naming it."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gc_testutil import HANG_GUARD_S, LAUNCHER, REPO_ROOT, Selftests
from gpuconform import cli
from gpuconform.export.piglit import IGT_RESULTS, export_piglit

PIGLIT = shutil.which("piglit")
NO_PIGLIT = ("piglit is not installed (no piglit command on PATH; scripts/deps.sh test "
             "installs it: apt-get install piglit)")
RUN_ISOLATED = ["--no-baseline", "--kmsg", "off", "--taint-file", "off", "--progress", "off"]


def record(result: str, duration: float = 1.0, **fields: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"result": result, "reason": "", "out": "", "err": "", "dmesg": [],
                           "duration": duration, "dynamic": {}, "metrics": []}
    rec.update(fields)
    return rec


def synthetic() -> dict[str, Any]:
    """A run's results.json, made up: a subtest of each kind the export treats apart."""
    return {
        "format": "gpuconform-results", "version": 1,
        "run": {"start": 1700000000.5, "end": 1700000100.25, "run_id": "abc123",
                "kernel": "Linux 6.1.0-18-amd64 x86_64", "aborted": None},
        "tests": {
            "Kfd_Mem@Alloc-Free": record("pass", 0.5, out="Starting subtest: Alloc-Free\n",
                                         dmesg=["[1.0] amdgpu: a", "[2.0] amdgpu: b"]),
            "kfd_mem@double-free": record(
                "fail", 2.0, reason="got -22, want -14", err="mem.c:40: failed\n",
                expected=True, rule="data/expectations/x.txt:3: fail kfd_mem@double-free"),
            "kfd_mem@map": record(
                "fail", 1.5, reason="1 dynamic subtest failed: GPU1",
                dynamic={"GPU0": {"result": "pass", "reason": "", "time": 0.25},
                         "GPU1": {"result": "fail", "reason": "bad VA", "time": 0.75},
                         "gpu2": {"result": "error", "reason": "", "time": None}}),
            "kfd_mem@flaky": record("pass", 0.125, final="flake",
                                    attempts=[{"result": "fail"}, {"result": "pass"}]),
            "cuda_ctx@create": record("abort", 3.0, reason="the binary aborted (exit 112)"),
            "cuda_ctx@spawn": record("error", 0.0, reason="cannot exec: Permission denied"),
            "hip_broken": record("error", 0.0, reason="--list-subtests: exit status 1"),
            "cuda_ctx@later": record("notrun", 0.0, reason="the run stopped"),
        },
    }


def write_run(d: Path, data: dict[str, Any]) -> Path:
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps(data, indent=1))
    return d


@pytest.fixture
def exported(tmp_path: Path) -> dict[str, Any]:
    path, data = export_piglit(write_run(tmp_path / "night-1", synthetic()))
    assert path == tmp_path / "night-1" / "piglit" / "results.json"
    assert json.loads(path.read_text()) == data
    return data


# ------------------------------------------------------------ the conversion


def test_the_run_itself(exported: dict[str, Any]) -> None:
    assert exported["__type__"] == "TestrunResult" and exported["results_version"] == 10
    assert exported["name"] == "night-1"
    assert exported["uname"] == "Linux 6.1.0-18-amd64 x86_64"
    assert exported["time_elapsed"] == {"__type__": "TimeAttribute", "start": 1700000000.5,
                                        "end": 1700000100.25}


def test_names_are_igts_lowercase_with_a_test_per_dynamic_subtest(
        exported: dict[str, Any]) -> None:
    assert list(exported["tests"]) == [
        "igt@kfd_mem@alloc-free", "igt@kfd_mem@double-free",
        "igt@kfd_mem@map", "igt@kfd_mem@map@gpu0", "igt@kfd_mem@map@gpu1",
        "igt@kfd_mem@map@gpu2", "igt@kfd_mem@flaky",
        "igt@cuda_ctx@create", "igt@cuda_ctx@spawn", "igt@hip_broken", "igt@cuda_ctx@later"]


def test_each_test_as_igt_writes_it(exported: dict[str, Any]) -> None:
    t = exported["tests"]
    assert t["igt@kfd_mem@alloc-free"] == {
        "out": "Starting subtest: Alloc-Free\n", "err": "",
        "dmesg": "[1.0] amdgpu: a\n[2.0] amdgpu: b", "result": "pass",
        "time": {"__type__": "TimeAttribute", "start": 0.0, "end": 0.5}}
    # an expected failure is a failure: IGT's words have no xfail
    fail = t["igt@kfd_mem@double-free"]
    assert fail["result"] == "fail"
    assert fail["err"] == "gpuconform recorded fail: got -22, want -14\nmem.c:40: failed\n"
    assert "expect" not in json.dumps(fail)
    assert t["igt@kfd_mem@flaky"]["result"] == "pass"  # the final result, not an attempt's
    assert t["igt@cuda_ctx@create"]["result"] == "abort"  # as IGT writes it, not rewritten
    assert t["igt@cuda_ctx@later"]["result"] == "notrun"


def test_dynamic_subtests_have_their_own_result_and_time(exported: dict[str, Any]) -> None:
    t = exported["tests"]
    assert t["igt@kfd_mem@map"]["result"] == "fail"
    assert t["igt@kfd_mem@map"]["time"]["end"] == 1.5
    assert [(t[f"igt@kfd_mem@map@gpu{i}"]["result"], t[f"igt@kfd_mem@map@gpu{i}"]["time"]["end"])
            for i in range(3)] == [("pass", 0.25), ("fail", 0.75), ("fail", 0.0)]
    assert t["igt@kfd_mem@map@gpu1"]["err"] == "gpuconform recorded fail: bad VA\n"
    assert t["igt@kfd_mem@map@gpu0"]["err"] == ""


def test_error_is_written_as_fail_saying_so(exported: dict[str, Any]) -> None:
    t = exported["tests"]
    for name, why in (("igt@cuda_ctx@spawn", "cannot exec: Permission denied"),
                      ("igt@hip_broken", "--list-subtests: exit status 1"),
                      ("igt@kfd_mem@map@gpu2", "(no reason given)")):
        assert t[name]["result"] == "fail"
        first = t[name]["err"].splitlines()[0]
        assert first.startswith("gpuconform recorded error ") and first.endswith(why), first
        assert "written as fail" in first


def test_totals_count_subtests_and_dynamic_subtests(exported: dict[str, Any]) -> None:
    totals = exported["totals"]
    assert list(totals) == ["", "root", "igt@kfd_mem", "igt@cuda_ctx", "igt@hip_broken"]
    for counts in totals.values():
        assert list(counts) == list(IGT_RESULTS)
    nonzero = {k: {w: n for w, n in v.items() if n} for k, v in totals.items()}
    assert nonzero["igt@kfd_mem"] == {"pass": 3, "fail": 4}
    assert nonzero["igt@cuda_ctx"] == {"abort": 1, "fail": 1, "notrun": 1}
    assert nonzero["igt@hip_broken"] == {"fail": 1}
    assert nonzero[""] == nonzero["root"] == {"pass": 3, "fail": 6, "abort": 1, "notrun": 1}
    assert sum(totals["root"].values()) == len(exported["tests"])


def test_runtimes_per_binary_count_each_subtest_once(exported: dict[str, Any]) -> None:
    def end(b: str) -> float:
        t = exported["runtimes"][b]["time"]
        assert (t["__type__"], t["start"]) == ("TimeAttribute", 0.0)
        return float(t["end"])

    assert set(exported["runtimes"]) == {"igt@kfd_mem", "igt@cuda_ctx", "igt@hip_broken"}
    assert end("igt@kfd_mem") == 0.5 + 2.0 + 1.5 + 0.125  # map's dynamic time is map's
    assert end("igt@cuda_ctx") == 3.0


def test_a_merge_keeps_a_kernel_all_its_runs_share_and_says_a_run_stopped(
        tmp_path: Path) -> None:
    data = synthetic()
    parts = [{"dir": f"s{i}", "run": {"kernel": "Linux 6.1 x86_64", "aborted": why}}
             for i, why in enumerate([None, "GPU reset: amdgpu 0000:03:00.0"])]
    data["run"] = {"merged_from": parts, "start": None, "end": 1700000200.0}
    _, out = export_piglit(write_run(tmp_path / "merged", data))
    assert out["uname"] == "Linux 6.1 x86_64"
    assert out["time_elapsed"]["start"] == 0.0 and out["time_elapsed"]["end"] == 1700000200.0
    assert out["tests"]["igt@runner@aborted"]["result"] == "fail"
    assert out["tests"]["igt@runner@aborted"]["out"] == "GPU reset: amdgpu 0000:03:00.0\n"
    assert out["totals"]["igt@runner"]["fail"] == 1 and out["totals"]["root"]["fail"] == 7
    parts[1]["run"]["kernel"] = "Linux 6.6 x86_64"  # two kernels: none said
    (tmp_path / "merged" / "results.json").write_text(json.dumps(data))
    assert "uname" not in export_piglit(tmp_path / "merged")[1]


# ----------------------------------------------------- piglit's own loader


def piglit_framework() -> ModuleType:
    """Debian's piglit framework package (its loader and result classes)."""
    for d in [*sorted(Path("/usr/lib").glob("*/piglit")), Path("/usr/lib/piglit")]:
        if (d / "framework" / "backends" / "json.py").is_file():
            if str(d) not in sys.path:
                sys.path.append(str(d))
            importlib.import_module("framework.backends")
            importlib.import_module("framework.results")
            return importlib.import_module("framework")
    pytest.skip("piglit is not installed (no /usr/lib/*/piglit/framework; scripts/deps.sh "
                "test installs it: apt-get install piglit)")


def test_piglits_loader_reads_the_export(tmp_path: Path) -> None:
    fw = piglit_framework()
    data = synthetic()
    del data["tests"]["cuda_ctx@create"]  # abort: below
    path, _ = export_piglit(write_run(tmp_path / "r", data))
    run = fw.backends.load(str(path.parent))  # a directory, as `piglit summary` is given
    assert run.name == "r" and run.results_version == 10
    assert str(run.tests["igt@kfd_mem@map@gpu1"].result) == "fail"
    assert str(run.tests["igt@hip_broken"].result) == "fail"
    assert run.tests["igt@kfd_mem@map"].time.total == 1.5
    assert run.totals["root"]["fail"] == 6 and run.totals["root"]["pass"] == 3
    again = fw.results.TestrunResult.from_dict(json.loads(path.read_text()))
    assert list(again.tests) == list(run.tests)


def test_piglits_loader_stops_on_abort_as_on_igts_own_files(tmp_path: Path) -> None:
    fw = piglit_framework()
    path, data = export_piglit(write_run(tmp_path / "r", synthetic()))
    assert data["tests"]["igt@cuda_ctx@create"]["result"] == "abort"
    with pytest.raises(Exception, match='Unknown status "abort"'):
        fw.backends.load(str(path))


# ------------------------------------------------------- the command's errors


def export(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = cli.main(["export", "--format", "piglit", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def refused(r: tuple[int, str, str], named: Path) -> str:
    status, out, err = r
    assert (status, out) == (2, ""), r
    assert err.count("\n") == 1 and err.startswith(f"gpuconform: {named}"), err
    return err


def test_export_of_a_run_and_of_its_results_file(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    d = write_run(tmp_path / "r", synthetic())
    status, out, err = export([str(d)], capsys)
    assert status == 0 and out == f"gpuconform: piglit results written: {d}/piglit/results.json\n"
    assert "1 result(s) abort" in err and "piglit 0~git20220119" in err
    o = tmp_path / "elsewhere.json"
    assert export([str(d / "results.json"), "-o", str(o)], capsys)[0] == 0
    assert json.loads(o.read_text())["name"] == "r"


def test_a_bad_out_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = write_run(tmp_path / "r", synthetic())
    rj = d / "results.json"
    before = rj.read_bytes()
    for o, why in ((tmp_path / "x.txt", "ending in .json"),
                   (tmp_path / "no" / "x.json", "is not a directory"),
                   (rj, "the run's own results.json")):
        assert why in refused(export([str(d), "-o", str(o)], capsys), o)
    (tmp_path / "dir.json").mkdir()
    assert "is a directory" in refused(export([str(d), "-o", str(tmp_path / "dir.json")],
                                              capsys), tmp_path / "dir.json")
    (d / "piglit").write_text("a file where the default directory goes\n")
    assert "cannot write" in refused(export([str(d)], capsys), d / "piglit")
    assert rj.read_bytes() == before
    assert not list(tmp_path.glob("**/.*.tmp"))


def test_a_bad_results_file_is_one_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    refused(export([str(tmp_path / "none")], capsys), tmp_path / "none")
    data = synthetic()
    data["tests"]["kfd_mem@map"]["dynamic"]["GPU1"]["result"] = "exploded"
    d = write_run(tmp_path / "r", data)
    err = refused(export([str(d)], capsys), d / "results.json")
    assert '"exploded" is not a gpuconform state' in err and "GPU1" in err
    data = synthetic()
    data["tests"]["kfd_mem@MAP"] = record("pass")
    d = write_run(tmp_path / "r2", data)
    assert "two tests have the piglit name igt@kfd_mem@map" in refused(export([str(d)], capsys),
                                                                         d / "results.json")
    assert not (tmp_path / "r" / "piglit").exists() and not (tmp_path / "r2" / "piglit").exists()


# ----------------------------------------------- the real piglit, two real runs


SELECTION = r"^selftest_(results@(pass|fail|skip)|flow@sleep-1|dynamic@mixed)$"


def selftest_run(st: Selftests, d: Path, sleep_ms: str, include: str = SELECTION) -> Path:
    """A run of the selftests, exported. selftest_flow@sleep-1 passes with
    GPUCONFORM_SELFTEST_SLEEP_MS=0 and fails with -1 (not 0..600000)."""
    env = {**os.environ, "GPUCONFORM_SELFTEST_SLEEP_MS": sleep_ms}
    p = subprocess.run([str(LAUNCHER), "run", "--build", str(st.build), "--selftest",
                        "--results", str(d), "--include", include, *RUN_ISOLATED],
                       capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                       timeout=HANG_GUARD_S)
    assert p.returncode == 1 and (d / "results.json").is_file(), p.stdout + p.stderr
    e = subprocess.run([str(LAUNCHER), "export", "--format", "piglit", str(d)],
                       capture_output=True, text=True, cwd=REPO_ROOT, timeout=HANG_GUARD_S)
    assert e.returncode == 0, e.stdout + e.stderr
    return d / "piglit"


def piglit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if PIGLIT is None:
        pytest.skip(NO_PIGLIT)
    return subprocess.run([PIGLIT, "summary", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=HANG_GUARD_S)


def summary_rows(text: str) -> dict[str, list[str]]:
    """`piglit summary console`'s summary block: row name -> one value a run."""
    block = text[text.index("summary:\n"):].splitlines()[1:]
    return {k.strip(): v.split() for k, _, v in (line.partition(":") for line in block)}


def linked_tests(page: Path) -> list[str]:
    """The test pages a summary page of piglit's links to (RUN/TEST.html)."""
    return re.findall(r'<a href="([^"/]+/igt@[^"]+\.html)"', page.read_text())


@pytest.fixture(scope="module")
def two_runs(selftests: Selftests, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if PIGLIT is None:
        pytest.skip(NO_PIGLIT)
    top = tmp_path_factory.mktemp("piglit")
    return selftest_run(selftests, top / "run1", "0"), selftest_run(selftests, top / "run2", "-1")


def test_piglit_summary_console_counts_both_runs(two_runs: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    p = piglit("console", *map(str, two_runs), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "igt/selftest_flow/sleep-1: pass fail" in p.stdout.splitlines()
    assert "igt/selftest_dynamic/mixed/fail-1: fail fail" in p.stdout.splitlines()
    rows = summary_rows(p.stdout)
    assert rows["name"] == ["run1", "run2"]
    assert (rows["pass"], rows["fail"], rows["skip"]) == (["3", "2"], ["3", "4"], ["2", "2"])
    assert (rows["crash"], rows["incomplete"]) == (["0", "0"], ["0", "0"])
    assert (rows["regressions"], rows["fixes"], rows["total"]) == (["0", "1"], ["0", "0"],
                                                                   ["8", "8"])


def test_piglit_summary_html_lists_the_regression_and_reversed_the_fix(
        two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    link = "run2/igt@selftest_flow@sleep-1.html"
    p = piglit("html", str(tmp_path / "fwd"), *map(str, two_runs), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert linked_tests(tmp_path / "fwd" / "regressions.html") == [
        "run1/igt@selftest_flow@sleep-1.html", link]
    assert linked_tests(tmp_path / "fwd" / "fixes.html") == []
    page = (tmp_path / "fwd" / link).read_text()
    assert "gpuconform recorded fail" in page and "not 0..600000" in page
    p = piglit("html", str(tmp_path / "rev"), *map(str, reversed(two_runs)), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert linked_tests(tmp_path / "rev" / "fixes.html") == [
        link, "run1/igt@selftest_flow@sleep-1.html"]
    assert linked_tests(tmp_path / "rev" / "regressions.html") == []


def test_piglit_given_the_run_directory_reads_our_results_json_and_stops(
        two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    """Why the export has a directory of its own."""
    p = piglit("console", str(two_runs[0].parent), cwd=tmp_path)
    assert p.returncode != 0 and "results_version" in p.stderr, p.stdout + p.stderr


def test_piglit_summary_stops_on_an_abort(selftests: Selftests, tmp_path: Path) -> None:
    if PIGLIT is None:
        pytest.skip(NO_PIGLIT)
    out = selftest_run(selftests, tmp_path / "r", "0", r"^selftest_results@(pass|abort)$")
    assert json.loads((out / "results.json").read_text())["tests"][
        "igt@selftest_results@abort"]["result"] == "abort"
    p = piglit("console", str(out), cwd=tmp_path)
    assert p.returncode == 1 and 'Unknown status "abort"' in p.stdout + p.stderr, p

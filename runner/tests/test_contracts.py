"""contracts.py: the contract table's format and its one-line errors, the rule
(every built AMD or NVIDIA subtest in a row, every row with a twin or a
reason), `gpuconform list --contracts` and the report's section; then the rule
on data/contracts.txt against the REAL binaries of a build."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from gc_testutil import build_dir
from gpuconform import cli
from gpuconform.core.contracts import (
    NOT_RUN,
    TABLE_PATH,
    ContractsError,
    Table,
    check,
    expectation_counts,
    load_table,
    render_text,
    vendor_of,
    view,
)
from gpuconform.core.manifest import SUITE_MANIFEST, read_manifest
from gpuconform.report.report import render_html

GOOD = """\
# a comment line
mem/lifecycle   amd     kfd_mem@lifecycle-vram kfd_mem@lifecycle-gtt   # trailing comment
mem/lifecycle   amd     hip_mem@lifecycle
mem/lifecycle   nvidia  cuda_mem@lifecycle

svm/prefetch    amd     kfd_svm@prefetch
svm/prefetch    nvidia  none "no SVM ioctl on NVIDIA"
io/read         amd     hipfile_io@read-matrix
io/read         nvidia  cufile_io@read-matrix
io/read         host    host_io@buffered-read
"""


def table_of(tmp_path: Path, text: str) -> Table:
    p = tmp_path / "contracts.txt"
    p.write_text(text)
    return load_table(p)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ContractsError) as ei:
        table_of(tmp_path, text)
    msg = str(ei.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


# ------------------------------------------------------------------ parsing


def test_rows_vendors_entries_and_reasons(tmp_path: Path) -> None:
    t = table_of(tmp_path, GOOD)
    assert [(r.name, r.line) for r in t.rows] == [
        ("mem/lifecycle", 2), ("svm/prefetch", 6), ("io/read", 8)]
    mem, svm, io = t.rows
    assert [e.test for e in mem.sides["amd"].entries] == [
        "kfd_mem@lifecycle-vram", "kfd_mem@lifecycle-gtt", "hip_mem@lifecycle"]
    assert [e.line for e in mem.sides["amd"].entries] == [2, 2, 3]
    assert mem.sides["amd"].reason is None and mem.contract == "mem"
    assert svm.sides["nvidia"].reason == "no SVM ioctl on NVIDIA"
    assert svm.sides["nvidia"].entries == [] and svm.sides["nvidia"].line == 7
    assert [e.test for e in io.sides["host"].entries] == ["host_io@buffered-read"]
    assert set(t.entries()) == {"kfd_mem@lifecycle-vram", "kfd_mem@lifecycle-gtt",
                                "hip_mem@lifecycle", "cuda_mem@lifecycle", "kfd_svm@prefetch",
                                "hipfile_io@read-matrix", "cufile_io@read-matrix",
                                "host_io@buffered-read"}


def test_vendor_by_prefix() -> None:
    assert [vendor_of(b) for b in ("kfd_mem", "hipfile_io", "hip_bubbles", "amdsmi_session",
                                   "cuda_mem", "nvml_session", "host_io", "selftest_flow")] == [
        "amd", "amd", "amd", "amd", "nvidia", "nvidia", "host", None]


@pytest.mark.parametrize("text, line, want", [
    ("mem/x amd\n", 1, "expected ROW VENDOR BINARY@SUBTEST... or ROW VENDOR none"),
    ("# c\nmem/x intel kfd_a@b\n", 2, "unknown vendor 'intel' (known: amd, nvidia, host)"),
    ("memx amd kfd_a@b\n", 1, "row 'memx' is not CONTRACT/NAME"),
    ("mem/x amd cuda_mem@a\n", 1, "cuda_mem@a is nvidia's (by its prefix), listed under amd"),
    ("mem/x host kfd_mem@a\n", 1, "kfd_mem@a is amd's (by its prefix), listed under host"),
    ("mem/x amd foo_mem@a\n", 1, "foo_mem is no vendor's binary (prefixes: kfd_,"),
    ("mem/x amd kfd_mem@a*\n", 1, "'kfd_mem@a*' is not one BINARY@SUBTEST"),
    ("mem/x amd kfd_mem@a@gpu1\n", 1, "'kfd_mem@a@gpu1' is not one BINARY@SUBTEST"),
    ("mem/x amd kfd_mem\n", 1, "'kfd_mem' has no '@'"),
    ("mem/x amd kfd_mem@a\nmem/y amd kfd_mem@a\n", 2,
     "kfd_mem@a is already in row mem/x (line 1): a subtest is in one row only"),
    ("mem/x amd kfd_mem@a kfd_mem@a\n", 1, "kfd_mem@a is already in row mem/x (line 1)"),
    ('mem/x amd kfd_mem@a\nmem/x amd none "r"\n', 2,
     "mem/x: amd has entries (line 1) and a reason"),
    ('mem/x amd none "r"\nmem/x amd kfd_mem@a\n', 2,
     "mem/x: amd has a reason (line 1) and entries"),
    ('mem/x amd none "r"\nmem/x amd none "s"\n', 2,
     "mem/x: amd's reason is already given at line 1"),
    ('mem/x amd none "cut # here"\n', 1, 'expected none "REASON"'),
    ("mem/x amd none no quotes\n", 1, 'expected none "REASON"'),
    ('mem/x amd none ""\n', 1, "empty reason: say why amd has no twin"),
    ('mem/x host none "r"\n', 1, "host takes no reason"),
    ('mem/x amd kfd_mem@a "r"\n', 1, "a quote outside a reason"),
    ("mem/x amd kfd_mem@a none\n", 1, "none among entries"),
    ("mem/x amd kfd_a@b\nmem/y amd kfd_a@c\nmem/x nvidia cuda_a@b\n", 3,
     "row mem/x began at line 1 and other rows came between"),
])
def test_malformed_line_names_file_and_line(tmp_path: Path, text: str, line: int,
                                            want: str) -> None:
    msg = error_of(tmp_path, text)
    assert msg.startswith(f"{tmp_path / 'contracts.txt'}:{line}: "), msg
    assert want in msg


def test_unreadable_table(tmp_path: Path) -> None:
    with pytest.raises(ContractsError, match=r"missing\.txt: cannot read"):
        load_table(tmp_path / "missing.txt")
    (tmp_path / "contracts.txt").write_bytes(b"mem/x amd kfd_a@b\nmem/y amd \xff\n")
    with pytest.raises(ContractsError, match=r"contracts\.txt:2: not UTF-8"):
        load_table(tmp_path / "contracts.txt")


# ----------------------------------------------------------------- the rule


def test_complete_table_has_no_problem(tmp_path: Path) -> None:
    t = table_of(tmp_path, GOOD)
    built = {"kfd_mem": ["lifecycle-vram", "lifecycle-gtt"], "hip_mem": ["lifecycle"],
             "cuda_mem": ["lifecycle"], "kfd_svm": ["prefetch"], "host_io": ["buffered-read",
                                                                            "throughput"],
             "selftest_flow": ["anything"], "cufile_io": ["read-matrix"]}
    assert check(t) == []
    assert check(t, built) == []  # host_io@throughput, selftest_*: no row needed


def test_row_without_twin_or_reason(tmp_path: Path) -> None:
    t = table_of(tmp_path, GOOD + "mem/oom  nvidia  cuda_mem@oom\n"
                 'mem/solo  amd  none "x"\nmem/solo  nvidia  none "y"\n'
                 "mem/ref  host  host_io@direct-read\n")
    path = tmp_path / "contracts.txt"
    assert check(t) == [
        f"{path}:11: mem/oom: no amd entry and no reason: add `mem/oom  amd  BINARY@SUBTEST` "
        'or `mem/oom  amd  none "why amd has no twin"`',
        f"{path}:12: mem/solo: a reason for every vendor and no entry: a row is a contract "
        "subtest some GPU binary checks",
        f"{path}:14: mem/ref: no amd entry and no reason: add `mem/ref  amd  BINARY@SUBTEST` "
        'or `mem/ref  amd  none "why amd has no twin"`',
        f"{path}:14: mem/ref: no nvidia entry and no reason: add `mem/ref  nvidia  "
        'BINARY@SUBTEST` or `mem/ref  nvidia  none "why nvidia has no twin"`',
    ]


def test_built_subtest_without_row_says_what_to_write(tmp_path: Path) -> None:
    t = table_of(tmp_path, GOOD)
    built = {"kfd_mem": ["lifecycle-vram", "lifecycle-gtt"], "hip_mem": ["lifecycle", "prefetch",
                                                                         "odd"],
             "cuda_mem": ["lifecycle"], "kfd_svm": ["prefetch"], "cufile_io": ["read-matrix"]}
    path = tmp_path / "contracts.txt"
    new_row = ("a new row: `CONTRACT/NAME  amd  hip_mem@{s}` with `CONTRACT/NAME  nvidia  "
               'TWIN@SUBTEST` or `CONTRACT/NAME  nvidia  none "why nvidia has no twin"`')
    assert check(t, built) == [
        f"hip_mem@prefetch: in no row of {path}: add it to its twin's row, e.g. "
        "`svm/prefetch  amd  hip_mem@prefetch` (row at line 6); or " + new_row.format(s="prefetch"),
        f"hip_mem@odd: in no row of {path}: add " + new_row.format(s="odd"),
    ]


def test_twins_split_across_rows(tmp_path: Path) -> None:
    """A subtest name that two vendors' binaries of one area share is one
    contract (one body, each stack's calls): the rule wants both in one row,
    and the failure names both rows."""
    t = table_of(tmp_path, GOOD + """mem/lifecycle-hip   amd     hip_mem@map-over-mapped
mem/lifecycle-hip   nvidia  none "a row of its own"
mem/over-mapped     nvidia  cuda_mem@map-over-mapped
mem/over-mapped     amd     none "split from its twin"
""")
    built = {"hip_mem": ["lifecycle", "map-over-mapped"], "cuda_mem": ["lifecycle", "map-over-mapped"],
             "kfd_mem": ["lifecycle-vram", "lifecycle-gtt"], "kfd_svm": ["prefetch"],
             "hipfile_io": ["read-matrix"], "cufile_io": ["read-matrix"]}
    assert check(t, built) == [
        f"{t.path}:11: hip_mem@map-over-mapped is in row mem/lifecycle-hip, its twin "
        f"cuda_mem@map-over-mapped in row mem/over-mapped (line 13): one subtest name in two "
        "vendors' mem binaries is one contract: put both in one row"]
    moved = table_of(tmp_path, GOOD + """mem/over-mapped     amd     hip_mem@map-over-mapped
mem/over-mapped     nvidia  cuda_mem@map-over-mapped
""")
    assert check(moved, built) == []


def test_entry_naming_a_subtest_the_build_lacks(tmp_path: Path) -> None:
    t = table_of(tmp_path, GOOD)
    built = {"kfd_mem": ["lifecycle-vram", "lifecycle-gtt-x"], "hip_mem": ["lifecycle"],
             "cuda_mem": ["lifecycle"], "kfd_svm": ["prefetch"], "cufile_io": ["read-matrix"]}
    problems = check(t, built)
    assert problems[-1] == (
        f"{tmp_path / 'contracts.txt'}:2: kfd_mem@lifecycle-gtt: the built kfd_mem has no "
        "subtest lifecycle-gtt (closest: lifecycle-gtt-x, lifecycle-vram): renamed or removed? "
        "fix or drop the entry")
    assert problems[0].startswith("kfd_mem@lifecycle-gtt-x: in no row")
    assert len(problems) == 2  # hipfile_io is not built: its entry is not stale


# --------------------------------------------------------------------- view


def test_view_states_marks_and_reasons(tmp_path: Path) -> None:
    t = table_of(tmp_path, GOOD)
    rows = view(t, {"kfd_mem@lifecycle-vram": "pass", "cuda_mem@lifecycle": "fail"},
                {"kfd_mem": ["lifecycle-vram"], "cuda_mem": ["lifecycle"]})
    amd, nvidia, host = rows[0].sides
    assert [(c.test, c.state, c.mark) for c in amd.cells] == [
        ("kfd_mem@lifecycle-vram", "pass", ""),
        ("kfd_mem@lifecycle-gtt", NOT_RUN, "no such subtest"),
        ("hip_mem@lifecycle", NOT_RUN, "not built")]
    assert [(c.state, c.mark) for c in nvidia.cells] == [("fail", "")]
    assert host.vendor == "host" and host.cells == [] and not host.missing
    assert rows[1].sides[1].reason == "no SVM ioctl on NVIDIA"
    no_run = view(t)
    assert {c.state for r in no_run for s in r.sides for c in s.cells} == {None}


def test_render_text_side_by_side(tmp_path: Path) -> None:
    t = table_of(tmp_path, GOOD + "mem/oom  nvidia  cuda_mem@oom\n")
    text = render_text(view(t, {"cuda_mem@lifecycle": "pass"}), "# head\n", min_width=12)
    lines = text.splitlines()
    assert lines[0] == "# head"
    assert lines[1].split() == ["ROW", "AMD", "NVIDIA", "HOST"]
    amd_col, nvidia_col = lines[1].index("AMD"), lines[1].index("NVIDIA")
    assert lines[2].startswith("mem/lifecycle")
    assert lines[2][amd_col:].startswith("kfd_mem@lifecycle-vram -")
    assert lines[2][nvidia_col:].startswith("cuda_mem@lifecycle pass")
    assert lines[4][amd_col:].startswith("hip_mem@lifecycle      -")  # aligned results
    # the reason wraps inside its column (as wide as its longest entry), under NVIDIA
    svm = lines.index(next(ln for ln in lines if ln.startswith("svm/prefetch")))
    assert lines[svm][:nvidia_col].split() == ["svm/prefetch", "kfd_svm@prefetch", "-"]
    assert [ln[nvidia_col:].rstrip() for ln in lines[svm:svm + 2]] == [
        "none: no SVM ioctl on", "NVIDIA"]
    assert not lines[svm + 1][:nvidia_col].strip()
    assert "?? no entry, no reason" in lines[-1]
    host_only = view(table_of(tmp_path, "mem/a amd kfd_mem@a\nmem/a nvidia cuda_mem@a\n"))
    assert render_text(host_only).splitlines()[0].split() == ["ROW", "AMD", "NVIDIA"]


# ---------------------------------------------------------------------- CLI


def results_dir(path: Path, tests: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    doc = {"format": "gpuconform-results", "version": 1,
           "tests": {n: {"result": s, "duration": 0.1, "metrics": []} for n, s in tests.items()}}
    (path / "results.json").write_text(json.dumps(doc))
    return path


@pytest.fixture
def good_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    p = tmp_path / "contracts.txt"
    p.write_text(GOOD)
    monkeypatch.setattr(cli, "TABLE_PATH", p)
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path)  # results/: none unless a test makes it
    return p


def test_cli_contracts_with_results(good_table: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    res = results_dir(tmp_path / "r1", {"kfd_svm@prefetch": "skip", "other@x": "pass"})
    assert cli.main(["list", "--contracts", "--results", str(res)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith(f"# {good_table}: 3 contract subtests; AMD expectations: 0 promised, "
                          f"0 predicted-broken, 5 unknown; results: {res}\n")
    assert [ln.split()[:3] for ln in out.splitlines() if ln.startswith("svm/")] == [
        ["svm/prefetch", "kfd_svm@prefetch", "skip"]]


def test_cli_contracts_newest_results_by_default(good_table: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "--contracts"]) == 0
    assert "results: none (no results/*/results.json)" in capsys.readouterr().out
    old = results_dir(tmp_path / "results" / "b-old", {"kfd_svm@prefetch": "fail"})
    new = results_dir(tmp_path / "results" / "a-new", {"kfd_svm@prefetch": "pass"})
    (tmp_path / "results" / "c-running").mkdir()  # no results.json: not a finished run
    os.utime(old / "results.json", (1_000_000, 1_000_000))
    assert cli.newest_results(tmp_path / "results") == new
    assert cli.main(["list", "--contracts"]) == 0
    out = capsys.readouterr().out
    assert f"results: {new}" in out
    assert [ln.split()[:3] for ln in out.splitlines() if ln.startswith("svm/")] == [
        ["svm/prefetch", "kfd_svm@prefetch", "pass"]]


def test_cli_contracts_exit_status(good_table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good_table.write_text(GOOD + "mem/oom  nvidia  cuda_mem@oom\n")
    assert cli.main(["list", "--contracts"]) == 1
    err = capsys.readouterr().err
    assert err == (f"gpuconform: {good_table}:11: mem/oom: no amd entry and no reason: add "
                   '`mem/oom  amd  BINARY@SUBTEST` or `mem/oom  amd  none "why amd has no twin"`\n')
    good_table.write_text("mem/x  intel  kfd_a@b\n")
    assert cli.main(["list", "--contracts"]) == 2
    assert capsys.readouterr().err == (f"gpuconform: {good_table}:1: unknown vendor 'intel' "
                                       "(known: amd, nvidia, host)\n")
    assert cli.main(["list", "--results", "x"]) == 2
    assert "--results goes with --contracts" in capsys.readouterr().err
    assert cli.main(["list", "--contracts", "--include", "mem"]) == 2
    assert "do not apply" in capsys.readouterr().err
    good_table.write_text(GOOD)
    assert cli.main(["list", "--contracts", "--results", str(good_table.parent / "nowhere")]) == 2
    assert "cannot read results" in capsys.readouterr().err


# ------------------------------------------------------------------- report


def run_data(tests: dict[str, str]) -> dict[str, Any]:
    return {"format": "gpuconform-results", "version": 1,
            "tests": {n: {"result": s, "duration": 0.1, "metrics": []} for n, s in tests.items()}}


def test_report_section_only_with_a_table_test(tmp_path: Path) -> None:
    p = tmp_path / "contracts.txt"
    p.write_text(GOOD)
    assert "Contracts across vendors" not in render_html(run_data({"bin@x": "pass"}),
                                                         contracts_table=p)
    page = render_html(run_data({"cuda_mem@lifecycle": "fail", "bin@x": "<b>x</b>",
                                 "kfd_svm@prefetch": "<script>"}), contracts_table=p)
    assert '<h2 id="contracts">Contracts across vendors</h2>' in page
    assert ('<tr><td style="white-space:nowrap">mem/lifecycle</td><td><div>'
            'kfd_mem@lifecycle-vram <span class="muted">-</span></div>') in page
    assert ('<div>cuda_mem@lifecycle <span class="state" style="background:#c62828">fail'
            '</span></div>') in page
    assert ('<div>kfd_svm@prefetch <span class="state" style="background:#000">&lt;script&gt;'
            '</span></div>') in page  # a state is escaped like any value
    assert '<span class="muted">none: no SVM ioctl on NVIDIA</span>' in page
    assert "<th>host</th>" in page


def test_report_shows_a_malformed_table(tmp_path: Path) -> None:
    p = tmp_path / "contracts.txt"
    p.write_text("mem/x amd cuda_mem@a\n")
    page = render_html(run_data({"bin@x": "pass"}), contracts_table=p)
    assert (f'<p class="muted">{p}:1: cuda_mem@a is nvidia&#x27;s (by its prefix), listed under '
            'amd</p>') in page


# ------------------------------------------------ the rule on the real table


def test_real_table_parses_and_every_row_has_twin_or_reason() -> None:
    table = load_table(TABLE_PATH)
    assert len(table.rows) > 50
    assert check(table) == []


def test_every_built_contract_subtest_has_a_row() -> None:
    """The project's rule, on the binaries this build made: each subtest of
    every AMD or NVIDIA binary is in data/contracts.txt with a twin on the
    other vendor or a stated reason (the failure says which line to add)."""
    manifest = build_dir() / SUITE_MANIFEST
    if not manifest.is_file():
        pytest.skip(f"no suite manifest {manifest}: build the suite and set GPUCONFORM_BUILD_DIR")
    built, listing = cli.list_manifest(read_manifest(manifest))
    assert not listing, f"binaries that could not be listed: {listing}"
    assert any(vendor_of(b) in ("amd", "nvidia") for b in built), "no GPU binary built"
    problems = check(load_table(TABLE_PATH), built)
    assert not problems, (f"{len(problems)} problems with {TABLE_PATH} (its header gives the "
                          "format):\n" + "\n".join(problems))


def test_rule_catches_a_line_dropped_from_the_real_table(tmp_path: Path) -> None:
    """The rule test above can fail: the real table less one line breaks it,
    the subtest of that line named with the line to write."""
    built: dict[str, list[str]] = {}
    for test in load_table(TABLE_PATH).entries():
        binary, subtest = test.split("@")
        built.setdefault(binary, []).append(subtest)
    lines = TABLE_PATH.read_text().splitlines(keepends=True)
    drop = next(i for i, ln in enumerate(lines) if ln.split()[2:] == ["kfd_svm@prefetch"])
    t = table_of(tmp_path, "".join(lines[:drop] + lines[drop + 1:]))
    assert check(t, built) == [
        f"{t.path}:{drop + 1}: svm/prefetch: no amd entry and no reason: add `svm/prefetch  amd  "
        'BINARY@SUBTEST` or `svm/prefetch  amd  none "why amd has no twin"`',
        f"kfd_svm@prefetch: in no row of {t.path}: add it to its twin's row, e.g. `svm/prefetch  "
        f"amd  kfd_svm@prefetch` (row at line {drop + 1}); or a new row: `CONTRACT/NAME  amd  "
        "kfd_svm@prefetch` with `CONTRACT/NAME  nvidia  TWIN@SUBTEST` or `CONTRACT/NAME  nvidia  "
        'none "why nvidia has no twin"`']


# ------------------------------------------------------------ expectations


EXPECTS = GOOD + """\
expect kfd_mem@lifecycle-vram promised "kfd_chardev.c (Linux v6.8): the handle is freed"
expect hip_mem@lifecycle predicted-broken "hip_vm.cpp (clr f9f995c6d0ae): no check"
expect kfd_svm@prefetch unknown
"""


def test_expect_lines_give_each_subtest_its_status(tmp_path: Path) -> None:
    t = table_of(tmp_path, EXPECTS)
    assert t.expectation("kfd_mem@lifecycle-vram").status == "promised"
    assert t.expectation("hip_mem@lifecycle").why == "hip_vm.cpp (clr f9f995c6d0ae): no check"
    assert t.expectation("kfd_svm@prefetch").status == "unknown"
    assert t.expectation("kfd_mem@lifecycle-gtt").status == "unknown"  # no line: unknown
    # AMD entries only: kfd_mem x2, hip_mem, kfd_svm, hipfile_io
    assert expectation_counts(t) == {"promised": 1, "predicted-broken": 1, "unknown": 3}
    cells = {c.test: c for r in view(t) for s in r.sides for c in s.cells}
    assert (cells["hip_mem@lifecycle"].expect, cells["kfd_mem@lifecycle-gtt"].expect) == (
        "predicted-broken", "")
    text = render_text(view(t))
    assert re.search(r"hip_mem@lifecycle +\(predicted-broken\)\n", text)
    assert "kfd_svm@prefetch (unknown)" in text  # said in the table: shown
    assert "(promised)" not in text  # the default a reader assumes is not repeated


@pytest.mark.parametrize("line, want", [
    ('expect kfd_mem@lifecycle-vram kept "x"', "unknown status 'kept' (known: promised, "
     "predicted-broken, unknown)"),
    ("expect kfd_mem@lifecycle-vram promised", 'promised needs "SOURCE: WHY"'),
    ('expect kfd_mem@lifecycle-vram predicted-broken ""', 'predicted-broken needs "SOURCE'),
    ('expect kfd_mem@nope unknown', "kfd_mem@nope is in no row above"),
    ("expect kfd_mem@lifecycle-vram", 'expected expect BINARY@SUBTEST STATUS "SOURCE: WHY"'),
    ('expect kfd_mem@lifecycle-vram unknown\nexpect kfd_mem@lifecycle-vram unknown',
     "kfd_mem@lifecycle-vram has an expect line already (line 11)"),
])
def test_malformed_expect_lines(tmp_path: Path, line: str, want: str) -> None:
    assert want in error_of(tmp_path, GOOD + line + "\n")


def test_report_shows_expectations_and_counts(tmp_path: Path) -> None:
    p = tmp_path / "contracts.txt"
    p.write_text(EXPECTS)
    page = render_html(run_data({"hip_mem@lifecycle": "fail"}), contracts_table=p)
    assert ('hip_mem@lifecycle <span class="state" style="background:#c62828">fail</span> '
            '<span class="expect" title="hip_vm.cpp (clr f9f995c6d0ae): no check">'
            'predicted-broken</span>') in page
    assert "AMD subtests: 1 promised, 1 predicted-broken, 3 unknown." in page


def test_real_table_states_the_source_read_predictions() -> None:
    """The findings the sources predict are in the real table as such."""
    t = load_table(TABLE_PATH)
    for test in ("hsa_pools@access-never-allowed", "hip_multigpu@access-invalid-device",
                 "hip_mem@map-past-reservation"):
        e = t.expectation(test)
        assert e.status == "predicted-broken" and e.why, test

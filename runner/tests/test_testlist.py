"""testlist.py: test list files, their errors (one line, PATH:LINE), and selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from gc_testutil import REPO_ROOT, build_dir
from gpuconform.core.execute import ExecOptions, list_subtests
from gpuconform.core.manifest import SUITE_MANIFEST, read_manifest
from gpuconform.core.testlist import (
    TestlistError,
    TestPattern,
    check_test_glob,
    known_testlists,
    load_testlist,
    resolve_testlist,
    select_tests,
)

DATA = REPO_ROOT / "data"

AVAILABLE = [
    "host_interrupt@pipe-read-eintr",
    "host_interrupt@sigiter-read",
    "host_io@buffered-read",
    "host_io@buffered-write",
    "host_io@direct-read",
    "host_io@direct-write",
    "host_io@throughput",
    "kfd_multigpu@map-partial",
]


def write(tmp_path: Path, text: str, name: str = "list.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def pats(tmp_path: Path, text: str) -> list[TestPattern]:
    return load_testlist(write(tmp_path, text))


def error_of(fn: object, *args: object) -> str:
    with pytest.raises(TestlistError) as ei:
        fn(*args)  # type: ignore[operator]
    msg = str(ei.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


# ------------------------------------------------------------------ reading


def test_entries_comments_and_blank_lines(tmp_path: Path) -> None:
    p = write(tmp_path, "# head\n\nhost_io@direct-read\n  host_io@buffered-*   # trailing\n"
              "\t# indented comment\nkfd_[a-z]*@?ap-*\r\n")
    got = load_testlist(p)
    assert [(x.text, x.line, x.is_glob) for x in got] == [
        ("host_io@direct-read", 3, False),
        ("host_io@buffered-*", 4, True),
        ("kfd_[a-z]*@?ap-*", 6, True),
    ]
    assert all(x.path == p for x in got)
    assert got[0].where == f"{p}:3"


@pytest.mark.parametrize(
    "entry, words",
    [
        ("host_io @direct-read", "spaces inside"),
        ("host_io@direct-read host_io@direct-write", "spaces inside"),
        ("host_io", "no '@'"),
        ("host_io*", "no '@'"),
        ("host_io@", "empty part"),
        ("@direct-read", "empty part"),
        ("host_io@@x", "empty part"),
        ("host_io@direct.read", "'.' not allowed"),
        ("host_io@direct/read", "'/' not allowed"),
        ("host_io@dïrect", "'ï' not allowed"),
        ("host_io@\x07", "'\\x07' not allowed"),
        ("host_io@[a-z", "'[' without ']'"),
        ("host_io@a]", "']' without '['"),
        ("host_io@[]x", "empty '[]'"),
        ("host_io@[[a]]", "inside '[...]'"),
        ("host_io@[*]", "inside '[...]'"),
        ("host_io@[!a]", "'!' not allowed"),
    ],
)
def test_malformed_entry_names_file_and_line(tmp_path: Path, entry: str, words: str) -> None:
    p = write(tmp_path, f"# c\nhost_io@direct-read\n{entry}  # why\n")
    msg = error_of(load_testlist, p)
    assert msg.startswith(f"{p}:3: "), msg
    assert words in msg, msg


def test_check_test_glob_accepts_names_and_globs() -> None:
    for ok in ["a@b", "host_io@direct-read", "kfd_*@*", "*@*", "a@b@gpu1-gpu2", "x@[a-c0-9_]?",
               "*@direct-*", "a-b_C9@x-Y_0"]:
        assert check_test_glob(ok) is None, ok
    assert check_test_glob("") == "empty entry"
    long = "x" * 500 + "@ y"
    problem = check_test_glob(long)
    assert problem is not None and len(problem) < 200


def test_file_problems(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    assert error_of(load_testlist, missing).startswith(f"{missing}: cannot read")
    assert error_of(load_testlist, tmp_path).startswith(f"{tmp_path}: is a directory")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a@b\n\xff@c\n")
    assert error_of(load_testlist, bad) == f"{bad}:2: not UTF-8 text"
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"a@b\na@\0c\n")
    assert error_of(load_testlist, nul) == f"{nul}:2: NUL byte"
    empty = write(tmp_path, "# nothing\n\n")
    assert error_of(load_testlist, empty).startswith(f"{empty}: no entries")


def test_line_numbers_count_only_newlines(tmp_path: Path) -> None:
    # \x0c and \u2028 are line breaks for str.splitlines(), not for a list file.
    p = write(tmp_path, "a@b # x\x0cy\u2028z\nc d\n")
    assert error_of(load_testlist, p).startswith(f"{p}:2: ")


# ------------------------------------------------------------------ resolving


def test_resolve_named_list_and_path(tmp_path: Path) -> None:
    (tmp_path / "testlists").mkdir()
    named = write(tmp_path / "testlists", "a@b\n", "smoke.txt")
    other = write(tmp_path, "a@b\n", "mine.txt")
    assert resolve_testlist("smoke", tmp_path) == named
    assert resolve_testlist(str(other), tmp_path) == other
    assert known_testlists(tmp_path) == ["smoke"]


def test_resolve_unknown_names_the_known_lists(tmp_path: Path) -> None:
    (tmp_path / "testlists").mkdir()
    for n in ("smoke", "nightly"):
        write(tmp_path / "testlists", "a@b\n", f"{n}.txt")
    msg = error_of(resolve_testlist, "smok", tmp_path)
    assert "unknown test list 'smok'" in msg and "nightly, smoke" in msg
    msg = error_of(resolve_testlist, str(tmp_path / "x" / "y.txt"), tmp_path)
    assert "no such file" in msg and "nightly, smoke" in msg
    assert "is a directory" in error_of(resolve_testlist, str(tmp_path), tmp_path)
    assert "empty" in error_of(resolve_testlist, "", tmp_path)
    nodata = tmp_path / "nodata"
    assert "none in" in error_of(resolve_testlist, "smoke", nodata)


# ------------------------------------------------------------------ selecting


def test_select_keeps_the_order_of_available(tmp_path: Path) -> None:
    p = pats(tmp_path, "host_io@direct-write\nhost_interrupt@*\nhost_io@buffered-read\n")
    assert select_tests(AVAILABLE, p) == [
        "host_interrupt@pipe-read-eintr",
        "host_interrupt@sigiter-read",
        "host_io@buffered-read",
        "host_io@direct-write",
    ]


def test_select_none_is_all_and_duplicates_select_once(tmp_path: Path) -> None:
    assert select_tests(AVAILABLE, None) == AVAILABLE
    p = pats(tmp_path, "host_io@throughput\nhost_io@throughput\nhost_io@*put\n*@*\n")
    assert select_tests(AVAILABLE, p) == AVAILABLE


def test_unknown_literal_is_an_error_with_closest_names(tmp_path: Path) -> None:
    p = write(tmp_path, "host_io@*\nhost_io@direct-reed\n")
    msg = error_of(select_tests, AVAILABLE, load_testlist(p))
    assert msg.startswith(f"{p}:2: no such test 'host_io@direct-reed'; closest: "), msg
    assert "host_io@direct-read" in msg.split("closest:")[1]


def test_unknown_literal_without_close_names(tmp_path: Path) -> None:
    p = write(tmp_path, "zzzzzz@qqqqqq\n")
    msg = error_of(select_tests, AVAILABLE, load_testlist(p))
    assert msg.startswith(f"{p}:1: no such test 'zzzzzz@qqqqqq' (nothing close")


def test_several_unknown_literals_are_counted(tmp_path: Path) -> None:
    p = write(tmp_path, "a@x\nb@x\nc@x\nd@x\ne@x\nf@x\n")
    msg = error_of(select_tests, AVAILABLE, load_testlist(p))
    assert msg.startswith(f"{p}:1: no such test 'a@x'")
    assert "(and 5 more unknown: b@x, c@x, d@x, ...)" in msg


def test_glob_matching_nothing_is_fine(tmp_path: Path) -> None:
    p = pats(tmp_path, "cuda_*@*\nhost_io@direct-read\n")
    assert select_tests(AVAILABLE, p) == ["host_io@direct-read"]
    assert select_tests(AVAILABLE, pats(tmp_path, "nv_*@*\n")) == []


def test_glob_star_crosses_at_and_matching_is_case_sensitive(tmp_path: Path) -> None:
    avail = ["kfd_multigpu@map-partial@gpu1-gpu2", "kfd_mem@alloc", "KFD_mem@alloc",
             "xkfd_mem@alloc"]
    assert select_tests(avail, pats(tmp_path, "kfd_*@*-gpu2\n")) == [avail[0]]
    assert select_tests(avail, pats(tmp_path, "kfd_*@alloc\n")) == ["kfd_mem@alloc"]
    assert select_tests(avail, pats(tmp_path, "kfd_me[a-m]@all?c\n")) == ["kfd_mem@alloc"]


def test_include_and_exclude_regexes_after_the_list(tmp_path: Path) -> None:
    p = pats(tmp_path, "host_io@*\n")
    assert select_tests(AVAILABLE, p, include=["direct"]) == [
        "host_io@direct-read", "host_io@direct-write"]
    assert select_tests(AVAILABLE, p, include=["direct", "put$"], exclude=["write"]) == [
        "host_io@direct-read", "host_io@throughput"]
    # include cannot add what the list left out
    assert select_tests(AVAILABLE, p, include=["interrupt"]) == []
    assert select_tests(AVAILABLE, None, exclude=["^host_"]) == ["kfd_multigpu@map-partial"]


def test_bad_regex_is_named() -> None:
    msg = error_of(select_tests, AVAILABLE, None, ["ok", "dir(ect"])
    assert msg.startswith("--include 'dir(ect': bad regular expression: "), msg
    msg = error_of(select_tests, AVAILABLE, None, (), ["[x"])
    assert msg.startswith("--exclude '[x': bad regular expression: "), msg


def test_a_binary_that_could_not_be_listed_is_selected_by_its_entries(tmp_path: Path) -> None:
    avail = ["host_io@direct-read", "kfd_mem", "kfd_svm@attrs"]
    assert select_tests(avail, pats(tmp_path, "kfd_*@*\n")) == ["kfd_mem", "kfd_svm@attrs"]
    # a literal of the broken binary is no error: the broken binary is what gets reported
    assert select_tests(avail, pats(tmp_path, "kfd_mem@alloc\n")) == ["kfd_mem"]
    assert select_tests(avail, pats(tmp_path, "host_io@*\n")) == ["host_io@direct-read"]


def test_pattern_made_directly_matches_like_a_loaded_one(tmp_path: Path) -> None:
    direct = TestPattern("host_io@buffered-*", tmp_path / "x", 1, True)
    assert direct == TestPattern.make("host_io@buffered-*", tmp_path / "x", 1)
    assert select_tests(AVAILABLE, [direct]) == ["host_io@buffered-read", "host_io@buffered-write"]


# ------------------------------------------------------------- the data lists


def test_the_shipped_lists_load() -> None:
    assert {"smoke", "nightly", "qualification"} <= set(known_testlists(DATA))
    for name in ("smoke", "nightly", "qualification"):
        assert load_testlist(resolve_testlist(name, DATA))
    for name in ("nightly", "qualification"):
        assert [p.text for p in load_testlist(resolve_testlist(name, DATA))] == ["*@*"]


def test_the_shipped_lists_against_the_real_suite() -> None:
    """smoke names real tests (its literals would be errors otherwise), is a
    strict subset of nightly, and nightly is all."""
    manifest = build_dir() / SUITE_MANIFEST
    if not manifest.is_file():
        pytest.skip(f"no suite manifest {manifest}: build the suite and set GPUCONFORM_BUILD_DIR")
    available: list[str] = []
    for entry in read_manifest(manifest).entries:
        ls = list_subtests(entry.path, ExecOptions())
        assert ls.error is None, ls.error
        available += [f"{entry.name}@{n}" for n in ls.names]
    smoke = select_tests(available, load_testlist(resolve_testlist("smoke", DATA)))
    nightly = select_tests(available, load_testlist(resolve_testlist("nightly", DATA)))
    assert nightly == available
    assert smoke and set(smoke) < set(nightly)
    assert "host_io@throughput" not in smoke

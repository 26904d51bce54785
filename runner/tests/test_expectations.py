"""expectations.py: rule files, lookup, retries and the verdict table (every row)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gc_testutil import REPO_ROOT
from gpuconform.core.expectations import (
    FLAKE,
    RETRY_STATES,
    ExpectationError,
    Expectations,
    Judgement,
    Kind,
    Rule,
    default_expectation_files,
    judge,
    load_expectations,
    should_retry,
)
from gpuconform.core.states import State

DATA = REPO_ROOT / "data"


def write(tmp_path: Path, text: str, name: str = "exp.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def load(tmp_path: Path, text: str, platform: str = "") -> Expectations:
    return load_expectations([write(tmp_path, text)], platform)


def error_of(fn: object, *args: object) -> str:
    with pytest.raises(ExpectationError) as ei:
        fn(*args)  # type: ignore[operator]
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def rule(kind: str, glob: str = "a@b") -> Rule:
    return Rule(Kind(kind), glob, Path("e.txt"), 1)


# ------------------------------------------------------------------ parsing


def test_rules_with_keys_and_comments(tmp_path: Path) -> None:
    p = write(tmp_path, "# head\n\nfail  host_io@direct-write  # ext4 refuses O_DIRECT\n"
              "flake\thost_interrupt@sigiter-read platform=lab-*\n"
              "skip cuda_multigpu@*   # single-GPU lab # really\n")
    exp = load_expectations([p], "lab-7")
    assert [(r.kind, r.glob, r.line, r.platform, r.comment) for r in exp.rules] == [
        (Kind.FAIL, "host_io@direct-write", 3, None, "ext4 refuses O_DIRECT"),
        (Kind.FLAKE, "host_interrupt@sigiter-read", 4, "lab-*", ""),
        (Kind.SKIP, "cuda_multigpu@*", 5, None, "single-GPU lab # really"),
    ]
    assert exp.rules[0].where == f"{p}:3"
    assert exp.rules[1].describe() == f"{p}:4: flake host_interrupt@sigiter-read platform=lab-*"
    assert exp.inactive == [] and exp.platform == "lab-7"


@pytest.mark.parametrize(
    "line, words",
    [
        ("xfail a@b", "unknown kind 'xfail'"),
        ("FAIL a@b", "unknown kind 'FAIL'"),
        ("fail", "fail rule without a test"),
        ("fail host_io", "test field: 'host_io' has no '@'"),
        ("fail a@b.c", "test field: character '.'"),
        ("fail a@[b", "test field: 'a@[b': '[' without ']'"),
        ("fail a@b c@d", "'c@d': not key=value"),
        ("fail a@b bug=123", "unknown key 'bug' (keys: platform)"),
        ("fail a@b platform=x platform=y", "key 'platform' given twice"),
        ("fail a@b platform=", "key 'platform': empty value"),
    ],
)
def test_malformed_rule_names_file_line_and_field(tmp_path: Path, line: str, words: str) -> None:
    p = write(tmp_path, f"skip x@y\n\n{line}   # comment\n")
    msg = error_of(load_expectations, [p])
    assert msg.startswith(f"{p}:3: "), msg
    assert words in msg, msg


def test_file_problems(tmp_path: Path) -> None:
    good = write(tmp_path, "fail a@b\n", "good.txt")
    missing = tmp_path / "missing.txt"
    assert error_of(load_expectations, [good, missing]).startswith(f"{missing}: cannot read")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fail a@b\nfail \xfe@x\n")
    assert error_of(load_expectations, [bad]) == f"{bad}:2: not UTF-8 text"
    empty = write(tmp_path, "# only comments\n", "empty.txt")
    assert load_expectations([empty]).rules == []


# ------------------------------------------------------------------ platforms


def test_platform_key_selects_the_active_rules(tmp_path: Path) -> None:
    text = "fail a@b platform=lab-amd-*\nfail a@c platform=lab-nv-*\nfail a@d\n"
    amd = load(tmp_path, text, "lab-amd-mi300")
    assert [r.glob for r in amd.rules] == ["a@b", "a@d"]
    assert [r.glob for r in amd.inactive] == ["a@c"]
    assert amd.lookup("a@c") is None
    # rules of other platforms are not stale
    amd.lookup("a@b"), amd.lookup("a@d")
    assert amd.unused() == []
    # no platform given: rules with a platform key never apply
    none = load(tmp_path, text)
    assert [r.glob for r in none.rules] == ["a@d"]
    assert [r.glob for r in load(tmp_path, "skip a@* platform=*\n").rules] == ["a@*"]


# ------------------------------------------------------------------ lookup


def test_lookup_globs_and_first_rule_of_a_kind_wins(tmp_path: Path) -> None:
    exp = load(tmp_path, "fail host_io@direct-*\nfail host_io@direct-write\nskip kfd_*@*\n")
    r = exp.lookup("host_io@direct-write")
    assert r is not None and r.line == 1 and r.kind is Kind.FAIL
    assert exp.lookup("host_io@buffered-read") is None
    s = exp.lookup("kfd_mem@alloc")
    assert s is not None and s.kind is Kind.SKIP
    # glob matching is case-sensitive and whole-name
    assert exp.lookup("KFD_mem@alloc") is None
    assert exp.lookup("xhost_io@direct-write") is None


def test_conflicting_kinds_name_both_rules(tmp_path: Path) -> None:
    a = write(tmp_path, "fail host_io@direct-*\n", "a.txt")
    b = write(tmp_path, "# c\nflake host_io@*-write\n", "b.txt")
    exp = load_expectations([a, b])
    assert exp.lookup("host_io@direct-read") is not None  # only a.txt's rule matches
    msg = error_of(exp.lookup, "host_io@direct-write")
    assert msg == (f"{a}:1: fail rule 'host_io@direct-*' and {b}:2: flake rule "
                   "'host_io@*-write' both match host_io@direct-write")
    assert "both match" in error_of(exp.lookup_all, ["host_io@direct-read", "host_io@direct-write"])


def test_unused_rules_are_stale(tmp_path: Path) -> None:
    exp = load(tmp_path, "fail a@b\nflake a@c*\nskip z@*\nfail a@b\n")
    assert len(exp.unused()) == 4
    got = exp.lookup_all(["a@b", "a@c1", "a@c2", "q@q"])
    assert set(got) == {"a@b", "a@c1", "a@c2"}
    # both fail rules of a@b count as used; z@* matched nothing
    assert [(r.glob, r.line) for r in exp.unused()] == [("z@*", 3)]


# ------------------------------------------------------------------ retries


@pytest.mark.parametrize("state", list(State))
def test_should_retry_failure_states_only(state: State) -> None:
    retried = {"fail", "crash", "timeout", "incomplete", "dmesg-warn", "dmesg-fail"}
    assert RETRY_STATES == retried
    assert should_retry(state.value, 1, 2) is (state.value in retried)
    assert should_retry(state, 1, 2) is (state.value in retried)  # a State is a str too


def test_should_retry_counts_attempts() -> None:
    assert [should_retry("fail", n, 2) for n in (1, 2, 3, 4)] == [True, True, False, False]
    assert should_retry("crash", 1, 0) is False
    with pytest.raises(ValueError):
        should_retry("fail", 0, 2)
    with pytest.raises(ValueError):
        should_retry("fail", 1, -1)
    with pytest.raises(ValueError, match="not a result state: 'flaky'"):
        should_retry("flaky", 1, 2)


@pytest.mark.parametrize("kind", list(Kind))
def test_a_failure_a_rule_expects_is_not_retried(kind: Kind) -> None:
    rule = Rule(kind, "a@b", Path("x.txt"), 1)
    retried = kind is not Kind.FAIL  # a flake rule's retry tells a flake from a repeat
    assert should_retry("fail", 1, 2, rule) is retried
    assert should_retry("crash", 1, 2, rule) is retried
    assert should_retry("fail", 1, 2, None) is True


def test_retry_loop_reaches_every_final() -> None:
    """should_retry() and judge() together, as a runner uses them."""
    def run(outcomes: list[str], retries: int) -> list[str]:
        done: list[str] = []
        for s in outcomes:
            done.append(s)
            if not should_retry(s, len(done), retries):
                break
        return done

    assert run(["fail", "fail", "pass"], 2) == ["fail", "fail", "pass"]
    assert judge(run(["fail", "fail", "pass"], 2), None).final == FLAKE
    assert run(["fail", "fail", "pass"], 1) == ["fail", "fail"]
    assert judge(run(["fail", "fail", "pass"], 1), None).final == "fail"
    assert run(["pass", "fail"], 3) == ["pass"]
    assert run(["abort", "pass"], 3) == ["abort"]


# ------------------------------------------------------------------ verdicts


FAILURES = ["fail", "crash", "timeout", "incomplete", "dmesg-warn", "dmesg-fail"]

# (attempts, rule kind or None, final, expected): every row of the table in
# the module's docstring, for every rule column.
TABLE = [
    # pass
    (["pass"], None, "pass", True),
    (["pass"], "fail", "pass", False),
    (["pass"], "flake", "pass", True),
    # failed, then passed on a retry
    (["fail", "pass"], None, FLAKE, False),
    (["crash", "timeout", "pass"], None, FLAKE, False),
    (["fail", "pass"], "fail", FLAKE, False),
    (["fail", "pass"], "flake", FLAKE, True),
    # failure states, alone and retried
    *[([s], None, s, False) for s in FAILURES],
    *[([s], "fail", s, True) for s in FAILURES],
    *[([s], "flake", s, True) for s in FAILURES],
    (["fail", "crash"], None, "crash", False),
    (["fail", "crash"], "fail", "crash", True),
    (["timeout", "fail", "fail"], "flake", "fail", True),
    # error and abort: no rule covers them
    *[([s], k, s, False) for s in ("error", "abort") for k in (None, "fail", "flake")],
    (["fail", "abort"], "fail", "abort", False),
    # skip
    (["skip"], None, "skip", True),
    (["skip"], "fail", "skip", True),
    (["skip"], "flake", "skip", True),
    # a skip or notrun after a failure keeps the failure
    (["crash", "skip"], None, "crash", False),
    (["crash", "skip"], "fail", "crash", True),
    (["fail", "notrun"], "flake", "fail", True),
    # notrun, or no attempt at all
    (["notrun"], None, "notrun", False),
    (["notrun"], "fail", "notrun", False),
    (["notrun"], "flake", "notrun", False),
    ([], None, "notrun", False),
    ([], "fail", "notrun", False),
    # skip rules: not run at all, whatever the caller passes
    ([], "skip", "skip", True),
    (["pass"], "skip", "skip", True),
    (["crash"], "skip", "skip", True),
    (["error"], "skip", "skip", True),
]


@pytest.mark.parametrize("attempts, kind, final, expected", TABLE)
def test_judge_table(attempts: list[str], kind: str | None, final: str, expected: bool) -> None:
    r = rule(kind) if kind else None
    j = judge(attempts, r)
    assert isinstance(j, Judgement)
    assert (j.final, j.expected) == (final, expected), j.why
    assert j.rule is r
    assert j.why and "\n" not in j.why
    if r is not None:
        assert r.describe() in j.why  # the rule responsible is named


def test_judge_why_says_what_happened() -> None:
    assert "fixed" in judge(["pass"], rule("fail")).why
    assert "passed on attempt 3" in judge(["fail", "crash", "pass"], None).why
    assert "no flake rule" in judge(["fail", "pass"], None).why
    assert "in 2 attempts" in judge(["fail", "fail"], None).why
    assert "not run" in judge([], rule("skip")).why


def test_judge_takes_states_and_rejects_unknown_ones() -> None:
    assert judge([State.FAIL, State.PASS], rule("flake")).final == FLAKE
    with pytest.raises(ValueError):
        judge(["flake"], None)  # a final, not an attempt's state
    with pytest.raises(ValueError):
        judge(["passed"], None)


# ------------------------------------------------------------------ the data files


def test_the_example_file_parses_and_is_not_loaded_by_default(tmp_path: Path) -> None:
    example = DATA / "expectations" / "example.txt"
    exp = load_expectations([example], "vm-ext4-3")
    kinds = {r.kind for r in exp.rules + exp.inactive}
    assert kinds == {Kind.FAIL, Kind.FLAKE, Kind.SKIP}
    r = exp.lookup("host_io@direct-write")
    assert r is not None and r.kind is Kind.FAIL and r.comment
    assert example not in default_expectation_files(DATA)
    for p in default_expectation_files(DATA):
        load_expectations([p])  # whatever is shipped loads
    (tmp_path / "expectations").mkdir()
    for n in ("b.txt", "a.txt", "example.txt", "README.md"):
        (tmp_path / "expectations" / n).write_text("")
    assert [p.name for p in default_expectation_files(tmp_path)] == ["a.txt", "b.txt"]
    assert default_expectation_files(tmp_path / "none") == []


def test_rules_of_unselected_tests_are_not_stale(tmp_path: Path) -> None:
    f = tmp_path / "e.txt"
    f.write_text("fail a@x\nfail b@y\nfail gone@*\n")
    exp = load_expectations([f])
    exp.lookup_all(["a@x"])
    exp.note_available(["a@x", "b@y"])
    assert [r.glob for r in exp.unused()] == ["gone@*"]

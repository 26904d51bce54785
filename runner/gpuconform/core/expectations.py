"""Expectations: known failures, flakes and skips, and the verdict on a test's attempts.

An expectations file (data/expectations/*.txt) holds one rule a line:

    KIND TEST-GLOB [key=value ...] [# comment]

    fail  host_io@direct-write                       # ext4 on VM X refuses O_DIRECT
    flake host_interrupt@sigiter-read platform=lab-* # lost wakeup, bug 123
    skip  cuda_multigpu@*                            # single-GPU lab

KIND is fail, flake or skip. TEST-GLOB is a BINARY@SUBTEST name or an fnmatch
glob of one, written as in test lists. Keys:

    platform=GLOB   the rule applies only where GLOB matches the platform
                    string the runner gives (the hardware fingerprint key), so
                    one file can hold the rules of several machines. A rule
                    with a platform key never applies when no platform is given.

A rule whose platform does not match is inactive: never looked up, never
reported as stale. Two active rules of DIFFERENT kinds matching the same test
are an error at lookup naming both (same kind: the first one wins). Active
rules that matched no test of the run are stale: Expectations.unused().

Retrying (should_retry): the failure states fail, crash, timeout, incomplete,
dmesg-warn and dmesg-fail are run again while attempts_done <= max_retries
(so at most 1 + max_retries attempts); pass, skip, notrun, error and abort
are never retried, nor is a test a fail rule names: its failure is expected
whatever a retry would show, and the retry would only cost time (a flake
rule's test is retried: whether it flaked or failed twice is worth telling).

The verdict (judge) follows deqp-runner: a run exits 0 iff no result is
unexpected. `final` is the state to report: the last attempt's, except that a
pass after a failure is "flake", and a skip or notrun after a failure keeps
that failure (a retry that could not run does not erase it).

    attempts (final)           no rule       fail rule           flake rule   skip rule
    -------------------------  ------------  ------------------  -----------  ---------
    (any, or none)             -             -                   -            skip, expected
    pass                       expected      UNEXPECTED (fixed)  expected
    fail... then pass (flake)  UNEXPECTED    UNEXPECTED (fixed)  expected
    failure state (fail, crash, timeout, incomplete, dmesg-*)
                               UNEXPECTED    expected            expected
    error, abort               UNEXPECTED    UNEXPECTED          UNEXPECTED
    skip                       expected      expected            expected
    notrun, or no attempt      UNEXPECTED    UNEXPECTED          UNEXPECTED

A skip rule means the runner does not run the test at all: the caller looks
the test up before running it. error (the runner could not run the test as
asked) and abort (the machine is in no state to go on) are never covered by a
rule: they say something about the run, not about the test. A pass under a
fail rule is unexpected so that the rule gets removed once the bug is fixed.

Every problem with a file is an ExpectationError whose message is one line,
`PATH:LINE: what`.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from .states import State
from .testlist import check_test_glob, read_lines

__all__ = [
    "ExpectationError",
    "Kind",
    "Rule",
    "Expectations",
    "Judgement",
    "RETRY_STATES",
    "FLAKE",
    "KEYS",
    "parse_rule",
    "load_expectations",
    "default_expectation_files",
    "should_retry",
    "judge",
]

FLAKE = "flake"  # the final state of a test that failed, then passed on a retry
KEYS = ("platform",)
EXAMPLE_FILE = "example.txt"

RETRY_STATES: frozenset[str] = frozenset(
    s.value
    for s in (
        State.FAIL,
        State.CRASH,
        State.TIMEOUT,
        State.INCOMPLETE,
        State.DMESG_WARN,
        State.DMESG_FAIL,
    )
)
# Failure states no rule covers.
_ALWAYS_UNEXPECTED: frozenset[str] = frozenset({State.ERROR.value, State.ABORT.value})


class ExpectationError(Exception):
    """An expectations file or lookup that cannot be used; str() is one line."""


class Kind(str, enum.Enum):
    FAIL = "fail"
    FLAKE = "flake"
    SKIP = "skip"


@dataclass(frozen=True)
class Rule:
    kind: Kind
    glob: str
    path: Path
    line: int
    platform: str | None = None  # the platform glob; None: every platform
    comment: str = ""
    _regex: "re.Pattern[str]" = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", re.compile(fnmatch.translate(self.glob)))

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def matches(self, test: str) -> bool:
        return self._regex.match(test) is not None

    def applies_to(self, platform: str) -> bool:
        return self.platform is None or fnmatch.fnmatchcase(platform, self.platform)

    def describe(self) -> str:
        """`PATH:LINE: KIND GLOB [platform=P]`, for summaries."""
        plat = f" platform={self.platform}" if self.platform is not None else ""
        return f"{self.where}: {self.kind.value} {self.glob}{plat}"


def parse_rule(text: str, path: Path, line: int, comment: str = "") -> Rule:
    """One rule from the text of a line (comment already removed)."""
    where = f"{path}:{line}"
    fields = text.split()
    kinds = ", ".join(k.value for k in Kind)
    try:
        kind = Kind(fields[0])
    except ValueError:
        raise ExpectationError(
            f"{where}: unknown kind {fields[0][:40]!r} (KIND TEST-GLOB [key=value ...]; KIND: {kinds})"
        ) from None
    if len(fields) < 2:
        raise ExpectationError(f"{where}: {kind.value} rule without a test (KIND TEST-GLOB ...)")
    glob = fields[1]
    problem = check_test_glob(glob)
    if problem is not None:
        raise ExpectationError(f"{where}: test field: {problem}")
    keys: dict[str, str] = {}
    for kv in fields[2:]:
        key, eq, value = kv.partition("=")
        if not eq:
            raise ExpectationError(
                f"{where}: {kv[:80]!r}: not key=value (one TEST-GLOB a rule; keys: {', '.join(KEYS)})"
            )
        if key not in KEYS:
            raise ExpectationError(f"{where}: unknown key {key[:80]!r} (keys: {', '.join(KEYS)})")
        if key in keys:
            raise ExpectationError(f"{where}: key {key!r} given twice")
        if not value:
            raise ExpectationError(f"{where}: key {key!r}: empty value")
        keys[key] = value
    return Rule(kind, glob, Path(path), line, keys.get("platform"), comment)


@dataclass
class Expectations:
    """The active rules of some files for one platform."""

    rules: list[Rule] = field(default_factory=list)  # active, in file order
    inactive: list[Rule] = field(default_factory=list)  # other platforms
    platform: str = ""
    _used: set[int] = field(default_factory=set, repr=False)

    def _matching(self, test: str) -> list[tuple[int, Rule]]:
        return [(i, r) for i, r in enumerate(self.rules) if r.matches(test)]

    def lookup(self, test: str) -> Rule | None:
        """The rule for test (None: no rule); every matching rule counts as
        used. Two matching rules of different kinds: ExpectationError."""
        found = self._matching(test)
        if not found:
            return None
        first = found[0][1]
        for _, other in found[1:]:
            if other.kind is not first.kind:
                raise ExpectationError(
                    f"{first.where}: {first.kind.value} rule {first.glob!r} and "
                    f"{other.where}: {other.kind.value} rule {other.glob!r} both match {test}"
                )
        self._used.update(i for i, _ in found)
        return first

    def lookup_all(self, tests: Iterable[str]) -> dict[str, Rule]:
        """lookup() of every test (those with a rule): call it before running
        anything, so that a conflict stops the run before it starts."""
        out: dict[str, Rule] = {}
        for t in tests:
            r = self.lookup(t)
            if r is not None:
                out[t] = r
        return out

    def note_available(self, tests: Iterable[str]) -> None:
        """A rule naming a test that exists but was not selected (a partial
        run: -k, --include, a test list) is not stale: mark it used."""
        names = list(tests)
        for i, r in enumerate(self.rules):
            if i not in self._used and any(r.matches(t) for t in names):
                self._used.add(i)

    def unused(self) -> list[Rule]:
        """Active rules that matched no test looked up so far (stale rules)."""
        return [r for i, r in enumerate(self.rules) if i not in self._used]


def load_expectations(paths: Sequence[Path], platform: str = "") -> Expectations:
    """The rules of the files, in order; those whose platform key does not
    match `platform` are kept apart as inactive."""
    exp = Expectations(platform=platform)
    for path in paths:
        path = Path(path)
        for lineno, text, comment in read_lines(path, ExpectationError):
            rule = parse_rule(text, path, lineno, comment)
            (exp.rules if rule.applies_to(platform) else exp.inactive).append(rule)
    return exp


def default_expectation_files(data_dir: Path) -> list[Path]:
    """data_dir/expectations/*.txt, sorted, without example.txt."""
    d = Path(data_dir) / "expectations"
    try:
        return sorted(p for p in d.glob("*.txt") if p.is_file() and p.name != EXAMPLE_FILE)
    except OSError:
        return []


def _state(s: str) -> str:
    try:
        return State(s).value
    except ValueError:
        raise ValueError(f"not a result state: {s!r}") from None


def should_retry(state: str, attempts_done: int, max_retries: int,
                 rule: Rule | None = None) -> bool:
    """Whether to run a test again after its attempt number attempts_done
    (1-based) ended in `state`: failure states only, at most max_retries
    retries, and never under a fail rule, which already expects the failure
    (a retry tells a flake from a repeat: under a fail rule the repeat is
    known in advance; under a flake rule the retry still shows which it was)."""
    if attempts_done < 1:
        raise ValueError(f"attempts_done must be >= 1, not {attempts_done}")
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, not {max_retries}")
    if rule is not None and rule.kind is Kind.FAIL:
        return False
    return _state(state) in RETRY_STATES and attempts_done <= max_retries


@dataclass(frozen=True)
class Judgement:
    final: str  # a State value, or "flake"
    expected: bool
    why: str  # one line
    rule: Rule | None = None


def _final(states: list[str]) -> tuple[str, int | None]:
    """The state to report, and the 1-based attempt that passed after a failure."""
    last = states[-1]
    failures = [s for s in states[:-1] if s in RETRY_STATES]
    if not failures:
        return last, None
    if last == State.PASS.value:
        return FLAKE, len(states)
    if last in (State.SKIP.value, State.NOTRUN.value):
        return failures[-1], None
    return last, None


def judge(attempt_states: Sequence[str], rule: Rule | None) -> Judgement:
    """The verdict on a test's attempts (in order) under its rule; the table
    is in the module's docstring."""
    states = [_state(s) for s in attempt_states]
    if rule is not None and rule.kind is Kind.SKIP:
        return Judgement(State.SKIP.value, True, f"not run (rule {rule.describe()})", rule)
    kind = rule.kind if rule is not None else None
    by = f" (rule {rule.describe()})" if rule is not None else ""
    if not states:
        return Judgement(State.NOTRUN.value, False, "never run" + by, rule)
    final, passed_at = _final(states)
    n = len(states)
    tries = f" in {n} attempts" if n > 1 else ""
    if final == State.PASS.value:
        if kind is Kind.FAIL:
            return Judgement(final, False, f"fixed: passes although expected to fail{by}", rule)
        return Judgement(final, True, "passed" + by, rule)
    if final == FLAKE:
        history = ", ".join(states)
        if kind is Kind.FLAKE:
            return Judgement(final, True, f"flaky as expected: {history}{by}", rule)
        if kind is Kind.FAIL:
            return Judgement(
                final, False, f"fixed or flaky: passed on attempt {passed_at} ({history}) "
                f"although expected to fail{by}", rule)
        return Judgement(
            final, False, f"flaky: passed on attempt {passed_at} ({history}); no flake rule", rule)
    if final == State.SKIP.value:
        return Judgement(final, True, "skipped" + by, rule)
    if final == State.NOTRUN.value:
        return Judgement(final, False, "not run (the run stopped before it)" + by, rule)
    if final in _ALWAYS_UNEXPECTED:
        return Judgement(final, False, f"{final}: no rule covers {final}{tries}{by}", rule)
    # A retryable failure state.
    if kind in (Kind.FAIL, Kind.FLAKE):
        return Judgement(final, True, f"{final}{tries}, as expected{by}", rule)
    return Judgement(final, False, f"{final}{tries}; no fail or flake rule", rule)

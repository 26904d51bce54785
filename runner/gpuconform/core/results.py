"""From a run to a record; records to results.json and a summary.

A TestRecord is one line of the future journal as much as one entry of
results.json: to_json() / from_json() round-trip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .atomic import atomic_write
from .catalogue import Catalogue
from .execute import SubtestRun
from .jsondoc import dumps
from .expectations import FLAKE, Judgement, Rule, judge
from .protocol import skip_location
from .states import State, Verdict, classify, failed

__all__ = [
    "DynamicRecord",
    "TestRecord",
    "verdict_of",
    "record_of",
    "record_of_attempts",
    "judged",
    "totals",
    "results_json",
    "write_results",
    "render_summary",
    "RunNotes",
    "RunOutcome",
    "run_outcome",
    "RESULTS_FORMAT",
]

RESULTS_FORMAT = "gpuconform-results"
RESULTS_VERSION = 1


@dataclass
class DynamicRecord:
    result: State
    reason: str = ""
    time: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"result": self.result.value, "reason": self.reason, "time": self.time}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "DynamicRecord":
        return cls(State(obj["result"]), obj.get("reason", ""), obj.get("time"))


@dataclass
class TestRecord:
    __test__ = False  # not a pytest test class, whatever its name

    name: str  # BINARY@SUBTEST; a bare BINARY for a binary that could not be listed
    binary: str
    subtest: str | None
    result: State
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    out: str = ""
    err: str = ""
    out_bytes: int = 0
    err_bytes: int = 0
    start: float = 0.0  # time.time()
    end: float = 0.0
    duration: float = 0.0  # seconds the binary ran (monotonic clock)
    reported_time: float | None = None  # seconds the binary itself reported
    returncode: int | None = None
    command: list[str] = field(default_factory=list)
    dynamic: dict[str, DynamicRecord] = field(default_factory=dict)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    soaks: list[dict[str, Any]] = field(default_factory=list)  # soak.py's lines, as written
    dmesg: list[str] = field(default_factory=list)  # kernel log lines of the test's window
    timeout: float | None = None  # the runner's timeout for it (after --timeout-override)
    # Every attempt (retries): {"result", "reason", "duration", "returncode", "start"}.
    attempts: list[dict[str, Any]] = field(default_factory=list)
    # expectations.judge(): "flake" or a state; None when the record was not judged.
    final: str | None = None
    expected: bool | None = None
    judgement: str = ""  # judge()'s one-line why
    rule: str | None = None  # the expectation rule that matched: "PATH:LINE: KIND GLOB"
    skip_at: str | None = None  # a skip's "FILE:LINE (FUNC())", from the binary's stderr
    placement: str | None = None  # where it ran: gpu, gpu-alone, node, host (placement.py)
    gpu: dict[str, Any] | None = None  # the GPU it was pinned to (devices.Gpu.to_json())
    # A test run once per GPU: each copy's record (its gpu set; its metrics and
    # soaks moved up into this one, tagged with the GPU's index).
    placements: list["TestRecord"] = field(default_factory=list)

    @property
    def unexpected(self) -> bool:
        """Counts against the run: judged unexpected, or (never judged) a failure state."""
        if self.expected is not None:
            return not self.expected
        return self.result.is_failure

    def to_json(self) -> dict[str, Any]:
        return {
            "result": self.result.value,
            "reason": self.reason,
            "notes": list(self.notes),
            "binary": self.binary,
            "subtest": self.subtest,
            "command": list(self.command),
            "returncode": self.returncode,
            "out": self.out,
            "err": self.err,
            "out_bytes": self.out_bytes,
            "err_bytes": self.err_bytes,
            "time": {"start": self.start, "end": self.end},
            "duration": self.duration,
            "reported_time": self.reported_time,
            "dynamic": {k: v.to_json() for k, v in self.dynamic.items()},
            "metrics": list(self.metrics),
            "soaks": list(self.soaks),
            "dmesg": list(self.dmesg),
            "timeout": self.timeout,
            "attempts": [dict(a) for a in self.attempts],
            "final": self.final,
            "expected": self.expected,
            "judgement": self.judgement,
            "rule": self.rule,
            "skip_at": self.skip_at,
            "placement": self.placement,
            "gpu": self.gpu,
            "placements": [p.to_json() for p in self.placements],
        }

    @classmethod
    def from_json(cls, name: str, obj: Mapping[str, Any]) -> "TestRecord":
        t = obj.get("time") or {}
        return cls(
            name=name,
            binary=obj.get("binary", ""),
            subtest=obj.get("subtest"),
            result=State(obj["result"]),
            reason=obj.get("reason", ""),
            notes=list(obj.get("notes", [])),
            out=obj.get("out", ""),
            err=obj.get("err", ""),
            out_bytes=obj.get("out_bytes", 0),
            err_bytes=obj.get("err_bytes", 0),
            start=t.get("start", 0.0),
            end=t.get("end", 0.0),
            duration=obj.get("duration", 0.0),
            reported_time=obj.get("reported_time"),
            returncode=obj.get("returncode"),
            command=list(obj.get("command", [])),
            dynamic={k: DynamicRecord.from_json(v) for k, v in (obj.get("dynamic") or {}).items()},
            metrics=list(obj.get("metrics", [])),
            soaks=list(obj.get("soaks") or []),
            dmesg=list(obj.get("dmesg") or []),
            timeout=obj.get("timeout"),
            attempts=[dict(a) for a in obj.get("attempts") or []],
            final=obj.get("final"),
            expected=obj.get("expected"),
            judgement=obj.get("judgement") or "",
            rule=obj.get("rule"),
            skip_at=obj.get("skip_at"),
            placement=obj.get("placement"),
            gpu=obj.get("gpu"),
            placements=[cls.from_json(name, p) for p in obj.get("placements") or []],
        )

    def attempt_summary(self) -> dict[str, Any]:
        return {"result": self.result.value, "reason": self.reason, "duration": self.duration,
                "returncode": self.returncode, "start": self.start}


def verdict_of(run: SubtestRun, catalogue: Catalogue | None = None) -> Verdict:
    """classify() a run, then weigh what classify() does not see.

    A metrics line that does not validate turns a pass into a fail: metrics
    are never dropped silently. So does a metric the catalogue (when given)
    does not know, or knows in another unit: a metric no baseline can key
    is never recorded quietly; the dynamic subtest that recorded it fails
    too, so that no baseline is made of it.
    """
    cmd = run.command
    if cmd.spawn_error is not None:
        return Verdict(State.ERROR, cmd.spawn_error)
    v = classify(
        run.subtest,
        run.parsed,
        returncode=cmd.returncode,
        timed_out=cmd.timed_out,
        timeout_s=cmd.timeout_s,
        failures=run.failures,
    )
    v.notes = list(v.notes) + cmd.notes() + [f"metrics: {e}" for e in run.metric_errors]
    if run.metric_errors and v.state is State.PASS:
        v.state = State.FAIL
        v.reason = f"invalid metrics: {run.metric_errors[0]}"
    if catalogue is not None:
        _weigh_catalogue(v, run, catalogue)
    return v


def _weigh_catalogue(v: Verdict, run: SubtestRun, catalogue: Catalogue) -> None:
    """v with the catalogue's word on each metric of run (verdict_of)."""
    problems: list[str] = []
    for m in run.metrics:
        why = catalogue.problem(str(m.key), m.unit)
        if why is None:
            continue
        problems.append(why)
        d = v.dynamic.get(m.dynamic) if m.dynamic else None
        if d is not None and d.state is State.PASS:
            d.state, d.reason = State.FAIL, why
    v.notes += [f"metrics: {p}" for p in problems]
    if problems and v.state is State.PASS:
        v.state = State.FAIL
        more = len(problems) - 1
        v.reason = problems[0] + (f" (+{more} more in the notes)" if more else "")


def record_of(name: str, run: SubtestRun, verdict: Verdict) -> TestRecord:
    cmd = run.command
    st = run.parsed.get(run.subtest)
    return TestRecord(
        name=name,
        binary=str(run.binary),
        subtest=run.subtest,
        result=verdict.state,
        reason=verdict.reason,
        notes=list(verdict.notes),
        out=cmd.stdout.text(),
        err=cmd.stderr.text(),
        out_bytes=cmd.stdout.total,
        err_bytes=cmd.stderr.total,
        start=cmd.start,
        end=cmd.end,
        duration=cmd.duration,
        reported_time=st.time if st is not None else None,
        returncode=cmd.returncode,
        command=list(cmd.argv),
        dynamic={
            k: DynamicRecord(d.state, d.reason, d.time) for k, d in verdict.dynamic.items()
        },
        metrics=[m.to_json() for m in run.metrics],
        soaks=list(run.soaks),
        skip_at=skip_location(cmd.stderr.text()) if verdict.state is State.SKIP else None,
    )


def record_of_attempts(attempts: Sequence[TestRecord], rule: Rule | None,
                       notes: Sequence[str] = ()) -> TestRecord:
    """A test's attempts (1 + its retries) made one record by its rule
    (expectations.judge: a pass after a failure is a flake, kept as a pass):
    the last attempt that ended in the final state, every attempt summarized,
    notes (the kernel log's, between attempts) first."""
    states = [a.result.value for a in attempts]
    j = judge(states, rule)
    final = State.PASS if j.final == FLAKE else State(j.final)
    rec = next((a for a in reversed(attempts) if a.result is final), attempts[-1])
    rec.result = final
    rec.notes = list(notes) + rec.notes
    if len(attempts) > 1:
        rec.notes.append(f"{len(attempts)} attempts: {', '.join(states)}")
    rec.attempts = [a.attempt_summary() for a in attempts]
    return _with_judgement(rec, j, rule)


def judged(rec: TestRecord, rule: Rule | None, states: Sequence[str] | None = None) -> TestRecord:
    """rec with its rule's verdict (expectations.judge) on the states of its
    attempts; states None: its own result, once."""
    j = judge(list(states) if states is not None else [rec.result.value], rule)
    return _with_judgement(rec, j, rule)


def _with_judgement(rec: TestRecord, j: Judgement, rule: Rule | None) -> TestRecord:
    rec.final, rec.expected, rec.judgement = j.final, j.expected, j.why
    rec.rule = rule.describe() if rule is not None else None
    return rec


def totals(records: Iterable[TestRecord]) -> dict[str, int]:
    counts = {s.value: 0 for s in State}
    for r in records:
        counts[r.result.value] += 1
    return counts


@dataclass
class RunNotes:
    """Run-level facts for the summary (all optional)."""

    aborted: str | None = None  # why the run stopped early
    stale_rules: list[str] = field(default_factory=list)  # Rule.describe() of unused rules
    kernel_log: str | None = None  # said once: why the kernel log was not watched
    regressions: list[str] = field(default_factory=list)  # explain() of regressions
    improvements: list[str] = field(default_factory=list)
    # Keys (BIN@SUB[@DYN]:NAME) of the run's metrics the baseline has no entry
    # for (judge.py's "new"): never gated, said every night until one is made.
    unbaselined: list[str] = field(default_factory=list)
    regressions_expected: bool = False
    # A baseline that exists but could not be used: the comparison did not
    # happen, so the run cannot say it has no regression.
    baseline_error: str | None = None
    messages: list[str] = field(default_factory=list)  # anything else worth one line


@dataclass
class RunOutcome:
    """`gpuconform run`'s verdict: exit status 0 iff nothing unexpected."""

    status: int
    unexpected: list[str]  # test names
    regressions: int  # regressions counted as unexpected
    line: str  # one line for the terminal

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "unexpected": list(self.unexpected),
                "regressions": self.regressions, "line": self.line}


def run_outcome(
    records: Mapping[str, TestRecord],
    *,
    collection_errors: Iterable[str] = (),
    notes: RunNotes | None = None,
) -> RunOutcome:
    notes = notes or RunNotes()
    errors = list(collection_errors)
    unexpected = [n for n, r in records.items() if r.unexpected]
    regressions = 0 if notes.regressions_expected else len(notes.regressions)
    ran = sum(1 for r in records.values() if r.result is not State.NOTRUN)
    status = 1
    if errors:
        line = f"{len(errors)} collection error(s): {_first_line(errors[0])}"
    elif notes.aborted and unexpected:
        line = f"run aborted: {_first_line(notes.aborted)}; {len(unexpected)} unexpected"
    elif unexpected or regressions:
        parts = []
        if unexpected:
            by: dict[str, int] = {}
            for n in unexpected:
                r = records[n]
                key = r.final if r.final == "flake" else r.result.value
                if r.final == "pass" or (r.result is State.PASS and r.final is None):
                    key = "fixed"
                by[key] = by.get(key, 0) + 1
            parts.append(f"{len(unexpected)} unexpected (" + ", ".join(
                f"{n} {k}" for k, n in sorted(by.items())) + ")")
        if regressions:
            parts.append(f"{regressions} metric regression(s)")
        line = "failed: " + ", ".join(parts)
    elif ran == 0:
        line = "no subtest ran (nothing selected? check -k, the test lists and the manifest)"
    elif notes.baseline_error:
        line = f"no comparison with the baseline: {_first_line(notes.baseline_error)}"
    else:
        status = 0
        line = f"ok: {ran} subtests, nothing unexpected"
    return RunOutcome(status, unexpected, regressions, line)


def expected_failure(rec: Mapping[str, Any]) -> bool:
    """A results.json record whose failure an expectation rule foresaw
    ("expected": true and a failure state)."""
    return rec.get("expected") is True and failed(str(rec.get("result", "?")))


def outcome_of(data: Mapping[str, Any]) -> RunOutcome:
    """The verdict of a parsed results.json: its "outcome" as the run wrote
    it, else (an older or merged results.json) worked out again from its
    records and comparisons. KeyError, TypeError, ValueError or
    AttributeError on data of the wrong shape."""
    outcome = data.get("outcome")
    if isinstance(outcome, dict) and outcome.get("status") in (0, 1) and "line" in outcome:
        return RunOutcome(int(outcome["status"]), [str(n) for n in outcome.get("unexpected") or []],
                          int(outcome.get("regressions") or 0), str(outcome["line"]))
    run: Mapping[str, Any] = data.get("run") or {}
    records = {n: TestRecord.from_json(n, r) for n, r in data["tests"].items()}
    expected_regr = bool((run.get("options") or {}).get("regressions_expected"))
    regressions = [c.get("key", "?") for c in data.get("comparisons") or []
                   if isinstance(c, dict) and c.get("verdict") == "regression"]
    notes = RunNotes(aborted=run.get("aborted"), regressions=regressions,
                     regressions_expected=expected_regr)
    return run_outcome(records, collection_errors=run.get("collection_errors", []), notes=notes)


def results_json(
    records: Mapping[str, TestRecord],
    run_info: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "format": RESULTS_FORMAT,
        "version": RESULTS_VERSION,
        "run": dict(run_info),
        "tests": {name: rec.to_json() for name, rec in records.items()},
        "totals": totals(records.values()),
    }
    for k, v in (extra or {}).items():
        out.setdefault(k, v)
    return out


def write_results(
    directory: Path,
    records: Mapping[str, TestRecord],
    run_info: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    notes: RunNotes | None = None,
) -> tuple[Path, Path]:
    """RESULTS/results.json and RESULTS/summary.txt; returns their paths.

    extra: more top-level keys of results.json (selection, shard,
    comparisons, outcome...)."""
    directory.mkdir(parents=True, exist_ok=True)
    rj = directory / "results.json"
    st = directory / "summary.txt"
    atomic_write(rj, dumps(results_json(records, run_info, extra)) + "\n")
    errors = run_info.get("collection_errors") or []
    atomic_write(st, render_summary(records.values(), errors, notes))
    return rj, st


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]


def _shown(names: list[str], limit: int = 8) -> str:
    return ", ".join(names[:limit]) + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _by_test(keys: list[str], limit: int = 8) -> list[str]:
    """Metric keys as lines, one a test (BIN@SUB[@DYN]) with its metric names,
    the first `limit` tests, then how many more."""
    tests: dict[str, list[str]] = {}
    for k in keys:
        base, _, node = k.partition(" [")  # a node-scoped metric's " [NODE]" (scope.py)
        test, _, name = base.rpartition(":")
        tests.setdefault(test + (f" [{node}" if node else ""), []).append(name)
    lines = [f"  {t.partition(' [')[0]}: {_shown(names)}"
             + (f" [{t.partition(' [')[2]}" if " [" in t else "")
             for t, names in list(tests.items())[:limit]]
    if len(tests) > limit:
        lines.append(f"  ... {len(tests) - limit} more tests ({len(tests)} tests, "
                     f"{len(keys)} metrics in all)")
    return lines


def render_summary(
    records: Iterable[TestRecord], errors: Iterable[str] = (), notes: RunNotes | None = None
) -> str:
    """Counts by state, then, in this order: why the run stopped early,
    collection errors, the UNEXPECTED results (by state, with their reasons)
    and metric regressions, flakes, expected failures, stale expectation
    rules, skip reasons grouped, other notes. Metrics with no baseline entry
    are listed (grouped by test) after the improvements."""
    notes = notes or RunNotes()
    recs = list(records)
    counts = totals(recs)
    by_severity = sorted((s for s in State), key=lambda s: -s.severity)
    parts = [f"{counts[s.value]} {s.value}" for s in by_severity if counts[s.value]]
    lines = [f"gpuconform: {len(recs)} tests: " + (", ".join(parts) if parts else "none")]
    if notes.aborted:
        lines.append(f"RUN ABORTED: {_first_line(notes.aborted)}")
    errs = list(errors)
    if errs:
        lines.append(f"collection errors: {len(errs)}")
        lines.extend(f"  {_first_line(e)}" for e in errs)
    unexpected = [r for r in recs if r.unexpected]
    regressions = [] if notes.regressions_expected else notes.regressions
    if unexpected or regressions:
        lines.append(f"UNEXPECTED: {len(unexpected) + len(regressions)}")
    groups: dict[str, list[TestRecord]] = {}
    for r in unexpected:
        key = r.result.value
        if r.final == "flake":
            key = "flake (unexpected)"
        elif r.result is State.PASS:
            key = "pass (unexpected)"
        groups.setdefault(key, []).append(r)
    order = [s.value for s in by_severity] + ["flake (unexpected)", "pass (unexpected)"]
    for key in sorted(groups, key=lambda k: order.index(k) if k in order else len(order)):
        lines.append(f"{key}:")
        if key == State.NOTRUN.value:  # often many, for one reason: grouped
            by_reason: dict[str, list[str]] = {}
            for r in groups[key]:
                by_reason.setdefault(_first_line(r.reason) or "(no reason)", []).append(r.name)
            for reason, names in by_reason.items():
                lines.append(f"  {len(names)} test(s): {reason}: {_shown(names)}")
            continue
        for r in groups[key]:
            why = r.reason
            if r.result in (State.PASS, State.SKIP) or r.final == "flake":
                why = r.judgement or r.reason
            lines.append(f"  {r.name}: {_first_line(why) or '(no reason)'}")
    if regressions:
        lines.append("metric regressions:")
        lines.extend(f"  {_first_line(x)}" for x in regressions)
    flakes = [r for r in recs if r.final == "flake" and not r.unexpected]
    if flakes:
        lines.append(f"flakes (expected): {len(flakes)}")
        lines.extend(f"  {r.name}: {_first_line(r.judgement)}" for r in flakes)
    xfail = [r for r in recs if r.expected and r.result.is_failure]
    if xfail:
        lines.append(f"expected failures: {len(xfail)}")
        lines.extend(f"  {r.name}: {r.result.value}: {_first_line(r.reason)}" for r in xfail)
    if notes.regressions_expected and notes.regressions:
        lines.append(f"metric regressions (expected: --regressions-expected): "
                     f"{len(notes.regressions)}")
        lines.extend(f"  {_first_line(x)}" for x in notes.regressions)
    if notes.improvements:
        lines.append(f"metric improvements: {len(notes.improvements)}")
        lines.extend(f"  {_first_line(x)}" for x in notes.improvements)
    if notes.unbaselined:
        lines.append(f"metrics with no baseline entry (never gated): {len(notes.unbaselined)}")
        lines.extend(_by_test(notes.unbaselined))
    if notes.stale_rules:
        lines.append(f"stale expectation rules (matched no test): {len(notes.stale_rules)}")
        lines.extend(f"  {x}" for x in notes.stale_rules)
    skips: dict[str, list[str]] = {}
    for r in recs:
        if r.result is State.SKIP:
            skips.setdefault(_first_line(r.reason) or "(no reason)", []).append(r.name)
    if skips:
        lines.append("skip reasons:")
        for reason, names in sorted(skips.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {reason} [{len(names)}]: {_shown(names)}")
    notrun = [r for r in recs if r.result is State.NOTRUN and not r.unexpected]
    if notrun:
        lines.append(f"notrun: {len(notrun)}: {_shown([r.name for r in notrun])}")
    if notes.baseline_error:
        lines.append(f"BASELINE NOT COMPARED: {_first_line(notes.baseline_error)}")
    if notes.kernel_log:
        lines.append(f"kernel log: {notes.kernel_log}")
    noted = [r for r in recs if r.notes]
    if noted or notes.messages:
        lines.append("notes:")
        lines.extend(f"  {_first_line(m)}" for m in notes.messages)
        for r in noted:
            for n in r.notes[:5]:
                lines.append(f"  {r.name}: {_first_line(n)}")
            if len(r.notes) > 5:
                lines.append(f"  {r.name}: ... {len(r.notes) - 5} more")
    return "\n".join(lines) + "\n"

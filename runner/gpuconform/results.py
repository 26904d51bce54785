"""From a run to a record; records to results.json and a summary.

A TestRecord is one line of the future journal as much as one entry of
results.json: to_json() / from_json() round-trip.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .execute import SubtestRun
from .states import State, Verdict, classify

__all__ = [
    "DynamicRecord",
    "TestRecord",
    "verdict_of",
    "record_of",
    "totals",
    "results_json",
    "write_results",
    "render_summary",
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
        )


def verdict_of(run: SubtestRun) -> Verdict:
    """classify() a run, then weigh what classify() does not see.

    A metrics line that does not validate turns a pass into a fail: metrics
    are never dropped silently.
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
    return v


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
    )


def totals(records: Iterable[TestRecord]) -> dict[str, int]:
    counts = {s.value: 0 for s in State}
    for r in records:
        counts[r.result.value] += 1
    return counts


def results_json(records: Mapping[str, TestRecord], run_info: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "format": RESULTS_FORMAT,
        "version": RESULTS_VERSION,
        "run": dict(run_info),
        "tests": {name: rec.to_json() for name, rec in records.items()},
        "totals": totals(records.values()),
    }


def _atomic_write(path: Path, text: str) -> None:
    """Write path through a temporary file and rename(): never half a file."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_results(
    directory: Path, records: Mapping[str, TestRecord], run_info: Mapping[str, Any]
) -> tuple[Path, Path]:
    """RESULTS/results.json and RESULTS/summary.txt; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    rj = directory / "results.json"
    st = directory / "summary.txt"
    _atomic_write(rj, json.dumps(results_json(records, run_info), indent=1) + "\n")
    errors = run_info.get("collection_errors") or []
    _atomic_write(st, render_summary(records.values(), errors))
    return rj, st


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]


def render_summary(records: Iterable[TestRecord], errors: Iterable[str] = ()) -> str:
    """Counts by state, the non-passing tests with their reasons, skip reasons
    grouped, notes; `errors` (collection errors) first."""
    recs = list(records)
    counts = totals(recs)
    by_severity = sorted((s for s in State), key=lambda s: -s.severity)
    parts = [f"{counts[s.value]} {s.value}" for s in by_severity if counts[s.value]]
    lines = [f"gpuconform: {len(recs)} tests: " + (", ".join(parts) if parts else "none")]
    errs = list(errors)
    if errs:
        lines.append(f"collection errors: {len(errs)}")
        lines.extend(f"  {_first_line(e)}" for e in errs)
    for state in by_severity:
        if state in (State.PASS, State.SKIP) or not counts[state.value]:
            continue
        lines.append(f"{state.value}:")
        for r in recs:
            if r.result is state:
                lines.append(f"  {r.name}: {_first_line(r.reason) or '(no reason)'}")
    skips: dict[str, list[str]] = {}
    for r in recs:
        if r.result is State.SKIP:
            skips.setdefault(_first_line(r.reason) or "(no reason)", []).append(r.name)
    if skips:
        lines.append("skip reasons:")
        for reason, names in sorted(skips.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            shown = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
            lines.append(f"  {reason} [{len(names)}]: {shown}")
    noted = [r for r in recs if r.notes]
    if noted:
        lines.append("notes:")
        for r in noted:
            for n in r.notes[:5]:
                lines.append(f"  {r.name}: {_first_line(n)}")
            if len(r.notes) > 5:
                lines.append(f"  {r.name}: ... {len(r.notes) - 5} more")
    return "\n".join(lines) + "\n"

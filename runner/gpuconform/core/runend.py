"""What a finished run writes: its records in selection order (notrun for the
selected tests that never ran), results.json's "run" and its other keys, the
run's notes, the comparison with the baseline, then results.json and
summary.txt, written once, then report.html; each step guarded so that a
failing one never loses what is already written (the comparison and the
report run in children bounded in time and memory: bounded.py).

The caller gives plain values (RunEnd) and calls the steps in order, handing
in the two steps the products make (the judge of the metrics, the report
writer): the run core knows what they return, not how they are made. What
the steps add (comparisons, outcome, messages, errors) stays on the RunEnd
for the terminal summary.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from .fingerprint import device_ids
from .fmt import one_line
from .options import RunOptions
from .results import RunNotes, RunOutcome, TestRecord, run_outcome, write_results
from .states import State
from .suiteid import suite_id

__all__ = ["Comparison", "Judge", "RunEnd", "ordered_records", "run_info"]


class Comparison(Protocol):
    """One metric of the run judged against its baseline, as the run's end
    uses it: the verdict ("regression", "improvement", "new", ...), why, and
    its entry in results.json's "comparisons"."""

    @property
    def key(self) -> str: ...

    verdict: str
    note: str

    def explain(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


# The judge of a run's metrics: (results.json's "tests", its "fingerprint" and
# "run", the baseline) -> the comparisons. It runs in a forked child.
Judge = Callable[[Mapping[str, Any], Mapping[str, Any], Any], Sequence[Comparison]]

# Each bounded step of the run's end: report.html of a whole H100 run takes a few seconds
# and under 1 GiB, the comparison with the baseline less; far beyond either, it is broken.
STEP_TIMEOUT_S = 600.0
STEP_MEMORY = 16 << 30


def ordered_records(selected: Mapping[str, tuple[str, str | None]],
                    records: Mapping[str, TestRecord], aborted: str | None,
                    judge: Callable[[TestRecord], TestRecord]) -> dict[str, TestRecord]:
    """Records in selection order (selected: name -> (binary, subtest)), notrun
    for the selected that never ran, then the others; judge() gives the ones
    not judged yet their verdict."""
    if aborted:
        why = f"not run: the run aborted ({aborted})"
    else:
        why = "not run (the run stopped before it)"
    out: dict[str, TestRecord] = {}
    for name, (binary, sub) in selected.items():
        rec = records.get(name)
        if rec is None:
            rec = judge(TestRecord(name, binary, sub, State.NOTRUN, reason=why))
        elif rec.expected is None:
            judge(rec)
        out[name] = rec
    for name, rec in records.items():
        if name not in out:
            out[name] = rec if rec.expected is not None else judge(rec)
    return out


# Set by the runner for each run or test: not a knob of the night.
_PER_RUN_ENV = {"GPUCONFORM_RUN_ID", "GPUCONFORM_RUN_TOKEN", "GPUCONFORM_COPIES",
                "GPUCONFORM_DEVICES"}


def run_info(*, start: float, args: Sequence[str], run_id: str, opts: RunOptions, platform: str,
             exitstatus: int, collection_errors: Sequence[str], aborted: str | None,
             resumed: Mapping[str, Any] | None,
             soak_seconds: Mapping[str, float] | None = None,
             node: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """results.json's "run": the run's facts and this machine's (its end: now)."""
    u = os.uname()
    info: dict[str, Any] = {
        "start": start,
        "end": time.time(),
        "argv": list(sys.argv),
        "args": list(args),
        "run_id": run_id,
        "timeout": opts.timeout,
        "grace": opts.grace,
        "retries": opts.retries,
        "options": opts.to_json(),
        "hostname": socket.gethostname(),
        "devices": device_ids(),
        "kernel": f"{u.sysname} {u.release} {u.machine}",
        "platform": platform,
        "suite": suite_id(),
        # the knobs a night was run with (a benchmark's slowdown, a scratch dir): history
        # says which changed between two nights
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith("GPUCONFORM_") and k not in _PER_RUN_ENV},
        "pytest_exitstatus": int(exitstatus),
        "collection_errors": list(collection_errors),
        "aborted": aborted,
    }
    if node is not None:
        info["node"] = dict(node)  # placement.NodePlan: the run's GPUs, jobs, GPUs lost
    if resumed is not None:
        info["resumed"] = dict(resumed)
    if opts.level is not None:
        info["level"] = {"name": opts.level, "duration_s": opts.duration,
                         "soak_seconds": dict(soak_seconds or {})}
    return info


@dataclass
class RunEnd:
    """A finished run as plain data: what results.json, summary.txt and the
    terminal summary are made of."""

    records: dict[str, TestRecord]  # ordered_records()
    collection_errors: list[str]
    selection: list[str]  # before sharding
    shard: list[int] | None
    fingerprint: dict[str, str] | None
    expectation_files: list[str]
    platform: str
    stale_rules: list[str]  # Rule.describe() of the rules no test matched
    kernel_log: dict[str, Any]  # KernelWatch.to_json(), or not watched at all
    aborted: str | None
    regressions_expected: bool
    messages: list[str]  # run-level notes for the summary
    errors: list[str]  # one-line errors printed at the end
    baseline_path: Path | None = None
    baseline_error: str | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    outcome: RunOutcome | None = None  # set by each write()
    written: tuple[Path, Path] | None = None  # results.json, summary.txt

    @property
    def complete(self) -> bool:
        """Every test has a result (none notrun)."""
        return all(r.result is not State.NOTRUN for r in self.records.values())

    def notes(self) -> RunNotes:
        regressions = [f"{c.key}: {c.explain()}" for c in self.comparisons
                       if c.verdict == "regression"]
        improvements = [f"{c.key}: {c.explain()}" for c in self.comparisons
                        if c.verdict == "improvement"]
        unbaselined = [c.key + (" (its unit or direction changed)" if c.note else "")
                       for c in self.comparisons if c.verdict == "new"]
        messages = list(self.messages)
        if self.comparisons:
            by: dict[str, int] = {}
            for c in self.comparisons:
                by[c.verdict] = by.get(c.verdict, 0) + 1
            messages.append(f"baseline {self.baseline_path}: {len(self.comparisons)} metrics: "
                            + ", ".join(f"{n} {v}" for v, n in sorted(by.items())))
        messages.extend(self.errors)
        return RunNotes(
            baseline_error=self.baseline_error,
            aborted=self.aborted,
            stale_rules=list(self.stale_rules),
            kernel_log=self.kernel_log.get("note"),
            regressions=regressions,
            improvements=improvements,
            unbaselined=unbaselined,
            regressions_expected=self.regressions_expected,
            messages=messages,
        )

    def _extra(self, notes: RunNotes) -> dict[str, Any]:
        """results.json's keys besides "run", "tests" and "totals"; the outcome."""
        self.outcome = run_outcome(self.records, collection_errors=self.collection_errors,
                                   notes=notes)
        return {
            "selection": list(self.selection),
            "shard": self.shard,
            "fingerprint": self.fingerprint,
            "expectations": {
                "files": list(self.expectation_files),
                "platform": self.platform,
                "stale": notes.stale_rules,
            },
            "kernel_log": self.kernel_log,
            "baseline": {"path": str(self.baseline_path) if self.baseline_path else None,
                         "error": self.baseline_error},
            "comparisons": [c.to_json() for c in self.comparisons],
            "outcome": self.outcome.to_json(),
        }

    def write(self, directory: Path, info: Mapping[str, Any]) -> tuple[Path, Path]:
        """results.json and summary.txt (info: run_info(); its "end" is when
        this is written); OSError when they cannot be."""
        notes = self.notes()
        self.written = write_results(directory, self.records, {**info, "end": time.time()},
                                     self._extra(notes), notes)
        return self.written

    def compare(self, info: Mapping[str, Any], baseline: Any, judge: Judge) -> None:
        """The metrics judged against the baseline by judge, before
        results.json is written (once, with them), in a child bounded as the
        report is; a comparison that fails is a baseline error, said in
        results.json too."""
        try:
            from .bounded import run_bounded

            tests = {n: r.to_json() for n, r in self.records.items()}
            data = {"fingerprint": self.fingerprint, "run": dict(info)}
            self.comparisons = list(run_bounded(judge, tests, data, baseline,
                                                timeout_s=STEP_TIMEOUT_S,
                                                memory_bytes=STEP_MEMORY))
        except Exception as e:  # noqa: BLE001 - results.json without comparisons
            self.comparisons = []
            self.baseline_error = (f"baseline comparison with {self.baseline_path} failed: "
                                   f"{one_line(e, 300) or type(e).__name__}")

    def report(self, directory: Path, write: Callable[[Path], Path]) -> None:
        """report.html from the results.json written (write(directory): its
        path), in a child bounded in time and memory (STEP_TIMEOUT_S,
        STEP_MEMORY); a failure is one error line."""
        try:
            from .bounded import run_bounded

            self.messages.append("report: " + str(run_bounded(
                write, directory, timeout_s=STEP_TIMEOUT_S, memory_bytes=STEP_MEMORY)))
        except Exception as e:  # noqa: BLE001 - the results stay; the report is extra
            self.errors.append(f"report.html not written: {one_line(e, 300) or type(e).__name__}")


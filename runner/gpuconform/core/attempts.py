"""One test run to its record: a skip rule's record without running it, or its
attempts (1 + the retries expectations.should_retry allows), the kernel read
before the first and between attempts; a kernel abort ends the test where it
is seen and becomes the reason the run stops.

The caller gives what a run needs as plain values and two callables (one
attempt, the kernel since the previous read) and gets back the record and the
abort reason: journaling, the progress line and stopping pytest stay its job.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from .catalogue import Catalogue
from .execute import ExecOptions, run_subtest
from .expectations import Kind, Rule, should_retry
from .results import TestRecord, judged, record_of, record_of_attempts, verdict_of
from .states import State

__all__ = ["TestRun", "Attempt", "KernelGap", "skip_record", "run_test", "run_attempt"]

# One attempt, by its number (1-based): its record, and the abort reason when
# the kernel said the run must stop (the record then ends ABORT).
Attempt = Callable[[int], "tuple[TestRecord, str | None]"]
# The kernel log and taint since the previous read: (abort reason, notes).
KernelGap = Callable[[], "tuple[str | None, list[str]]"]


@dataclass
class TestRun:
    """What one test's run ended in."""

    __test__ = False  # not a pytest test class

    record: TestRecord  # judged
    abort: str | None = None  # why the run stops, seen before or during this test
    journaled: bool = True  # False: never started (the run aborted first): a resume runs it


def skip_record(name: str, binary: str, subtest: str | None,
                rule: Rule | None) -> TestRecord | None:
    """The record of a test its skip rule keeps from running; None: it runs."""
    if rule is None or rule.kind is not Kind.SKIP:
        return None
    rec = TestRecord(name, binary, subtest, State.SKIP,
                     reason=rule.comment or f"skipped by the rule {rule.describe()}")
    judged(rec, rule, [])
    rec.notes.append(f"not run: expectation rule {rule.describe()}")
    return rec


def run_test(name: str, binary: str, subtest: str | None, rule: Rule | None, retries: int,
             attempt: Attempt, gap: KernelGap, aborted: bool = False) -> TestRun:
    """A test under its rule: skipped by a skip rule; else not started when the
    kernel aborts the run before it; else attempts while should_retry() says
    so, the run not aborted (aborted: already before this test) and the kernel
    quiet between them. Its attempts make one record (results.record_of_attempts),
    the kernel's notes from before and between them first."""
    skipped = skip_record(name, binary, subtest, rule)
    if skipped is not None:
        return TestRun(skipped)
    abort, notes = gap()
    if abort is not None:
        rec = TestRecord(name, binary, subtest, State.NOTRUN,
                         reason=f"not run: the run aborted: {abort}")
        rec.notes.extend(notes)
        return TestRun(judged(rec, rule), abort, journaled=False)
    attempts: list[TestRecord] = []
    while True:
        a, abort = attempt(len(attempts) + 1)
        attempts.append(a)
        if aborted or abort is not None or not should_retry(a.result.value, len(attempts),
                                                            retries, rule):
            break
        abort, more = gap()
        notes += more
        if abort is not None:
            break
    return TestRun(record_of_attempts(attempts, rule, notes), abort)


def run_attempt(name: str, binary: Path, subtest: str, number: int, options: ExecOptions,
                env: Mapping[str, str], timeout: float, *,
                on_spawn: Callable[[str, int, int, str], None] | None = None,
                after: Callable[[TestRecord], str | None] | None = None,
                catalogue: Catalogue | None = None
                ) -> tuple[TestRecord, str | None]:
    """Attempt `number` of a test: `BINARY --run-subtest SUBTEST` (execute),
    classified (its metrics against catalogue, when given), its record.
    on_spawn(name, number, pid, token) once the process exists (the
    journal's start line); after(record): the kernel's window of the test
    weighed into the record, the abort reason if any."""
    token = uuid.uuid4().hex

    def spawned(pid: int) -> None:
        if on_spawn is not None:
            on_spawn(name, number, pid, token)

    run = run_subtest(binary, subtest, options, env_extra=env, timeout_s=timeout, token=token,
                      on_spawn=spawned)
    rec = record_of(name, run, verdict_of(run, catalogue))
    rec.timeout = timeout
    abort = after(rec) if after is not None else None
    return rec, (f"{name}: {abort}" if abort is not None else None)

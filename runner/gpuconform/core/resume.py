"""Resume: taking over the results directory of a run that died. Its journal's
records are kept; the test that was running becomes incomplete, after the
processes it left behind are killed (found by the run's id, the test's token
and its process group) and its temporary directory is removed (runtmp.py). A
journal that cannot take the resume's lines (a disk still full) is a
ResumeError naming the file system: nothing runs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .execute import RUN_TOKEN_ENV, StrayProcess, kill_orphans
from .journal import (
    JOURNAL_NAME,
    RUN_ID_ENV,
    Journal,
    JournalError,
    JournalState,
    JournalWriteError,
    StartLine,
    boot_id,
    read_journal,
    repair_journal,
)
from .fsfault import remedy, write_fault
from .results import TestRecord
from .runtmp import remove_run_tmp, run_tmp_path
from .states import State

__all__ = ["ResumeError", "Resumed", "take_over"]


class ResumeError(Exception):
    """A journal that cannot be taken over; str() is one line."""


@dataclass
class Resumed:
    journal: Journal  # open, locked: the resumed run appends to it
    records: dict[str, TestRecord]  # the kept ones and the incomplete ones
    info: dict[str, Any]  # run.json's "resumed"
    messages: list[str] = field(default_factory=list)  # for the summary


def take_over(resume_dir: Path, run_json: Mapping[str, Any], run_id: str,
              judge: Callable[[TestRecord], TestRecord]) -> Resumed:
    """Lock resume_dir's journal, keep its records, make the test that was
    running incomplete (judged by judge, journaled) after killing what it left."""
    path = resume_dir / JOURNAL_NAME
    journal: Journal | None = None
    try:
        journal = Journal(path)
        state = read_journal(path)
        repair_journal(state)
        records = _kept(path, state)
    except (JournalError, OSError, ResumeError) as e:
        if journal is not None:
            journal.close()
        if isinstance(e, OSError):  # repairing a torn tail
            raise ResumeError(f"{write_fault(path, e)}: nothing was run; {remedy(e.errno)}, "
                              f"then `gpuconform resume {resume_dir}`") from None
        raise ResumeError(str(e)) from None
    orphans = kill_orphans([f"{RUN_ID_ENV}={run_id}"] +
                           [f"{RUN_TOKEN_ENV}={s.token}" for s in state.running if s.token],
                           [s.pgid for s in state.running if s.pgid])
    removed = _remove_tmp(run_json, run_id)
    rebooted = bool(run_json.get("boot_id")) and run_json.get("boot_id") != boot_id()
    incomplete: list[str] = []
    info = {"incomplete": incomplete, "kept": len(state.records), "torn": state.torn,
            "orphans": [o.describe() for o in orphans], "rebooted": rebooted,
            "tmp_removed": removed}
    try:
        for s in state.running:
            if s.test in incomplete:  # another copy of it (one a GPU): one record a test
                continue
            rec = judge(_incomplete(s, resume_dir, orphans, rebooted))
            journal.result(s.test, rec.to_json())
            records[s.test] = rec
            incomplete.append(s.test)
        journal.event("resume", **info)
    except JournalWriteError as e:
        journal.close()
        raise ResumeError(f"{e}: nothing was run; {remedy(e.errno)}, then "
                          f"`gpuconform resume {resume_dir}`") from None
    messages = _messages(resume_dir, state, incomplete, orphans)
    messages.extend(f"resume removed the dead run's temporary files {p}" for p in removed)
    return Resumed(journal, records, info, messages)


def _remove_tmp(run_json: Mapping[str, Any], run_id: str) -> list[str]:
    """The dead run's temporary directory (runtmp.py) removed, where run.json
    says it was and where this resume's TMPDIR puts it: the paths removed."""
    places = [run_json.get("tmp_dir"), str(run_tmp_path(run_id))]
    removed: list[str] = []
    for p in dict.fromkeys(x for x in places if isinstance(x, str)):
        if remove_run_tmp(p, run_id):
            removed.append(p)
    return removed


def _kept(path: Path, state: JournalState) -> dict[str, TestRecord]:
    records: dict[str, TestRecord] = {}
    for name, obj in state.records.items():
        try:
            records[name] = TestRecord.from_json(name, obj)
        except (KeyError, TypeError, ValueError) as e:
            raise ResumeError(f"{path}: record of {name}: {type(e).__name__}: {e}") from None
    return records


def _incomplete(s: StartLine, resume_dir: Path, orphans: list[StrayProcess], rebooted: bool) -> TestRecord:
    """The record of a test the dead run was running (s: a journal start line)."""
    mine = [o for o in orphans if not o.escaped]
    if rebooted:
        fate = "the machine rebooted since"
    elif s.pgid and mine:
        fate = (f"its orphaned process group {s.pgid} was killed by resume "
                f"({len(mine)} process(es): " + ", ".join(o.describe() for o in mine[:3]) + ")")
    else:
        fate = f"no process of its group {s.pgid} was left"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.time)) if s.time else "?"
    binary, _, sub = s.test.partition("@")
    copy = f", its copy on gpu{s.gpu}" if s.gpu is not None else ""
    rec = TestRecord(s.test, binary, sub or None, State.INCOMPLETE,
                     reason=f"the runner stopped while this test was running (attempt "
                     f"{s.attempt}{copy}, started {when}); {fate}")
    rec.notes.append(f"resumed from {resume_dir}: {JOURNAL_NAME} line {s.line}")
    return rec


def _messages(resume_dir: Path, state: JournalState, incomplete: list[str],
              orphans: list[StrayProcess]) -> list[str]:
    out = [f"resumed {resume_dir}: {len(state.records)} results kept, "
           f"{len(incomplete)} incomplete"]
    if state.torn:
        out.append(f"journal: {state.torn}")
    out.extend(f"journal: {d}" for d in state.duplicates)
    escaped = [o for o in orphans if o.escaped]
    if escaped:
        out.append("resume killed processes the dead run left outside its test groups: "
                   + ", ".join(o.describe() for o in escaped[:5]))
    return out

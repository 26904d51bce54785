"""A new run's results directory, checked before anything runs or is written:
it must not hold a run already, and it must be creatable (its nearest existing
parent writable) or writable. The run itself then claims it (claim_results_dir:
journal.Journal with new=True), which is what decides between two runs started
at once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .atomic import fsync_dir
from .fsfault import fault_detail, filesystem_of
from .journal import JOURNAL_NAME, Journal, JournalError, holds_a_run, write_run_json
from .runtmp import make_run_tmp, remove_run_tmp

__all__ = ["ResultsDirError", "check_results_dir", "claim_results_dir"]


class ResultsDirError(Exception):
    """Why a run cannot start in a results directory; str() is one line."""


def _holds_a_run(results: Path) -> str | None:
    """The file that says results holds a run (an empty journal without
    run.json is a start that died at once: it holds nothing)."""
    journal = results / JOURNAL_NAME
    if journal.exists() and holds_a_run(journal):
        return JOURNAL_NAME
    return "results.json" if (results / "results.json").exists() else None


def _why_not_writable(path: Path) -> str:
    try:
        ro = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        ro = False
    fs = filesystem_of(path)
    where = f" ({fs[0]} {fs[1]})" if fs is not None else ""
    return ("read-only file system" if ro else "permission denied") + where


def check_results_dir(results: Path) -> None:
    """ResultsDirError when a new run cannot start in results; writes nothing."""
    held = _holds_a_run(results)
    if held is not None:
        raise ResultsDirError(f"{results} already holds a run ({held}): give another --results, "
                              f"or continue it with: gpuconform resume {results}")
    existing = results
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ResultsDirError(f"results directory {results}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        verb = "written" if existing == results else f"created ({existing} cannot be written)"
        raise ResultsDirError(f"results directory {results}: cannot be {verb}: "
                              f"{_why_not_writable(existing)}")


def _remove_empty(made: list[Path]) -> None:
    """The directories a failed start made, removed (deepest first) while empty."""
    for p in made:
        try:
            p.rmdir()
        except OSError:
            return


def claim_results_dir(d: Path, run_id: str, run_json: dict[str, Any]) -> tuple[Journal, Path]:
    """A new run's results directory d made its own: created, its journal
    created and locked first (journal.Journal(new=True): of two runs started
    into one directory, one wins and the other writes nothing), then the
    run's temporary directory (runtmp.py, named in run_json as "tmp_dir") and
    run.json. Returns the journal and that directory; ResultsDirError, one
    line, when d cannot be had (what this made undone)."""
    made = [p for p in (d, *d.parents) if not p.exists()]
    try:
        d.mkdir(parents=True, exist_ok=True)
        fsync_dir(d.parent)  # the directory itself survives power loss
    except OSError as e:
        _remove_empty(made)
        raise ResultsDirError(f"{e.filename or d}: {fault_detail(d, e)}") from None
    try:
        journal = Journal(d / JOURNAL_NAME, new=True)
    except JournalError as e:
        _remove_empty(made)
        raise ResultsDirError(str(e)) from None
    run_tmp: Path | None = None
    try:
        run_tmp = make_run_tmp(run_id)
        run_json["tmp_dir"] = str(run_tmp)
        write_run_json(d, run_json)
    except OSError as e:
        journal.discard()
        if run_tmp is not None:
            remove_run_tmp(run_tmp, run_id)
        _remove_empty(made)
        where = Path(e.filename) if e.filename else d / "run.json"
        raise ResultsDirError(f"{where}: {fault_detail(where, e)}") from None
    return journal, run_tmp

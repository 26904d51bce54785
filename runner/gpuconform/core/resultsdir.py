"""A new run's results directory, checked before anything runs or is written:
it must not hold a run already, and it must be creatable (its nearest existing
parent writable) or writable. The run itself then claims it (journal.Journal
with new=True), which is what decides between two runs started at once."""

from __future__ import annotations

import os
from pathlib import Path

from .fsfault import filesystem_of
from .journal import JOURNAL_NAME, holds_a_run

__all__ = ["ResultsDirError", "check_results_dir"]


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

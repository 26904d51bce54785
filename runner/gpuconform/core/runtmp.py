"""The run's temporary directory: TMPDIR/gpuconform-run-RUN_ID.

Every test's temporary files live in it: its output files unnamed (O_TMPFILE),
its metrics file under a fresh name of its own (execute.py's private_tmp),
made by the test when it records a metric. The directory's name carries the
run id, which a resume keeps: so the resume of a runner that was killed
(SIGKILL leaves whatever was being written) finds the dead run's directory and
removes it, once the dead run's processes are killed; and a run removes its
own when it ends.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

__all__ = ["PREFIX", "run_tmp_path", "make_run_tmp", "remove_run_tmp"]

PREFIX = "gpuconform-run-"


def run_tmp_path(run_id: str, root: str | Path | None = None) -> Path:
    """Where run run_id keeps its temporary files (root: default TMPDIR)."""
    return Path(root if root is not None else tempfile.gettempdir()) / f"{PREFIX}{run_id}"


def make_run_tmp(run_id: str) -> Path:
    """The run's directory, new and empty (a dead run's one of that id is
    removed first); OSError when it cannot be made."""
    path = run_tmp_path(run_id)
    remove_run_tmp(path, run_id)
    path.mkdir(mode=0o700)
    return path


def remove_run_tmp(path: str | Path, run_id: str) -> bool:
    """Remove path when it is run run_id's directory (its name says so: never
    anything else, whatever run.json holds); True when something was removed."""
    p = Path(path)
    if p.name != f"{PREFIX}{run_id}" or not run_id or not p.is_dir() or p.is_symlink():
        return False
    shutil.rmtree(p, ignore_errors=True)
    return True

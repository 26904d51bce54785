"""The one way the runner writes a file: whole or not at all."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

__all__ = ["atomic_write", "fsync_dir"]


def atomic_write(path: Path, text: str) -> None:
    """Write path through a temporary file, fsync and rename(): never half a file.

    The temporary name is unique (pid and a random part) and created with
    O_EXCL; the directory is fsync'd after the rename so that it survives too.
    OSError propagates (the temporary file removed); callers name the file.
    """
    path = Path(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
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
    fsync_dir(path.parent)



def fsync_dir(path: Path) -> None:
    """fsync a directory, so that a rename or a new file in it survives power loss."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

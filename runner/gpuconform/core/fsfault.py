"""A write that failed, said in one line that names the file system it hit and
what is wrong with it: "results/x: no space left on device (tmpfs /mnt/t,
0 KiB free)". The mount is the one /proc/self/mountinfo gives for the path
(the longest mount point above it, as df finds it)."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

__all__ = ["FULL_ERRNOS", "fault_detail", "filesystem_of", "free_kib", "write_fault", "remedy"]

# The errors a user clears by making room (a full disk, a quota reached).
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
MOUNTINFO = "/proc/self/mountinfo"


def _unescape(field: str) -> str:
    r"""mountinfo's octal escapes (\040 for a space) undone."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def filesystem_of(path: Path, mountinfo: str = MOUNTINFO) -> tuple[str, str] | None:
    """(file system type, mount point) of the mount holding path; None when
    mountinfo cannot be read."""
    target = os.path.realpath(_existing(path))
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    best: tuple[str, str] | None = None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        mount = _unescape(fields[4])
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) >= len(best[1])):
            best = (tail[0], mount)  # a later mount on the same point hides the earlier
    return best


def _existing(path: Path) -> Path:
    """path, or the nearest of its parents that exists."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def free_kib(path: Path) -> int | None:
    """KiB an unprivileged writer may still use there (df's Avail); None when unknown."""
    try:
        st = os.statvfs(_existing(path))
    except OSError:
        return None
    return st.f_bavail * st.f_frsize // 1024


def fault_detail(path: Path, err: OSError) -> str:
    """What went wrong and on which file system: "no space left on device
    (tmpfs /mnt/t, 0 KiB free)"."""
    what = (err.strerror or str(err) or type(err).__name__).lower()
    where = []
    fs = filesystem_of(path)
    if fs is not None:
        where.append(f"{fs[0]} {fs[1]}")
    free = free_kib(path)
    if free is not None:
        where.append(f"{free} KiB free")
    return what + (f" ({', '.join(where)})" if where else "")


def write_fault(path: Path, err: OSError) -> str:
    """One line: path, what went wrong, and the file system (type, mount
    point, free space) it went wrong on."""
    return f"{path}: {fault_detail(path, err)}"


def remedy(err_no: int | None) -> str:
    """What the user does before trying again."""
    return "free space" if err_no in FULL_ERRNOS else "fix the file system"

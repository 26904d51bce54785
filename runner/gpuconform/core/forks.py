"""The kernel's count of tasks created since boot: was anything forked meanwhile?

/proc/stat's "processes" line is the kernel's total_forks: copy_process()
adds one for every task it creates (process or thread, in any pid namespace,
kernel threads too), in the same tasklist_lock section that makes the task
visible. So when the count read after a window is exactly one more than the
count read before it, and the runner itself created one process in that
window, no other task was created anywhere on the machine meanwhile: nothing
the runner's child could have forked exists. Any other answer (more, fewer,
none readable) proves nothing, and the caller looks the slow way.
"""

from __future__ import annotations

import os

__all__ = ["STAT_PATH", "fork_count", "parse_fork_count"]

STAT_PATH = "/proc/stat"
_KEY = b"\nprocesses "
_CHUNK = 1 << 16


def parse_fork_count(data: bytes) -> int | None:
    """The number on /proc/stat's "processes" line of data (the text read so
    far); None when data holds no whole such line."""
    if data.startswith(_KEY[1:]):
        start = len(_KEY) - 1
    else:
        at = data.find(_KEY)
        if at < 0:
            return None
        start = at + len(_KEY)
    end = data.find(b"\n", start)
    if end < 0:
        return None
    field = data[start:end].strip()
    return int(field) if field.isdigit() else None


def fork_count(path: str = STAT_PATH) -> int | None:
    """total_forks now, or None when path cannot be read or lacks the line."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    data = b""
    try:
        while True:  # the line is past the per-CPU and interrupt lines: stop once it is read
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return parse_fork_count(data)
            data += chunk
            n = parse_fork_count(data)
            if n is not None:
                return n
    except OSError:
        return None
    finally:
        os.close(fd)

"""The values of a run's options: each option's parser and check, one-line
errors (InputError), and the argparse type made of a parser (argtype)."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
import re
import stat
import tempfile
from typing import Any

from .shard import ShardError
from .testlist import check_test_glob

__all__ = [
    "InputError", "argtype", "check_kernel_source", "check_output_file", "check_scratch_dir", "non_negative_arg",
    "parse_devices", "parse_jobs", "parse_retries", "parse_timeout_override", "positive_arg",
    "seconds", "seconds_or_zero",
]

_DEVICES_RE = re.compile(r"[A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*\Z")


class InputError(Exception):
    """A bad option value or input file; str() is one line."""


def seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"not a positive number of seconds: {text}")
    return value


def seconds_or_zero(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a number of seconds >= 0: {text}")
    return value


def parse_timeout_override(text: str) -> tuple[str, float]:
    """'host_io@direct-*=120' -> ('host_io@direct-*', 120.0)."""
    glob, eq, secs = text.rpartition("=")
    if not eq or not glob:
        raise InputError(f"--timeout-override {text[:80]!r}: expected GLOB=SECONDS")
    problem = check_test_glob(glob)
    if problem is not None:
        raise InputError(f"--timeout-override {text[:80]!r}: {problem}")
    try:
        value = seconds(secs)
    except ValueError:
        raise InputError(
            f"--timeout-override {text[:80]!r}: {secs[:40]!r} is not a positive number of seconds"
        ) from None
    return glob, value


def parse_devices(text: str) -> str:
    if not _DEVICES_RE.match(text):
        raise InputError(f"--devices {text[:80]!r}: expected a comma-separated list of device "
                         "indexes or UUIDs (0,1 or GPU-1234...)")
    return text


def check_scratch_dir(path: str) -> str:
    """--scratch-dir's directory, absolute, once a file could be created (and
    removed) there: InputError naming it otherwise."""
    p = os.path.abspath(path)
    try:
        st = os.stat(p)
    except OSError as e:
        raise InputError(f"--scratch-dir {p}: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"--scratch-dir {p}: not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix="gpuconform-probe-", dir=p)
    except OSError as e:
        raise InputError(f"--scratch-dir {p}: not writable: {e.strerror}") from None
    os.close(fd)
    os.unlink(probe)
    return p


def check_output_file(option: str, path: str | None) -> None:
    """A file the run will write at its end (--openmetrics): its directory
    must exist and be writable now, and the path must not be a directory;
    InputError naming the option and the path otherwise, before anything runs."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{option} {path}: is a directory, not a file to write")
    if not p.parent.is_dir():
        raise InputError(f"{option} {path}: no directory {p.parent}")
    if not os.access(p.parent, os.W_OK | os.X_OK):
        raise InputError(f"{option} {path}: {p.parent} is not writable")


def check_kernel_source(option: str, path: str) -> None:
    """A kernel log or taint file given by name must be readable: InputError
    naming the option and the path otherwise. (Unreadable defaults, /dev/kmsg
    for a user, stay a note of the run.) A FIFO is not opened: a reader's open
    would meet its writer."""
    try:
        st = os.stat(path)
        if stat.S_ISFIFO(st.st_mode):
            if not os.access(path, os.R_OK):
                raise PermissionError(13, os.strerror(13))
            return
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, os.strerror(21))
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
    except OSError as e:
        raise InputError(f"{option} {path}: cannot be read: {e.strerror or e} (give one that "
                         f"can, or {option} off)") from None


def parse_jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise InputError(f"--jobs {text[:40]!r}: not a whole number") from None
    if n < 1:
        raise InputError(f"--jobs {n}: must be 1 or more")
    return n


def parse_retries(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise InputError(f"--retries {text[:40]!r}: not a whole number") from None
    if not 0 <= n <= 100:
        raise InputError(f"--retries {n}: must be 0..100")
    return n


def argtype(fn: Any, name: str) -> Any:
    """An InputError-raising parser as an argparse type (its message shown)."""
    def conv(text: str) -> Any:
        try:
            return fn(text)
        except (InputError, ShardError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    conv.__name__ = name
    return conv


seconds_or_zero.__name__ = "seconds"


def positive_arg(text: str) -> float:
    """--timeout's argparse type: a positive number of seconds."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text}")
    return v


def non_negative_arg(text: str) -> float:
    """--grace's argparse type: a number of seconds >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be >= 0 seconds: {text}")
    return v

"""The files a test binary's stdout and stderr go to: unnamed, one pair a run.

Each file is made as tempfile.TemporaryFile makes it (O_TMPFILE in the given
directory, else a name unlinked at once) and kept as a bare descriptor: no
name in a directory, nothing left behind if the runner dies. Making such a
file and dropping it (its last close) is inode work in the file system,
which a busy file system can make cost more than a trivial test takes: a
Spares makes the next pair and drops the used ones while a test runs, when
the runner only waits. Every run still writes into files of its own, that
no other run wrote in: a process a test left behind (unkillable, or never
found) writes into its own test's files, never into a later test's.
"""

from __future__ import annotations

import os
import tempfile
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["Pair", "Spares", "unnamed_file", "unnamed_files"]

Pair = tuple[int, int]  # (stdout, stderr) descriptors


def unnamed_file(directory: str | None) -> int:
    """A read-write file without a name in directory (default: TMPDIR)."""
    where = directory if directory is not None else tempfile.gettempdir()
    try:
        # O_EXCL: it can never be linked into the directory (tempfile's flags)
        return os.open(where, os.O_RDWR | os.O_TMPFILE | os.O_EXCL | os.O_NOFOLLOW
                       | os.O_CLOEXEC, 0o600)
    except (AttributeError, OSError):  # no O_TMPFILE here: a name, unlinked
        pass
    fd, path = tempfile.mkstemp(dir=where)
    try:
        os.unlink(path)
    except OSError:
        os.close(fd)
        raise
    return fd


def _make_pair(directory: str | None) -> Pair:
    fo = unnamed_file(directory)
    try:
        return fo, unnamed_file(directory)
    except BaseException:
        os.close(fo)
        raise


def _close_pair(pair: Pair) -> None:
    for fd in pair:
        try:
            os.close(fd)
        except OSError:
            pass


@contextmanager
def unnamed_files(directory: str | None) -> Iterator[Pair]:
    """A new pair, closed on the way out."""
    pair = _make_pair(directory)
    try:
        yield pair
    finally:
        _close_pair(pair)


class Spares:
    """Pairs of unnamed files in one directory, made ahead of need.

    take() hands out a pair never used (the spare, else one made now: its
    OSError is the caller's); retire() takes it back once its run is read;
    refill(), called while a test runs, closes the retired pairs and makes
    the next spare (a failure there is left for take() to meet). The copies
    of a test run side by side: every method may be called from any thread.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._spare: Pair | None = None
        self._retired: list[Pair] = []

    def take(self) -> Pair:
        with self._lock:
            pair, self._spare = self._spare, None
        return pair if pair is not None else _make_pair(self.directory)

    def retire(self, pair: Pair) -> None:
        with self._lock:
            self._retired.append(pair)

    def refill(self) -> None:
        with self._lock:
            retired, self._retired = self._retired, []
            need = self._spare is None
        for pair in retired:
            _close_pair(pair)
        if not need:
            return
        try:
            pair = _make_pair(self.directory)
        except OSError:
            return
        with self._lock:
            if self._spare is None:
                self._spare, pair = pair, None
        if pair is not None:
            _close_pair(pair)

    def close(self) -> None:
        """Every pair closed (the run's end); take() still works after it."""
        with self._lock:
            pairs = self._retired + ([self._spare] if self._spare is not None else [])
            self._retired, self._spare = [], None
        for pair in pairs:
            _close_pair(pair)

"""The run journal, run.json, and what resuming a dead run needs.

RESULTS/journal.jsonl: one JSON object a line, appended with one write() and
fsync'd before the runner goes on (the directory is fsync'd when the file is
created), so what the journal says survives the runner and the machine dying:

    {"event":"start","test":T,"attempt":1,"pid":P,"pgid":P,"token":K,"time":S,"node":N[,"gpu":G]}
        written as soon as the test's process exists (pid = its process group =
        its session), before the runner waits for it; N is where it runs (the
        Slurm node's name in a Slurm job, else this host's short name: a
        fleet's resumed shard knows where each of its tests ran); a test run
        once per GPU (placement.py) has a start line per copy, G its GPU's
        index, the copies running side by side;
    {"event":"result","test":T,"record":{...}}
        the test's final record (results.py TestRecord.to_json()), after its
        last attempt; a skip by an expectation rule has no start line;
    {"event":"abort","test":T,"reason":R}        the run stops after T
    {"event":"resume","time":S,...}              `gpuconform resume` took over
    {"event":"end","time":S,"complete":B}        results.json was written

A test with a start line (of any copy) and no result line after it was running when the
runner stopped: resume records it as incomplete (appending that record, so a
second resume keeps it). Its processes may outlive the runner (a SIGKILL of
the runner does not reach the test's own session): resume first kills every
process whose environment carries the run's GPUCONFORM_RUN_ID or the start
line's GPUCONFORM_RUN_TOKEN, and the start line's process group (pgid) as a
whole when one of its members does (execute.kill_orphans). The environment
check is what makes the pgid safe to use: after a reboot the same number may
belong to a stranger. A death between fork() and the fsync of the start line
leaves no start line: that test simply runs again, and its orphan is still
found by GPUCONFORM_RUN_ID.

The runner holds an exclusive flock() on the journal while it runs: the
kernel drops it when the process dies (even of SIGKILL), so resume can tell a
dead run from a live one. A new run creates the journal with O_EXCL, then
locks it, before it writes anything else in the directory: of two runs started
into one directory at once, exactly one owns it, and the other writes nothing.

A line the journal cannot take (a full disk, a quota, an I/O error) is cut
away again and the journal takes no more (JournalWriteError, one line naming
the file system): the runner stops, and what the journal holds stays whole
for a resume.

The check (is_locked) takes the same lock on a
descriptor opened the same way, for writing: a fleet's results directory is on
NFS, where an exclusive flock() needs the file open for writing (flock(2)).

RESULTS/run.json (written once the selection is known, before the first test)
holds what resume needs to go on exactly as the run would have: the manifest,
the options, the selection before and after sharding, the run id every test
process carries in its environment (GPUCONFORM_RUN_ID), the boot id.

A torn last line (power loss in the middle of a write) is dropped and
reported; resume truncates it away before appending. A bad line anywhere else
is an error naming the file and line: the journal is left as it is.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .atomic import atomic_write, fsync_dir
from .fsfault import write_fault

__all__ = [
    "JOURNAL_NAME",
    "RUN_NAME",
    "RUN_FORMAT",
    "RUN_ID_ENV",
    "JournalError",
    "JournalWriteError",
    "Journal",
    "StartLine",
    "JournalState",
    "read_journal",
    "repair_journal",
    "write_run_json",
    "read_run_json",
    "is_locked",
    "holds_a_run",
    "boot_id",
    "node_name",
]

JOURNAL_NAME = "journal.jsonl"
RUN_NAME = "run.json"
RUN_FORMAT = "gpuconform-run"
RUN_VERSION = 1
RUN_ID_ENV = "GPUCONFORM_RUN_ID"
EVENTS = ("start", "result", "abort", "resume", "end")
# One encoder for every line (json.dumps with these arguments makes one a call)
_LINE = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


class JournalError(Exception):
    """A journal or run.json that cannot be used; str() is one line."""


class JournalWriteError(JournalError):
    """A line the journal could not take (a full disk...): str() is one line
    naming the file system (fsfault.write_fault); errno is the OSError's. The
    journal is left as it was before the line, and takes no line after it."""

    def __init__(self, line: str, err_no: int | None) -> None:
        super().__init__(line)
        self.errno = err_no


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def holds_a_run(path: Path) -> bool:
    """An existing journal that is more than a start that died before its
    first line: something written in it, or a run.json beside it."""
    try:
        return path.stat().st_size > 0 or (path.parent / RUN_NAME).exists()
    except OSError:
        return True


def node_name() -> str:
    """Where this process runs: the Slurm node's name in a Slurm job (a node's
    NodeName may differ from its host name), else this host's short name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


class Journal:
    """RESULTS/journal.jsonl, open for appending, locked.

    new=True (a run starting): the journal is created here, with O_EXCL, so
    that of two runs started into one directory at the same moment exactly one
    owns it; a journal already there is taken only when it is empty, without
    run.json and unlocked (a start that died at once), else JournalError."""

    def __init__(self, path: Path, *, lock: bool = True, new: bool = False) -> None:
        self.path = Path(path)
        self.node = node_name()
        self._lock = threading.Lock()
        self.broken: JournalWriteError | None = None
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        created = False
        try:
            if new:
                try:
                    self.fd = os.open(self.path, flags | os.O_EXCL, 0o644)
                    created = True
                except FileExistsError:
                    self.fd = os.open(self.path, flags & ~os.O_CREAT)
            else:
                created = not self.path.exists()
                self.fd = os.open(self.path, flags, 0o644)
        except OSError as e:
            raise JournalError(f"{self.path}: cannot open the journal: {e.strerror or e}") from None
        if lock:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(self.fd)
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise JournalError(
                        f"{self.path}: another gpuconform process is using this run "
                        "(its journal is locked)") from None
                raise JournalError(f"{self.path}: cannot lock the journal: flock: "
                                   f"{e.strerror or e} (a file system without locks?)") from None
        if new and not created and holds_a_run(self.path):
            os.close(self.fd)
            raise JournalError(f"{self.path.parent} already holds a run ({self.path.name}): "
                               "give another --results, or continue it with: "
                               f"gpuconform resume {self.path.parent}")
        self.created = created
        if created:
            try:
                os.fsync(self.fd)
                fsync_dir(self.path.parent)
            except OSError as e:
                os.close(self.fd)
                raise JournalError(f"{self.path}: cannot create the journal: "
                                   f"{e.strerror or e}") from None

    def append(self, obj: Mapping[str, Any]) -> None:
        """One line, whole, or nothing: the copies of a test append from their
        threads. A line that cannot be written (JournalWriteError) is cut away
        again, and the journal takes no more lines."""
        data = (_LINE.encode(obj) + "\n").encode("utf-8")
        with self._lock:
            if self.broken is not None:
                raise self.broken
            before = -1
            try:
                before = os.fstat(self.fd).st_size
                view = memoryview(data)
                while view:
                    n = os.write(self.fd, view)
                    view = view[n:]
                os.fsync(self.fd)
            except OSError as e:
                # Said as it was when the line failed (the cut frees space).
                self.broken = JournalWriteError(write_fault(self.path.parent, e), e.errno)
                if before >= 0:
                    try:
                        os.ftruncate(self.fd, before)  # frees blocks: works on a full disk
                    except OSError:
                        pass
                raise self.broken from None

    def size(self) -> int:
        """Bytes in the journal now: a mark for rewind()."""
        with self._lock:
            return os.fstat(self.fd).st_size

    def rewind(self, mark: int) -> None:
        """Cut the journal back to mark (size()): what was written after it
        never happened (best effort: the disk may be failing)."""
        with self._lock:
            try:
                if os.fstat(self.fd).st_size > mark:
                    os.ftruncate(self.fd, mark)
                    os.fsync(self.fd)
            except OSError:
                pass

    def start(self, test: str, attempt: int, pid: int, token: str,
              gpu: int | None = None) -> None:
        line: dict[str, Any] = {"event": "start", "test": test, "attempt": attempt, "pid": pid,
                                "pgid": pid, "token": token, "time": time.time(),
                                "node": self.node}
        if gpu is not None:
            line["gpu"] = gpu
        self.append(line)

    def result(self, test: str, record: Mapping[str, Any]) -> None:
        self.append({"event": "result", "test": test, "record": dict(record)})

    def event(self, event: str, **fields: Any) -> None:
        self.append({"event": event, "time": time.time(), **fields})

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # drops the flock
            self.fd = -1

    def discard(self) -> None:
        """Close, and remove the journal when this process created it and it
        is still empty (a start that failed: nothing left behind)."""
        if self.fd >= 0 and self.created:
            try:
                if os.fstat(self.fd).st_size == 0:
                    os.unlink(self.path)
            except OSError:
                pass
        self.close()


def is_locked(path: Path) -> bool:
    """Whether a live process holds the journal's lock.

    The journal is opened for writing (never created nor truncated), as the
    runner opens it: flock(2), NOTES, "NFS details": "Since Linux 2.6.12, NFS
    clients support flock() locks by emulating them as fcntl(2) byte-range
    locks on the entire file. [...] It also means that in order to place an
    exclusive lock, the file must be opened for writing." A read-only
    descriptor gets EBADF there, which was taken for "locked": on NFS every
    run looked alive. Only EWOULDBLOCK means a holder; any other failure to
    lock is a JournalError naming the file (a file system without locks, such
    as Lustre mounted without -o flock, cannot tell a live run from a dead
    one). A journal this user may not write is checked read-only (right on a
    local file system; no resume could append to it anyway)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        return False
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise JournalError(f"{path}: cannot open the journal: {e.strerror or e}") from None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError as e2:
            raise JournalError(f"{path}: cannot open the journal: {e2.strerror or e2}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise JournalError(f"{path}: cannot tell whether a run holds the journal: flock: "
                           f"{e.strerror or e} (a file system without locks?)") from None
    finally:
        os.close(fd)
    return False


@dataclass(frozen=True)
class StartLine:
    test: str
    attempt: int
    pid: int | None
    pgid: int | None
    token: str | None
    time: float | None
    line: int
    gpu: int | None = None  # the copy's GPU (a test run once per GPU)
    node: str | None = None  # where it ran (journals before the field: None)


@dataclass
class JournalState:
    path: Path
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # in journal order
    running: list[StartLine] = field(default_factory=list)  # started, no result after
    starts: list[StartLine] = field(default_factory=list)  # every start line
    events: list[dict[str, Any]] = field(default_factory=list)  # abort, resume, end
    torn: str | None = None  # what was dropped at the end, for the report
    good_size: int = 0  # bytes up to the end of the last good line
    missing_newline: bool = False  # the last good line lacks its "\n"
    duplicates: list[str] = field(default_factory=list)  # extra result lines (ignored)
    lines: int = 0

    @property
    def aborts(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == "abort"]


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict) or obj.get("event") not in EVENTS:
        return None
    return obj


def _problem(obj: dict[str, Any]) -> str | None:
    ev = obj["event"]
    if ev in ("start", "result") and not isinstance(obj.get("test"), str):
        return f"{ev} line without a test name"
    if ev == "result":
        rec = obj.get("record")
        if not isinstance(rec, dict) or not isinstance(rec.get("result"), str):
            return "result line without a record"
    return None


def read_journal(path: Path) -> JournalState:
    """The journal's lines, checked. No file: an empty state."""
    path = Path(path)
    st = JournalState(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return st
    except OSError as e:
        raise JournalError(f"{path}: cannot read the journal: {e.strerror or e}") from None
    chunks = data.split(b"\n")
    # chunks[-1] is what follows the last newline: b"" when the file ends well.
    bad_tail_from: int | None = None  # 0-based index of the first bad chunk of the tail
    parsed: list[tuple[int, dict[str, Any] | None]] = []
    for i, raw in enumerate(chunks):
        if i == len(chunks) - 1 and raw == b"":
            break
        obj = _parse_line(raw) if raw.strip(b"\0 \t\r") else None
        parsed.append((i, obj))
    # Bad lines are tolerated only as a tail (nothing good after them).
    for i, obj in reversed(parsed):
        if obj is not None:
            break
        bad_tail_from = i
    offset = 0
    for i, obj in parsed:
        raw = chunks[i]
        if bad_tail_from is not None and i >= bad_tail_from:
            break
        lineno = i + 1
        if obj is None:
            text = raw[:60].decode("utf-8", errors="replace")
            raise JournalError(f"{path}:{lineno}: not a journal line: {text!r}")
        problem = _problem(obj)
        if problem is not None:
            raise JournalError(f"{path}:{lineno}: {problem}")
        st.lines += 1
        terminated = i < len(chunks) - 1
        offset += len(raw) + (1 if terminated else 0)
        if not terminated:
            st.missing_newline = True
        _apply(st, obj, lineno)
    st.good_size = offset
    if bad_tail_from is not None:
        dropped = len(data) - offset
        st.torn = (f"{path}:{bad_tail_from + 1}: torn last line ({dropped} bytes: an interrupted "
                   "write) dropped")
    return st


def _apply(st: JournalState, obj: dict[str, Any], lineno: int) -> None:
    ev = obj["event"]
    test = obj.get("test")
    if ev == "start":
        assert isinstance(test, str)
        s = StartLine(test, _int(obj.get("attempt")) or 1, _int(obj.get("pid")),
                      _int(obj.get("pgid")), _str(obj.get("token")), _float(obj.get("time")),
                      lineno, _int(obj.get("gpu")), _str(obj.get("node")))
        st.starts.append(s)
        st.running = [r for r in st.running if (r.test, r.gpu) != (test, s.gpu)] + [s]
    elif ev == "result":
        assert isinstance(test, str)
        st.running = [r for r in st.running if r.test != test]
        if test in st.records:
            st.duplicates.append(f"{st.path}:{lineno}: second result for {test} (ignored)")
        else:
            st.records[test] = obj["record"]
    else:
        st.events.append(obj)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def repair_journal(st: JournalState) -> None:
    """Cut a torn tail away (and end the last line) so appends start clean."""
    if st.torn is None and not st.missing_newline:
        return
    fd = os.open(st.path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.ftruncate(fd, st.good_size)
        if st.missing_newline:
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, b"\n")
            st.good_size += 1
            st.missing_newline = False
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ run.json


def write_run_json(directory: Path, info: Mapping[str, Any]) -> Path:
    path = Path(directory) / RUN_NAME
    obj = {"format": RUN_FORMAT, "version": RUN_VERSION, **info}
    atomic_write(path, json.dumps(obj, indent=1) + "\n")
    return path


_RUN_KEYS: dict[str, type | tuple[type, ...]] = {
    "manifest": str,
    "run_id": str,
    "options": dict,
    "selection": list,
    "tests": list,
}


def read_run_json(directory: Path) -> dict[str, Any]:
    path = Path(directory) / RUN_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JournalError(
            f"{path}: no such file (not a gpuconform results directory, or the run died "
            "before its first test: start it again)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise JournalError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        obj = json.loads(text)
    except ValueError as e:
        line = getattr(e, "lineno", 1)
        raise JournalError(f"{path}:{line}: not JSON: {getattr(e, 'msg', e)}") from None
    if not isinstance(obj, dict) or obj.get("format") != RUN_FORMAT:
        raise JournalError(f"{path}: not a gpuconform run file (format is not {RUN_FORMAT!r})")
    if obj.get("version") != RUN_VERSION:
        raise JournalError(f"{path}: version {obj.get('version')!r}, this runner reads {RUN_VERSION}")
    for key, typ in _RUN_KEYS.items():
        if not isinstance(obj.get(key), typ):
            raise JournalError(f"{path}: field {key!r} missing or of the wrong type")
    for key in ("selection", "tests"):
        if not all(isinstance(t, str) for t in obj[key]):
            raise JournalError(f"{path}: field {key!r}: not a list of test names")
    shard = obj.get("shard")
    if shard is not None and not (isinstance(shard, list) and len(shard) == 2
                                  and all(isinstance(x, int) for x in shard)):
        raise JournalError(f"{path}: field 'shard': not [INDEX, TOTAL] or null")
    return obj

"""Running a test binary: one subtest, or --list-subtests.

Each run:
  * is its own session and process group (start_new_session=True), so one
    signal reaches everything it forked;
  * writes stdout and stderr to temporary FILES of its own (a pipe nobody
    drains would block a test that floods 64 MiB; outfiles.py); both are
    streamed through parsers after the run, and only a head and a tail are kept;
  * gets GPUCONFORM_RUN_TOKEN=<uuid> in its environment, so processes that
    escaped the group (setsid) can still be found in /proc/PID/environ, and
    GPUCONFORM_METRICS_FILE=<temp file> for its metrics;
  * on timeout: SIGTERM to the group, a grace period, then SIGKILL;
  * afterwards, whatever is left (group members, escaped children) is
    reported and killed. Looking for it reads every process in /proc, unless
    the kernel's count of created tasks (forks.py) shows that nothing but the
    binary itself was created anywhere while it ran: then nothing is left.
The leader is not reaped until the group is cleaned up: while it is a zombie
its pid (= the group id) cannot be reused, so killpg() cannot hit a stranger.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .forks import fork_count
from .metrics import METRICS_ENV, Metric, parse_metrics
from .outfiles import Pair, Spares, unnamed_files
from .protocol import FailureScanner, OutputParser, ParsedOutput, parse_list_output
from .states import signal_name

__all__ = [
    "RUN_TOKEN_ENV",
    "ExecOptions",
    "Captured",
    "StrayProcess",
    "CommandResult",
    "SubtestRun",
    "ListRun",
    "run_command",
    "run_subtest",
    "list_subtests",
    "kill_orphans",
]

RUN_TOKEN_ENV = "GPUCONFORM_RUN_TOKEN"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_LIST_TIMEOUT_S = 60.0
DEFAULT_GRACE_S = 5.0
DEFAULT_KEEP_BYTES = 64 * 1024
MAX_LIST_BYTES = 16 << 20
MAX_METRICS_BYTES = 16 << 20
_CHUNK = 1 << 20

Sink = Callable[[bytes], None]


@dataclass(frozen=True)
class ExecOptions:
    timeout_s: float = DEFAULT_TIMEOUT_S
    grace_s: float = DEFAULT_GRACE_S  # between SIGTERM and SIGKILL
    list_timeout_s: float = DEFAULT_LIST_TIMEOUT_S
    keep_bytes: int = DEFAULT_KEEP_BYTES  # of stdout / stderr: this much head and tail
    kill_wait_s: float = 10.0  # after SIGKILL: a process stuck in the kernel is given up on
    env: Mapping[str, str] | None = None  # base environment; None: os.environ
    cwd: Path | None = None
    tmp_root: Path | None = None  # where the temporary output files go
    # tmp_root is a directory only this run writes in (runtmp.py: mode 0700, made
    # fresh): a metrics file is named there instead of made in a directory of its own
    private_tmp: bool = False
    # the output files made ahead of need in tmp_root (outfiles.py); None: made per run
    spares: Spares | None = None


@dataclass
class Captured:
    """Head and tail of one output stream."""

    total: int = 0
    head: bytes = b""
    tail: bytes = b""

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.cut and not self.tail:
            return head
        tail = self.tail.decode("utf-8", errors="replace")
        sep = "" if head.endswith("\n") or not head else "\n"
        return f"{head}{sep}[... gpuconform: {self.cut} bytes cut ...]\n{tail}"


@dataclass
class StrayProcess:
    pid: int
    cmdline: str
    escaped: bool  # True: outside the process group (setsid); False: left in the group
    dead: bool = False  # confirmed gone after SIGKILL

    def describe(self) -> str:
        return f"pid {self.pid} ({self.cmdline})"


@dataclass
class CommandResult:
    argv: list[str]
    token: str
    pid: int | None = None
    returncode: int | None = None  # -SIGNUM for a signal; None: not started or not reaped
    timed_out: bool = False
    timeout_s: float | None = None
    signals_sent: list[str] = field(default_factory=list)  # to the group, on timeout
    start: float = 0.0  # time.time()
    end: float = 0.0
    duration: float = 0.0  # monotonic seconds
    stdout: Captured = field(default_factory=Captured)
    stderr: Captured = field(default_factory=Captured)
    strays: list[StrayProcess] = field(default_factory=list)
    spawn_error: str | None = None
    unkillable: bool = False  # the leader outlived SIGKILL (stuck in the kernel)

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.timed_out:
            sent = " then ".join(self.signals_sent) or "nothing"
            out.append(f"timed out after {self.timeout_s:g}s: sent {sent} to the process group")
        if self.unkillable:
            out.append(f"pid {self.pid} did not die after SIGKILL (stuck in the kernel?)")
        escaped = [s for s in self.strays if s.escaped]
        group = [s for s in self.strays if not s.escaped]
        if escaped:
            out.append("escaped children: " + ", ".join(s.describe() for s in escaped) + "; killed")
        if group:
            out.append(
                "left in the process group after the binary ended: "
                + ", ".join(s.describe() for s in group)
                + "; killed"
            )
        alive = [s for s in self.strays if not s.dead]
        if alive:
            out.append("still alive after SIGKILL: " + ", ".join(f"pid {s.pid}" for s in alive))
        return out


# ------------------------------------------------------------ /proc helpers


@dataclass(frozen=True)
class _ProcInfo:
    pid: int
    state: str
    pgrp: int
    session: int
    starttime: int  # clock ticks after boot


def _read_stat(pid: int) -> _ProcInfo | None:
    # os.open/os.read: a /proc scan reads every process's stat after each test,
    # and buffered file objects cost several times the system calls here.
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parens.
    rest = data[data.rfind(b")") + 2 :].split()
    try:
        return _ProcInfo(pid, rest[0].decode(), int(rest[2]), int(rest[3]), int(rest[19]))
    except (IndexError, ValueError):
        return None


def _has_token(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:  # gone, or not ours to read
        return False
    return needle in env.split(b"\0")


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(4096)
        text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", errors="replace")
    except OSError:
        text = ""
    if not text:
        try:
            with open(f"/proc/{pid}/comm", "rb") as f:
                text = "[" + f.read().strip().decode("utf-8", errors="replace") + "]"
        except OSError:
            text = "?"
    return text[:200]


def _find_strays(group: int, token: str, exclude: int) -> list[tuple[int, bool]]:
    """Live processes of the group/session `group`, or carrying the token.

    Returns (pid, escaped): escaped is True for those outside the group and
    session (found by the token only). Zombies are dead already: skipped.
    """
    needle = f"{RUN_TOKEN_ENV}={token}".encode()
    me = os.getpid()
    found: list[tuple[int, bool]] = []
    # A process that started before the leader cannot descend from it: its
    # environment need not be read (most of the cost of a scan otherwise).
    leader = _read_stat(group)
    born = leader.starttime if leader is not None else 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in (me, exclude):
            continue
        info = _read_stat(pid)
        if info is None or info.state in ("Z", "X"):
            continue
        if info.pgrp == group or info.session == group:
            found.append((pid, False))
        elif info.starttime >= born and _has_token(pid, needle):
            found.append((pid, True))
    return found


def _is_ours(pid: int, group: int, token: str) -> bool:
    info = _read_stat(pid)
    if info is None:
        return False
    if info.pgrp == group or info.session == group:
        return True
    return _has_token(pid, f"{RUN_TOKEN_ENV}={token}".encode())


def _pidfd_open(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _fd_readable(fd: int, timeout_s: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout_s * 1000))))


def _proc_gone(pid: int) -> bool:
    info = _read_stat(pid)
    return info is None or info.state in ("Z", "X")


def _killpg(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        pass


# ----------------------------------------------------------- supervision


def _leader_exited(pid: int) -> bool:
    """True once pid has exited; it is NOT reaped (WNOWAIT)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _wait_leader(pid: int, pidfd: int | None, timeout_s: float) -> bool:
    """Wait up to timeout_s for pid to exit, without reaping it."""
    deadline = time.monotonic() + max(0.0, timeout_s)
    if pidfd is not None:
        while True:
            left = deadline - time.monotonic()
            if _fd_readable(pidfd, min(max(left, 0.0), 3600.0)):
                return True
            if left <= 0:
                return _leader_exited(pid)
    nap = 0.001
    while not _leader_exited(pid):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(nap, left))
        nap = min(nap * 2, 0.05)
    return True


def _await_deaths(strays: dict[int, StrayProcess], pidfds: dict[int, int | None], wait_s: float) -> None:
    """Wait, until wait_s from now, for each stray to die; set its `dead`.

    A stray with a pidfd waits on the handle; one without is polled in
    /proc. Each gets at least one look, even once the deadline has passed.
    """
    deadline = time.monotonic() + wait_s
    for pid, stray in strays.items():
        fd = pidfds.get(pid)
        while True:
            left = deadline - time.monotonic()
            if fd is not None:
                stray.dead = _fd_readable(fd, max(left, 0.0))
                break
            if _proc_gone(pid):
                stray.dead = True
                break
            if left <= 0:
                break
            time.sleep(0.01)


def _clean_up(leader: int, token: str, options: ExecOptions,
              forks_before: int | None = None) -> list[StrayProcess]:
    """Kill what the run left behind: its group, and escaped token carriers.

    forks_before: fork_count() read just before the leader was spawned. When
    the count is one more now, the leader was the only task created since, so
    no other process exists that it could have made: /proc is not read."""
    if forks_before is not None and fork_count() == forks_before + 1:
        return []
    strays: dict[int, StrayProcess] = {}
    pidfds: dict[int, int | None] = {}
    try:
        for _round in range(5):
            found = [(p, e) for p, e in _find_strays(leader, token, leader) if p not in strays]
            if not found:  # nobody left who could still fork
                break
            for pid, escaped in found:
                # A handle first, then check it is still the process we found:
                # from here on the pid cannot be recycled under us.
                fd = _pidfd_open(pid)
                if fd is not None and not _is_ours(pid, leader, token):
                    os.close(fd)
                    continue
                pidfds[pid] = fd
                strays[pid] = StrayProcess(pid, _cmdline(pid), escaped)
            _killpg(leader, signal.SIGKILL)
            for pid, _escaped in found:
                if pid not in strays:
                    continue
                fd = pidfds[pid]
                try:
                    if fd is not None:
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                    else:
                        os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if not found:
                break
        _await_deaths(strays, pidfds, options.kill_wait_s)
    finally:
        for fd in pidfds.values():
            if fd is not None:
                os.close(fd)
    return sorted(strays.values(), key=lambda s: s.pid)


def _env_of(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def kill_orphans(env_items: list[str], groups: list[int], wait_s: float = 10.0) -> list[StrayProcess]:
    """SIGKILL what a dead runner left running, and wait for it to die.

    A process is an orphan when its environment holds one of env_items
    ("GPUCONFORM_RUN_ID=..." of the run, "GPUCONFORM_RUN_TOKEN=..." of a test).
    A process group of `groups` (the pgids of the journal's start lines) is
    killed as a whole only when one of its members is such an orphan: after
    a reboot the same number may be a stranger's group. Returns the orphans
    found (escaped=False: in one of the groups; True: elsewhere).
    """
    needles = {e.encode() for e in env_items}
    me = os.getpid()
    found: dict[int, StrayProcess] = {}
    pidfds: dict[int, int | None] = {}
    try:
        for _round in range(5):
            new = 0
            live_groups: set[int] = set()
            try:
                entries = os.listdir("/proc")
            except OSError:
                break
            for entry in entries:
                if not entry.isdigit() or int(entry) == me or int(entry) in found:
                    continue
                pid = int(entry)
                info = _read_stat(pid)
                if info is None or info.state in ("Z", "X"):
                    continue
                if not needles.intersection(_env_of(pid)):
                    continue
                fd = _pidfd_open(pid)
                if fd is not None and not needles.intersection(_env_of(pid)):
                    os.close(fd)  # recycled between the two looks
                    continue
                pidfds[pid] = fd
                found[pid] = StrayProcess(pid, _cmdline(pid), info.pgrp not in groups)
                if info.pgrp in groups:
                    live_groups.add(info.pgrp)
                new += 1
            for group in live_groups:
                _killpg(group, signal.SIGKILL)
            for pid, fd in pidfds.items():
                try:
                    if fd is not None:
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                    else:
                        os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError, OSError):
                    pass
            if not new:
                break
        _await_deaths(found, pidfds, wait_s)
    finally:
        for fd in pidfds.values():
            if fd is not None:
                os.close(fd)
    return sorted(found.values(), key=lambda p: p.pid)


# ------------------------------------------------------------ output files


def _capture(fd: int, keep: int) -> Captured:
    total = os.fstat(fd).st_size
    if total <= 2 * keep:
        return Captured(total, os.pread(fd, total, 0), b"")
    head = os.pread(fd, keep, 0)
    tail = os.pread(fd, keep, total - keep)
    # Cut at line boundaries when one is near.
    nl = head.rfind(b"\n")
    if nl >= keep - 4096:
        head = head[: nl + 1]
    nl = tail.find(b"\n")
    if 0 <= nl < 4096:
        tail = tail[nl + 1 :]
    return Captured(total, head, tail)


def _spares_for(options: ExecOptions, tmp_root: Path | None) -> Spares | None:
    """options.spares when its files are made where this run's go."""
    spares = options.spares
    if spares is None or tmp_root is None or str(tmp_root) != spares.directory:
        return None
    return spares


@contextmanager
def _output_files(spares: Spares | None, tmp_root: Path | None) -> Iterator[Pair]:
    """A run's stdout and stderr files (outfiles.py): from spares, given back
    to it on the way out; without spares made here and closed."""
    if spares is None:
        with unnamed_files(str(tmp_root) if tmp_root else None) as pair:
            yield pair
        return
    pair = spares.take()
    try:
        yield pair
    finally:
        spares.retire(pair)


def _stream(fd: int, sink: Sink, limit: int | None = None) -> None:
    off = 0
    while limit is None or off < limit:
        want = _CHUNK if limit is None else min(_CHUNK, limit - off)
        data = os.pread(fd, want, off)
        if not data:
            return
        sink(data)
        off += len(data)


def run_command(
    argv: list[str],
    options: ExecOptions,
    *,
    timeout_s: float | None = None,
    env_extra: Mapping[str, str] | None = None,
    stdout_sink: Sink | None = None,
    stdout_limit: int | None = None,
    stderr_sink: Sink | None = None,
    scratch: Path | None = None,
    token: str | None = None,
    on_spawn: Callable[[int], None] | None = None,
) -> CommandResult:
    """Run argv in its own session, supervised; see the module comment.

    token: the GPUCONFORM_RUN_TOKEN value (default: a fresh uuid).
    on_spawn(pid): called once the process exists, before waiting for it
    (the journal's start line: pid = process group id = session id). If it
    raises, the process group is killed and the exception propagates.
    """
    timeout = options.timeout_s if timeout_s is None else timeout_s
    token = token or uuid.uuid4().hex
    env = dict(os.environ if options.env is None else options.env)
    env.update(env_extra or {})
    env[RUN_TOKEN_ENV] = token
    res = CommandResult(argv=list(argv), token=token, timeout_s=timeout)
    # Unnamed files (O_TMPFILE where the filesystem has it): nothing to create
    # or remove in a directory per test, nothing left behind if we die.
    tmp_root = scratch or options.tmp_root
    spares = _spares_for(options, tmp_root)
    with _output_files(spares, tmp_root) as (fo, fe):
        res.start = time.time()
        t0 = time.monotonic()
        forks = fork_count()  # last before the spawn: _clean_up's proof that nothing was left
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=fo,
                stderr=fe,
                env=env,
                cwd=options.cwd,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            res.spawn_error = f"cannot execute {argv[0]}: {e.strerror or e}"
            res.end = time.time()
            return res
        except BaseException:
            # Interrupted (^C, SIGTERM) inside Popen, after its fork: the child
            # runs, and Popen kills nothing. It carries the token: find it so.
            kill_orphans([f"{RUN_TOKEN_ENV}={token}"], [], options.kill_wait_s)
            raise
        res.pid = proc.pid
        pidfd: int | None = None
        reaped = False
        try:
            pidfd = _pidfd_open(proc.pid)
            if on_spawn is not None:
                on_spawn(proc.pid)
            if spares is not None:  # while it runs: the next run's files
                spares.refill()
            exited = _wait_leader(proc.pid, pidfd, timeout)
            if not exited:
                res.timed_out = True
                _killpg(proc.pid, signal.SIGTERM)
                res.signals_sent.append("SIGTERM")
                exited = _wait_leader(proc.pid, pidfd, options.grace_s)
                if not exited:
                    _killpg(proc.pid, signal.SIGKILL)
                    res.signals_sent.append("SIGKILL")
                    exited = _wait_leader(proc.pid, pidfd, options.kill_wait_s)
            res.duration = time.monotonic() - t0
            res.strays = _clean_up(proc.pid, token, options, forks)
            if exited:
                res.returncode = proc.wait()
                reaped = True
            else:
                res.unkillable = True
        finally:
            if not reaped and not res.unkillable:
                # Interrupted (^C...): leave nothing running behind us.
                _killpg(proc.pid, signal.SIGKILL)
                try:
                    proc.wait(timeout=options.kill_wait_s)
                except subprocess.TimeoutExpired:
                    pass
            if pidfd is not None:
                os.close(pidfd)
        res.end = time.time()
        res.stdout = _capture(fo, options.keep_bytes)
        res.stderr = _capture(fe, options.keep_bytes)
        if stdout_sink is not None:
            _stream(fo, stdout_sink, stdout_limit)
        if stderr_sink is not None:
            _stream(fe, stderr_sink)
    return res


# ---------------------------------------------------------------- subtests


@contextmanager
def _metrics_file(options: ExecOptions) -> Iterator[tuple[Path, Path | None]]:
    """(the test's metrics file, the directory made for it or None), removed
    on the way out. In a private tmp_root the file is only named (a fresh
    name: the test's writers create it on their first line); elsewhere it
    is made, empty, in a directory of its own."""
    if options.private_tmp and options.tmp_root is not None:
        path = Path(options.tmp_root) / f"metrics-{uuid.uuid4().hex}.jsonl"
        try:
            yield path, None
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        return
    with tempfile.TemporaryDirectory(prefix="gpuconform-test-", dir=options.tmp_root) as tmp:
        path = Path(tmp) / "metrics.jsonl"
        path.touch()
        yield path, Path(tmp)


@dataclass
class SubtestRun:
    binary: Path
    subtest: str
    command: CommandResult
    parsed: ParsedOutput
    failures: list[str]  # failure messages found on stderr
    metrics: list[Metric]
    metric_errors: list[str]
    soaks: list[dict[str, Any]] = field(default_factory=list)  # soak.py's lines


def run_subtest(
    binary: Path,
    subtest: str,
    options: ExecOptions,
    *,
    env_extra: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    token: str | None = None,
    on_spawn: Callable[[int], None] | None = None,
) -> SubtestRun:
    """`BINARY --run-subtest SUBTEST`, supervised, its output parsed.

    timeout_s overrides options.timeout_s; token and on_spawn: run_command's."""
    binary = Path(binary)
    parser = OutputParser()
    scanner = FailureScanner()
    with _metrics_file(options) as (metrics_path, scratch):
        extra = dict(env_extra or {})
        extra[METRICS_ENV] = str(metrics_path)
        cmd = run_command(
            [str(binary), "--run-subtest", subtest],
            options,
            env_extra=extra,
            stdout_sink=parser.feed,
            stderr_sink=scanner.feed,
            scratch=scratch,
            timeout_s=timeout_s,
            token=token,
            on_spawn=on_spawn,
        )
        metrics: list[Metric] = []
        soaks: list[dict[str, Any]] = []
        errors: list[str] = []
        try:
            size = metrics_path.stat().st_size
            if size > MAX_METRICS_BYTES:
                errors.append(f"{METRICS_ENV}: {size} bytes, more than {MAX_METRICS_BYTES}: ignored")
            elif size:
                metrics, errors = parse_metrics(
                    metrics_path.read_bytes(),
                    source=METRICS_ENV,
                    test=binary.name,
                    subtest=subtest,
                    soaks=soaks,
                )
        except FileNotFoundError as e:
            if scratch is not None:  # the runner made it: the test removed it
                errors.append(f"{METRICS_ENV}: cannot read {metrics_path}: {e.strerror or e}")
        except OSError as e:
            errors.append(f"{METRICS_ENV}: cannot read {metrics_path}: {e.strerror or e}")
    return SubtestRun(
        binary=binary,
        subtest=subtest,
        command=cmd,
        parsed=parser.close(),
        failures=scanner.close(),
        metrics=metrics,
        metric_errors=errors,
        soaks=soaks,
    )


# --------------------------------------------------------- --list-subtests


@dataclass
class ListRun:
    binary: Path
    command: CommandResult
    names: list[str]
    problems: list[str]  # lines that are not subtest names
    error: str | None  # why the listing failed as a whole; None when it worked


def list_subtests(binary: Path, options: ExecOptions) -> ListRun:
    binary = Path(binary)
    chunks: list[bytes] = []
    cmd = run_command(
        [str(binary), "--list-subtests"],
        replace(options, keep_bytes=min(options.keep_bytes, 16 * 1024)),
        timeout_s=options.list_timeout_s,
        stdout_sink=chunks.append,
        stdout_limit=MAX_LIST_BYTES,
    )
    listing = parse_list_output(b"".join(chunks))
    error: str | None = None
    if cmd.spawn_error:
        error = cmd.spawn_error
    elif cmd.timed_out:
        error = f"--list-subtests timed out after {options.list_timeout_s:g}s"
    elif cmd.returncode is not None and cmd.returncode < 0:
        error = f"--list-subtests killed by {signal_name(-cmd.returncode)}"
    elif cmd.returncode != 0:
        error = f"--list-subtests exited with status {cmd.returncode}"
    elif cmd.stdout.total > MAX_LIST_BYTES:
        error = f"--list-subtests printed {cmd.stdout.total} bytes (more than {MAX_LIST_BYTES})"
    elif not listing.names:
        error = "--list-subtests printed no subtest names"
    if error is not None:
        tail = cmd.stderr.text().strip().splitlines()[-1:] if cmd.stderr.total else []
        if tail:
            error += f" (stderr: {tail[0][:200]})"
    return ListRun(binary, cmd, listing.names, listing.problems, error)


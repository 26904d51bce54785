"""The kernel log around each test: /dev/kmsg records, patterns, taint.

Reading (KmsgReader): /dev/kmsg is opened once per run, O_RDONLY|O_NONBLOCK.
Before a test, mark() seeks to the end (SEEK_END: only records written from
now on); after it, read() takes every record up to EAGAIN. Each read() of
/dev/kmsg returns exactly one record:

    PRI,SEQ,TS_USEC,FLAGS[,MORE...];MESSAGE
     KEY=VALUE                               (continuation lines, one space first)

PRI & 7 is the level (0 emerg .. 7 debug), PRI >> 3 the facility (0 kernel;
lines written by user space get 1, user). EPIPE means the kernel overwrote
records before they were read: the gap is counted from the sequence numbers
and noted, never fatal. Opening fails without privilege (CAP_SYSLOG when
dmesg_restrict is set): the reader then says why once and reads nothing.

Classifying (classify_dmesg, pure): a patterns file, one rule a line,

    ACTION REGEX          ACTION: warn, fail, abort or ignore
    level N               messages at level <= N count as warnings (default 4)

The FIRST rule whose REGEX is found (re.search) in a message decides it;
a message no rule matches is a warning when its level is N or more severe.
  warn    pass -> dmesg-warn, fail -> dmesg-fail (igt_runner's rule)
  fail    pass -> dmesg-fail
  abort   the GPU or the kernel is in no state to go on: the run stops, the
          test's state is abort, every test after it is notrun
  ignore  never counts, whatever its level
The default rules are in data/dmesg/patterns.txt.

Taint (TaintWatch): /proc/sys/kernel/tainted (a path the tests replace by a
file of their own) is read before the run and after each test. A NEW bit
among ABORT_TAINTS (a kernel problem: bad page, oops/BUG, WARN_ON, machine
check, soft lockup...) aborts the run; other new bits (a proprietary or
out-of-tree module was loaded: the NVIDIA driver, a DKMS amdgpu) are only
noted, since loading a GPU driver is no fault.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from .textfile import decode_utf8

__all__ = [
    "KMSG_PATH",
    "TAINT_PATH",
    "DEFAULT_WARN_LEVEL",
    "ACTIONS",
    "ABORT_TAINTS",
    "TAINT_FLAGS",
    "KmsgRecord",
    "KmsgCapture",
    "KmsgReader",
    "DmesgPatternError",
    "DmesgRule",
    "DmesgPatterns",
    "DmesgVerdict",
    "TaintChange",
    "TaintWatch",
    "parse_record",
    "parse_patterns",
    "load_patterns",
    "classify_dmesg",
    "describe_taint",
]

KMSG_PATH = "/dev/kmsg"
TAINT_PATH = "/proc/sys/kernel/tainted"
DEFAULT_WARN_LEVEL = 4  # KERN_WARNING, as igt_runner
ACTIONS = ("warn", "fail", "abort", "ignore")
MAX_KEPT_RECORDS = 400  # per test; the rest are classified, counted, not kept
_READ_SIZE = 16384  # a record is at most 8 KiB (CONSOLE_EXT_LOG_MAX)
_LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")

# Documentation/admin-guide/tainted-kernels.rst: bit -> (letter, meaning)
TAINT_FLAGS: dict[int, tuple[str, str]] = {
    0: ("P", "proprietary module loaded"),
    1: ("F", "module force-loaded"),
    2: ("S", "kernel running on an out-of-spec system"),
    3: ("R", "module force-unloaded"),
    4: ("M", "machine check exception"),
    5: ("B", "bad page referenced or unexpected page flags"),
    6: ("U", "taint requested by user space"),
    7: ("D", "kernel died recently (OOPS or BUG)"),
    8: ("A", "ACPI table overridden"),
    9: ("W", "kernel issued a warning (WARN_ON)"),
    10: ("C", "staging driver loaded"),
    11: ("I", "platform firmware bug worked around"),
    12: ("O", "out-of-tree module loaded"),
    13: ("E", "unsigned module loaded"),
    14: ("L", "soft lockup occurred"),
    15: ("K", "kernel live patched"),
    16: ("X", "auxiliary taint (distribution-defined)"),
    17: ("T", "kernel built with the struct randomization plugin"),
    18: ("N", "in-kernel test module loaded"),
}
# New bits that stop the run: the kernel itself went wrong (igt_runner aborts
# on B, D and W; M and L are as bad for a GPU stress run).
ABORT_TAINTS: frozenset[int] = frozenset({4, 5, 7, 9, 14})


# ------------------------------------------------------------------ records


@dataclass(frozen=True)
class KmsgRecord:
    level: int
    facility: int
    seq: int
    ts_us: int
    message: str
    fields: tuple[tuple[str, str], ...] = ()  # continuation KEY=VALUE lines

    def text(self) -> str:
        """`<4>[ 1924.431438] message`: dmesg's look, with the level."""
        return f"<{self.level}>[{self.ts_us // 1_000_000:5d}.{self.ts_us % 1_000_000:06d}] {self.message}"


def parse_record(data: bytes) -> KmsgRecord | None:
    """One record as read() returns it; None when it is not one."""
    text = data.decode("utf-8", errors="replace")
    head, sep, rest = text.partition(";")
    if not sep:
        return None
    prefix = head.split(",")
    if len(prefix) < 4:
        return None
    try:
        pri, seq, ts = int(prefix[0]), int(prefix[1]), int(prefix[2])
    except ValueError:
        return None
    if pri < 0 or seq < 0 or ts < 0:
        return None
    lines = rest.split("\n")
    message = lines[0]
    fields: list[tuple[str, str]] = []
    for cont in lines[1:]:
        if cont.startswith(" "):
            k, _, v = cont[1:].partition("=")
            fields.append((k, v))
    return KmsgRecord(pri & 7, pri >> 3, seq, ts, message, tuple(fields))


@dataclass
class KmsgCapture:
    """What one test's window of the kernel log held."""

    records: list[KmsgRecord] = field(default_factory=list)  # the first MAX_KEPT_RECORDS
    total: int = 0  # records read, kept or not
    lost: int = 0  # overwritten before they could be read (EPIPE)
    malformed: int = 0
    error: str | None = None  # reading stopped: why

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.lost:
            out.append(f"kernel log: {self.lost} record(s) overwritten before they could be read "
                       "(EPIPE: the log buffer wrapped)")
        if self.total > len(self.records):
            out.append(f"kernel log: {self.total} records, the first {len(self.records)} kept")
        if self.malformed:
            out.append(f"kernel log: {self.malformed} unparsable record(s) ignored")
        if self.error:
            out.append(f"kernel log: {self.error}")
        return out


class KmsgReader:
    """/dev/kmsg, read in windows. `error` says why it is unavailable."""

    def __init__(self, path: str = KMSG_PATH) -> None:
        self.path = path
        self.fd: int | None = None
        self.error: str | None = None
        self._last_seq: int | None = None
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as e:
            self.error = f"{path}: {e.strerror or e}"

    @property
    def available(self) -> bool:
        return self.fd is not None

    def mark(self) -> None:
        """Start a window: only records written from now on will be read."""
        if self.fd is None:
            return
        try:
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError as e:
            self.error = f"{self.path}: lseek: {e.strerror or e}"
            self.close()
        self._last_seq = None

    def read(self, keep: int = MAX_KEPT_RECORDS) -> KmsgCapture:
        """Every record since mark() (or the previous read)."""
        cap = KmsgCapture()
        if self.fd is None:
            return cap
        gap = False
        while True:
            try:
                data = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                break
            except InterruptedError:
                continue
            except OSError as e:
                if e.errno == errno.EPIPE:
                    gap = True
                    continue
                cap.error = f"read: {e.strerror or e}"
                break
            if not data:
                break
            rec = parse_record(data)
            if rec is None:
                cap.malformed += 1
                continue
            if self._last_seq is not None and rec.seq > self._last_seq + 1:
                cap.lost += rec.seq - self._last_seq - 1
            elif gap:
                cap.lost += 1  # at least one; the first record of a window has no predecessor
            gap = False
            self._last_seq = rec.seq
            cap.total += 1
            if len(cap.records) < keep:
                cap.records.append(rec)
        if gap:
            cap.lost += 1
        return cap

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# ----------------------------------------------------------------- patterns


class DmesgPatternError(Exception):
    """A patterns file that cannot be used; str() is one line."""


@dataclass(frozen=True)
class DmesgRule:
    action: str
    regex: "re.Pattern[str]"
    where: str  # PATH:LINE

    @property
    def pattern(self) -> str:
        return self.regex.pattern


@dataclass(frozen=True)
class DmesgPatterns:
    rules: tuple[DmesgRule, ...] = ()
    warn_level: int = DEFAULT_WARN_LEVEL
    source: str = ""

    def action_of(self, rec: KmsgRecord) -> tuple[str | None, DmesgRule | None]:
        """(warn|fail|abort|None, the deciding rule or None for the level)."""
        for rule in self.rules:
            if rule.regex.search(rec.message):
                return (None if rule.action == "ignore" else rule.action), rule
        if rec.level <= self.warn_level:
            return "warn", None
        return None, None


def _split_word(line: str) -> tuple[str, str]:
    parts = line.split(None, 1)
    return parts[0], (parts[1].strip() if len(parts) > 1 else "")


def parse_patterns(text: str, source: str) -> DmesgPatterns:
    rules: list[DmesgRule] = []
    level = DEFAULT_WARN_LEVEL
    seen_level: int | None = None
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{lineno}"
        word, rest = _split_word(line)
        if word == "level":
            if seen_level is not None:
                raise DmesgPatternError(f"{where}: 'level' given twice (first on line {seen_level})")
            if not rest.isdigit() or not 0 <= int(rest) <= 7:
                raise DmesgPatternError(f"{where}: level: {rest[:40]!r} is not a level 0..7")
            level, seen_level = int(rest), lineno
            continue
        if word not in ACTIONS:
            raise DmesgPatternError(
                f"{where}: unknown action {word[:40]!r} (ACTION REGEX; ACTION: {', '.join(ACTIONS)}; "
                "or 'level N')")
        if not rest:
            raise DmesgPatternError(f"{where}: {word} without a regular expression")
        try:
            rx = re.compile(rest)
        except re.error as e:
            raise DmesgPatternError(f"{where}: bad regular expression {rest[:80]!r}: {e}") from None
        rules.append(DmesgRule(word, rx, where))
    return DmesgPatterns(tuple(rules), level, source)


def load_patterns(path: Path | str) -> DmesgPatterns:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise DmesgPatternError(f"{path}: is a directory, not a patterns file") from None
    except OSError as e:
        raise DmesgPatternError(f"{path}: cannot read: {e.strerror or e}") from None
    text = decode_utf8(raw, path, DmesgPatternError)
    return parse_patterns(text, str(path))


@dataclass
class DmesgVerdict:
    """The kernel log of one test window, judged."""

    lines: list[str] = field(default_factory=list)  # every kept record, as text
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    aborts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def abort_reason(self) -> str | None:
        return f"kernel log: {self.aborts[0]}" if self.aborts else None


def classify_dmesg(capture: KmsgCapture | Iterable[KmsgRecord],
                   patterns: DmesgPatterns) -> DmesgVerdict:
    records: Sequence[KmsgRecord]
    v = DmesgVerdict()
    if isinstance(capture, KmsgCapture):
        records = capture.records
        v.notes.extend(capture.notes())
    else:
        records = list(capture)
    for rec in records:
        text = rec.text()
        v.lines.append(text)
        action, _rule = patterns.action_of(rec)
        if action == "warn":
            v.warnings.append(text)
        elif action == "fail":
            v.failures.append(text)
        elif action == "abort":
            v.aborts.append(text)
    return v


# -------------------------------------------------------------------- taint


def describe_taint(bits: int) -> str:
    """'W (kernel issued a warning (WARN_ON)), P (...)' for the set bits."""
    out = []
    for bit in range(64):
        if bits >> bit & 1:
            letter, meaning = TAINT_FLAGS.get(bit, (f"bit {bit}", "unknown"))
            out.append(f"{letter} ({meaning})")
    return ", ".join(out)


@dataclass(frozen=True)
class TaintChange:
    before: int
    after: int

    @property
    def new_bits(self) -> int:
        return self.after & ~self.before

    @property
    def aborts(self) -> bool:
        return any(self.new_bits >> b & 1 for b in ABORT_TAINTS)

    def describe(self) -> str:
        return f"kernel taint {self.before} -> {self.after}: new {describe_taint(self.new_bits)}"


class TaintWatch:
    """The kernel's taint value, compared with the previous reading."""

    def __init__(self, path: str = TAINT_PATH) -> None:
        self.path = path
        self.error: str | None = None
        self.value: int | None = self._read()
        self.initial = self.value

    def _read(self) -> int | None:
        try:
            with open(self.path, "rb") as f:
                text = f.read(64).decode("ascii", errors="replace").strip()
        except OSError as e:
            self.error = f"{self.path}: {e.strerror or e}"
            return None
        try:
            value = int(text)
        except ValueError:
            self.error = f"{self.path}: not a number: {text[:40]!r}"
            return None
        if value < 0:
            self.error = f"{self.path}: negative: {value}"
            return None
        self.error = None
        return value

    def check(self) -> TaintChange | None:
        """The change since the last check when bits were added; None otherwise."""
        now = self._read()
        if now is None:
            return None
        before, self.value = self.value, now
        if before is None:
            return None
        change = TaintChange(before, now)
        return change if change.new_bits else None

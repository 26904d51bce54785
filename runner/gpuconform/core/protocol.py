"""Pure parsing of a test binary's output (igt_core's line protocol, see lib/core.h).

No I/O here: callers feed bytes (or text) and get dataclasses back.

stdout of a run, line by line, interleaved with anything else the test prints:
    Starting subtest: NAME
    Starting dynamic subtest: NAME
    Skip reason: TEXT                  (ours; right before a SKIP result line)
    Dynamic subtest NAME: RESULT (1.234s)
    Subtest NAME: RESULT (1.234s)
RESULT is SUCCESS, FAIL, SKIP or CRASH (TIMEOUT, igt_core's own, is accepted too).

The parser streams: a 64 MiB flood costs one pass of C-level searching, not a
Python loop per line, and memory stays bounded whatever the line lengths.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Iterator

__all__ = [
    "LineResult",
    "DynamicSubtest",
    "Subtest",
    "ParsedOutput",
    "ListOutput",
    "OutputParser",
    "FailureScanner",
    "parse_output",
    "parse_list_output",
    "scan_failures",
    "is_valid_name",
    "skip_location",
]


class LineResult(str, enum.Enum):
    """The RESULT word of a "Subtest NAME: RESULT (T s)" line."""

    SUCCESS = "SUCCESS"
    FAIL = "FAIL"
    SKIP = "SKIP"
    CRASH = "CRASH"
    TIMEOUT = "TIMEOUT"  # igt_core prints it for its own timeouts (exit 78)


@dataclass
class DynamicSubtest:
    name: str
    started: bool = False
    result: LineResult | None = None
    time: float | None = None  # seconds, as the binary reported them
    skip_reason: str | None = None


@dataclass
class Subtest:
    name: str
    started: bool = False
    result: LineResult | None = None
    time: float | None = None
    skip_reason: str | None = None
    dynamic: dict[str, DynamicSubtest] = field(default_factory=dict)

    def unfinished_dynamic(self) -> list[str]:
        """Dynamic subtests that started and never printed a result line."""
        return [d.name for d in self.dynamic.values() if d.started and d.result is None]


@dataclass
class ParsedOutput:
    """Everything the protocol lines of one run said."""

    subtests: dict[str, Subtest] = field(default_factory=dict)
    # Protocol oddities worth a note (never raised): out-of-order lines, duplicates...
    anomalies: list[str] = field(default_factory=list)
    anomalies_dropped: int = 0
    total_bytes: int = 0

    def get(self, name: str) -> Subtest | None:
        return self.subtests.get(name)


# Subtest and dynamic subtest names, as lib/core.c's name_is_valid() accepts them.
_NAME_RE = re.compile(r"[A-Za-z0-9_-]+\Z")

_NAME = r"(?P<name>\S+)"
_RES = r"(?P<result>[A-Z]+) \((?P<time>[0-9]+(?:\.[0-9]*)?)s\)"
# Each pattern is anchored at the end of the line; at its start it may follow
# junk another writer left without a newline (a child's partial line).
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("dyn_start", re.compile(r"Starting dynamic subtest: " + _NAME + r"\Z")),
    ("start", re.compile(r"Starting subtest: " + _NAME + r"\Z")),
    ("dyn_result", re.compile(r"Dynamic subtest " + _NAME + ": " + _RES + r"\Z")),
    ("result", re.compile(r"Subtest " + _NAME + ": " + _RES + r"\Z")),
    ("skip", re.compile(r"Skip reason: (?P<reason>.*)\Z")),
]
# Cheap C-level prefilter: a protocol line contains one of these.
_MARKERS = (b"ubtest", b"Skip reason: ")
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

MAX_ANOMALIES = 20
# A protocol line is short; of an overlong partial line only the end is kept.
_MAX_PARTIAL = 64 * 1024
_KEEP_PARTIAL = 4096


def _marked_lines(block: bytes, markers: tuple[bytes, ...]) -> Iterator[tuple[int, int]]:
    """(start, end) of the lines of block that contain one of markers, in order.

    bytes.find is a C-speed search: a flood of other output costs little.
    """
    nxt = [block.find(mk) for mk in markers]
    while True:
        live = [p for p in nxt if p >= 0]
        if not live:
            return
        hit = min(live)
        start = block.rfind(b"\n", 0, hit) + 1
        end = block.find(b"\n", hit)
        if end < 0:
            end = len(block)
        yield start, end
        for i, p in enumerate(nxt):
            if 0 <= p <= end:
                nxt[i] = block.find(markers[i], end + 1)


def is_valid_name(name: str) -> bool:
    """True for a name lib/core.c accepts: [A-Za-z0-9_-]+."""
    return bool(_NAME_RE.match(name))


def _clean(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    return text.rstrip()


class OutputParser:
    """Streaming parser of a run's stdout. feed() bytes, then close()."""

    def __init__(self) -> None:
        self._out = ParsedOutput()
        self._partial = b""
        self._partial_cut = False
        self._current: Subtest | None = None
        self._current_dyn: DynamicSubtest | None = None
        self._skip_reason: str | None = None
        self._closed = False

    # ---------------------------------------------------------------- input
    def feed(self, data: bytes | str) -> None:
        if self._closed:
            raise ValueError("OutputParser.feed() after close()")
        if isinstance(data, str):
            data = data.encode("utf-8", errors="replace")
        if not data:
            return
        self._out.total_bytes += len(data)
        last_nl = data.rfind(b"\n")
        if last_nl < 0:
            self._partial += data
            self._trim_partial()
            return
        head = data[: last_nl + 1]
        if self._partial:
            first_nl = head.find(b"\n")
            self._line(self._partial + head[:first_nl])
            self._partial = b""
            self._partial_cut = False
            head = head[first_nl + 1 :]
        self._scan(head)
        self._partial = data[last_nl + 1 :]
        self._trim_partial()

    def close(self) -> ParsedOutput:
        if not self._closed:
            if self._partial:
                self._line(self._partial)  # a last line without its newline
                self._partial = b""
            self._closed = True
        return self._out

    # ------------------------------------------------------------ internals
    def _trim_partial(self) -> None:
        if len(self._partial) > _MAX_PARTIAL:
            self._partial = self._partial[-_KEEP_PARTIAL:]
            self._partial_cut = True

    def _scan(self, block: bytes) -> None:
        """block: whole lines, each ending with a newline."""
        for start, end in _marked_lines(block, _MARKERS):
            self._line(block[start:end])

    def _note(self, text: str) -> None:
        if len(self._out.anomalies) < MAX_ANOMALIES:
            self._out.anomalies.append(text)
        else:
            self._out.anomalies_dropped += 1

    def _line(self, raw: bytes) -> None:
        if not any(mk in raw for mk in _MARKERS):
            return
        line = _clean(raw)
        for kind, pattern in _PATTERNS:
            m = pattern.search(line)
            if m is None:
                continue
            # "Skip reason:" and the names must start the line; junk before
            # the other patterns is tolerated (and noted).
            if m.start() != 0:
                if kind == "skip":
                    continue
                self._note(f"protocol line after other output on the same line: {line!r}")
            getattr(self, "_on_" + kind)(m)
            return

    def _on_start(self, m: re.Match[str]) -> None:
        name = m["name"]
        cur = self._current
        if cur is not None and cur.result is None:
            self._note(f"subtest {name} started while {cur.name} had no result line")
        st = self._out.subtests.get(name)
        if st is not None and (st.started or st.result is not None):
            self._note(f"subtest {name} started again")
            st = None
        if st is None:
            st = Subtest(name=name)
            self._out.subtests[name] = st
        st.started = True
        self._current = st
        self._current_dyn = None
        self._skip_reason = None

    def _on_result(self, m: re.Match[str]) -> None:
        name = m["name"]
        res = self._result_word(m, f"subtest {name}")
        if res is None:
            return
        st = self._out.subtests.get(name)
        if st is None:
            st = Subtest(name=name)  # no start line: a fixture decided it
            self._out.subtests[name] = st
        elif st.result is not None:
            self._note(f"second result line for subtest {name}: {res.value} after {st.result.value}")
        cur = self._current
        if cur is not None and cur is not st and cur.result is None:
            self._note(f"result line for subtest {name} while {cur.name} was running")
        st.result = res
        st.time = float(m["time"])
        st.skip_reason = self._skip_reason if res is LineResult.SKIP else None
        self._skip_reason = None
        if cur is st:
            self._current = None
            self._current_dyn = None

    def _on_dyn_start(self, m: re.Match[str]) -> None:
        name = m["name"]
        parent = self._current
        if parent is None or parent.result is not None:
            self._note(f"dynamic subtest {name} started outside a running subtest")
            return
        dyn = self._current_dyn
        if dyn is not None and dyn.result is None:
            self._note(f"dynamic subtest {name} started while {dyn.name} had no result line")
        if name in parent.dynamic:
            self._note(f"dynamic subtest {parent.name}@{name} started again")
        d = DynamicSubtest(name=name, started=True)
        parent.dynamic[name] = d
        self._current_dyn = d
        self._skip_reason = None

    def _on_dyn_result(self, m: re.Match[str]) -> None:
        name = m["name"]
        parent = self._current
        if parent is None:
            self._note(f"dynamic subtest {name} result line outside a running subtest")
            return
        res = self._result_word(m, f"dynamic subtest {parent.name}@{name}")
        if res is None:
            return
        d = parent.dynamic.get(name)
        if d is None:
            self._note(f"result line for dynamic subtest {parent.name}@{name} that never started")
            d = DynamicSubtest(name=name)
            parent.dynamic[name] = d
        elif d.result is not None:
            self._note(f"second result line for dynamic subtest {parent.name}@{name}")
        d.result = res
        d.time = float(m["time"])
        d.skip_reason = self._skip_reason if res is LineResult.SKIP else None
        self._skip_reason = None
        if self._current_dyn is d:
            self._current_dyn = None

    def _on_skip(self, m: re.Match[str]) -> None:
        self._skip_reason = m["reason"].strip()

    def _result_word(self, m: re.Match[str], what: str) -> LineResult | None:
        try:
            return LineResult(m["result"])
        except ValueError:
            self._note(f"unknown result {m['result']!r} for {what}")
            return None


def parse_output(data: bytes | str) -> ParsedOutput:
    """Parse a whole run's stdout at once."""
    p = OutputParser()
    p.feed(data)
    return p.close()


# ------------------------------------------------------------------ stderr

# lib/core.c's failure lines on stderr: "file:line: func(): FAIL: ...",
# "...: Failed assertion: ...", "...: Failed call: ...", "...: Test abort in ...".
_FAILURE_MARKERS = (
    b"FAIL: ", b"Failed assertion: ", b"Failed call: ", b"Test abort in ", b"Received signal ",
)


class FailureScanner:
    """Streams stderr and keeps the first few failure messages lib/core.c prints."""

    def __init__(self, limit: int = 5) -> None:
        self.limit = limit
        self.messages: list[str] = []
        self._partial = b""

    def feed(self, data: bytes) -> None:
        if len(self.messages) >= self.limit or not data:
            return
        data = self._partial + data
        last_nl = data.rfind(b"\n")
        if last_nl < 0:
            self._partial = data[-_KEEP_PARTIAL:]
            return
        self._scan(data[: last_nl + 1])
        self._partial = data[last_nl + 1 :][-_KEEP_PARTIAL:]

    def close(self) -> list[str]:
        if self._partial:
            self._scan(self._partial)
            self._partial = b""
        return self.messages

    def _scan(self, block: bytes) -> None:
        for start, end in _marked_lines(block, _FAILURE_MARKERS):
            if len(self.messages) >= self.limit:
                return
            parts = [_clean(block[start:end]).strip()]
            # "Failed assertion: a == b" is followed by "  a = 5" lines: keep a few.
            for _ in range(3):
                nxt = block.find(b"\n", end + 1)
                if end >= len(block) or not block.startswith(b"  ", end + 1):
                    break
                if nxt < 0:
                    nxt = len(block)
                parts.append(_clean(block[end + 1 : nxt]).strip())
                end = nxt
            text = "; ".join(p for p in parts if p)
            if text:
                self.messages.append(text[:500])


def scan_failures(data: bytes | str, limit: int = 5) -> list[str]:
    s = FailureScanner(limit)
    s.feed(data.encode("utf-8", errors="replace") if isinstance(data, str) else data)
    return s.close()


# ---------------------------------------------------------- --list-subtests


@dataclass
class ListOutput:
    names: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse_list_output(data: bytes | str) -> ListOutput:
    """`--list-subtests` output: one name a line; blank lines ignored.

    Lines that are no valid name (spaces, glob characters, control bytes...)
    and duplicates are problems: --run-subtest could not select them exactly.
    """
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    out = ListOutput()
    seen: set[str] = set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        name = raw.strip()
        if not name:
            continue
        if not is_valid_name(name):
            if len(out.problems) < MAX_ANOMALIES:
                out.problems.append(f"line {lineno}: not a subtest name: {name[:200]!r}")
            continue
        if name in seen:
            out.problems.append(f"line {lineno}: duplicate subtest {name}")
            continue
        seen.add(name)
        out.names.append(name)
    return out


# stderr of a skip (lib/core.h): "FILE:LINE: FUNC(): SKIP: REASON"
_SKIP_AT_RE = re.compile(r"^(?P<where>[^\s:][^:\n]*:\d+): (?P<func>\w+)\(\): SKIP: ", re.M)


def skip_location(stderr: str) -> str | None:
    """Where the binary said it skipped, "FILE:LINE (FUNC())", from its stderr:
    the last such line (a subtest's own skip comes after its dynamic ones);
    None when there is none (a binary that is not ours, an older build)."""
    found = None
    for m in _SKIP_AT_RE.finditer(stderr):
        found = m
    return f"{found['where']} ({found['func']}())" if found else None

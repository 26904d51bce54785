"""The live progress line of a run, on stderr.

    gpuconform: [12/340] 10 pass, 1 fail, 1 skip | ETA 3m20s | host_io@direct-read 4s

On a terminal the line is redrawn in place ("\\r", erase to the end of the
line) about once a second; otherwise (a CI log) a plain line is printed about
every 10 seconds, and once at the end. The ETA adds the expected duration of
every test not finished yet: the baseline's duration of that test when the
baseline has it, else the mean duration of the tests finished so far (no ETA
before the first one finishes when there is no baseline); the running test's
elapsed time is taken off its share.

The arithmetic (estimate_remaining, format_line) is pure; Progress adds the
stream, the clock and an optional timer thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Callable, Mapping, Sequence, TextIO

__all__ = ["estimate_remaining", "format_duration", "format_line", "Progress", "on_stderr"]

TTY_INTERVAL_S = 1.0
PLAIN_INTERVAL_S = 10.0
PREFIX = "gpuconform: "


def format_duration(seconds: float) -> str:
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def estimate_remaining(
    remaining: Sequence[str],
    expected: Mapping[str, float],
    observed: Sequence[float],
    running: str | None = None,
    running_elapsed: float = 0.0,
) -> float | None:
    """Seconds left: remaining tests (running included) at their expected
    duration (expected[name], else the mean of observed); None when a test
    has neither."""
    mean = sum(observed) / len(observed) if observed else None
    total = 0.0
    for name in remaining:
        d = expected.get(name, mean)
        if d is None:
            return None
        if name == running:
            d = max(0.0, d - running_elapsed)
        total += d
    return total


def format_line(
    done: int,
    total: int,
    counts: Mapping[str, int],
    eta: float | None,
    running: str | None = None,
    running_elapsed: float = 0.0,
    width: int | None = None,
) -> str:
    states = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                       if n)
    parts = [f"[{done}/{total}]" + (f" {states}" if states else "")]
    parts.append(f"ETA {format_duration(eta)}" if eta is not None else "ETA ?")
    if running is not None:
        parts.append(f"{running} {format_duration(running_elapsed)}")
    line = PREFIX + " | ".join(parts)
    if width is not None and len(line) > width:
        line = line[: max(0, width - 1)]
    return line


class Progress:
    """Counts and ETA of a run, printed to `stream`."""

    def __init__(
        self,
        stream: TextIO,
        tests: Sequence[str],
        expected: Mapping[str, float] | None = None,
        *,
        done: Mapping[str, str] | None = None,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        width: Callable[[], int] | None = None,
        line_start: Callable[[], bool] | None = None,
    ) -> None:
        self.stream = stream
        self.tests = list(tests)
        self.expected = dict(expected or {})
        self.tty = stream.isatty() if tty is None else tty
        self.clock = clock
        self.width = width
        # Plain mode: whether the shared terminal/log is at the start of a line
        # (pytest's dots may not be); None: assume it is.
        self.line_start = line_start
        self.counts: Counter[str] = Counter((done or {}).values())
        self.finished: set[str] = set(done or {})
        self.durations: list[float] = []
        self.running: str | None = None
        self.running_since = 0.0
        self.last_print: float | None = None
        self.drawn = False  # a tty line is on the screen
        self.paused = False
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.owns_stream = False  # on_stderr(): release() closes the stream too
        # What the running test waits on, shown after its name (per-GPU queues)
        self.note: Callable[[], str | None] = lambda: None

    # ------------------------------------------------------------ state
    def start_test(self, name: str) -> None:
        with self._lock:
            self.running = name
            self.running_since = self.clock()
            self._maybe_print(force=self.tty)

    def end_test(self, name: str, state: str, duration: float | None = None) -> None:
        with self._lock:
            if name == self.running:
                self.running = None
            if name not in self.finished:
                self.finished.add(name)
                self.counts[state] += 1
                if duration is not None:
                    self.durations.append(duration)
            self._maybe_print(force=self.tty)

    def line(self) -> str:
        with self._lock:
            now = self.clock()
            elapsed = now - self.running_since if self.running else 0.0
            remaining = [t for t in self.tests if t not in self.finished]
            eta = estimate_remaining(remaining, self.expected, self.durations, self.running,
                                     elapsed)
            width = self.width() if (self.width is not None and self.tty) else None
            done = sum(1 for t in self.tests if t in self.finished)
            note = self.note() if self.running else None
            running = f"{self.running} ({note})" if note else self.running
            return format_line(done, len(self.tests), self.counts, eta, running, elapsed, width)

    # ----------------------------------------------------------- output
    def _maybe_print(self, force: bool = False) -> None:
        if self.paused:
            return
        now = self.clock()
        if self.tty:
            self._write("\r" + self.line() + "\x1b[K")
            self.drawn = True
            self.last_print = now
        elif force or self.last_print is None or now - self.last_print >= PLAIN_INTERVAL_S:
            if self.last_print is None and not force:
                self.last_print = now  # the first plain line comes after one interval
                return
            self._write(self._plain_prefix() + self.line() + "\n")
            self.last_print = now

    def _plain_prefix(self) -> str:
        try:
            return "" if self.line_start is None or self.line_start() else "\n"
        except Exception:  # noqa: BLE001 - a display nicety never stops the run
            return ""

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def tick(self) -> None:
        """Called by the timer (or a test): redraw / print when due."""
        with self._lock:
            self._maybe_print()

    def clear(self) -> None:
        """Erase the tty line so that other output starts on a clean line."""
        with self._lock:
            if self.tty and self.drawn:
                self._write("\r\x1b[K")
                self.drawn = False

    def pause(self) -> None:
        with self._lock:
            self.clear()
            self.paused = True

    def resume(self) -> None:
        with self._lock:
            self.paused = False

    def start(self) -> None:
        """A daemon thread ticking every second (tty) or every 10 s."""
        if self._thread is not None:
            return
        interval = TTY_INTERVAL_S if self.tty else PLAIN_INTERVAL_S / 5
        self._thread = threading.Thread(target=self._run, args=(interval,),
                                        name="gpuconform-progress", daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.tick()

    def close(self, final: bool = True) -> None:
        """Stop the timer; a last plain line (not on a tty: the line is erased)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        with self._lock:
            if self.tty:
                self.clear()
            elif final and not self.paused and self.last_print is not None:
                self._write(self._plain_prefix() + self.line() + "\n")
            self.paused = True

    def release(self) -> None:
        """The end: close(final=False), and the stream when it is the line's own."""
        self.close(final=False)
        if self.owns_stream:
            try:
                self.stream.close()
            except OSError:
                pass
            self.owns_stream = False


def on_stderr(mode: str, verbose: int, tests: Sequence[str], expected: Mapping[str, float],
              done: Mapping[str, str], line_start: Callable[[], bool]) -> Progress | None:
    """The run's progress line on a duplicate of stderr (its own line-buffered
    stream, closed by release()), started; None where mode ("auto", "tty",
    "plain", "off") and pytest's -v leave it out: off, or auto with -v."""
    if mode == "off" or (mode == "auto" and verbose > 0):
        return None
    try:
        stream = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
    except OSError:
        return None
    tty = stream.isatty() if mode == "auto" else mode == "tty"
    p = Progress(stream, tests, expected, done=done, tty=tty, line_start=line_start,
                 width=lambda: _terminal_width(stream))
    p.owns_stream = True
    p.start()
    return p


def _terminal_width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        return 120

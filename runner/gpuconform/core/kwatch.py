"""The kernel watched around each test: the kernel log (/dev/kmsg) and the
taint flags read after every test and between tests, weighed into the test's
record (dmesg-warn, dmesg-fail) or, for a GPU reset or a new taint that aborts,
turned into the reason the run stops."""

from __future__ import annotations

from typing import Callable

from .kmsg import (DmesgPatterns, KmsgCapture, KmsgReader, TaintWatch, classify_dmesg,
                   describe_taint)
from .results import TestRecord
from .states import State, apply_dmesg

__all__ = ["KernelWatch"]


class KernelWatch:
    """Opened at the start of a run; `note` says why the log is not watched,
    `messages` what the run should be told at once (a taint already set)."""

    def __init__(self, kmsg_path: str, taint_path: str, patterns: DmesgPatterns) -> None:
        self.patterns = patterns
        self.kmsg: KmsgReader | None = None
        self.taint: TaintWatch | None = None
        self.note: str | None = None
        self.messages: list[str] = []
        if kmsg_path != "off":
            self.kmsg = KmsgReader(kmsg_path)
            if self.kmsg.available:
                self.kmsg.mark()
            else:
                self.note = (f"not watched ({self.kmsg.error}): no dmesg-warn / dmesg-fail, "
                             "no abort on a GPU reset")
        else:
            self.note = "not watched (--kmsg off)"
        if taint_path != "off":
            self.taint = TaintWatch(taint_path)
            if self.taint.error:
                self.messages.append(f"kernel taint not watched: {self.taint.error}")
                self.taint = None
            elif self.taint.value:
                self.messages.append(f"kernel already tainted when the run started: "
                                     f"{self.taint.value} ({describe_taint(self.taint.value)})")

    @property
    def log_watched(self) -> bool:
        return self.kmsg is not None and self.kmsg.available

    def to_json(self) -> dict[str, object]:
        """results.json's "kernel_log"."""
        return {"watched": self.log_watched, "note": self.note,
                "taint": self.taint.value if self.taint is not None else None}

    def between(self, name: str) -> tuple[str | None, list[str]]:
        """What the kernel said since the previous test, before name: (abort, notes)."""
        notes: list[str] = []
        abort: str | None = None
        if self.kmsg is not None and self.kmsg.available:
            v = classify_dmesg(self.kmsg.read(), self.patterns)
            if v.aborts:
                abort = f"kernel log between tests, before {name}: {v.aborts[0]}"
            for line in (v.failures + v.warnings)[:3]:
                notes.append(f"kernel log before the test started: {line}")
            notes.extend(v.notes)
        if self.taint is not None:
            change = self.taint.check()
            if change is not None:
                if change.aborts and abort is None:
                    abort = f"{change.describe()} (between tests, before {name})"
                else:
                    notes.append(f"before the test started: {change.describe()}")
        return abort, notes

    def read(self) -> KmsgCapture:
        """The kernel log since the last read (nothing when not watched)."""
        if self.kmsg is not None and self.kmsg.available:
            return self.kmsg.read()
        return KmsgCapture()

    def after(self, rec: TestRecord, window: KmsgCapture | None = None) -> str | None:
        """The test's own window (read now, or given) weighed into rec; the
        abort reason, if any (rec then ends ABORT, the test's own ending kept
        in its first note)."""
        abort: str | None = None
        if self.kmsg is not None and self.kmsg.available:
            v = classify_dmesg(window if window is not None else self.kmsg.read(),
                               self.patterns)
            rec.dmesg += v.lines  # after the copies' own (gang.combine), if any
            rec.notes.extend(v.notes)
            rec.result, rec.reason = apply_dmesg(rec.result, rec.reason, v.warnings, v.failures)
            abort = v.abort_reason
        if self.taint is not None:
            change = self.taint.check()
            if change is not None:
                rec.notes.append(change.describe())
                if change.aborts and abort is None:
                    abort = change.describe()
        if abort is not None:
            rec.notes.insert(0, f"the test itself ended {rec.result.value}"
                             + (f": {rec.reason}" if rec.reason else ""))
            rec.result, rec.reason = State.ABORT, f"run aborted: {abort}"
        return abort

    def weigh(self, rec: TestRecord, judge: Callable[[TestRecord], object],
              window: KmsgCapture | None = None) -> str | None:
        """after(), and rec judged again when the kernel changed its result (a
        record already judged, as gang.combine makes one, would keep the
        verdict of its state before)."""
        before = rec.result
        abort = self.after(rec, window)
        if rec.result is not before:
            judge(rec)
        return abort

    def close(self) -> None:
        if self.kmsg is not None:
            self.kmsg.close()

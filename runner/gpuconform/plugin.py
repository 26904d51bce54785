"""The pytest plugin: each subtest of each binary of a manifest is one item.

    pytest -p gpuconform.plugin BUILD/gpuconform-suite.txt [--gc-timeout S] [--gc-results DIR]

Items are named BINARY@SUBTEST, so -k, -x, --junitxml and friends work. An
item runs `BINARY --run-subtest SUBTEST` (execute), classifies the outcome
(states), and passes, skips with the binary's reason, or fails with a report
that states the state, the reason and the tail of the output. Every outcome
is recorded; at the end RESULTS/results.json and RESULTS/summary.txt are
written and a summary by state is printed.

Records travel on the test reports (report.gpuconform), so they reach the
process that writes the results even when items run elsewhere (xdist).
"""

from __future__ import annotations

import math
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from .execute import (
    DEFAULT_GRACE_S,
    DEFAULT_LIST_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    ExecOptions,
    ListRun,
    list_subtests,
    run_subtest,
)
from .manifest import MANIFEST_NAMES, ManifestEntry, ManifestError, read_manifest
from .results import TestRecord, record_of, render_summary, verdict_of, write_results
from .states import State, signal_name

__all__ = ["ManifestFile", "SubtestItem", "BrokenBinaryItem", "GcSession", "SubtestFailure"]

_REPORT_ATTR = "gpuconform"


def _seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"not a positive number of seconds: {text}")
    return value


def _seconds_or_zero(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a number of seconds >= 0: {text}")
    return value


_seconds.__name__ = "seconds"
_seconds_or_zero.__name__ = "seconds"


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("gpuconform", "gpuconform test binaries")
    g.addoption("--gc-timeout", type=_seconds, default=DEFAULT_TIMEOUT_S, metavar="S",
                help=f"per-subtest timeout in seconds (default {DEFAULT_TIMEOUT_S:g})")
    g.addoption("--gc-grace", type=_seconds_or_zero, default=DEFAULT_GRACE_S, metavar="S",
                help="seconds between SIGTERM and SIGKILL on timeout "
                f"(default {DEFAULT_GRACE_S:g})")
    g.addoption("--gc-list-timeout", type=_seconds, default=DEFAULT_LIST_TIMEOUT_S, metavar="S",
                help=f"timeout of --list-subtests (default {DEFAULT_LIST_TIMEOUT_S:g})")
    g.addoption("--gc-results", metavar="DIR", default=None,
                help="write DIR/results.json and DIR/summary.txt")


_SESSION_KEY = pytest.StashKey["GcSession"]()


def _session(config: pytest.Config) -> "GcSession":
    return config.stash[_SESSION_KEY]


def _terminate(signum: int, frame: Any) -> None:
    # Unwinds like ^C: the running test's process group is killed on the way
    # out (execute.run_command's finally) and the results are still written.
    raise KeyboardInterrupt(f"gpuconform: received {signal_name(signum)}")


def pytest_configure(config: pytest.Config) -> None:
    sess = GcSession(config)
    config.stash[_SESSION_KEY] = sess
    config.pluginmanager.register(sess, "gpuconform-session")
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            sess.saved_handlers[sig] = signal.signal(sig, _terminate)


def pytest_unconfigure(config: pytest.Config) -> None:
    sess = config.stash.get(_SESSION_KEY, None)
    if sess is not None:
        for sig, handler in sess.saved_handlers.items():
            signal.signal(sig, handler)
        sess.saved_handlers.clear()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> "ManifestFile | None":
    if file_path.name in MANIFEST_NAMES:
        node: ManifestFile = ManifestFile.from_parent(parent, path=file_path)
        return node
    return None


# --------------------------------------------------------------- collection


class ManifestFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            manifest = read_manifest(self.path)
        except ManifestError as e:
            raise self.CollectError(str(e)) from None
        options = _session(self.config).options
        for entry in manifest.entries:
            listing = list_subtests(entry.path, options)
            if listing.error is not None or listing.problems:
                yield BrokenBinaryItem.from_parent(self, name=entry.name, entry=entry,
                                                   listing=listing)
            if listing.error is not None:
                continue
            for sub in listing.names:
                yield SubtestItem.from_parent(self, name=f"{entry.name}@{sub}", entry=entry,
                                              subtest=sub)


class SubtestFailure(Exception):
    """An item that ended in a failure state; repr_failure() prints the record."""

    def __init__(self, record: TestRecord) -> None:
        super().__init__(f"{record.result.value}: {record.reason}")
        self.record = record


_CONTROL = {c: f"\\x{c:02x}" for c in range(32) if c not in (9, 10)}
_CONTROL[127] = "\\x7f"


def _tail(text: str, lines: int = 30, chars: int = 4000) -> str:
    """The last lines of text, control characters escaped (terminals, XML)."""
    kept = text.rstrip("\n").splitlines()[-lines:]
    out = "\n".join(kept)[-chars:]
    return out.translate(_CONTROL)


def format_failure(rec: TestRecord) -> str:
    lines = [f"{rec.result.value}: {rec.reason or '(no reason)'}"]
    if rec.dynamic:
        dyn = ", ".join(
            f"{k} {d.result.value}" + (f" ({d.reason})" if d.reason else "")
            for k, d in rec.dynamic.items()
        )
        lines.append(f"dynamic: {dyn}")
    for note in rec.notes:
        lines.append(f"note: {note}")
    if rec.command:
        if rec.returncode is None:
            how = "not reaped"
        elif rec.returncode < 0:
            how = f"killed by {signal_name(-rec.returncode)}"
        else:
            how = f"exit status {rec.returncode}"
        lines.append(f"command: {' '.join(rec.command)} -> {how} after {rec.duration:.3f}s")
    for label, text, total in (("stdout", rec.out, rec.out_bytes), ("stderr", rec.err, rec.err_bytes)):
        if total:
            lines.append(f"---- {label} (tail; {total} bytes in all) ----")
            lines.append(_tail(text))
        else:
            lines.append(f"---- {label}: empty ----")
    return "\n".join(lines).translate(_CONTROL)


def _skip(reason: str) -> BaseException:
    try:
        return pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:  # a pytest without the keyword: location is the plugin's
        return pytest.skip.Exception(reason)


class _GcItem(pytest.Item):
    entry: ManifestEntry
    _gc_record: TestRecord | None

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.entry.line - 1, self.name

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SubtestFailure):
            return format_failure(excinfo.value.record)
        return super().repr_failure(excinfo, style=style)

    def _finish(self, rec: TestRecord) -> None:
        self._gc_record = rec
        if rec.result is State.PASS:
            return
        if rec.result is State.SKIP:
            raise _skip(rec.reason)
        raise SubtestFailure(rec)


class SubtestItem(_GcItem):
    def __init__(self, *, entry: ManifestEntry, subtest: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.entry = entry
        self.subtest = subtest
        self._gc_record = None

    def runtest(self) -> None:
        try:
            run = run_subtest(self.entry.path, self.subtest, _session(self.config).options)
            rec = record_of(self.name, run, verdict_of(run))
        except KeyboardInterrupt as e:
            # pytest re-raises it without a report: record straight away.
            _session(self.config).records[self.name] = TestRecord(
                self.name, str(self.entry.path), self.subtest, State.INCOMPLETE,
                reason=f"interrupted while running ({e or 'KeyboardInterrupt'}); "
                "its process group was killed")
            raise
        except Exception as e:
            self._gc_record = TestRecord(self.name, str(self.entry.path), self.subtest,
                                         State.ERROR, reason=f"runner error: {e!r}")
            raise
        self._finish(rec)


class BrokenBinaryItem(_GcItem):
    """A binary whose --list-subtests failed or printed things that are no names."""

    def __init__(self, *, entry: ManifestEntry, listing: ListRun, **kw: Any) -> None:
        super().__init__(**kw)
        self.entry = entry
        self.listing = listing
        self._gc_record = None

    def runtest(self) -> None:
        ls = self.listing
        cmd = ls.command
        if ls.error is None:
            state = State.FAIL
            reason = f"--list-subtests printed lines that are not subtest names: {ls.problems[0]}"
        elif cmd.spawn_error is not None:
            state, reason = State.ERROR, ls.error
        elif cmd.timed_out:
            state, reason = State.TIMEOUT, ls.error
        elif cmd.returncode is not None and cmd.returncode < 0:
            state, reason = State.CRASH, ls.error
        else:
            state, reason = State.FAIL, ls.error
        notes = [f"--list-subtests: {p}" for p in ls.problems[1:]] + cmd.notes()
        rec = TestRecord(
            name=self.name, binary=str(ls.binary), subtest=None, result=state, reason=reason,
            notes=notes, out=cmd.stdout.text(), err=cmd.stderr.text(),
            out_bytes=cmd.stdout.total, err_bytes=cmd.stderr.total, start=cmd.start,
            end=cmd.end, duration=cmd.duration, returncode=cmd.returncode, command=cmd.argv,
        )
        self._finish(rec)


# ------------------------------------------------------------------ session


class GcSession:
    """Options, records and the end-of-run outputs (registered per config)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = ExecOptions(
            timeout_s=config.getoption("gc_timeout"),
            grace_s=config.getoption("gc_grace"),
            list_timeout_s=config.getoption("gc_list_timeout"),
        )
        res = config.getoption("gc_results")
        self.results_dir: Path | None = Path(res).absolute() if res else None
        self.records: dict[str, TestRecord] = {}
        self.selected: dict[str, tuple[str, str | None]] = {}  # name -> (binary, subtest)
        self.collection_errors: list[str] = []
        self.start = time.time()
        self.written: tuple[Path, Path] | None = None
        self.write_error: str | None = None
        self.saved_handlers: dict[int, Any] = {}
        # An xdist worker sends its reports to the controller, which writes.
        self.is_worker = hasattr(config, "workerinput")

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        o = self.options
        line = f"gpuconform: timeout {o.timeout_s:g}s, grace {o.grace_s:g}s"
        if self.results_dir is not None:
            line += f", results {self.results_dir}"
        return [line]

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            text = str(report.longrepr).strip()
            self.collection_errors.append(f"{report.nodeid}: {text.splitlines()[-1] if text else ''}")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            if isinstance(item, _GcItem):
                sub = item.subtest if isinstance(item, SubtestItem) else None
                self.selected[item.name] = (str(item.entry.path), sub)

    @pytest.hookimpl(hookwrapper=True)  # type: ignore[misc]
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        rec = getattr(item, "_gc_record", None)
        if call.when == "call" and isinstance(rec, TestRecord):
            report = outcome.get_result()
            setattr(report, _REPORT_ATTR, {"name": rec.name, "record": rec.to_json()})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, _REPORT_ATTR, None)
        if isinstance(data, dict):
            self.records[data["name"]] = TestRecord.from_json(data["name"], data["record"])
            delattr(report, _REPORT_ATTR)  # the report lives on in the stats: keep it small
            return
        name = report.nodeid.rsplit("::", 1)[-1]
        if report.failed and report.when != "call" and name in self.selected:
            # A setup/teardown error outside our runtest (another plugin, a fixture).
            binary, sub = self.selected[name]
            text = str(report.longrepr).strip().splitlines()
            self.records.setdefault(name, TestRecord(
                name, binary, sub, State.ERROR,
                reason=f"pytest {report.when} error: {text[-1] if text else '?'}"))

    def run_info(self, exitstatus: int) -> dict[str, Any]:
        u = os.uname()
        return {
            "start": self.start,
            "end": time.time(),
            "argv": list(sys.argv),
            "args": [str(a) for a in self.config.args],
            "timeout": self.options.timeout_s,
            "grace": self.options.grace_s,
            "hostname": socket.gethostname(),
            "kernel": f"{u.sysname} {u.release} {u.machine}",
            "pytest_exitstatus": int(exitstatus),
            "collection_errors": list(self.collection_errors),
        }

    def ordered_records(self) -> dict[str, TestRecord]:
        """Records in collection order, NOTRUN for the selected that never ran."""
        out: dict[str, TestRecord] = {}
        for name, (binary, sub) in self.selected.items():
            rec = self.records.get(name)
            out[name] = rec if rec is not None else TestRecord(
                name, binary, sub, State.NOTRUN, reason="not run (the run stopped before it)")
        for name, rec in self.records.items():
            out.setdefault(name, rec)
        return out

    @pytest.hookimpl(trylast=True)  # type: ignore[misc]
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.results_dir is None or self.is_worker or self.config.getoption("collectonly"):
            return
        try:
            self.written = write_results(self.results_dir, self.ordered_records(),
                                         self.run_info(exitstatus))
        except OSError as e:
            self.write_error = f"cannot write results to {self.results_dir}: {e}"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.config.getoption("collectonly"):
            return
        recs = self.ordered_records()
        if not recs and not self.collection_errors:
            return
        tr = terminalreporter
        tr.write_sep("=", "gpuconform summary")
        summary = render_summary(recs.values(), self.collection_errors)
        for line in summary.rstrip("\n").splitlines():
            tr.write_line(line)
        if self.written is not None:
            tr.write_line(f"results: {self.written[0]}")
        if self.write_error is not None:
            tr.write_line(f"gpuconform: {self.write_error}", red=True)

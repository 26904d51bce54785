"""The pytest plugin: each subtest of each binary of a manifest is one item.

    pytest -p gpuconform.plugin BUILD/gpuconform-suite.txt [--gc-timeout S] [--gc-results DIR] ...

Items are named BINARY@SUBTEST, so -k, -x, --junitxml and friends work.

Selection, after pytest's own (-k, -m): the test lists (--gc-testlist), then
--gc-include / --gc-exclude regexes: that is the run's "selection"; then
--gc-shard I/N keeps this shard's part. A test list naming a test that does
not exist stops the run before anything runs (RunControl.fatal, exit 4 under
plain pytest; `gpuconform run` exits 2).

An item (attempts.py), for each attempt (1 + --gc-retries at most, should_retry):
reads the kernel log written since the previous test (a GPU reset there
aborts the run before the test), runs `BINARY --run-subtest SUBTEST` in its
own session (execute) with GPUCONFORM_RUN_ID, the device variables and
(--gc-scratch-dir) GPUCONFORM_SCRATCH_DIR in its
environment, appends the journal's start line as soon as the process
exists, classifies the outcome (states), reads the kernel log of its window
(kmsg: pass + warnings -> dmesg-warn, fail + warnings -> dmesg-fail, a GPU
reset / hang line -> abort) and the kernel taint. Then expectations.judge()
gives the final state and whether it was expected; the record is appended to
the journal; the item passes, skips (skips, and skip rules: never run),
xfails (an expected failure) or fails (anything unexpected). An abort stops
pytest after the item (session.shouldstop): the rest become notrun.

At the end (core/runend.py): RESULTS/results.json and summary.txt, then the
comparison with the fingerprint's timing baseline, then report.html; each step
guarded so that a failing one never loses what is already written. The two
products a run ends with are this module's to hand in (perf's judge_run, the
report's write_html through write_report): it sits on top of the run core
beside cli.py, and the core imports neither product.

The results directory is the run's from its first byte
(resultsdir.claim_results_dir: the journal created with O_EXCL and locked
before run.json); a run that cannot have it
(another run's, read-only) is fatal: nothing runs, nothing is written there.
The tests' temporary files live in the run's own directory (runtmp.py),
removed at the end, or by the resume of a run that was killed. A journal
line that cannot be written (a full disk) stops the run at once: the test
that was going on is cut from the journal (a resume runs it again), nothing
else is written, and the run's last line names the file system
(RunControl.stopped).

Resume (--gc-resume DIR, `gpuconform resume DIR`): the options and the
selection come from DIR/run.json; the journal's records are kept; a test that
was running (start line without a result) becomes incomplete, after the
processes the dead runner left (found by GPUCONFORM_RUN_ID and the start
line's token; its process group pgid) are killed; the rest run.

Records travel on the test reports (report.gpuconform), so they reach the
process that writes the results even when items run elsewhere (xdist; the
journal, the kernel log and aborts work only without xdist).

PYTEST_DONT_REWRITE (the CLI imports this module before pytest loads it)
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pytest

from .core.execute import ExecOptions, ListRun, list_subtests
from .core.attempts import TestRun, run_attempt, run_test, skip_record
from .core.gang import combine, one_copy, run_copies
from .core.gpustate import gpu_state
from .core.placement import DEFAULT_PLACEMENT, Slot, list_placement
from .core.expectations import FLAKE, ExpectationError, Rule
from .core.fmt import one_line
from .core.fsfault import fault_detail, remedy
from .core.journal import (
    JOURNAL_NAME,
    RUN_ID_ENV,
    Journal,
    JournalError,
    JournalWriteError,
    boot_id,
    read_journal,
    read_run_json,
)
from .core.levels import LEVEL_ENV, SOAK_SECONDS_ENV, SoakPlan, plan_soaks
from .core.kwatch import KernelWatch
from .core.outfiles import Spares
from .core.manifest import MANIFEST_NAMES, ManifestEntry, ManifestError, read_manifest
from .core.optable import add_pytest_options, check_pytest_given
from .core.options import (FIELD_ORDER, PROGRESS_MODES, SCRATCH_ENV, InputError, RunInputs,
                           RunOptions, load_inputs)
from .core.progress import Progress, on_stderr
from .core.queueblock import QueueBlock, QueuedItem
from .core.resume import ResumeError, take_over
from .core.results import TestRecord, judged, render_summary
from .core.runend import RunEnd, ordered_records, run_info
from .core.resultsdir import ResultsDirError, claim_results_dir
from .core.runtmp import make_run_tmp, remove_run_tmp
from .core.shard import shard
from .core.states import State, signal_name
from .core.testlist import TestlistError, TestPattern

__all__ = [
    "LEAN_ARGS",
    "ManifestFile",
    "SubtestItem",
    "BrokenBinaryItem",
    "GcSession",
    "SubtestFailure",
    "RunControl",
]

_REPORT_ATTR = "gpuconform"

# What `gpuconform run` and `resume` give pytest before the caller's own
# arguments (which may undo them: --capture=fd, -p logging). pytest wraps
# each phase of each item in machinery for tests that run in its process: it
# captures the process's stdout and stderr (a binary writes into the files
# execute.py gives it, and the runner prints nothing while an item runs) and
# its log records (the runner logs none). Both cost more per subtest than the
# rest of pytest's protocol (bench/runner_phases.py), so they are off.
LEAN_ARGS = ("--capture=no", "-p", "no:logging")

# ------------------------------------------------------------ pytest hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    """The run options (optable.py) in RunOptions' order, with the plugin's own."""
    g = parser.getgroup("gpuconform", "gpuconform test binaries")

    def results() -> None:
        g.addoption("--gc-results", metavar="DIR", default=None,
                    help="write DIR/results.json, summary.txt, journal.jsonl, run.json, "
                    "report.html")

    def progress() -> None:
        g.addoption("--gc-progress", choices=PROGRESS_MODES, default="off",
                    help="live progress line on stderr (default off; gpuconform run: auto)")

    add_pytest_options(g, FIELD_ORDER, before={"testlists": results, "level": progress})
    g.addoption("--gc-resume", metavar="DIR", default=None,
                help="continue the run of DIR (its run.json and journal)")


_SESSION_KEY = pytest.StashKey["GcSession"]()


def _session(config: pytest.Config) -> "GcSession":
    return config.stash[_SESSION_KEY]


def _terminate(signum: int, frame: Any) -> None:
    # Unwinds like ^C: the running test's process group is killed on the way
    # out (execute.run_command's finally) and the results are still written.
    raise KeyboardInterrupt(f"gpuconform: received {signal_name(signum)}")


@dataclass(eq=False)  # a plugin object: hashable by identity
class RunControl:
    """Passed by `gpuconform run` / `resume` in pytest.main(plugins=[...]):
    what the plugin could not express through pytest's exit status."""

    pytest_args: list[str] = field(default_factory=list)  # kept in run.json for resume
    selftest: bool = False
    fatal: str | None = None  # one line: why nothing ran
    stopped: str | None = None  # one line: why the run stopped before its end (cannot record)
    recorded: int = 0  # tests this process recorded in the journal (0: it did nothing)
    results_dir: Path | None = None
    written: bool = False


class RecordingStopped(Exception):
    """The journal can take no more lines (a full disk): the run stops at
    once, the test that was going on unrecorded (a resume runs it again)."""


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
        sess.close()


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
        sess = _session(self.config)
        sess.manifests.append(self.path)
        for entry in manifest.entries:
            listing = list_subtests(entry.path, sess.exec_options)
            if listing.error is not None or listing.problems:
                yield BrokenBinaryItem.from_parent(self, name=entry.name, entry=entry,
                                                   listing=listing)
            if listing.error is not None:
                continue
            where = sess.placements_of(entry.path)
            for sub in listing.names:
                yield SubtestItem.from_parent(self, name=f"{entry.name}@{sub}", entry=entry,
                                              subtest=sub,
                                              placement=where.get(sub, DEFAULT_PLACEMENT))


class SubtestFailure(Exception):
    """An item that ended unexpectedly; repr_failure() prints the record."""

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
    if rec.unexpected and not rec.result.is_failure and rec.result is not State.NOTRUN:
        what = "flake" if rec.final == FLAKE else rec.result.value
        lines = [f"{what} (unexpected): {rec.judgement or rec.reason or '(no reason)'}"]
    else:
        lines = [f"{rec.result.value}: {rec.reason or '(no reason)'}"]
    if rec.dynamic:
        dyn = ", ".join(
            f"{k} {d.result.value}" + (f" ({d.reason})" if d.reason else "")
            for k, d in rec.dynamic.items()
        )
        lines.append(f"dynamic: {dyn}")
    if len(rec.attempts) > 1:
        lines.append("attempts: " + ", ".join(str(a.get("result")) for a in rec.attempts))
    if rec.judgement and rec.expected is not None:
        lines.append(f"expectation: {rec.judgement}")
    for note in rec.notes:
        lines.append(f"note: {note}")
    for line in rec.dmesg[:20]:
        lines.append(f"kernel: {line}")
    if len(rec.dmesg) > 20:
        lines.append(f"kernel: ... {len(rec.dmesg) - 20} more lines in results.json")
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
    subtest: str | None
    _gc_record: TestRecord | None

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.entry.line - 1, self.name

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SubtestFailure):
            return format_failure(excinfo.value.record)
        return super().repr_failure(excinfo, style=style)

    def _finish(self, rec: TestRecord) -> None:
        self._gc_record = rec
        if rec.unexpected:
            if rec.result is State.NOTRUN:
                raise _skip(f"notrun: {rec.reason}")
            raise SubtestFailure(rec)
        if rec.result in (State.SKIP, State.NOTRUN):
            raise _skip(rec.reason)
        if rec.result.is_failure:
            pytest.xfail(rec.judgement or rec.reason)

    def runtest(self) -> None:
        sess = _session(self.config)
        try:
            rec = sess.run_item(self)
        except KeyboardInterrupt as e:
            # pytest re-raises it without a report: record straight away.
            rec = sess.new_record(self, State.INCOMPLETE,
                                  f"interrupted while running ({e or 'KeyboardInterrupt'}); "
                                  "its process group was killed")
            sess.finish_record(rec, interrupted=True)
            raise
        except RecordingStopped:
            raise sess.stop_item(self) from None
        except (SubtestFailure, pytest.skip.Exception):
            raise
        except Exception as e:
            rec = sess.new_record(self, State.ERROR, f"runner error: {e!r}")
            try:
                sess.finish_record(rec)
            except RecordingStopped:
                raise sess.stop_item(self) from None
            self._gc_record = rec
            raise
        self._finish(rec)


class SubtestItem(_GcItem):
    def __init__(self, *, entry: ManifestEntry, subtest: str, placement: str = DEFAULT_PLACEMENT,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.entry = entry
        self.subtest: str | None = subtest
        self.placement = placement
        self._gc_record = None


class BrokenBinaryItem(_GcItem):
    """A binary whose --list-subtests failed or printed things that are no names."""

    def __init__(self, *, entry: ManifestEntry, listing: ListRun, **kw: Any) -> None:
        super().__init__(**kw)
        self.entry = entry
        self.subtest = None
        self.placement = DEFAULT_PLACEMENT
        self.listing = listing
        self._gc_record = None

    def listing_record(self) -> TestRecord:
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
        return TestRecord(
            name=self.name, binary=str(ls.binary), subtest=None, result=state, reason=reason,
            notes=notes, out=cmd.stdout.text(), err=cmd.stderr.text(),
            out_bytes=cmd.stdout.total, err_bytes=cmd.stderr.total, start=cmd.start,
            end=cmd.end, duration=cmd.duration, returncode=cmd.returncode, command=cmd.argv,
        )


# ------------------------------------------------------------------ session


class GcSession:
    """A run's state (options, records, journal, kernel watch) under pytest's
    hooks: a test runs in attempts.py, the end is written by runend.py."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.control: RunControl | None = next(
            (p for p in config.pluginmanager.get_plugins() if isinstance(p, RunControl)), None)
        self.is_worker = hasattr(config, "workerinput")  # xdist: the controller writes
        self.saved_handlers: dict[int, Any] = {}
        self.records: dict[str, TestRecord] = {}
        self.selected: dict[str, tuple[str, str | None]] = {}  # name -> (binary, subtest)
        self.selection: list[str] = []  # before sharding
        self.collection_errors: list[str] = []
        self.manifests: list[Path] = []
        self.rules: dict[str, Rule] = {}
        self.start = time.time()
        self.end: RunEnd | None = None  # once the run has ended (sessionfinish)
        self.fatal: str | None = None
        self.stopped: str | None = None  # the one line of a run that stopped (cannot record)
        self.stop_error: JournalWriteError | None = None  # the journal line that failed
        self._mark = 0  # the journal's size before the running test's first line
        self._json: tuple[TestRecord, dict[str, Any]] | None = None  # journaled last: its JSON
        self.run_tmp: Path | None = None  # runtmp.py: the run's temporary directory
        self.abort: str | None = None
        self.messages: list[str] = []  # run-level notes for the summary
        self.errors: list[str] = []  # one-line errors printed at the end
        self.journal: Journal | None = None
        self.kernel: KernelWatch | None = None
        self.progress: Progress | None = None
        self.asked_baseline: Any = None  # --baseline / --baselines: load_run_inputs
        self.baseline: Any = None
        self.baseline_path: Path | None = None
        self.baseline_error: str | None = None
        self.resumed: dict[str, Any] | None = None
        self.run_json: dict[str, Any] | None = None
        self.run_id = uuid.uuid4().hex
        self.collect_only = bool(config.getoption("collectonly"))

        res = config.getoption("gc_resume") or config.getoption("gc_results")
        self.results_dir: Path | None = Path(res).absolute() if res else None
        self.resume_dir: Path | None = (Path(config.getoption("gc_resume")).absolute()
                                        if config.getoption("gc_resume") else None)
        try:
            if self.resume_dir is not None:
                self.run_json = read_run_json(self.resume_dir)
                self.opts = RunOptions.from_json(self.run_json["options"])
                self.run_id = self.run_json["run_id"]
            else:
                self.opts = RunOptions.from_config(config)
                check_pytest_given(config.getoption)  # a --gc-kmsg given must open
            selftest = self.control.selftest if self.control else False
            self.inputs, self.asked_baseline = load_run_inputs(self.opts, selftest=selftest)
        except (JournalError, InputError) as e:
            raise pytest.UsageError(f"gpuconform: {e}") from None
        if self.inputs.fingerprint_error:
            self.messages.append(self.inputs.fingerprint_error)
        o = self.opts
        self.exec_options = ExecOptions(timeout_s=o.timeout, grace_s=o.grace,
                                        list_timeout_s=o.list_timeout)
        self.env_extra = {RUN_ID_ENV: self.run_id}
        self.node = self.inputs.node
        self.stopping = threading.Event()  # an interrupt: no copy of a test starts after it
        self.running: set[int] = set()  # process groups of the running copies
        self._placements: dict[str, dict[str, str]] = {}
        self.block: QueueBlock | None = None  # the per-GPU queues of the running gpu tests
        self._plan_lock = threading.Lock()  # a soak's seconds, asked by two queues at once
        if o.scratch_dir is not None:
            self.env_extra[SCRATCH_ENV] = o.scratch_dir
        if o.level is not None:
            self.env_extra[LEVEL_ENV] = o.level
        self.soak_plan: SoakPlan | None = None  # level long only
        # Our own handle on the terminal: pytest's capture redirects fd 2
        # while a test runs, and the progress thread writes at any time.
        self.progress_mode = config.getoption("gc_progress")
        if self.resume_dir is not None and not self.is_worker and not self.collect_only:
            self._take_over()

    # ------------------------------------------------------------- resume
    def _take_over(self) -> None:
        """Resume (resume.py): the dead run's journal, records and messages."""
        assert self.resume_dir is not None and self.run_json is not None
        try:
            r = take_over(self.resume_dir, self.run_json, self.run_id, self.judge_record)
        except ResumeError as e:
            self.fatal = str(e)  # nothing runs; collection ends in _fatal
            if self.control is not None:
                self.control.fatal = self.fatal
            return
        self.journal = r.journal
        self.records.update(r.records)
        self.resumed = r.info
        self.messages.extend(r.messages)

    # ---------------------------------------------------------- selection
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        o = self.opts
        line = f"gpuconform: timeout {o.timeout:g}s, grace {o.grace:g}s, retries {o.retries}"
        if self.results_dir is not None:
            line += f", results {self.results_dir}"
        return [line]

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            text = str(report.longrepr).strip()
            self.collection_errors.append(f"{report.nodeid}: {text.splitlines()[-1] if text else ''}")

    @pytest.hookimpl(hookwrapper=True)  # type: ignore[misc]
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> Any:
        available = [it.name for it in items if isinstance(it, _GcItem)]
        outcome = yield  # -k, -m and other plugins deselect first
        if outcome.excinfo is not None:  # a bad -k: pytest's usage error, nothing started
            return
        self._select(items, available)

    def _fatal(self, items: list[pytest.Item], msg: str) -> None:
        self.fatal = msg
        if self.control is not None:
            self.control.fatal = msg
        if items:
            self.config.hook.pytest_deselected(items=list(items))
        items[:] = []

    def _select(self, items: list[pytest.Item], available: list[str]) -> None:
        if self.fatal is not None:  # found before collection (a resume that cannot start)
            return self._fatal(items, self.fatal)
        by_name = {it.name: it for it in items if isinstance(it, _GcItem)}
        if self.run_json is not None:
            tests = list(self.run_json["tests"])
            self.selection = list(self.run_json["selection"])
            try:
                self.rules = self.inputs.expectations.lookup_all(self.selection)
            except ExpectationError as e:
                return self._fatal(items, str(e))
        else:
            try:
                chosen = select_tests_or_raise(available, self.inputs.patterns, self.opts)
            except TestlistError as e:
                return self._fatal(items, str(e))
            self.selection = [n for n in chosen if n in by_name]
            tests = (shard(self.selection, *self.opts.shard) if self.opts.shard
                     else list(self.selection))
            try:
                self.rules = self.inputs.expectations.lookup_all(self.selection)
            except ExpectationError as e:
                return self._fatal(items, str(e))
            self.inputs.expectations.note_available(available)
        tests = self._plan_soaks(tests, by_name)
        wanted = set(tests)
        for name in tests:
            it = by_name.get(name)
            if it is not None:
                self.selected[name] = (str(it.entry.path), it.subtest)
            else:
                self.selected[name] = _split_name(name)
                if name not in self.records:
                    self.records[name] = self.judge_record(TestRecord(
                        name, *_split_name(name), State.ERROR,
                        reason="no longer listed by its binary (rebuilt since the run started?)"))
        keep = [it for it in items
                if not isinstance(it, _GcItem) or (it.name in wanted and it.name not in self.records)]
        if self.soak_plan is not None:  # the soaks last, as planned
            order = {n: i for i, n in enumerate(tests)}
            keep.sort(key=lambda it: order.get(it.name, -1))  # stable: non-suite items first
        kept = {id(it) for it in keep}
        dropped = [it for it in items if id(it) not in kept]
        if dropped:
            self.config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        self._gather_gpu_tests(items)
        if not self.is_worker and not self.collect_only:
            self._start_run(items, tests)

    def _queues_apply(self) -> bool:
        """Whether gpu tests run from per-GPU queues (queues.py): several GPUs,
        one copy a GPU at once, not --lockstep."""
        n = len(self.node.gpus)
        return n > 1 and not self.opts.lockstep and self.node.jobs >= n

    def _gather_gpu_tests(self, items: list[pytest.Item]) -> None:
        """With per-GPU queues, the gpu tests made one block where the first
        of them stands, so that the queues span them all (at level long the
        soaks' planned order is kept)."""
        if not self._queues_apply() or self.soak_plan is not None:
            return
        gpu = [it for it in items if isinstance(it, SubtestItem) and it.placement == "gpu"]
        if not gpu:
            return
        first, ids = items.index(gpu[0]), {id(it) for it in gpu}
        rest = [it for it in items if id(it) not in ids]
        items[:] = rest[:first] + gpu + rest[first:]

    def _plan_soaks(self, tests: list[str], by_name: dict[str, Any]) -> list[str]:
        """At level long: the soaking tests moved last and their plan
        (levels.plan_soaks)."""
        if self.opts.level != "long":
            return tests
        wanted = set(tests)
        binaries = {str(it.entry.path) for n, it in by_name.items() if n in wanted}
        start = (self.run_json or {}).get("start", self.start)
        tests, self.soak_plan, notes = plan_soaks(tests, binaries, start, self.opts.duration,
                                                  self.records)
        self.messages.extend(notes)
        return tests

    # --------------------------------------------------------- run start
    def _start_run(self, items: list[pytest.Item], tests: list[str]) -> None:
        """The results directory made this run's (a new run) and the run's
        temporary directory; then the kernel watch, baseline and progress. A
        directory that cannot be had is fatal: nothing runs, nothing is written."""
        o = self.opts
        if self.results_dir is not None and self.run_json is None:
            why = self._claim(tests)
            if why is not None:
                return self._fatal(items, f"cannot start the run in {self.results_dir}: {why}")
        if self.run_tmp is None:
            try:
                self.run_tmp = make_run_tmp(self.run_id)
            except OSError as e:
                return self._fatal(items, f"cannot make the run's temporary directory: "
                                   f"{e.filename}: {fault_detail(Path(e.filename or '/'), e)}")
        self.exec_options = replace(self.exec_options, tmp_root=self.run_tmp, private_tmp=True,
                                    spares=Spares(str(self.run_tmp)))
        self.kernel = KernelWatch(o.kmsg, o.taint_file, self.inputs.dmesg)
        self.messages.extend(self.kernel.messages)
        if len(self.node.gpus) > 1:
            how = ("each GPU walking them from its own start (per-GPU queues)"
                   if self._queues_apply() else f"in lockstep, {self.node.jobs} at a time")
            self.messages.append(f"{len(self.node.gpus)} GPUs: one-GPU tests on each, {how}")
        self._find_baseline()
        self._start_progress(tests)

    def _claim(self, tests: list[str]) -> str | None:
        """A new run's results directory made its own, with its journal,
        temporary directory and run.json (resultsdir.claim_results_dir).
        None, or why not in one line (what it made undone)."""
        assert self.results_dir is not None
        o = self.opts
        run_json = {
            "manifest": str(self.manifests[0]) if self.manifests else "",
            "run_id": self.run_id,
            "boot_id": boot_id(),
            "start": self.start,
            "argv": list(sys.argv),
            "pytest_args": list(self.control.pytest_args) if self.control else [],
            "selftest": bool(self.control.selftest) if self.control else False,
            "options": o.to_json(),
            "platform": self.inputs.platform,
            "expectation_files": [str(p) for p in self.inputs.expectation_files],
            "selection": list(self.selection),
            "shard": list(o.shard) if o.shard else None,
            "tests": list(tests),
            "gpu_state_start": self._gpu_state(),
        }
        try:
            self.journal, self.run_tmp = claim_results_dir(self.results_dir, self.run_id,
                                                           run_json)
        except ResultsDirError as e:
            return str(e)
        self.run_json = run_json
        return None

    def _find_baseline(self) -> None:
        """The baseline asked for by name was loaded and checked before the run
        (load_run_inputs: not there is an error); else data/baselines/'s of this
        fingerprint: none is a note, a damaged one an error after the run."""
        o = self.opts
        if o.no_baseline:
            return
        if self.asked_baseline is not None:
            self.baseline = self.asked_baseline
            self.baseline_path = self.baseline.path
            return
        try:
            from .perf.baseline import check_fingerprint, find_baseline, load_baseline
            from .core.fingerprint import Fingerprint

            if self.inputs.fingerprint is None:
                raise RuntimeError(self.inputs.fingerprint_error or "no fingerprint")
            fp = Fingerprint.from_json(self.inputs.fingerprint)
            path = find_baseline(fp)
            if path is None:
                self.messages.append(f"baseline: none for fingerprint {fp.key()} in "
                                     "data/baselines")
                return
            self.baseline_path = path
            baseline = load_baseline(path)
            check_fingerprint(baseline, fp)
            self.baseline = baseline
        except Exception as e:  # noqa: BLE001 - reported in one line; the run goes on
            self.baseline_error = f"baseline: {one_line(e, 300) or type(e).__name__}"

    def _start_progress(self, tests: list[str]) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")

        def line_start() -> bool:
            return not getattr(getattr(tr, "_tw", None), "width_of_current_line", 0)

        self.progress = on_stderr(
            self.progress_mode, self.config.getoption("verbose") or 0, tests,
            getattr(self.baseline, "durations", None) or {},
            {n: self.records[n].result.value for n in set(tests) & set(self.records)},
            line_start)

    @pytest.hookimpl(tryfirst=True)  # type: ignore[misc]
    def pytest_report_teststatus(self, report: Any, config: pytest.Config) -> Any:
        """On a tty with the progress line, pytest's per-test letters would
        fight with it: they are left out (the counts are on the line)."""
        if self.progress is None or not self.progress.tty or report.when != "call":
            return None
        if hasattr(report, "wasxfail"):
            return "xfailed", "", "XFAIL"
        if report.passed:
            return "passed", "", "PASSED"
        if report.failed:
            return "failed", "", "FAILED"
        return "skipped", "", "SKIPPED"

    @pytest.hookimpl(hookwrapper=True)  # type: ignore[misc]
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        try:
            yield
        finally:
            self._close_block(kill=True)  # pytest stopped early: their copies go too
            if self.progress is not None:
                self.progress.close()

    # ------------------------------------------------------------- items
    def new_record(self, item: _GcItem, state: State, reason: str) -> TestRecord:
        return TestRecord(item.name, str(item.entry.path), item.subtest, state, reason=reason)

    def judge_record(self, rec: TestRecord, states: Sequence[str] | None = None) -> TestRecord:
        return judged(rec, self.rules.get(rec.name) or self._lookup(rec.name), states)

    def _lookup(self, name: str) -> Rule | None:
        try:
            return self.inputs.expectations.lookup(name)
        except ExpectationError:
            return None

    def finish_record(self, rec: TestRecord, interrupted: bool = False) -> None:
        """Judge (when not yet), journal, count; an abort stops pytest."""
        if rec.expected is None:
            self.judge_record(rec)
        if interrupted:
            self.records[rec.name] = rec  # no report will carry it
        if self.journal is not None:
            self._json = (rec, rec.to_json())  # the report carries the same (makereport)
            try:
                self.journal.result(rec.name, self._json[1])
                if self.abort and rec.result is State.ABORT:
                    self.journal.event("abort", test=rec.name, reason=self.abort)
                if self.control is not None:
                    self.control.recorded += 1
            except JournalWriteError as e:
                self.cannot_record(e)
                if not interrupted:
                    raise RecordingStopped(str(e)) from None
                return
        if self.progress is not None:
            self.progress.end_test(rec.name, rec.result.value, rec.duration)

    def cannot_record(self, e: JournalWriteError) -> None:
        """The journal took no more: the running test's lines are cut away
        (a resume runs it again) and the run stops after it (stop_item)."""
        if self.stop_error is None:
            self.stop_error = e
            if self.journal is not None:
                self.journal.rewind(self._mark)

    def stop_item(self, item: pytest.Item) -> BaseException:
        """What the item ends with when the run can no longer record: pytest
        stops after it (no traceback; the one line comes at the end)."""
        item.session.shouldstop = "gpuconform: the run stopped: its results cannot be recorded"
        return _skip("not run: the results directory can take no more (see the last line)")

    def _kernel_gap(self, name: str) -> tuple[str | None, list[str]]:
        """The kernel log and taint since the previous test: (abort, notes)."""
        return self.kernel.between(name) if self.kernel is not None else (None, [])

    def placements_of(self, binary: Path) -> dict[str, str]:
        """{subtest: placement} of a binary (placement.list_placement), once."""
        key = str(binary)
        if key not in self._placements:
            where, note = list_placement(Path(binary))
            if note:
                self.messages.append(note)
            self._placements[key] = where
        return self._placements[key]

    def run_item(self, item: _GcItem) -> TestRecord:
        """The item run, once or once per GPU (placement.py), journaled; an
        abort stops pytest."""
        name = item.name
        if self.journal is not None:
            self._mark = self.journal.size()
        if self.progress is not None:
            self.progress.start_test(name)
        if isinstance(item, BrokenBinaryItem):
            rec = item.listing_record()
            self.finish_record(rec)
            return rec
        assert item.subtest is not None
        self.messages.extend(self.node.check())
        slots = self.node.slots(item.placement)
        if len(slots) == 1:
            run = self._run_once(item, slots[0])
        elif isinstance(item, SubtestItem) and self._queued(item):
            run = self._run_queued(item, slots)
        else:
            run = self._run_copies(item, slots)
        if run.abort is not None and run.journaled and self._gpu_lost(run.record, run.abort):
            pass  # one GPU of several: the run goes on without it
        elif run.abort is not None:
            self._abort(item, run.abort)
        if not run.journaled:  # never run: a resume runs it
            if self.progress is not None:
                self.progress.end_test(name, run.record.result.value, None)
            return run.record
        self.finish_record(run.record)
        return run.record

    def _timeout_env(self, name: str) -> tuple[float, dict[str, str]]:
        """The test's timeout and environment (a soak's seconds at level long)."""
        timeout = self.opts.timeout_for(name)
        env = dict(self.env_extra)
        if self.soak_plan is not None and name in self.soak_plan.left + list(self.soak_plan.given):
            secs = self.soak_plan.seconds_for(name, time.time())
            env[SOAK_SECONDS_ENV] = f"{secs:g}"
            timeout += secs
        return timeout, env

    def _attempt_fn(self, item: _GcItem, slot: Slot, timeout: float, env: dict[str, str],
                    after: Any) -> Any:
        """One attempt of the item in slot (attempts.run_attempt), journaled
        as it starts, its process group known to the session while it runs."""
        name, path, sub = item.name, item.entry.path, item.subtest
        assert sub is not None
        gpu = slot.gpu.index if slot.gpu is not None else None

        def attempt(number: int) -> tuple[TestRecord, str | None]:
            mine: list[int] = []

            def spawned(test: str, n: int, pid: int, token: str) -> None:
                mine.append(pid)
                self.running.add(pid)
                if self.stopping.is_set():
                    raise KeyboardInterrupt("gpuconform: the run was interrupted")
                if self.journal is not None:
                    try:
                        self.journal.start(test, n, pid, token, gpu)
                    except JournalWriteError as e:  # the test is killed on the way out
                        self.cannot_record(e)
                        raise RecordingStopped(str(e)) from None

            try:
                return run_attempt(name, path, sub, number, self.exec_options,
                                   {**env, **slot.env}, timeout, on_spawn=spawned, after=after,
                                   catalogue=self.inputs.catalogue)
            finally:
                self.running.difference_update(mine)

        return attempt

    def _run_once(self, item: _GcItem, slot: Slot) -> TestRun:
        """The item in its one slot: the kernel read before and after each attempt."""
        name, binary = item.name, str(item.entry.path)
        lost = self._lost(slot)
        if lost is not None:
            run = TestRun(self.judge_record(TestRecord(name, binary, item.subtest,
                                                       State.NOTRUN, reason=f"not run: {lost}")))
        else:
            timeout, env = self._timeout_env(name)
            after = self.kernel.after if self.kernel is not None else None
            run = run_test(name, binary, item.subtest, self.rules.get(name), self.opts.retries,
                           self._attempt_fn(item, slot, timeout, env, after),
                           lambda: self._kernel_gap(name), aborted=self.abort is not None)
        run.record.placement = item.placement
        run.record.gpu = slot.gpu.to_json() if slot.gpu is not None else None
        return run

    def _run_copies(self, item: _GcItem, slots: list[Slot]) -> TestRun:
        """A one-GPU test on every GPU of the run (gang.py). The kernel log is
        read once before and once after the copies: their windows overlap, so
        what it says is weighed into the test's record, not a copy's."""
        name, binary, sub = item.name, str(item.entry.path), item.subtest
        skipped = self._skipped(item)
        if skipped is not None:
            skipped.placement = item.placement
            return TestRun(skipped)
        abort, notes = self._kernel_gap(name)
        if abort is not None:
            return self._not_started(item, abort, notes)
        one = self._copy_fn(item, *self._timeout_env(name))
        copies = run_copies(name, binary, sub, slots, self.node.at_once(item.placement), one,
                            self._lost, self.stopping, self.kill_running)
        rec = combine(copies, item.placement)
        rec.notes[:0] = notes
        if self.kernel is not None:
            abort = self.kernel.weigh(rec, self.judge_record)
        return TestRun(rec, f"{name}: {abort}" if abort is not None else None)

    def _copy_fn(self, item: _GcItem, timeout: float,
                 env: dict[str, str]) -> Callable[[Slot], TestRecord]:
        """One copy of item in a slot, its attempts and retries run to a judged
        record; the kernel is read around the copies, not in them."""
        name, binary, sub = item.name, str(item.entry.path), item.subtest
        rule = self.rules.get(name)

        def one(slot: Slot) -> TestRecord:
            attempt = self._attempt_fn(item, slot, timeout, env, None)
            return run_test(name, binary, sub, rule, self.opts.retries, attempt,
                            lambda: (None, []), aborted=self.abort is not None).record

        return one

    def _not_started(self, item: _GcItem, abort: str, notes: list[str]) -> TestRun:
        """The kernel said, before item's copies started, that the run must stop."""
        rec = self.new_record(item, State.NOTRUN, f"not run: the run aborted: {abort}")
        rec.notes.extend(notes)
        return TestRun(self.judge_record(rec), abort, journaled=False)

    def _skipped(self, item: _GcItem) -> TestRecord | None:
        return skip_record(item.name, str(item.entry.path), item.subtest,
                           self.rules.get(item.name))

    def _queued(self, item: SubtestItem) -> bool:
        """Whether item's copies come from the per-GPU queues."""
        return item.placement == "gpu" and self._queues_apply() and self._skipped(item) is None

    def _start_block(self, item: SubtestItem, slots: list[Slot]) -> None:
        """The queues of the block of gpu tests that item opens."""
        self._close_block()
        items = item.session.items
        block: list[SubtestItem] = []
        for it in items[items.index(item):]:
            if not isinstance(it, SubtestItem) or it.placement != "gpu":
                break
            if self._skipped(it) is None:
                block.append(it)
        self.block = QueueBlock(self, block, slots)
        if self.progress is not None:
            self.progress.note = self._queue_note

    def _queue_note(self) -> str | None:
        b = self.block
        return b.describe() if b is not None else None

    def copy_record(self, item: QueuedItem, slot: Slot) -> TestRecord:
        """One copy of a queued test, in slot (a queue's thread; queueblock.py)."""
        assert isinstance(item, SubtestItem)
        with self._plan_lock:  # SoakPlan.seconds_for gives a soak its share once
            one = self._copy_fn(item, *self._timeout_env(item.name))
        return one_copy(item.name, str(item.entry.path), item.subtest, slot, one, self._lost,
                        self.stopping)

    def _run_queued(self, item: SubtestItem, slots: list[Slot]) -> TestRun:
        """A gpu test's copies as the queues ran them (queueblock.py). The
        kernel log is read before the block starts and after each copy (in its
        queue); lines that came while other tests ran beside a copy are
        weighed into it too (a GPU's lines name it)."""
        notes: list[str] = []
        if self.block is None or item.name not in self.block:
            abort, notes = self._kernel_gap(item.name)
            if abort is not None:
                return self._not_started(item, abort, notes)
            self._start_block(item, slots)
        assert self.block is not None
        try:
            return self.block.result(item, notes)
        except BaseException:
            self.block = None  # closed, its begun tests recorded
            raise

    def _close_block(self, kill: bool = False) -> None:
        """The queues stopped (no copy starts after this) and their threads
        waited for; kill: the running copies killed first."""
        if self.block is not None:
            self.block.close(kill)
            self.block = None

    def _lost(self, slot: Slot) -> str | None:
        """Why slot's GPU can no longer be used (gone since the run started)."""
        if slot.gpu is None:
            return None
        self.messages.extend(self.node.check([slot.gpu]))
        return self.node.lost.get(slot.gpu.index)

    def kill_running(self) -> None:
        """Interrupted: the running copies' process groups, killed."""
        for pgid in list(self.running):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass

    def _gpu_lost(self, rec: TestRecord, reason: str) -> bool:
        """A kernel line that stops the run but names one GPU of several
        (NodePlan.lose): that GPU is lost, the test says so, the run goes on."""
        lost = self.node.lose(reason)
        if lost is None:
            return False
        rec.reason = lost
        self.messages.append(lost)
        return True

    def _abort(self, item: pytest.Item, reason: str) -> None:
        if self.abort is None:
            self.abort = reason
            item.session.shouldstop = f"gpuconform: run aborted: {reason}"
            if self.journal is not None:
                try:
                    self.journal.event("abort", test=item.name, reason=reason)
                except JournalWriteError as e:
                    self.cannot_record(e)  # the test's record cannot follow either

    # ------------------------------------------------------------ reports
    @pytest.hookimpl(hookwrapper=True)  # type: ignore[misc]
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        rec = getattr(item, "_gc_record", None)
        if call.when == "call" and isinstance(rec, TestRecord):
            report = outcome.get_result()
            done, self._json = self._json, None
            data = done[1] if done is not None and done[0] is rec else rec.to_json()
            setattr(report, _REPORT_ATTR, {"name": rec.name, "record": data})

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
            self.records.setdefault(name, self.judge_record(TestRecord(
                name, binary, sub, State.ERROR,
                reason=f"pytest {report.when} error: {text[-1] if text else '?'}")))

    # --------------------------------------------------------------- end
    def run_end(self) -> RunEnd:
        """The end of the run as plain data (runend.py)."""
        records = ordered_records(self.selected, self.records, self.abort, self.judge_record)
        o = self.opts
        return RunEnd(
            records=records,
            collection_errors=list(self.collection_errors),
            selection=list(self.selection),
            shard=list(o.shard) if o.shard else None,
            fingerprint=self.inputs.fingerprint,
            expectation_files=[str(p) for p in self.inputs.expectation_files],
            platform=self.inputs.platform,
            stale_rules=[r.describe() for r in self.inputs.expectations.unused()],
            kernel_log=(self.kernel.to_json() if self.kernel is not None
                        else {"watched": False, "note": None, "taint": None}),
            aborted=self.abort,
            regressions_expected=o.regressions_expected,
            messages=list(self.messages),
            errors=list(self.errors),
            baseline_path=self.baseline_path,
            baseline_error=self.baseline_error,
        )

    def _gpu_state(self) -> dict[str, object]:
        """The run's NVIDIA GPUs' clocks and limits now (gpustate.py)."""
        if not any(g.vendor == "nvidia" for g in self.node.gpus):
            return {"gpus": [], "notes": ["not recorded: no NVIDIA GPU in the run"]}
        return gpu_state()

    def _run_info(self, exitstatus: int) -> dict[str, Any]:
        info = run_info(start=(self.run_json or {}).get("start", self.start),
                        args=[str(a) for a in self.config.args], run_id=self.run_id,
                        opts=self.opts, platform=self.inputs.platform, exitstatus=exitstatus,
                        collection_errors=self.collection_errors, aborted=self.abort,
                        resumed=self.resumed,
                        soak_seconds=self.soak_plan.given if self.soak_plan else None,
                        node=self.node.to_json())
        info["gpu_state"] = {"start": (self.run_json or {}).get("gpu_state_start"),
                             "end": self._gpu_state()}
        return info

    @pytest.hookimpl(trylast=True)  # type: ignore[misc]
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.progress is not None:
            self.progress.close()
        if self.fatal is not None:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if self.results_dir is None or self.is_worker or self.collect_only:
            return
        if self.journal is None:  # the directory is not this run's: nothing to write there
            return
        if self.stop_error is not None:
            return self._stop(self.stop_error, "the run stopped after")
        self.end = end = self.run_end()
        info = self._run_info(exitstatus)
        if self.baseline is not None:
            from .perf.judge import judge_run

            end.compare(info, self.baseline, judge_run)
        try:
            end.write(self.results_dir, info)
        except OSError as e:
            err = JournalWriteError(f"{self.results_dir}: {fault_detail(self.results_dir, e)}",
                                    e.errno)
            return self._stop(err, "results.json not written after")
        if self.control is not None:
            self.control.results_dir = self.results_dir
            self.control.written = True
        if self.opts.report:
            end.report(self.results_dir, write_report)
        if self.opts.openmetrics:
            self._openmetrics(end, Path(self.opts.openmetrics))
        if self.journal is not None:
            try:
                self.journal.event("end", complete=end.complete,
                                   status=end.outcome.status if end.outcome else None)
            except JournalWriteError:
                pass

    def _openmetrics(self, end: RunEnd, out: Path) -> None:
        """--openmetrics FILE from the results.json written; a failure is one
        error line (the results stay)."""
        assert self.results_dir is not None
        try:
            from .report.openmetrics import write_openmetrics

            end.messages.append(f"openmetrics: {write_openmetrics(self.results_dir, out)}")
        except Exception as e:  # noqa: BLE001 - the results stay; this file is extra
            end.errors.append(f"{out}: not written: {one_line(e, 300) or type(e).__name__}")

    def _stop(self, e: JournalWriteError, what: str) -> None:
        """The one line of a run that cannot record: what is full, how far the
        journal got, what to do (the CLI prints it last; plain pytest in the
        terminal summary)."""
        assert self.results_dir is not None
        try:
            done = len(read_journal(self.results_dir / JOURNAL_NAME).records)
        except JournalError:
            done = len(self.records)
        self.stopped = (f"{e}: {what} {done} of {len(self.selected)} tests; "
                        f"{remedy(e.errno)}, then `gpuconform resume {self.results_dir}`")
        if self.control is not None:
            self.control.stopped = self.stopped

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        if self.fatal is not None:
            tr.write_line(f"gpuconform: {self.fatal}", red=True)
            return
        if self.stopped is not None:
            if self.control is None:  # gpuconform run says it as its last line
                tr.write_line(f"gpuconform: {self.stopped}", red=True)
            return
        if self.collect_only:
            return
        end = self.end if self.end is not None else self.run_end()
        if not end.records and not self.collection_errors:
            return
        tr.write_sep("=", "gpuconform summary")
        summary = render_summary(end.records.values(), self.collection_errors, end.notes())
        for line in summary.rstrip("\n").splitlines():
            tr.write_line(line)
        if end.written is not None:
            tr.write_line(f"results: {end.written[0]}")
        for e in end.errors:
            tr.write_line(f"gpuconform: {e}", red=True)
        if end.baseline_error:
            tr.write_line(f"gpuconform: {end.baseline_error}", red=True)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.release()
        if self.kernel is not None:
            self.kernel.close()
        if self.journal is not None:
            self.journal.close()
            self.journal = None
        if self.exec_options.spares is not None:
            self.exec_options.spares.close()
        if self.run_tmp is not None:
            remove_run_tmp(self.run_tmp, self.run_id)
            self.run_tmp = None


def _split_name(name: str) -> tuple[str, str | None]:
    b, _, s = name.partition("@")
    return b, (s or None)


def select_tests_or_raise(available: list[str], patterns: list[TestPattern] | None,
                          o: RunOptions) -> list[str]:
    from .core.testlist import select_tests

    return select_tests(available, patterns, o.include, o.exclude)


def load_run_inputs(o: RunOptions, *, selftest: bool = False,
                    here: bool = True) -> tuple[RunInputs, Any]:
    """The run's inputs (options.load_inputs), then the timing baseline asked
    for by name (baseline.asked_baseline; None when none was) and checked to
    be this machine's; InputError, one line, for either. here False: the run
    will be on other machines (fleet submit), whose fingerprints choose
    their baselines: of those, only the paths are checked."""
    inputs = load_inputs(o, selftest=selftest)
    if o.no_baseline or (o.baseline is None and o.baselines is None):
        return inputs, None
    from .perf.baseline import BaselineError, asked_baseline
    from .core.fingerprint import Fingerprint

    fp = inputs.fingerprint
    if here and fp is None:
        asked = f"--baseline {o.baseline}" if o.baseline is not None else \
            f"--baselines {', '.join(o.baselines or [])}"
        raise InputError(f"{asked}: this machine's fingerprint, which the baseline must "
                         f"match, could not be read ({inputs.fingerprint_error})")
    try:
        return inputs, asked_baseline(o.baselines, o.baseline,
                                      Fingerprint.from_json(fp) if here and fp is not None
                                      else None)
    except BaselineError as e:
        raise InputError(str(e)) from None


def write_report(directory: Path) -> Path:
    """report.html of the run in directory (the report product), the run's
    last step (runend.RunEnd.report runs it in a child): imported there, so
    that a machine without jinja2 still ends its run, with one error line."""
    from .report.report import write_html

    return write_html(directory)

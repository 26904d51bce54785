"""Fleet runs on Slurm: one selection across many GPU nodes, merged, resumable.

    gpuconform fleet submit --results DIR --shards N [--partition P] [--gres G]
                            [--gpus-per-node G] [--time T] [--sbatch-arg OPT]...
                            [--share-nodes] [--no-probe] [-- RUN OPTIONS...]
    gpuconform fleet status DIR [--json]
    gpuconform fleet resume DIR [--partition P] [--gres G] [--gpus-per-node G]
                            [--time T] [--sbatch-arg OPT]...
    gpuconform fleet wait DIR        (the merge job's first step)

Nothing here talks to a node except through Slurm; there is no daemon and no
queue of our own. A fleet is DIR, a directory every node sees at the same
path, holding:

    fleet.json         what was submitted: the shards, the run options, the
                       scripts, and per submission its sbatch command lines and
                       job ids (status and resume read it)
    fleet-array.sh     the array job: one task per shard (fleet_script.py)
    fleet-merge.sh     the merge job, after the array (afterany)
    shard-I/           shard I's results directory (`gpuconform run --shard I/N`),
                       with fleet-task.log: each task's start and end, its node
    slurm/             the tasks' stdout and stderr
    merged/            `gpuconform merge` of the shards, and its report.html

A shard's state comes from its own files first, Slurm's view second: done
when its journal ends with a complete run; running while a live run holds its
journal's lock, whatever Slurm says (a node whose slurmd was lost: Slurm ends
the task NODE_FAIL while its run goes on); pending or running while Slurm says
so; otherwise incomplete (node lost, cancelled, time limit, failed to start),
and `fleet resume` submits those shards again: each resumes its own journal,
so no test that finished runs twice. A shard whose run holds its lock is never
submitted again, and the merge job waits for such runs (`fleet wait`). A
shard's node is where its tests ran (each journal start line names its node),
not where its last task was sent.

"Visible to the nodes" is checked, before anything is submitted, in two
steps. First without Slurm: DIR and the checkout must not be on a file system
that lives in one machine's memory (tmpfs, ramfs). Then a probe job on the
partition (sbatch --wait, with the user's sbatch options, no GPU asked for,
5 minutes): it must read, on the node, a token file that submit has just
written into DIR, and find the checkout's ./gpuconform and the build's
manifest. So DIR is proven to be the SAME directory on the node, not one of
the same name. The probe waits for a node like any job (--probe-timeout, 300 s
by default); --no-probe skips it on a busy cluster, leaving the first check.
One node is probed, not all: a node that mounts less than the others still
fails its shard (its task log and Slurm output say so) and `fleet resume`
submits it again.
"""

from __future__ import annotations

import json
import shlex
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..core.atomic import atomic_write
from .fleet_script import (
    ARRAY_SCRIPT,
    MERGE_SCRIPT,
    MERGED,
    SHARD_PREFIX,
    SLURM_LOGS,
    TASK_LOG,
    FleetSpec,
    ScriptError,
    array_ranges,
    array_script,
    job_name,
    merge_script,
    sbatch_safe,
)
from .fleet_slurm import ACTIVE_STATES, Slurm, SlurmError, TaskState
from ..core.fmt import one_line
from ..core.journal import (
    JOURNAL_NAME,
    RUN_NAME,
    JournalError,
    is_locked,
    read_journal,
    read_run_json,
)
from ..core.results import TestRecord
from ..core.shard import shard_of

__all__ = [
    "FleetError",
    "Fleet",
    "Submission",
    "ShardStatus",
    "FleetStatus",
    "FLEET_JSON",
    "LOCAL_FS",
    "read_fleet",
    "submit",
    "status",
    "resume",
    "shard_progress",
    "decide",
    "parse_task_log",
    "mount_fstype",
    "render_status",
    "wait_runs",
]

FLEET_JSON = "fleet.json"
FLEET_FORMAT = "gpuconform-fleet"
FLEET_VERSION = 1
PROBE_NAME = ".fleet-probe"
# File systems that live in one machine's memory: never shared with a node.
LOCAL_FS = frozenset({"tmpfs", "ramfs", "devtmpfs"})
PROBE_EXIT = {3: "the results directory", 4: "the checkout's ./gpuconform",
              5: "the build's manifest"}
SHOWN = 5


class FleetError(Exception):
    """Why a fleet command cannot go on; str() is one line."""


# ------------------------------------------------------------------ fleet.json


@dataclass
class Submission:
    kind: str  # "submit" or "resume"
    time: float
    shards: list[int]
    array_job: str | None = None
    merge_job: str | None = None
    commands: list[list[str]] = field(default_factory=list)  # the sbatch argvs

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Submission":
        return cls(str(obj["kind"]), float(obj["time"]), [int(i) for i in obj["shards"]],
                   _opt_str(obj.get("array_job")), _opt_str(obj.get("merge_job")),
                   [[str(a) for a in c] for c in obj.get("commands") or []])


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


@dataclass
class Fleet:
    dir: Path
    launcher: Path
    shards: int
    run_args: list[str]
    sbatch: dict[str, Any]  # partition, gres, gpus_per_node, time, args, share_nodes
    submissions: list[Submission] = field(default_factory=list)
    empty_shards: list[int] = field(default_factory=list)  # of no test, known at submit

    @property
    def array_script(self) -> Path:
        return self.dir / ARRAY_SCRIPT

    @property
    def merge_script(self) -> Path:
        return self.dir / MERGE_SCRIPT

    def shard_dir(self, index: int) -> Path:
        return self.dir / f"{SHARD_PREFIX}{index}"

    def job_of(self, index: int) -> tuple[str, int] | None:
        """(array job, task) of the last submission of shard index."""
        for s in reversed(self.submissions):
            if index in s.shards and s.array_job:
                return s.array_job, index
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FLEET_FORMAT, "version": FLEET_VERSION,
            "dir": str(self.dir), "launcher": str(self.launcher), "shards": self.shards,
            "run_args": list(self.run_args), "sbatch": dict(self.sbatch),
            "array_script": str(self.array_script), "merge_script": str(self.merge_script),
            "submissions": [asdict(s) for s in self.submissions],
            "empty_shards": list(self.empty_shards),
        }

    def write(self) -> None:
        atomic_write(self.dir / FLEET_JSON, json.dumps(self.to_json(), indent=1) + "\n")


def read_fleet(directory: Path) -> Fleet:
    path = Path(directory) / FLEET_JSON
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FleetError(f"{path}: no such file (not a fleet's results directory: "
                         "`gpuconform fleet submit --results DIR` makes one)") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise FleetError(f"{path}: cannot read: {one_line(e, 200)}") from None
    if not isinstance(obj, dict) or obj.get("format") != FLEET_FORMAT:
        raise FleetError(f"{path}: not a gpuconform fleet file (format is not {FLEET_FORMAT!r})")
    if obj.get("version") != FLEET_VERSION:
        raise FleetError(f"{path}: version {obj.get('version')!r}, this runner reads {FLEET_VERSION}")
    try:
        # The directory is where fleet.json is now (a renamed DIR still reads).
        return Fleet(Path(directory).absolute(), Path(obj["launcher"]), int(obj["shards"]),
                     [str(a) for a in obj["run_args"]], dict(obj["sbatch"]),
                     [Submission.from_json(s) for s in obj["submissions"]],
                     [int(i) for i in obj.get("empty_shards") or []])
    except (KeyError, TypeError, ValueError) as e:
        raise FleetError(f"{path}: field {one_line(e, 80)} missing or of the wrong type") from None


# ------------------------------------------------------------------ a shard's own files


@dataclass
class ShardProgress:
    """What shard-I's run.json and journal say (read-only)."""

    started: bool = False  # run.json exists
    tests: int | None = None  # selected for this shard
    done: int = 0  # results journaled
    unexpected: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)  # started, no result
    ended: bool = False  # the journal's last event is "end"
    complete: bool = False  # ... of a run with every test run
    problem: str | None = None  # a run.json or journal that cannot be read
    locked: bool = False  # a live run holds the journal's lock
    nodes: list[str] = field(default_factory=list)  # where its tests ran, first first


def shard_progress(shard: Path) -> ShardProgress:
    p = ShardProgress()
    try:
        # the runner locks the journal before it writes run.json
        p.locked = is_locked(shard / JOURNAL_NAME)
    except JournalError as e:
        p.problem = str(e)
    if not (shard / RUN_NAME).exists():
        return p
    p.started = True
    try:
        p.tests = len(read_run_json(shard)["tests"])
        st = read_journal(shard / JOURNAL_NAME)
    except JournalError as e:
        p.problem = str(e)
        return p
    p.done = len(st.records)
    for name, obj in st.records.items():
        try:
            if TestRecord.from_json(name, obj).unexpected:
                p.unexpected.append(name)
        except (KeyError, TypeError, ValueError):
            p.unexpected.append(name)
    p.running = [s.test for s in st.running]
    p.nodes = list(dict.fromkeys(s.node for s in st.starts if s.node))
    last = st.events[-1] if st.events else None
    p.ended = bool(last and last.get("event") == "end" and not st.running)
    p.complete = p.ended and bool(last and last.get("complete") is True)
    return p


def parse_task_log(text: str) -> list[dict[str, str]]:
    """fleet-task.log's lines: {"event": "start"|"end", "time", "job", "task",
    "node", "status"...}; lines that are not such are skipped."""
    out: list[dict[str, str]] = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0] not in ("start", "end"):
            continue
        entry = {"event": words[0]}
        for w in words[1:]:
            k, eq, v = w.partition("=")
            if eq:
                entry[k] = v
        out.append(entry)
    return out


def _task_log(shard: Path) -> list[dict[str, str]]:
    try:
        return parse_task_log((shard / TASK_LOG).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []


# ------------------------------------------------------------------ status


@dataclass
class ShardStatus:
    index: int
    total: int
    state: str  # "done", "pending", "running", "incomplete", "unknown"
    node: str  # "" when it never started
    why: str  # one line
    progress: ShardProgress
    job: str | None  # "ARRAY_TASK" of its last submission
    slurm: str | None  # Slurm's state of that task, when Slurm knows it

    def to_json(self) -> dict[str, Any]:
        p = self.progress
        return {"shard": self.index, "total": self.total, "state": self.state, "node": self.node,
                "nodes": list(p.nodes), "why": self.why, "job": self.job, "slurm": self.slurm,
                "tests": p.tests, "done": p.done, "unexpected": list(p.unexpected),
                "running": list(p.running), "complete": p.complete, "locked": p.locked}

    @property
    def run_outlives_task(self) -> bool:
        """Its run holds its lock while Slurm says its task is over."""
        return self.state == "running" and self.progress.locked and self.slurm is not None \
            and self.slurm not in ACTIVE_STATES


def decide(progress: ShardProgress, task: TaskState | None, log: Sequence[Mapping[str, str]],
           job: str | None, slurm_error: str | None = None) -> tuple[str, str, str]:
    """(state, node, why) of one shard, from its own files first (journal,
    its lock, task log), Slurm's view of its last task second (None: Slurm
    does not know it, or could not be asked: slurm_error). The node is where
    its tests ran (the journal's start lines), else where its last task is or
    was. Pure."""
    starts = [e for e in log if e.get("event") == "start"]
    last = log[-1] if log else None
    node = ",".join(progress.nodes) or (task.node if task is not None and task.node else "") or (
        starts[-1].get("node", "") if starts else "")
    if progress.complete:
        return "done", node, f"complete: {progress.done} tests"
    if progress.locked:
        tests = f"{progress.done}/{progress.tests}" if progress.tests is not None else "no test"
        why = f"its run holds {JOURNAL_NAME}'s lock; {tests} tests done"
        if task is not None and not task.active:
            why += (f"; Slurm says {task.describe()}, but the run goes on (its node's slurmd "
                    "lost?): not submitted again while it does")
        elif task is not None:
            why += f"; {task.describe()}"
        return "running", node, why
    if task is not None and task.active:
        if task.state == "PENDING":
            return "pending", ",".join(progress.nodes), f"{task.describe()}"
        return "running", node, f"{task.describe()}"
    if task is None and slurm_error is not None:
        return "unknown", node, f"Slurm could not be asked ({slurm_error})"
    if progress.problem:
        return "incomplete", node, progress.problem
    if job is None:
        return "incomplete", node, "never submitted"
    tests = f"{progress.done}/{progress.tests}" if progress.tests is not None else "no test"
    if task is not None:
        what = f"{task.describe()}"
        if task.state == "COMPLETED" or task.state == "FAILED":
            what = (f"task {job} ended ({task.state}"
                    + (f", exit {task.reason}" if task.reason and task.reason != "None" else "")
                    + ") before the run completed")
    elif last is not None and last.get("event") == "end":
        what = (f"task {last.get('task', job)} on {last.get('node', '?')} ended with status "
                f"{last.get('status', '?')} before the run completed")
    elif last is not None:
        what = (f"task {last.get('task', job)} started on {last.get('node', '?')} and never "
                "ended (node lost or task killed); Slurm no longer knows it")
    else:
        what = f"task {job} never started and Slurm no longer knows it"
    running = f"; {progress.running[0]} was running" if progress.running else ""
    return "incomplete", node, f"{what}; {tests} tests done{running}"


@dataclass
class MergeStatus:
    jobs: list[TaskState]
    path: Path
    verdict: str  # of DIR/merged/results.json, or why there is none
    ok: bool | None
    mtime: float | None

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "verdict": self.verdict, "ok": self.ok,
                "jobs": [t.describe() for t in self.jobs]}


@dataclass
class FleetStatus:
    fleet: Fleet
    shards: list[ShardStatus]
    merge: MergeStatus
    slurm_error: str | None
    active_arrays: list[str]  # array jobs with a task still pending or running

    def to_json(self) -> dict[str, Any]:
        return {"dir": str(self.fleet.dir), "shards": [s.to_json() for s in self.shards],
                "merge": self.merge.to_json(), "slurm_error": self.slurm_error,
                "submissions": [asdict(s) for s in self.fleet.submissions]}


def _merge_status(fleet: Fleet, jobs: list[TaskState]) -> MergeStatus:
    path = fleet.dir / MERGED
    rj = path / "results.json"
    try:
        data = json.loads(rj.read_text(encoding="utf-8"))
        m = (data.get("run") or {}).get("merge") or {}
        missing = m.get("missing_shards") or []
        notrun = int((data.get("totals") or {}).get("notrun") or 0)
        ok = bool(m.get("ok")) and not notrun  # a shard cut short merges with its notrun tests
        why = ([f"missing shards {', '.join(f'{i}/{fleet.shards}' for i in missing)}"]
               if missing else []) + ([f"{notrun} tests not run"] if notrun else [])
        if not m.get("ok") and not missing:
            why.append("see its summary.txt")
        n = len(data.get("tests") or {})
        verdict = f"complete: {n} tests" if ok else f"INCOMPLETE: {n} tests; " + "; ".join(why)
        return MergeStatus(jobs, path, verdict, ok, rj.stat().st_mtime)
    except FileNotFoundError:
        return MergeStatus(jobs, path, "not merged yet", None, None)
    except (OSError, ValueError, AttributeError) as e:
        return MergeStatus(jobs, path, f"unreadable: {one_line(e, 120)}", False, None)


def status(directory: Path, slurm: Slurm) -> FleetStatus:
    fleet = read_fleet(directory)
    arrays = {s.array_job for s in fleet.submissions if s.array_job}
    merges = [s.merge_job for s in fleet.submissions if s.merge_job]
    slurm_error: str | None = None
    try:
        slurm.require("squeue")
        seen = slurm.tasks(arrays | set(merges))
    except SlurmError as e:
        slurm_error, seen = str(e), []
    by_task = {(t.array_job, t.task): t for t in seen}
    wanted = {i: fleet.job_of(i) for i in range(1, fleet.shards + 1)}
    missing = [j for j in wanted.values() if j is not None and j not in by_task]
    if missing and slurm_error is None:
        for t in slurm.accounting({a for a, _ in missing}):
            by_task.setdefault((t.array_job, t.task), t)
        raw: dict[str, tuple[str, int]] = {}
        for i, j in wanted.items():
            if j is not None and j not in by_task:
                for entry in _task_log(fleet.shard_dir(i)):
                    if entry.get("event") == "start" and entry.get("task") == f"{j[0]}_{j[1]}" \
                            and entry.get("job", "").isdigit():
                        raw[entry["job"]] = j
        for t in slurm.completions(raw):
            by_task.setdefault((t.array_job, t.task), t)
    shards: list[ShardStatus] = []
    for i, j in wanted.items():
        shard = fleet.shard_dir(i)
        progress = shard_progress(shard)
        task = by_task.get(j) if j is not None else None
        job = f"{j[0]}_{j[1]}" if j is not None else None
        state, node, why = decide(progress, task, _task_log(shard), job, slurm_error)
        shards.append(ShardStatus(i, fleet.shards, state, node, why, progress, job,
                                  task.state if task is not None else None))
    merge_jobs = [t for t in seen if t.array_job in merges and t.task is None]
    active = sorted({t.array_job for t in seen if t.active and t.array_job in arrays}, key=int)
    return FleetStatus(fleet, shards, _merge_status(fleet, merge_jobs), slurm_error, active)


def render_status(st: FleetStatus) -> str:
    f = st.fleet
    subs = ", ".join(f"{s.kind} {s.array_job or '-'}" + (f"+{s.merge_job}" if s.merge_job else "")
                     for s in f.submissions)
    lines = [f"fleet {f.dir}: {f.shards} shards; jobs (array+merge): {subs or 'none'}"]
    if st.slurm_error:
        lines.append(f"slurm: {st.slurm_error}")
    rows = [("shard", "state", "node", "progress", "unexpected", "why")]
    for s in st.shards:
        p = s.progress
        prog = f"{p.done}/{p.tests}" if p.tests is not None else "-"
        rows.append((f"{s.index}/{s.total}", s.state, s.node or "-", prog,
                     str(len(p.unexpected)), s.why))
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    for r in rows:
        lines.append("  ".join(r[c].ljust(widths[c]) for c in range(5)) + "  " + r[5])
    for s in st.shards:
        if s.progress.unexpected:
            names = s.progress.unexpected
            more = f", ... ({len(names)} in all)" if len(names) > SHOWN else ""
            lines.append(f"shard {s.index} unexpected: " + ", ".join(names[:SHOWN]) + more)
    jobs = "; ".join(t.describe() for t in st.merge.jobs)
    lines.append(f"merged: {st.merge.path}: {st.merge.verdict}" + (f" (job {jobs})" if jobs else ""))
    left = [s.index for s in st.shards if s.state == "incomplete"]
    if left:
        lines.append(f"incomplete shards {array_ranges(left)}: "
                     f"gpuconform fleet resume {shlex.quote(str(f.dir))}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ submit


def mount_fstype(path: Path, mountinfo: str) -> tuple[str, str]:
    """(file system type, mount point) of the mount holding path (absolute,
    resolved), from /proc/self/mountinfo's text. Pure."""
    best = ("", "")
    p = str(path)
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        mnt = fields[4].replace("\\040", " ")
        if (p == mnt or p.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[1]):
            best = (right.split()[0], mnt)
    return best


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path.resolve()


def check_not_local(what: str, path: Path, mountinfo: str | None = None) -> None:
    """FleetError when path is on a file system in this machine's memory."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
    fstype, mnt = mount_fstype(_existing(path), mountinfo)
    if fstype in LOCAL_FS:
        raise FleetError(f"{what} {path} is on {fstype} ({mnt}), in this machine's memory: the "
                         "nodes cannot see it; give a directory on a file system they share "
                         "(NFS, Lustre, GPFS...) at the same path")


def _probe(slurm: Slurm, fleet: Fleet, manifest: Path, timeout: float) -> None:
    token = uuid.uuid4().hex
    probe_file = fleet.dir / PROBE_NAME
    atomic_write(probe_file, token + "\n")
    q = shlex.quote
    cmd = (f"test \"$(cat {q(str(probe_file))} 2>/dev/null)\" = {token} || exit 3; "
           f"test -x {q(str(fleet.launcher))} || exit 4; test -f {q(str(manifest))} || exit 5")
    sb = fleet.sbatch
    args = [f"--job-name={job_name(fleet.dir)}-probe", "--nodes=1", "--ntasks=1", "--no-requeue",
            "--chdir=/", "--output=/dev/null", "--error=/dev/null"]
    if sb.get("partition"):
        args.append(f"--partition={sb['partition']}")
    args += list(sb.get("args") or []) + ["--time=5", f"--wrap={cmd}"]
    try:
        job, code = slurm.sbatch_wait(args, timeout)
    finally:
        try:
            probe_file.unlink()
        except OSError:
            pass
    if code == 0:
        return
    node = ""
    try:
        node = next((t.node for t in slurm.tasks([job]) if t.node), "")
    except SlurmError:
        pass
    where = f"node {node}" if node else "its node"
    if code in PROBE_EXIT:
        path = {3: fleet.dir, 4: fleet.launcher, 5: manifest}[code]
        raise FleetError(f"{PROBE_EXIT[code]} {path} is not visible on {where} (probe job {job}"
                         f"{' read no token' if code == 3 else ' found no such file'}): "
                         "it must be on a file system every node mounts at the same path")
    raise FleetError(f"the probe job {job} failed on {where} (exit status {code}): "
                     f"`scontrol show job {job}` says why; --no-probe submits without it")


def _submit_jobs(slurm: Slurm, fleet: Fleet, kind: str, shards: list[int],
                 extra: Sequence[str], after: Sequence[str],
                 array_extra: Sequence[str] = (), cancel: Sequence[str] = ()) -> Submission:
    """The array of these shards and a merge after it (and after the arrays
    in `after`); fleet.json written after each sbatch, so a job that was
    submitted is never forgotten. extra: sbatch options of both jobs;
    array_extra: of the array only (GPUs: the merge needs none); cancel:
    merge jobs to cancel once the array is in (not before: a refused array
    leaves the fleet as it was)."""
    sub = Submission(kind, time.time(), list(shards))
    fleet.submissions.append(sub)
    if shards:
        cmd = ["sbatch", "--parsable", f"--array={array_ranges(shards)}", *extra, *array_extra,
               str(fleet.array_script)]
        sub.commands.append(cmd)
        try:
            sub.array_job = slurm.sbatch(cmd[2:])
        except SlurmError:
            fleet.submissions.pop()  # nothing was submitted: nothing to remember
            raise
        fleet.write()
    if cancel:
        slurm.cancel(cancel)
    deps = ([sub.array_job] if sub.array_job else []) + [a for a in after if a != sub.array_job]
    cmd = ["sbatch", "--parsable"]
    if deps:
        cmd.append("--dependency=afterany:" + ":".join(deps))
    cmd += [*extra, str(fleet.merge_script)]
    sub.commands.append(cmd)
    try:
        sub.merge_job = slurm.sbatch(cmd[2:])
    finally:
        fleet.write()
    return sub


def submit(directory: Path, launcher: Path, manifest: Path, shards: int, run_args: Sequence[str],
           *, partition: str | None = None, gres: str | None = None,
           gpus_per_node: str | None = None, time_limit: str | None = None,
           sbatch_args: Sequence[str] = (), probe: bool = True, probe_timeout: float = 300.0,
           share_nodes: bool = False, tests: Sequence[str] | None = None,
           slurm: Slurm | None = None) -> tuple[Fleet, Submission]:
    """Check, write the scripts and fleet.json, submit the array and the merge.
    FleetError (one line) before anything is submitted when the fleet cannot
    run: Slurm's commands missing, an unknown partition, DIR or the checkout
    not visible to the nodes, a bad option, more shards than tests (tests:
    the selection, when the caller could list it). When sbatch refuses the
    array, DIR is left as it was: what submit created there is removed."""
    slurm = slurm or Slurm()
    directory = Path(directory).absolute()
    try:
        slurm.require("sbatch", "squeue", "sinfo")
        if shards < 1:
            raise FleetError(f"--shards must be >= 1, not {shards}")
        if tests is not None and shards > len(tests):
            raise FleetError(f"--shards {shards} for a selection of {len(tests)} tests: a shard "
                             "of no test would hold a node for nothing; give --shards "
                             f"{max(len(tests), 1)} or fewer")
        if (directory / FLEET_JSON).exists() or any(
                directory.glob(f"{SHARD_PREFIX}[0-9]*")):
            raise FleetError(f"{directory} holds a fleet already: `gpuconform fleet status "
                             f"{directory}`, `gpuconform fleet resume {directory}`, or give "
                             "another --results")
        check_not_local("results directory", directory)
        check_not_local("checkout", launcher.parent)
        spec = FleetSpec(directory, launcher, shards, tuple(run_args), partition, gres,
                         gpus_per_node, time_limit, tuple(sbatch_args), share_nodes)
        scripts = (array_script(spec), merge_script(spec))
        if partition is not None and partition not in slurm.partitions():
            known = ", ".join(slurm.partitions()) or "none"
            raise FleetError(f"partition {partition!r} does not exist (sinfo knows: {known})")
    except (ScriptError, SlurmError) as e:
        raise FleetError(str(e)) from None
    fleet = Fleet(directory, launcher, shards, list(run_args),
                  {"partition": partition, "gres": gres, "gpus_per_node": gpus_per_node,
                   "time": time_limit, "args": list(sbatch_args), "share_nodes": share_nodes},
                  empty_shards=_empty_shards(tests, shards))
    created = [p for p in (directory / SLURM_LOGS, directory) if not p.exists()]
    try:
        (directory / SLURM_LOGS).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FleetError(f"{directory}: cannot create it: {e.strerror or e}") from None
    try:
        if probe:
            _probe(slurm, fleet, manifest, probe_timeout)
    except (FleetError, SlurmError) as e:
        _remove(created)
        raise FleetError(str(e)) from None
    files = [fleet.array_script, fleet.merge_script, fleet.dir / FLEET_JSON]
    created = [p for p in files if not p.exists()] + created
    try:
        for path, text in zip((fleet.array_script, fleet.merge_script), scripts):
            atomic_write(path, text)
            path.chmod(0o755)
        fleet.write()
    except OSError as e:
        _remove(created)
        raise FleetError(f"{directory}: cannot write the fleet's files: {e.strerror or e}") from None
    try:
        sub = _submit_jobs(slurm, fleet, "submit", list(range(1, shards + 1)), [], [])
    except SlurmError as e:
        if not fleet.submissions:  # sbatch refused the array: no job of this fleet exists
            _remove(created)
            raise FleetError(f"{e} (nothing submitted; {directory} left as it was)") from None
        raise FleetError(_after_partial(fleet, e, 0)) from None
    return fleet, sub


def _remove(created: Sequence[Path]) -> None:
    """What submit created, files first, then its directories (if empty)."""
    for p in created:
        try:
            if p.is_dir():
                p.rmdir()
            else:
                p.unlink()
        except OSError:
            pass


def _empty_shards(tests: Sequence[str] | None, shards: int) -> list[int]:
    """The shards no test of the selection falls in (a test's shard is a hash
    of its name: with few tests a shard may get none)."""
    if tests is None:
        return []
    full = {shard_of(t, shards) for t in tests}
    return [i for i in range(1, shards + 1) if i not in full]


def _after_partial(fleet: Fleet, e: SlurmError, before: int) -> str:
    """What a failed sbatch left: before, the number of submissions until now."""
    if len(fleet.submissions) == before:
        return f"{e} (nothing submitted)"
    sub = fleet.submissions[-1]
    if sub.array_job:
        return (f"{e} (array job {sub.array_job} was submitted, the merge job was not: "
                f"`gpuconform fleet resume {fleet.dir}` submits it)")
    return str(e)


# ------------------------------------------------------------------ resume


@dataclass
class ResumeResult:
    status: FleetStatus  # before
    submission: Submission | None
    left: list[ShardStatus]  # not submitted again: done, pending, running, unknown
    cancelled: list[str]  # merge jobs that would have merged too early


def resume(directory: Path, *, partition: str | None = None, time_limit: str | None = None,
           gres: str | None = None, gpus_per_node: str | None = None,
           sbatch_args: Sequence[str] = (), slurm: Slurm | None = None) -> ResumeResult:
    """Submit again the shards that are incomplete (each resumes its journal)
    and a merge after them; a merge alone when every shard is done but the
    merged results are missing or older than a shard's. A shard whose run
    still holds its journal's lock is running, whatever Slurm says: never
    submitted again. The options are submit's, given to sbatch over the
    scripts' own (--gres and --gpus-per-node to the shards only)."""
    slurm = slurm or Slurm()
    try:
        slurm.require("sbatch", "squeue")
    except SlurmError as e:
        raise FleetError(str(e)) from None
    st = status(directory, slurm)
    if st.slurm_error:
        raise FleetError(f"cannot tell which shards are still running: {st.slurm_error}")
    fleet = st.fleet
    for what, v in (("--partition", partition), ("--time", time_limit), ("--gres", gres),
                    ("--gpus-per-node", gpus_per_node)):
        if v is not None:
            try:
                sbatch_safe(what, v)
            except ScriptError as e:
                raise FleetError(str(e)) from None
    extra = ([f"--partition={partition}"] if partition else []) + (
        [f"--time={time_limit}"] if time_limit else []) + list(sbatch_args)
    array_extra = ([f"--gres={gres}"] if gres else []) + (
        [f"--gpus-per-node={gpus_per_node}"] if gpus_per_node else [])
    todo = [s.index for s in st.shards if s.state == "incomplete"]
    left = [s for s in st.shards if s.state != "incomplete"]
    newest = max((fleet.shard_dir(s.index).joinpath("results.json").stat().st_mtime
                  for s in st.shards if fleet.shard_dir(s.index).joinpath("results.json").exists()),
                 default=None)
    merge_active = any(t.active for t in st.merge.jobs)
    stale = newest is not None and (st.merge.mtime is None or st.merge.mtime < newest)
    # No merge queued (its sbatch failed, or it was cancelled) while shards
    # still run or merged/ is older than a shard: one after them.
    if not todo and (merge_active or not (stale or st.active_arrays)):
        return ResumeResult(st, None, left, [])
    cancelled = [t.array_job for t in st.merge.jobs if t.state == "PENDING"] if todo else []
    before = len(fleet.submissions)
    try:
        sub = _submit_jobs(slurm, fleet, "resume", todo, extra, st.active_arrays, array_extra,
                           cancelled)
    except SlurmError as e:
        raise FleetError(_after_partial(fleet, e, before)) from None
    return ResumeResult(st, sub, left, cancelled)


def render_resume(r: ResumeResult) -> str:
    d = r.status.fleet.dir
    lines = []
    if r.submission is None:
        states = ", ".join(f"{s.index} {s.state}" for s in r.left)
        lines.append(f"gpuconform fleet: nothing to resume in {d} (shards: {states}); "
                     f"merged: {r.status.merge.verdict}")
        lines += [_outlives(s) for s in r.left if s.run_outlives_task]
        return "\n".join(lines) + "\n"
    sub = r.submission
    if r.cancelled:
        lines.append(f"cancelled merge job(s) {', '.join(r.cancelled)}: they would merge "
                     "before the resumed shards")
    if sub.array_job:
        lines.append(f"gpuconform fleet: shards {array_ranges(sub.shards)} of {d} submitted "
                     f"again as array job {sub.array_job} (each resumes its journal)")
    else:
        lines.append(f"gpuconform fleet: no shard of {d} to submit again; no merge was queued")
    lines.append(f"merge job {sub.merge_job} -> {d / MERGED}")
    for s in r.left:
        lines.append(_outlives(s) if s.run_outlives_task
                     else f"  shard {s.index}: {s.state} ({s.why}): left as it is")
    return "\n".join(lines) + "\n"


def _outlives(s: ShardStatus) -> str:
    return (f"  shard {s.index}: not submitted again: its run on {s.node or '?'} still holds "
            f"{JOURNAL_NAME}'s lock although Slurm says {s.job} {s.slurm} (its node's slurmd "
            "lost?); the merge waits for it")


def render_submit(fleet: Fleet, sub: Submission) -> str:
    d = fleet.dir
    return (f"gpuconform fleet: array job {sub.array_job} ({fleet.shards} shards) and merge "
            f"job {sub.merge_job} (afterany:{sub.array_job}) submitted\n"
            f"  shards:  {d}/{SHARD_PREFIX}1 .. {d}/{SHARD_PREFIX}{fleet.shards}\n"
            f"  merged:  {d / MERGED}\n"
            f"  scripts: {fleet.array_script}, {fleet.merge_script}\n"
            f"  status:  gpuconform fleet status {shlex.quote(str(d))}\n"
            + (f"  note:    shard(s) {array_ranges(fleet.empty_shards)} of {fleet.shards} get no "
               "test (a test's shard is a hash of its name): they end at once; fewer --shards "
               "leave fewer empty\n" if fleet.empty_shards else ""))


# ------------------------------------------------------------------ the merge job's wait


def wait_runs(directory: Path, poll: float = 10.0,
              say: Callable[[str], None] = print) -> None:
    """Return once no shard's run holds its journal's lock. Slurm's afterany
    starts the merge job when every task is over for Slurm; a task whose
    node's slurmd was lost is over (NODE_FAIL) while its run goes on, and a
    merge then would miss its last results. One line each time the set of
    shards waited for changes."""
    fleet = read_fleet(directory)
    shown: list[int] | None = None
    while True:
        held = []
        for i in range(1, fleet.shards + 1):
            try:
                if is_locked(fleet.shard_dir(i) / JOURNAL_NAME):
                    held.append(i)
            except JournalError as e:
                raise FleetError(str(e)) from None
        if held != shown and (held or shown):
            say(f"gpuconform fleet: waiting for shard(s) {array_ranges(held)} of {fleet.dir}: "
                f"a live run holds its {JOURNAL_NAME}'s lock" if held else
                f"gpuconform fleet: no shard's run holds its lock any more: merging")
            shown = held
        if not held:
            return
        time.sleep(poll)


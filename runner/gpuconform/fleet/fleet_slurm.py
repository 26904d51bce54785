"""Slurm's commands as the fleet uses them: sbatch, squeue, sacct, sinfo,
scancel, each with a timeout and its failure as one line (SlurmError).

The parsers are pure (text in, TaskState out), so they are tested on captured
output. What a task's state is read from, in this order, since a site may
lack any of the later ones:

  squeue -r --states=all   live jobs, and finished ones for MinJobAge
                           (default 300 s) after they end;
  sacct -X                 the accounting database (slurmdbd), when the site
                           has one ("accounting storage is disabled" otherwise);
  sacct -c                 the job completion log (JobCompType=jobcomp/filetxt),
                           by raw job id (the fleet's task log has it).

No state found is no error: the shard's own journal and task log still say
what ran (fleet.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from ..core.fmt import one_line
from ..core.tool import tool_faults

__all__ = [
    "SlurmError",
    "TaskState",
    "Slurm",
    "ACTIVE_STATES",
    "parse_job_id",
    "parse_squeue",
    "parse_sacct",
    "parse_completions",
    "error_line",
]

SQUEUE_FORMAT = "%F|%K|%A|%T|%N|%r"
SACCT_FIELDS = "JobID,JobIDRaw,State,NodeList,ExitCode"
COMPLETION_FIELDS = "jobid,state,nodelist,exitcode"
# A task in one of these is not over: it must not be submitted again.
ACTIVE_STATES = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
    "RESV_DEL_HOLD",
})
DEFAULT_TIMEOUT_S = 60.0


class SlurmError(Exception):
    """A Slurm command that failed or is missing; str() is one line."""


@dataclass(frozen=True)
class TaskState:
    """One job, or one task of an array job, as Slurm reports it."""

    array_job: str  # the array's job id, or the job's own id
    task: int | None  # the array task id; None for a job that is no array
    job_id: str  # the raw job id of this task
    state: str  # "RUNNING", "NODE_FAIL", "CANCELLED"...
    node: str = ""
    reason: str = ""  # squeue's reason (pending) or sacct's exit code
    source: str = "squeue"

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    def describe(self) -> str:
        name = f"{self.array_job}_{self.task}" if self.task is not None else self.array_job
        extra = f" ({self.reason})" if self.reason and self.reason not in ("None", "0:0") else ""
        return f"{name} {self.state}{extra}"


def error_line(proc: subprocess.CompletedProcess[str], argv: Sequence[str]) -> str:
    """What a failed Slurm command said, on one line: its first `error:` line,
    else its first line, else its exit status."""
    lines = [x.strip() for x in (proc.stderr or "").splitlines() + (proc.stdout or "").splitlines()
             if x.strip()]
    errors = [x for x in lines if "error:" in x]
    text = (errors or lines or [f"{argv[0]} exited with status {proc.returncode}"])[0]
    return one_line(text, 300)


def parse_job_id(text: str) -> str:
    """sbatch --parsable's "12345" or "12345;cluster" -> "12345"."""
    for line in text.splitlines():
        first = line.strip().split(";")[0]
        if first.isdigit():
            return first
    raise SlurmError(f"sbatch --parsable printed no job id: {one_line(text, 200)!r}")


def _task(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def parse_squeue(text: str) -> list[TaskState]:
    """Lines of `squeue -h -r -o '%F|%K|%A|%T|%N|%r'`."""
    out: list[TaskState] = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 6 or not parts[0].isdigit():
            continue
        array, task, raw, state, node, reason = (p.strip() for p in parts)
        out.append(TaskState(array, _task(task), raw, state, node, reason, "squeue"))
    return out


def _state_word(text: str) -> str:
    return text.split()[0] if text.split() else ""  # "CANCELLED by 0" -> "CANCELLED"


def parse_sacct(text: str) -> list[TaskState]:
    """Lines of `sacct -n -P -X -o JobID,JobIDRaw,State,NodeList,ExitCode`.
    JobID is "12_3" for a task, "12_[4-5]" for tasks not started (skipped)."""
    out: list[TaskState] = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5:
            continue
        jobid, raw, state, node, code = (p.strip() for p in parts)
        array, _, task = jobid.partition("_")
        if not array.isdigit() or (task and not task.isdigit()):
            continue
        node = "" if node in ("None assigned", "(null)") else node
        out.append(TaskState(array, _task(task), raw, _state_word(state), node, code, "sacct"))
    return out


def parse_completions(text: str, arrays: Mapping[str, tuple[str, int]]) -> list[TaskState]:
    """Lines of `sacct -c -n -P -o jobid,state,nodelist,exitcode`: raw job ids
    only; arrays maps a raw id to its (array job, task), from the task logs."""
    out: list[TaskState] = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4 or parts[0].strip() not in arrays:
            continue
        raw, state, node, code = (p.strip() for p in parts)
        array, task = arrays[raw]
        out.append(TaskState(array, task, raw, _state_word(state), node, code, "sacct -c"))
    return out


class Slurm:
    """Slurm's client commands under one environment (SLURM_CONF...)."""

    def __init__(self, env: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.env = dict(os.environ if env is None else env)
        self.timeout = timeout

    def which(self, command: str) -> str | None:
        return shutil.which(command, path=self.env.get("PATH", os.defpath))

    def require(self, *commands: str) -> None:
        for c in commands:
            if self.which(c) is None:
                raise SlurmError(f"{c} not found on PATH: the fleet needs Slurm's client commands "
                                 "(Debian: slurm-client) on this machine")

    def run(self, argv: Sequence[str], timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [str(a) for a in argv]
        with tool_faults(SlurmError,
                         f"{argv[0]} not found on PATH: the fleet needs Slurm's client "
                         "commands (Debian: slurm-client) on this machine",
                         f"{' '.join(argv[:3])}...: no answer within "
                         f"{timeout or self.timeout:g} s (is slurmctld up?)"):
            proc = subprocess.run(argv, capture_output=True, text=True, env=self.env,
                                  timeout=timeout or self.timeout, stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise SlurmError(error_line(proc, argv))
        return proc

    # ------------------------------------------------------------ queries
    def partitions(self) -> list[str]:
        """The partitions sinfo knows (a trailing "*" marks the default)."""
        p = self.run(["sinfo", "-h", "-o", "%P"])
        return [x.strip().rstrip("*") for x in p.stdout.splitlines() if x.strip()]

    def tasks(self, array_jobs: Iterable[str]) -> list[TaskState]:
        """squeue's view of these jobs (and their array tasks); jobs Slurm
        forgot are simply absent."""
        ids = sorted(set(array_jobs), key=int)
        if not ids:
            return []
        argv = ["squeue", "-h", "-r", "--states=all", "-o", SQUEUE_FORMAT, "-j"]
        p = self.run(argv + [",".join(ids)], check=False)
        if p.returncode == 0:
            return parse_squeue(p.stdout)
        out: list[TaskState] = []  # one forgotten id fails the whole call: one at a time
        for i in ids:
            q = self.run(argv + [i], check=False)
            if q.returncode == 0:
                out += parse_squeue(q.stdout)
        return out

    def accounting(self, array_jobs: Iterable[str]) -> list[TaskState]:
        """sacct's view (slurmdbd); [] where the site keeps no accounting."""
        ids = sorted(set(array_jobs), key=int)
        if not ids:
            return []
        p = self.run(["sacct", "-n", "-P", "-X", "-o", SACCT_FIELDS, "-j", ",".join(ids)],
                     check=False)
        return parse_sacct(p.stdout) if p.returncode == 0 else []

    def completions(self, arrays: Mapping[str, tuple[str, int]]) -> list[TaskState]:
        """The job completion log's view of these raw job ids; [] without one."""
        if not arrays:
            return []
        p = self.run(["sacct", "-c", "-n", "-P", "-o", COMPLETION_FIELDS,
                      "-j", ",".join(sorted(arrays, key=int))], check=False)
        return parse_completions(p.stdout, arrays) if p.returncode == 0 else []

    # ------------------------------------------------------------ actions
    def sbatch(self, args: Sequence[str]) -> str:
        """Submit; the job id."""
        return parse_job_id(self.run(["sbatch", "--parsable", *args]).stdout)

    def sbatch_wait(self, args: Sequence[str], timeout: float) -> tuple[str, int]:
        """sbatch --wait: (job id, the job's exit status). A job not over
        within timeout is cancelled: SlurmError."""
        argv = ["sbatch", "--wait", "--parsable", *args]
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, text=True, env=self.env)
        except FileNotFoundError:
            raise SlurmError("sbatch not found on PATH: the fleet needs Slurm's client "
                             "commands (Debian: slurm-client) on this machine") from None
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            try:
                job = parse_job_id(out)
            except SlurmError:
                job = ""
            if job:
                self.run(["scancel", job], check=False)
            raise SlurmError(f"the probe job {job or '(not submitted)'} did not end within "
                             f"{timeout:g} s (partition busy? --probe-timeout S waits longer; "
                             "--no-probe submits without it)") from None
        done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
        try:
            job = parse_job_id(out)
        except SlurmError:
            raise SlurmError(error_line(done, argv)) from None
        return job, proc.returncode

    def cancel(self, jobs: Iterable[str]) -> None:
        ids = list(jobs)
        if ids:
            self.run(["scancel", *ids])

"""The text of a fleet's two batch scripts (pure: no Slurm, no file system).

`gpuconform fleet submit` writes them into the results directory DIR, where a
person can read them and submit them again by hand:

    DIR/fleet-array.sh   one array task per shard: task I runs
                         `gpuconform run --shard I/N --results DIR/shard-I ...`,
                         or, when DIR/shard-I holds a run already,
                         `gpuconform resume DIR/shard-I` (its journal keeps every
                         finished test: none runs twice); a shard whose run
                         completed does nothing. A task whose run completed
                         exits 0 whatever its tests' results (they are in the
                         results; Slurm's FAILED means the run did not end).
                         Each task appends a `start` and an `end` line (time,
                         job, node, exit status) to DIR/shard-I/fleet-task.log:
                         the node of a shard is known without Slurm's accounting.
                         Each task has its node to itself (sbatch --exclusive)
                         unless the fleet was submitted with --share-nodes.
    DIR/fleet-merge.sh   `gpuconform fleet wait DIR` (while a shard's run still
                         holds its journal's lock: a task whose node's slurmd was
                         lost is over for Slurm, not for its run), then
                         `gpuconform merge DIR/merged` of the shards that have a
                         results.json, then `gpuconform report DIR/merged`;
                         submitted with --dependency=afterany:<array job>.

The jobs are named after DIR (gpuconform-fleet-NAME, -NAME-merge), so two
fleets tell apart in squeue.

Slurm's #SBATCH lines cannot quote: a path or an sbatch option that holds
white space, a quote or a backslash is refused (ScriptError) rather than
written wrong.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..core.optable import path_options
from ..core.options import DATA_DIR

__all__ = [
    "ScriptError",
    "FleetSpec",
    "ARRAY_SCRIPT",
    "MERGE_SCRIPT",
    "TASK_LOG",
    "SHARD_PREFIX",
    "MERGED",
    "SLURM_LOGS",
    "array_script",
    "merge_script",
    "array_ranges",
    "absolute_run_args",
    "sbatch_safe",
    "job_name",
]

ARRAY_SCRIPT = "fleet-array.sh"
MERGE_SCRIPT = "fleet-merge.sh"
TASK_LOG = "fleet-task.log"  # in each shard's directory
SHARD_PREFIX = "shard-"
MERGED = "merged"
SLURM_LOGS = "slurm"  # the tasks' stdout and stderr
JOB_NAME = "gpuconform-fleet"  # + "-" + DIR's name (job_name())

# Options of `gpuconform run` whose values are paths: made absolute at submit
# time, since a task starts in DIR, not in the submitter's directory. --build
# is the command's own; the run options' come from their table (optable.path).
# option -> how many values (None: one or more, up to the next option)
_PATH_OPTIONS: dict[str, int | None] = {"--build": 1, **path_options()}
_UNSAFE = re.compile(r"[\s'\"\\]")


class ScriptError(ValueError):
    """A value that cannot go into a batch script; str() is one line."""


@dataclass(frozen=True)
class FleetSpec:
    """What the scripts are made of; every path absolute."""

    dir: Path  # the shared results directory
    launcher: Path  # ./gpuconform of a checkout the nodes see
    shards: int
    run_args: tuple[str, ...] = ()  # `gpuconform run` options, absolute paths
    partition: str | None = None
    gres: str | None = None
    gpus_per_node: str | None = None
    time: str | None = None
    sbatch_args: tuple[str, ...] = field(default_factory=tuple)  # as the user gave them
    share_nodes: bool = False  # True: no --exclusive (shards may share a node)

    @property
    def job_name(self) -> str:
        return job_name(self.dir)

    def shard_dir(self, index: int) -> Path:
        return self.dir / f"{SHARD_PREFIX}{index}"

    def array_directives(self) -> list[str]:
        """The array's sbatch options, in #SBATCH order."""
        out = [f"--job-name={self.job_name}", "--nodes=1", "--ntasks=1",
               # A task on a lost node stays lost (NODE_FAIL) until `fleet resume`:
               # Slurm's own requeue would start it again behind the user's back.
               "--no-requeue",
               f"--chdir={self.dir}",
               f"--output={self.dir / SLURM_LOGS}/shard-%a-%A.out"]
        if not self.share_nodes:
            # One shard a node: a shard's tests own the node's GPUs and measure
            # it (metrics, tests run one GPU at a time); without this, Slurm
            # packs tasks that ask for no GPU, or for fewer GPUs than a node
            # has, onto one node. --exclusive also gives the task all of the
            # node's CPUs and GRES (sbatch(1)).
            out.append("--exclusive")
        out += self._common()
        if self.gres:
            out.append(f"--gres={self.gres}")
        if self.gpus_per_node:
            out.append(f"--gpus-per-node={self.gpus_per_node}")
        out += list(self.sbatch_args)
        return out

    def merge_directives(self) -> list[str]:
        """The merge job's: no GPU asked for; the user's other options kept
        (an account or a QOS may be needed to run anything)."""
        return [f"--job-name={self.job_name}-merge", "--nodes=1", "--ntasks=1",
                f"--chdir={self.dir}", f"--output={self.dir / SLURM_LOGS}/merge-%j.out",
                *self._common(), *self.sbatch_args]

    def _common(self) -> list[str]:
        out = []
        if self.partition:
            out.append(f"--partition={self.partition}")
        if self.time:
            out.append(f"--time={self.time}")
        return out


def job_name(directory: Path) -> str:
    """The array's job name: gpuconform-fleet-NAME, NAME being DIR's last part."""
    return f"{JOB_NAME}-{directory.name}"


def sbatch_safe(what: str, value: str) -> str:
    """value, when it can stand in an #SBATCH line; ScriptError otherwise."""
    if not value or _UNSAFE.search(value):
        raise ScriptError(f"{what} {value!r}: an #SBATCH line cannot hold white space, quotes "
                          "or backslashes (or nothing)")
    return value


def _check(spec: FleetSpec) -> None:
    if spec.shards < 1:
        raise ScriptError(f"--shards must be >= 1, not {spec.shards}")
    for what, p in (("results directory", spec.dir), ("launcher", spec.launcher)):
        if not p.is_absolute():
            raise ScriptError(f"{what} {p} is not an absolute path")
        sbatch_safe(what, str(p))
    for what, v in (("--partition", spec.partition), ("--gres", spec.gres),
                    ("--gpus-per-node", spec.gpus_per_node), ("--time", spec.time)):
        if v is not None:
            sbatch_safe(what, v)
    for a in spec.sbatch_args:
        sbatch_safe("--sbatch-arg", a)
        if not a.startswith("-"):
            raise ScriptError(f"--sbatch-arg {a!r}: not an sbatch option (give --opt=value as "
                              "one argument)")


def array_ranges(indices: Sequence[int]) -> str:
    """sbatch --array's list: [1, 2, 3, 5] -> "1-3,5"."""
    if not indices:
        raise ScriptError("no shard to submit")
    xs = sorted(set(indices))
    runs: list[list[int]] = []
    for x in xs:
        if runs and x == runs[-1][1] + 1:
            runs[-1][1] = x
        else:
            runs.append([x, x])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _header(lines: list[str], directives: list[str]) -> str:
    out = ["#!/bin/bash"] + [f"# {x}".rstrip() for x in lines]
    out += [f"#SBATCH {d}" for d in directives]
    return "\n".join(out) + "\n"


def _variables(spec: FleetSpec) -> str:
    """The scripts' first lines after the header: where things are."""
    q = shlex.quote
    return (f"\nset -u\nDIR={q(str(spec.dir))}\nGPUCONFORM={q(str(spec.launcher))}\n"
            f"SHARDS={spec.shards}\n")


def array_script(spec: FleetSpec) -> str:
    """DIR/fleet-array.sh."""
    _check(spec)
    q = shlex.quote
    d = spec.dir
    run = " ".join(q(a) for a in spec.run_args)
    head = _header([
        f"gpuconform fleet: one array task per shard of {d}",
        "(written by `gpuconform fleet submit`). Task I runs shard I of "
        f"{spec.shards} into {d}/{SHARD_PREFIX}I:",
        f"`gpuconform run --shard I/{spec.shards} --results {d}/{SHARD_PREFIX}I`, or,",
        "when that directory holds a run already, `gpuconform resume` of it (its",
        "journal keeps every finished test: none runs twice); a shard whose run",
        "completed does nothing; a task whose run completed exits 0 whatever its",
        "tests' results. Each task notes its start and end (time, job, node,",
        f"exit status) in {d}/{SHARD_PREFIX}I/{TASK_LOG}.",
        "",
        "Submitted as:",
        f"    sbatch --array=1-{spec.shards} {d}/{ARRAY_SCRIPT}",
        f"    sbatch --dependency=afterany:ARRAY_JOB_ID {d}/{MERGE_SCRIPT}",
        "Some shards again, by hand (`gpuconform fleet resume` does this for the",
        "shards that did not finish):",
        f"    sbatch --array=2,3 {d}/{ARRAY_SCRIPT}",
        "",
    ], spec.array_directives())
    body = _variables(spec) + f"""i=${{SLURM_ARRAY_TASK_ID:?submit this script with sbatch --array=1-$SHARDS}}
shard=$DIR/{SHARD_PREFIX}$i
mkdir -p "$shard" || exit 1
completed() {{
	[ -f "$shard/journal.jsonl" ] && tail -n 1 "$shard/journal.jsonl" | grep -q '^{{"event":"end",.*"complete":true'
}}
note() {{
	printf '%s time=%s job=%s task=%s node=%s%s\\n' "$1" "$(date +%s)" "${{SLURM_JOB_ID:-}}" \\
		"${{SLURM_ARRAY_JOB_ID:-}}_$i" "${{SLURMD_NODENAME:-$(hostname)}}" "${{2:-}}" >>"$shard/{TASK_LOG}"
}}
note start
# run.json is written before the first test: without it nothing ran, and an
# empty journal left by a start cut short would stop `run`.
[ -f "$shard/run.json" ] || [ -s "$shard/journal.jsonl" ] || rm -f "$shard/journal.jsonl"
if completed; then
	echo "gpuconform fleet: shard $i/$SHARDS completed before ($shard/results.json): nothing to run"
	status=0
elif [ -f "$shard/run.json" ]; then
	"$GPUCONFORM" resume "$shard" --progress plain
	status=$?
else
	"$GPUCONFORM" run --shard "$i/$SHARDS" --results "$shard" --progress plain{' ' + run if run else ''}
	status=$?
fi
# The run completed: its tests' results are in its results, not in Slurm's state.
if [ "$status" -ne 0 ] && completed; then
	echo "gpuconform fleet: shard $i/$SHARDS completed (exit status $status: unexpected results, see $shard/summary.txt)"
	status=0
fi
note end " status=$status"
exit "$status"
"""
    return head + body


def merge_script(spec: FleetSpec) -> str:
    """DIR/fleet-merge.sh."""
    _check(spec)
    d = spec.dir
    head = _header([
        f"gpuconform fleet: the shards of {d} merged into {d}/{MERGED}",
        "(`gpuconform merge`, then `gpuconform report`), once no shard's run holds",
        "its journal's lock (`gpuconform fleet wait`: a task whose node's slurmd was",
        "lost is over for Slurm while its run goes on). Shards without a",
        "results.json (lost, cancelled, not run yet) are left out: the merge names",
        "them as missing, and `gpuconform fleet resume` runs them and merges again.",
        "",
        "Submitted after the array job:",
        f"    sbatch --dependency=afterany:ARRAY_JOB_ID {d}/{MERGE_SCRIPT}",
        "",
    ], spec.merge_directives())
    body = _variables(spec) + f"""# Slurm's afterany says every task is over; a run may not be (its slurmd lost).
"$GPUCONFORM" fleet wait "$DIR" ||
	echo "gpuconform fleet: could not wait for the shards' runs (above): merging what is there" >&2
dirs=()
for i in $(seq 1 "$SHARDS"); do
	[ -f "$DIR/{SHARD_PREFIX}$i/results.json" ] && dirs+=("$DIR/{SHARD_PREFIX}$i")
done
if [ ${{#dirs[@]}} -eq 0 ]; then
	echo "gpuconform fleet: no shard of $DIR has a results.json: nothing to merge" >&2
	exit 1
fi
"$GPUCONFORM" merge "$DIR/{MERGED}" "${{dirs[@]}}"
status=$?
"$GPUCONFORM" report "$DIR/{MERGED}" || echo "gpuconform fleet: no report.html for $DIR/{MERGED}" >&2
exit "$status"
"""
    return head + body


def _absolute(value: str, cwd: Path, option: str) -> str:
    if option in ("--kmsg", "--taint-file") and value == "off":
        return value
    if option == "--testlist" and "/" not in value and (
            not (cwd / value).is_file() or (DATA_DIR / "testlists" / f"{value}.txt").is_file()):
        return value  # a list's name (data/testlists/NAME.txt), as `run` reads it
    p = Path(value)
    return value if p.is_absolute() else str(cwd / p)


def absolute_run_args(args: Sequence[str], cwd: Path) -> list[str]:
    """`gpuconform run` options with their path values made absolute against
    cwd (the tasks do not start where the user typed the command); what
    follows "--" (pytest's arguments) is left as it is."""
    out: list[str] = []
    it = list(args)
    i = 0
    while i < len(it):
        a = it[i]
        if a == "--":
            out.extend(it[i:])
            break
        opt, eq, val = a.partition("=")
        if opt in _PATH_OPTIONS and eq:
            out.append(f"{opt}={_absolute(val, cwd, opt)}")
            i += 1
            continue
        out.append(a)
        i += 1
        if a in _PATH_OPTIONS:
            if _PATH_OPTIONS[a] == 1:
                if i < len(it):
                    out.append(_absolute(it[i], cwd, a))
                    i += 1
            else:  # nargs="+": up to the next option
                while i < len(it) and not it[i].startswith("-"):
                    out.append(_absolute(it[i], cwd, a))
                    i += 1
    return out

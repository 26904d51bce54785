"""The fleet's pure parts, without Slurm: the batch scripts' text and what
they do (run by bash with a stand-in for ./gpuconform that records its
arguments), the parsing of squeue / sacct / sbatch output captured from
slurm-wlm 22.05, a shard's state from its journal, task log and Slurm's
view, the visibility check's mount table, fleet.json, and the one-line
errors of `fleet submit` that need no cluster. The same commands against
real Slurm daemons are test_fleet_slurm.py."""

from __future__ import annotations

import json
import os
import stat
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuconform import cli
from gpuconform.fleet.fleet import (
    FLEET_JSON,
    Fleet,
    FleetError,
    ShardProgress,
    Submission,
    check_not_local,
    decide,
    mount_fstype,
    parse_task_log,
    read_fleet,
    render_submit,
    shard_progress,
    wait_runs,
)
from gpuconform.fleet.fleet_script import (
    FleetSpec,
    ScriptError,
    absolute_run_args,
    array_ranges,
    array_script,
    merge_script,
)
from gpuconform.fleet.fleet_slurm import (
    Slurm,
    SlurmError,
    TaskState,
    error_line,
    parse_completions,
    parse_job_id,
    parse_sacct,
    parse_squeue,
)
from gpuconform.core.journal import Journal, write_run_json
from gpuconform.core.results import TestRecord
from gpuconform.core.states import State

from gc_testutil import Selftests

# ------------------------------------------------------------------ scripts


def spec(d: Path, launcher: Path, **kw: Any) -> FleetSpec:
    return FleetSpec(d, launcher, kw.pop("shards", 3), tuple(kw.pop("run_args", ("--selftest",))),
                     **kw)


def test_array_script_directives_and_syntax(tmp_path: Path) -> None:
    s = spec(tmp_path / "fleet", Path("/opt/gc/gpuconform"), partition="gpu", gres="gpu:8",
             gpus_per_node="8", time="4:00:00", sbatch_args=("--account=lab", "--exclusive"),
             run_args=("--testlist", "nightly", "--", "-p", "no:cacheprovider"))
    text = array_script(s)
    directives = [x[len("#SBATCH "):] for x in text.splitlines() if x.startswith("#SBATCH ")]
    assert directives == [
        "--job-name=gpuconform-fleet-fleet", "--nodes=1", "--ntasks=1", "--no-requeue",
        f"--chdir={tmp_path}/fleet", f"--output={tmp_path}/fleet/slurm/shard-%a-%A.out",
        "--exclusive", "--partition=gpu", "--time=4:00:00", "--gres=gpu:8", "--gpus-per-node=8",
        "--account=lab", "--exclusive"]
    # sbatch reads #SBATCH lines only before the first command
    first_cmd = next(i for i, x in enumerate(text.splitlines())
                     if x and not x.startswith("#"))
    assert all(i < first_cmd for i, x in enumerate(text.splitlines()) if x.startswith("#SBATCH"))
    assert ("--results \"$shard\" --progress plain --testlist nightly -- -p no:cacheprovider"
            in text)
    assert f"sbatch --array=1-3 {tmp_path}/fleet/fleet-array.sh" in text  # how to resubmit
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    m = merge_script(s)
    md = [x[len("#SBATCH "):] for x in m.splitlines() if x.startswith("#SBATCH ")]
    assert "--gres=gpu:8" not in md and "--gpus-per-node=8" not in md  # merging needs no GPU
    assert "--partition=gpu" in md and "--account=lab" in md and "--time=4:00:00" in md
    assert md[0] == "--job-name=gpuconform-fleet-fleet-merge"
    subprocess.run(["bash", "-n"], input=m, text=True, check=True)


def test_one_shard_a_node_unless_asked_otherwise(tmp_path: Path) -> None:
    """--exclusive by default: without it, Slurm packs shards that ask for no
    GPU (or for fewer than a node has) onto one node; --share-nodes drops it.
    Two fleets' jobs are told apart by name."""
    a = spec(tmp_path / "night-1", Path("/g/gpuconform"))
    assert "#SBATCH --exclusive\n" in array_script(a)
    assert "#SBATCH --job-name=gpuconform-fleet-night-1\n" in array_script(a)
    assert "#SBATCH --job-name=gpuconform-fleet-night-1-merge\n" in merge_script(a)
    assert "--exclusive" not in merge_script(a)  # the merge needs no node of its own
    shared = spec(tmp_path / "night-2", Path("/g/gpuconform"), share_nodes=True)
    assert "--exclusive" not in array_script(shared)
    assert "#SBATCH --job-name=gpuconform-fleet-night-2\n" in array_script(shared)


@pytest.mark.parametrize("field,value", [
    ("partition", "two words"), ("gres", "gpu:'8'"), ("time", ""), ("sbatch_args", ("x=1",)),
    ("sbatch_args", ("--comment=a b",)),
])
def test_values_an_sbatch_line_cannot_hold(tmp_path: Path, field: str, value: Any) -> None:
    with pytest.raises(ScriptError) as ei:
        array_script(spec(tmp_path, Path("/g/gpuconform"), **{field: value}))
    assert "\n" not in str(ei.value)


def test_paths_an_sbatch_line_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="white space"):
        array_script(spec(tmp_path / "my results", Path("/g/gpuconform")))
    with pytest.raises(ScriptError, match="absolute"):
        array_script(spec(Path("rel"), Path("/g/gpuconform")))


def test_array_ranges() -> None:
    assert array_ranges([1, 2, 3]) == "1-3"
    assert array_ranges([3, 1, 2, 5, 7, 8]) == "1-3,5,7-8"
    assert array_ranges([2]) == "2"
    with pytest.raises(ScriptError):
        array_ranges([])


def test_absolute_run_args(tmp_path: Path) -> None:
    (tmp_path / "mylist.txt").write_text("x\n")
    args = ["--build", "b", "--testlist", "smoke", "--testlist", "mylist.txt",
            "--testlist=lists/x.txt", "--expectations", "e1.txt", "/abs/e2.txt", "--retries", "2",
            "--kmsg", "off", "--taint-file", "t", "--scratch-dir=/scratch", "-k", "b",
            "--", "--junitxml", "j.xml"]
    assert absolute_run_args(args, tmp_path) == [
        "--build", f"{tmp_path}/b", "--testlist", "smoke", "--testlist", f"{tmp_path}/mylist.txt",
        f"--testlist={tmp_path}/lists/x.txt", "--expectations", f"{tmp_path}/e1.txt",
        "/abs/e2.txt", "--retries", "2", "--kmsg", "off", "--taint-file", f"{tmp_path}/t",
        "--scratch-dir=/scratch", "-k", "b", "--", "--junitxml", "j.xml"]


# What the scripts do: bash runs them with SLURM_* set as slurmstepd would, and
# a stand-in for ./gpuconform that appends its arguments to a file.
STUB = """#!/bin/sh
printf '%s\\n' "$*" >>"{calls}"
exit {status}
"""


def stub(tmp_path: Path, status: int = 0) -> tuple[Path, Path]:
    calls = tmp_path / "calls.txt"
    launcher = tmp_path / "checkout" / "gpuconform"
    launcher.parent.mkdir()
    launcher.write_text(STUB.format(calls=calls, status=status))
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return launcher, calls


def run_task(script: str, task: int, node: str = "n2") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SLURM_ARRAY_TASK_ID=str(task), SLURM_JOB_ID="41",
               SLURM_ARRAY_JOB_ID="40", SLURMD_NODENAME=node)
    return subprocess.run(["bash", "-c", script], env=env, text=True, capture_output=True,
                          timeout=60)


def test_task_runs_resumes_or_leaves_its_shard(tmp_path: Path) -> None:
    launcher, calls = stub(tmp_path, status=1)
    d = tmp_path / "fleet"
    text = array_script(spec(d, launcher, run_args=("--selftest", "-k", "a b")))
    # 1. a fresh shard: run
    p = run_task(text, 2)
    assert p.returncode == 1, p.stderr  # the run's status is the task's
    assert calls.read_text().splitlines() == [
        f"run --shard 2/3 --results {d}/shard-2 --progress plain --selftest -k a b"]
    log = parse_task_log((d / "shard-2" / "fleet-task.log").read_text())
    assert [(e["event"], e["node"], e["task"], e["job"]) for e in log] == [
        ("start", "n2", "40_2", "41"), ("end", "n2", "40_2", "41")]
    assert log[1]["status"] == "1"
    # 2. a shard that holds a run: resume it
    calls.unlink()
    (d / "shard-2" / "run.json").write_text("{}")
    (d / "shard-2" / "journal.jsonl").write_text('{"event":"start","test":"a@b"}\n')
    assert run_task(text, 2, "n3").returncode == 1
    assert calls.read_text().splitlines() == [f"resume {d}/shard-2 --progress plain"]
    # 3. a shard whose run completed: nothing at all
    calls.unlink()
    with open(d / "shard-2" / "journal.jsonl", "a") as f:
        f.write('{"event":"end","time":1.5,"complete":true,"status":1}\n')
    p = run_task(text, 2)
    assert p.returncode == 0 and "nothing to run" in p.stdout
    assert not calls.exists()
    # ... but a run that ended incomplete (interrupted) is resumed
    with open(d / "shard-2" / "journal.jsonl", "a") as f:
        f.write('{"event":"resume","time":2}\n{"event":"end","time":3,"complete":false}\n')
    run_task(text, 2)
    assert calls.read_text().splitlines() == [f"resume {d}/shard-2 --progress plain"]
    assert len(parse_task_log((d / "shard-2" / "fleet-task.log").read_text())) == 8
    # 4. an empty journal without run.json (a start cut short): run, not stuck
    calls.unlink()
    (d / "shard-3").mkdir()
    (d / "shard-3" / "journal.jsonl").write_text("")
    run_task(text, 3)
    assert calls.read_text().startswith("run --shard 3/3 ")
    assert not (d / "shard-3" / "journal.jsonl").exists()


# A stand-in for ./gpuconform whose run ends its shard's journal (complete or not)
# and exits 1, as a run with unexpected results does.
ENDING_STUB = """#!/bin/sh
shard=$(printf '%s\\n' "$@" | sed -n 's|^\\(/.*/shard-[0-9]*\\)$|\\1|p' | head -n 1)
echo '{{"event":"start","test":"a@1"}}' >"$shard/journal.jsonl"
echo '{{"event":"end","time":1,"complete":{complete}}}' >>"$shard/journal.jsonl"
exit 1
"""


@pytest.mark.parametrize("complete,task_status", [("true", 0), ("false", 1)])
def test_task_of_a_completed_run_exits_0(tmp_path: Path, complete: str,
                                         task_status: int) -> None:
    """Unexpected results are the results' business: a run that completed is
    a task that succeeded (Slurm COMPLETED); one cut short keeps its status."""
    launcher = tmp_path / "gpuconform"
    launcher.write_text(ENDING_STUB.format(complete=complete))
    launcher.chmod(0o755)
    d = tmp_path / "fleet"
    p = run_task(array_script(spec(d, launcher)), 2)
    assert p.returncode == task_status, p.stdout + p.stderr
    log = parse_task_log((d / "shard-2" / "fleet-task.log").read_text())
    assert log[-1]["status"] == str(task_status)
    if task_status == 0:
        assert "completed (exit status 1: unexpected results" in p.stdout


def test_task_without_array_id_says_how_to_submit(tmp_path: Path) -> None:
    launcher, calls = stub(tmp_path)
    p = subprocess.run(["bash", "-c", array_script(spec(tmp_path / "f", launcher))],
                       env={k: v for k, v in os.environ.items() if not k.startswith("SLURM")},
                       text=True, capture_output=True, timeout=60)
    assert p.returncode != 0 and "sbatch --array=1-3" in p.stderr
    assert not calls.exists()


def test_merge_script_merges_the_shards_that_have_results(tmp_path: Path) -> None:
    launcher, calls = stub(tmp_path)
    d = tmp_path / "fleet"
    text = merge_script(spec(d, launcher))
    p = subprocess.run(["bash", "-c", text], text=True, capture_output=True, timeout=60)
    assert p.returncode == 1 and "nothing to merge" in p.stderr
    assert calls.read_text().splitlines() == [f"fleet wait {d}"]  # first, waits for live runs
    calls.unlink()
    for i in (1, 3):
        (d / f"shard-{i}").mkdir(parents=True)
        (d / f"shard-{i}" / "results.json").write_text("{}")
    (d / "shard-2").mkdir()  # lost: no results.json
    p = subprocess.run(["bash", "-c", text], text=True, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert calls.read_text().splitlines() == [
        f"fleet wait {d}", f"merge {d}/merged {d}/shard-1 {d}/shard-3", f"report {d}/merged"]


# ------------------------------------------------------------------ Slurm's output

# `squeue -h -r --states=all -o '%F|%K|%A|%T|%N|%r'`, slurm-wlm 22.05.8: an array
# of 3 (task 2 cancelled, task 3 on a lost node), its merge job pending, a plain job.
SQUEUE = """\
1|2|4|CANCELLED|n2|None
2|N/A|2|PENDING||Dependency
1|1|3|RUNNING|n1|None
1|3|1|NODE_FAIL|n3|NodeDown
7|N/A|7|COMPLETED|n1|None
slurm_load_jobs error: Invalid job id specified
"""


def test_parse_squeue() -> None:
    ts = parse_squeue(SQUEUE)
    assert [(t.array_job, t.task, t.job_id, t.state, t.node) for t in ts] == [
        ("1", 2, "4", "CANCELLED", "n2"), ("2", None, "2", "PENDING", ""),
        ("1", 1, "3", "RUNNING", "n1"), ("1", 3, "1", "NODE_FAIL", "n3"),
        ("7", None, "7", "COMPLETED", "n1")]
    assert [t.active for t in ts] == [False, True, True, False, False]
    assert ts[1].describe() == "2 PENDING (Dependency)"
    assert ts[3].describe() == "1_3 NODE_FAIL (NodeDown)"


def test_parse_sacct() -> None:
    # sacct -n -P -X -o JobID,JobIDRaw,State,NodeList,ExitCode (slurmdbd)
    text = ("12_1|13|COMPLETED|n1|0:0\n12_2|14|CANCELLED by 0|n2|0:15\n"
            "12_3|12|TIMEOUT|n3|0:0\n12_[4-5]|12|PENDING|None assigned|0:0\n"
            "15|15|NODE_FAIL|n1|0:0\n")
    ts = parse_sacct(text)
    assert [(t.array_job, t.task, t.job_id, t.state, t.node) for t in ts] == [
        ("12", 1, "13", "COMPLETED", "n1"), ("12", 2, "14", "CANCELLED", "n2"),
        ("12", 3, "12", "TIMEOUT", "n3"), ("15", None, "15", "NODE_FAIL", "n1")]


def test_parse_completions() -> None:
    # sacct -c -n -P -o jobid,state,nodelist,exitcode (jobcomp/filetxt): raw ids
    text = "4|CANCELLED|n2|0:0\n1|COMPLETED|n3|0:0\n9|FAILED|n1|1:0\n"
    ts = parse_completions(text, {"4": ("1", 2), "1": ("1", 3)})
    assert [(t.array_job, t.task, t.state, t.source) for t in ts] == [
        ("1", 2, "CANCELLED", "sacct -c"), ("1", 3, "COMPLETED", "sacct -c")]


def test_parse_job_id_and_error_line() -> None:
    assert parse_job_id("12345\n") == "12345"
    assert parse_job_id("12345;cluster\n") == "12345"
    with pytest.raises(SlurmError):
        parse_job_id("Submitted batch job\n")
    p = subprocess.CompletedProcess(["sbatch"], 1, "", (
        "sbatch: error: invalid partition specified: nope\n"
        "sbatch: error: Batch job submission failed: Invalid partition name specified\n"))
    assert error_line(p, ["sbatch"]) == "sbatch: error: invalid partition specified: nope"
    assert error_line(subprocess.CompletedProcess(["x"], 3, "", ""), ["x"]) == \
        "x exited with status 3"


def test_missing_slurm_command_is_one_line(tmp_path: Path) -> None:
    s = Slurm(env={"PATH": str(tmp_path)})
    with pytest.raises(SlurmError) as ei:
        s.require("sbatch")
    assert str(ei.value).startswith("sbatch not found on PATH")
    with pytest.raises(SlurmError, match="squeue not found on PATH"):
        s.run(["squeue"])


def test_silent_slurm_command_is_one_line(tmp_path: Path) -> None:
    """A client command that never answers (slurmctld down) is one line naming it
    and the time waited, not subprocess's traceback."""
    squeue = tmp_path / "squeue"
    squeue.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 600\n")
    squeue.chmod(0o755)
    s = Slurm(env={"PATH": str(tmp_path)}, timeout=0.5)
    with pytest.raises(SlurmError) as ei:
        s.run(["squeue", "-h", "-r", "--states=all"])
    assert str(ei.value) == "squeue -h -r...: no answer within 0.5 s (is slurmctld up?)"
    assert ei.value.__cause__ is None and ei.value.__suppress_context__


# ------------------------------------------------------------------ a shard's state


def record(name: str, state: State, expected: bool | None = None) -> dict[str, Any]:
    r = TestRecord(name, name.split("@")[0], name.split("@")[1], state)
    r.expected = expected
    return r.to_json()


def make_shard(d: Path, tests: list[str], results: dict[str, State], running: str | None = None,
               end: bool | None = None) -> Path:
    d.mkdir(parents=True)
    write_run_json(d, {"manifest": "/m", "run_id": "r", "options": {}, "selection": tests,
                       "tests": tests, "shard": [1, 3]})
    j = Journal(d / "journal.jsonl", lock=False)
    for name, st in results.items():
        j.start(name, 1, 10, "tok")
        j.result(name, record(name, st, expected=st is not State.FAIL))
    if running:
        j.start(running, 1, 11, "tok2")
    if end is not None:
        j.event("end", complete=end, status=0)
    j.close()
    return d


def test_shard_progress(tmp_path: Path) -> None:
    assert shard_progress(tmp_path / "none") == ShardProgress()
    tests = ["a@1", "a@2", "a@3"]
    p = shard_progress(make_shard(tmp_path / "s1", tests, {"a@1": State.PASS, "a@2": State.FAIL},
                                  running="a@3"))
    assert (p.started, p.tests, p.done, p.unexpected, p.running) == (True, 3, 2, ["a@2"], ["a@3"])
    assert not p.ended and not p.complete
    p = shard_progress(make_shard(tmp_path / "s2", tests, dict.fromkeys(tests, State.PASS),
                                  end=True))
    assert p.complete and p.done == 3
    p = shard_progress(make_shard(tmp_path / "s3", tests, {"a@1": State.PASS}, end=False))
    assert p.ended and not p.complete
    (tmp_path / "s4").mkdir()
    (tmp_path / "s4" / "run.json").write_text("{")
    assert "not JSON" in str(shard_progress(tmp_path / "s4").problem)


def progress(**kw: Any) -> ShardProgress:
    return ShardProgress(**{"started": True, "tests": 5, "done": 2, **kw})


LOG_LOST = [{"event": "start", "time": "1", "job": "14", "task": "12_2", "node": "n3"}]
LOG_ENDED = LOG_LOST + [{"event": "end", "time": "2", "job": "14", "task": "12_2", "node": "n3",
                         "status": "2"}]


@pytest.mark.parametrize("prog,task,log,want", [
    (progress(ended=True, complete=True, done=5), None, LOG_ENDED, ("done", "n3", "complete")),
    (ShardProgress(), TaskState("12", 2, "12", "PENDING", "", "Priority"), [],
     ("pending", "", "12_2 PENDING (Priority)")),
    (progress(), TaskState("12", 2, "14", "RUNNING", "n1"), LOG_LOST, ("running", "n1", "RUNNING")),
    (progress(running=["a@3"]), TaskState("12", 2, "14", "NODE_FAIL", "n3", "NodeDown"), LOG_LOST,
     ("incomplete", "n3", "12_2 NODE_FAIL (NodeDown); 2/5 tests done; a@3 was running")),
    (progress(), TaskState("12", 2, "14", "CANCELLED", "n2"), LOG_LOST,
     ("incomplete", "n2", "12_2 CANCELLED")),
    (progress(), TaskState("12", 2, "14", "TIMEOUT", "n2"), LOG_LOST,
     ("incomplete", "n2", "TIMEOUT")),
    (progress(ended=True), TaskState("12", 2, "14", "COMPLETED", "n2", "0:0"), LOG_ENDED,
     ("incomplete", "n2", "ended (COMPLETED")),
    (progress(), None, LOG_LOST,
     ("incomplete", "n3", "started on n3 and never ended (node lost or task killed)")),
    (progress(), None, LOG_ENDED, ("incomplete", "n3", "ended with status 2")),
    (ShardProgress(), None, [], ("incomplete", "", "never started")),
])
def test_decide(prog: ShardProgress, task: TaskState | None, log: list[dict[str, str]],
                want: tuple[str, str, str]) -> None:
    state, node, why = decide(prog, task, log, "12_2")
    assert (state, node) == want[:2]
    assert want[2] in why and "\n" not in why


def test_a_live_run_is_running_whatever_slurm_says() -> None:
    """Its own journal and lock first: a task whose node's slurmd was lost is
    NODE_FAIL for Slurm while its run goes on; the shard is running (never
    submitted again), on the node its tests ran on."""
    lost = TaskState("12", 2, "14", "NODE_FAIL", "n3", "NodeDown")
    state, node, why = decide(progress(locked=True, nodes=["n3"], running=["a@3"]), lost,
                              LOG_LOST, "12_2")
    assert (state, node) == ("running", "n3")
    assert why == ("its run holds journal.jsonl's lock; 2/5 tests done; Slurm says 12_2 "
                   "NODE_FAIL (NodeDown), but the run goes on (its node's slurmd lost?): not "
                   "submitted again while it does")
    # Slurm could not be asked: the lock still says
    assert decide(progress(locked=True), None, LOG_LOST, "12_2", "squeue: timeout")[0] == \
        "running"
    # a shard resumed on n1 after its first tests ran on n3: both, in that order
    assert decide(progress(ended=True, complete=True, nodes=["n3", "n1"]),
                  TaskState("20", 2, "21", "COMPLETED", "n1"), LOG_ENDED, "20_2")[:2] == \
        ("done", "n3,n1")
    # a resubmitted task that ran no test does not move the shard
    assert decide(progress(nodes=["n3"]), TaskState("20", 2, "21", "FAILED", "n1", "2:0"),
                  LOG_ENDED, "20_2")[:2] == ("incomplete", "n3")


def test_shard_progress_reads_the_lock_and_the_nodes(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMD_NODENAME", "n7")
    d = make_shard(tmp_path / "s", ["a@1", "a@2"], {"a@1": State.PASS}, running="a@2")
    assert shard_progress(d).nodes == ["n7"] and not shard_progress(d).locked
    j = Journal(d / "journal.jsonl")  # a live run
    try:
        assert shard_progress(d).locked
    finally:
        j.close()
    assert not shard_progress(d).locked


def test_wait_runs_returns_once_no_run_holds_its_lock(tmp_path: Path) -> None:
    """The merge job's first step, against a real process holding a shard's lock."""
    d = tmp_path / "fleet"
    d.mkdir()
    Fleet(d, Path("/g/gpuconform"), 2, [], {}).write()
    (d / "shard-2").mkdir()
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); "
            "from gpuconform.core.journal import Journal; "
            "Journal(__import__('pathlib').Path(sys.argv[2])); print('locked', flush=True);"
            " sys.stdin.readline()")
    holder = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parents[1]),
                               str(d / "shard-2" / "journal.jsonl")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 1:  # the run ends while the merge waits
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=60)

    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        wait_runs(d, poll=0.05, say=say)
    finally:
        holder.kill()
        holder.wait()
    assert said == [f"gpuconform fleet: waiting for shard(s) 2 of {d}: a live run holds its "
                    "journal.jsonl's lock",
                    "gpuconform fleet: no shard's run holds its lock any more: merging"]
    said.clear()
    wait_runs(d, poll=0.05, say=said.append)  # nothing held: no word, no wait
    assert said == []


def test_decide_without_slurm() -> None:
    state, _, why = decide(progress(), None, LOG_LOST, "12_2", slurm_error="squeue: timeout")
    assert state == "unknown" and "squeue: timeout" in why
    # a journal that says done needs no Slurm
    assert decide(progress(ended=True, complete=True), None, [], "12_2", "x")[0] == "done"
    assert decide(progress(), None, [], None)[0:3:2] == ("incomplete", "never submitted")


def test_parse_task_log() -> None:
    text = ("start time=5 job=14 task=12_2 node=n3\ngarbage line\n"
            "end time=9 job=14 task=12_2 node=n3 status=0\n")
    assert parse_task_log(text) == [
        {"event": "start", "time": "5", "job": "14", "task": "12_2", "node": "n3"},
        {"event": "end", "time": "9", "job": "14", "task": "12_2", "node": "n3", "status": "0"}]


# ------------------------------------------------------------------ visibility, fleet.json

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
25 22 0:23 / /dev/shm rw,nosuid shared:4 - tmpfs tmpfs rw
30 22 0:27 / /tmp rw - tmpfs tmpfs rw,size=100k
31 22 0:40 / /shared rw - nfs4 server:/export rw,vers=4.2
32 22 0:41 / /shared/my\\040lab rw - lustre x rw
"""


def test_mount_fstype() -> None:
    assert mount_fstype(Path("/home/u/r"), MOUNTINFO) == ("ext4", "/")
    assert mount_fstype(Path("/dev/shm/x"), MOUNTINFO) == ("tmpfs", "/dev/shm")
    assert mount_fstype(Path("/tmpfoo"), MOUNTINFO) == ("ext4", "/")
    assert mount_fstype(Path("/shared/gc/r"), MOUNTINFO) == ("nfs4", "/shared")
    assert mount_fstype(Path("/shared/my lab/r"), MOUNTINFO) == ("lustre", "/shared/my lab")
    with pytest.raises(FleetError) as ei:
        check_not_local("results directory", Path("/tmp/r/not/yet"), MOUNTINFO)
    assert "is on tmpfs (/tmp)" in str(ei.value) and "\n" not in str(ei.value)
    check_not_local("results directory", Path("/shared/gc"), MOUNTINFO)


def test_fleet_json_round_trip(tmp_path: Path) -> None:
    f = Fleet(tmp_path, Path("/g/gpuconform"), 3, ["--selftest"], {"partition": "debug"},
              [Submission("submit", 1.0, [1, 2, 3], "12", "13", [["sbatch", "x"]]),
               Submission("resume", 2.0, [2], "20", "21")], [3])
    f.write()
    g = read_fleet(tmp_path)
    assert g.to_json() == f.to_json() and g.empty_shards == [3]
    assert "  note:    shard(s) 3 of 3 get no test (a test's shard is a hash of its name)" in \
        render_submit(g, g.submissions[0])
    assert g.job_of(1) == ("12", 1) and g.job_of(2) == ("20", 2)
    (tmp_path / FLEET_JSON).write_text(json.dumps({"format": "gpuconform-fleet", "version": 1}))
    with pytest.raises(FleetError, match="missing or of the wrong type"):
        read_fleet(tmp_path)
    with pytest.raises(FleetError, match="no such file"):
        read_fleet(tmp_path / "nothing")


# ------------------------------------------------------------------ `fleet submit`, no cluster


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def test_submit_without_sbatch_on_path(selftests: Selftests, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    err = one_line_error(capsys, ["fleet", "submit", "--results", str(tmp_path / "f"),
                                  "--shards", "2", "--", "--build", str(selftests.build),
                                  "--selftest"])
    assert "sbatch not found on PATH" in err
    assert not (tmp_path / "f").exists()


def test_submit_checks_the_baseline_paths_not_the_login_nodes_fingerprint(
        selftests: Selftests, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A --baselines DIR that is not there stops the submit; one that lacks
    this (login) machine's baseline does not: the nodes' fingerprints choose,
    and each shard stops at its start if its own is missing."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    base = ["fleet", "submit", "--results", str(tmp_path / "f"), "--shards", "2", "--",
            "--build", str(selftests.build), "--selftest"]
    err = one_line_error(capsys, base + ["--baselines", str(tmp_path / "nowhere")])
    assert err == f"gpuconform: --baselines {tmp_path / 'nowhere'}: no such directory"
    (tmp_path / "bl").mkdir()
    assert "sbatch not found on PATH" in one_line_error(capsys, base + ["--baselines",
                                                                       str(tmp_path / "bl")])
    assert not (tmp_path / "f").exists()


def test_submit_refuses_bad_run_options(selftests: Selftests, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    base = ["fleet", "submit", "--results", str(tmp_path / "f"), "--shards", "2", "--",
            "--build", str(selftests.build), "--selftest"]
    assert "--shard and --results are the fleet's own" in one_line_error(
        capsys, base + ["--shard", "1/2"])
    assert "no-such-list" in one_line_error(capsys, base + ["--testlist", "no-such-list"])
    with pytest.raises(SystemExit) as ei:  # argparse's own error: one line, exit 2
        cli.main(base + ["--no-such-option"])
    assert ei.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
    assert not (tmp_path / "f").exists()

"""`gpuconform fleet` against real Slurm daemons (conftest's slurm_cluster:
munged, slurmctld and slurmd n1..n3 of this host; no mock): a 3-shard fleet
of the selftest manifest merges to what one machine's run gives; a node lost
mid-run and a cancelled task leave their shard incomplete, `fleet status`
says so and `fleet resume` completes it, no finished test running twice; an
unknown partition and a results directory the nodes cannot see are one-line
errors with nothing submitted; the README's fleet commands run as written.

Waits are generous and only guard against a hang (a loaded 2-core machine):
never a measure of speed. Every test starts from an idle cluster and puts it
back (cluster.reset()), and marker_env proves no job process outlives it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from gc_testutil import HANG_GUARD_S, LAUNCHER, REPO_ROOT, Selftests
from gpuconform.fleet.fleet import LOCAL_FS, mount_fstype
from gpuconform.fleet.fleet_slurm import ACTIVE_STATES
from gpuconform.core.manifest import SUITE_MANIFEST
from gpuconform.core.shard import shard_of
from slurm_cluster import SlurmCluster

WAIT_S = 600  # for a fleet to end, a node to be noticed lost: a hang guard
LONG = "selftest_flow@sleep-long"


def run_args(st: Selftests) -> list[str]:
    """`gpuconform run` options of every fleet here and of the one-machine run."""
    return ["--build", str(st.build), "--selftest", "--timeout", "2", "--grace", "1",
            "--kmsg", "off", "--no-baseline",
            "--timeout-override", "selftest_metrics@spin=300",
            "--timeout-override", f"{LONG}=900"]


def selftest_env(env: dict[str, str], long_ms: int) -> dict[str, str]:
    for var in ("GPUCONFORM_SELFTEST_KMSG", "GPUCONFORM_SELFTEST_TAINT_FILE",
                "GPUCONFORM_SELFTEST_FIXTURE_SKIP", "CUDA_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPUCONFORM_DEVICES"):
        env.pop(var, None)
    env.update(GPUCONFORM_SELFTEST_SLEEP_MS="20", GPUCONFORM_SELFTEST_LONG_SLEEP_MS=str(long_ms))
    return env


@pytest.fixture(scope="module")
def reference(selftests: Selftests, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each test's state in one machine's run of the same selection."""
    out = tmp_path_factory.mktemp("one-machine") / "r"
    env = selftest_env(dict(os.environ), long_ms=50)
    p = subprocess.run([str(LAUNCHER), "run", *run_args(selftests), "--results", str(out),
                        "--progress", "off"], env=env, cwd=REPO_ROOT, capture_output=True,
                       text=True, timeout=HANG_GUARD_S)
    assert (out / "results.json").is_file(), p.stdout + p.stderr
    tests = json.loads((out / "results.json").read_text())["tests"]
    return {n: str(r["result"]) for n, r in tests.items()}


@pytest.fixture
def cluster(slurm_cluster: SlurmCluster, marker_env: bytes,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[SlurmCluster]:
    """The session's cluster, idle; the selftests' environment in os.environ
    (hence in cluster.env() and in the jobs); put back idle afterwards."""
    for var in list(os.environ):
        if var.startswith("GPUCONFORM_SELFTEST_") or var.endswith("_VISIBLE_DEVICES"):
            monkeypatch.delenv(var)
    monkeypatch.delenv("GPUCONFORM_DEVICES", raising=False)
    monkeypatch.setenv("GPUCONFORM_SELFTEST_SLEEP_MS", "20")
    monkeypatch.setenv("GPUCONFORM_SELFTEST_LONG_SLEEP_MS", "50")
    slurm_cluster.reset()
    try:
        yield slurm_cluster
    finally:
        slurm_cluster.reset()


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory for a fleet's results, which the nodes (this host) see:
    tmp_path, unless this machine's /tmp is a tmpfs, which `fleet submit`
    rightly refuses; then one under the checkout (which the nodes must see)."""
    fstype, _ = mount_fstype(tmp_path.resolve(),
                             Path("/proc/self/mountinfo").read_text(errors="replace"))
    if fstype not in LOCAL_FS:
        yield tmp_path / "fleet"
        return
    base = Path(tempfile.mkdtemp(prefix="build-fleet-test-", dir=REPO_ROOT))
    try:
        yield base / "fleet"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def gpuconform(cluster: SlurmCluster, *args: str, cwd: Path = REPO_ROOT
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LAUNCHER), *args], env=cluster.env(), cwd=cwd, text=True,
                          capture_output=True, timeout=HANG_GUARD_S)


def submit(cluster: SlurmCluster, st: Selftests, d: Path, *extra: str) -> str:
    p = gpuconform(cluster, "fleet", "submit", "--results", str(d), "--shards", "3",
                   "--partition", cluster.partition, *extra, "--", *run_args(st))
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.match(r"gpuconform fleet: array job (\d+) \(3 shards\) and merge job (\d+) "
                 r"\(afterany:\1\) submitted\n", p.stdout)
    assert m, p.stdout
    return m.group(1)


def status(cluster: SlurmCluster, d: Path) -> dict[str, Any]:
    p = gpuconform(cluster, "fleet", "status", str(d), "--json")
    assert p.returncode == 0, p.stderr
    data: dict[str, Any] = json.loads(p.stdout)
    return data


def wait(cluster: SlurmCluster, ready: Callable[[], bool], what: str) -> None:
    cluster.wait_until(ready, WAIT_S, what)


def job_state(cluster: SlurmCluster, job: str) -> str:
    p = cluster.run("squeue", "-h", "--states=all", "-j", job, "-o", "%T", check=False)
    return p.stdout.strip() if p.returncode == 0 else ""


def wait_merged(cluster: SlurmCluster, d: Path) -> dict[str, Any]:
    """The last merge job ended: DIR/merged/results.json."""
    merge = json.loads((d / "fleet.json").read_text())["submissions"][-1]["merge_job"]
    wait(cluster, lambda: job_state(cluster, merge) not in ("", *ACTIVE_STATES),
         f"merge job {merge} over")
    data: dict[str, Any] = json.loads((d / "merged" / "results.json").read_text())
    return data


def states(data: dict[str, Any]) -> dict[str, str]:
    return {n: str(r["result"]) for n, r in data["tests"].items()}


def journal(shard: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (shard / "journal.jsonl").read_text().splitlines() if x]


def running(shard: Path) -> list[str]:
    """Tests of the shard's journal started and without a result yet."""
    try:
        lines = journal(shard)
    except (OSError, ValueError):
        return []
    done = {x["test"] for x in lines if x["event"] == "result"}
    return [x["test"] for x in lines if x["event"] == "start" and x["test"] not in done]


def assert_nothing_ran_twice(shard: Path, finished_before: set[str]) -> None:
    lines = journal(shard)
    results = [x["test"] for x in lines if x["event"] == "result"]
    assert len(results) == len(set(results)), f"a test has two results in {shard}"
    resumed = next(i for i, x in enumerate(lines) if x["event"] == "resume")
    again = {x["test"] for x in lines[resumed:] if x["event"] == "start"} & finished_before
    assert not again, f"finished before the resume, started again: {again}"


def task_node(shard: Path) -> str:
    starts = [x for x in (shard / "fleet-task.log").read_text().splitlines()
              if x.startswith("start ")]
    return re.search(r" node=(\S+)", starts[-1]).group(1)  # type: ignore[union-attr]


def our_jobs(cluster: SlurmCluster) -> list[str]:
    p = cluster.run("squeue", "-h", "--states=all", "-o", "%i %j")
    return [x for x in p.stdout.splitlines() if x.strip()]


# ------------------------------------------------------------------ the tests


def test_three_shards_merge_to_one_machines_result(cluster: SlurmCluster, selftests: Selftests,
                                                   reference: dict[str, str],
                                                   fleet_dir: Path) -> None:
    d = fleet_dir
    array = submit(cluster, selftests, d, "--gpus-per-node", "1")
    merge = json.loads((d / "fleet.json").read_text())["submissions"][0]["merge_job"]
    # the jobs carry the fleet's name: two fleets tell apart in squeue
    names = dict(x.split() for x in cluster.run("squeue", "-h", "-r", "--states=all", "-o",
                                                "%i %j").stdout.splitlines() if x.strip())
    assert (names[f"{array}_1"], names[merge]) == (f"gpuconform-fleet-{d.name}",
                                                   f"gpuconform-fleet-{d.name}-merge"), names
    merged = wait_merged(cluster, d)
    # exactly one result per test, each in the state one machine gave it
    assert merged["run"]["merge"]["ok"] is True, (d / "merged" / "summary.txt").read_text()
    assert states(merged) == reference
    st = status(cluster, d)
    assert [(s["shard"], s["state"]) for s in st["shards"]] == [(1, "done"), (2, "done"),
                                                                (3, "done")]
    assert all(s["node"] in cluster.nodes and s["done"] == s["tests"] for s in st["shards"])
    assert sum(s["tests"] for s in st["shards"]) == len(reference)
    assert st["merge"]["ok"] is True
    # a run that completed is a task that succeeded, unexpected results or not:
    # those are in the results (and the status' unexpected column)
    assert sum(len(s["unexpected"]) for s in st["shards"]) > 0
    assert {s["slurm"] for s in st["shards"]} == {"COMPLETED"}, st["shards"]
    # --gpus-per-node went to Slurm: each shard's tests saw the GPU it was given
    env = merged["tests"]["selftest_flow@print-env"]
    assert "env CUDA_VISIBLE_DEVICES=0" in env["out"] + env["err"]
    # the merged report groups the tests by machine (here one fingerprint)
    assert len(merged["fingerprints"]) == 1
    assert (d / "merged" / "report.html").is_file()
    text = gpuconform(cluster, "fleet", "status", str(d)).stdout
    assert re.search(r"^2/3 +done +n\d +\d+/\d+ ", text, re.M), text
    # the script, submitted again by hand for a finished shard, runs nothing
    before = (d / "shard-2" / "journal.jsonl").read_bytes()
    p = cluster.run("sbatch", "--wait", "--array=2", str(d / "fleet-array.sh"), timeout=WAIT_S)
    assert p.returncode == 0, p.stderr
    assert (d / "shard-2" / "journal.jsonl").read_bytes() == before
    assert "nothing to run" in "".join(
        f.read_text() for f in (d / "slurm").glob("shard-2-*.out"))
    # every shard done, merged/ lost: resume merges again, and submits no shard
    shutil.rmtree(d / "merged")
    p2 = gpuconform(cluster, "fleet", "resume", str(d))
    assert p2.returncode == 0 and "no shard of" in p2.stdout, p2.stdout + p2.stderr
    assert states(wait_merged(cluster, d)) == reference
    assert json.loads((d / "fleet.json").read_text())["submissions"][-1]["array_job"] is None


def interrupted_fleet(cluster: SlurmCluster, st: Selftests, d: Path,
                      monkeypatch: pytest.MonkeyPatch) -> tuple[str, int, Path]:
    """A fleet whose sleep-long (5 minutes) is running: (array job, its shard, shard dir)."""
    monkeypatch.setenv("GPUCONFORM_SELFTEST_LONG_SLEEP_MS", "300000")
    array = submit(cluster, st, d)
    k = shard_of(LONG, 3)
    shard = d / f"shard-{k}"
    wait(cluster, lambda: LONG in running(shard), f"{LONG} running in shard {k}")
    return array, k, shard


def finish_after_resume(cluster: SlurmCluster, d: Path, k: int, shard: Path,
                        reference: dict[str, str], long_states: tuple[str, ...]) -> None:
    """The shard is incomplete: resume it, then every test has one result,
    as one machine had it but sleep-long (cut), and nothing ran twice."""
    others = [i for i in (1, 2, 3) if i != k]
    wait(cluster, lambda: all(s["state"] == "done" for s in status(cluster, d)["shards"]
                              if s["shard"] in others), "the other shards done")
    wait_merged(cluster, d)
    # merged without the shard, or with it cut short (a cancelled runner still
    # writes its results.json, maybe before the merge job starts)
    assert status(cluster, d)["merge"]["verdict"].startswith("INCOMPLETE: ")
    finished = {x["test"] for x in journal(shard) if x["event"] == "result"}
    p = gpuconform(cluster, "fleet", "resume", str(d))
    assert p.returncode == 0, p.stderr
    assert f"shards {k} of {d} submitted again as array job" in p.stdout
    merged = wait_merged(cluster, d)
    assert merged["run"]["merge"]["ok"] is True, (d / "merged" / "summary.txt").read_text()
    got = states(merged)
    assert got[LONG] in long_states, merged["tests"][LONG]["reason"]
    assert {n: s for n, s in got.items() if n != LONG} == \
        {n: s for n, s in reference.items() if n != LONG}
    assert_nothing_ran_twice(shard, finished)
    for i in others:  # never submitted again
        assert len(re.findall(r"^start ", (d / f"shard-{i}" / "fleet-task.log").read_text(),
                              re.M)) == 1
    assert [s["state"] for s in status(cluster, d)["shards"]] == ["done"] * 3
    p = gpuconform(cluster, "fleet", "resume", str(d))
    assert p.returncode == 0 and "nothing to resume" in p.stdout, p.stdout + p.stderr


def test_lost_node_then_resume(cluster: SlurmCluster, selftests: Selftests,
                               reference: dict[str, str], fleet_dir: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    d = fleet_dir
    array, k, shard = interrupted_fleet(cluster, selftests, d, monkeypatch)
    node = task_node(shard)
    cluster.kill_node(node)  # slurmd, its job steps and the shard's processes
    wait(cluster, lambda: status(cluster, d)["shards"][k - 1]["state"] == "incomplete",
         f"shard {k} incomplete after {node} was lost")
    s = status(cluster, d)["shards"][k - 1]
    assert (s["node"], s["slurm"], s["running"]) == (node, "NODE_FAIL", [LONG])
    text = gpuconform(cluster, "fleet", "status", str(d)).stdout
    row = next(x for x in text.splitlines() if x.startswith(f"{k}/3 "))
    assert re.match(rf"{k}/3 +incomplete +{node} ", row), row
    assert f"{array}_{k} NODE_FAIL" in row and f"{LONG} was running" in row
    assert f"gpuconform fleet resume {d}" in text
    # the node stays down: the shard resumes on another one
    finish_after_resume(cluster, d, k, shard, reference, ("incomplete",))
    assert task_node(shard) != node
    # its node is where its tests ran: the lost one first, then the new one if the
    # resumed run had tests left to start
    nodes = status(cluster, d)["shards"][k - 1]["nodes"]
    assert nodes[0] == node and set(nodes) <= {node, task_node(shard)}, nodes


def test_cancelled_task_then_resume(cluster: SlurmCluster, selftests: Selftests,
                                    reference: dict[str, str], fleet_dir: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    d = fleet_dir
    array, k, shard = interrupted_fleet(cluster, selftests, d, monkeypatch)
    cluster.run("scancel", f"{array}_{k}")
    wait(cluster, lambda: status(cluster, d)["shards"][k - 1]["state"] == "incomplete",
         f"shard {k} incomplete after scancel")
    s = status(cluster, d)["shards"][k - 1]
    assert s["slurm"] == "CANCELLED" and f"{array}_{k} CANCELLED" in s["why"]
    # the runner, sent SIGTERM, recorded the test it was running as cut short;
    # Slurm's SIGTERM may reach that test before the runner's own kill does
    finish_after_resume(cluster, d, k, shard, reference, ("incomplete", "crash"))


def slurm_state(cluster: SlurmCluster, job: str) -> str:
    """squeue's state of one job or array task ("12_3"); "" once Slurm forgot it."""
    p = cluster.run("squeue", "-h", "-r", "--states=all", "-j", job.split("_")[0], "-o", "%i %T",
                    check=False)
    return next((x.split()[1] for x in p.stdout.splitlines() if x.split()[:1] == [job]), "")


def test_lost_slurmd_the_run_goes_on(cluster: SlurmCluster, selftests: Selftests,
                                     reference: dict[str, str], fleet_dir: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Only slurmd of a shard's node is killed: Slurm ends the task NODE_FAIL,
    the job's processes go on. The shard is running (its own journal's lock
    says so, before Slurm), resume does not submit it again, the merge job
    (afterany: already started) waits for its run, and the merge is complete;
    the shard's node stays the one its tests ran on."""
    d = fleet_dir
    array, k, shard = interrupted_fleet(cluster, selftests, d, monkeypatch)
    node = task_node(shard)
    cluster.kill_slurmd(node)  # only slurmd: slurmstepd, the runner, sleep-long live on
    wait(cluster, lambda: slurm_state(cluster, f"{array}_{k}") == "NODE_FAIL",
         f"task {array}_{k} NODE_FAIL after {node}'s slurmd was killed")
    assert LONG in running(shard)  # the run goes on
    s = status(cluster, d)["shards"][k - 1]
    assert (s["state"], s["node"], s["slurm"], s.get("locked")) == ("running", node, "NODE_FAIL", True), s
    assert "not submitted again while it does" in s["why"]
    # the merge job started (afterany) and waits for the shard's run
    merge = json.loads((d / "fleet.json").read_text())["submissions"][0]["merge_job"]
    merge_log = d / "slurm" / f"merge-{merge}.out"
    wait(cluster, lambda: merge_log.is_file() and f"waiting for shard(s) {k} of {d}"
         in merge_log.read_text(), f"merge job {merge} waiting for shard {k}")
    assert not (d / "merged" / "results.json").exists()
    # resume leaves the shard alone and says why, in one line
    p = gpuconform(cluster, "fleet", "resume", str(d))
    assert p.returncode == 0 and p.stdout.startswith("gpuconform fleet: nothing to resume"), \
        p.stdout + p.stderr
    assert (f"  shard {k}: not submitted again: its run on {node} still holds journal.jsonl's "
            f"lock although Slurm says {array}_{k} NODE_FAIL") in p.stdout, p.stdout
    assert len(json.loads((d / "fleet.json").read_text())["submissions"]) == 1
    # sleep-long ends (killed, each attempt: a crash), the run completes, the merge goes on
    assert {x["node"] for x in journal(shard) if x["event"] == "start"} == {node}

    def long_ended() -> bool:
        lines = journal(shard)
        if any(x["event"] == "result" and x["test"] == LONG for x in lines):
            return True
        pgid = [x["pgid"] for x in lines if x["event"] == "start" and x["test"] == LONG][-1]
        try:  # the runner retries a crash: each attempt in turn, checked to be sleep-long
            if b"sleep-long" in Path(f"/proc/{pgid}/cmdline").read_bytes():
                os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
        return False

    wait(cluster, long_ended, f"{LONG} ended in shard {k}")
    merged = wait_merged(cluster, d)
    assert merged["run"]["merge"]["ok"] is True, (d / "merged" / "summary.txt").read_text()
    assert sorted(merged["tests"]) == sorted(reference) and merged["totals"].get("notrun", 0) == 0
    assert "no shard's run holds its lock any more: merging" in merge_log.read_text()
    st = status(cluster, d)
    assert [x["state"] for x in st["shards"]] == ["done"] * 3 and st["merge"]["ok"] is True
    assert st["shards"][k - 1]["node"] == node
    assert len(re.findall(r"^start ", (shard / "fleet-task.log").read_text(), re.M)) == 1


def test_one_shard_a_node(selftests: Selftests, fleet_dir: Path, marker_env: bytes,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes of 2 CPUs and shards that ask for no GPU: Slurm packs them two a
    node unless each task has its node to itself (--exclusive, the default);
    --share-nodes lets them share."""
    for var in list(os.environ):
        if var.startswith("GPUCONFORM_SELFTEST_") or var.endswith("_VISIBLE_DEVICES"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("GPUCONFORM_SELFTEST_SLEEP_MS", "20")
    monkeypatch.setenv("GPUCONFORM_SELFTEST_LONG_SLEEP_MS", "50")
    with SlurmCluster(cpus=2) as c:
        for extra, cpus in (((), "2"), (("--share-nodes",), "1")):
            d = fleet_dir / ("shared" if extra else "own")
            array = submit(c, selftests, d, *extra)
            wait_merged(c, d)
            # each task's CPUs and node, as Slurm allocated them
            p = c.run("squeue", "-h", "-r", "--states=all", "-j", array, "-o", "%K %C %N")
            alloc = {int(x.split()[0]): x.split()[1:] for x in p.stdout.splitlines()}
            assert sorted(alloc) == [1, 2, 3], p.stdout
            assert {a[0] for a in alloc.values()} == {cpus}, (extra, p.stdout)
            if not extra:
                assert sorted(a[1] for a in alloc.values()) == ["n1", "n2", "n3"], p.stdout
            c.reset()


def test_more_shards_than_tests(cluster: SlurmCluster, selftests: Selftests,
                                fleet_dir: Path) -> None:
    before = our_jobs(cluster)
    n = len(gpuconform(cluster, "list", "--build", str(selftests.build), "--selftest")
            .stdout.split())
    err = one_line_error(gpuconform(
        cluster, "fleet", "submit", "--results", str(fleet_dir), "--shards", "1500", "--",
        *run_args(selftests)))
    assert err == (f"gpuconform: fleet submit: --shards 1500 for a selection of {n} tests: a "
                   f"shard of no test would hold a node for nothing; give --shards {n} or fewer")
    assert our_jobs(cluster) == before and not fleet_dir.exists()  # not even a probe


def test_refused_submit_leaves_the_directory_and_resume_takes_gres(
        cluster: SlurmCluster, selftests: Selftests, fleet_dir: Path) -> None:
    """sbatch refuses the array after the probe job (no node has 2 GPUs):
    nothing submitted, DIR as it was, so a second submit is not refused as a
    fleet already there. `fleet resume` takes --gres like submit."""
    d = fleet_dir
    d.mkdir(parents=True)
    (d / "notes.txt").write_text("mine\n")
    before = our_jobs(cluster)
    err = one_line_error(gpuconform(
        cluster, "fleet", "submit", "--results", str(d), "--shards", "3", "--gres", "gpu:2",
        "--", *run_args(selftests)))
    assert "Requested node configuration is not available" in err, err
    assert err.endswith(f"(nothing submitted; {d} left as it was)"), err
    assert sorted(x.name for x in d.iterdir()) == ["notes.txt"]
    # the probe ran; the refused array is a record Slurm failed at once (BadConstraints)
    new = [x.split() for x in cluster.run("squeue", "-h", "--states=all", "-o", "%i %j %T")
           .stdout.splitlines() if x.strip() and " ".join(x.split()[:2]) not in before]
    assert [j[1:] for j in new][0] == [f"gpuconform-fleet-{d.name}-probe", "COMPLETED"], new
    assert not [j for j in new if j[2] in ACTIVE_STATES], new
    # submitted again, it is not refused; one shard cancelled (started or not)
    p = gpuconform(cluster, "fleet", "submit", "--results", str(d), "--shards", "3",
                   "--gres", "gpu:1", "--", *run_args(selftests))
    assert p.returncode == 0, p.stdout + p.stderr
    first = json.loads((d / "fleet.json").read_text())["submissions"][0]
    cluster.run("scancel", f"{first['array_job']}_3")
    wait_merged(cluster, d)
    assert status(cluster, d)["shards"][2]["state"] == "incomplete"
    err = one_line_error(gpuconform(cluster, "fleet", "resume", str(d), "--gres", "gpu:2"))
    assert "Requested node configuration is not available" in err and \
        err.endswith("(nothing submitted)"), err
    assert len(json.loads((d / "fleet.json").read_text())["submissions"]) == 1
    p = gpuconform(cluster, "fleet", "resume", str(d), "--gres", "gpu:1")
    assert p.returncode == 0 and "shards 3 of" in p.stdout, p.stdout + p.stderr
    array_cmd, merge_cmd = json.loads((d / "fleet.json").read_text())["submissions"][1]["commands"]
    assert "--gres=gpu:1" in array_cmd and not any("gres" in a for a in merge_cmd)
    merged = wait_merged(cluster, d)
    assert merged["run"]["merge"]["ok"] is True, (d / "merged" / "summary.txt").read_text()
    assert (d / "notes.txt").read_text() == "mine\n"


def one_line_error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout == ""
    return p.stderr.strip()


def test_unknown_partition(cluster: SlurmCluster, selftests: Selftests, fleet_dir: Path) -> None:
    before = our_jobs(cluster)
    p = gpuconform(cluster, "fleet", "submit", "--results", str(fleet_dir), "--shards", "3",
                   "--partition", "nope", "--", *run_args(selftests))
    err = one_line_error(p)
    assert "partition 'nope' does not exist" in err and cluster.partition in err
    assert our_jobs(cluster) == before and not fleet_dir.exists()


def test_results_dir_in_memory_of_this_machine(cluster: SlurmCluster, selftests: Selftests
                                               ) -> None:
    fstype, mnt = mount_fstype(Path("/dev/shm").resolve(),
                               Path("/proc/self/mountinfo").read_text(errors="replace"))
    if fstype not in LOCAL_FS:
        pytest.skip(f"/dev/shm is {fstype or 'not mounted'} here, not a tmpfs")
    d = Path("/dev/shm") / f"gpuconform-fleet-{uuid.uuid4().hex[:8]}"
    before = our_jobs(cluster)
    try:
        err = one_line_error(gpuconform(cluster, "fleet", "submit", "--results", str(d),
                                        "--shards", "3", "--", *run_args(selftests)))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert f"results directory {d} is on tmpfs ({mnt})" in err and "cannot see it" in err
    assert our_jobs(cluster) == before


def test_results_dir_the_nodes_do_not_see(cluster: SlurmCluster, selftests: Selftests,
                                          fleet_dir: Path) -> None:
    """The submitter sees DIR through a bind mount of its own mount namespace;
    slurmd, in the host's, sees an empty directory there: the probe job finds
    no token and nothing of the fleet is submitted."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m is not permitted here: no private mount namespace")
    private, mnt = fleet_dir / "private", fleet_dir / "mnt"
    private.mkdir(parents=True)
    mnt.mkdir()
    before = our_jobs(cluster)
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
                        str(private), str(mnt), str(LAUNCHER), "fleet", "submit", "--results",
                        str(mnt / "r"), "--shards", "3", "--partition", cluster.partition,
                        "--", *run_args(selftests)],
                       env=cluster.env(), cwd=REPO_ROOT, text=True, capture_output=True,
                       timeout=HANG_GUARD_S)
    err = one_line_error(p)
    assert re.search(rf"the results directory {mnt / 'r'} is not visible on node n\d "
                     r"\(probe job \d+ read no token\)", err), err
    new = [x for x in our_jobs(cluster) if x not in before]
    assert [x.split()[1] for x in new] == ["gpuconform-fleet-r-probe"], new
    assert list(private.iterdir()) == []  # what submit created there, removed


def readme_fleet_commands() -> list[str]:
    """The README's fleet command block: the indented block that starts with `dir=`."""
    text = (REPO_ROOT / "README.md").read_text()
    section = text[text.index("\n## Fleet"):]
    lines = section.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("    dir="))
    block = []
    for x in lines[start:]:
        if not x.startswith("    "):
            break
        block.append(x[4:])
    return block


def test_readme_fleet_commands_run_as_written(cluster: SlurmCluster) -> None:
    build = REPO_ROOT / "build"
    if not (build / SUITE_MANIFEST).is_file():
        pytest.skip(f"the README's commands use the default build {build}: not built")
    block = readme_fleet_commands()
    assert [x.split()[1:3] for x in block if x.startswith("./gpuconform")] == [
        ["fleet", "submit"], ["fleet", "status"], ["fleet", "resume"]]
    p = subprocess.run(["bash", "-euc", "\n".join(block)], env=cluster.env(), cwd=REPO_ROOT,
                       text=True, capture_output=True, timeout=HANG_GUARD_S)
    m = re.search(r"^  merged:  (\S+)/merged$", p.stdout, re.M)
    d = Path(m.group(1)) if m else None
    try:
        assert p.returncode == 0 and d is not None, p.stdout + p.stderr
        assert "nothing to resume" in p.stdout  # resume of a fleet still queued: nothing
        merged = wait_merged(cluster, d)
        assert merged["run"]["merge"]["ok"] is True, (d / "merged" / "summary.txt").read_text()
        listed = gpuconform(cluster, "list", *block[1].split(" -- ", 1)[1].split())
        assert sorted(merged["tests"]) == sorted(listed.stdout.split())
        assert [s["state"] for s in status(cluster, d)["shards"]] == ["done"] * 3
    finally:
        if d is not None and d.parent == REPO_ROOT / "results":
            shutil.rmtree(d, ignore_errors=True)

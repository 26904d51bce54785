"""The test Slurm cluster itself (slurm_cluster.py): three idle nodes, an array
spread one task per node, a lost node noticed and brought back, and a teardown
that leaves no process and no listening port behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gc_testutil import alive
from slurm_cluster import SlurmCluster, unavailable_reason

# Each task waits (up to this long) until all three have started: three tasks
# running at once on nodes of one CPU each are necessarily on three nodes.
BARRIER = """\
touch "{d}/started-$SLURM_ARRAY_TASK_ID"
i=0
while [ "$(ls "{d}" | grep -c '^started-')" -lt 3 ]; do
    i=$((i + 1)); [ $i -lt 2400 ] || exit 3; sleep 0.1
done
echo "$SLURMD_NODENAME $SLURM_ARRAY_TASK_ID"
"""


def _listening(ports: set[int]) -> set[int]:
    """Those of ports some socket of this host listens on (TCP, v4 or v6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            port, state = int(f[1].rsplit(":", 1)[1], 16), f[3]
            if state == "0A" and port in ports:  # TCP_LISTEN
                found.add(port)
    return found


def test_three_idle_nodes(slurm_cluster: SlurmCluster) -> None:
    slurm_cluster.reset()
    assert slurm_cluster.node_states() == {"n1": "idle", "n2": "idle", "n3": "idle"}
    pids = slurm_cluster.daemon_pids()
    assert set(pids) == {"munged", "slurmctld", "n1", "n2", "n3"}
    p = slurm_cluster.run("sinfo", "-h", "-o", "%P %D %t")
    assert p.stdout.split() == ["debug*", "3", "idle"]


def test_array_runs_one_task_per_node(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    slurm_cluster.reset()
    script = tmp_path / "task.sh"
    script.write_text("#!/bin/sh\n" + BARRIER.format(d=tmp_path))
    p = slurm_cluster.run("sbatch", "--wait", "--array=1-3", f"--output={tmp_path}/task-%a.out",
                          str(script), cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr
    outs = {int(f.name[5:-4]): f.read_text().split() for f in tmp_path.glob("task-*.out")}
    assert sorted(outs) == [1, 2, 3]
    assert all(o[1] == str(i) for i, o in outs.items()), outs
    assert sorted(o[0] for o in outs.values()) == ["n1", "n2", "n3"]


def test_lost_node_fails_its_job_and_comes_back(slurm_cluster: SlurmCluster,
                                                tmp_path: Path) -> None:
    c = slurm_cluster
    c.reset()
    try:
        p = c.run("sbatch", "--parsable", "--no-requeue", "--nodelist=n2",
                  f"--output={tmp_path}/lost.out", "--wrap", "echo started; sleep 600",
                  cwd=tmp_path)
        job = p.stdout.strip()
        c.wait_until(lambda: (tmp_path / "lost.out").exists() and bool(c.job_pids("n2")),
                300, "the job did not start on n2")
        doomed = c.job_pids("n2")
        c.kill_node("n2")
        assert c.slurmd_pid("n2") is None
        assert not [pid for pid in doomed if alive(pid)], doomed
        c.wait_states({"n2": ("down*", "down")}, timeout=c.slurmd_timeout * 6 + 60)
        c.wait_until(lambda: c.run("squeue", "-h", "--states=all", "-j", job, "-o", "%T",
                              check=False).stdout.strip() == "NODE_FAIL",
                120, "the lost node's job not NODE_FAIL")
        c.start_slurmd("n2")
        c.wait_states({"n2": "idle"}, timeout=180)
        sacct = c.run("sacct", "-c", "-n", "-P", "-j", job, "-o", "jobid,state,nodelist")
        assert sacct.stdout.split() == [f"{job}|NODE_FAIL|n2"]
    finally:
        c.reset()


def test_teardown_leaves_no_process_or_port(tmp_path: Path) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    # a second cluster beside the session's: its own ports, key, socket and name
    c = SlurmCluster()
    c.start()
    try:
        c.run("sbatch", f"--output={tmp_path}/long.out", "--wrap", "sleep 600", cwd=tmp_path)
        # slurmstepd, the batch shell and its sleep: all three, not only the first
        c.wait_until(lambda: len(c.job_pids()) >= 3, 300, "the job did not start")
        pids = set(c.all_pids())
        assert {*c.daemon_pids().values(), *c.job_pids()} < pids  # + slurmscriptd
        ports = {c.ctld_port, *c.node_ports.values()}
        root = c.root
        assert len(pids) >= 5 + 3  # daemons; slurmstepd, the batch shell, sleep
        assert _listening(ports) == ports
    finally:
        c.stop()
    left = [pid for pid in pids if alive(pid)]
    assert not left, left
    assert not c.all_pids()
    assert not _listening(ports)
    assert not root.exists()
    c.stop()  # idempotent



# Run in a mount namespace of its own whose /sys/fs/cgroup is unmounted: a cluster
# starts, runs a job on each node, and stops.
NO_CGROUP = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from slurm_cluster import SlurmCluster
mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
assert not [m for m in mounts if m.startswith("/sys/fs/cgroup")], mounts
with SlurmCluster() as c:
    p = c.run("sbatch", "--wait", "--array=1-3", f"--output={sys.argv[2]}/cg-%a.out",
              "--wrap", "echo ran on $SLURMD_NODENAME", cwd=sys.argv[2], timeout=600)
    print(sorted(f.read_text().strip() for f in Path(sys.argv[2]).glob("cg-*.out")))
"""


def test_starts_where_no_cgroup_is_mounted(tmp_path: Path) -> None:
    """A chroot or a container may have no /sys/fs/cgroup: slurmd 22.05 then
    exited "No filesystem mounted on /sys/fs/cgroup" unless told which cgroup
    plugin to load (slurm_cluster.py, "Cgroups")."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m is not permitted here: no mount namespace to unmount "
                    "/sys/fs/cgroup in")
    script = ('if grep -q " /sys/fs/cgroup" /proc/self/mountinfo; then '
              'umount -R /sys/fs/cgroup || exit 99; fi')
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        script + '; exec "$@"', "sh", sys.executable, "-c", NO_CGROUP,
                        str(Path(__file__).parent), str(tmp_path)],
                       capture_output=True, text=True, timeout=900)
    if p.returncode == 99:
        pytest.skip(f"cannot unmount /sys/fs/cgroup in a mount namespace: {p.stderr.strip()}")
    assert p.returncode == 0, p.stdout + p.stderr
    ran = eval(p.stdout.strip().splitlines()[-1])  # the three tasks' outputs, sorted
    assert len(ran) == 3 and set(ran) <= {"ran on n1", "ran on n2", "ran on n3"}, p.stdout


def test_without_slurm_the_reason_is_one_line(tmp_path: Path) -> None:
    """What the fixture skips with where Slurm and munge are not installed."""
    reason = unavailable_reason(search=str(tmp_path))
    assert reason is not None and "\n" not in reason
    assert reason.startswith("no Slurm/munge here (missing munged, slurmctld, slurmd, ")
    assert reason.endswith("bash scripts/deps.sh test installs slurm-wlm and munge")

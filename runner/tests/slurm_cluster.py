"""A real Slurm cluster of this one host, for the fleet tests (no mock).

`SlurmCluster` brings up, in a private temporary directory, munged (its own
generated key and socket), slurmctld and three slurmd (`slurmd -N n1..n3`),
with ports picked free, so it never meets a system munged/Slurm nor a parallel
run; and it tears them down by the pids it started. conftest.py's
session-scoped fixture `slurm_cluster` yields one, already up, or skips with a
one-line reason (slurm/munge binaries missing, not root).

What the cluster offers (the contract the fleet tests code against):

  cluster.env()          os.environ with SLURM_CONF=<root>/etc/slurm.conf and
                         no other SLURM_* variable (an outer Slurm job's must
                         not leak in). Pass it to every sbatch / squeue /
                         scontrol / scancel / sacct / sinfo, and to `gpuconform
                         fleet ...` so the commands it runs find the cluster.
                         Built on each call, so a test's monkeypatched
                         variables (marker_env's marker) are in it, and hence
                         in the jobs' environment (sbatch exports ALL), so
                         marker_env finds job processes left behind.
  cluster.run(*argv, check=True, timeout=120)
                         subprocess.run(argv, env=cluster.env(), text, captured).
  cluster.nodes          ("n1", "n2", "n3"); cluster.partition == "debug" (the
                         only partition, Default=YES, MaxTime=INFINITE).
                         Each node: CPUs=1, Gres=gpu:1 (a count only, no device
                         file: `--gpus-per-node=1` / `--gres=gpu:1` are
                         accepted and scheduled like on a GPU node, nothing
                         more), so one job (array task) runs per node at a time.
                         SelectType=select/cons_tres, CR_CPU.
  cluster.cluster_name   unique per instance (lowercase), also in jobs' env as
                         SLURM_CLUSTER_NAME.
  cluster.root           the private directory (short /tmp path: unix socket
                         paths must stay < 108 bytes); logs under root/log/.
  cluster.host           this host's name; every node's NodeHostname, NodeAddr
                         127.0.0.1. A directory is "visible to the nodes" iff
                         it is on this host's file system, so "results
                         directory not visible to the nodes" needs a check of
                         your own (e.g. a path that does not exist); the jobs
                         run as root with the submitter's cwd.
  cluster.node_states()  {"n1": "idle", "n2": "down*", ...} from
                         `sinfo -N -h -o "%N %t"` (compact state; "*" = not
                         responding).
  cluster.wait_states(want, timeout=120)
                         waits until node_states() matches want, a dict node ->
                         state or tuple of accepted states; raises
                         SlurmClusterError (one line + log tails) on timeout.
  cluster.wait_idle(timeout=120)
                         all three nodes "idle".
  cluster.daemon_pids()  {"munged": pid, "slurmctld": pid, "n1": pid, ...}
                         the live daemons this instance started.
  cluster.slurmd_pid(node)
  cluster.job_pids(node=None)
                         pids of the slurmstepd processes and job processes
                         this cluster runs (on one node, or all): a job process
                         is one whose environment has this cluster's
                         SLURM_CLUSTER_NAME (and SLURMD_NODENAME=node).
  cluster.kill_slurmd(node, sig=SIGKILL)
                         kills that node's slurmd only. Its running job steps
                         (slurmstepd) live on and report to slurmctld
                         themselves: a job there still finishes normally.
  cluster.kill_node(node)
                         "node lost": SIGKILL to the slurmd, then to its
                         slurmstepd and job processes (repeated until none is
                         left). slurmctld notices after SlurmdTimeout
                         (cluster.slurmd_timeout, default 20 s, plus up to a
                         ping interval): the node turns "down*" and its jobs
                         end NODE_FAIL. Slurm's default JobRequeue=1 is kept
                         (as in a real lab): a batch job (array task) on a
                         lost node is REQUEUED and runs again on another node,
                         unless it was submitted with `--no-requeue` (so fleet
                         submit should pass --no-requeue if a lost shard must
                         stay incomplete until `fleet resume`). To skip the
                         wait, `scontrol update NodeName=n2 State=DOWN
                         Reason=lost` marks it down at once.
  cluster.start_slurmd(node)
                         starts that node's slurmd again (new pid). With
                         ReturnToService=2 a down node returns to "idle" once
                         it registers: then `wait_states({node: "idle"})`.
  cluster.stop()         scancel of every job, SIGKILL to the job processes
                         and slurmstepd found by job_pids(), SIGTERM (then
                         SIGKILL after 15 s) to slurmd x3, slurmctld, munged;
                         waits for each pid; removes root. Idempotent; also
                         run at interpreter exit, and the daemons get
                         PR_SET_PDEATHSIG so a killed pytest leaves none.
  with SlurmCluster() as c: ...   start() on entry, stop() on exit.

Accounting: AccountingStorageType=accounting_storage/none (no slurmdbd), so a
plain `sacct` fails ("accounting storage is disabled"). Job completions are
logged by JobCompType=jobcomp/filetxt to cluster.jobcomp_log, so
`sacct --completion` (-c) works: e.g. `sacct -c -j JOBID -n -P -o
jobid,state,nodelist` (cluster.env() needed). squeue shows a finished job for
MinJobAge (300 s) with `--states=all`; `scontrol show job` likewise. A real
lab with slurmdbd answers plain sacct; without it, `sacct -c` or squeue. The
fleet's status is best read from squeue (live) + the shards' own journals,
with sacct as a bonus, so that it works on any site.

Timings (this host, 2 cores): see test_slurm_cluster.py / the commit message.
"""

from __future__ import annotations

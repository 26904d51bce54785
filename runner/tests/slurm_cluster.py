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
  cluster.run(*argv, check=True, timeout=120, cwd=None)
                         subprocess.run(argv, env=cluster.env(), text, output
                         captured); check: SlurmClusterError on non-zero exit.
  cluster.nodes          ("n1", "n2", "n3"); cluster.partition == "debug" (the
                         only partition, Default=YES, MaxTime=INFINITE).
                         Each node: CPUs=1 (cpus=) and Gres=gpu:1 (gres.conf File=
                         /dev/null: `--gpus-per-node=1` / `--gres=gpu:1` are
                         accepted and scheduled like on a GPU node, and such a
                         job gets CUDA_VISIBLE_DEVICES=0 in its environment,
                         nothing more), so one job (array task) runs per node
                         at a time. SelectType=select/cons_tres, CR_CPU.
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
  cluster.wait_until(ready, timeout, what)
                         polls ready() (every 0.2 s); on timeout, or a daemon
                         dying meanwhile, SlurmClusterError "test Slurm
                         cluster: WHAT after N s" + the daemons' log tails.
  cluster.reset(timeout=180)
                         back to the fixture's state: scancel of every job,
                         their processes gone, every killed slurmd started
                         again, nodes set DOWN/DRAIN by hand resumed, all
                         idle. The cluster is session-scoped: a test that
                         kills nodes or leaves jobs calls reset() (in a
                         finally), and a test that needs idle nodes may call
                         it first (fast when nothing is to be done).
  cluster.daemon_pids()  {"munged": pid, "slurmctld": pid, "n1": pid, ...}
                         the live daemons this instance started (a slurmd
                         killed by kill_slurmd/kill_node is left out).
  cluster.slurmd_pid(node)
                         the node's live slurmd, None once killed.
  cluster.all_pids()     every live process of this cluster: daemons, what
                         they fork (slurmctld's slurmscriptd, slurmstepd) and
                         the jobs' processes. Empty after stop().
  cluster.ctld_port, cluster.node_ports  the TCP ports chosen (free at start).
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
                         left). slurmctld notices after SlurmdTimeout plus
                         its ping period (cluster.slurmd_timeout, default 20:
                         about 40 s here; SlurmCluster(slurmd_timeout=10):
                         about 27 s): the node turns "down*" and its job ends
                         NODE_FAIL (squeue --states=all, sacct -c). Slurm's
                         default JobRequeue=1 is kept, as in a real lab: a
                         batch job (array task) on a lost node is REQUEUED,
                         PENDING with reason BeginTime (still pending 2 min
                         later here), then runs again, unless submitted with
                         `--no-requeue`; so fleet submit should pass
                         --no-requeue if a lost shard must stay incomplete
                         until `fleet resume`. To skip the wait, `scontrol
                         update NodeName=n2 State=DOWN Reason=lost` marks it
                         down at once.
  cluster.start_slurmd(node)
                         starts that node's slurmd again (new pid). With
                         ReturnToService=2 a down node returns to "idle" once
                         it registers: then `wait_states({node: "idle"})`.
  cluster.stop()         scancel of every job, SIGKILL to the job processes
                         and slurmstepd found by job_pids(), SIGTERM (then
                         SIGKILL after 15 s) to slurmd x3, slurmctld, munged,
                         waiting for each pid; SIGKILL to anything all_pids()
                         still finds; removes root. Idempotent; also run at
                         interpreter exit, and the daemons get
                         PR_SET_PDEATHSIG so a SIGKILLed pytest leaves no
                         daemon (a job step running then lives on until its
                         job's command ends, and root stays in /tmp).
                         Daemons are started with a clean environment (no
                         test marker), so marker_env never blames them.
  SlurmCluster(slurmd_timeout=20, extra_conf=(), cpus=1)
                         a cluster of one's own (extra_conf: more slurm.conf
                         lines; cpus: each node's CPUs, so that several jobs
                         that ask for no GPU may share a node as on a real
                         one); start() brings
                         it up (raises SlurmClusterError, having torn down what
                         it started); `with SlurmCluster() as c:` = start/stop.
                         Several can run at once (own ports, key, socket, name).

Cgroups: none used, and none needed. ProctrackType=proctrack/linuxproc,
TaskPlugin=task/none and JobAcctGatherType=jobacct_gather/none touch no
cgroup, but slurmd 22.05 still loads a cgroup plugin at start, and by default
("autodetect") it statfs()s /sys/fs/cgroup to choose v1 or v2: on a root where
nothing is mounted there (a chroot, some containers) slurmd exits "No
filesystem mounted on /sys/fs/cgroup" / "Unable to initialize cgroup plugin".
So cgroup.conf names the plugin (CgroupPlugin=cgroup/v1), which skips the
detection; the v1 plugin's init touches no file system, and with the plugins
above nothing calls it again. (22.05 has no CgroupPlugin=disabled: 23.02 and
later do.) The cluster thus starts with or without /sys/fs/cgroup.

Accounting: AccountingStorageType=accounting_storage/none (no slurmdbd), so a
plain `sacct` fails ("accounting storage is disabled"). Job completions are
logged by JobCompType=jobcomp/filetxt to cluster.jobcomp_log, so
`sacct --completion` (-c) works: e.g. `sacct -c -j JOBID -n -P -o
jobid,state,nodelist` (cluster.env() needed). squeue shows a finished job for
MinJobAge (300 s) with `--states=all`; `scontrol show job` likewise. A real
lab with slurmdbd answers plain sacct; without it, `sacct -c` or squeue. The
fleet's status is best read from squeue (live) + the shards' own journals,
with sacct as a bonus, so that it works on any site.

Timings (Debian 12, 2 cores, slurm-wlm 22.05.8): start() about 1 s to three
idle nodes; stop() about 0.1 s idle, 3.5 s with a job running; the first
array task starts about 3 s after sbatch (scheduler cycle).

Errors: SlurmClusterError, first line "test Slurm cluster: WHAT", then the
last lines of munged's, slurmctld's and each slurmd's log. The daemons' logs
are under root/log/ (slurmctld.log, slurmd-nX.log, munged.out, NAME.out)
while the cluster lives. munged logs "Unauthorized credential for client
UID=0" at start and once per job: harmless (everything works regardless).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, Mapping, Sequence, Union

from gc_testutil import alive

NODES = ("n1", "n2", "n3")
PARTITION = "debug"
_SBIN = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
_DAEMON_ENV_KEY = "GPUCONFORM_SLURM_TEST_DAEMON"  # <cluster>:<node>, in each daemon's env
_PR_SET_PDEATHSIG = 1


class SlurmClusterError(RuntimeError):
    """The cluster did not come up or do what was asked: one line, then log tails."""


def missing_binaries(search: str | None = None) -> list[str]:
    """The commands the cluster needs that this host lacks (empty: it can try); search:
    the directories looked in, default $PATH and the sbin directories."""
    path = search if search is not None else os.pathsep.join([os.environ.get("PATH", ""), *_SBIN])
    need = ("munged", "slurmctld", "slurmd", "slurmstepd", "sinfo", "sbatch", "squeue",
            "scontrol", "scancel")
    return [b for b in need if shutil.which(b, path=path) is None]


def unavailable_reason(search: str | None = None) -> str | None:
    """Why no cluster can be brought up here, in one line; None when it can be tried."""
    missing = missing_binaries(search)
    if missing:
        return ("no Slurm/munge here (missing " + ", ".join(missing) + "): "
                "bash scripts/deps.sh test installs slurm-wlm and munge")
    if os.geteuid() != 0:
        return "the test Slurm cluster needs root (slurmd runs as root and runs jobs as their user)"
    return None


def _which(name: str) -> str:
    found = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *_SBIN]))
    if found is None:
        raise SlurmClusterError(f"{name} not found")
    return found


def _free_ports(n: int) -> list[int]:
    """n distinct ports free right now on every address (held open together, so distinct)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _die_with_parent() -> None:
    """preexec_fn: the daemon gets SIGKILL when the process that started it dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _tail(path: Path, lines: int = 4) -> str:
    try:
        text = [x for x in path.read_text(errors="replace").splitlines()
                if "pmix" not in x.lower() and "MPI: Cannot create context" not in x]
    except OSError:
        return ""
    return "\n".join(f"  {path.name}: {x}" for x in text[-lines:])


StateWant = Mapping[str, Union[str, Sequence[str]]]


class SlurmCluster:
    """munged + slurmctld + slurmd n1..n3 of this host; see the module's docstring."""

    nodes = NODES
    partition = PARTITION

    def __init__(self, slurmd_timeout: int = 20, extra_conf: Sequence[str] = (),
                 cpus: int = 1) -> None:
        self.slurmd_timeout = slurmd_timeout
        self.extra_conf = tuple(extra_conf)
        self.cpus = cpus
        self.cluster_name = "gc" + uuid.uuid4().hex[:10]
        self.host = socket.gethostname().split(".")[0]
        self.root = Path("/nonexistent")
        self.conf = Path("/nonexistent")
        self.jobcomp_log = Path("/nonexistent")
        self.ctld_port = 0
        self.node_ports: dict[str, int] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._started = False

    # -- the commands' side ---------------------------------------------------

    def env(self) -> dict[str, str]:
        """os.environ now, SLURM_CONF pointing here, no other SLURM_* variable."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        env["PATH"] = os.pathsep.join([env.get("PATH", ""), *_SBIN])
        return env

    def run(self, *argv: str, check: bool = True, timeout: float = 120,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
        p = subprocess.run(list(argv), env=self.env(), capture_output=True, text=True,
                           timeout=timeout, cwd=cwd)
        if check and p.returncode != 0:
            raise SlurmClusterError(f"{' '.join(argv)}: exit {p.returncode}: "
                                    f"{(p.stderr or p.stdout).strip()}")
        return p

    def node_states(self) -> dict[str, str]:
        p = self.run("sinfo", "-N", "-h", "-o", "%N %t", check=False, timeout=60)
        states: dict[str, str] = {}
        for line in p.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def wait_states(self, want: StateWant, timeout: float = 120) -> dict[str, str]:
        accept = {n: (s,) if isinstance(s, str) else tuple(s) for n, s in want.items()}
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while True:
            self._check_daemons()
            states = self.node_states()
            if all(states.get(n) in ok for n, ok in accept.items()):
                return states
            if time.monotonic() > deadline:
                raise self._error(f"nodes not {dict(accept)} after {timeout:.0f} s: {states}")
            time.sleep(0.5)

    def wait_idle(self, timeout: float = 120) -> None:
        self.wait_states({n: "idle" for n in self.nodes}, timeout)

    # -- processes ----------------------------------------------------------------

    def daemon_pids(self) -> dict[str, int]:
        return {k: p.pid for k, p in self._procs.items() if p.poll() is None}

    def slurmd_pid(self, node: str) -> int | None:
        """The node's live slurmd; None after kill_slurmd/kill_node until start_slurmd."""
        p = self._procs.get(node)
        return p.pid if p is not None and p.poll() is None else None

    def job_pids(self, node: str | None = None) -> list[int]:
        """slurmstepd and job processes of this cluster (on node, or any)."""
        nodes = [node] if node else list(self.nodes)
        daemon = {f"{_DAEMON_ENV_KEY}={self.cluster_name}:{n}".encode() for n in nodes}
        on = {f"SLURMD_NODENAME={n}".encode() for n in nodes}
        mine = set(self.daemon_pids().values())
        return [pid for pid, env in self._processes()
                if pid not in mine and (env & daemon or (self._job_key in env and env & on))]

    def all_pids(self) -> list[int]:
        """Every live process of this cluster: the daemons, what they forked (slurmctld's
        slurmscriptd, slurmstepd) and the jobs' processes. Empty after stop()."""
        prefix = f"{_DAEMON_ENV_KEY}={self.cluster_name}:".encode()
        return [pid for pid, env in self._processes()
                if self._job_key in env or any(e.startswith(prefix) for e in env)]

    @property
    def _job_key(self) -> bytes:
        return f"SLURM_CLUSTER_NAME={self.cluster_name}".encode()

    @staticmethod
    def _processes() -> list[tuple[int, set[bytes]]]:
        """(pid, environment entries) of every live process but this one."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = set(f.read().split(b"\0"))
            except OSError:
                continue
            if alive(int(entry)):
                found.append((int(entry), env))
        return sorted(found)

    def _stepd_pids(self, node: str) -> list[int]:
        out = []
        for pid in self.job_pids(node):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "slurmstepd":
                        out.append(pid)
            except OSError:
                pass
        return out

    def reset(self, timeout: float = 180) -> None:
        """Back to the fixture's state: no job, every slurmd running, all nodes idle."""
        self.run("scancel", f"--partition={self.partition}", check=False, timeout=60)
        self.wait_until(lambda: not self.run("squeue", "-h", "-o", "%i", check=False, timeout=60)
                   .stdout.strip(), timeout, "jobs still queued after scancel")
        _kill_until_gone(self.job_pids)
        for node in self.nodes:
            if self.slurmd_pid(node) is None:
                self.start_slurmd(node)
        # a restarted slurmd's node answers again (ReturnToService=2 brings it back);
        # one set DOWN/DRAIN by hand while its slurmd lived needs RESUME
        self.wait_until(lambda: not any(s.endswith("*") for s in self.node_states().values()),
                   timeout, "nodes still not responding")
        for node, state in self.node_states().items():
            if state.startswith(("down", "drain", "drng", "fail")):
                self.run("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
        self.wait_idle(timeout)

    def kill_slurmd(self, node: str, sig: int = signal.SIGKILL) -> None:
        p = self._procs[node]
        if p.poll() is None:
            p.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM):
                p.wait(timeout=60)
        if p.poll() is not None:  # gone on purpose: no longer a daemon that must live
            del self._procs[node]

    def kill_node(self, node: str) -> None:
        """The node lost: its slurmd, then its slurmstepds, then its job processes."""
        self.kill_slurmd(node, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while True:
            # steps first: a step whose task died first would report the job's end
            pids = self._stepd_pids(node) or self.job_pids(node)
            if not pids:
                return
            for pid in pids:
                _kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise self._error(f"{node}: processes survive SIGKILL: {pids}")
            time.sleep(0.1)

    def start_slurmd(self, node: str) -> int:
        old = self._procs.get(node)
        if old is not None and old.poll() is None:
            raise SlurmClusterError(f"{node}: slurmd {old.pid} is still running")
        self._spawn(node, [_which("slurmd"), "-D", "-N", node, "-f", str(self.conf)])
        return self._procs[node].pid

    # -- bring-up and teardown -------------------------------------------------

    def __enter__(self) -> "SlurmCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 120) -> "SlurmCluster":
        """Up, all nodes idle; a port taken between picking it and a daemon binding it
        (another run's, or any outgoing connection's) gets one more try on fresh ports."""
        try:
            return self._start(timeout)
        except SlurmClusterError as e:
            if "already in use" not in str(e):
                raise
        return self._start(timeout)

    def _start(self, timeout: float) -> "SlurmCluster":
        reason = unavailable_reason()
        if reason:
            raise SlurmClusterError(reason)
        self._started = True
        atexit.register(self.stop)
        try:
            self._write_files()
            self._start_munge(timeout)
            self._spawn("slurmctld", [_which("slurmctld"), "-D", "-c", "-f", str(self.conf)])
            self.wait_until(lambda: " is UP" in self.run("scontrol", "ping", check=False,
                                                         timeout=30).stdout,
                            timeout, "slurmctld does not answer scontrol ping")
            for node in self.nodes:
                self.start_slurmd(node)
            self.wait_idle(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        atexit.unregister(self.stop)
        ctld = self._procs.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            try:
                self.run("scancel", f"--partition={self.partition}", check=False, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        _kill_until_gone(self.job_pids)
        for name in [*self.nodes, "slurmctld", "munged"]:
            p = self._procs.get(name)
            if p is None:
                continue
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=60)
        # a step spawned while the daemons went down; what they forked (slurmscriptd)
        _kill_until_gone(self.all_pids)
        self._procs.clear()
        if self.root.name.startswith("gcslurm-"):
            shutil.rmtree(self.root, ignore_errors=True)

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Polls ready() until true; on timeout (or a daemon dying) SlurmClusterError
        "test Slurm cluster: WHAT after N s" plus the daemons' log tails."""
        deadline = time.monotonic() + timeout
        while not ready():
            self._check_daemons()
            if time.monotonic() > deadline:
                raise self._error(f"{what} after {timeout:.0f} s")
            time.sleep(0.2)

    def _check_daemons(self) -> None:
        for name, p in self._procs.items():
            if p.poll() is not None:
                raise self._error(f"{name} (pid {p.pid}) exited with {p.returncode}")

    def _error(self, line: str) -> SlurmClusterError:
        logs = self.root / "log"
        files = [logs / "munged.log", logs / "slurmctld.log",
                 *(logs / f"slurmd-{n}.log" for n in self.nodes)]
        # a daemon that died before opening its log said why on stdout/stderr
        files = [f if _tail(f) else logs / (f.stem.replace("slurmd-", "") + ".out")
                 for f in files]
        tails = [t for t in (_tail(f) for f in files) if t]
        return SlurmClusterError(f"test Slurm cluster: {line}" +
                                 ("\n" + "\n".join(tails) if tails else ""))

    def _spawn(self, name: str, argv: list[str], user: str | None = None) -> None:
        env = {"PATH": os.pathsep.join(_SBIN), "LANG": "C", "HOME": "/",
               "SLURM_CONF": str(self.conf),
               _DAEMON_ENV_KEY: f"{self.cluster_name}:{name}"}
        out = open(self.root / "log" / f"{name}.out", "ab")
        try:
            self._procs[name] = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                cwd=self.root, start_new_session=True, preexec_fn=_die_with_parent,
                user=user)
        finally:
            out.close()

    def _start_munge(self, timeout: float) -> None:
        mdir = self.root / "munge"
        key = mdir / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        argv = [_which("munged"), "--foreground", f"--socket={self.munge_socket}",
                f"--key-file={key}", f"--pid-file={mdir / 'munged.pid'}",
                f"--seed-file={mdir / 'munged.seed'}", f"--log-file={self.root / 'log' / 'munged.log'}"]
        try:
            munge = pwd.getpwnam("munge")
        except KeyError:
            munge = None
        if munge is not None:
            for path in (mdir, key):
                os.chown(path, munge.pw_uid, munge.pw_gid)
            os.chown(self.root / "log" / "munged.log", munge.pw_uid, munge.pw_gid)
            self._spawn("munged", argv, user="munge")
        else:  # no munge user (not Debian's package): as root, which munged allows with --force
            self._spawn("munged", [*argv, "--force"])
        self.wait_until(lambda: Path(self.munge_socket).exists(), timeout, "munged's socket missing")

    @property
    def munge_socket(self) -> str:
        return str(self.root / "munge" / "munge.socket")

    def _write_files(self) -> None:
        base = os.environ.get("TMPDIR", "/tmp")
        if len(base) > 40 or not os.path.isdir(base):
            base = "/tmp"
        self.root = Path(tempfile.mkdtemp(prefix="gcslurm-", dir=base))
        os.chmod(self.root, 0o711)  # munged (the munge user) reaches its own directory
        for d in ("etc", "log", "state", "spool", "run", "tmp"):
            (self.root / d).mkdir()
        (self.root / "munge").mkdir()
        os.chmod(self.root / "munge", 0o711)  # clients reach the socket; the key stays 0400
        (self.root / "log" / "munged.log").touch(mode=0o600)
        self.conf = self.root / "etc" / "slurm.conf"
        self.jobcomp_log = self.root / "log" / "jobcomp.txt"
        ports = _free_ports(1 + len(self.nodes))
        self.ctld_port = ports[0]
        self.node_ports = dict(zip(self.nodes, ports[1:]))
        r = self.root
        lines = [
            f"ClusterName={self.cluster_name}",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={ports[1]}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool/%n",
            f"SlurmctldPidFile={r}/run/slurmctld.pid",
            f"SlurmdPidFile={r}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            f"PlugStackConfig={r}/etc/plugstack.conf",
            f"TmpFS={r}/tmp",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "GresTypes=gpu",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "SchedulerType=sched/backfill",
            "ReturnToService=2",
            f"SlurmdTimeout={self.slurmd_timeout}",
            "SlurmctldTimeout=20",
            "InactiveLimit=0",
            "KillWait=5",
            "MinJobAge=300",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={self.jobcomp_log}",
            *self.extra_conf,
        ]
        for node, port in self.node_ports.items():
            lines.append(f"NodeName={node} NodeHostname={self.host} NodeAddr=127.0.0.1 "
                         f"Port={port} CPUs={self.cpus} Gres=gpu:1 State=UNKNOWN")
        lines.append(f"PartitionName={self.partition} Nodes=n[1-{len(self.nodes)}] "
                     "Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        (r / "etc" / "plugstack.conf").write_text("")
        # no cgroup detection: see the module's docstring, "Cgroups"
        (r / "etc" / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\n")
        (r / "etc" / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName=n[1-{len(self.nodes)}] Name=gpu File=/dev/null\n")


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _kill_until_gone(find: Callable[[], list[int]]) -> None:
    """SIGKILL to what find() lists, again (a process may fork meanwhile) until it lists
    nothing, for 5 s at the most."""
    for _ in range(50):
        pids = find()
        if not pids:
            return
        for pid in pids:
            _kill(pid, signal.SIGKILL)
        time.sleep(0.1)

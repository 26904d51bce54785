"""The journal's lock on a real NFS mount of this host (nfs-kernel-server's
nfsd, exportfs, mount -t nfs localhost:DIR): a fleet's shards write their
journals on the shared file system, and `fleet status`, `fleet resume` and
the merge job tell a live run from a dead one by that lock.

On NFS an exclusive flock() needs the file open for writing (flock(2), NOTES,
"NFS details"); the check opened it read-only, got EBADF, and took it for
"locked". test_journal.py checks the same rule without NFS; this is the real
thing where the kernel can serve NFS, and skips, naming why, where it cannot
(a kernel without nfsd, a container that may not mount, no nfs-kernel-server).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from gc_testutil import journal_held
from gpuconform.core.journal import is_locked

_SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
GUARD_S = 120  # a hang guard for each step


def _filesystems() -> set[str]:
    try:
        return {line.split()[-1] for line in Path("/proc/filesystems").read_text().splitlines()
                if line.split()}
    except OSError:
        return set()


def _which(name: str) -> str | None:
    return shutil.which(name, path=_SBIN)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=GUARD_S,
                          stdin=subprocess.DEVNULL)


def _why(p: subprocess.CompletedProcess[str]) -> str:
    lines = [x.strip() for x in (p.stderr + p.stdout).splitlines() if x.strip()]
    return lines[0] if lines else f"exit status {p.returncode}"


def _mounted(path: str) -> bool:
    try:
        return any(line.split()[4] == path
                   for line in Path("/proc/self/mountinfo").read_text().splitlines())
    except (OSError, IndexError):
        return False


@pytest.fixture
def nfs_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory of this host exported by nfsd and mounted back over NFS v4."""
    if os.geteuid() != 0:
        pytest.skip("an NFS export and mount need root")
    missing = [c for c in ("exportfs", "rpc.nfsd", "rpc.mountd", "mount.nfs") if not _which(c)]
    if missing:
        pytest.skip(f"no NFS server/client here (missing {', '.join(missing)}): "
                    "bash scripts/deps.sh test installs nfs-kernel-server")
    if "nfsd" not in _filesystems() and _which("modprobe"):
        _run("modprobe", "nfsd")
    fs = _filesystems()
    if "nfsd" not in fs or not {"nfs", "nfs4"} & fs:
        pytest.skip("this kernel cannot serve NFS to itself: /proc/filesystems lists "
                    + ("no nfsd" if "nfsd" not in fs else "no nfs client")
                    + " (not built in, and no module loaded)")
    undo: list[list[str]] = []
    started: list[subprocess.Popen[str]] = []
    export, mnt = tmp_path / "export", tmp_path / "mnt"
    export.mkdir()
    mnt.mkdir()
    try:
        if not _mounted("/proc/fs/nfsd"):
            p = _run("mount", "-t", "nfsd", "nfsd", "/proc/fs/nfsd")
            if p.returncode != 0:
                pytest.skip(f"cannot mount the nfsd file system: {_why(p)}")
            undo.append(["umount", "/proc/fs/nfsd"])
        if _which("rpcbind") and _run("rpcinfo", "-p").returncode != 0:
            started.append(subprocess.Popen([str(_which("rpcbind")), "-f"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        threads = Path("/proc/fs/nfsd/threads")
        if not threads.exists() or threads.read_text().strip() in ("", "0"):
            p = _run("rpc.nfsd", "4")
            if p.returncode != 0:
                pytest.skip(f"nfsd does not start here: rpc.nfsd: {_why(p)}")
            undo.append(["rpc.nfsd", "0"])
        started.append(subprocess.Popen([str(_which("rpc.mountd")), "-F"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        fsid = str(uuid.uuid4())
        p = _run("exportfs", "-o", f"rw,sync,no_root_squash,no_subtree_check,fsid={fsid}",
                 f"localhost:{export}")
        if p.returncode != 0:
            pytest.skip(f"cannot export {export}: exportfs: {_why(p)}")
        undo.append(["exportfs", "-u", f"localhost:{export}"])
        p = _run("mount", "-t", "nfs", "-o", "vers=4.2,soft,timeo=50,retrans=2",
                 f"localhost:{export}", str(mnt))
        if p.returncode != 0:
            pytest.skip(f"cannot mount localhost:{export} over NFS: {_why(p)}")
        undo.append(["umount", "-l", str(mnt)])
        yield mnt
    finally:
        for argv in reversed(undo):
            _run(*argv)
        for proc in started:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_the_lock_tells_a_live_run_from_a_dead_one_over_nfs(nfs_dir: Path) -> None:
    path = nfs_dir / "journal.jsonl"
    with journal_held(path):
        assert is_locked(path)
        # the rule the check obeys: read-only, an exclusive flock() is refused (EBADF)
        # where the NFS client emulates it, or conflicts (EWOULDBLOCK) where it is local
        fd = os.open(path, os.O_RDONLY)
        try:
            with pytest.raises(OSError) as ei:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            assert ei.value.errno in (errno.EBADF, errno.EWOULDBLOCK, errno.EAGAIN)
        finally:
            os.close(fd)
    assert not is_locked(path)  # dead: resume may take it over

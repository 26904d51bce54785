"""Fixtures of the runner's own tests.

Unit tests need nothing. Integration tests run the REAL selftest binaries of a
build directory: $GPUCONFORM_BUILD_DIR, default `build` at the repository
root; without its gpuconform-selftest.txt they skip, saying so.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
# ./gpuconform, started by the tests, runs under the interpreter the tests run under.
os.environ["GPUCONFORM_PYTHON"] = sys.executable

from gc_testutil import MARKER_ENV, Selftests, build_dir, kill_marked  # noqa: E402
from gpuconform.core.manifest import SELFTEST_MANIFEST, read_manifest  # noqa: E402
from slurm_cluster import SlurmCluster, SlurmClusterError, unavailable_reason  # noqa: E402


@pytest.fixture(scope="session")
def selftests() -> Selftests:
    build = build_dir()
    manifest = build / SELFTEST_MANIFEST
    if not manifest.is_file():
        pytest.skip(
            f"no selftest manifest {manifest}: build the selftest binaries "
            "(meson setup DIR && ninja -C DIR) and set GPUCONFORM_BUILD_DIR=DIR"
        )
    m = read_manifest(manifest)
    return Selftests(build, manifest, {e.name: e.path for e in m.entries})


@pytest.fixture
def marker_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[bytes]:
    """Marks every process this test starts; fails the test if one outlives it."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(MARKER_ENV, value)
    needle = f"{MARKER_ENV}={value}".encode()
    yield needle
    left = kill_marked(needle)
    assert not left, f"processes left behind: {left}"


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A real Slurm cluster of this host (munged, slurmctld, slurmd n1..n3), up and idle;
    torn down by its pids at the session's end. See slurm_cluster.py for what it offers.
    Skips, in one line, only where Slurm/munge are not installed (or not root)."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster()
    try:
        cluster.start()  # installed but not coming up is an error, not a skip...
    except SlurmClusterError as e:
        # ... but for the machine's shape: the cluster needs no cgroup (slurm_cluster.py,
        # "Cgroups"); a Slurm that insists on one where none is mounted is skipped
        line = next((x.strip() for x in str(e).splitlines() if "cgroup" in x), None)
        if line is None:
            raise
        pytest.skip(f"slurmd cannot start on this root, which has no usable cgroup file "
                    f"system: {line}")
    try:
        yield cluster
    finally:
        cluster.stop()

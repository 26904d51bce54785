# SPDX-License-Identifier: MIT
"""host_io must notice when the I/O contract it checks is broken.

break_io.so (tests/mutation/break_io.c) is preloaded into host_io with
GPUCONFORM_BREAK naming one break; the subtests that check that contract must
report "Subtest X: FAIL" and host_io must exit 98 (igt_core's IGT_EXIT_FAILURE).
Without a break (shim absent, or loaded and idle) the same subtests pass.

Build directory: $GPUCONFORM_BUILD_DIR, else build/ under the repository root.
Scratch files go to a fresh directory under $GPUCONFORM_SCRATCH_DIR (else
/var/tmp, host_io's own default) that must be empty again after every run.
"""
import os
import re
import shutil
import subprocess
import tempfile

import pytest
from mutation_testutil import (
    BUILD,
    EXIT_SKIP,
    EXIT_SUCCESS,
    expect_caught,
    need_built,
    result_line,
    run_subtest,
)
from mutation_testutil import expect_success as expect_passed

HOST_IO = BUILD / "tests" / "host" / "host_io"
SHIM = BUILD / "tests" / "mutation" / "break_io.so"
TIMEOUT_S = 300

# (break, subtest, text the failing check prints): the text shows that the
# check meant for this break is the one that caught it.
BREAKS = [
    ("pread-flip", "buffered-read", "data read: "),
    ("pread-flip", "direct-read", "data read: "),
    ("pread-overrun", "buffered-read", "guard after the buffer: "),
    ("pread-overrun", "direct-read", "guard after the buffer: "),
    ("pwrite-drop-last", "buffered-write", "file size "),
    ("dio-accept-misaligned", "direct-read", "want -EINVAL"),
    ("dio-accept-misaligned", "direct-write", "want -EINVAL"),
]
SUBTESTS = sorted({b[1] for b in BREAKS})


@pytest.fixture
def scratch():
    parent = os.environ.get("GPUCONFORM_SCRATCH_DIR") or "/var/tmp"
    d = tempfile.mkdtemp(prefix="gc-io-breaks-", dir=parent)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run_host_io(subtest, scratch, brk=None, preload=False):
    p = run_subtest(HOST_IO, subtest, TIMEOUT_S, SHIM, brk=brk, preload=preload,
                    env_extra={"GPUCONFORM_SCRATCH_DIR": scratch})
    left = os.listdir(scratch)
    assert left == [], f"host_io left scratch files behind: {left}\n{p.stdout}"
    return p


def skip_reason(out):
    m = re.search(r"^Skip reason: (.*)$", out, re.M)
    return m.group(1) if m else "(no reason printed)"


def expect_success(p, subtest):
    if result_line(p.stdout, subtest) == "SKIP":
        pytest.skip(f"host_io {subtest} skipped here: {skip_reason(p.stdout)}")
    expect_passed(p, subtest)


@pytest.mark.parametrize("subtest", SUBTESTS)
def test_intact(subtest, scratch):
    need_built(HOST_IO)
    expect_success(run_host_io(subtest, scratch), subtest)


@pytest.mark.parametrize("subtest", SUBTESTS)
def test_shim_idle(subtest, scratch):
    """Loaded with no break, the shim changes nothing."""
    need_built(HOST_IO, SHIM)
    expect_success(run_host_io(subtest, scratch, preload=True), subtest)


@pytest.mark.parametrize("brk,subtest,evidence", BREAKS,
                         ids=[f"{b}-{s}" for b, s, _ in BREAKS])
def test_break_is_caught(brk, subtest, evidence, scratch):
    need_built(HOST_IO, SHIM)
    expect_success(run_host_io(subtest, scratch), subtest)
    p = run_host_io(subtest, scratch, brk=brk, preload=True)
    expect_caught(p, subtest, evidence)


def test_fixture_cleans_up(scratch):
    """All subtests, then nothing of host_io's is left in the scratch directory."""
    need_built(HOST_IO)
    p = run_host_io("*", scratch)
    assert p.returncode in (EXIT_SUCCESS, EXIT_SKIP), p.stdout
    assert "Subtest scratch-cleanup: SUCCESS" in p.stdout, p.stdout


def test_killed_leaves_nothing(scratch):
    """SIGKILL (the runner's timeout) mid-subtest still leaves no scratch file."""
    need_built(HOST_IO)
    env = dict(os.environ, GPUCONFORM_SCRATCH_DIR=scratch)
    env.pop("LD_PRELOAD", None)
    p = subprocess.Popen([str(HOST_IO), "--run-subtest", "throughput"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in p.stdout:
            # Printed by the fixture's setup once it is done: the files exist
            # (open, already unlinked) and the subtest is about to run.
            if line.startswith("O_DIRECT "):
                break
        p.kill()
    finally:
        p.wait(timeout=TIMEOUT_S)
        p.stdout.close()
    assert p.returncode == -9, "host_io ended before it could be killed"
    assert os.listdir(scratch) == []

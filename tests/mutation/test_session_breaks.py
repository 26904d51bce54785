# SPDX-License-Identifier: MIT
"""nvml_session and cuda_context must notice when the session contract breaks.

break_session.so (tests/mutation/break_session.c) is preloaded with
GPUCONFORM_BREAK naming one break of NVML or of the CUDA primary context; the
subtest meant to catch it must report "Subtest X: FAIL", print the evidence of
the check that caught it, and the binary must exit 98. Without a break the
same subtests pass. These need a real driver: without one (CI) the binaries
skip, and so do these tests, naming the binary's own reason.

Rounds are cut to the quick level's 20 a thread, or fewer where its 3 s budget ends
concurrent-sessions first (GPUCONFORM_LEVEL=quick, lib/soak.h): every break that needs a
count of calls fires within the one round each of its 256 threads must run (the 200th init,
every 100th name or temperature), however few rounds the node fits in the budget.
Build directory: $GPUCONFORM_BUILD_DIR, else build/ under the repository root.
"""
import re

import pytest
from mutation_testutil import BUILD, expect_caught, need_built, result_line, run_subtest
from mutation_testutil import expect_success as expect_passed

NVML = BUILD / "tests" / "nvml" / "nvml_session"
CUDA = BUILD / "tests" / "cuda" / "cuda_context"
SHIM = BUILD / "tests" / "mutation" / "break_session.so"
TIMEOUT_S = 300
ENV = {"GPUCONFORM_LEVEL": "quick"}
CMP_FDS = "Failed assertion: devfds() == "

# (break, binary, subtest, text the failing check prints).
BREAKS = [
    ("nvml-shutdown-unrefcounted", NVML, "refcount", "shutdown 1 of 2: nvmlDeviceGetCount_v2"),
    ("nvml-extra-shutdown-ok", NVML, "refcount", "one shutdown too many"),
    ("nvml-extra-shutdown-ok", NVML, "unpaired-init", "the count did not end at zero"),
    ("nvml-shutdown-keeps-node", NVML, "refcount", CMP_FDS),
    ("nvml-shutdown-keeps-node", NVML, "unpaired-init", CMP_FDS),
    ("nvml-shutdown-keeps-node", NVML, "init-flags", CMP_FDS),
    ("nvml-name-flips", NVML, "concurrent-sessions", "the persistent session"),
    ("nvml-temperature-fails", NVML, "concurrent-sessions", "nvmlDeviceGetTemperature: "),
    ("nvml-init-hangs", NVML, "concurrent-sessions",
     "deadlock: 1 of 256 threads still inside NVML"),
    ("nvml-stale-handle-other", NVML, "handles-across-cycles", "named another device"),
    ("nvml-unknown-uuid-found", NVML, "unknown-uuid", "unknown UUID: NVML_SUCCESS"),
    ("cuda-release-twice", CUDA, "refcount", "release 1 of 2 reset the context"),
    ("cuda-release-leaks", CUDA, "refcount", "still active after the last release"),
    ("cuda-release-leaks", CUDA, "stale-pointer", "the only release left the context active"),
    ("cuda-release-leaks-hidden", CUDA, "refcount", "bytes used after the last release"),
    ("cuda-release-leaks-fd", CUDA, "refcount", CMP_FDS),
    ("cuda-extra-release-ok", CUDA, "refcount", "expected CUDA_ERROR_INVALID_CONTEXT"),
    ("cuda-retain-new-handle", CUDA, "refcount", "retain 2 of 2 gave context"),
    ("cuda-stale-pointer-valid", CUDA, "stale-pointer", "expected CUDA_ERROR_INVALID_VALUE"),
    ("cuda-copy-flips", CUDA, "concurrent-retain", "words wrong after the kernel"),
    ("cuda-retain-hangs", CUDA, "concurrent-retain",
     "deadlock: 1 of 256 threads still inside the driver"),
    ("cuda-copy-flips", CUDA, "concurrent-reset", "words wrong after the kernel"),
    ("cuda-retain-hangs", CUDA, "concurrent-reset",
     "deadlock: 1 of 256 threads still inside the driver"),
]
SUBTESTS = sorted({(b[1].name, b[2]) for b in BREAKS})
BINARIES = {NVML.name: NVML, CUDA.name: CUDA}


def run(binary, subtest, brk=None, preload=False):
    return run_subtest(binary, subtest, TIMEOUT_S, SHIM, brk=brk, preload=preload,
                       env_extra=ENV)


def expect_success(p, binary, subtest):
    if result_line(p.stdout, subtest) == "SKIP":
        m = re.search(r"^Skip reason: (.*)$", p.stdout, re.M)
        pytest.skip(f"{binary.name} {subtest} skipped here: "
                    f"{m.group(1) if m else '(no reason printed)'}")
    expect_passed(p, subtest)


@pytest.mark.parametrize("name,subtest", SUBTESTS, ids=[f"{b}-{s}" for b, s in SUBTESTS])
def test_shim_idle(name, subtest):
    """Loaded with no break, the shim changes nothing."""
    binary = BINARIES[name]
    need_built(binary, SHIM)
    expect_success(run(binary, subtest, preload=True), binary, subtest)


@pytest.mark.parametrize("brk,binary,subtest,evidence", BREAKS,
                         ids=[f"{b}-{s}" for b, _, s, _ in BREAKS])
def test_break_is_caught(brk, binary, subtest, evidence):
    need_built(binary, SHIM)
    expect_success(run(binary, subtest), binary, subtest)
    p = run(binary, subtest, brk=brk, preload=True)
    assert f"break_session: applied {brk}" in p.stdout, p.stdout
    expect_caught(p, subtest, evidence)

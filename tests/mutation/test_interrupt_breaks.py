# SPDX-License-Identifier: MIT
"""host_interrupt must notice when the interrupt contract it checks is broken.

break_interrupt.so (tests/mutation/break_interrupt.c) is preloaded into
host_interrupt with GPUCONFORM_BREAK naming one break; the subtest that checks
that part of the contract must report "Subtest X: FAIL" and host_interrupt
must exit 98 (igt_core's IGT_EXIT_FAILURE), with the shim's "applied" line to
show the break really took effect. Without a break (shim absent, or loaded
and idle) the same subtests pass.

Build directory: $GPUCONFORM_BUILD_DIR, else build/ under the repository root.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GPUCONFORM_BUILD_DIR", REPO / "build"))
HOST_INTERRUPT = BUILD / "tests" / "host" / "host_interrupt"
SHIM = BUILD / "tests" / "mutation" / "break_interrupt.so"
EXIT_SUCCESS, EXIT_FAILURE = 0, 98
TIMEOUT_S = 120

# (break, subtest, text the failing check prints): the text shows that the
# check meant for this break is the one that caught it.
BREAKS = [
    ("read-eintr-scribbles", "pipe-read-eintr", "the interrupted read wrote into its buffer"),
    ("read-eintr-scribbles", "sigiter-read", "interrupted reads wrote into their buffer"),
    ("read-eintr-consumes", "pipe-read-eintr", "the interrupted read took some"),
    ("write-overreport", "pipe-write-partial", "the reader saw a byte the writer did not"),
    ("nanosleep-rem-zero", "nanosleep-remaining", "want 0 < rem <= req"),
    ("nanosleep-rem-short", "nanosleep-remaining", "ns slept (req - rem) but only"),
    ("futex-wait-clobbers", "futex-wait", "after the interrupted wait, want"),
    ("futex-wake-phantom", "futex-wait", "the interrupted waiter is still queued"),
]
SUBTESTS = sorted({b[1] for b in BREAKS} | {"storm-accounting", "syscall-latency"})


def need_built(*paths):
    for p in paths:
        if not p.exists():
            pytest.skip(f"{p} not built (build dir {BUILD}: set GPUCONFORM_BUILD_DIR "
                        f"or run ninja -C {BUILD})")


def run_host_interrupt(subtest, brk=None, preload=False):
    env = dict(os.environ)
    env.pop("GPUCONFORM_BREAK", None)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = str(SHIM)
    if brk:
        env["GPUCONFORM_BREAK"] = brk
    return subprocess.run([str(HOST_INTERRUPT), "--run-subtest", subtest], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT_S)


def result_line(out, subtest):
    m = re.search(rf"^Subtest {re.escape(subtest)}: (\w+) \(\d+\.\d+s\)$", out, re.M)
    return m.group(1) if m else None


def expect_success(p, subtest):
    assert result_line(p.stdout, subtest) == "SUCCESS", p.stdout
    assert p.returncode == EXIT_SUCCESS, p.stdout


@pytest.mark.parametrize("subtest", SUBTESTS)
def test_intact(subtest):
    need_built(HOST_INTERRUPT)
    expect_success(run_host_interrupt(subtest), subtest)


@pytest.mark.parametrize("subtest", SUBTESTS)
def test_shim_idle(subtest):
    """Loaded with no break, the shim changes nothing."""
    need_built(HOST_INTERRUPT, SHIM)
    p = run_host_interrupt(subtest, preload=True)
    expect_success(p, subtest)
    assert "break_interrupt:" not in p.stdout, p.stdout


@pytest.mark.parametrize("brk,subtest,evidence", BREAKS,
                         ids=[f"{b}-{s}" for b, s, _ in BREAKS])
def test_break_is_caught(brk, subtest, evidence):
    need_built(HOST_INTERRUPT, SHIM)
    expect_success(run_host_interrupt(subtest), subtest)
    p = run_host_interrupt(subtest, brk=brk, preload=True)
    assert f"break_interrupt: applied {brk}" in p.stdout, \
        f"the break never took effect:\n{p.stdout}"
    assert re.search(rf"^Subtest {re.escape(subtest)}: FAIL \(\d+\.\d+s\)$", p.stdout,
                     re.M), p.stdout
    assert p.returncode == EXIT_FAILURE, p.stdout
    assert evidence in p.stdout, p.stdout


def test_unknown_break_refused():
    """A misspelt break must not pass silently as "no break"."""
    need_built(HOST_INTERRUPT, SHIM)
    p = run_host_interrupt("storm-accounting", brk="no-such-break", preload=True)
    assert p.returncode == 2, p.stdout
    assert "unknown GPUCONFORM_BREAK=no-such-break" in p.stdout, p.stdout

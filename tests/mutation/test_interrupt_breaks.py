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
import pytest
from mutation_testutil import BUILD, expect_caught, expect_success, need_built, run_subtest

HOST_INTERRUPT = BUILD / "tests" / "host" / "host_interrupt"
SHIM = BUILD / "tests" / "mutation" / "break_interrupt.so"
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
    ("nanosleep-rem-zero", "nanosleep-sa-restart", "want 0 < rem <= req"),
    ("sa-restart-ignored", "pipe-read-sa-restart", "although its handler has SA_RESTART"),
]
SUBTESTS = sorted({b[1] for b in BREAKS} | {"storm-accounting", "syscall-latency"})


def run_host_interrupt(subtest, brk=None, preload=False):
    return run_subtest(HOST_INTERRUPT, subtest, TIMEOUT_S, SHIM, brk=brk, preload=preload)


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
    expect_caught(p, subtest, evidence)


def test_unknown_break_refused():
    """A misspelt break must not pass silently as "no break"."""
    need_built(HOST_INTERRUPT, SHIM)
    p = run_host_interrupt("storm-accounting", brk="no-such-break", preload=True)
    assert p.returncode == 2, p.stdout
    assert "unknown GPUCONFORM_BREAK=no-such-break" in p.stdout, p.stdout

# SPDX-License-Identifier: MIT
"""What the mutation tests (test_*_breaks.py) share.

Each runs one host binary's subtest with a break shim (break_*.so) preloaded
and GPUCONFORM_BREAK naming one break, and checks that the subtest meant to
catch it fails. Named so as not to clash with runner/tests' gc_testutil.

Build directory: $GPUCONFORM_BUILD_DIR, else build/ under the repository root.
"""
import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "runner") not in sys.path:
    sys.path.insert(0, str(REPO / "runner"))
from gpuconform.core.devices import find_gpus, node_env, pin_env  # noqa: E402
from gpuconform.core.placement import list_placement  # noqa: E402

BUILD = Path(os.environ.get("GPUCONFORM_BUILD_DIR", REPO / "build"))
# igt_core's exit codes.
EXIT_SUCCESS, EXIT_SKIP, EXIT_FAILURE = 0, 77, 98


def need_built(*paths):
    for p in paths:
        if not p.exists():
            pytest.skip(f"{p} not built (build dir {BUILD}: set GPUCONFORM_BUILD_DIR "
                        f"or run ninja -C {BUILD})")


@functools.lru_cache(maxsize=None)
def _placements(binary):
    """binary's {subtest: placement}, asked once (BINARY --list-placement)."""
    return list_placement(binary)[0]


@functools.lru_cache(maxsize=None)
def _gpus():
    return tuple(find_gpus())


def placed_env(binary, subtest):
    """The environment the runner gives this subtest: a one-GPU placement
    (gpu, gpu-alone) pinned to the node's first GPU, else every GPU in view.
    A break counted across calls (the second release, the 200th init) must
    land where it lands in a run: with four GPUs in view a per-device fixture
    makes those calls before the check meant to catch it."""
    gpus = _gpus()
    where = _placements(binary).get(subtest)
    if gpus and where in ("gpu", "gpu-alone"):
        return pin_env(gpus[0])
    return node_env(gpus, gpus)


def run_subtest(binary, subtest, timeout, shim, brk=None, preload=False, env_extra=None):
    """binary --run-subtest subtest, placed as the runner places it
    (placed_env); the shim preloaded only when preload is true.

    A GPUCONFORM_BREAK or LD_PRELOAD of the caller's environment never leaks in.
    """
    env = dict(os.environ, **placed_env(binary, subtest), **(env_extra or {}))
    env.pop("GPUCONFORM_BREAK", None)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = str(shim)
    if brk:
        env["GPUCONFORM_BREAK"] = brk
    return subprocess.run([str(binary), "--run-subtest", subtest], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def result_line(out, subtest):
    m = re.search(rf"^Subtest {re.escape(subtest)}: (\w+) \(\d+\.\d+s\)$", out, re.M)
    return m.group(1) if m else None


def expect_success(p, subtest):
    assert result_line(p.stdout, subtest) == "SUCCESS", p.stdout
    assert p.returncode == EXIT_SUCCESS, p.stdout


def expect_caught(p, subtest, evidence):
    """The subtest failed, the binary exited EXIT_FAILURE, and the check that
    failed printed evidence (the check meant for the break caught it)."""
    assert re.search(rf"^Subtest {re.escape(subtest)}: FAIL \(\d+\.\d+s\)$", p.stdout,
                     re.M), p.stdout
    assert p.returncode == EXIT_FAILURE, p.stdout
    assert evidence in p.stdout, p.stdout

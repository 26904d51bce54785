"""`gpuconform run --scratch-dir DIR`: GPUCONFORM_SCRATCH_DIR in the tests'
environment (and kept for resume), or a one-line error naming DIR, exit 2,
before anything runs. Over a fake build directory whose one "binary" is a
shell script speaking the line protocol, so no build is needed."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gc_testutil import CliRun, run_launcher
from gpuconform.core.options import InputError, check_scratch_dir

SCRIPT = """#!/bin/sh
case "$1" in
--list-subtests) echo print-scratch ;;
--run-subtest)
	echo "Starting subtest: $2"
	echo "env GPUCONFORM_SCRATCH_DIR=${GPUCONFORM_SCRATCH_DIR-(unset)}"
	echo "Subtest $2: SUCCESS (0.000s)" ;;
*) exit 64 ;;
esac
"""


@pytest.fixture
def fake_build(tmp_path: Path) -> Path:
    build = tmp_path / "build"
    build.mkdir()
    binary = build / "fake_scratch"
    binary.write_text(SCRIPT)
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    (build / "gpuconform-selftest.txt").write_text("fake_scratch\n")
    return build


def _run(build: Path, results: Path, *args: str, scratch_env: str | None = None) -> CliRun:
    env = dict(os.environ)
    env.pop("GPUCONFORM_SCRATCH_DIR", None)
    if scratch_env is not None:
        env["GPUCONFORM_SCRATCH_DIR"] = scratch_env
    argv = ["run", "--build", str(build), "--selftest", "--results", str(results),
            "--kmsg", "off", "--taint-file", "off", "--no-baseline", "--no-report", *args]
    return run_launcher(argv, env, results)


def _out(r: CliRun) -> str:
    out: str = r.tests()["fake_scratch@print-scratch"]["out"]
    return out


def test_scratch_dir_reaches_the_tests_and_the_run_options(fake_build: Path,
                                                          tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    r = _run(fake_build, tmp_path / "r", "--scratch-dir", str(scratch),
             scratch_env=str(tmp_path / "from-env"))
    assert r.returncode == 0, r.stderr
    assert f"env GPUCONFORM_SCRATCH_DIR={scratch}\n" in _out(r)  # the option beats the env
    assert r.json()["run"]["options"]["scratch_dir"] == str(scratch)
    run_json = json.loads((tmp_path / "r" / "run.json").read_text())
    assert run_json["options"]["scratch_dir"] == str(scratch)  # resume exports it again
    assert list(scratch.iterdir()) == []  # the writability probe left nothing


def test_without_the_option_the_environment_is_left_alone(fake_build: Path,
                                                         tmp_path: Path) -> None:
    r = _run(fake_build, tmp_path / "r")
    assert r.returncode == 0, r.stderr
    assert "env GPUCONFORM_SCRATCH_DIR=(unset)\n" in _out(r)
    assert r.json()["run"]["options"]["scratch_dir"] is None
    r = _run(fake_build, tmp_path / "r2", scratch_env="/somewhere")
    assert "env GPUCONFORM_SCRATCH_DIR=/somewhere\n" in _out(r)


@pytest.mark.parametrize("kind", ["missing", "file", "mode-0500", "sysfs"])
def test_bad_scratch_dir_is_a_one_line_error(fake_build: Path, tmp_path: Path, kind: str) -> None:
    bad = tmp_path / "bad"
    if kind == "file":
        bad.write_text("")
        want = f"gpuconform: --scratch-dir {bad}: not a directory"
    elif kind == "missing":
        want = f"gpuconform: --scratch-dir {bad}: No such file or directory"
    elif kind == "mode-0500":
        if os.geteuid() == 0:
            pytest.skip("root writes into a mode 0500 directory (the sysfs case covers root)")
        bad.mkdir(mode=0o500)
        want = f"gpuconform: --scratch-dir {bad}: not writable: Permission denied"
    else:  # no file can be created in /sys, by root either (EACCES, or EROFS read-only)
        bad = Path("/sys")
        want = "gpuconform: --scratch-dir /sys: not writable: "
    r = _run(fake_build, tmp_path / "r", "--scratch-dir", str(bad))
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert r.stderr.startswith(want) and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "r").exists()  # nothing ran


def test_check_scratch_dir(tmp_path: Path) -> None:
    assert check_scratch_dir(str(tmp_path / ".")) == str(tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match=r"\A--scratch-dir /sys: not writable: "):
        check_scratch_dir("/sys")

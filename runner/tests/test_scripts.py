"""The README's commands start on the machines users have (scripts/python.sh,
./gpuconform, scripts/deps.sh): a python3 without pytest first on PATH, no
Python that can run the runner, one too old, a package manager that fails or
works. Real scripts, real interpreters; only the interpreters and apt-get met
on PATH are stand-ins, each a few lines of shell written here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gc_testutil import LAUNCHER, REPO_ROOT, Selftests

DEPS = REPO_ROOT / "scripts" / "deps.sh"
# What deps.sh itself runs, besides what it checks for.
TOOLS = ("bash", "dirname", "grep", "mktemp", "timeout", "env", "rm", "cat")


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def bin_dir(tmp: Path, *tools: str) -> Path:
    """A directory for PATH holding only these real commands."""
    d = tmp / "bin"
    d.mkdir(exist_ok=True)
    for t in tools:
        real = shutil.which(t)
        assert real, f"{t} is not on PATH"
        (d / t).symlink_to(real)
    return d


def python_without_pytest(d: Path, log: Path) -> Path:
    """python3 that is real Python but cannot see site-packages (-S): no pytest. Every
    invocation is logged, so a test can tell whether the runner ran under it."""
    return script(d / "python3", f'echo "$1" >>{log}\nexec {sys.executable} -S "$@"\n')


def launcher(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "GPUCONFORM_PYTHON"}
    return subprocess.run([str(LAUNCHER), *argv], capture_output=True, text=True,
                          env={**base, **env}, timeout=120, cwd=REPO_ROOT)


def test_python_without_pytest_first_on_path(tmp_path: Path, selftests: Selftests) -> None:
    """The python3 on PATH cannot import pytest: the launcher runs under the system's."""
    log = tmp_path / "calls"
    d = tmp_path / "bin"
    d.mkdir()
    python_without_pytest(d, log)
    p = launcher({"PATH": f"{d}:{os.environ['PATH']}", "GPUCONFORM_SYSTEM_PYTHON": sys.executable},
                 "list", "--selftest", "--build", str(selftests.build))
    assert p.returncode == 0, p.stderr
    assert "selftest_results@pass" in p.stdout.split()
    assert log.read_text().splitlines() == ["-c"]  # the probe; the runner ran elsewhere


def test_no_python_can_run_it(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    d = tmp_path / "bin"
    d.mkdir()
    fake = python_without_pytest(d, log)
    p = launcher({"PATH": f"{d}:/usr/bin:/bin", "GPUCONFORM_SYSTEM_PYTHON": "/nonexistent/python3"},
                 "list")
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("gpuconform: no Python to run the runner: ")
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"{fake} (Python {version}) cannot import pytest" in line
    assert "/nonexistent/python3: not found" in line
    assert "apt-get install python3-pytest" in line and "pip install pytest" in line


def test_too_old_interpreter_is_named(tmp_path: Path) -> None:
    """An interpreter that answers as Python 3.8 with pytest is refused by name."""
    old = script(tmp_path / "python3.8", 'printf "3 8 1"\n')
    p = launcher({"GPUCONFORM_PYTHON": str(old)}, "list")
    assert p.returncode == 2
    assert p.stderr.splitlines() == [p.stderr.rstrip("\n")]
    assert f"{old} is Python 3.8, older than 3.9" in p.stderr


def test_something_that_is_not_python(tmp_path: Path) -> None:
    bad = script(tmp_path / "python3", "echo hello\nexit 3\n")
    p = launcher({"GPUCONFORM_PYTHON": str(bad)}, "list")
    assert p.returncode == 2
    assert f"{bad}: did not answer as Python does (exit 3)" in p.stderr


@pytest.mark.skipif(not Path("/root/.pyenv/versions").is_dir(), reason="no old Python here")
def test_module_refuses_an_old_python() -> None:
    """python3 -m gpuconform under an old interpreter: one line naming it (not a traceback)."""
    olds = sorted(Path("/root/.pyenv/versions").glob("3.[5-8].*/bin/python3"))
    if not olds:
        pytest.skip("no Python 3.5-3.8 under /root/.pyenv/versions")
    p = subprocess.run([str(olds[-1]), "-m", "gpuconform", "list"], capture_output=True,
                       text=True, env={"PYTHONPATH": str(REPO_ROOT / "runner")}, timeout=60)
    assert p.returncode == 1
    assert p.stderr.startswith(f"gpuconform: {olds[-1]} is Python 3.")
    assert "older than 3.9" in p.stderr and len(p.stderr.splitlines()) == 1


# ------------------------------------------------------------------ deps.sh


def deps_env(tmp: Path, d: Path) -> dict[str, str]:
    script(d / "id", "echo 0\n")  # as root: apt-get is tried, whoever runs the tests
    script(d / "dpkg-query", "exit 1\n")  # no Debian package is installed
    return {"PATH": str(d), "TMPDIR": str(tmp), "GPUCONFORM_SYSTEM_PYTHON": "/nonexistent"}


def run_deps(env: dict[str, str], role: str = "build") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(DEPS), role], capture_output=True, text=True, env=env,
                          timeout=120)


def test_deps_apt_cannot_help_one_line_per_missing_essential(tmp_path: Path) -> None:
    """No registry: apt-get fails. Each essential that is missing gets its line; the
    wanted packages (ROCm headers, chromium, clang) are not mentioned."""
    d = bin_dir(tmp_path, *TOOLS)
    script(d / "apt-get", 'echo "E: Unable to locate package $*" >&2\nexit 100\n')
    p = run_deps(deps_env(tmp_path, d), "test")
    assert p.returncode == 1 and p.stdout == ""
    lines = p.stderr.splitlines()
    assert [x.split(":")[1].strip() for x in lines] == [
        "missing meson", "missing ninja", "missing cc", "no Python to run the runner",
        "missing scipy", "missing jinja2"], lines
    assert all("apt-get could not install it" in x for x in lines)
    assert not any(w in p.stderr for w in ("libhsa", "chromium", "clang-14", "pkg-config"))


def test_deps_not_debian(tmp_path: Path) -> None:
    d = bin_dir(tmp_path, *TOOLS)
    p = run_deps(deps_env(tmp_path, d))
    assert p.returncode == 1 and p.stdout == ""
    assert len(p.stderr.splitlines()) == 6
    assert "missing meson: install the Debian package meson, or python3 -m pip install meson " \
        "[no apt-get here]" in p.stderr


def test_deps_only_wanted_missing_is_silent(tmp_path: Path) -> None:
    """Everything essential is here (the real meson, ninja, cc and this Python);
    the ROCm packages cannot be had: nothing to say, exit 0."""
    tools = [t for t in ("meson", "ninja", "cc") if shutil.which(t)]
    if len(tools) < 3:
        pytest.skip("meson, ninja and cc are not all on PATH here")
    d = bin_dir(tmp_path, *TOOLS, *tools)
    script(d / "apt-get", "exit 100\n")
    env = {**deps_env(tmp_path, d), "GPUCONFORM_SYSTEM_PYTHON": sys.executable}
    p = run_deps(env)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_deps_apt_installs_what_is_missing(tmp_path: Path) -> None:
    """A package manager that works: asked only for what is missing, and the
    essentials it installed are found afterwards."""
    d = bin_dir(tmp_path, *TOOLS)
    asked = tmp_path / "asked"
    # "installs" meson, ninja-build and gcc by putting a command of that name on PATH
    script(d / "apt-get", f"""echo "$@" >>{asked}
for a; do case $a in
meson) /bin/ln -s /bin/true {d}/meson ;; ninja-build) /bin/ln -s /bin/true {d}/ninja ;;
gcc) /bin/ln -s /bin/true {d}/cc ;; esac; done
""")
    env = {**deps_env(tmp_path, d), "GPUCONFORM_SYSTEM_PYTHON": sys.executable}
    p = run_deps(env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "gpuconform: installing meson ninja-build gcc with apt-get",
        "gpuconform: installed meson ninja-build gcc"]
    calls = [c.split() for c in asked.read_text().splitlines()]
    assert calls[0][-1] == "update"
    installs = [c[c.index("install") + 1:] for c in calls if "install" in c]
    assert installs[0][:4] == ["--no-install-recommends", "meson", "ninja-build", "gcc"]
    assert "python3-pytest" not in installs[0]  # this Python has pytest


# ------------------------------------------------------------------ nightly


def test_two_nights(tmp_path: Path) -> None:
    """scripts/nightly.sh as the timer and the CI job run it: each night in a
    directory of its own with JUnit XML, `latest` pointing at the last, the
    second compared with the first."""
    root = tmp_path / "nightly"
    argv = ["bash", str(REPO_ROOT / "scripts" / "nightly.sh"), str(root), "--testlist", "smoke",
            "--kmsg", "off", "--taint-file", "off", "--no-baseline", "--progress", "off"]
    env = {**os.environ, "GPUCONFORM_PYTHON": sys.executable}
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    night1 = (root / "latest").resolve()
    assert (night1 / "junit.xml").is_file() and not (night1 / "compare.txt").exists()
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    night2 = (root / "latest").resolve()
    assert night2 != night1 and night2.parent == night1.parent == root
    compare = (night2 / "compare.txt").read_text()
    assert compare.startswith(f"gpuconform compare: A = {night1} ")
    assert f"(against {night1}: {night2}/compare.txt)" in second.stdout
    assert "history of 2 night(s) written" in second.stdout
    assert "2 night(s) on 1 machine(s)" in (root / "history.html").read_text()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_systemd_units_verify(tmp_path: Path) -> None:
    """The recipe's units, as docs/nightly.md installs them (the checkout at
    /opt/gpuconform, here this one)."""
    units = REPO_ROOT / "scripts" / "nightly"
    for u in units.iterdir():
        text = u.read_text().replace("/opt/gpuconform", str(REPO_ROOT))
        (tmp_path / u.name).write_text(text)
    p = subprocess.run(["systemd-analyze", "verify", *sorted(str(u) for u in tmp_path.iterdir())],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr

"""data/findings and `gpuconform findings`: every fail rule of the NVIDIA
expectations has a standalone reproducer whose README names the rule, each
reproducer names its one build line and compiles wherever its vendor's
headers are; the bundles of a run; and, on a GPU machine only, each
reproducer fails exactly where its subtest fails."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from gc_testutil import REPO_ROOT, build_dir, run_launcher
from gpuconform.core.expectations import Kind, default_expectation_files, load_expectations
from gpuconform.report.findings import FINDINGS_DIR, build_line, finding_dir, write_findings

# "At most about 100 lines": 83 to 163 today; what passes 100 is the setup a cuFile batch or a
# CUPTI session needs and the run-time loading of libcuda / libcupti (so that a machine without
# the driver says it cannot check instead of failing to start).
MAX_LINES = 170
REPROS = sorted(FINDINGS_DIR.glob("*/repro.c"))


def fail_rules() -> list[tuple[str, str]]:
    """(test, Rule.describe() with the file relative to the repository) of every
    fail rule the suite loads by default."""
    exp = load_expectations(default_expectation_files(REPO_ROOT / "data"))
    return [(r.glob, r.describe().replace(f"{REPO_ROOT}/", ""))
            for r in exp.rules + exp.inactive if r.kind is Kind.FAIL]


@pytest.mark.parametrize("test, rule", fail_rules())
def test_every_fail_rule_has_a_reproducer_that_names_it(test: str, rule: str) -> None:
    d = finding_dir(test)
    assert (d / "repro.c").is_file() and (d / "README.md").is_file(), f"{rule}: no {d}"
    named = [" ".join(line.split()) for line in (d / "README.md").read_text(
        encoding="utf-8").splitlines() if line.startswith("Rule: ")]
    assert f"Rule: {rule}" in named, f"{d}/README.md does not name `Rule: {rule}`"


@pytest.mark.parametrize("repro", REPROS, ids=[p.parent.name for p in REPROS])
def test_a_reproducer_is_short_and_gives_its_build_line(repro: Path) -> None:
    assert len(repro.read_text(encoding="utf-8").splitlines()) <= MAX_LINES
    line = build_line(repro)
    assert line and re.match(r"cc .*\brepro\.c\b", line), f"{repro}: no `cc ... repro.c` line"
    assert (repro.parent / "README.md").is_file()


@pytest.mark.parametrize("repro", REPROS, ids=[p.parent.name for p in REPROS])
def test_a_reproducer_compiles_where_its_headers_are(repro: Path, tmp_path: Path) -> None:
    line = build_line(repro)
    assert line
    flags = [a for a in shlex.split(line)[1:] if a.startswith(("-I", "-D", "-std"))]
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    p = subprocess.run(["cc", *flags, "-Wall", "-Wextra", "-Werror", "-c", str(repro), "-o",
                        str(tmp_path / "repro.o")], capture_output=True, text=True, timeout=120)
    # the vendor's headers (cufile.h, amdsmi.h, ...) are not on every machine: the compiler
    # says which one it did not find
    missing = re.search(r"fatal error: ([^:]+): No such file or directory", p.stderr)
    if p.returncode != 0 and missing:
        pytest.skip(f"{missing.group(1)} is not installed here")
    assert p.returncode == 0, p.stderr


def test_findings_writes_a_bundle_per_failure(tmp_path: Path) -> None:
    findings = tmp_path / "findings-src"
    (findings / "bin.broken").mkdir(parents=True)
    (findings / "bin.broken" / "repro.c").write_text("/* cc -o repro repro.c -lx */\nint main(void){return 1;}\n")
    (findings / "bin.broken" / "README.md").write_text("Rule: data/expectations/x.txt:1: fail bin@broken\n")
    results = tmp_path / "r"
    results.mkdir()
    data = {"format": "gpuconform-results", "version": 1,
            "fingerprint": {"gpu_model": "X"}, "run": {"platform": "x", "devices": ["GPU-1"]},
            "tests": {
                "bin@broken": {"result": "fail", "expected": True, "reason": "why",
                               "rule": "x.txt:1", "out": "o", "err": "e",
                               "command": ["/b/bin", "--run-subtest", "broken"]},
                "bin@new(1)": {"result": "crash", "expected": False, "reason": "SIGSEGV",
                               "command": ["/b/bin", "--run-subtest", "new(1)"]},
                "bin@fine": {"result": "pass", "expected": True}}}
    (results / "results.json").write_text(json.dumps(data))
    bundles = write_findings(results, findings)
    assert [(b.test, b.reproducer, b.expected) for b in bundles] == [
        ("bin@broken", True, True), ("bin@new(1)", False, False)]
    b = results / "findings" / "bin.broken"
    assert sorted(p.name for p in b.iterdir()) == ["README.md", "commands.txt",
                                                   "environment.json", "output.txt", "repro.c"]
    cmds = (b / "commands.txt").read_text()
    assert "cc -o repro repro.c -lx" in cmds and "/b/bin --run-subtest broken" in cmds
    new = results / "findings" / "bin.new(1)"
    assert (new / "NO-REPRODUCER.txt").is_file()
    assert "./gpuconform run --include '^bin@new\\(1\\)$'" in (new / "commands.txt").read_text()
    assert json.loads((new / "environment.json").read_text())["devices"] == ["GPU-1"]
    assert "| bin@new(1) | unexpected | no: rerun it alone" in (results / "findings" / "index.md").read_text()


# --------------------------------------------------------------- on a GPU machine

def _nvidia_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True).returncode == 0


NVIDIA = [(t, r) for t, r in fail_rules() if finding_dir(t).is_dir()]


@pytest.mark.skipif(not _nvidia_gpu(), reason="needs an NVIDIA GPU (the reproducers run on it)")
@pytest.mark.parametrize("test, rule", NVIDIA, ids=[t for t, _ in NVIDIA])
def test_a_reproducer_fails_exactly_where_its_subtest_fails(test: str, rule: str,
                                                            tmp_path: Path) -> None:
    repro = finding_dir(test) / "repro.c"
    line = build_line(repro)
    assert line
    argv = [a if a != "repro.c" else str(repro) for a in shlex.split(line)]
    argv = [str(tmp_path / "repro") if a == "repro" else a for a in argv]
    argv[0] = os.environ.get("CC") or shutil.which("cc") or "gcc"
    built = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if built.returncode != 0 and "-lcuda" in argv:
        # no unversioned libcuda.so to link against (a driver without its dev link): CUDA's
        # stub, as NVIDIA's toolkit documents; the real libcuda.so.1 is loaded when it runs
        stubs = "-L/usr/local/cuda/lib64/stubs"
        print(f"{test}: built again with {stubs}: {built.stderr.strip()[-300:]}")
        built = subprocess.run([*argv, stubs], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    scratch = os.environ.get("GPUCONFORM_SCRATCH_DIR", "/var/tmp")
    r = subprocess.run([str(tmp_path / "repro"), scratch], capture_output=True, text=True,
                       timeout=300)
    print(f"{test}: reproducer exit {r.returncode}\n{r.stdout}{r.stderr}")
    assert r.returncode in (0, 1), f"the reproducer could not check: {r.stdout}{r.stderr}"
    res = tmp_path / "suite"
    run = run_launcher(["run", "--build", str(build_dir()), "--include", f"^{re.escape(test)}$",
                        "--no-baseline", "--results", str(res)], dict(os.environ), res)
    state = run.tests()[test]["result"]
    print(f"{test}: the suite's subtest: {state}")
    assert (r.returncode == 1) == (state == "fail"), \
        f"reproducer exit {r.returncode}, subtest {state}"

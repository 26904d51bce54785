"""The commands that read results (report, compare, merge, baseline update,
export, list --contracts) and verify, given what a user may give them by mistake: a
directory that is not a results directory, a missing path, a truncated
results.json, one of another format, one whose fields are of the wrong kind,
a FIFO, a file or directory they may not read. Each is one line on stderr
naming the file, exit 2, never a traceback; nothing is written.

The commands run as a user runs them (./gpuconform, a process each) on a real
run's results.json (the selftest binaries). The unreadable cases run the
command as an unprivileged user (setpriv) when the tests run as root, since
root reads every file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from gc_testutil import LAUNCHER, REPO_ROOT, Selftests

GUARD_S = 120  # a hang guard only (a FIFO read waits forever), never a bound on speed
NOBODY = 65534
SETPRIV = shutil.which("setpriv")


@pytest.fixture(scope="module")
def good(selftests: Selftests) -> Iterator[Path]:
    """A real run's results directory, in a directory every user may read
    (for the unprivileged cases)."""
    top = Path(tempfile.mkdtemp(prefix="gc-inputs-", dir="/tmp"))
    os.chmod(top, 0o755)
    d = top / "good"
    p = subprocess.run([str(LAUNCHER), "run", "--build", str(selftests.build), "--selftest",
                        "--kmsg", "off", "--include", "selftest_results@(pass|skip)",
                        "--include", "selftest_metrics@metrics", "--results", str(d),
                        "--progress", "off"], capture_output=True, text=True, timeout=GUARD_S,
                       cwd=REPO_ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    try:
        yield d
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _data(good: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((good / "results.json").read_text())
    return data


def _changed(change: Callable[[dict[str, Any]], None]) -> Callable[[Path, Path], Path]:
    def make(good: Path, d: Path) -> Path:
        data = _data(good)
        change(data)
        d.mkdir()
        (d / "results.json").write_text(json.dumps(data, indent=1))
        return d
    return make


def _metric_test(data: dict[str, Any]) -> dict[str, Any]:
    rec: dict[str, Any] = next(r for r in data["tests"].values() if r.get("metrics"))
    return rec


def _not_results(good: Path, d: Path) -> Path:
    d.mkdir()
    (d / "notes.txt").write_text("not a run\n")
    return d


def _missing(good: Path, d: Path) -> Path:
    return d


def _truncated(good: Path, d: Path) -> Path:
    text = (good / "results.json").read_bytes()
    return _results_of(text[:len(text) // 2])(good, d)


def _results_of(content: bytes) -> Callable[[Path, Path], Path]:
    """A maker of a directory whose results.json holds content."""
    def make(good: Path, d: Path) -> Path:
        d.mkdir()
        (d / "results.json").write_bytes(content)
        return d
    return make


_empty = _results_of(b"")
_another_format = _results_of(b'{"format": "gpuconform-qualification", "version": 1}\n')
_an_array = _results_of(b"[1, 2]\n")


def _results_json_a_directory(good: Path, d: Path) -> Path:
    (d / "results.json").mkdir(parents=True)
    return d


def _fifo(good: Path, d: Path) -> Path:
    d.mkdir()
    os.mkfifo(d / "results.json")
    return d


BAD: dict[str, Callable[[Path, Path], Path]] = {
    "not-a-results-directory": _not_results,
    "missing": _missing,
    "truncated": _truncated,
    "empty-file": _empty,
    "another-format": _another_format,
    "an-array": _an_array,
    "results.json-a-directory": _results_json_a_directory,
    "fifo": _fifo,
    "run-a-string": _changed(lambda d: d.update(run="x")),
    "run-options-a-string": _changed(lambda d: d["run"].update(options="x")),
    "run-node-a-string": _changed(lambda d: d["run"].update(node="x")),
    "run-start-out-of-range": _changed(lambda d: d["run"].update(start=1e308)),
    "collection-errors-a-number": _changed(lambda d: d["run"].update(collection_errors=5)),
    "placements-a-number": _changed(lambda d: _metric_test(d).update(placements=5)),
    "notes-of-numbers": _changed(lambda d: _metric_test(d).update(notes=[1])),
}
UNREADABLE = ("results.json-mode-000", "directory-mode-000")


def gpuconform(argv: list[str], as_nobody: bool = False) -> subprocess.CompletedProcess[str]:
    cmd = [str(LAUNCHER), *argv]
    if as_nobody and os.geteuid() == 0:
        assert SETPRIV is not None
        cmd = [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=GUARD_S,
                              cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                              env={**os.environ, "HOME": "/tmp"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"gpuconform {' '.join(argv)} still waiting after {GUARD_S} s")


def bad_input(kind: str, good: Path) -> tuple[Path, bool]:
    """The bad input of kind, beside good (every user may read there); and
    whether the command must run unprivileged to be refused."""
    d = good.parent / f"bad-{kind}"
    shutil.rmtree(d, ignore_errors=True)
    if kind in UNREADABLE:
        if os.geteuid() == 0 and SETPRIV is None:
            pytest.skip("root reads any file and setpriv (util-linux) is not on PATH to run "
                        "the command as another user")
        d.mkdir()
        shutil.copy(good / "results.json", d)
        os.chmod(d / "results.json" if kind == "results.json-mode-000" else d, 0o000)
        return d, True
    return BAD[kind](good, d), False


KINDS = [*BAD, *UNREADABLE]


def refused(p: subprocess.CompletedProcess[str], named: Path) -> str:
    """One line on stderr naming named (or a file in it), exit 2, nothing on stdout."""
    assert "Traceback" not in p.stdout + p.stderr, p.stderr
    assert (p.returncode, p.stdout) == (2, ""), (p.returncode, p.stdout, p.stderr)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"gpuconform: {named}"), p.stderr
    return p.stderr


@pytest.fixture
def restore() -> Iterator[list[Path]]:
    """Paths made mode 000 by a test, made removable again after it."""
    made: list[Path] = []
    yield made
    for p in made:
        for q in (p, p / "results.json"):
            try:
                os.chmod(q, 0o755)
            except OSError:
                pass
        shutil.rmtree(p, ignore_errors=True)


@pytest.mark.parametrize("kind", KINDS)
def test_report(good: Path, kind: str, restore: list[Path]) -> None:
    d, nobody = bad_input(kind, good)
    restore.append(d)
    refused(gpuconform(["report", str(d)], nobody), d)
    assert not (d / "report.html").exists()


def test_report_of_a_file(good: Path) -> None:
    f = good / "results.json"
    msg = refused(gpuconform(["report", str(f)]), f)
    assert "not a directory" in msg


@pytest.mark.parametrize("kind", KINDS)
def test_export(good: Path, kind: str, restore: list[Path]) -> None:
    d, nobody = bad_input(kind, good)
    restore.append(d)
    refused(gpuconform(["export", "--format", "piglit", str(d)], nobody), d)
    assert not (d / "piglit").exists()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("side", ["A", "B"])
def test_compare(good: Path, kind: str, side: str, restore: list[Path]) -> None:
    d, nobody = bad_input(kind, good)
    restore.append(d)
    pair = [str(d), str(good)] if side == "A" else [str(good), str(d)]
    refused(gpuconform(["compare", *pair], nobody), d)


@pytest.mark.parametrize("kind", KINDS)
def test_merge(good: Path, kind: str, restore: list[Path]) -> None:
    d, nobody = bad_input(kind, good)
    restore.append(d)
    out = good.parent / f"merged-{kind}"
    refused(gpuconform(["merge", str(out), str(good), str(d)], nobody), d)
    assert not out.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_baseline_update(good: Path, kind: str, restore: list[Path]) -> None:
    d, nobody = bad_input(kind, good)
    restore.append(d)
    out = good.parent / f"baseline-{kind}.json"
    refused(gpuconform(["baseline", "update", "--out", str(out), str(d)], nobody), d)
    assert not out.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_list_contracts(good: Path, kind: str, restore: list[Path]) -> None:
    d, nobody = bad_input(kind, good)
    restore.append(d)
    refused(gpuconform(["list", "--contracts", "--results", str(d)], nobody), d)


@pytest.mark.parametrize("kind", ["missing", "truncated", "empty-file", "an-array", "fifo",
                                  "results.json-a-directory", *UNREADABLE])
def test_verify(good: Path, kind: str, restore: list[Path]) -> None:
    d, nobody = bad_input(kind, good)
    restore.append(d)
    record = d / "results.json"
    refused(gpuconform(["verify", str(record)], nobody), record)


def test_verify_of_a_results_file(good: Path) -> None:
    record = good / "results.json"
    assert "not a gpuconform qualification record" in refused(
        gpuconform(["verify", str(record)]), record)


def test_an_error_nobody_foresaw_names_the_inputs() -> None:
    """The last guard: an input a command's code did not foresee (no check
    above catches it) still gives one line naming the inputs, not a traceback."""
    from gpuconform import cli

    def reads(d: Path) -> None:
        raise KeyError("result")

    with pytest.raises(cli.CliError) as e:
        cli._call(reads, Path("/r/a"), inputs=[Path("/r/a/results.json")])
    assert str(e.value) == "/r/a/results.json: cannot use it: KeyError: 'result'"
    with pytest.raises(cli.CliError) as e:
        cli._call(lambda: open("/nonexistent/x"))
    assert str(e.value) == "/nonexistent/x: No such file or directory"

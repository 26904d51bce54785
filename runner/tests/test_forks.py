"""forks.py: the kernel's count of created tasks, and execute's use of it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpuconform.core.execute as ex
from gpuconform.core.forks import fork_count, parse_fork_count

STAT = (b"cpu  1 2 3 4 5 6 7 0 0 0\ncpu0 1 2 3 4 5 6 7 0 0 0\nintr 99 1 2 3\n"
        b"ctxt 12345\nbtime 1700000000\nprocesses 4242\nprocs_running 1\n"
        b"procs_blocked 0\nsoftirq 1 2 3\n")


def test_the_processes_line_is_read() -> None:
    assert parse_fork_count(STAT) == 4242
    assert parse_fork_count(b"processes 7\nprocs_running 1\n") == 7  # first line too


def test_a_line_cut_short_or_missing_or_bad_is_none() -> None:
    cut = STAT.index(b"processes 4242") + len(b"processes 42")
    assert parse_fork_count(STAT[:cut]) is None  # the rest of the number may follow
    assert parse_fork_count(STAT.replace(b"processes", b"procs")) is None
    assert parse_fork_count(STAT.replace(b"4242", b"-1")) is None
    assert parse_fork_count(b"") is None
    assert parse_fork_count(b"xprocesses 5\n") is None  # part of another name


def test_a_file_is_read_across_reads_and_a_missing_one_is_none(tmp_path: Path) -> None:
    big = tmp_path / "stat"
    big.write_bytes(b"intr " + b"0 " * 100_000 + b"\n" + STAT)  # past the first read
    assert fork_count(str(big)) == 4242
    assert fork_count(str(tmp_path / "none")) is None
    (tmp_path / "short").write_bytes(b"cpu 1 2 3\n")
    assert fork_count(str(tmp_path / "short")) is None


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="no /proc/stat")
def test_the_count_grows_with_each_process_made() -> None:
    before = fork_count()
    assert before is not None
    for _ in range(3):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    after = fork_count()
    assert after is not None and after - before >= 3


def _script(tmp_path: Path) -> Path:
    p = tmp_path / "t_plain"
    p.write_text("#!/bin/sh\n" + textwrap.dedent("""\
        echo 'Starting subtest: s'
        echo 'Subtest s: SUCCESS (0.000s)'
        """))
    p.chmod(0o755)
    return p


def _counts(monkeypatch: pytest.MonkeyPatch, values: list[int]) -> list[int]:
    """fork_count in execute answers values in turn; returns what is left."""
    left = list(values)
    monkeypatch.setattr(ex, "fork_count", lambda: left.pop(0))
    return left


def test_one_task_made_skips_the_proc_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def scan(*_a: object) -> list[tuple[int, bool]]:
        raise AssertionError("/proc was scanned")

    monkeypatch.setattr(ex, "_find_strays", scan)
    left = _counts(monkeypatch, [100, 101])
    run = ex.run_subtest(_script(tmp_path), "s", ex.ExecOptions(timeout_s=20))
    assert left == [] and run.command.strays == [] and run.command.returncode == 0


def _record_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The process groups /proc is scanned for, as the scans happen."""
    scans: list[int] = []
    real = ex._find_strays

    def scan(group: int, token: str, exclude: int) -> list[tuple[int, bool]]:
        scans.append(group)
        return real(group, token, exclude)

    monkeypatch.setattr(ex, "_find_strays", scan)
    return scans


@pytest.mark.parametrize("after", [102, 100, None])
def test_any_other_count_scans_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    after: int | None) -> None:
    scans = _record_scans(monkeypatch)
    _counts(monkeypatch, [100, after])  # type: ignore[list-item]
    run = ex.run_subtest(_script(tmp_path), "s", ex.ExecOptions(timeout_s=20))
    assert scans == [run.command.pid]


def test_no_count_before_scans_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scans = _record_scans(monkeypatch)
    monkeypatch.setattr(ex, "fork_count", lambda: None)
    run = ex.run_subtest(_script(tmp_path), "s", ex.ExecOptions(timeout_s=20))
    assert scans == [run.command.pid]

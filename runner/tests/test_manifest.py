"""manifest.py: reading meson's manifests; every error is one line naming file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuconform.core.manifest import (
    SELFTEST_MANIFEST,
    SUITE_MANIFEST,
    ManifestError,
    manifest_path,
    read_manifest,
)


def exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def write(tmp_path: Path, text: str, name: str = SUITE_MANIFEST) -> Path:
    m = tmp_path / name
    m.write_text(text)
    return m


def test_reads_relative_and_absolute_paths(tmp_path: Path) -> None:
    a = exe(tmp_path / "tests" / "host" / "host_io")
    b = exe(tmp_path / "elsewhere" / "kfd_mem")
    m = read_manifest(write(tmp_path, f"# comment\n\ntests/host/host_io\n  {b}  \n"))
    assert [e.name for e in m.entries] == ["host_io", "kfd_mem"]
    assert m.entries[0].path == a and m.entries[0].line == 3
    assert m.entries[1].path == b and m.entries[1].line == 4
    assert not m.is_selftest


def test_selftest_manifest_name(tmp_path: Path) -> None:
    m = read_manifest(write(tmp_path, "", SELFTEST_MANIFEST))
    assert m.is_selftest and m.entries == ()
    assert manifest_path(tmp_path, True) == tmp_path / SELFTEST_MANIFEST
    assert manifest_path(tmp_path) == tmp_path / SUITE_MANIFEST


def one_line_error(path: Path) -> str:
    with pytest.raises(ManifestError) as ei:
        read_manifest(path)
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def test_missing_manifest(tmp_path: Path) -> None:
    msg = one_line_error(tmp_path / SUITE_MANIFEST)
    assert msg.startswith(f"{tmp_path / SUITE_MANIFEST}: cannot read")


def test_unreadable_manifest(tmp_path: Path) -> None:
    m = tmp_path / SUITE_MANIFEST
    m.mkdir()  # unreadable as a file, for root too
    assert one_line_error(m) == f"{m}: cannot read the manifest: Is a directory"


def test_missing_binary_names_file_and_line(tmp_path: Path) -> None:
    exe(tmp_path / "ok")
    m = write(tmp_path, "ok\n# c\ntests/gone\n")
    msg = one_line_error(m)
    assert msg.startswith(f"{m}:3: tests/gone: no such binary")


def test_not_executable(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    m = write(tmp_path, "plain\n")
    assert one_line_error(m) == f"{m}:1: plain: not executable ({tmp_path / 'plain'})"


def test_directory_is_not_a_binary(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    assert "not a regular file" in one_line_error(write(tmp_path, "d\n"))


def test_duplicate_binary_name(tmp_path: Path) -> None:
    exe(tmp_path / "a" / "t")
    exe(tmp_path / "b" / "t")
    msg = one_line_error(write(tmp_path, "a/t\nb/t\n"))
    assert ":2: binary name t already on line 1" in msg


def test_not_utf8(tmp_path: Path) -> None:
    m = tmp_path / SUITE_MANIFEST
    m.write_bytes(b"ok\n\xff\xfe\n")
    assert one_line_error(m) == f"{m}:2: not UTF-8 text"

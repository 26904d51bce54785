"""The manifests meson writes into the build directory.

    BUILD/gpuconform-suite.txt      the suite
    BUILD/gpuconform-selftest.txt   deliberately misbehaving subjects (the runner's own tests)

Format: one binary path a line, relative to the manifest's directory (an
absolute path is taken as is); blank lines and lines starting with '#' are
ignored. Every problem is a ManifestError whose message is one line naming the
file (and line).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .fmt import one_line
from .textfile import decode_utf8

__all__ = [
    "SUITE_MANIFEST",
    "SELFTEST_MANIFEST",
    "MANIFEST_NAMES",
    "ManifestEntry",
    "Manifest",
    "ManifestError",
    "manifest_path",
    "read_manifest",
]

SUITE_MANIFEST = "gpuconform-suite.txt"
SELFTEST_MANIFEST = "gpuconform-selftest.txt"
MANIFEST_NAMES = frozenset({SUITE_MANIFEST, SELFTEST_MANIFEST})


class ManifestError(Exception):
    """A manifest that cannot be used; str() is one line."""


@dataclass(frozen=True)
class ManifestEntry:
    path: Path  # absolute path of the binary
    name: str  # its file name: the BINARY of BINARY@SUBTEST
    line: int  # 1-based line of the manifest


@dataclass(frozen=True)
class Manifest:
    path: Path
    entries: tuple[ManifestEntry, ...]

    @property
    def is_selftest(self) -> bool:
        return self.path.name == SELFTEST_MANIFEST


def manifest_path(build_dir: Path, selftest: bool = False) -> Path:
    return Path(build_dir) / (SELFTEST_MANIFEST if selftest else SUITE_MANIFEST)


def read_manifest(path: Path | str) -> Manifest:
    """Read and check a manifest: every binary must exist and be executable."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ManifestError(f"{path}: cannot read the manifest: {e.strerror or e}") from None
    text = decode_utf8(raw, path, ManifestError)
    base = path.parent
    entries: list[ManifestEntry] = []
    by_name: dict[str, ManifestEntry] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        item = line.strip()
        if not item or item.startswith("#"):
            continue
        where = f"{path}:{lineno}"
        if "\0" in item:
            raise ManifestError(f"{where}: NUL byte in the binary path")
        binary = Path(item) if os.path.isabs(item) else base / item
        if not binary.exists():
            raise ManifestError(
                f"{where}: {one_line(item)}: no such binary ({binary}; is the build finished?)"
            )
        if not binary.is_file():
            raise ManifestError(f"{where}: {one_line(item)}: not a regular file ({binary})")
        if not os.access(binary, os.X_OK):
            raise ManifestError(f"{where}: {one_line(item)}: not executable ({binary})")
        entry = ManifestEntry(path=binary.absolute(), name=binary.name, line=lineno)
        prev = by_name.get(entry.name)
        if prev is not None:
            raise ManifestError(
                f"{where}: binary name {entry.name} already on line {prev.line}: "
                "BINARY@SUBTEST names would clash"
            )
        by_name[entry.name] = entry
        entries.append(entry)
    return Manifest(path=path, entries=tuple(entries))

"""Helpers of the runner's own tests (a module name of its own: test modules
import it, while every test directory's conftest.py is called conftest)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

RUNNER_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = RUNNER_DIR.parent
if str(RUNNER_DIR) not in sys.path:
    sys.path.insert(0, str(RUNNER_DIR))

# Environment variable every process started by a test inherits, so that
# leftovers can be found in /proc however they detached.
MARKER_ENV = "GPUCONFORM_RUNNER_TEST_MARKER"


def build_dir() -> Path:
    return Path(os.environ.get("GPUCONFORM_BUILD_DIR", REPO_ROOT / "build")).absolute()


@dataclass(frozen=True)
class Selftests:
    build: Path
    manifest: Path
    binaries: dict[str, Path]

    def binary(self, name: str) -> Path:
        return self.binaries[name]


def processes_with(needle: bytes) -> list[tuple[int, str]]:
    """Live (non-zombie) processes whose environment contains needle."""
    found: list[tuple[int, str]] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 :].split()[0]
        if state in (b"Z", b"X"):
            continue
        if needle in env.split(b"\0"):
            found.append((int(entry), cmd))
    return found

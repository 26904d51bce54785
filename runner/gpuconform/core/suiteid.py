"""Which suite ran a night: its version and a hash of its sources, recorded
in results.json's "run" ("suite") so that `gpuconform history` can say that
the suite changed between two nights. The hash, not git: a copied tree (a
CI cache, a machine that received the files alone) has no history or a stale
one, and the files are what ran."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from .. import __version__

__all__ = ["suite_id"]

REPO_ROOT = Path(__file__).resolve().parents[3]
# What makes a night's verdict: the test binaries' sources, the runner, its data.
_PARTS = ("lib", "tests", "runner/gpuconform", "data", "meson.build")
_SUFFIXES = {".c", ".h", ".py", ".txt", ".json", ".build", ".j2", ".cu", ".ll", ".S"}


@functools.lru_cache(maxsize=1)
def suite_id(root: Path = REPO_ROOT) -> str:
    """"gpuconform VERSION sources HASH" (12 hex digits over the files'
    paths and bytes, in path order; "sources unreadable" when none could be
    read)."""
    h = hashlib.sha256()
    n = 0
    for part in _PARTS:
        base = root / part
        files = [base] if base.is_file() else sorted(
            p for p in base.rglob("*") if p.is_file() and p.suffix in _SUFFIXES
            and "__pycache__" not in p.parts)
        for p in files:
            try:
                data = p.read_bytes()
            except OSError:
                continue
            h.update(str(p.relative_to(root)).encode() + b"\0" + data + b"\0")
            n += 1
    return f"gpuconform {__version__} sources " + (h.hexdigest()[:12] if n else "unreadable")

"""Where each test runs on a node of several GPUs.

A binary says, per subtest (`BINARY --list-placement`, lib/core.h enum
gc_placement), what it uses:

  gpu        one GPU: run once per GPU of the run, each copy pinned to its GPU
             (devices.pin_env); on a node of several GPUs each GPU walks
             these tests from its own starting point (queues.py), or with
             --lockstep (or --jobs under the GPU count) a test's copies run
             together, up to --jobs at a time;
  gpu-alone  one GPU, but its figures are disturbed by a neighbour: once per
             GPU, one copy at a time; where its repetitions are the node's
             (the copies' samples are joined under one metric, runmetrics),
             each copy makes its share (lib/core.h gc_node_share);
  node       the node's GPUs together, or a library that ignores the pinning
             variables (NVML, raw /dev/kfd): once, every GPU of the run in view;
  host       no GPU: once.

Only gpu tests run side by side: their copies in per-GPU queues, gathered
into one block of the run (a copy's neighbours are other gpu tests), or in
lockstep (copies of itself). A test that spans GPUs or is timed on the host
(node, host, gpu-alone) runs before or after the block and has the node to
itself.

Why the runner places and the binaries do not loop: a binary's own loop over
devices runs them one after another (a node of 4 GPUs took 4 times as long),
and keeping both would test each GPU once per GPU. Pinned, a binary sees one
device, so its loops run once, named by the node index (GPUCONFORM_DEVICES).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .devices import Gpu, node_env, pin_env, present

__all__ = ["PLACEMENTS", "DEFAULT_PLACEMENT", "COPIES_ENV", "list_placement", "Slot",
           "NodePlan"]

PLACEMENTS = ("gpu", "gpu-alone", "node", "host")
# A PCI address as the drivers' kernel lines give it: NVIDIA's Xid lines
# "PCI:0000:1b:00", amdgpu's "0000:03:00.0".
_PCI = re.compile(r"\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\b")
COPIES_ENV = "GPUCONFORM_COPIES"  # lib/core.h gc_node_share: how many copies of the test run
DEFAULT_PLACEMENT = "node"  # a binary that cannot say runs as it always did: once, alone


def list_placement(binary: Path, timeout_s: float = 30.0) -> tuple[dict[str, str], str | None]:
    """{subtest: placement} as BINARY --list-placement prints it, and a
    one-line note when it could not say (a binary not of this suite, or
    broken): then its subtests are placed as DEFAULT_PLACEMENT."""
    try:
        p = subprocess.run([str(binary), "--list-placement"], capture_output=True, text=True,
                           timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {}, f"{binary.name} --list-placement: {type(e).__name__}: {e}"
    if p.returncode != 0:
        return {}, (f"{binary.name} --list-placement: exit {p.returncode}: its subtests run "
                    f"once each, every GPU in view")
    out: dict[str, str] = {}
    for line in p.stdout.splitlines():
        name, _, where = line.strip().partition(" ")
        if not name:
            continue
        if where not in PLACEMENTS:
            return {}, (f"{binary.name} --list-placement: {line.strip()[:80]!r} is not "
                        f"'SUBTEST {'|'.join(PLACEMENTS)}': its subtests run once each")
        out[name] = where
    return out, None


@dataclass(frozen=True)
class Slot:
    """One copy of a test: the GPU it is pinned to (None: not pinned) and the
    environment that says so."""

    gpu: Gpu | None
    env: dict[str, str]


@dataclass
class NodePlan:
    """The run's GPUs (--devices, else all the node has), how many copies of
    a gpu test run at once (--jobs), and the GPUs lost during the run."""

    all_gpus: list[Gpu]
    gpus: list[Gpu]
    jobs: int
    lost: dict[int, str] = field(default_factory=dict)  # index -> why

    def slots(self, where: str) -> list[Slot]:
        """The copies of a test placed `where`, in GPU order."""
        if where in ("gpu", "gpu-alone") and self.gpus:
            copies = {COPIES_ENV: str(len(self.gpus))}
            return [Slot(g, {**pin_env(g), **copies})
                    for g in sorted(self.gpus, key=lambda g: g.index)]
        if where == "host" or not self.all_gpus:
            return [Slot(None, {})]
        return [Slot(None, node_env(self.all_gpus, self.gpus))]

    def at_once(self, where: str) -> int:
        return self.jobs if where == "gpu" else 1

    def check(self, gpus: Sequence[Gpu] | None = None) -> list[str]:
        """GPUs of the run that went away since the last check: one line each
        (they stay in `lost`)."""
        gone = []
        for g in gpus if gpus is not None else self.gpus:
            if g.index not in self.lost and not present(g):
                self.lost[g.index] = (f"{g.label()} disappeared during the run: "
                                      f"{g.source} is gone")
                gone.append(self.lost[g.index])
        return gone

    def named(self, text: str) -> int | None:
        """The index of the one GPU of the run that text names by its PCI
        address (a kernel line), else None."""
        hits = self._named(text)
        return hits[0].index if len(hits) == 1 else None

    def _named(self, text: str) -> list[Gpu]:
        named = {m.group(1).lower() for m in _PCI.finditer(text)}
        return [g for g in self.gpus if g.bus and g.bus[:10].lower() in named]

    def lose(self, why: str) -> str | None:
        """A kernel line that would stop the run (why) and names one GPU of
        the run by its PCI address, while other GPUs of the run are still
        there: that GPU is lost instead (its later copies do not run, the
        others go on); the line saying so. None: the run must stop."""
        hits = self._named(why)
        if len(hits) != 1 or hits[0].index in self.lost:
            return None
        if not [g for g in self.gpus if g is not hits[0] and g.index not in self.lost]:
            return None
        self.lost[hits[0].index] = f"{hits[0].label()} was lost: {why}"
        return self.lost[hits[0].index]

    def to_json(self) -> dict[str, object]:
        return {"gpus": [g.to_json() for g in self.gpus], "node_gpus": len(self.all_gpus),
                "jobs": self.jobs, "lost": {str(k): v for k, v in self.lost.items()}}

"""The GPUs of this node, the ones a run uses (--devices), and whether each is
still there.

Found from the kernel's own files, as fingerprint.py reads them (stdlib only):

  NVIDIA  /proc/driver/nvidia/gpus/<PCI address>/information   "Model:", "GPU UUID:"
  AMD     /sys/class/kfd/kfd/topology/nodes/<N>/properties        GPU nodes (simd_count > 0),
                                                                  unique_id, location_id

A GPU's index is its place on the node: NVIDIA GPUs in PCI address order (the
order of nvidia-smi, and of CUDA under CUDA_DEVICE_ORDER=PCI_BUS_ID, which the
runner always sets), then AMD GPUs in KFD node order (ROCr's order). Tests see
that index in GPUCONFORM_DEVICES and name their per-device cases by it
(lib/core gc_device_name). Pinning a process to GPUs sets the vendor's variable
to their UUIDs (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES), so that no
enumeration order can mix them up.

A GPU is present while the file it was found by is there. The runner's own
tests point GPUCONFORM_DEVICE_ROOT at a directory standing for / (the files
above, written by the test): that is how placement is tested on machines
without a GPU. It is not a mock GPU: nothing that claims to test a GPU runs
against it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["Gpu", "DevicesError", "DEVICE_ROOT_ENV", "DEVICES_ENV", "device_root", "find_gpus",
           "select_gpus", "present", "pin_env", "node_env", "check_jobs"]

DEVICE_ROOT_ENV = "GPUCONFORM_DEVICE_ROOT"
DEVICES_ENV = "GPUCONFORM_DEVICES"  # lib/core.h GC_DEVICES_ENV
_NV_GPUS = "proc/driver/nvidia/gpus"
_KFD_NODES = "sys/class/kfd/kfd/topology/nodes"


class DevicesError(Exception):
    """A --devices or --jobs that this node cannot honour; str() is one line."""


@dataclass(frozen=True)
class Gpu:
    index: int  # place on the node (see the module comment)
    vendor: str  # "nvidia" | "amd"
    uuid: str  # "GPU-8f3c..." (NVIDIA's), "GPU-<unique_id hex>" (ROCr's form)
    model: str
    bus: str  # PCI address, "" where unknown
    source: str  # the file or directory it was found by, relative to the root

    def label(self) -> str:
        """"gpu2 (GPU-8f3c1a2b, 0000:1b:00.0)": how messages name it."""
        short = self.uuid[:12]
        return f"gpu{self.index} ({short}" + (f", {self.bus})" if self.bus else ")")

    def to_json(self) -> dict[str, object]:
        return {"index": self.index, "uuid": self.uuid, "vendor": self.vendor,
                "model": self.model, "bus": self.bus}


def device_root(env: Mapping[str, str] | None = None) -> Path:
    e = os.environ if env is None else env
    return Path(e.get(DEVICE_ROOT_ENV) or "/")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in out:
            out[key.strip()] = " ".join(value.split())
    return out


def _nvidia(root: Path) -> list[tuple[str, str, str, str]]:
    """(bus, uuid, model, source) of each NVIDIA GPU, in PCI address order."""
    try:
        dirs = sorted(p for p in (root / _NV_GPUS).iterdir() if p.is_dir())
    except OSError:
        return []
    out = []
    for d in dirs:
        f = _fields(_read(d / "information"))
        uuid = f.get("GPU UUID", "")
        if uuid:
            out.append((d.name.lower(), uuid, f.get("Model", "NVIDIA GPU"),
                        f"{_NV_GPUS}/{d.name}"))
    return out


def _kfd_props(text: str) -> dict[str, int]:
    props: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"-?\d+", parts[1]):
            props[parts[0]] = int(parts[1])
    return props


def _amd(root: Path) -> list[tuple[str, str, str, str]]:
    """(bus, uuid, model, source) of each AMD GPU, in KFD node order."""
    try:
        nodes = sorted((p for p in (root / _KFD_NODES).iterdir() if p.name.isdigit()),
                       key=lambda p: int(p.name))
    except OSError:
        return []
    out = []
    for n in nodes:
        props = _kfd_props(_read(n / "properties"))
        if not props.get("simd_count") or not props.get("unique_id"):
            continue  # a CPU node, or a GPU ROCr could not name either
        loc = props.get("location_id", 0)
        bus = (f"{props.get('domain', 0):04x}:{(loc >> 8) & 0xff:02x}:"
               f"{(loc >> 3) & 0x1f:02x}.{loc & 0x7:x}") if loc else ""
        out.append((bus, f"GPU-{props['unique_id']:016x}",
                    f"AMD gfx_target_version {props.get('gfx_target_version', 0)}",
                    f"{_KFD_NODES}/{n.name}"))
    return out


def find_gpus(root: Path | None = None) -> list[Gpu]:
    """Every GPU of the node under root (default: device_root())."""
    root = device_root() if root is None else root
    found = [("nvidia", *g) for g in _nvidia(root)] + [("amd", *g) for g in _amd(root)]
    return [Gpu(i, vendor, uuid, model, bus, source)
            for i, (vendor, bus, uuid, model, source) in enumerate(found)]


def _describe(gpus: Sequence[Gpu]) -> str:
    if not gpus:
        return "this node has no GPU (none in /proc/driver/nvidia/gpus or the KFD topology)"
    shown = ", ".join(g.label() for g in gpus[:8]) + (", ..." if len(gpus) > 8 else "")
    return f"this node has {len(gpus)}: {shown}"


def select_gpus(gpus: Sequence[Gpu], spec: str | None) -> list[Gpu]:
    """The GPUs --devices names (indexes or UUIDs, a UUID's unique prefix
    allowed), in the order given; every GPU without --devices. DevicesError
    for a name that matches none or several, or a GPU named twice."""
    if spec is None:
        return list(gpus)
    chosen: list[Gpu] = []
    for name in spec.split(","):
        if name.isdigit():
            hits = [g for g in gpus if g.index == int(name)]
        else:
            hits = [g for g in gpus if g.uuid.lower().startswith(name.lower())]
        if not hits:
            raise DevicesError(f"--devices {spec}: no GPU {name}: {_describe(gpus)}")
        if len(hits) > 1:
            raise DevicesError(f"--devices {spec}: {name} names {len(hits)} GPUs: "
                               + ", ".join(g.label() for g in hits))
        if hits[0] in chosen:
            raise DevicesError(f"--devices {spec}: {hits[0].label()} named twice")
        chosen.append(hits[0])
    return chosen


def check_jobs(jobs: int | None, gpus: Sequence[Gpu]) -> int:
    """How many one-GPU placements run at once: --jobs, else one per GPU."""
    if jobs is None:
        return max(1, len(gpus))
    if jobs < 1:
        raise DevicesError(f"--jobs {jobs}: must be 1 or more")
    if jobs > max(1, len(gpus)):
        raise DevicesError(f"--jobs {jobs}: more than the {len(gpus)} GPU(s) of this run, and "
                           "one GPU runs one test at a time")
    return jobs


def present(gpu: Gpu, root: Path | None = None) -> bool:
    root = device_root() if root is None else root
    return (root / gpu.source).exists()


def _vendor_env(gpus: Sequence[Gpu]) -> dict[str, str]:
    """The vendors' visible-devices variables showing exactly gpus, in order."""
    nv = [g.uuid for g in gpus if g.vendor == "nvidia"]
    amd = [g.uuid for g in gpus if g.vendor == "amd"]
    return {"CUDA_VISIBLE_DEVICES": ",".join(nv), "ROCR_VISIBLE_DEVICES": ",".join(amd)}


def pin_env(gpu: Gpu) -> dict[str, str]:
    """A process that sees gpu alone (a one-GPU placement)."""
    return {DEVICES_ENV: str(gpu.index), "CUDA_DEVICE_ORDER": "PCI_BUS_ID", **_vendor_env([gpu])}


def node_env(all_gpus: Sequence[Gpu], chosen: Sequence[Gpu]) -> dict[str, str]:
    """A process that sees the run's GPUs: every one, in node order, when the
    run uses them all (the vendors' variables left alone), else the chosen."""
    env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if not chosen:
        return env
    shown = sorted(chosen, key=lambda g: g.index)
    env[DEVICES_ENV] = ",".join(str(g.index) for g in shown)
    if len(chosen) < len(all_gpus):
        env.update(_vendor_env(shown))
    return env

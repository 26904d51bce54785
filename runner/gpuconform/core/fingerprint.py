"""What a machine is, for choosing the timing baseline its runs compare with.

A Fingerprint names the things that change performance legitimately: the
GPUs, the driver, the runtime, the kernel series, the CPU architecture and
model. Runs compare only with a baseline of the same fingerprint; what
changes between two fingerprints is compared with `gpuconform compare A B`.

Sources, stdlib only, each optional (a missing file is "none", never an error):

  NVIDIA  /proc/driver/nvidia/version                 driver ("nvidia 550.54.15")
          /proc/driver/nvidia/gpus/*/information      model ("Model: ...")
          libcuda.so.1 cuDriverGetVersion (ctypes,    runtime ("cuda 12.4"); needs no
          no cuInit)                                  cuInit, so no context is created
  AMD     /sys/class/kfd/kfd/topology/nodes/*/        model: gfx target from
          properties and name                         gfx_target_version, PCI device id
          /sys/module/amdgpu/version                  driver ("amdgpu 6.7.0"; a kernel's
                                                      own amdgpu has none: "amdgpu in-tree")
          /opt/rocm/.info/version                     runtime ("rocm 6.1.0-82")
  kernel  os.uname().release -> major.minor ("6.1"); the full release is kept
          in kernel_release, which is NOT part of the key (see key())
  CPU     os.uname().machine, /proc/cpuinfo "model name" (x86) or "CPU part"
          / "Processor" (arm)

data/baselines/README.md says why each field is there.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

__all__ = ["Fingerprint", "current_fingerprint", "device_ids", "NONE"]

NONE = "none"
# Fields that identify a machine for baselines: the GPU model, not how many of
# it a node has, and not the CPU: what a GPU measures on its own clock is the
# same on a node of 1, 2, 4 or 8 of them (measured: data/baselines/README.md),
# and what depends on the node (the CPU, the number of GPUs, how many run at
# once) is keyed by the node inside the baseline (runmetrics.node_labeler).
KEY_FIELDS = ("gpu_model", "driver", "runtime", "kernel", "arch")
_COUNTED = re.compile(r"(\d+)x (.+)")


@dataclass(frozen=True)
class Fingerprint:
    gpu_model: str = NONE  # "NVIDIA H100 80GB HBM3", "AMD gfx942 [0x74a1], NVIDIA L4", "none"
    driver: str = NONE  # "nvidia 550.54.15", "amdgpu in-tree", comma-joined when several
    runtime: str = NONE  # "cuda 12.4", "rocm 6.1.0-82", comma-joined when several
    kernel: str = NONE  # major.minor of the running kernel: "6.1"
    arch: str = NONE  # os.uname().machine: "x86_64", "aarch64"
    cpu_model: str = NONE  # "AMD EPYC 7763 64-Core Processor"; not in key()
    kernel_release: str = NONE  # full os.uname().release; informational, not in key()
    gpus: str = NONE  # the node's GPUs, counted: "4x NVIDIA H200"; not in key()

    def key(self) -> str:
        """A filename-safe stem: readable GPU / driver / runtime / kernel /
        arch, then 8 hex digits of a hash of every key field. Same key
        fields, same key; the node's shape, CPU and kernel_release do not
        count."""
        canon = json.dumps({f: getattr(self, f) for f in KEY_FIELDS}, sort_keys=True)
        digest = hashlib.sha256(canon.encode("utf-8")).hexdigest()[:8]
        parts = [
            _slug(self.gpu_model, 48),
            _slug(self.driver, 32),
            _slug(self.runtime, 32),
            "linux-" + _slug(self.kernel, 16),
            _slug(self.arch, 16),
            digest,
        ]
        return "__".join(parts)

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Fingerprint":
        """Known fields that are strings; anything else is ignored. A
        fingerprint written before the node's shape left gpu_model
        ("1x NVIDIA H100 80GB HBM3") reads as the model and its node."""
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in obj.items() if k in names and isinstance(v, str)}
        model = known.get("gpu_model", NONE)
        if "gpus" not in known and all(_COUNTED.fullmatch(m) for m in model.split(", ")):
            known["gpus"] = model
            known["gpu_model"] = _uncounted(model)
        return cls(**known)

    def gpu_count(self) -> int:
        """How many GPUs the node has (0 where gpus is unknown)."""
        return sum(int(m.group(1)) for m in (_COUNTED.fullmatch(x) for x in self.gpus.split(", "))
                   if m)

    def describe(self) -> str:
        return (f"{self.gpus if self.gpus != NONE else self.gpu_model}; driver {self.driver}; "
                f"runtime {self.runtime}; Linux {self.kernel_release or self.kernel} "
                f"{self.arch}; {self.cpu_model}")


def _slug(text: str, limit: int) -> str:
    s = re.sub(r"[^a-z0-9.+_-]+", "-", text.strip().lower())
    s = re.sub(r"_+", "_", s).strip("-._")  # "__" separates the parts
    return s[:limit].rstrip("-._") or "x"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _read_each(parent: Path, name: str,
               key: Callable[[Path], Any] | None = None) -> Iterator[tuple[Path, str]]:
    """(entry, text of entry/name) for each entry of parent, sorted (by key),
    whose name reads; nothing when parent cannot be listed."""
    try:
        entries = sorted(parent.iterdir(), key=key)
    except OSError:
        return
    for d in entries:
        text = _read(d / name)
        if text is not None:
            yield d, text


def _uncounted(counted: str) -> str:
    """"1x A, 2x B" -> "A, B"."""
    return ", ".join(m.group(2) for m in (_COUNTED.fullmatch(x) for x in counted.split(", "))
                     if m) or NONE


def _models(models: list[str]) -> str:
    """Sorted, de-duplicated: "A, B"; "none" for none."""
    return ", ".join(sorted(set(models))) or NONE


def _counted(models: list[str]) -> str:
    """Sorted, de-duplicated, with counts: "1x A, 2x B"; "none" for none."""
    counts: dict[str, int] = {}
    for m in models:
        counts[m] = counts.get(m, 0) + 1
    return ", ".join(f"{n}x {m}" for m, n in sorted(counts.items())) or NONE


def kernel_series(release: str) -> str:
    """"6.1.0-18-amd64" -> "6.1"; a release that does not start with
    N.N is kept whole."""
    m = re.match(r"(\d+)\.(\d+)", release)
    return f"{m.group(1)}.{m.group(2)}" if m else release or NONE


# ------------------------------------------------------------------ NVIDIA


def _nvidia_driver(root: Path) -> str | None:
    text = _read(root / "proc/driver/nvidia/version")
    if text is None:
        return None
    # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..."
    # "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build ..."
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", line)
            if m:
                return f"nvidia {m.group(1)}"
            m = re.search(r"\s(\d+\.\d+(?:\.\d+)*)\s", line + " ")
            if m:
                return f"nvidia {m.group(1)}"
    return "nvidia unknown"


def _nvidia_models(root: Path) -> list[str]:
    models: list[str] = []
    for _d, text in _read_each(root / "proc/driver/nvidia/gpus", "information"):
        model = "NVIDIA GPU"
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model" and value.strip():
                model = " ".join(value.split())
                break
        models.append(model)
    return models


def cuda_driver_version() -> str | None:
    """cuDriverGetVersion() of libcuda.so.1: "12.4"; None without a driver.
    Needs no cuInit(): no context, no device touched."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        fn = lib.cuDriverGetVersion
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
    fn.restype = ctypes.c_int
    v = ctypes.c_int(0)
    if fn(ctypes.byref(v)) != 0 or v.value <= 0:
        return None
    return f"{v.value // 1000}.{(v.value % 1000) // 10}"


# --------------------------------------------------------------------- AMD


def _kfd_properties(text: str) -> dict[str, int]:
    props: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                props[parts[0]] = int(parts[1])
            except ValueError:
                pass
    return props


def gfx_target(version: int) -> str:
    """KFD's gfx_target_version (major * 10000 + minor * 100 + stepping) as
    the LLVM target name: 90010 -> gfx90a, 90402 -> gfx942, 110000 -> gfx1100."""
    major, rest = divmod(version, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor:x}{stepping:x}"


def _amd_models(root: Path) -> list[str]:
    models: list[str] = []
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    for d, text in _read_each(nodes, "properties", key=lambda p: (len(p.name), p.name)):
        props = _kfd_properties(text)
        target = props.get("gfx_target_version", 0)
        if not target or not props.get("simd_count", 0):
            continue  # a CPU node
        name = " ".join((_read(d / "name") or "").split())
        model = f"AMD {gfx_target(target)}"
        if props.get("device_id"):
            model += f" [0x{props['device_id']:04x}]"
        if name and name.lower() not in ("ip discovery",) and not name.startswith("gfx"):
            model += f" {name}"
        models.append(model)
    return models


def _amd_driver(root: Path, have_gpu: bool) -> str | None:
    text = _read(root / "sys/module/amdgpu/version")
    if text is not None and text.strip():
        return f"amdgpu {text.strip()}"
    if have_gpu or (root / "sys/module/amdgpu").is_dir():
        return "amdgpu in-tree"
    return None


def _rocm_version(root: Path) -> str | None:
    text = _read(root / "opt/rocm/.info/version")
    if text is None or not text.strip():
        return None
    return f"rocm {text.strip().splitlines()[0].strip()}"


# --------------------------------------------------------------------- CPU


def _cpu_model(root: Path) -> str:
    text = _read(root / "proc/cpuinfo")
    if text is None:
        return NONE
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Processor", "CPU implementer", "CPU part", "uarch", "cpu") \
                and key not in found and value.strip():
            found[key] = " ".join(value.split())
    if "model name" in found:
        return found["model name"]
    if "Processor" in found:
        return found["Processor"]
    if "CPU part" in found:
        return f"arm implementer {found.get('CPU implementer', '?')} part {found['CPU part']}"
    return found.get("uarch") or found.get("cpu") or NONE


def device_ids(root: Path = Path("/")) -> list[str]:
    """What tells one host's GPUs from an identical host's, and is therefore
    not in the fingerprint: NVIDIA's GPU UUIDs ("GPU UUID:" of
    /proc/driver/nvidia/gpus/*/information), AMD's KFD unique_id of each GPU
    node ("amd-<hex>"). For the record of a run (which host made which
    baseline run), never for choosing a baseline."""
    out: list[str] = []
    try:
        gpus = sorted((root / "proc/driver/nvidia/gpus").iterdir())
    except OSError:
        gpus = []
    for d in gpus:
        for line in (_read(d / "information") or "").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "GPU UUID" and value.strip():
                out.append(value.strip())
    try:
        nodes = sorted((root / "sys/class/kfd/kfd/topology/nodes").iterdir())
    except OSError:
        nodes = []
    for d in nodes:
        props = _kfd_properties(_read(d / "properties") or "")
        if props.get("simd_count") and props.get("unique_id"):
            out.append(f"amd-{props['unique_id']:x}")
    return out


def current_fingerprint(
    root: Path = Path("/"),
    *,
    release: str | None = None,
    machine: str | None = None,
    cuda_version: Callable[[], str | None] | None = None,
) -> Fingerprint:
    """This machine's fingerprint. root, release, machine and cuda_version
    stand in for /, os.uname() and libcuda in the unit tests."""
    u = os.uname()
    release = u.release if release is None else release
    machine = u.machine if machine is None else machine
    nv_driver = _nvidia_driver(root)
    nv_models = _nvidia_models(root)
    amd_models = _amd_models(root)
    amd_driver = _amd_driver(root, bool(amd_models))
    cuda = (cuda_version or cuda_driver_version)()
    rocm = _rocm_version(root)
    drivers = [d for d in (nv_driver, amd_driver) if d]
    runtimes = [r for r in (f"cuda {cuda}" if cuda else None, rocm) if r]
    return Fingerprint(
        gpu_model=_models(nv_models + amd_models),
        gpus=_counted(nv_models + amd_models),
        driver=", ".join(drivers) or NONE,
        runtime=", ".join(runtimes) or NONE,
        kernel=kernel_series(release),
        arch=machine or NONE,
        cpu_model=_cpu_model(root),
        kernel_release=release or NONE,
    )

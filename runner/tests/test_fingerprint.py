"""fingerprint.py: parsing of the driver files, from fake /proc and /sys trees
holding the text those files hold on real machines, and this machine's own."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from gpuconform.core.fingerprint import (
    Fingerprint,
    cuda_driver_version,
    current_fingerprint,
    gfx_target,
    kernel_series,
)

NV_CLOSED = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 "
             "UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
NV_OPEN = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  "
           "(dvs-builder@U16-I3-B03-4-3)  Fri Aug 16 21:42:42 UTC 2024\n"
           "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")


def nv_info(model: str) -> str:
    return (f"Model: \t\t {model}\nIRQ:   \t\t 86\nGPU UUID: \t GPU-0a1b\n"
            "Video BIOS: \t 96.00.89.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\n")


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def kfd_node(root: Path, n: int, props: dict[str, int], name: str) -> None:
    base = f"sys/class/kfd/kfd/topology/nodes/{n}"
    write(root, f"{base}/properties", "".join(f"{k} {v}\n" for k, v in props.items()))
    write(root, f"{base}/name", name + "\n")


def fp(root: Path, cuda: str | None = None, release: str = "6.1.0-18-amd64") -> Fingerprint:
    return current_fingerprint(root, release=release, machine="x86_64",
                               cuda_version=lambda: cuda)


def test_no_gpu(tmp_path: Path) -> None:
    write(tmp_path, "proc/cpuinfo", "processor\t: 0\nmodel name\t: AMD EPYC 7763 64-Core "
          "Processor\nprocessor\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n")
    f = fp(tmp_path)
    assert (f.gpu_model, f.driver, f.runtime) == ("none", "none", "none")
    assert f.kernel == "6.1" and f.kernel_release == "6.1.0-18-amd64"
    assert f.arch == "x86_64" and f.cpu_model == "AMD EPYC 7763 64-Core Processor"


def test_nvidia_several_gpus(tmp_path: Path) -> None:
    write(tmp_path, "proc/driver/nvidia/version", NV_CLOSED)
    for bus, model in (("0000:1b:00.0", "NVIDIA H100 80GB HBM3"),
                       ("0000:43:00.0", "NVIDIA A100-SXM4-40GB"),
                       ("0000:52:00.0", "NVIDIA H100 80GB HBM3")):
        write(tmp_path, f"proc/driver/nvidia/gpus/{bus}/information", nv_info(model))
    f = fp(tmp_path, cuda="12.4")
    assert f.gpu_model == "NVIDIA A100-SXM4-40GB, NVIDIA H100 80GB HBM3"
    assert f.gpus == "1x NVIDIA A100-SXM4-40GB, 2x NVIDIA H100 80GB HBM3" and f.gpu_count() == 3
    assert f.driver == "nvidia 550.54.15"
    assert f.runtime == "cuda 12.4"


def test_nvidia_open_module_version(tmp_path: Path) -> None:
    write(tmp_path, "proc/driver/nvidia/version", NV_OPEN)
    assert fp(tmp_path).driver == "nvidia 560.35.03"
    assert fp(tmp_path).gpu_model == "none"  # no gpus/ directory: nothing invented


def test_amd(tmp_path: Path) -> None:
    cpu = {"cpu_cores_count": 64, "simd_count": 0, "gfx_target_version": 0}
    mi300 = {"cpu_cores_count": 0, "simd_count": 1216, "gfx_target_version": 90402,
             "vendor_id": 4098, "device_id": 0x74A1}
    mi250 = {"simd_count": 416, "gfx_target_version": 90010, "vendor_id": 4098,
             "device_id": 0x740C}
    kfd_node(tmp_path, 0, cpu, "")
    kfd_node(tmp_path, 1, mi300, "ip discovery")
    kfd_node(tmp_path, 2, mi300, "ip discovery")
    kfd_node(tmp_path, 10, mi250, "aldebaran")
    write(tmp_path, "sys/module/amdgpu/version", "6.7.0\n")
    write(tmp_path, "opt/rocm/.info/version", "6.1.0-82\n")
    f = fp(tmp_path)
    assert f.gpu_model == "AMD gfx90a [0x740c] aldebaran, AMD gfx942 [0x74a1]"
    assert f.gpus == "1x AMD gfx90a [0x740c] aldebaran, 2x AMD gfx942 [0x74a1]"
    assert f.driver == "amdgpu 6.7.0"
    assert f.runtime == "rocm 6.1.0-82"


def test_amd_in_tree_driver(tmp_path: Path) -> None:
    kfd_node(tmp_path, 1, {"simd_count": 64, "gfx_target_version": 110000, "device_id": 0x744C},
             "gfx1100")
    f = fp(tmp_path)
    assert f.gpu_model == "AMD gfx1100 [0x744c]" and f.gpus == "1x AMD gfx1100 [0x744c]"
    assert f.driver == "amdgpu in-tree" and f.runtime == "none"


def test_both_vendors(tmp_path: Path) -> None:
    write(tmp_path, "proc/driver/nvidia/version", NV_CLOSED)
    write(tmp_path, "proc/driver/nvidia/gpus/0000:01:00.0/information", nv_info("NVIDIA L4"))
    kfd_node(tmp_path, 1, {"simd_count": 64, "gfx_target_version": 100300, "device_id": 0x73BF},
             "navi21")
    write(tmp_path, "opt/rocm/.info/version", "6.0.2\n")
    f = fp(tmp_path, cuda="12.2")
    assert f.gpu_model == "AMD gfx1030 [0x73bf] navi21, NVIDIA L4"
    assert f.driver == "nvidia 550.54.15, amdgpu in-tree"
    assert f.runtime == "cuda 12.2, rocm 6.0.2"


@pytest.mark.parametrize("v,name", [(90010, "gfx90a"), (90402, "gfx942"), (90008, "gfx908"),
                                    (110000, "gfx1100"), (100300, "gfx1030"), (90000, "gfx900")])
def test_gfx_target(v: int, name: str) -> None:
    assert gfx_target(v) == name


@pytest.mark.parametrize("release,series", [("6.1.0-18-amd64", "6.1"),
                                            ("5.15.0-105-generic", "5.15"),
                                            ("6.10.3", "6.10"), ("weird", "weird")])
def test_kernel_series(release: str, series: str) -> None:
    assert kernel_series(release) == series


def test_arm_cpu(tmp_path: Path) -> None:
    write(tmp_path, "proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\n"
          "CPU architecture: 8\nCPU part\t: 0xd4f\n")
    assert fp(tmp_path).cpu_model == "arm implementer 0x41 part 0xd4f"


def test_key_is_a_stable_filename(tmp_path: Path) -> None:
    a = Fingerprint("NVIDIA H100 80GB HBM3", "nvidia 550.54.15", "cuda 12.4", "6.1",
                    "x86_64", "AMD EPYC 7763 64-Core Processor", "6.1.0-18-amd64",
                    "2x NVIDIA H100 80GB HBM3")
    k = a.key()
    assert re.fullmatch(r"[A-Za-z0-9._+-]+", k.replace("__", "-")), k
    assert k.startswith("nvidia-h100-80gb-hbm3__nvidia-550.54.15__cuda-12.4__"
                        "linux-6.1__x86_64__")
    # the same machine after a stable kernel update keeps its baseline
    assert Fingerprint(**{**a.to_json(), "kernel_release": "6.1.0-21-amd64"}).key() == k
    # so do a node of another shape and another CPU: one baseline per GPU model,
    # what depends on the node keyed inside it (scope.py)
    assert Fingerprint(**{**a.to_json(), "gpus": "8x NVIDIA H100 80GB HBM3"}).key() == k
    assert Fingerprint(**{**a.to_json(), "cpu_model": "Intel Xeon"}).key() == k
    # another kernel series or GPU model does not
    assert Fingerprint(**{**a.to_json(), "kernel": "6.6"}).key() != k
    assert Fingerprint(**{**a.to_json(), "gpu_model": "NVIDIA H200"}).key() != k
    hostile = Fingerprint("../../" + "x" * 400, "a/b\0c", "?*", "6.1", "x86_64", "cpu")
    hk = hostile.key()
    assert "/" not in hk and "\0" not in hk and len(hk) < 200 and not hk.startswith(".")
    (tmp_path / (hk + ".json")).write_text("{}")  # a name the filesystem takes


def test_json_round_trip() -> None:
    a = Fingerprint("none", "none", "none", "6.1", "x86_64", "cpu", "6.1.0")
    assert Fingerprint.from_json(a.to_json()) == a
    odd = Fingerprint.from_json({"gpu_model": "g", "extra": "ignored", "kernel": 5})
    assert odd.gpu_model == "g" and odd.kernel == "none"
    # written before the node's shape left the model: read as model and node
    old = Fingerprint.from_json({"gpu_model": "1x AMD gfx1030 [0x73bf] navi21, 4x NVIDIA L4"})
    assert old.gpu_model == "AMD gfx1030 [0x73bf] navi21, NVIDIA L4"
    assert old.gpus == "1x AMD gfx1030 [0x73bf] navi21, 4x NVIDIA L4" and old.gpu_count() == 5


def test_this_machine() -> None:
    f = current_fingerprint()
    assert f.kernel == kernel_series(os.uname().release)
    assert f.arch == os.uname().machine
    assert f.key() == current_fingerprint().key()
    v = cuda_driver_version()
    assert v is None or re.fullmatch(r"\d+\.\d+", v)
    if not Path("/proc/driver/nvidia/version").exists() and not Path("/sys/class/kfd").exists():
        assert f.gpu_model == "none"


def test_device_ids_nvidia_and_amd(tmp_path: Path) -> None:
    """Device identities for a run's record: NVIDIA GPU UUIDs, AMD KFD unique ids
    of GPU nodes (CPU nodes have no SIMDs); none on a machine without GPUs."""
    from gpuconform.core.fingerprint import device_ids

    assert device_ids(tmp_path) == []
    g = tmp_path / "proc/driver/nvidia/gpus/0000:01:00.0"
    g.mkdir(parents=True)
    g.joinpath("information").write_text(
        "Model: \t\t NVIDIA H100 80GB HBM3\n"
        "GPU UUID: \t GPU-0123abcd-0000-1111-2222-333344445555\n")
    cpu = tmp_path / "sys/class/kfd/kfd/topology/nodes/0"
    gpu = tmp_path / "sys/class/kfd/kfd/topology/nodes/1"
    cpu.mkdir(parents=True)
    gpu.mkdir(parents=True)
    cpu.joinpath("properties").write_text("simd_count 0\nunique_id 0\n")
    gpu.joinpath("properties").write_text("simd_count 304\nunique_id 5036709208347297025\n")
    assert device_ids(tmp_path) == ["GPU-0123abcd-0000-1111-2222-333344445555",
                                    "amd-45e5fc56e07ac501"]

#!/usr/bin/python3
"""Benchmark (not a test): what each kind of node between two kernels of a CUDA graph costs.

Why: the mixed shape of cuda_bubbles (a memset or a memcpy node between each pair of kernels)
read 55 us on nodes of one H200 and 60-62 us on nodes of 2 and 4 H200s, where the chains and
wide graphs agree (data/baselines/README.md). This takes the shape apart: 16 stamp kernels
(each writes %globaltimer at its start and end) with a memcpy (device to device, 4 KiB), a
memset (4 KiB of 32-bit words) or nothing between each pair, captured from a stream into a
graph, each graph launched 300 times (the first 20 dropped). Per kind of node in between, the
median, p10 and p90 of the gap (a kernel's start minus the previous kernel's end) and the
graph's median time. Needs libcuda.so.1 and numpy, no build; the PTX is for sm_90 (Hopper) and
later. Usage:
    bench/graph_nodes.py [DEVICE_INDEX]
"""
import ctypes as C, sys, json
import numpy as np

PTX = rb"""
.version 7.8
.target sm_90
.address_size 64
.visible .entry stamp(.param .u64 p, .param .u32 i)
{
  .reg .u64 %rd<8>;
  .reg .u32 %r<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [i];
  cvta.to.global.u64 %rd6, %rd1;
  mov.u64 %rd2, %globaltimer;
  mul.wide.u32 %rd3, %r1, 16;
  add.u64 %rd4, %rd6, %rd3;
  st.global.u64 [%rd4], %rd2;
  mov.u64 %rd5, %globaltimer;
  st.global.u64 [%rd4+8], %rd5;
  ret;
}
"""
cu = C.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        s = C.c_char_p(); cu.cuGetErrorString(r, C.byref(s)); sys.exit(f"{what}: {r} {s.value}")
dev = int(sys.argv[1]) if len(sys.argv) > 1 else 0
ck(cu.cuInit(0), "init")
d = C.c_int(); ck(cu.cuDeviceGet(C.byref(d), dev), "devget")
ctx = C.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), d), "retain"); ck(cu.cuCtxSetCurrent(ctx), "set")
mod = C.c_void_p(); ck(cu.cuModuleLoadData(C.byref(mod), C.c_char_p(PTX + b"\0")), "module")
fn = C.c_void_p(); ck(cu.cuModuleGetFunction(C.byref(fn), mod, b"stamp"), "func")
N = 16
stamps = C.c_uint64(); ck(cu.cuMemAlloc_v2(C.byref(stamps), C.c_size_t(N * 16)), "alloc")
scratch = C.c_uint64(); ck(cu.cuMemAlloc_v2(C.byref(scratch), C.c_size_t(1 << 16)), "alloc2")
st = C.c_void_p(); ck(cu.cuStreamCreate(C.byref(st), 1), "stream")
host = (C.c_uint64 * (N * 2))()

def launch(i):
    p = C.c_uint64(stamps.value); idx = C.c_uint32(i)
    args = (C.c_void_p * 2)(C.cast(C.pointer(p), C.c_void_p), C.cast(C.pointer(idx), C.c_void_p))
    ck(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, st, args, None), "launch")

def build(between):
    ck(cu.cuStreamBeginCapture_v2(st, 0), "capture")
    for i in range(N):
        if i and between(i) == "memcpy":
            ck(cu.cuMemcpyDtoDAsync_v2(C.c_uint64(scratch.value + 4096), C.c_uint64(scratch.value), C.c_size_t(4096), st), "memcpy")
        elif i and between(i) == "memset":
            ck(cu.cuMemsetD32Async(C.c_uint64(scratch.value), C.c_uint(0x5a5a5a5a), C.c_size_t(1024), st), "memset")
        launch(i)
    g = C.c_void_p(); ck(cu.cuStreamEndCapture(st, C.byref(g)), "endcapture")
    x = C.c_void_p(); ck(cu.cuGraphInstantiateWithFlags(C.byref(x), g, C.c_ulonglong(0)), "inst")
    return x

shapes = {"chain": lambda i: None, "memcpy": lambda i: "memcpy", "memset": lambda i: "memset",
          "mixed": lambda i: "memset" if i % 2 else "memcpy"}
out = {}
for name, between in shapes.items():
    x = build(between)
    gaps = {"memcpy": [], "memset": [], None: []}; total = []
    for rep in range(300):
        ck(cu.cuGraphLaunch(x, st), "glaunch"); ck(cu.cuStreamSynchronize(st), "sync")
        ck(cu.cuMemcpyDtoH_v2(host, stamps, C.c_size_t(N * 16)), "dtoh")
        if rep < 20:
            continue
        a = np.frombuffer(host, dtype=np.uint64).reshape(N, 2).astype(np.int64)
        total.append(a[N - 1, 1] - a[0, 0])
        for i in range(1, N):
            gaps[between(i)].append(a[i, 0] - a[i - 1, 1])
    line = {k or "kernel": [int(np.median(v)), int(np.percentile(v, 10)), int(np.percentile(v, 90)), len(v)] for k, v in gaps.items() if v}
    out[name] = {"graph_ns_median": int(np.median(total)), "gaps_median_p10_p90_n": line}
    print(f"dev{dev} {name:7s} graph {np.median(total)/1000:.2f} us; gaps (median, p10, p90 ns): {line}", flush=True)
print(json.dumps(out))

/* SPDX-License-Identifier: MIT */
/*
 * hip_bubbles: the HIP half (bubbles_gaps.c: HIP runtime, graphs, gaps;
 * bubbles_prof.c: rocprofiler-sdk kernel-dispatch tracing, and for
 * profiler-sessions HIP runtime API and memory-copy tracing beside it).
 * bubbles.c keeps the fixture and deep-inflight on raw AQL queues.
 *
 * UNVERIFIED ON HARDWARE: built against Debian 12's HIP 5.2.3 headers with no
 * AMD GPU and no rocprofiler-sdk; seen only skipping.
 */
#ifndef GPUCONFORM_HIP_BUBBLES_H
#define GPUCONFORM_HIP_BUBBLES_H

#include <hip/hip_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "gaps.h"
#include "gc_hip.h"
#include "gc_hsa.h"

#define HB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define HB_WORK_NS 1000ull       /* each dispatch spins 1 us of the device clock */
#define HB_MAX_KERNELS 8200u     /* the largest shape: chain8192 */
#define HB_WATCHDOG_S 60         /* a launch not done after this long is a hang */

/*
 * The HIP runtime calls hip_bubbles makes: lib/hip's table entries it needs
 * (Debian 5.2.3's prototypes, unchanged in HIP 6.x headers).
 */
#define HB_HIP_NEEDS(X)                                                                   \
	X(hipRuntimeGetVersion) X(hipGetErrorName) X(hipSetDevice) X(hipModuleLoadData)     \
	X(hipModuleGetFunction) X(hipModuleUnload) X(hipModuleLaunchKernel)                 \
	X(hipStreamCreateWithFlags) X(hipStreamDestroy) X(hipStreamQuery)                   \
	X(hipStreamSynchronize) X(hipMalloc) X(hipFree) X(hipMemsetD32Async)               \
	X(hipMemcpyDtoDAsync) X(hipMemcpyDtoH) X(hipMemcpyDtoHAsync) X(hipMemcpyHtoDAsync) \
	X(hipMemGetInfo)                                                                    \
	X(hipGraphCreate) X(hipGraphDestroy) X(hipGraphAddKernelNode)                       \
	X(hipGraphAddMemsetNode) X(hipGraphAddMemcpyNode1D) X(hipGraphInstantiate)          \
	X(hipGraphExecDestroy) X(hipGraphLaunch) X(hipGraphExecKernelNodeSetParams)

struct hb_prof; /* bubbles_prof.c */

struct hb {
	struct gc_hsa *hsa;  /* the fixture's ROCr: s_memrealtime rate, the code object bytes */
	struct gc_hip *hip;  /* the HIP runtime (lib/hip's table), once hb_require() loaded it */
	bool open;
	hipModule_t mod;
	hipFunction_t stamp;
	hipStream_t s;
	void *stamps, *counts, *scratch; /* device memory */
	struct gc_gap_run host; /* the host copy of the last run's stamps (ticks) and counts */
	struct gc_gap_dev dev;  /* how lib/gaps launches a shape here: hb_run_graph / _stream */
	uint64_t hz;           /* s_memrealtime ticks per second */
	uint64_t work_ticks;   /* HB_WORK_NS in ticks */
	unsigned launches;     /* per shape: $GPUCONFORM_BUBBLES_LAUNCHES, default 1000 */
	struct hb_prof *prof;  /* NULL: rocprofiler-sdk not registered in this process */
	char prof_why[384];    /* why not */
};

/* Open HIP (once per process) and set up b, or skip / fail saying why. */
void hb_require(struct hb *b);
void hb_close(struct hb *b);

/* A built graph: its kernel nodes in idx order. */
struct hb_graph {
	hipGraph_t g;
	hipGraphExec_t x;
	hipGraphNode_t *nodes;
	unsigned n;
};
void hb_graph_build(struct hb *b, const struct gc_shape *sh, struct hb_graph *gr);
void hb_graph_free(struct hb *b, struct hb_graph *gr);

/* Zero the counts, launch, wait (watchdog), fetch stamps and counts, check each ran once. */
void hb_run_graph(struct hb *b, const struct gc_shape *sh, struct hb_graph *gr);
void hb_run_stream(struct hb *b, const struct gc_shape *sh);
void hb_wait(struct hb *b, unsigned n, const char *what);
/* One gc_stamp dispatch of slot idx on b->s (hipModuleLaunchKernel). */
void hb_launch_stamp(struct hb *b, unsigned idx);
unsigned hb_done_count(struct hb *b, unsigned n);

/* bubbles_gaps.c */
void hb_test_gaps(struct hb *b);
void hb_test_launch_gap(struct hb *b);

/*
 * bubbles_prof.c. hb_prof_register() must run before ROCr initialises (it
 * is called from the fixture, before hsa_init): in a process whose first
 * subtest is traced-concurrent, trace-leak or attach-detach, or in a plan's
 * process of profiler-sessions (gc_sess_plan_env() set), never in
 * profiler-sessions' own process (the plans' fresh reference). It leaves
 * b->prof NULL and the reason in b->prof_why when it does not register.
 */
void hb_prof_register(struct hb *b, const char *first_subtest);
void hb_test_traced_concurrent(struct hb *b);
void hb_test_traced_serialized(struct hb *b);
void hb_test_trace_leak(struct hb *b);
void hb_test_attach_detach(struct hb *b);
/*
 * deep(deep_ctx): the deep queue, run inside each session of a plan's
 * process (bubbles.c owns its AQL queue).
 */
void hb_test_profiler_sessions(struct hb *b, void (*deep)(void *), void *deep_ctx);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * cuda_bubbles: shared pieces. A shape (`struct gc_shape`) is a set of
 * gc_stamp dispatches with dependencies (a chain, a wide fan-out joined at the
 * end, a chain with memset / memcpy nodes between its kernels); each dispatch
 * stamps the device clock (%globaltimer, ns) at its start and end into
 * stamps[2 * idx] and counts itself in counts[idx]. The gap of a dependency
 * a -> b is b's start minus a's end: measured on the device, with no
 * profiler involved.
 */
#ifndef GPUCONFORM_BUBBLES_H
#define GPUCONFORM_BUBBLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "gaps.h"
#include "gc_cuda.h"
#include "gc_cupti.h"

#define BX_WORK_NS 1000ull       /* each dispatch spins 1 us on the device clock (default) */
#define BX_MAX_KERNELS 8200u     /* the largest shape: chain8192 */

struct bx {
	struct gc_cuda *cu;
	struct gc_cu_kernels k;
	CUstream s;
	CUdeviceptr stamps, counts, scratch; /* scratch: memset / memcpy nodes of mixed */
	struct gc_gap_run host; /* the host copy of the stamps (ns) and counts of the last run */
	struct gc_gap_dev dev;  /* how lib/gaps launches a shape here: bx_run_graph / _stream */
	uint32_t *probe;     /* pinned: counts read while the work may still be running */
	unsigned launches;   /* per shape ($GPUCONFORM_BUBBLES_LAUNCHES, default 1000) */
	/*
	 * Each dispatch's spin, ns: BX_WORK_NS, or $GPUCONFORM_BUBBLES_WORK_NS, which only
	 * bench/gpu_detection_power.py sets: it lengthens the work to slow the graphs' times
	 * by a known fraction and measures whether the baseline's gate notices.
	 */
	unsigned long long work_ns;
};

/* A built graph: its kernel nodes in idx order (for CUPTI node ids). */
struct bx_graph {
	CUgraph g;
	CUgraphExec x;
	CUgraphNode *nodes;
	unsigned n;
};

/* One block of GC_CU_BLOCK threads running f(args): how every bubbles dispatch is made. */
CUDA_KERNEL_NODE_PARAMS bx_kernel_params(CUfunction f, void **args);
/* A gc_stamp node (b->work_ns of work) stamping slot idx, after deps[0..ndeps). */
CUgraphNode bx_add_stamp(struct bx *b, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			 unsigned idx);

void bx_graph_build(struct bx *b, const struct gc_shape *sh, struct bx_graph *gr);
void bx_graph_free(struct bx *b, struct bx_graph *gr);

/* Launch the shape's dispatches one by one on the stream (chain and mixed only). */
void bx_stream_launch(struct bx *b, const struct gc_shape *sh);

/* Zero the counts, run, wait, copy stamps and counts back, check each ran exactly once. */
void bx_run_graph(struct bx *b, const struct gc_shape *sh, struct bx_graph *gr);
void bx_run_stream(struct bx *b, const struct gc_shape *sh);

/* Watchdog: a launch that has not finished after this many seconds is a hang. */
#define BX_WATCHDOG_S 60
/*
 * How many of the first n dispatches have counted themselves, read on a
 * stream of its own while the work may still run; BX_DONE_UNKNOWN when that
 * read itself did not complete within 2 s (a profiler that serializes every
 * operation of the context holds it behind the running work).
 */
#define BX_DONE_UNKNOWN UINT32_MAX
unsigned bx_done_count(struct bx *b, unsigned n);
/* `N of M kernels done`, or says that the count could not be read. */
const char *bx_done_str(struct bx *b, unsigned n, char *buf, size_t len);
void bx_wait(struct bx *b, unsigned n, const char *what);

/* CUPTI up or skip naming why; tracing of one kind on or off, or fail. */
void bx_cupti_up(struct gc_cupti *c);
void bx_cupti_switch(struct gc_cupti *c, CUpti_ActivityKind kind, bool on);
/* Drop one record on purpose when GPUCONFORM_BUBBLES_REMOVE=record. */
void bx_remove_record(struct gc_cupti_take *t);

/*
 * The deep queue (bubbles_deep.c): a gate kernel spinning on a host-mapped
 * flag, one stamped dispatch right after it and thousands behind that one.
 */
struct bx_deep {
	struct bx *b;
	volatile uint32_t *flag;
	CUdeviceptr flag_dev, result;
};
void bx_deep_open(struct bx *b, struct bx_deep *d);
void bx_deep_close(struct bx_deep *d);
/*
 * Queue it, hold it 200 ms, open the gate; every dispatch ran once, none
 * before the gate opened, in order. A kind other than
 * CUPTI_ACTIVITY_KIND_INVALID is switched on for the launch and off after
 * it (c's); INVALID leaves tracing as it is. Returns the kernel dispatches
 * it made (the gate's included).
 */
unsigned bx_deep_run(struct bx_deep *d, struct gc_cupti *c, CUpti_ActivityKind kind);

/* tests/cuda/bubbles_trace.c */
void test_traced_concurrent(void *data);
void test_traced_serialized(void *data);
void test_trace_leak(void *data);
void test_attach_detach(void *data);
void test_profiler_sessions(void *data);
/* tests/cuda/bubbles_deep.c */
void test_deep_inflight(void *data);

#endif

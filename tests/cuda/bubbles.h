/* SPDX-License-Identifier: MIT */
/*
 * cuda_bubbles: shared pieces. A "shape" is a set of gc_stamp dispatches
 * with dependencies (a chain, a wide fan-out joined at the end, a chain with
 * memset / memcpy nodes between its kernels); each dispatch stamps the device
 * clock (%globaltimer, ns) at its start and end into stamps[2 * idx] and
 * counts itself in counts[idx]. The gap of a dependency a -> b is b's start
 * minus a's end: measured on the device, with no profiler involved.
 */
#ifndef GPUCONFORM_BUBBLES_H
#define GPUCONFORM_BUBBLES_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "gc_cuda.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BX_WORK_NS 1000ull       /* each dispatch spins 1 us on the device clock */
#define BX_MAX_KERNELS 8200u     /* the largest shape: chain8192 */
#define BX_METRIC_SAMPLES 10000u /* gaps written as metric samples: an even subsample */
/* A bubble is a gap over this multiple of the shape's median gap (see bx_stats). */
#define BX_BUBBLE_FACTOR 4.0

enum bx_kind { BX_CHAIN, BX_WIDE, BX_MIXED };

struct bx_shape {
	const char *name;
	enum bx_kind kind;
	unsigned n;     /* chain: length; wide: branches; mixed: kernels */
	unsigned kernels; /* dispatches of gc_stamp it makes */
};

extern const struct bx_shape bx_shapes[];
extern const unsigned bx_n_shapes;
const struct bx_shape *bx_shape(const char *name);

struct bx {
	struct gc_cuda *cu;
	struct gc_cu_kernels k;
	CUstream s;
	CUdeviceptr stamps, counts, scratch; /* scratch: memset / memcpy nodes of mixed */
	uint64_t *h_stamps;
	uint32_t *h_counts;
	unsigned launches;   /* per shape ($GPUCONFORM_BUBBLES_LAUNCHES, default 1000) */
};

/* A built graph: its kernel nodes in idx order (for CUPTI node ids). */
struct bx_graph {
	CUgraph g;
	CUgraphExec x;
	CUgraphNode *nodes;
	unsigned n;
};

void bx_graph_build(struct bx *b, const struct bx_shape *sh, struct bx_graph *gr);
void bx_graph_free(struct bx *b, struct bx_graph *gr);

/* Launch the shape's dispatches one by one on the stream (chain and mixed only). */
void bx_stream_launch(struct bx *b, const struct bx_shape *sh);

/* Zero the counts, run, wait, copy stamps and counts back, check each ran exactly once. */
void bx_run_graph(struct bx *b, const struct bx_shape *sh, struct bx_graph *gr);
void bx_run_stream(struct bx *b, const struct bx_shape *sh);

/* Gap samples of one run of sh (from b->h_stamps), appended; fails on a negative gap. */
struct bx_gaps {
	double *v;
	size_t n, cap;
	double span_us_sum; /* device span of each run, summed */
	double *span_us;    /* one per run */
	size_t runs, runs_cap;
};
void bx_gaps_add_run(struct bx *b, const struct bx_shape *sh, struct bx_gaps *g);
void bx_gaps_free(struct bx_gaps *g);

struct bx_stats {
	double p50, p99, max;
	uint64_t bubbles;
	size_t n;
	double span_us; /* mean device span of one run */
};
/* Statistics and metrics gap.MODE.SHAPE, gap-p50/p99/max, bubbles, graph-time. */
struct bx_stats bx_report(const struct bx_gaps *g, const char *mode, const char *shape);

/* Watchdog: a launch that has not finished after this many seconds is a hang. */
#define BX_WATCHDOG_S 60
unsigned bx_done_count(struct bx *b, unsigned n);
void bx_wait(struct bx *b, unsigned n, const char *what);

/* GPUCONFORM_BUBBLES_REMOVE names what (stamp, record) to remove on purpose. */
bool bx_remove(const char *what);

/* Every dispatch of the last run counted exactly once, else fail naming the first that was not. */
void bx_expect_counts(struct bx *b, unsigned n, const char *what);

/* tests/cuda/bubbles_trace.c */
void test_traced_concurrent(void *data);
void test_traced_serialized(void *data);
void test_trace_leak(void *data);
void test_attach_detach(void *data);
void test_deep_inflight(void *data);

#endif

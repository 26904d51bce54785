// SPDX-License-Identifier: MIT
/*
 * cuda_bubbles: the bubbles contract on CUDA graphs. Kernels dispatched from
 * a graph run back to back: the gap between dependent kernels is measured on
 * the device by the kernels themselves (gc_stamp), for stream launches and
 * graph launches of the same work, and with a profiler (CUPTI) tracing in
 * concurrent and serialized mode (bubbles_trace.c). Every dispatch must run
 * exactly once (a count of 0 is a lost dispatch, 2 a replayed one), every gap
 * must be >= 0 (a negative one means the device clock went backwards or the
 * dependency was not honoured), and the profiler must see every dispatch.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bubbles.h"
#include "measure.h"

/* ------------------------------------------------------------- graphs */

CUDA_KERNEL_NODE_PARAMS bx_kernel_params(CUfunction f, void **args)
{
	CUDA_KERNEL_NODE_PARAMS p;

	memset(&p, 0, sizeof(p));
	p.func = f;
	p.gridDimX = p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = GC_CU_BLOCK, p.blockDimY = p.blockDimZ = 1;
	p.kernelParams = args;
	return p;
}

CUgraphNode bx_add_stamp(struct bx *b, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			 unsigned idx)
{
	unsigned long long work = b->work_ns;
	unsigned int i = idx;
	void *args[] = { &b->stamps, &b->counts, &i, &work };
	CUDA_KERNEL_NODE_PARAMS p = bx_kernel_params(b->k.stamp, args);
	CUgraphNode n;

	gc_cu_assert(b->cu, b->cu->cuGraphAddKernelNode(&n, g, deps, ndeps, &p));
	return n;
}

static CUgraphNode add_memset(struct bx *b, CUgraph g, CUgraphNode dep)
{
	CUDA_MEMSET_NODE_PARAMS p = { .dst = b->scratch, .value = 0x5a5a5a5a, .elementSize = 4,
				      .width = 1024, .height = 1 };
	CUgraphNode n;

	gc_cu_assert(b->cu, b->cu->cuGraphAddMemsetNode(&n, g, &dep, 1, &p,
							b->cu->devices[0].ctx));
	return n;
}

static CUgraphNode add_memcpy(struct bx *b, CUgraph g, CUgraphNode dep)
{
	CUDA_MEMCPY3D p;
	CUgraphNode n;

	memset(&p, 0, sizeof(p));
	p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p.srcDevice = b->scratch, p.dstDevice = b->scratch + 4096;
	p.WidthInBytes = 4096, p.Height = 1, p.Depth = 1;
	gc_cu_assert(b->cu, b->cu->cuGraphAddMemcpyNode(&n, g, &dep, 1, &p,
							b->cu->devices[0].ctx));
	return n;
}

void bx_graph_build(struct bx *b, const struct gc_shape *sh, struct bx_graph *gr)
{
	CUgraphNode prev = NULL;

	memset(gr, 0, sizeof(*gr));
	gr->n = sh->kernels;
	gr->nodes = calloc(gr->n, sizeof(*gr->nodes));
	gc_assert(gr->nodes);
	gc_cu_assert(b->cu, b->cu->cuGraphCreate(&gr->g, 0));
	if (sh->kind == GC_SHAPE_WIDE) {
		gr->nodes[0] = bx_add_stamp(b, gr->g, NULL, 0, 0);
		for (unsigned i = 1; i <= sh->n; i++)
			gr->nodes[i] = bx_add_stamp(b, gr->g, &gr->nodes[0], 1, i);
		gr->nodes[sh->n + 1] = bx_add_stamp(b, gr->g, &gr->nodes[1], sh->n, sh->n + 1);
	} else {
		for (unsigned i = 0; i < sh->n; i++) {
			if (prev && sh->kind == GC_SHAPE_MIXED)
				prev = i % 2 ? add_memset(b, gr->g, prev) : add_memcpy(b, gr->g, prev);
			gr->nodes[i] = bx_add_stamp(b, gr->g, prev ? &prev : NULL, prev ? 1 : 0, i);
			prev = gr->nodes[i];
		}
	}
	gc_cu_assert(b->cu, b->cu->cuGraphInstantiate(&gr->x, gr->g, 0));
}

void bx_graph_free(struct bx *b, struct bx_graph *gr)
{
	if (gr->x)
		b->cu->cuGraphExecDestroy(gr->x);
	if (gr->g)
		b->cu->cuGraphDestroy(gr->g);
	free(gr->nodes);
	memset(gr, 0, sizeof(*gr));
}

/* ------------------------------------------------------------- runs */

static void launch_stamp(struct bx *b, unsigned idx)
{
	unsigned long long work = b->work_ns;
	unsigned int i = idx;
	void *args[] = { &b->stamps, &b->counts, &i, &work };

	gc_cu_assert(b->cu, b->cu->cuLaunchKernel(b->k.stamp, 1, 1, 1, GC_CU_BLOCK, 1, 1, 0, b->s,
						   args, NULL));
}

void bx_stream_launch(struct bx *b, const struct gc_shape *sh)
{
	for (unsigned i = 0; i < sh->n; i++) {
		if (i && sh->kind == GC_SHAPE_MIXED)
			gc_cu_assert(b->cu, i % 2 ? b->cu->cuMemsetD32Async(b->scratch, 0x5a5a5a5a,
									  1024, b->s) :
						    b->cu->cuMemcpyDtoDAsync(b->scratch + 4096,
									     b->scratch, 4096, b->s));
		launch_stamp(b, i);
	}
}

unsigned bx_done_count(struct bx *b, unsigned n)
{
	unsigned done = 0;
	bool read = false;
	CUstream s;

	memset(b->probe, 0xff, (size_t)n * 4);
	gc_cu_assert(b->cu, b->cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	gc_cu_assert(b->cu, b->cu->cuMemcpyDtoHAsync(b->probe, b->counts, (size_t)n * 4, s));
	for (int i = 0; i < 2000 && !read; i++) {
		read = b->cu->cuStreamQuery(s) == CUDA_SUCCESS;
		if (!read)
			usleep(1000);
	}
	b->cu->cuStreamDestroy(s);
	for (unsigned i = 0; i < n && read; i++)
		done += b->probe[i] != 0;
	return read ? done : BX_DONE_UNKNOWN;
}

const char *bx_done_str(struct bx *b, unsigned n, char *buf, size_t len)
{
	unsigned done = bx_done_count(b, n);

	if (done == BX_DONE_UNKNOWN)
		snprintf(buf, len, "an unknown number of %u kernels done (reading the counts did not "
			 "complete within 2 s)", n);
	else
		snprintf(buf, len, "%u of %u kernels done", done, n);
	return buf;
}

/*
 * Wait for the stream with a watchdog: a dispatch that never starts fails the
 * subtest with `hang: N of M kernels done` after BX_WATCHDOG_S, instead of
 * waiting for the runner's timeout.
 */
void bx_wait(struct bx *b, unsigned n, const char *what)
{
	uint64_t deadline = gc_now_ns() + BX_WATCHDOG_S * 1000000000ull;
	char done[160];
	CUresult r;

	while ((r = b->cu->cuStreamQuery(b->s)) == CUDA_ERROR_NOT_READY) {
		if (gc_now_ns() > deadline)
			gc_fail("hang: %s %d s after %s was launched",
				bx_done_str(b, n, done, sizeof(done)), BX_WATCHDOG_S, what);
		usleep(100);
	}
	gc_cu_assert(b->cu, r);
}

static void fetch(struct bx *b, unsigned n)
{
	bx_wait(b, n, "the work");
	gc_cu_assert(b->cu, b->cu->cuMemcpyDtoH(b->host.stamps, b->stamps, 2 * (size_t)n * 8));
	gc_cu_assert(b->cu, b->cu->cuMemcpyDtoH(b->host.counts, b->counts, (size_t)n * 4));
}

void bx_run_graph(struct bx *b, const struct gc_shape *sh, struct bx_graph *gr)
{
	gc_cu_assert(b->cu, b->cu->cuMemsetD32Async(b->counts, 0, sh->kernels, b->s));
	gc_cu_assert(b->cu, b->cu->cuGraphLaunch(gr->x, b->s));
	fetch(b, sh->kernels);
	gc_gap_expect_launch(&b->host, sh, true);
}

void bx_run_stream(struct bx *b, const struct gc_shape *sh)
{
	gc_cu_assert(b->cu, b->cu->cuMemsetD32Async(b->counts, 0, sh->kernels, b->s));
	bx_stream_launch(b, sh);
	fetch(b, sh->kernels);
	gc_gap_expect_launch(&b->host, sh, false);
}

GC_GAP_OPS(gap_ops, struct bx, struct bx_graph, bx_graph_build, bx_graph_free, bx_run_graph,
	   bx_run_stream);

/* ------------------------------------------------------------- subtests */

/*
 * gaps: per shape, graph launches (and stream launches of the same work for
 * chains and mixed), each launched b->launches times: every dispatch ran
 * exactly once per launch, every gap >= 0; p50 / p99 / max and bubbles as
 * metrics for the runner's baselines.
 */
static void test_gaps(void *data)
{
	struct bx *b = data;

	gc_gaps_cases(&b->dev, b->launches);
}

/*
 * launch-gap: consecutive launches of one chain2 graph, queued back to back
 * without waiting: the gap from the last kernel of launch i to the first of
 * launch i + 1. Each launch stamps its own slots (its kernel nodes' idx set
 * with cuGraphExecKernelNodeSetParams before it is launched).
 */
static void test_launch_gap(void *data)
{
	struct bx *b = data;
	const struct gc_shape *sh = gc_shape_get("chain2");
	unsigned n = b->launches < BX_MAX_KERNELS / 2 ? b->launches : BX_MAX_KERNELS / 2;
	unsigned long long work = b->work_ns;
	struct bx_graph gr;

	bx_graph_build(b, sh, &gr);
	gc_cu_assert(b->cu, b->cu->cuMemsetD32Async(b->counts, 0, 2 * n, b->s));
	for (unsigned l = 0; l < n; l++)
		for (unsigned k = 0; k < 2; k++) {
			unsigned int idx = 2 * l + k;
			void *args[] = { &b->stamps, &b->counts, &idx, &work };
			CUDA_KERNEL_NODE_PARAMS p = bx_kernel_params(b->k.stamp, args);

			gc_cu_assert(b->cu, b->cu->cuGraphExecKernelNodeSetParams(gr.x, gr.nodes[k],
										   &p));
			if (k == 1)
				gc_cu_assert(b->cu, b->cu->cuGraphLaunch(gr.x, b->s));
		}
	fetch(b, 2 * n);
	gc_gaps_launch_gap(&b->host, n);
	bx_graph_free(b, &gr);
}

/* -------------------------------------------------------------- fixture */

static void *bx_setup(void)
{
	struct bx *b = calloc(1, sizeof(*b));
	const char *env = getenv("GPUCONFORM_BUBBLES_LAUNCHES");
	char why[512];

	gc_assert(b);
	b->launches = env && *env ? (unsigned)strtoul(env, NULL, 10) : 1000;
	gc_assert_f(b->launches > 0, "GPUCONFORM_BUBBLES_LAUNCHES=%s: not a positive count", env);
	env = getenv("GPUCONFORM_BUBBLES_WORK_NS");
	b->work_ns = env && *env ? strtoull(env, NULL, 10) : BX_WORK_NS;
	gc_assert_f(b->work_ns > 0 && b->work_ns < 1000000, "GPUCONFORM_BUBBLES_WORK_NS=%s: not a "
		    "count of ns in (0, 1e6)", env);
	if (b->work_ns != BX_WORK_NS)
		gc_warn("each dispatch spins %llu ns, not %llu: GPUCONFORM_BUBBLES_WORK_NS is set "
			"(a benchmark's slowdown; its figures are not this machine's)",
			b->work_ns, BX_WORK_NS);
	b->cu = gc_cuda_require();
	if (gc_cu_kernels_load(b->cu, &b->k, why, sizeof(why)) != CUDA_SUCCESS)
		gc_fail("%s", why);
	gc_assert_f(b->k.stamp && b->k.gate, "gc_stamp or gc_gate missing from "
		    "data/kernels/gpuconform.ptx: run scripts/build-kernels.sh");
	gc_cu_assert(b->cu, b->cu->cuStreamCreate(&b->s, CU_STREAM_NON_BLOCKING));
	gc_cu_assert(b->cu, b->cu->cuMemAlloc(&b->stamps, 2 * (size_t)BX_MAX_KERNELS * 8));
	gc_cu_assert(b->cu, b->cu->cuMemAlloc(&b->counts, (size_t)BX_MAX_KERNELS * 4));
	gc_cu_assert(b->cu, b->cu->cuMemAlloc(&b->scratch, 8192));
	b->host.stamps = calloc(2 * (size_t)BX_MAX_KERNELS, 8);
	b->host.counts = calloc(BX_MAX_KERNELS, 4);
	b->host.hz = GC_GAP_NS_HZ; /* %globaltimer */
	gc_assert(b->host.stamps && b->host.counts);
	b->dev = (struct gc_gap_dev){ &gap_ops, b, &b->host };
	gc_cu_assert(b->cu, b->cu->cuMemHostAlloc((void **)&b->probe, BX_MAX_KERNELS * 4, 0));
	return b;
}

static void bx_teardown(void *data)
{
	struct bx *b = data;

	b->cu->cuMemFree(b->stamps);
	b->cu->cuMemFree(b->counts);
	b->cu->cuMemFree(b->scratch);
	b->cu->cuStreamDestroy(b->s);
	b->cu->cuMemFreeHost(b->probe);
	gc_cu_kernels_unload(b->cu, &b->k);
	gc_cuda_close(b->cu);
	free(b->host.stamps);
	free(b->host.counts);
	free(b);
}

static const struct gc_fixture fixture = { .setup = bx_setup, .teardown = bx_teardown };

static const struct gc_subtest subtests[] = {
	{ "gaps", test_gaps, "gaps between dependent kernels per shape, stream vs graph launches" },
	{ "launch-gap", test_launch_gap, "the gap between consecutive launches of one graph" },
	{ "traced-concurrent", test_traced_concurrent,
	  "CUPTI concurrent kernel tracing: one record per dispatch, bracketing its stamps; overhead" },
	{ "traced-serialized", test_traced_serialized,
	  "CUPTI serialized kernel tracing: the same checks; concurrency lost, overhead" },
	{ "trace-leak", test_trace_leak,
	  "100,000 traced dispatches give back host memory, device memory and fds" },
	{ "attach-detach", test_attach_detach,
	  "tracing switched on and off (a soak: 100 times at standard) while graphs launch; "
	  "what stays after detach" },
	{ "deep-inflight", test_deep_inflight,
	  "more than 4096 dispatches queued behind a gate kernel, then released" },
	{ "profiler-sessions", test_profiler_sessions,
	  "tracing sessions in sequence, both modes, both orders: each detach restores the cost" },
	{ 0 }
};

static const char *const soaks[] = { "attach-detach", NULL };

GC_MAIN(.name = "cuda_bubbles",
	.description = "graph dispatch gaps measured on the device, with and without CUPTI",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks,
	.placement = GC_PLACE_GPU)

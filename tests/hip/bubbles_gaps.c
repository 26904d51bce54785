// SPDX-License-Identifier: MIT
/*
 * hip_bubbles: gaps between dependent kernels, HIP stream launches vs HIP
 * graph launches of the same work (the AMD half of cuda_bubbles' gaps and
 * launch-gap; same subtest and metric names).
 *
 * UNVERIFIED ON HARDWARE: built against Debian 12's HIP 5.2.3 headers with no
 * AMD GPU; seen only skipping.
 *
 * `graph` is a HIP graph: hipGraphCreate, one hipGraphAddKernelNode per
 * gc_stamp dispatch (hipMemsetNode / hipMemcpyNode1D between them for
 * `mixed`), hipGraphInstantiate once, hipGraphLaunch per launch. HIP graphs,
 * because that is where the seed's rocprofiler-sdk
 * failures were (graph kernel-trace runs that crashed or emitted nothing, wide
 * graphs the hard case); a hand-built AQL graph on a raw HSA queue would
 * measure the packet processor alone and miss HIP's graph executor, which is
 * the code under test. The kernel is the code object's gc_stamp, loaded with
 * hipModuleLoadData from the same data/kernels/gpuconform.<gfx>.hsaco bytes
 * gc_hsa loaded; the node's `func` is that hipFunction_t: the HIP runtime
 * (clr, hip_graph_internal.hpp, hipGraphKernelNode::getFunc) takes a func it
 * does not know as a host stub to be a hipFunction_t. Node arguments go by
 * kernelParams (the graph node copies them by the kernel's signature);
 * stream launches pass them by `extra` (HIP_LAUNCH_PARAM_BUFFER_POINTER),
 * because Debian 5.2.3's hip_runtime_api.h says of hipModuleLaunchKernel:
 * "@warning kernellParams argument is not yet implemented in HIP. Please use
 * extra instead." [src ROCm/HIP include/hip/hip_runtime_api.h @ rocm-5.2.3].
 * `stream` is hipModuleLaunchKernel back to back on one non-blocking stream.
 *
 * libamdhip64 is lib/hip's runtime (gc_hip_load(): dlopen'd, libamdhip64.so,
 * .so.7, .so.6, .so.5, never linked, for the reason lib/hip/gc_hip.h gives):
 * the binary starts without ROCm, or with a ROCm whose soname is not
 * Debian's, and skips with the loader's words. It shares the fixture's ROCr
 * (libhsa-runtime64.so.1; hsa_init is reference counted).
 *
 * Clock: gc_stamp stamps s_memrealtime. HIP documents its rate as
 * hipDeviceAttributeWallClockRate ("Constant frequency of wall clock in
 * kilohertz." [src ROCm/HIP include/hip/hip_runtime_api.h @ rocm-6.2.2]),
 * which the HIP runtime (ROCclr rocdevice.cpp) fills from
 * HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY / 1000; gc_hsa reads that same HSA
 * attribute in Hz (Debian's 5.2.3 HIP header has no WallClockRate
 * enumerator to ask for). When ROCr does not answer it, a subtest that needs
 * nanoseconds fails saying so: no rate is guessed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bubbles_hip.h"
#include "measure.h"

/* ------------------------------------------------------------- loading */

static void hb_load(struct hb *b)
{
	static const enum gc_hip_entry needs[] = { HB_HIP_NEEDS(GC_HIP_ENTRY) };
	char why[512];
	int err = gc_hip_load(&b->hip, needs, ARRAY_SIZE(needs), NULL, why, sizeof(why));

	if (err == -ENOENT)
		gc_skip("HIP runtime not loadable: %s", why);
	if (err == -ENOSYS)
		gc_skip("%s; HIP graphs need HIP >= 5.2", why);
	if (err)
		gc_fail("HIP runtime: out of host memory");
}

static void hb_alloc(struct hb *b)
{
	gc_hip_assert(b->hip, b->hip->hipSetDevice(0));
	gc_hip_assert(b->hip, b->hip->hipModuleLoadData(&b->mod, b->hsa->code));
	gc_hip_assert(b->hip, b->hip->hipModuleGetFunction(&b->stamp, b->mod, "gc_stamp"));
	gc_hip_assert(b->hip, b->hip->hipStreamCreateWithFlags(&b->s, hipStreamNonBlocking));
	gc_hip_assert(b->hip, b->hip->hipMalloc(&b->stamps, 2 * (size_t)HB_MAX_KERNELS * 8));
	gc_hip_assert(b->hip, b->hip->hipMalloc(&b->counts, (size_t)HB_MAX_KERNELS * 4));
	gc_hip_assert(b->hip, b->hip->hipMalloc(&b->scratch, 8192));
	b->host.stamps = calloc(2 * (size_t)HB_MAX_KERNELS, 8);
	b->host.counts = calloc(HB_MAX_KERNELS, 4);
	gc_assert_f(b->host.stamps && b->host.counts, "out of host memory");
}

GC_GAP_OPS(gap_ops, struct hb, struct hb_graph, hb_graph_build, hb_graph_free, hb_run_graph,
	   hb_run_stream);

/*
 * The first HIP subtest of the process opens the runtime; every HIP
 * subtest needs the s_memrealtime rate (see the top comment).
 */
void hb_require(struct hb *b)
{
	const char *env = getenv("GPUCONFORM_BUBBLES_LAUNCHES");

	b->launches = env && *env ? (unsigned)strtoul(env, NULL, 10) : 1000;
	gc_assert_f(b->launches > 0, "GPUCONFORM_BUBBLES_LAUNCHES=%s: not a positive count", env);
	if (!b->open) {
		hb_load(b);
		b->open = true;
		hb_alloc(b);
		gc_info("HIP runtime %d (%s) on %s", b->hip->runtime_version, b->hip->soname,
			b->hsa->gpu_name);
	}
	b->hz = b->hsa->gpu_ts_hz;
	if (!b->hz)
		gc_fail("no s_memrealtime rate: ROCr does not answer HSA_AMD_AGENT_INFO_TIMESTAMP_"
			"FREQUENCY (the source of hipDeviceAttributeWallClockRate; ROCm >= 6.1), so "
			"device ticks cannot be turned into ns; no rate is guessed");
	b->work_ticks = (HB_WORK_NS * b->hz + 999999999ull) / 1000000000ull;
	b->host.hz = b->hz;
	b->dev = (struct gc_gap_dev){ &gap_ops, b, &b->host };
}

void hb_close(struct hb *b)
{
	if (b->open) {
		b->hip->hipStreamSynchronize(b->s);
		b->hip->hipFree(b->stamps);
		b->hip->hipFree(b->counts);
		b->hip->hipFree(b->scratch);
		b->hip->hipStreamDestroy(b->s);
		b->hip->hipModuleUnload(b->mod);
	}
	free(b->host.stamps);
	free(b->host.counts);
	b->host.stamps = NULL;
	b->host.counts = NULL;
	b->open = false;
	/* The library stays mapped: the HIP runtime's threads may still be unwinding. */
	gc_hip_close(b->hip);
	b->hip = NULL;
}

/* ------------------------------------------------------------- graphs */

/* One block of GC_HSA_BLOCK threads running gc_stamp(args): every stamp node's parameters. */
static hipKernelNodeParams stamp_params(const struct hb *b, void **args)
{
	hipKernelNodeParams p;

	memset(&p, 0, sizeof(p));
	p.func = (void *)b->stamp;
	p.gridDim.x = p.gridDim.y = p.gridDim.z = 1;
	p.blockDim.x = GC_HSA_BLOCK, p.blockDim.y = p.blockDim.z = 1;
	p.kernelParams = args;
	return p;
}

static hipGraphNode_t add_stamp(struct hb *b, hipGraph_t g, const hipGraphNode_t *deps,
				size_t ndeps, unsigned idx)
{
	unsigned int i = idx;
	uint64_t work = b->work_ticks;
	void *args[] = { &b->stamps, &b->counts, &i, &work };
	hipKernelNodeParams p = stamp_params(b, args);
	hipGraphNode_t n;

	gc_hip_assert(b->hip, b->hip->hipGraphAddKernelNode(&n, g, deps, ndeps, &p));
	return n;
}

static hipGraphNode_t add_memset(struct hb *b, hipGraph_t g, hipGraphNode_t dep)
{
	hipMemsetParams p;
	hipGraphNode_t n;

	memset(&p, 0, sizeof(p));
	p.dst = b->scratch, p.elementSize = 4, p.value = 0x5a5a5a5a, p.width = 1024, p.height = 1;
	gc_hip_assert(b->hip, b->hip->hipGraphAddMemsetNode(&n, g, &dep, 1, &p));
	return n;
}

static hipGraphNode_t add_memcpy(struct hb *b, hipGraph_t g, hipGraphNode_t dep)
{
	hipGraphNode_t n;

	gc_hip_assert(b->hip, b->hip->hipGraphAddMemcpyNode1D(&n, g, &dep, 1,
							      (char *)b->scratch + 4096, b->scratch,
							      4096, hipMemcpyDeviceToDevice));
	return n;
}

void hb_graph_build(struct hb *b, const struct gc_shape *sh, struct hb_graph *gr)
{
	hipGraphNode_t prev = NULL;

	memset(gr, 0, sizeof(*gr));
	gr->n = sh->kernels;
	gr->nodes = calloc(gr->n, sizeof(*gr->nodes));
	gc_assert(gr->nodes);
	gc_hip_assert(b->hip, b->hip->hipGraphCreate(&gr->g, 0));
	if (sh->kind == GC_SHAPE_WIDE) {
		gr->nodes[0] = add_stamp(b, gr->g, NULL, 0, 0);
		for (unsigned i = 1; i <= sh->n; i++)
			gr->nodes[i] = add_stamp(b, gr->g, &gr->nodes[0], 1, i);
		gr->nodes[sh->n + 1] = add_stamp(b, gr->g, &gr->nodes[1], sh->n, sh->n + 1);
	} else {
		for (unsigned i = 0; i < sh->n; i++) {
			if (prev && sh->kind == GC_SHAPE_MIXED)
				prev = i % 2 ? add_memset(b, gr->g, prev) : add_memcpy(b, gr->g, prev);
			gr->nodes[i] = add_stamp(b, gr->g, prev ? &prev : NULL, prev ? 1 : 0, i);
			prev = gr->nodes[i];
		}
	}
	gc_hip_assert(b->hip, b->hip->hipGraphInstantiate(&gr->x, gr->g, NULL, NULL, 0));
}

void hb_graph_free(struct hb *b, struct hb_graph *gr)
{
	if (gr->x)
		b->hip->hipGraphExecDestroy(gr->x);
	if (gr->g)
		b->hip->hipGraphDestroy(gr->g);
	free(gr->nodes);
	memset(gr, 0, sizeof(*gr));
}

/* ------------------------------------------------------------- runs */

void hb_launch_stamp(struct hb *b, unsigned idx)
{
	char args[32]; /* gc_stamp's explicit arguments: offsets 0, 8, 16, 24 */
	size_t size = sizeof(args);
	void *extra[] = { HIP_LAUNCH_PARAM_BUFFER_POINTER, args, HIP_LAUNCH_PARAM_BUFFER_SIZE,
			  &size, HIP_LAUNCH_PARAM_END };

	gc_hsa_stamp_args(args, b->stamps, b->counts, idx, b->work_ticks);
	gc_hip_assert(b->hip, b->hip->hipModuleLaunchKernel(b->stamp, 1, 1, 1, GC_HSA_BLOCK, 1, 1,
							    0, b->s, NULL, extra));
}

static void stream_launch(struct hb *b, const struct gc_shape *sh)
{
	for (unsigned i = 0; i < sh->n; i++) {
		if (i && sh->kind == GC_SHAPE_MIXED)
			gc_hip_assert(b->hip, i % 2 ?
				b->hip->hipMemsetD32Async(b->scratch, 0x5a5a5a5a, 1024, b->s) :
				b->hip->hipMemcpyDtoDAsync((char *)b->scratch + 4096, b->scratch,
							   4096, b->s));
		hb_launch_stamp(b, i);
	}
}

/* How many of the n dispatches have run, read on a stream of its own (the work may hang). */
unsigned hb_done_count(struct hb *b, unsigned n)
{
	unsigned done = 0;
	hipStream_t s;

	gc_hip_assert(b->hip, b->hip->hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
	memset(b->host.counts, 0, (size_t)n * 4);
	gc_hip_assert(b->hip,
		      b->hip->hipMemcpyDtoHAsync(b->host.counts, b->counts, (size_t)n * 4, s));
	for (int i = 0; i < 2000 && b->hip->hipStreamQuery(s) == hipErrorNotReady; i++)
		usleep(1000);
	for (unsigned i = 0; i < n; i++)
		done += b->host.counts[i] != 0;
	b->hip->hipStreamDestroy(s);
	return done;
}

/* The stream with a watchdog: `hang: N of M kernels done` instead of the runner's timeout. */
void hb_wait(struct hb *b, unsigned n, const char *what)
{
	uint64_t deadline = gc_now_ns() + HB_WATCHDOG_S * 1000000000ull;
	hipError_t r;

	while ((r = b->hip->hipStreamQuery(b->s)) == hipErrorNotReady) {
		if (gc_now_ns() > deadline)
			gc_fail("hang: %u of %u kernels done %d s after %s was launched",
				hb_done_count(b, n), n, HB_WATCHDOG_S, what);
		usleep(100);
	}
	gc_hip_assert(b->hip, r);
}

static void fetch(struct hb *b, unsigned n)
{
	hb_wait(b, n, "the work");
	gc_hip_assert(b->hip, b->hip->hipMemcpyDtoH(b->host.stamps, b->stamps, 2 * (size_t)n * 8));
	gc_hip_assert(b->hip, b->hip->hipMemcpyDtoH(b->host.counts, b->counts, (size_t)n * 4));
}

void hb_run_graph(struct hb *b, const struct gc_shape *sh, struct hb_graph *gr)
{
	gc_hip_assert(b->hip, b->hip->hipMemsetD32Async(b->counts, 0, sh->kernels, b->s));
	gc_hip_assert(b->hip, b->hip->hipGraphLaunch(gr->x, b->s));
	fetch(b, sh->kernels);
	gc_gap_expect_launch(&b->host, sh, true);
}

void hb_run_stream(struct hb *b, const struct gc_shape *sh)
{
	gc_hip_assert(b->hip, b->hip->hipMemsetD32Async(b->counts, 0, sh->kernels, b->s));
	stream_launch(b, sh);
	fetch(b, sh->kernels);
	gc_gap_expect_launch(&b->host, sh, false);
}

/* ------------------------------------------------------------- subtests */

/*
 * gaps. Contract: per shape, each launched b->launches
 * times, every dispatch runs exactly once per launch (a count of 0 is a lost
 * dispatch, 2 a replayed one) and every gap is >= 0; p50 / p99 / max and
 * bubbles are metrics. Stream launches only for chains and mixed (a stream
 * has no fan-out).
 */
void hb_test_gaps(struct hb *b)
{
	hb_require(b);
	gc_gaps_cases(&b->dev, b->launches);
}

static void set_node_idx(struct hb *b, struct hb_graph *gr, unsigned k, unsigned idx)
{
	unsigned int i = idx;
	uint64_t work = b->work_ticks;
	void *args[] = { &b->stamps, &b->counts, &i, &work };
	hipKernelNodeParams p = stamp_params(b, args);

	gc_hip_assert(b->hip, b->hip->hipGraphExecKernelNodeSetParams(gr->x, gr->nodes[k], &p));
}

/*
 * launch-gap. Contract: consecutive launches of one chain2 graph, queued
 * back to back without waiting, each run once with the arguments it was
 * launched with (its nodes' idx set by hipGraphExecKernelNodeSetParams before
 * its hipGraphLaunch: a launch that ran with a later launch's arguments shows
 * as one slot counted twice and one never); the gap from the last kernel of
 * launch i to the first of launch i + 1 is >= 0 and is the metric
 * gap.graph.launch.
 */
void hb_test_launch_gap(struct hb *b)
{
	const struct gc_shape *sh = gc_shape_get("chain2");
	struct hb_graph gr;
	unsigned n;

	hb_require(b);
	n = b->launches < HB_MAX_KERNELS / 2 ? b->launches : HB_MAX_KERNELS / 2;
	hb_graph_build(b, sh, &gr);
	gc_hip_assert(b->hip, b->hip->hipMemsetD32Async(b->counts, 0, 2 * n, b->s));
	for (unsigned l = 0; l < n; l++) {
		set_node_idx(b, &gr, 0, 2 * l);
		set_node_idx(b, &gr, 1, 2 * l + 1);
		gc_hip_assert(b->hip, b->hip->hipGraphLaunch(gr.x, b->s));
	}
	fetch(b, 2 * n);
	gc_gaps_launch_gap(&b->host, n);
	hb_graph_free(b, &gr);
}

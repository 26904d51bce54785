// SPDX-License-Identifier: MIT
/*
 * cuda_bubbles, deep-inflight: thousands of dispatches queued behind a gate
 * kernel that spins on a host-mapped flag, untraced and under CUPTI.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bubbles.h"

/* ------------------------------------------------------------ deep queue */

#define DEEP_KERNELS 5000u
#define DEEP_AFTER DEEP_KERNELS        /* stamp idx of the dispatch right after the gate */
#define GATE_TIMEOUT_NS 30000000000ull /* the gate ends itself after 30 s */

struct deep {
	struct bx_deep q;
	struct gc_cupti *c;
	bool cupti;
	char why[512];
};

/*
 * The gate, one stamped dispatch right after it (its stamps bound the gate's
 * end), and DEEP_KERNELS dispatches that all depend on that one.
 */
static CUgraph deep_graph(struct bx_deep *d, CUgraphExec *x)
{
	unsigned long long timeout = GATE_TIMEOUT_NS;
	void *gargs[] = { &d->flag_dev, &timeout, &d->result };
	CUDA_KERNEL_NODE_PARAMS p = bx_kernel_params(d->b->k.gate, gargs);
	CUgraphNode gate, after;
	CUgraph g;

	gc_cu_assert(d->b->cu, d->b->cu->cuGraphCreate(&g, 0));
	gc_cu_assert(d->b->cu, d->b->cu->cuGraphAddKernelNode(&gate, g, NULL, 0, &p));
	after = bx_add_stamp(d->b, g, &gate, 1, DEEP_AFTER);
	for (unsigned i = 0; i < DEEP_KERNELS; i++)
		bx_add_stamp(d->b, g, &after, 1, i);
	gc_cu_assert(d->b->cu, d->b->cu->cuGraphInstantiate(x, g, 0));
	return g;
}

/* Open the gate, wait for everything behind it (60 s watchdog), fetch counts and stamps. */
static void deep_release(struct bx_deep *d, unsigned *ms)
{
	char done[160];

	__atomic_store_n(d->flag, 1, __ATOMIC_SEQ_CST);
	for (*ms = 0; d->b->cu->cuStreamQuery(d->b->s) == CUDA_ERROR_NOT_READY; (*ms)++) {
		if (*ms >= 60000)
			gc_fail("hang: %s 60 s after the gate opened",
				bx_done_str(d->b, DEEP_KERNELS + 1, done, sizeof(done)));
		usleep(1000);
	}
	gc_cu_assert(d->b->cu, d->b->cu->cuStreamSynchronize(d->b->s));
	gc_cu_assert(d->b->cu, d->b->cu->cuMemcpyDtoH(d->b->host.counts, d->b->counts,
						      (DEEP_KERNELS + 1) * 4));
	gc_cu_assert(d->b->cu, d->b->cu->cuMemcpyDtoH(d->b->host.stamps, d->b->stamps,
						      2 * (DEEP_KERNELS + 1) * 8));
}

/* Every dispatch behind the gate started after the one right after it ended. */
static void deep_expect_order(struct bx_deep *d)
{
	const uint64_t *st = d->b->host.stamps;
	uint64_t after_end = st[2 * DEEP_AFTER + 1];

	for (unsigned i = 0; i < DEEP_KERNELS; i++)
		gc_assert_f(st[2 * i] >= after_end, "dispatch %u started at %llu ns, before the "
			    "dispatch after the gate ended (%llu ns)", i, (unsigned long long)st[2 * i],
			    (unsigned long long)after_end);
}

static void deep_expect_records(struct deep *d)
{
	struct gc_cupti_take t;

	gc_assert(gc_cupti_flush(d->c) == 0);
	gc_cupti_take(&t);
	bx_remove_record(&t);
	gc_info("%zu kernel records, %llu dropped", t.nk, (unsigned long long)t.dropped);
	gc_assert_f(t.nk == DEEP_KERNELS + 2, "%zu kernel records for %u dispatches (the gate, "
		    "the one after it, %u behind them)", t.nk, DEEP_KERNELS + 2, DEEP_KERNELS);
	gc_assert_cmpuint(t.dropped, ==, 0);
	gc_cupti_take_free(&t);
}

/* How the deep queue is traced: not at all, concurrent or serialized kernel tracing. */
struct deep_mode {
	const char *name;
	CUpti_ActivityKind kind; /* CUPTI_ACTIVITY_KIND_INVALID (0): untraced */
};

GC_VARIANTS(struct deep_mode, deep_modes, deep_case) = {
	{ "plain", CUPTI_ACTIVITY_KIND_INVALID },
	{ "traced", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL },
	{ "traced-serialized", CUPTI_ACTIVITY_KIND_KERNEL },
};

void bx_deep_open(struct bx *b, struct bx_deep *d)
{
	void *host;

	memset(d, 0, sizeof(*d));
	d->b = b;
	gc_cu_assert(b->cu, b->cu->cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
	d->flag = host;
	gc_cu_assert(b->cu, b->cu->cuMemHostGetDevicePointer(&d->flag_dev, host, 0));
	gc_cu_assert(b->cu, b->cu->cuMemAlloc(&d->result, 4));
}

void bx_deep_close(struct bx_deep *d)
{
	d->b->cu->cuMemFree(d->result);
	d->b->cu->cuMemFreeHost((void *)d->flag);
}

unsigned bx_deep_run(struct bx_deep *d, struct gc_cupti *c, CUpti_ActivityKind kind)
{
	CUgraphExec x;
	CUgraph g;
	unsigned held, ms;
	uint32_t result = 0;

	g = deep_graph(d, &x);
	*d->flag = 0;
	/* On the graph's own (non-blocking) stream: ordered before the launch. */
	gc_cu_assert(d->b->cu, d->b->cu->cuMemsetD32Async(d->b->counts, 0, DEEP_KERNELS + 1,
							  d->b->s));
	gc_cu_assert(d->b->cu, d->b->cu->cuMemsetD32Async(d->result, 0, 1, d->b->s));
	gc_cu_assert(d->b->cu, d->b->cu->cuStreamSynchronize(d->b->s));
	if (kind)
		bx_cupti_switch(c, kind, true);
	gc_cu_assert(d->b->cu, d->b->cu->cuGraphLaunch(x, d->b->s));
	usleep(200000);
	held = bx_done_count(d->b, DEEP_KERNELS + 1);
	deep_release(d, &ms);
	if (kind)
		bx_cupti_switch(c, kind, false);
	gc_cu_assert(d->b->cu, d->b->cu->cuMemcpyDtoH(&result, d->result, 4));
	gc_assert_f(result == 1, "the gate %s", result == 2 ? "timed out (30 s)" : "never ran");
	gc_assert_f(held == 0 || held == BX_DONE_UNKNOWN, "%u dispatches ran before the gate "
		    "opened", held);
	gc_gap_expect_counts(&d->b->host, DEEP_KERNELS + 1, "deep in-flight");
	deep_expect_order(d);
	gc_info("%u dispatches queued behind the gate for 200 ms (%s); all ran once, in order, "
		"%u ms after it opened", DEEP_KERNELS + 1,
		held == BX_DONE_UNKNOWN ? "not observable meanwhile: reading the counts waited "
					  "behind the gate" : "none ran meanwhile", ms);
	d->b->cu->cuGraphExecDestroy(x);
	d->b->cu->cuGraphDestroy(g);
	return DEEP_KERNELS + 2; /* the gate, the one after it, those behind */
}

static void deep_case(void *ctx, const struct deep_mode *m)
{
	struct deep *d = ctx;

	if (m->kind && !d->cupti)
		gc_skip("CUPTI: %s", d->why);
	bx_deep_run(&d->q, d->c, m->kind);
	if (m->kind)
		deep_expect_records(d);
}

/*
 * deep-inflight: 5001 dispatches (more than KFD's 4096 signal events, the
 * limit the seed's profiler tripped on) wait behind a gate kernel that spins
 * on a host-mapped flag, untraced, traced and serialized-traced. None may run
 * before the gate opens (read while it holds, where the profiler lets a copy
 * pass it, and always from the stamps: each starts after the dispatch that
 * follows the gate ended); all run exactly once; a watchdog fails with
 * `hang: N of M kernels done` instead of waiting for the runner.
 */
void test_deep_inflight(void *data)
{
	struct bx *b = data;
	struct gc_cupti cp;
	struct deep d = { .c = &cp };

	d.cupti = gc_cupti_open(&cp, d.why, sizeof(d.why)) == 0 &&
		  gc_cupti_start(&cp, d.why, sizeof(d.why)) == 0;
	bx_deep_open(b, &d.q);
	gc_variants(deep_modes, &d);
	bx_deep_close(&d.q);
}

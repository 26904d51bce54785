// SPDX-License-Identifier: MIT
/*
 * cuda_bubbles under a profiler (CUPTI activity tracing) and deep queues.
 *
 * cupti_activity.h: CUPTI_ACTIVITY_KIND_KERNEL "may significantly change the
 * overall performance characteristics of the application because all kernel
 * executions are serialized on the GPU"; CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
 * "doesn't break kernel concurrency". Both must deliver one record per
 * dispatch. cuptiGetTimestamp "Returns a timestamp normalized to correspond
 * with the start and end timestamps reported in the CUPTI activity records":
 * CUPTI's clock need not be %globaltimer, so the bracketing check asks for
 * one clock offset under which every record's [start, end] contains its
 * kernel's own stamps.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bubbles.h"
#include "devfd.h"
#include "gc_cupti.h"

#define MIN_I64(a, b) ((a) < (b) ? (a) : (b))
#define TRACE_LAUNCHES 100     /* launches per shape under a profiler */
#define BRACKET_SLACK_NS 100   /* clock steps of both sides (32 ns on H100) */

static void cupti_up(struct gc_cupti *c)
{
	char why[512];
	int r = gc_cupti_open(c, why, sizeof(why));

	if (r < 0)
		gc_skip("CUPTI: %s", why);
	if (gc_cupti_start(c, why, sizeof(why)) < 0)
		gc_fail("%s", why);
}

static void cupti_switch(struct gc_cupti *c, CUpti_ActivityKind kind, bool on)
{
	char why[512];

	gc_assert_f(gc_cupti_enable(c, &kind, 1, on, why, sizeof(why)) == 0, "%s", why);
}

static const char *mode_name(CUpti_ActivityKind kind)
{
	return kind == CUPTI_ACTIVITY_KIND_KERNEL ? "graph-trace-serial" : "graph-trace";
}

/* -------------------------------------------------------- completeness */

struct launch_stamps {
	uint64_t *st; /* 2 per kernel, per launch */
	unsigned n;   /* kernels per launch */
};

/* Node idx of a CUPTI graph node id, or -1. */
static int node_idx(const uint64_t *ids, unsigned n, uint64_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (ids[i] == id)
			return (int)i;
	return -1;
}

static int cmp_corr(const void *a, const void *b)
{
	const struct gc_cupti_kernel *x = a, *y = b;

	return x->correlation_id != y->correlation_id ?
		       (x->correlation_id < y->correlation_id ? -1 : 1) :
		       (x->start < y->start ? -1 : x->start > y->start);
}

static int cmp_start(const void *a, const void *b)
{
	const struct gc_cupti_kernel *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Node index of each record of one launch: by CUPTI's graph node id when
 * every record names a node of the template graph (cuptiGetGraphNodeId);
 * else, where the instantiated graph reports ids of its own clones, by start
 * order against the stamps' start order (exact for chains, whose order is
 * fixed by their dependencies). Returns whether ids were used.
 */
static bool match_launch(struct gc_cupti_kernel *r, const uint64_t *st, const uint64_t *ids,
			 unsigned n, int *idx)
{
	unsigned *order;
	bool by_id = true;

	for (unsigned j = 0; j < n && by_id; j++)
		by_id = (idx[j] = node_idx(ids, n, r[j].graph_node_id)) >= 0;
	if (by_id)
		return true;
	order = malloc(n * sizeof(*order));
	gc_assert(order);
	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	for (unsigned i = 1; i < n; i++) /* insertion sort by stamp start: n <= 8192 */
		for (unsigned j = i; j > 0 && st[2 * order[j]] < st[2 * order[j - 1]]; j--) {
			unsigned t = order[j];

			order[j] = order[j - 1], order[j - 1] = t;
		}
	qsort(r, n, sizeof(*r), cmp_start);
	for (unsigned j = 0; j < n; j++)
		idx[j] = (int)order[j];
	free(order);
	return false;
}

/*
 * The records of `launches` graph launches (in launch order) against their
 * stamps: one record per dispatch, each graph node once per launch, and one
 * clock offset C with rec.start - C <= stamp.start, stamp.end <= rec.end - C.
 */
static void check_records(struct gc_cupti_take *t, const uint64_t *ids,
			  const struct launch_stamps *ls, unsigned launches, const char *what)
{
	int64_t min_d = INT64_MAX, min_e = INT64_MAX;
	unsigned *seen = calloc(ls->n, sizeof(*seen));
	int *idx = calloc(ls->n, sizeof(*idx));
	bool by_id = true;

	gc_assert(seen && idx);
	if (bx_remove("record") && t->nk) { /* one record removed on purpose */
		t->nk--;
		t->k[t->nk / 2] = t->k[t->nk];
	}
	gc_assert_f(t->nk == (size_t)launches * ls->n, "%s: %zu kernel records for %u launches of "
		    "%u dispatches (%u expected), %llu dropped", what, t->nk, launches, ls->n,
		    launches * ls->n, (unsigned long long)t->dropped);
	gc_assert_f(t->dropped == 0, "%s: CUPTI dropped %llu records", what,
		    (unsigned long long)t->dropped);
	qsort(t->k, t->nk, sizeof(*t->k), cmp_corr);
	for (unsigned l = 0; l < launches; l++) {
		struct gc_cupti_kernel *r = &t->k[(size_t)l * ls->n];
		const uint64_t *st = &ls->st[(size_t)l * 2 * ls->n];

		for (unsigned j = 0; j < ls->n; j++)
			gc_assert_f(r[j].correlation_id == r[0].correlation_id,
				    "%s: launch %u has records of two correlation ids", what, l);
		by_id &= match_launch(r, st, ids, ls->n, idx);
		memset(seen, 0, ls->n * sizeof(*seen));
		for (unsigned j = 0; j < ls->n; j++) {
			int i = idx[j];

			gc_assert_f(seen[i]++ == 0, "%s: launch %u: node %d recorded twice", what, l,
				    i);
			min_d = MIN_I64(min_d, (int64_t)st[2 * i] - (int64_t)r[j].start);
			min_e = MIN_I64(min_e, (int64_t)r[j].end - (int64_t)st[2 * i + 1]);
		}
	}
	gc_info("%s: %zu records, each node once per launch (matched by %s); bracketing slack "
		"%lld ns (CUPTI clock - %%globaltimer offset in [%lld, %lld] ns)", what, t->nk,
		by_id ? "graph node id" : "start order: the records name cloned nodes",
		(long long)(min_d + min_e), (long long)-min_e, (long long)min_d);
	gc_assert_f(min_d + min_e >= -BRACKET_SLACK_NS, "%s: no single clock offset makes every "
		    "record bracket its kernel's stamps (short by %lld ns)", what,
		    (long long)-(min_d + min_e));
	free(seen);
	free(idx);
}

/* ---------------------------------------------------------- traced runs */

struct tcase {
	struct bx *b;
	const struct gc_shape *sh;
	struct gc_cupti *c;
	CUpti_ActivityKind kind;
};

static void node_ids(struct tcase *c, const struct bx_graph *gr, uint64_t *ids)
{
	char eb[160];

	for (unsigned i = 0; i < gr->n; i++) {
		CUptiResult r = c->c->cuptiGetGraphNodeId(gr->nodes[i], &ids[i]);

		gc_assert_f(r == CUPTI_SUCCESS, "cuptiGetGraphNodeId: %s",
			    gc_cupti_strerror(c->c, r, eb, sizeof(eb)));
	}
}

static struct gc_gap_stats run_shape(struct tcase *c, struct bx_graph *gr, unsigned n,
				 const char *mode, struct launch_stamps *keep)
{
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	for (unsigned l = 0; l < n; l++) {
		bx_run_graph(c->b, c->sh, gr);
		bx_gaps_add_run(c->b, c->sh, &g);
		if (keep)
			memcpy(&keep->st[(size_t)l * 2 * keep->n], c->b->h_stamps,
			       2 * (size_t)keep->n * 8);
	}
	st = gc_gaps_report(&g, mode, c->sh->name);
	st.p50 = st.p50 > 0 ? st.p50 : 1; /* ratios of a 0 ns median are reported against 1 ns */
	gc_gaps_free(&g);
	return st;
}

static void traced_case(void *arg)
{
	struct tcase *c = arg;
	struct launch_stamps ls = { .n = c->sh->kernels };
	struct gc_cupti_take t;
	struct gc_gap_stats plain, traced;
	struct bx_graph gr;
	uint64_t *ids;

	bx_graph_build(c->b, c->sh, &gr);
	ids = calloc(gr.n, sizeof(*ids));
	ls.st = malloc((size_t)TRACE_LAUNCHES * 2 * ls.n * 8);
	gc_assert(ids && ls.st);
	node_ids(c, &gr, ids);
	plain = run_shape(c, &gr, TRACE_LAUNCHES, "graph", NULL);
	gc_cupti_flush(c->c);
	gc_cupti_take(&t);
	gc_cupti_take_free(&t);
	cupti_switch(c->c, c->kind, true);
	traced = run_shape(c, &gr, TRACE_LAUNCHES, mode_name(c->kind), &ls);
	cupti_switch(c->c, c->kind, false);
	gc_assert(gc_cupti_flush(c->c) == 0);
	gc_cupti_take(&t);
	check_records(&t, ids, &ls, TRACE_LAUNCHES, c->sh->name);
	gc_gap_ratio(c->kind == CUPTI_ACTIVITY_KIND_KERNEL ? "gap-p50-serial-over-graph" :
						      "gap-p50-trace-over-graph",
	      c->sh->name, traced.p50 / plain.p50);
	gc_gap_ratio(c->kind == CUPTI_ACTIVITY_KIND_KERNEL ? "gap-p99-serial-over-graph" :
						      "gap-p99-trace-over-graph",
	      c->sh->name, traced.p99 / (plain.p99 > 0 ? plain.p99 : 1));
	gc_gap_ratio(c->kind == CUPTI_ACTIVITY_KIND_KERNEL ? "graph-time-serial-over-graph" :
						      "graph-time-trace-over-graph",
	      c->sh->name, traced.span_us / (plain.span_us > 0 ? plain.span_us : 1));
	gc_cupti_take_free(&t);
	free(ids);
	free(ls.st);
	bx_graph_free(c->b, &gr);
}

static void traced_subtest(struct bx *b, CUpti_ActivityKind kind)
{
	static const char *const shapes[] = { "chain2", "chain16", "chain256", "chain8192",
					      "wide16", "wide256", "mixed" };
	struct gc_cupti c;
	struct tcase tc = { .b = b, .c = &c, .kind = kind };

	cupti_up(&c);
	for (unsigned i = 0; i < ARRAY_SIZE(shapes); i++) {
		tc.sh = bx_shape(shapes[i]);
		gc_dynamic(shapes[i], traced_case, &tc);
	}
}

/*
 * traced-concurrent / traced-serialized: the profiler sees every dispatch
 * (one record per graph node per launch, matched by CUPTI's graph node id and
 * the launch's correlation id), its timestamps bracket the kernel's own
 * stamps, nothing is dropped; the gaps traced vs untraced, as ratios.
 */
void test_traced_concurrent(void *data)
{
	traced_subtest(data, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

void test_traced_serialized(void *data)
{
	traced_subtest(data, CUPTI_ACTIVITY_KIND_KERNEL);
}

/* ---------------------------------------------------------------- leaks */

struct usage {
	long rss_kib;
	size_t dev_free;
	int fds;
};

static struct usage usage_now(struct bx *b)
{
	struct usage u = { 0 };
	size_t total;
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	u.rss_kib = res * (sysconf(_SC_PAGESIZE) / 1024);
	gc_cu_assert(b->cu, b->cu->cuMemGetInfo(&u.dev_free, &total));
	u.fds = gc_devfd_count(""); /* every open fd */
	return u;
}

#define LEAK_RSS_KIB (16 * 1024)      /* CUPTI keeps buffers and per-thread state */
#define LEAK_DEV_BYTES (8u << 20)     /* one device allocation granule and some */

/*
 * trace-leak: the pooled-signal leak class. 400 traced launches of chain256
 * (102,400 dispatches) after a warm-up: every record arrives, and host RSS,
 * device free memory and open fds come back within the stated tolerances.
 */
void test_trace_leak(void *data)
{
	struct bx *b = data;
	struct tcase c = { .b = b, .sh = bx_shape("chain256") };
	struct gc_cupti cp;
	struct gc_cupti_take t;
	struct usage u0, u1;
	struct bx_graph gr;
	size_t records = 0;

	cupti_up(&cp);
	c.c = &cp;
	bx_graph_build(b, c.sh, &gr);
	cupti_switch(&cp, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true);
	for (int i = 0; i < 4; i++)
		bx_run_graph(b, c.sh, &gr);
	gc_cupti_flush(&cp);
	gc_cupti_take(&t);
	gc_cupti_take_free(&t);
	u0 = usage_now(b);
	for (int i = 0; i < 400; i++) {
		bx_run_graph(b, c.sh, &gr);
		if (i % 50 == 49) {
			gc_cupti_flush(&cp);
			gc_cupti_take(&t);
			records += t.nk;
			gc_assert_f(t.dropped == 0, "%llu records dropped",
				    (unsigned long long)t.dropped);
			gc_cupti_take_free(&t);
		}
	}
	u1 = usage_now(b);
	cupti_switch(&cp, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, false);
	gc_info("102,400 traced dispatches: %zu records; RSS %ld -> %ld KiB, device free %zu -> "
		"%zu, fds %d -> %d", records, u0.rss_kib, u1.rss_kib, u0.dev_free, u1.dev_free,
		u0.fds, u1.fds);
	gc_assert_cmpuint(records, ==, 400 * 256);
	gc_assert_f(u1.rss_kib - u0.rss_kib <= LEAK_RSS_KIB, "host RSS grew %ld KiB (limit %d)",
		    u1.rss_kib - u0.rss_kib, LEAK_RSS_KIB);
	gc_assert_f(u0.dev_free <= u1.dev_free + LEAK_DEV_BYTES, "device free memory fell %zu "
		    "bytes", u0.dev_free - u1.dev_free);
	gc_assert_cmpint(u1.fds, ==, u0.fds);
	bx_graph_free(b, &gr);
}

/* -------------------------------------------------------- attach/detach */

struct launcher {
	struct bx *b;
	const struct gc_shape *sh;
	struct bx_graph *gr;
	volatile int stop;
	unsigned launches;
};

static void *launcher_thread(void *p)
{
	struct launcher *l = p;

	gc_cu_assert(l->b->cu, gc_cuda_use(l->b->cu, 0));
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		gc_cu_assert(l->b->cu, l->b->cu->cuGraphLaunch(l->gr->x, l->b->s));
		gc_cu_assert(l->b->cu, l->b->cu->cuStreamSynchronize(l->b->s));
		l->launches++;
	}
	return NULL;
}

static struct gc_gap_stats plain_gaps(struct bx *b, const struct gc_shape *sh, struct bx_graph *gr,
				  const char *mode)
{
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	for (unsigned l = 0; l < TRACE_LAUNCHES; l++) {
		bx_run_graph(b, sh, gr);
		bx_gaps_add_run(b, sh, &g);
	}
	st = gc_gaps_report(&g, mode, sh->name);
	gc_gaps_free(&g);
	return st;
}

/* Every kernel record overlaps one of the enabled windows [on[i], off[i]]. */
static void check_windows(const struct gc_cupti_take *t, const uint64_t *on, const uint64_t *off,
			  unsigned n)
{
	for (size_t r = 0; r < t->nk; r++) {
		bool inside = false;

		for (unsigned w = 0; w < n && !inside; w++)
			inside = t->k[r].end >= on[w] && t->k[r].start <= off[w];
		gc_assert_f(inside, "record %zu [%llu, %llu] lies in no enabled window", r,
			    (unsigned long long)t->k[r].start, (unsigned long long)t->k[r].end);
	}
}

/*
 * attach-detach: concurrent tracing enabled and disabled 100 times while a
 * thread keeps launching chain16: no crash, no hang (the launcher must stop
 * within 10 s), every record lies in an enabled window; after the last
 * disable, the gaps against the untraced ones of this same process.
 */
void test_attach_detach(void *data)
{
	struct bx *b = data;
	const struct gc_shape *sh = bx_shape("chain16");
	uint64_t on[100], off[100];
	struct launcher l = { .b = b, .sh = sh };
	struct gc_gap_stats before, after;
	struct gc_cupti_take t;
	struct gc_cupti cp;
	struct bx_graph gr;
	pthread_t th;

	cupti_up(&cp);
	bx_graph_build(b, sh, &gr);
	l.gr = &gr;
	before = plain_gaps(b, sh, &gr, "graph");
	gc_assert(pthread_create(&th, NULL, launcher_thread, &l) == 0);
	for (int i = 0; i < 100; i++) {
		cp.cuptiGetTimestamp(&on[i]);
		cupti_switch(&cp, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true);
		usleep(2000);
		cupti_switch(&cp, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, false);
		cp.cuptiGetTimestamp(&off[i]);
		usleep(1000);
	}
	__atomic_store_n(&l.stop, 1, __ATOMIC_RELEASE);
	{
		struct timespec dl;

		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 10;
		gc_assert_f(pthread_timedjoin_np(th, NULL, &dl) == 0,
			    "hang: the launcher did not stop within 10 s of the last detach");
	}
	gc_assert(gc_cupti_flush(&cp) == 0);
	gc_cupti_take(&t);
	check_windows(&t, on, off, 100);
	gc_info("100 attach/detach cycles over %u launches: %zu kernel records, all inside "
		"enabled windows", l.launches, t.nk);
	gc_assert_f(t.nk > 0, "no record in 100 enabled windows of 2 ms");
	gc_cupti_take_free(&t);
	after = plain_gaps(b, sh, &gr, "graph-detached");
	gc_gap_ratio("gap-p50-detached-over-graph", sh->name,
		     after.p50 / (before.p50 > 0 ? before.p50 : 1));
	gc_gap_ratio("gap-p99-detached-over-graph", sh->name,
		     after.p99 / (before.p99 > 0 ? before.p99 : 1));
	bx_graph_free(b, &gr);
}

/* ------------------------------------------------------------ deep queue */

#define DEEP_KERNELS 5000u
#define GATE_TIMEOUT_NS 30000000000ull /* the gate ends itself after 30 s */

struct deep {
	struct bx *b;
	struct gc_cupti *c;
	CUpti_ActivityKind kind; /* 0: untraced */
	bool cupti;
	char why[512];
	volatile uint32_t *flag;
	CUdeviceptr flag_dev, result;
};

static CUgraph deep_graph(struct deep *d, CUgraphExec *x)
{
	unsigned long long timeout = GATE_TIMEOUT_NS, work = BX_WORK_NS;
	void *gargs[] = { &d->flag_dev, &timeout, &d->result };
	CUDA_KERNEL_NODE_PARAMS p;
	CUgraphNode gate, n;
	CUgraph g;

	memset(&p, 0, sizeof(p));
	p.func = d->b->k.gate;
	p.gridDimX = p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = GC_CU_BLOCK, p.blockDimY = p.blockDimZ = 1;
	p.kernelParams = gargs;
	gc_cu_assert(d->b->cu, d->b->cu->cuGraphCreate(&g, 0));
	gc_cu_assert(d->b->cu, d->b->cu->cuGraphAddKernelNode(&gate, g, NULL, 0, &p));
	for (unsigned i = 0; i < DEEP_KERNELS; i++) {
		unsigned int idx = i;
		void *args[] = { &d->b->stamps, &d->b->counts, &idx, &work };

		p.func = d->b->k.stamp;
		p.kernelParams = args;
		gc_cu_assert(d->b->cu, d->b->cu->cuGraphAddKernelNode(&n, g, &gate, 1, &p));
	}
	gc_cu_assert(d->b->cu, d->b->cu->cuGraphInstantiate(x, g, 0));
	return g;
}

static void deep_case(void *arg)
{
	struct deep *d = arg;
	CUgraphExec x;
	CUgraph g;
	unsigned held, waited = 0;
	uint32_t result = 0;

	if (d->kind && !d->cupti)
		gc_skip("CUPTI: %s", d->why);
	g = deep_graph(d, &x);
	*d->flag = 0;
	/* On the graph's own (non-blocking) stream: ordered before the launch. */
	gc_cu_assert(d->b->cu, d->b->cu->cuMemsetD32Async(d->b->counts, 0, DEEP_KERNELS, d->b->s));
	gc_cu_assert(d->b->cu, d->b->cu->cuMemsetD32Async(d->result, 0, 1, d->b->s));
	gc_cu_assert(d->b->cu, d->b->cu->cuStreamSynchronize(d->b->s));
	if (d->kind)
		cupti_switch(d->c, d->kind, true);
	gc_cu_assert(d->b->cu, d->b->cu->cuGraphLaunch(x, d->b->s));
	usleep(200000);
	held = bx_done_count(d->b, DEEP_KERNELS);
	__atomic_store_n(d->flag, 1, __ATOMIC_SEQ_CST);
	while (d->b->cu->cuStreamQuery(d->b->s) == CUDA_ERROR_NOT_READY && waited < 60000)
		usleep(1000), waited++;
	if (waited >= 60000)
		gc_fail("hang: %u of %u kernels done 60 s after the gate opened",
			bx_done_count(d->b, DEEP_KERNELS), DEEP_KERNELS);
	gc_cu_assert(d->b->cu, d->b->cu->cuStreamSynchronize(d->b->s));
	if (d->kind)
		cupti_switch(d->c, d->kind, false);
	gc_cu_assert(d->b->cu, d->b->cu->cuMemcpyDtoH(&result, d->result, 4));
	gc_cu_assert(d->b->cu, d->b->cu->cuMemcpyDtoH(d->b->h_counts, d->b->counts,
						      DEEP_KERNELS * 4));
	gc_assert_f(held == 0, "%u dispatches ran before the gate opened", held);
	gc_assert_f(result == 1, "the gate %s", result == 2 ? "timed out (30 s)" : "never ran");
	bx_expect_counts(d->b, DEEP_KERNELS, "deep in-flight");
	if (d->kind) {
		struct gc_cupti_take t;

		gc_assert(gc_cupti_flush(d->c) == 0);
		gc_cupti_take(&t);
		gc_info("%zu kernel records, %llu dropped", t.nk, (unsigned long long)t.dropped);
		gc_assert_cmpuint(t.nk, ==, DEEP_KERNELS + 1);
		gc_assert_cmpuint(t.dropped, ==, 0);
		gc_cupti_take_free(&t);
	}
	gc_info("%u dispatches held behind the gate for 200 ms, all ran once after it opened "
		"(%u ms)", DEEP_KERNELS, waited);
	d->b->cu->cuGraphExecDestroy(x);
	d->b->cu->cuGraphDestroy(g);
}

/*
 * deep-inflight: 5000 dispatches (more than KFD's 4096 signal events, the
 * limit the seed's profiler tripped on) wait behind a gate kernel that spins
 * on a host-mapped flag, untraced, traced and serialized-traced. None may run
 * before the gate opens; all must run exactly once after; a watchdog fails
 * with "hang: N of M kernels done" instead of waiting for the runner.
 */
void test_deep_inflight(void *data)
{
	struct bx *b = data;
	struct gc_cupti cp;
	struct deep d = { .b = b, .c = &cp };
	void *host;

	d.cupti = gc_cupti_open(&cp, d.why, sizeof(d.why)) == 0 &&
		  gc_cupti_start(&cp, d.why, sizeof(d.why)) == 0;
	gc_cu_assert(b->cu, b->cu->cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
	d.flag = host;
	gc_cu_assert(b->cu, b->cu->cuMemHostGetDevicePointer(&d.flag_dev, host, 0));
	gc_cu_assert(b->cu, b->cu->cuMemAlloc(&d.result, 4));
	gc_dynamic("plain", deep_case, &d);
	d.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	gc_dynamic("traced", deep_case, &d);
	d.kind = CUPTI_ACTIVITY_KIND_KERNEL;
	gc_dynamic("traced-serialized", deep_case, &d);
	b->cu->cuMemFree(d.result);
	b->cu->cuMemFreeHost(host);
}

// SPDX-License-Identifier: MIT
/*
 * cuda_bubbles under a profiler (CUPTI activity tracing) and deep queues.
 *
 * cupti_activity.h, of CUPTI_ACTIVITY_KIND_KERNEL: "This activity kind may
 * significantly change the overall performance characteristics of the
 * application because all kernel executions are serialized on the GPU. Other
 * activity kind for kernel CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL doesn't
 * break kernel concurrency." Both must deliver one record per dispatch.
 * cuptiGetTimestamp: "Returns a timestamp normalized to correspond with the
 * start and end timestamps reported in the CUPTI activity records."
 * [src zspace/system.cuda-12.6 extras/CUPTI/include/cupti_activity.h @
 * b3d92c837713] (CUDA 12.6.3; the same in CUDA 13.0's). CUPTI's clock need
 * not be %globaltimer, so the bracketing check asks for one clock offset
 * under which every record's [start, end] contains its kernel's own stamps.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bubbles.h"
#include "contract/trace.h"
#include "dl.h"
#include "gc_cupti.h"
#include "prof_sessions.h"
#include "soak.h"
#include "usage.h"

#ifndef GC_CUDA_RT_DIR
#define GC_CUDA_RT_DIR "/usr/local/cuda"
#endif

#define TRACE_LAUNCHES GC_TRACE_LAUNCHES
#define BRACKET_SLACK_NS 100   /* clock steps of both sides (32 ns on H100) */
#define BRACKET_DRIFT_PPM 50   /* the two clocks' drift inside one launch (12-20 ppm seen) */
#define MIN_I64(a, b) ((a) < (b) ? (a) : (b))
#define MAX_I64(a, b) ((a) > (b) ? (a) : (b))

void bx_cupti_up(struct gc_cupti *c)
{
	char why[512];
	int r = gc_cupti_open(c, why, sizeof(why));

	if (r < 0)
		gc_skip("CUPTI: %s", why);
	if (gc_cupti_start(c, why, sizeof(why)) < 0)
		gc_fail("%s", why);
}

void bx_cupti_switch(struct gc_cupti *c, CUpti_ActivityKind kind, bool on)
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
	const uint64_t *st; /* 2 per kernel, per launch */
	unsigned n;   /* kernels per launch */
};

/* Which template node a CUPTI graph node id stands for (its own id or a copy's). */
struct node_id {
	uint64_t id;
	unsigned idx;
};

struct node_ids {
	struct node_id *v;
	size_t n;
	size_t copies; /* ids of copies (from the clone callback) among them */
};

static int cmp_node_id(const void *a, const void *b)
{
	const struct node_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Node idx of a CUPTI graph node id, or -1. */
static int node_idx(const struct node_ids *ids, uint64_t id)
{
	struct node_id key = { .id = id };
	const struct node_id *hit = bsearch(&key, ids->v, ids->n, sizeof(*ids->v), cmp_node_id);

	return hit ? (int)hit->idx : -1;
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
 * Node index of each record of one launch: by the graph node id the record
 * names (the template node's, or one of its copies' from the clone
 * callback) when every record's id is known; else by start order against
 * the stamps' start order (exact for chains, whose order their dependencies
 * fix; wide shapes' branches may swap within a clock step). Returns whether
 * ids were used.
 */
static bool match_launch(struct gc_cupti_kernel *r, const uint64_t *st, const struct node_ids *ids,
			 unsigned n, int *idx)
{
	unsigned *order;
	bool by_id = true;

	for (unsigned j = 0; j < n && by_id; j++)
		by_id = (idx[j] = node_idx(ids, r[j].graph_node_id)) >= 0;
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
 * How one launch's records bracket its kernels' stamps: gc_bracket_check()
 * over the timed records (untimed ones counted per node). The relation
 * between %globaltimer and CUPTI's clock drifts (12-20 ppm seen) and now and
 * then steps (2.2 us inside one 16 ms launch seen on the H100).
 */
static const struct gc_bracket_rule bracket_rule = {
	.slack_ns = BRACKET_SLACK_NS, .ppm = BRACKET_DRIFT_PPM, .min_seg = 16, .max_steps = 2,
};

/* Returns how many of the launch's records carry timestamps. */
static unsigned bracket_launch(const struct gc_cupti_kernel *r, const uint64_t *st,
			       const int *idx, unsigned n, unsigned l, const char *what,
			       struct gc_bracket *b, unsigned *untimed, struct gc_bracket_rec *v)
{
	unsigned m = 0;

	for (unsigned j = 0; j < n; j++) {
		int i = idx[j];

		if (!r[j].start || !r[j].end) { /* cupti_activity.h: could not be collected */
			untimed[i]++;
			continue;
		}
		v[m++] = (struct gc_bracket_rec){ st[2 * i], st[2 * i + 1], r[j].start, r[j].end,
						  (unsigned)i };
	}
	if (gc_bracket_check(v, m, &bracket_rule, b) == 0)
		return m;
	gc_fail("%s: launch %u: %s: node %u record [%llu, %llu] stamps [%llu, %llu]", what, l,
		b->why, v[b->bad].tag, (unsigned long long)v[b->bad].rec_start,
		(unsigned long long)v[b->bad].rec_end, (unsigned long long)v[b->bad].stamp_start,
		(unsigned long long)v[b->bad].stamp_end);
}

/* Fail when records came without timestamps, saying which nodes' and how many. */
static void expect_timed(const unsigned *untimed, unsigned n, unsigned launches, const char *what)
{
	char by[256] = "";
	unsigned total = 0, nodes = 0;
	int len = 0;

	for (unsigned i = 0; i < n; i++) {
		total += untimed[i];
		if (untimed[i] && nodes++ < 8 && len < (int)sizeof(by))
			len += snprintf(by + len, sizeof(by) - len, " node %u: %u;", i, untimed[i]);
	}
	gc_assert_f(total == 0, "%s: %u of %u records have no timestamps (start = end = 0: CUPTI "
		    "could not time them), in %u of %u nodes:%s%s", what, total, n * launches,
		    nodes, n, by, nodes > 8 ? " ..." : "");
}

/* Drop one record on purpose (GPUCONFORM_BUBBLES_REMOVE=record). */
void bx_remove_record(struct gc_cupti_take *t)
{
	if (gc_bubbles_remove("record") && t->nk) {
		t->nk--;
		t->k[t->nk / 2] = t->k[t->nk];
	}
}

/*
 * The records of `launches` graph launches (in launch order) against their
 * stamps: one record per dispatch, each graph node once per launch, every
 * record timed and bracketing its kernel's stamps (bracket_launch()). The
 * offset is found per launch because the two clocks drift apart (12-20 ppm
 * seen on the H100: 40 us over 2 s); inside a launch (up to 17 ms) the slack
 * allows BRACKET_DRIFT_PPM of its span on top of the clock steps.
 */
static void check_records(struct gc_cupti_take *t, const struct node_ids *ids,
			  const struct launch_stamps *ls, unsigned launches, const char *what)
{
	unsigned *seen = calloc(ls->n, sizeof(*seen));
	unsigned *untimed = calloc(ls->n, sizeof(*untimed));
	int *idx = calloc(ls->n, sizeof(*idx));
	struct gc_bracket_rec *v = calloc(ls->n, sizeof(*v));
	int64_t tight = INT64_MAX, max_step = 0, d0 = 0, d1 = 0;
	unsigned steps = 0, timed = 0;
	bool by_id = true;

	gc_assert(seen && idx && untimed && v);
	bx_remove_record(t);
	gc_assert_f(t->nk == (size_t)launches * ls->n, "%s: %zu kernel records for %u launches of "
		    "%u dispatches (%u expected), %llu dropped", what, t->nk, launches, ls->n,
		    launches * ls->n, (unsigned long long)t->dropped);
	gc_assert_f(t->dropped == 0, "%s: CUPTI dropped %llu records", what,
		    (unsigned long long)t->dropped);
	qsort(t->k, t->nk, sizeof(*t->k), cmp_corr);
	for (unsigned l = 0; l < launches; l++) {
		struct gc_cupti_kernel *r = &t->k[(size_t)l * ls->n];
		const uint64_t *st = &ls->st[(size_t)l * 2 * ls->n];
		struct gc_bracket b;
		unsigned m;

		for (unsigned j = 0; j < ls->n; j++)
			gc_assert_f(r[j].correlation_id == r[0].correlation_id,
				    "%s: launch %u has records of two correlation ids", what, l);
		by_id &= match_launch(r, st, ids, ls->n, idx);
		memset(seen, 0, ls->n * sizeof(*seen));
		for (unsigned j = 0; j < ls->n; j++)
			gc_assert_f(seen[idx[j]]++ == 0, "%s: launch %u: node %d recorded twice", what,
				    l, idx[j]);
		m = bracket_launch(r, st, idx, ls->n, l, what, &b, untimed, v);
		if (!m) /* no record of this launch has timestamps */
			continue;
		timed += m;
		steps += b.steps;
		max_step = MAX_I64(max_step, b.max_step);
		tight = MIN_I64(tight, b.tight);
		d1 = b.mid0;
		if (timed == m)
			d0 = d1;
	}
	{
		double secs = (double)(ls->st[(size_t)(launches - 1) * 2 * ls->n] - ls->st[0]) / 1e9;

		gc_info("%s: %zu records, each node once per launch (matched by %s); %u timed, each "
			"bracketing its kernel's stamps under one clock offset per run of records "
			"(tightest %lld ns); %u clock steps inside launches (largest %lld ns); "
			"%%globaltimer - CUPTI clock moved %+lld ns over %.3f s (%.1f ppm)", what,
			t->nk, by_id ? "graph node id" : "start order: the records name unknown nodes",
			timed, timed ? (long long)tight : 0LL, steps, (long long)max_step,
			(long long)(d1 - d0), secs, secs > 0 ? (double)(d1 - d0) / secs / 1e3 : 0.0);
	}
	expect_timed(untimed, ls->n, launches, what);
	free(v);
	free(untimed);
	free(seen);
	free(idx);
}

/* ---------------------------------------------------------- traced runs */

struct tcase {
	struct bx *b;
	const struct gc_shape *sh;
	struct gc_cupti *c;
	struct gc_cupti_clones *w;
	CUpti_ActivityKind kind;
	size_t since;          /* clones seen before the case's graph was built */
	struct node_ids ids;   /* the ids its records may name */
	struct gc_cupti_take t;
};

#define MAX_COPIES 8 /* ids kept per template node: its own and its copies' */

/* The ids a record of gr may name, per template node, sorted for node_idx(). */
static void node_ids(struct tcase *c, const struct bx_graph *gr, size_t since,
		     struct node_ids *ids)
{
	uint64_t buf[MAX_COPIES];

	ids->v = calloc((size_t)gr->n * MAX_COPIES, sizeof(*ids->v));
	ids->n = ids->copies = 0;
	gc_assert(ids->v);
	for (unsigned i = 0; i < gr->n; i++) {
		size_t k = gc_cupti_clone_ids(c->w, since, gr->nodes[i], buf, MAX_COPIES);

		gc_assert_f(k > 0, "cuptiGetGraphNodeId failed for node %u", i);
		for (size_t j = 0; j < k; j++)
			ids->v[ids->n++] = (struct node_id){ buf[j], i };
		ids->copies += k - 1;
	}
	qsort(ids->v, ids->n, sizeof(*ids->v), cmp_node_id);
}

/* CUPTI's side of lib/contract/trace.h, over a struct tcase. */
static void trace_begin(void *ctx, const struct gc_shape *sh)
{
	struct tcase *c = ctx;

	c->since = gc_cupti_clones_seen(c->w);
	c->sh = sh;
}

static void trace_built(void *ctx, const struct gc_shape *sh, void *graph)
{
	(void)sh;
	node_ids(ctx, graph, ((struct tcase *)ctx)->since, &((struct tcase *)ctx)->ids);
}

static void trace_drain(void *ctx)
{
	struct tcase *c = ctx;
	struct gc_cupti_take t;

	gc_cupti_flush(c->c);
	gc_cupti_take(&t);
	gc_cupti_take_free(&t);
}

static void trace_enable(void *ctx, bool on)
{
	struct tcase *c = ctx;

	bx_cupti_switch(c->c, c->kind, on);
}

static void trace_take(void *ctx, const struct gc_shape *sh, size_t want)
{
	struct tcase *c = ctx;

	(void)sh, (void)want;
	gc_assert(gc_cupti_flush(c->c) == 0);
	gc_cupti_take(&c->t);
}

static void trace_check(void *ctx, const struct gc_shape *sh, const uint64_t *stamps,
			unsigned launches)
{
	struct tcase *c = ctx;
	const struct launch_stamps ls = { .st = stamps, .n = sh->kernels };

	check_records(&c->t, &c->ids, &ls, launches, sh->name);
}

static void trace_end(void *ctx)
{
	struct tcase *c = ctx;

	gc_cupti_take_free(&c->t);
	free(c->ids.v);
}

/* trace-leak's take: the first of the measured launches drops one under the knob. */
static struct gc_trace_count trace_count(void *ctx, size_t want, bool first)
{
	struct tcase *c = ctx;
	struct gc_cupti_take t;
	struct gc_trace_count n;

	(void)want;
	gc_cupti_flush(c->c);
	gc_cupti_take(&t);
	if (first)
		bx_remove_record(&t);
	n = (struct gc_trace_count){ t.nk, t.dropped };
	gc_cupti_take_free(&t);
	return n;
}

static struct gc_usage trace_usage(void *ctx)
{
	struct bx *b = ((struct tcase *)ctx)->b;
	size_t free_bytes, total;

	gc_cu_assert(b->cu, b->cu->cuMemGetInfo(&free_bytes, &total));
	return gc_usage_now(free_bytes);
}

static const struct gc_trace_ops trace_ops = {
	.begin = trace_begin, .built = trace_built, .drain = trace_drain,
	.enable = trace_enable, .take = trace_take, .check = trace_check, .end = trace_end,
	.count = trace_count, .usage = trace_usage, .leak_series = true, .ratios_first = true,
};

static void traced_subtest(struct bx *b, CUpti_ActivityKind kind)
{
	struct gc_cupti c;
	struct gc_cupti_clones w;
	struct tcase tc = { .b = b, .c = &c, .w = &w, .kind = kind };
	const struct gc_trace_run run = {
		.ops = &trace_ops, .ctx = &tc, .dev = &b->dev, .mode = mode_name(kind),
		.ratio = kind == CUPTI_ACTIVITY_KIND_KERNEL ? "serial" : "trace",
	};
	char why[512];

	bx_cupti_up(&c);
	if (gc_cupti_clones_watch(&c, &w, why, sizeof(why)) < 0)
		gc_warn("%s: records are matched to nodes by start order", why);
	gc_trace_shapes(&run);
	gc_cupti_clones_stop(&w);
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

/*
 * trace-leak: the pooled-signal leak class. 400 traced launches of chain256
 * (102,400 dispatches) after a warm-up: every record arrives, and host RSS,
 * device free memory and open fds come back within the stated tolerances
 * (CUPTI keeps buffers and per-thread state: GC_TRACE_LEAK_RSS_KIB).
 */
void test_trace_leak(void *data)
{
	struct bx *b = data;
	struct gc_cupti cp;
	struct tcase c = { .b = b, .c = &cp, .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL };

	bx_cupti_up(&cp);
	gc_trace_leak(&trace_ops, &c, &b->dev);
}

/* -------------------------------------------------------- attach/detach */

#define CYCLES 100       /* attach/detach cycles at level standard (a soak) */
#define CYCLES_QUICK 10
#define MAX_LAUNCHES 200000u /* the launcher's bookkeeping: it stops launching after these */

/*
 * A thread that keeps launching chain16 and waiting for it, noting on
 * CUPTI's clock (cuptiGetTimestamp, which its records share) when each
 * launch call began and returned and when the launch had finished, and from
 * the stamps the longest kernel and the longest gap it saw.
 */
struct launcher {
	struct bx *b;
	struct gc_cupti *c;
	struct bx_graph *gr;
	int stop;
	unsigned launches;
	uint64_t *t;             /* 3 per launch: call, return, finished */
	uint64_t st[2 * 16];
	uint64_t max_kernel, max_gap;
};

static void launcher_stamps(struct launcher *l)
{
	gc_cu_assert(l->b->cu, l->b->cu->cuMemcpyDtoH(l->st, l->b->stamps, sizeof(l->st)));
	for (unsigned i = 0; i < 16; i++) {
		uint64_t k = l->st[2 * i + 1] - l->st[2 * i];
		uint64_t g = i ? l->st[2 * i] - l->st[2 * i - 1] : 0;

		l->max_kernel = k > l->max_kernel ? k : l->max_kernel;
		l->max_gap = i && l->st[2 * i] >= l->st[2 * i - 1] && g > l->max_gap ? g :
										       l->max_gap;
	}
}

static void *launcher_thread(void *p)
{
	struct launcher *l = p;

	gc_cu_assert(l->b->cu, gc_cuda_use(l->b->cu, 0));
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE) && l->launches < MAX_LAUNCHES) {
		uint64_t *t = &l->t[3 * (size_t)l->launches];

		l->c->cuptiGetTimestamp(&t[0]);
		gc_cu_assert(l->b->cu, l->b->cu->cuGraphLaunch(l->gr->x, l->b->s));
		l->c->cuptiGetTimestamp(&t[1]);
		gc_cu_assert(l->b->cu, l->b->cu->cuStreamSynchronize(l->b->s));
		l->c->cuptiGetTimestamp(&t[2]);
		launcher_stamps(l);
		l->launches++;
	}
	return NULL;
}

/*
 * Enabled windows on CUPTI's clock (struct gc_trace_windows of width 4):
 * before enable, after it returned, before disable, after; one per cycle, in
 * time order (each stamp ascends with c).
 */
#define WINDOW_STAMPS 4

/* The last window c whose stamp k is at or before ts, or -1. */
static long window_at(const struct gc_trace_windows *w, unsigned k, uint64_t ts)
{
	long lo = 0, hi = (long)w->n - 1, hit = -1;

	while (lo <= hi) {
		long mid = (lo + hi) / 2;

		if (gc_trace_window(w, mid)[k] <= ts)
			hit = mid, lo = mid + 1;
		else
			hi = mid - 1;
	}
	return hit;
}

/* The last launch whose call began at or before ts, or -1. */
static long launch_at(const struct launcher *l, uint64_t ts)
{
	long lo = 0, hi = (long)l->launches - 1, hit = -1;

	while (lo <= hi) {
		long mid = (lo + hi) / 2;

		if (l->t[3 * mid] <= ts)
			hit = mid, lo = mid + 1;
		else
			hi = mid - 1;
	}
	return hit;
}

/*
 * Whether launch i began and finished while tracing was surely on: inside
 * the last window whose enable returned before it began, if any.
 */
static bool launch_inside(const struct launcher *l, const struct gc_trace_windows *w, long i)
{
	const uint64_t *t = &l->t[3 * i];
	long c = window_at(w, 1, t[0]);

	return c >= 0 && t[2] <= gc_trace_window(w, c)[2];
}

/*
 * Whether the call [start, end] overlaps some window (enable began .. disable
 * returned): the last one whose enable began before the call ended, if any.
 */
static bool call_in_window(const struct gc_trace_windows *w, uint64_t start, uint64_t end)
{
	long c = window_at(w, 0, end);

	return c >= 0 && start <= gc_trace_window(w, c)[3];
}

/*
 * Whether launch i's call overlapped a switch (enabling or disabling): its
 * driver-API record may then be missing while its kernels are recorded, the
 * two kinds being switched one after the other.
 */
static bool launch_straddles(const struct launcher *l, const struct gc_trace_windows *w, long i)
{
	const uint64_t *t = &l->t[3 * i];
	long on = window_at(w, 0, t[1]), off = window_at(w, 2, t[1]);

	return (on >= 0 && t[0] <= gc_trace_window(w, on)[1]) ||
	       (off >= 0 && t[0] <= gc_trace_window(w, off)[3]);
}

static int cmp_api_corr(const void *a, const void *b)
{
	const struct gc_cupti_api *x = a, *y = b;

	return x->correlation_id < y->correlation_id ? -1 : x->correlation_id > y->correlation_id;
}

/* What check_windows() found. */
struct window_check {
	unsigned orphans;   /* kernel records whose launch call CUPTI did not record */
	unsigned straddles; /* launch calls that overlapped a switch */
	unsigned stretched; /* kernel records longer than the longest stamped kernel + 10 us */
	unsigned outside;   /* kernel records of launch calls made in no enabled window */
	unsigned early;     /* kernel records that start before their launch call began */
	unsigned inside;    /* launches made and finished while tracing was surely on */
	unsigned missing;   /* of those, kernel records missing */
	uint64_t max_rec;   /* the longest kernel record, ns */
	char first[320];    /* the first orphan */
};

/*
 * One kernel record: its launch is the driver-API record of the same
 * correlation id (the cuGraphLaunch call, timed on the host), which must
 * overlap an enabled window; counted against the launcher's launch made then.
 */
static void check_record(const struct gc_cupti_kernel *k, size_t r, const struct launcher *l,
			 const struct gc_trace_windows *w, const struct gc_cupti_take *t, uint8_t *per,
			 struct window_check *wc)
{
	struct gc_cupti_api key = { .correlation_id = k->correlation_id };
	const struct gc_cupti_api *a = bsearch(&key, t->api, t->napi, sizeof(*t->api),
					       cmp_api_corr);
	long i;

	wc->max_rec = k->end - k->start > wc->max_rec ? k->end - k->start : wc->max_rec;
	wc->stretched += k->end - k->start > l->max_kernel + 10000;
	if (!a) {
		if (wc->orphans++ == 0)
			snprintf(wc->first, sizeof(wc->first), "record %zu [%llu, %llu], "
				 "correlation id %u", r, (unsigned long long)k->start,
				 (unsigned long long)k->end, k->correlation_id);
		return;
	}
	wc->outside += !call_in_window(w, a->start, a->end);
	wc->early += k->start < a->start;
	i = launch_at(l, a->start);
	gc_assert_f(i >= 0 && a->start <= l->t[3 * i + 1], "the launch call of record %zu "
		    "[%llu, %llu] lies in none of the launcher's calls", r,
		    (unsigned long long)a->start, (unsigned long long)a->end);
	gc_assert_f(++per[i] <= 16, "launch %ld of chain16 has more than 16 kernel records", i);
}

/* GPUCONFORM_BUBBLES_REMOVE=record: drop a record of a launch made wholly inside a window. */
static void remove_inside(struct gc_cupti_take *t, const struct launcher *l,
			  const struct gc_trace_windows *w)
{
	for (size_t r = 0; gc_bubbles_remove("record") && r < t->nk; r++) {
		struct gc_cupti_api key = { .correlation_id = t->k[r].correlation_id };
		const struct gc_cupti_api *a = bsearch(&key, t->api, t->napi, sizeof(*t->api),
						       cmp_api_corr);
		long i = a ? launch_at(l, a->start) : -1;

		if (i >= 0 && launch_inside(l, w, i)) {
			t->k[r] = t->k[--t->nk];
			return;
		}
	}
}

/*
 * Every kernel record belongs, by correlation id, to a launch call that
 * CUPTI recorded overlapping an enabled window and starts after that call
 * began (or, for a call that overlapped a switch, whose driver-API record
 * may be missing, to no recorded call: 16 such records per such call);
 * a launch that began and finished while tracing was surely on has all 16
 * of its records; no launch has more.
 */
static void check_windows(struct gc_cupti_take *t, const struct launcher *l,
			  const struct gc_trace_windows *w, struct window_check *wc)
{
	uint8_t *per = calloc(l->launches ? l->launches : 1, 1);

	gc_assert(per);
	memset(wc, 0, sizeof(*wc));
	qsort(t->api, t->napi, sizeof(*t->api), cmp_api_corr);
	remove_inside(t, l, w);
	for (size_t r = 0; r < t->nk; r++)
		check_record(&t->k[r], r, l, w, t, per, wc);
	for (unsigned i = 0; i < l->launches; i++) {
		wc->straddles += launch_straddles(l, w, i);
		if (launch_inside(l, w, i)) {
			wc->inside++;
			wc->missing += 16 - per[i];
		}
	}
	gc_info("%u launches, %zu kernel and %zu driver-API records; %u launches wholly inside "
		"an enabled window, %u of their kernel records missing; %u kernel records whose "
		"launch call was not recorded%s%s (%u launch calls overlapped a switch); %u of "
		"launch calls made in no window; %u start before their launch call began; %u "
		"longer than the longest stamped kernel + 10 us (longest kernel record %llu ns, "
		"longest stamped kernel %llu ns, longest stamped gap %llu ns)", l->launches, t->nk,
		t->napi, wc->inside, wc->missing, wc->orphans, wc->orphans ? ", the first: " : "",
		wc->first, wc->straddles, wc->outside, wc->early, wc->stretched,
		(unsigned long long)wc->max_rec, (unsigned long long)l->max_kernel,
		(unsigned long long)l->max_gap);
	free(per);
}

/* attach-detach's state, for its soak's cycles, its records and its verdict. */
struct ad {
	struct gc_cupti *cp;
	struct launcher *l;
	struct gc_trace_windows *w;
	struct window_check wc;
};

/* One cycle: both kinds enabled for 2 ms, disabled, 1 ms off; its 32 bytes of stamps into w. */
static void switch_cycle(void *ctx, uint64_t *w)
{
	struct gc_cupti *cp = ((struct ad *)ctx)->cp;

	cp->cuptiGetTimestamp(&w[0]);
	bx_cupti_switch(cp, CUPTI_ACTIVITY_KIND_DRIVER, true);
	bx_cupti_switch(cp, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true);
	cp->cuptiGetTimestamp(&w[1]);
	usleep(2000);
	cp->cuptiGetTimestamp(&w[2]);
	bx_cupti_switch(cp, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, false);
	bx_cupti_switch(cp, CUPTI_ACTIVITY_KIND_DRIVER, false);
	cp->cuptiGetTimestamp(&w[3]);
	usleep(1000);
}

/* The soak's held bytes: the kernel and API records the collector keeps until the end. */
static size_t records_held(void *arg)
{
	(void)arg;
	return gc_cupti_held_bytes();
}

/* The soak's records: some, each checked against the windows (check_windows). */
static void ad_records(void *ctx, const struct gc_gap_stats *before)
{
	struct ad *a = ctx;
	struct gc_cupti_take t;

	(void)before;
	gc_assert(gc_cupti_flush(a->cp) == 0);
	gc_cupti_take(&t);
	if (a->l->launches == MAX_LAUNCHES)
		gc_info("the launcher stopped at %u launches (its bookkeeping); later windows had "
			"no launch in flight", MAX_LAUNCHES);
	gc_assert_f(t.nk > 0, "no record in %zu enabled windows of 2 ms", a->w->n);
	check_windows(&t, a->l, a->w, &a->wc);
	gc_cupti_take_free(&t);
}

static void ad_verdict(void *ctx)
{
	const struct window_check wc = ((struct ad *)ctx)->wc; /* a copy: the messages name wc. */

	gc_assert_f(wc.missing == 0, "%u kernel records missing from %u launches made and "
		    "finished while tracing was on", wc.missing, wc.inside);
	gc_assert_f(wc.orphans <= 16 * wc.straddles, "%u kernel records belong to no recorded "
		    "launch call, more than the %u launch calls that overlapped a switch explain "
		    "(made while tracing was off); the first: %s", wc.orphans, wc.straddles,
		    wc.first);
	gc_assert_f(wc.outside == 0, "%u kernel records belong to launch calls made in no enabled "
		    "window", wc.outside);
	gc_assert_f(wc.early == 0, "%u kernel records start before their launch call began",
		    wc.early);
}

/*
 * attach-detach: concurrent kernel and driver-API tracing enabled and
 * disabled again and again (a soak: 100 times at standard, 10 at quick, as
 * many as fit at long) while a thread keeps launching chain16 (up to
 * MAX_LAUNCHES launches): no crash, no hang (the launcher must stop within
 * 10 s), every kernel record belongs (by correlation id) to a launch call
 * recorded inside an enabled window, launches made wholly inside one are
 * complete; after the last disable, the gaps against the untraced ones of
 * this same process. The records are checked at the end, so the collector
 * holds them until then (about 0.5 KiB a traced launch): the soak's RSS
 * series leaves them out (gc_cupti_held_bytes), so what it shows is what
 * CUPTI and the driver keep.
 */
void test_attach_detach(void *data)
{
	struct bx *b = data;
	const struct gc_shape *sh = gc_shape_get("chain16");
	struct launcher l = { .b = b };
	struct gc_trace_windows *w = calloc(1, sizeof(*w));
	struct gc_cupti cp;
	struct ad ad = { .cp = &cp, .l = &l, .w = w };
	struct bx_graph gr;

	bx_cupti_up(&cp);
	l.c = &cp;
	l.t = malloc((size_t)MAX_LAUNCHES * 3 * sizeof(*l.t));
	gc_assert(w && l.t);
	w->width = WINDOW_STAMPS;
	memset(l.t, 0, (size_t)MAX_LAUNCHES * 3 * sizeof(*l.t)); /* resident before the soak */
	bx_graph_build(b, sh, &gr);
	l.gr = &gr;
	gc_trace_attach_detach(&b->dev, sh, &gr, &(struct gc_trace_attach){
		.launcher = launcher_thread, .arg = &l, .stop = &l.stop, .watchdog_s = 10,
		.soak = { .name = "attach-detach", .cycles = CYCLES, .quick = CYCLES_QUICK,
			  .cycle = "CUPTI concurrent-kernel and driver-API tracing enabled for 2 "
				   "ms and disabled for 1 ms while a thread launches chain16",
			  .dev_used = gc_cuda_soak_dev0, .dev_arg = b->cu,
			  .held_bytes = records_held },
		.w = w, .cycle = switch_cycle, .ctx = &ad, .records = ad_records,
		.verdict = ad_verdict });
	bx_graph_free(b, &gr);
	free(l.t);
	free(w->w);
	free(w);
}

/* ------------------------------------------------------ profiler sessions */

/*
 * What a session enables, per configuration (lib/prof_sessions.h): the
 * kernel kind of the session's mode (concurrent or serialized), API records
 * beside it, the graph-node clone callback a tracer subscribes to (as
 * traced-concurrent / traced-serialized do), or memory copies alone.
 */
static const CUpti_ActivityKind sess_kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
						 CUPTI_ACTIVITY_KIND_KERNEL };
static const char *const sess_modes[] = { "concurrent", "serialized" };
_Static_assert(ARRAY_SIZE(sess_kinds) == ARRAY_SIZE(sess_modes), "a name per mode");

enum { CFG_KERNEL, CFG_DRIVER, CFG_RUNTIME, CFG_CLONES, CFG_DRIVER_CLONES, CFG_MEMCPY, NCFG };
static const struct sess_cfg {
	bool kernel, driver, runtime, clones, copies;
} sess_cfgs[NCFG] = {
	[CFG_KERNEL] = { .kernel = true },
	[CFG_DRIVER] = { .kernel = true, .driver = true },
	[CFG_RUNTIME] = { .kernel = true, .runtime = true },
	[CFG_CLONES] = { .kernel = true, .clones = true },
	[CFG_DRIVER_CLONES] = { .kernel = true, .driver = true, .clones = true },
	[CFG_MEMCPY] = { .copies = true },
};
static const struct gc_sess_config sess_configs[NCFG] = {
	[CFG_KERNEL] = { "kernel", "the kernel kind alone", true, GC_LEVEL_QUICK },
	[CFG_DRIVER] = { "kernel-driver", "the kernel kind and driver-API records", true,
			 GC_LEVEL_LONG },
	[CFG_RUNTIME] = { "kernel-runtime", "the kernel kind and runtime-API records", true,
			  GC_LEVEL_LONG },
	[CFG_CLONES] = { "kernel-clones", "the kernel kind and the graph-node clone callback",
			 true, GC_LEVEL_LONG },
	[CFG_DRIVER_CLONES] = { "kernel-driver-clones", "the kernel kind, driver-API records "
				"and the graph-node clone callback", true, GC_LEVEL_LONG },
	[CFG_MEMCPY] = { "memcpy", "the memory-copy kind alone", false, GC_LEVEL_LONG },
};

#define SESS_COPIES 64          /* host-to-device copies a session makes */
#define SESS_COPY_BYTES 4093    /* their size: no graph's copy node has it */
#define SESS_RUNTIME_CALLS 64   /* cudaStreamQuery calls a kernel-runtime session makes */

/* The runtime API's one call this test makes, for kernel-runtime (libcudart at run time). */
struct sess_rt {
	void *lib;
	int (*stream_query)(CUstream s); /* cudaStreamQuery: cudaStream_t is a CUstream */
	char path[256];
};

struct sess_ctx {
	struct bx *b;
	struct gc_cupti c;
	struct gc_cupti_clones w;
	bool up, finalized;
	/* GPUCONFORM_BUBBLES_REMOVE=detach: the main kind a detach left on, or INVALID */
	CUpti_ActivityKind left_on;
	struct bx_deep deep;
	struct sess_rt rt;
	CUdeviceptr copy_dst;
	void *copy_src;
};

/* The kind a session of config c in mode m records first: its kernel kind, or memory copies. */
static CUpti_ActivityKind sess_main_kind(unsigned m, unsigned c)
{
	return sess_cfgs[c].kernel ? sess_kinds[m] : CUPTI_ACTIVITY_KIND_MEMCPY;
}

/* Every kind a session of config c in mode m enables, into k: how many. */
static size_t sess_kinds_of(unsigned m, unsigned c, CUpti_ActivityKind k[4])
{
	size_t n = 0;

	k[n++] = sess_main_kind(m, c);
	if (sess_cfgs[c].driver)
		k[n++] = CUPTI_ACTIVITY_KIND_DRIVER;
	if (sess_cfgs[c].runtime)
		k[n++] = CUPTI_ACTIVITY_KIND_RUNTIME;
	return n;
}

/* kernel-runtime: libcudart loaded and initialised before pristine is measured. */
static void sess_prepare(void *ctx, unsigned c)
{
	static const char *const names[] = { "libcudart.so.13", "libcudart.so.12", "libcudart.so",
					     GC_CUDA_RT_DIR "/lib64/libcudart.so" };
	struct sess_ctx *x = ctx;
	char why[512];
	int r;

	if (!sess_cfgs[c].runtime)
		return;
	x->rt.lib = gc_dlopen_first(names, ARRAY_SIZE(names), RTLD_NOW | RTLD_LOCAL, x->rt.path,
				    sizeof(x->rt.path), why, sizeof(why));
	if (!x->rt.lib)
		gc_skip("kernel-runtime traces runtime-API calls, and no CUDA runtime loads: %s",
			why);
	*(void **)&x->rt.stream_query = dlsym(x->rt.lib, "cudaStreamQuery");
	gc_assert_f(x->rt.stream_query, "%s: no symbol cudaStreamQuery", x->rt.path);
	r = x->rt.stream_query(x->b->s); /* the runtime's first call initialises it */
	gc_assert_f(r == 0 || r == 600, "cudaStreamQuery: %d (0: cudaSuccess, 600: "
		    "cudaErrorNotReady)", r);
	gc_info("kernel-runtime: %s loaded and initialised before pristine", x->rt.path);
}

/* Take what CUPTI holds now: flushed, freed. */
static void sess_drain(struct sess_ctx *x)
{
	struct gc_cupti_take t;

	gc_assert(gc_cupti_flush(&x->c) == 0);
	gc_cupti_take(&t);
	gc_cupti_take_free(&t);
}

static void sess_attach(void *ctx, unsigned m, unsigned c)
{
	struct sess_ctx *x = ctx;
	CUpti_ActivityKind k[4];
	size_t n = sess_kinds_of(m, c, k);
	char why[512];

	if (!x->up) /* the first attach loads libcupti: pristine was measured without it */
		bx_cupti_up(&x->c);
	x->up = true;
	if (x->left_on != CUPTI_ACTIVITY_KIND_INVALID) /* the knob's leftover, never with another */
		bx_cupti_switch(&x->c, x->left_on, false);
	x->left_on = CUPTI_ACTIVITY_KIND_INVALID;
	if (sess_cfgs[c].clones && gc_cupti_clones_watch(&x->c, &x->w, why, sizeof(why)) < 0)
		gc_warn("%s: this session subscribes no callback", why);
	sess_drain(x);
	gc_cupti_tag_bytes(SESS_COPY_BYTES);
	for (size_t i = n; i-- > 0;) /* API records first, so that every launch call is seen */
		bx_cupti_switch(&x->c, k[i], true);
}

/* The deep queue, SESS_COPIES copies and, for kernel-runtime, SESS_RUNTIME_CALLS runtime calls. */
static uint64_t sess_workload(void *ctx, unsigned c)
{
	struct sess_ctx *x = ctx;
	struct gc_cuda *cu = x->b->cu;
	uint64_t n = bx_deep_run(&x->deep, &x->c, CUPTI_ACTIVITY_KIND_INVALID); /* traced as it is */

	for (unsigned i = 0; i < SESS_COPIES; i++)
		gc_cu_assert(cu, cu->cuMemcpyHtoDAsync(x->copy_dst, x->copy_src, SESS_COPY_BYTES,
						       x->b->s));
	gc_cu_assert(cu, cu->cuStreamSynchronize(x->b->s));
	for (unsigned i = 0; i < SESS_RUNTIME_CALLS && sess_cfgs[c].runtime; i++) {
		int r = x->rt.stream_query(x->b->s);

		gc_assert_f(r == 0, "cudaStreamQuery on an idle stream: %d, not cudaSuccess", r);
	}
	return n;
}

/* The session's records against what it made; t holds them. */
static void sess_check(const struct gc_cupti_take *t, unsigned m, unsigned c, uint64_t dispatches)
{
	const struct sess_cfg *k = &sess_cfgs[c];
	const char *name = sess_configs[c].name;
	size_t other_kind = 0;

	for (size_t i = 0; i < t->nk; i++)
		other_kind += t->k[i].kind != (int)sess_kinds[m];
	gc_info("%s session (%s): %zu kernel records for %llu kernel dispatches, %zu driver-API "
		"records, %llu runtime-API records, %llu memory-copy records (%llu of the %d "
		"copies of %d bytes), %llu dropped", name, k->kernel ? sess_modes[m] : "no kernel "
		"kind", t->nk, (unsigned long long)dispatches, t->napi,
		(unsigned long long)t->nruntime, (unsigned long long)t->ncopy,
		(unsigned long long)t->ncopy_tagged, SESS_COPIES, SESS_COPY_BYTES,
		(unsigned long long)t->dropped);
	gc_assert_f((!k->kernel || t->nk) && (!k->driver || t->napi) &&
		    (!k->runtime || t->nruntime) && (!k->copies || t->ncopy), "the %s session "
		    "recorded %zu kernels, %zu driver and %llu runtime calls, %llu copies: a kind it "
		    "enabled recorded nothing, no session took place", name, t->nk, t->napi,
		    (unsigned long long)t->nruntime, (unsigned long long)t->ncopy);
	gc_check_f((k->kernel || !t->nk) && (k->driver || !t->napi) &&
		   (k->runtime || !t->nruntime) && (k->copies || !t->ncopy), "the %s session "
		   "recorded %zu kernels, %zu driver and %llu runtime calls, %llu copies: records of "
		   "a kind it did not enable", name, t->nk, t->napi,
		   (unsigned long long)t->nruntime, (unsigned long long)t->ncopy);
	gc_check_f(!k->kernel || t->nk == dispatches, "%s session: %zu kernel records for %llu "
		   "dispatches", name, t->nk, (unsigned long long)dispatches);
	gc_check_f(other_kind == 0 || !k->kernel, "%s session: %zu kernel records of another kind "
		   "than %d", name, other_kind, (int)sess_kinds[m]);
	gc_check_f(!k->runtime || t->nruntime >= SESS_RUNTIME_CALLS, "%s session: %llu runtime-API "
		   "records for %d cudaStreamQuery calls", name, (unsigned long long)t->nruntime,
		   SESS_RUNTIME_CALLS);
	gc_check_f(!k->copies || t->ncopy_tagged == SESS_COPIES, "%s session: %llu records of "
		   "copies of %d bytes for the %d made", name,
		   (unsigned long long)t->ncopy_tagged, SESS_COPY_BYTES, SESS_COPIES);
	gc_check_f(t->dropped == 0, "%s session: CUPTI dropped %llu records", name,
		   (unsigned long long)t->dropped);
}

/*
 * Detach: the session's kinds off (GPUCONFORM_BUBBLES_REMOVE=detach leaves
 * its main kind on, so that the after-measurements are seen to fail), the
 * callback unsubscribed, its records taken and checked: one kernel record of
 * its kind per dispatch made while attached (DESIGN.md: every dispatch
 * appears in the trace), API calls recorded, every copy, none dropped.
 */
static void sess_detach(void *ctx, unsigned m, unsigned c, uint64_t dispatches)
{
	struct sess_ctx *x = ctx;
	CUpti_ActivityKind k[4];
	size_t n = sess_kinds_of(m, c, k);
	struct gc_cupti_take t;

	if (gc_bubbles_remove("detach"))
		x->left_on = k[0];
	for (size_t i = x->left_on == k[0] ? 1 : 0; i < n; i++)
		bx_cupti_switch(&x->c, k[i], false);
	if (sess_cfgs[c].clones)
		gc_cupti_clones_stop(&x->w);
	gc_assert(gc_cupti_flush(&x->c) == 0);
	gc_cupti_take(&t);
	sess_check(&t, m, c, dispatches);
	gc_cupti_take_free(&t);
}

/*
 * Records that arrived after a detach (cuptiActivityDisable: the kind of
 * activity record to stop collecting).
 */
static uint64_t sess_stray(void *ctx)
{
	struct sess_ctx *x = ctx;
	struct gc_cupti_take t;
	uint64_t n;

	if (!x->up)
		return 0;
	gc_assert(gc_cupti_flush(&x->c) == 0);
	gc_cupti_take(&t);
	n = t.nk + t.napi + t.nruntime + t.ncopy + t.other;
	if (n)
		gc_info("after the detach: %zu kernel records, %zu driver-API, %llu runtime-API, "
			"%llu memory-copy, %llu other records", t.nk, t.napi,
			(unsigned long long)t.nruntime, (unsigned long long)t.ncopy,
			(unsigned long long)t.other);
	gc_cupti_take_free(&t);
	return n;
}

/* cuptiFinalize called from the exit of the first driver-API call after it is armed. */
struct fin_site {
	const struct gc_cupti *c;
	bool armed, done;
	CUptiResult r;
	CUpti_CallbackId cbid;
};

static void CUPTIAPI fin_at_exit(void *user, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
				 const void *data)
{
	struct fin_site *f = user;
	const CUpti_CallbackData *cd = data;

	if (dom != CUPTI_CB_DOMAIN_DRIVER_API || !f->armed || f->done ||
	    cd->callbackSite != CUPTI_API_EXIT)
		return;
	f->done = true;
	f->cbid = cbid;
	f->r = f->c->cuptiFinalize();
}

/*
 * cupti_activity.h, cuptiFinalize: "This API detaches the CUPTI from the
 * running process. It destroys and cleans up all the resources associated with
 * CUPTI in the current process. After CUPTI detaches from the process, the
 * process will keep on running with no CUPTI attached to it. For safe
 * operation of the API, it is recommended this API is invoked from the exit
 * callsite of any of the CUDA Driver or Runtime API." [src
 * zspace/system.cuda-12.6 extras/CUPTI/include/cupti_activity.h @
 * b3d92c837713] (CUDA 12.6.3; the same in CUDA 13.0's, CUPTI_API_VERSION
 * 130001). So it is: after a synchronize and a flush, from the driver-API
 * callback at the exit of a cuCtxSynchronize.
 */
static void sess_finalize(void *ctx)
{
	struct sess_ctx *x = ctx;
	struct gc_cuda *cu = x->b->cu;
	struct fin_site f = { .c = &x->c };
	CUpti_SubscriberHandle sub;
	CUptiResult r;
	char eb[160];

	if (x->left_on != CUPTI_ACTIVITY_KIND_INVALID)
		bx_cupti_switch(&x->c, x->left_on, false);
	x->left_on = CUPTI_ACTIVITY_KIND_INVALID;
	gc_cu_assert(cu, cu->cuCtxSynchronize());
	sess_drain(x);
	r = x->c.cuptiSubscribe(&sub, fin_at_exit, &f);
	if (r == CUPTI_SUCCESS)
		r = x->c.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	gc_assert_f(r == CUPTI_SUCCESS, "cuptiSubscribe / cuptiEnableDomain(DRIVER_API): %s",
		    gc_cupti_strerror(&x->c, r, eb, sizeof(eb)));
	f.armed = true;
	gc_cu_assert(cu, cu->cuCtxSynchronize());
	gc_assert_f(f.done, "no driver-API exit callback came after cuCtxSynchronize");
	gc_assert_f(f.r == CUPTI_SUCCESS, "cuptiFinalize (at the exit of driver-API callback id "
		    "%u): %s", (unsigned)f.cbid, gc_cupti_strerror(&x->c, f.r, eb, sizeof(eb)));
	x->finalized = true;
}

/*
 * profiler-sessions. The bubbles contract (DESIGN.md): the gap between
 * kernels is measured per kernel, with and without a profiler tracing, and
 * every dispatch appears in the trace; and cupti_activity.h,
 * cuptiActivityDisable: "Disable collection of a specific kind of activity
 * record. [...] By default all activity kinds are disabled for collection."
 * [src zspace/system.cuda-12.6 extras/CUPTI/include/cupti_activity.h @
 * b3d92c837713] (CUDA 12.6.3; the same in CUDA 13.0's). A kind disabled
 * is a kind in its default state, so once a session has detached, the
 * process must cost what it cost before the first: the same gaps and graph
 * times, on graphs instantiated before, during and after the sessions.
 *
 * A matrix of plans (lib/prof_sessions.h): each configuration above in both
 * orders of the modes (concurrent then serialized, -cs; the reverse, -sc),
 * memcpy as two sessions of memory copies; each plan in a process of its
 * own, judged against pristine and against this process, which never loads
 * libcupti. Quick and standard run kernel-cs and kernel-sc (a tracer of
 * kernels only: the common case), long every plan; on an H100 every plan
 * costs 18-20 s and leaves the same residual. With GPUCONFORM_BUBBLES_FINALIZE
 * set, the plan's process then calls cuptiFinalize and measures again:
 * reported, not judged (off by default: see GC_SESS_FINALIZE_ENV).
 * GPUCONFORM_BUBBLES_REMOVE=detach leaves each session's main kind on at its
 * detach (switched off at the next attach): the subtest must then fail.
 */
void test_profiler_sessions(void *data)
{
	static const struct gc_sess_ops ops = {
		.modes = sess_modes, .nmodes = ARRAY_SIZE(sess_modes),
		.configs = sess_configs, .nconfigs = ARRAY_SIZE(sess_configs),
		.lib = "libcupti", .pristine = NULL, .prepare = sess_prepare,
		.attach = sess_attach, .workload = sess_workload, .detach = sess_detach,
		.stray = sess_stray, .finalize = sess_finalize, .finalize_what = "cuptiFinalize",
		.finalize_promise = "cupti_activity.h, cuptiFinalize: \"After CUPTI detaches from "
				    "the process, the process will keep on running with no CUPTI "
				    "attached to it\"",
	};
	struct bx *b = data;
	struct sess_ctx *x = calloc(1, sizeof(*x));

	gc_assert(x);
	x->b = b;
	x->left_on = CUPTI_ACTIVITY_KIND_INVALID;
	if (gc_sess_plan_env()) {
		bx_deep_open(b, &x->deep);
		gc_cu_assert(b->cu, b->cu->cuMemAlloc(&x->copy_dst, SESS_COPY_BYTES));
		gc_cu_assert(b->cu, b->cu->cuMemAllocHost(&x->copy_src, SESS_COPY_BYTES));
		memset(x->copy_src, 0x5a, SESS_COPY_BYTES);
	}
	gc_sess_run(&b->dev, &ops, x, "profiler-sessions");
	if (x->left_on != CUPTI_ACTIVITY_KIND_INVALID && !x->finalized)
		bx_cupti_switch(&x->c, x->left_on, false);
	if (gc_sess_plan_env()) {
		bx_deep_close(&x->deep);
		b->cu->cuMemFree(x->copy_dst);
		b->cu->cuMemFreeHost(x->copy_src);
	}
	if (x->rt.lib)
		dlclose(x->rt.lib);
	free(x);
}

// SPDX-License-Identifier: MIT
/*
 * hip_bubbles under a profiler: rocprofiler-sdk kernel-dispatch tracing of
 * HIP graph launches (traced-concurrent, trace-leak, attach-detach,
 * profiler-sessions), and why traced-serialized skips.
 *
 * UNVERIFIED ON HARDWARE: built with no rocprofiler-sdk header or library
 * and no AMD GPU; seen only skipping. Nothing here was run against a real
 * librocprofiler-sdk.
 *
 * Why rocprofiler-sdk and not HSA's own profiling: HIP dispatches on queues
 * it creates inside the runtime; hsa_amd_profiling_set_profiler_enabled()
 * needs the hsa_queue_t, which HIP's public API does not hand out. (Raw AQL
 * queues do: deep-inflight in bubbles.c traces that way.)
 *
 * The ABI used, restated from ROCm/rocprofiler-sdk's public headers
 * (source/include/rocprofiler-sdk/), since Debian ships none of them:
 *  - registration.h: rocprofiler_force_configure(configure_func), "can be
 *    invoked before any ROCm runtimes (lazily) initialize"; it returns
 *    ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED "if rocprofiler has
 *    already been configured". The configure function returns a
 *    rocprofiler_tool_configure_result_t { size, initialize, finalize,
 *    tool_data }; initialize(finalize_func, tool_data) creates the contexts.
 *  - context.h: rocprofiler_create_context / _start_context / _stop_context.
 *  - buffer.h: rocprofiler_create_buffer(context, size, watermark, policy,
 *    callback, data, &buffer) and rocprofiler_flush_buffer(buffer); the
 *    callback gets (context, buffer, headers, num_headers, data, drop_count).
 *  - buffer_tracing.h: rocprofiler_configure_buffer_tracing_service(context,
 *    ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH, NULL, 0, buffer), and
 *    rocprofiler_buffer_tracing_kernel_dispatch_record_t { size, kind,
 *    operation, correlation_id {internal, external}, thread_id,
 *    start_timestamp, end_timestamp ("in nanoseconds"), dispatch_info }.
 *  - fwd.h: enumerators (ROCPROFILER_BUFFER_CATEGORY_TRACING = 1,
 *    ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH = 11, ROCPROFILER_BUFFER_
 *    POLICY_LOSSLESS = 2), rocprofiler_record_header_t { category, kind;
 *    payload }, rocprofiler_kernel_dispatch_info_t (128 bytes: size,
 *    agent_id, queue_id, kernel_id, dispatch_id "unique id for each
 *    dispatch", segment sizes, workgroup and grid sizes, padding).
 *  - rocprofiler.h: rocprofiler_get_timestamp ("the timestamp value that
 *    rocprofiler uses"), rocprofiler_get_status_name.
 * The enumerator 11 is checked at run time: rocprofiler_query_buffer_
 * tracing_kind_name(11) must name KERNEL_DISPATCH, else the subtest skips
 * saying the ABI moved. Each record's size field must cover our layout.
 *
 * Registration must come before ROCr initialises, and a registered tool
 * intercepts every HSA queue of the process even while its context is
 * stopped. So the fixture registers only when the process starts with a
 * profiler subtest (the runner runs one subtest per process: `BIN
 * --run-subtest NAME`); the untraced reference of traced-concurrent is then
 * measured with the tool registered and its context stopped, and says so.
 *
 * rocprofiler_configure_func_t has no user-data argument: the one pointer
 * the configure function hands back as tool_data is kept in a file-scope
 * variable (pending), set only by hb_prof_register() before the call.
 *
 * Records name no graph node. They are matched to stamps by the stamp
 * kernel's kernel_id (learnt from one probe dispatch; memset / memcpy blit
 * kernels are other ids), split into launches by dispatch_id order (the
 * launches are made one at a time), and within a launch by dispatch order
 * (a chain's only topological order) or, for a wide graph's branches, by
 * start order against the stamps' start order. The record clock is
 * rocprofiler's (ns), the stamps' s_memrealtime: the bracketing check asks
 * for one offset under which every record contains its kernel's stamps.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bubbles_hip.h"
#include "measure.h"
#include "soak.h"
#include "usage.h"

#define TRACE_LAUNCHES 100
/*
 * Bracketing tolerance: ROCr turns the packet processor's tick stamps into
 * its system clock by a calibrated linear map, and s_memrealtime is a second
 * counter; 1 us allows both conversions' error. A stated tolerance for a
 * correctness check, not a performance threshold.
 */
#define BRACKET_SLACK_NS 1000
#define RECORD_WAIT_NS (10ull * 1000000000ull) /* records arrive from a handler thread */

#define RP_CATEGORY_TRACING 1u
#define RP_TRACING_KERNEL_DISPATCH 11u
#define RP_POLICY_LOSSLESS 2
#define RP_BUFFER_BYTES (4u << 20)

typedef struct {
	uint64_t handle;
} rp_id;
typedef struct {
	const char *name;
	const uint32_t handle;
} rp_client_id;
typedef void (*rp_client_finalize)(rp_client_id);
typedef struct {
	size_t size;
	int (*initialize)(rp_client_finalize fini, void *tool_data);
	void (*finalize)(void *tool_data);
	void *tool_data;
} rp_configure_result;
typedef rp_configure_result *(*rp_configure_fn)(uint32_t version, const char *runtime,
						uint32_t priority, rp_client_id *id);
typedef struct {
	union {
		struct {
			uint32_t category, kind;
		};
		uint64_t hash;
	};
	void *payload;
} rp_header;
typedef void (*rp_buffer_cb)(rp_id ctx, rp_id buf, rp_header **h, size_t n, void *data,
			     uint64_t drops);
struct rp_dispatch_record {
	uint64_t size;
	int32_t kind, operation;
	uint64_t corr_internal, corr_external;
	uint64_t thread_id;
	uint64_t start, end;
	struct {
		uint64_t size, agent, queue, kernel_id, dispatch_id;
		uint32_t private_size, group_size, wg[3], grid[3];
		uint8_t reserved[56];
	} info;
};

#define RP_FUNCS(X)                                                                         \
	X(force_configure, "rocprofiler_force_configure", int (*)(rp_configure_fn))         \
	X(create_context, "rocprofiler_create_context", int (*)(rp_id *))                    \
	X(start_context, "rocprofiler_start_context", int (*)(rp_id))                        \
	X(stop_context, "rocprofiler_stop_context", int (*)(rp_id))                          \
	X(create_buffer, "rocprofiler_create_buffer",                                        \
	  int (*)(rp_id, size_t, size_t, int, rp_buffer_cb, void *, rp_id *))                \
	X(flush_buffer, "rocprofiler_flush_buffer", int (*)(rp_id))                          \
	X(configure_buffer_tracing, "rocprofiler_configure_buffer_tracing_service",          \
	  int (*)(rp_id, int, const int32_t *, size_t, rp_id))                               \
	X(kind_name, "rocprofiler_query_buffer_tracing_kind_name",                           \
	  int (*)(int, const char **, uint64_t *))                                           \
	X(get_timestamp, "rocprofiler_get_timestamp", int (*)(uint64_t *))                   \
	X(status_name, "rocprofiler_get_status_name", const char *(*)(int))

struct hb_rec {
	uint64_t start, end, kernel_id, dispatch_id;
};

struct hb_prof {
	void *lib;
	char soname[32];
#define RP_MEMBER(member, sym, type) __typeof__(type) member;
	RP_FUNCS(RP_MEMBER)
#undef RP_MEMBER
	rp_configure_result cfg;
	rp_id ctx, buf;
	bool inited;
	char init_why[256];
	pthread_mutex_t mu;
	struct hb_rec *r;
	size_t n, cap;
	uint64_t dropped, short_records;
};

struct hb_take {
	struct hb_rec *r;
	size_t n;
	uint64_t dropped, short_records;
};

static struct hb_prof *pending; /* the API's configure function has no user data */

static const char *rp_err(const struct hb_prof *p, int st)
{
	const char *s = p->status_name ? p->status_name(st) : NULL;

	return s ? s : "unknown rocprofiler_status_t";
}

/* ------------------------------------------------------------ records */

static void on_records(rp_id ctx, rp_id buf, rp_header **h, size_t n, void *data, uint64_t drops)
{
	struct hb_prof *p = data;

	(void)ctx, (void)buf;
	pthread_mutex_lock(&p->mu);
	p->dropped += drops;
	for (size_t i = 0; i < n; i++) {
		const struct rp_dispatch_record *d = h[i]->payload;

		if (h[i]->category != RP_CATEGORY_TRACING || h[i]->kind != RP_TRACING_KERNEL_DISPATCH)
			continue;
		if (d->size < sizeof(*d)) {
			p->short_records++;
			continue;
		}
		if (p->n == p->cap) {
			size_t cap = p->cap ? 2 * p->cap : 1u << 16;
			struct hb_rec *r = realloc(p->r, cap * sizeof(*r));

			if (!r) {
				p->dropped++;
				continue;
			}
			p->r = r, p->cap = cap;
		}
		p->r[p->n++] = (struct hb_rec){ d->start, d->end, d->info.kernel_id,
						d->info.dispatch_id };
	}
	pthread_mutex_unlock(&p->mu);
}

static void take(struct hb_prof *p, struct hb_take *t)
{
	pthread_mutex_lock(&p->mu);
	t->r = p->r, t->n = p->n, t->dropped = p->dropped, t->short_records = p->short_records;
	p->r = NULL, p->n = p->cap = 0, p->dropped = p->short_records = 0;
	pthread_mutex_unlock(&p->mu);
}

/* Flush until `want` records of kernel `kid` (0: any) have arrived or RECORD_WAIT_NS passed. */
static void collect(struct hb_prof *p, uint64_t kid, size_t want, struct hb_take *t)
{
	uint64_t deadline = gc_now_ns() + RECORD_WAIT_NS;
	size_t have;

	for (;;) {
		gc_assert_f(p->flush_buffer(p->buf) == 0, "rocprofiler_flush_buffer failed");
		pthread_mutex_lock(&p->mu);
		have = 0;
		for (size_t i = 0; i < p->n; i++)
			have += !kid || p->r[i].kernel_id == kid;
		pthread_mutex_unlock(&p->mu);
		if (have >= want || gc_now_ns() > deadline)
			break;
		usleep(1000);
	}
	take(p, t);
}

/* Keep only kernel kid's records. */
static void keep_kernel(struct hb_take *t, uint64_t kid)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n; i++)
		if (t->r[i].kernel_id == kid)
			t->r[k++] = t->r[i];
	t->n = k;
}

/* ------------------------------------------------------- registration */

static int tool_init(rp_client_finalize fini, void *data)
{
	struct hb_prof *p = data;
	int st;

	(void)fini;
	st = p->create_context(&p->ctx);
	if (!st)
		st = p->create_buffer(p->ctx, RP_BUFFER_BYTES, RP_BUFFER_BYTES / 2,
				      RP_POLICY_LOSSLESS, on_records, p, &p->buf);
	if (!st)
		st = p->configure_buffer_tracing(p->ctx, RP_TRACING_KERNEL_DISPATCH, NULL, 0,
						 p->buf);
	if (st) {
		snprintf(p->init_why, sizeof(p->init_why), "tool initialisation: %s",
			 rp_err(p, st));
		return -1;
	}
	p->inited = true;
	return 0;
}

static rp_configure_result *tool_configure(uint32_t version, const char *runtime,
					   uint32_t priority, rp_client_id *id)
{
	struct hb_prof *p = pending;

	(void)version, (void)runtime, (void)priority;
	if (!p)
		return NULL;
	id->name = "gpuconform";
	p->cfg = (rp_configure_result){ sizeof(p->cfg), tool_init, NULL, p };
	return &p->cfg;
}

static bool prof_load(struct hb_prof *p, char *why, size_t len)
{
	static const char *const names[] = { "librocprofiler-sdk.so", "librocprofiler-sdk.so.1",
					     "librocprofiler-sdk.so.0" };
	const char *name = NULL;

	for (size_t i = 0; i < HB_ARRAY_SIZE(names) && !p->lib; i++)
		if ((p->lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL)))
			snprintf(p->soname, sizeof(p->soname), "%s", names[i]);
	if (!p->lib) {
		snprintf(why, len, "rocprofiler-sdk not installed: %s (also tried .so.1, .so.0)",
			 dlerror());
		return false;
	}
#define RP_RESOLVE(member, sym, type)                                               \
	if (!name && !(*(void **)&p->member = dlsym(p->lib, sym)))                  \
		name = sym;
	RP_FUNCS(RP_RESOLVE)
#undef RP_RESOLVE
	if (name)
		snprintf(why, len, "%s lacks %s", p->soname, name);
	return !name;
}

/* profiler-sessions' fresh process (GC_SESS_FRESH_ENV) must never register. */
static bool is_profiler_subtest(const char *name)
{
	return name && !gc_sess_fresh() &&
	       (!strcmp(name, "traced-concurrent") || !strcmp(name, "trace-leak") ||
		!strcmp(name, "attach-detach") || !strcmp(name, "profiler-sessions"));
}

void hb_prof_register(struct hb *b, const char *first_subtest)
{
	struct hb_prof *p;
	int st;

	if (!is_profiler_subtest(first_subtest)) {
		snprintf(b->prof_why, sizeof(b->prof_why), "rocprofiler-sdk must register before "
			 "ROCr initialises and then intercepts every queue of the process, so it is "
			 "registered only in a process that starts with a profiler subtest; this one "
			 "started with %s: run `hip_bubbles --run-subtest NAME` alone (the runner "
			 "does)", first_subtest ? first_subtest : "no subtest");
		return;
	}
	p = calloc(1, sizeof(*p));
	gc_assert(p);
	pthread_mutex_init(&p->mu, NULL);
	if (!prof_load(p, b->prof_why, sizeof(b->prof_why)))
		return; /* p and its library stay: nothing else refers to them */
	pending = p;
	st = p->force_configure(tool_configure);
	pending = NULL;
	if (st) {
		snprintf(b->prof_why, sizeof(b->prof_why), "rocprofiler_force_configure: %s",
			 rp_err(p, st));
		return;
	}
	b->prof = p;
}

/* The profiler for this subtest, or skip / fail naming why not. */
static struct hb_prof *prof_require(struct hb *b)
{
	struct hb_prof *p = b->prof;
	const char *kind = NULL;

	if (!p)
		gc_skip("%s", b->prof_why);
	gc_assert_f(p->inited, "rocprofiler-sdk (%s) refused to initialise our tool: %s",
		    p->soname, p->init_why[0] ? p->init_why : "initialize was never called");
	if (p->kind_name(RP_TRACING_KERNEL_DISPATCH, &kind, NULL) || !kind ||
	    !strstr(kind, "KERNEL_DISPATCH"))
		gc_skip("%s: buffer tracing kind %u is %s, not KERNEL_DISPATCH: the ABI restated "
			"from rocprofiler-sdk's fwd.h no longer holds", p->soname,
			RP_TRACING_KERNEL_DISPATCH, kind ? kind : "unnamed");
	hb_require(b);
	return p;
}

static void ctx_switch(struct hb_prof *p, bool on)
{
	int st = on ? p->start_context(p->ctx) : p->stop_context(p->ctx);

	gc_assert_f(st == 0, "rocprofiler_%s_context: %s", on ? "start" : "stop", rp_err(p, st));
}

static uint64_t rp_now(struct hb_prof *p)
{
	uint64_t t = 0;

	gc_assert(p->get_timestamp(&t) == 0);
	return t;
}

/* kernel_id of gc_stamp: the only kernel of one traced probe dispatch (no memset before it). */
static uint64_t stamp_kernel_id(struct hb *b, struct hb_prof *p)
{
	struct hb_take t;
	uint64_t kid;

	collect(p, 0, 0, &t);
	free(t.r);
	ctx_switch(p, true);
	hb_launch_stamp(b, 0);
	hb_assert(b, b->f.hipStreamSynchronize(b->s));
	ctx_switch(p, false);
	collect(p, 0, 1, &t);
	gc_assert_f(t.n == 1, "one traced probe dispatch gave %zu kernel records (%llu dropped)",
		    t.n, (unsigned long long)t.dropped);
	kid = t.r[0].kernel_id;
	free(t.r);
	return kid;
}

/* -------------------------------------------------------- completeness */

static int cmp_dispatch(const void *a, const void *b)
{
	const struct hb_rec *x = a, *y = b;

	return x->dispatch_id < y->dispatch_id ? -1 : x->dispatch_id > y->dispatch_id;
}

static int cmp_start(const void *a, const void *b)
{
	const struct hb_rec *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* idx[j] for the records r[0..n) of one launch of sh (r sorted by dispatch_id). */
static void match_launch(const struct gc_shape *sh, struct hb_rec *r, const uint64_t *st,
			 unsigned *idx)
{
	unsigned n = sh->kernels;

	for (unsigned j = 0; j < n; j++)
		idx[j] = j;
	if (sh->kind != GC_SHAPE_WIDE)
		return;
	qsort(r + 1, n - 2, sizeof(*r), cmp_start); /* branches: start order vs stamp order */
	for (unsigned i = 2; i < n - 1; i++)
		for (unsigned j = i; j > 1 && st[2 * idx[j]] < st[2 * idx[j - 1]]; j--) {
			unsigned x = idx[j];

			idx[j] = idx[j - 1], idx[j - 1] = x;
		}
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/*
 * One record per dispatch (launches x kernels, none dropped, none short),
 * start <= end, and one clock offset C with rec.start - C <= stamp.start and
 * stamp.end <= rec.end - C for every dispatch (stamps in ns).
 */
static void check_records(struct hb *b, const struct gc_shape *sh, struct hb_take *t,
			  const uint64_t *stamps, unsigned launches)
{
	unsigned n = sh->kernels, *idx = calloc(n, sizeof(*idx));
	int64_t min_d = INT64_MAX, min_e = INT64_MAX;

	gc_assert(idx);
	if (gc_bubbles_remove("record") && t->n) { /* one record removed on purpose */
		t->n--;
		t->r[t->n / 2] = t->r[t->n];
	}
	gc_assert_f(t->n == (size_t)launches * n, "%s: %zu kernel records for %u launches of %u "
		    "dispatches (%u expected), %llu dropped", sh->name, t->n, launches, n,
		    launches * n, (unsigned long long)t->dropped);
	gc_assert_f(t->dropped == 0 && t->short_records == 0, "%s: rocprofiler-sdk dropped %llu "
		    "records, %llu shorter than the restated layout", sh->name,
		    (unsigned long long)t->dropped, (unsigned long long)t->short_records);
	qsort(t->r, t->n, sizeof(*t->r), cmp_dispatch);
	for (unsigned l = 0; l < launches; l++) {
		struct hb_rec *r = &t->r[(size_t)l * n];
		const uint64_t *st = &stamps[(size_t)l * 2 * n];

		match_launch(sh, r, st, idx);
		for (unsigned j = 0; j < n; j++) {
			int64_t s = (int64_t)gc_gap_ns(&b->host, st[2 * idx[j]]);
			int64_t e = (int64_t)gc_gap_ns(&b->host, st[2 * idx[j] + 1]);

			gc_assert_f(r[j].start <= r[j].end, "%s: launch %u: a record ends before it "
				    "starts", sh->name, l);
			min_d = min64(min_d, s - (int64_t)r[j].start);
			min_e = min64(min_e, (int64_t)r[j].end - e);
		}
	}
	gc_info("%s: %zu records, one per dispatch; bracketing slack %lld ns", sh->name, t->n,
		(long long)(min_d + min_e));
	gc_assert_f(min_d + min_e >= -BRACKET_SLACK_NS, "%s: no single clock offset makes every "
		    "record bracket its kernel's stamps (short by %lld ns)", sh->name,
		    (long long)-(min_d + min_e));
	free(idx);
}

/* ---------------------------------------------------------- traced runs */

struct tcase {
	struct hb *b;
	struct hb_prof *p;
	const struct gc_shape *sh;
	uint64_t kid;
};

static void traced_case(void *ctx, const struct gc_shape *sh)
{
	struct tcase *c = ctx;
	uint64_t *keep = malloc((size_t)TRACE_LAUNCHES * 2 * sh->kernels * 8);
	struct gc_gap_stats plain, traced;
	struct hb_take t;
	struct hb_graph gr;

	c->sh = sh;
	gc_assert(keep);
	hb_graph_build(c->b, c->sh, &gr);
	plain = gc_gaps_measure(&c->b->dev, c->sh, &gr, TRACE_LAUNCHES, "graph", NULL);
	collect(c->p, 0, 0, &t);
	free(t.r);
	ctx_switch(c->p, true);
	traced = gc_gaps_measure(&c->b->dev, c->sh, &gr, TRACE_LAUNCHES, "graph-trace", keep);
	ctx_switch(c->p, false);
	collect(c->p, c->kid, (size_t)TRACE_LAUNCHES * c->sh->kernels, &t);
	keep_kernel(&t, c->kid);
	check_records(c->b, c->sh, &t, keep, TRACE_LAUNCHES);
	gc_gap_ratios("trace", c->sh->name, &traced, &plain, true);
	free(t.r);
	free(keep);
	hb_graph_free(c->b, &gr);
}

/*
 * traced-concurrent. Contract: with kernel-dispatch
 * tracing on, every dispatch of every graph launch has exactly one record,
 * none dropped, each bracketing its kernel's own stamps under one clock
 * offset; every dispatch still runs once and every gap is >= 0. Gap p50 /
 * p99 and graph time traced over untraced (same process, tool registered,
 * context stopped) are the overhead metrics.
 */
void hb_test_traced_concurrent(struct hb *b)
{
	struct tcase c = { .b = b };

	c.p = prof_require(b);
	c.kid = stamp_kernel_id(b, c.p);
	gc_info("rocprofiler-sdk %s registered; gc_stamp is kernel_id %llu", c.p->soname,
		(unsigned long long)c.kid);
	gc_each_shape(traced_case, &c);
}

/*
 * traced-serialized: rocprofiler-sdk's kernel-dispatch tracing has no
 * serialized mode (buffer_tracing.h / callback_tracing.h configure a kind
 * and its operations, nothing else). The one service that serializes
 * kernels is dispatch counting: its documentation says "dispatch counting
 * allows only a single kernel to execute in hardware at a time", but that is
 * hardware counter collection with a counter profile per agent, not a
 * tracing mode, and HSA's dispatch-time profiling has none either.
 */
void hb_test_traced_serialized(struct hb *b)
{
	(void)b;
	gc_skip("no serialized kernel-tracing mode on AMD: rocprofiler-sdk's kernel-dispatch "
		"tracing has none (only dispatch counter collection serializes kernels), nor has "
		"HSA dispatch-time profiling");
}

/* ---------------------------------------------------------------- leaks */

static struct gc_usage usage_now(struct hb *b)
{
	size_t free_bytes, total;

	hb_assert(b, b->f.hipMemGetInfo(&free_bytes, &total));
	return gc_usage_now(free_bytes);
}

#define LEAK_RSS_KIB (16 * 1024)  /* the profiler's buffers and per-thread state */
#define LEAK_DEV_BYTES (8u << 20) /* one device allocation granule and some */

/*
 * trace-leak. Contract (the pooled-signal leak class: a profiler that pooled
 * completion signals ran past KFD's per-process signal-event limit): 400
 * traced launches of chain256 (102,400 dispatches) after a warm-up deliver
 * one record each, none dropped, and host RSS, device free memory and open
 * fds come back within LEAK_RSS_KIB, LEAK_DEV_BYTES and 0 of the start.
 */
void hb_test_trace_leak(struct hb *b)
{
	struct hb_prof *p = prof_require(b);
	const struct gc_shape *sh = gc_shape_get("chain256");
	uint64_t kid = stamp_kernel_id(b, p);
	size_t records = 0;
	struct gc_usage u0, u1;
	struct hb_graph gr;
	struct hb_take t;

	hb_graph_build(b, sh, &gr);
	ctx_switch(p, true);
	for (int i = 0; i < 4; i++)
		hb_run_graph(b, sh, &gr);
	collect(p, kid, 4 * 256, &t);
	free(t.r);
	u0 = usage_now(b);
	for (int i = 0; i < 400; i++) {
		hb_run_graph(b, sh, &gr);
		if (i % 50 != 49)
			continue;
		collect(p, kid, 50 * 256, &t);
		keep_kernel(&t, kid);
		records += t.n;
		gc_assert_f(t.dropped == 0, "%llu records dropped", (unsigned long long)t.dropped);
		free(t.r);
	}
	u1 = usage_now(b);
	ctx_switch(p, false);
	gc_info("102,400 traced dispatches: %zu records; RSS %ld -> %ld KiB, device free %zu -> "
		"%zu, fds %d -> %d", records, u0.rss_kib, u1.rss_kib, u0.dev_free, u1.dev_free,
		u0.fds, u1.fds);
	gc_assert_cmpuint(records, ==, 400 * 256);
	gc_usage_expect_back(&u0, &u1, LEAK_RSS_KIB, LEAK_DEV_BYTES);
	hb_graph_free(b, &gr);
}

/* -------------------------------------------------------- attach/detach */

#define CYCLES 100       /* attach/detach cycles at level standard (a soak) */
#define CYCLES_QUICK 10
#define MAX_LAUNCHES 200000u /* the launcher stops after these: it bounds the records kept */

struct launcher {
	struct hb *b;
	struct hb_graph *gr;
	int stop;
	unsigned launches;
	hipError_t err; /* the first failure; asserted by the main thread */
};

static void *launcher_thread(void *arg)
{
	struct launcher *l = arg;

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE) && l->err == hipSuccess &&
	       l->launches < MAX_LAUNCHES) {
		l->err = l->b->f.hipGraphLaunch(l->gr->x, l->b->s);
		if (l->err == hipSuccess)
			l->err = l->b->f.hipStreamSynchronize(l->b->s);
		l->launches++;
	}
	return NULL;
}

/* Enabled windows on rocprofiler's clock, one per cycle, in time order. */
struct windows {
	uint64_t (*w)[2]; /* before start, after stop */
	size_t n, cap;
};

/* The last window whose start came at or before ts, or -1. */
static long window_at(const struct windows *w, uint64_t ts)
{
	long lo = 0, hi = (long)w->n - 1, hit = -1;

	while (lo <= hi) {
		long mid = (lo + hi) / 2;

		if (w->w[mid][0] <= ts)
			hit = mid, lo = mid + 1;
		else
			hi = mid - 1;
	}
	return hit;
}

/*
 * Every record overlaps an enabled window [on, off + tail] (the last one that
 * began before the record ended: the windows and their tails ascend).
 * context.h and fwd.h (ROCPROFILER_KERNEL_DISPATCH_ENQUEUE): contexts active
 * at enqueue "will be considered active when the kernel completes even if
 * the context was stopped", so a kernel enqueued just before off may run
 * after it: tail is one launch's longest untraced device span, twice.
 */
static void check_windows(const struct hb_take *t, const struct windows *w, uint64_t tail)
{
	for (size_t r = 0; r < t->n; r++) {
		long c = window_at(w, t->r[r].end);

		gc_assert_f(c >= 0 && t->r[r].start <= w->w[c][1] + tail, "record %zu [%llu, %llu] "
			    "lies in no enabled window", r, (unsigned long long)t->r[r].start,
			    (unsigned long long)t->r[r].end);
	}
}

/* Room for one more window (its 16 bytes are the only thing a cycle keeps). */
static uint64_t *window_next(struct windows *w)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 2 * CYCLES;
		w->w = realloc(w->w, w->cap * sizeof(*w->w));
		gc_assert(w->w);
	}
	return w->w[w->n++];
}

/* One cycle: the context started for 2 ms, stopped, 1 ms off. */
static void switch_cycle(struct hb_prof *p, uint64_t *w)
{
	w[0] = rp_now(p);
	ctx_switch(p, true);
	usleep(2000);
	ctx_switch(p, false);
	w[1] = rp_now(p);
	usleep(1000);
}

/* The soak's device memory in use: total - free from hipMemGetInfo on device 0. */
static long long dev_used(void *arg)
{
	const struct hb *b = arg;
	size_t free_b, total_b;

	if (b->f.hipSetDevice(0) != hipSuccess || b->f.hipMemGetInfo(&free_b, &total_b) != hipSuccess)
		return -EIO;
	return (long long)(total_b - free_b);
}

/* The level's cycles (a soak), while the launcher launches. */
static void switch_cycles(struct hb *b, struct hb_prof *p, struct windows *w)
{
	struct gc_soak *s = gc_soak_start(&(struct gc_soak_cfg){
		.name = "attach-detach", .cycles = CYCLES, .quick = CYCLES_QUICK,
		.cycle = "rocprofiler-sdk kernel-dispatch tracing context started for 2 ms and "
			 "stopped for 1 ms while a thread launches chain16",
		.dev_used = dev_used, .dev_arg = b });

	while (gc_soak_claim(s)) {
		switch_cycle(p, window_next(w));
		gc_soak_done(s);
	}
	gc_soak_end(s);
}

static void join_launcher(struct hb *b, pthread_t th, struct launcher *l)
{
	struct timespec dl;

	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += HB_WATCHDOG_S;
	gc_assert_f(pthread_timedjoin_np(th, NULL, &dl) == 0,
		    "hang: the launcher did not stop within %d s of the last detach",
		    HB_WATCHDOG_S);
	gc_assert_f(l->err == hipSuccess, "launch %u failed while tracing toggled: %s",
		    l->launches, hb_err(b, l->err));
}

/*
 * attach-detach. Contract: tracing started and stopped again and again (a
 * soak: 100 times at standard, 10 at quick, as many as fit at long) while a
 * thread keeps launching chain16 (up to MAX_LAUNCHES launches): no crash,
 * no hang (watchdog on the launcher), no failed launch, at least one
 * record, every record in an enabled window; after the last stop the gaps
 * (graph-detached) against the untraced ones of this same process, as
 * ratios. The records are checked at the end, so they are kept until then:
 * host memory grows with the traced launches.
 */
void hb_test_attach_detach(struct hb *b)
{
	struct hb_prof *p = prof_require(b);
	const struct gc_shape *sh = gc_shape_get("chain16");
	struct launcher l = { .b = b };
	struct windows w = { 0 };
	struct gc_gap_stats before, after;
	struct hb_graph gr;
	struct hb_take t;
	pthread_t th;

	hb_graph_build(b, sh, &gr);
	l.gr = &gr;
	before = gc_gaps_measure(&b->dev, sh, &gr, TRACE_LAUNCHES, "graph", NULL);
	collect(p, 0, 0, &t);
	free(t.r);
	gc_assert(pthread_create(&th, NULL, launcher_thread, &l) == 0);
	switch_cycles(b, p, &w);
	join_launcher(b, th, &l);
	collect(p, 0, 1, &t);
	/* tail: the longest untraced device span of one launch, twice */
	check_windows(&t, &w, (uint64_t)(2 * before.span_max_us * 1e3));
	gc_info("%zu attach/detach cycles over %u launches%s: %zu kernel records, all inside "
		"enabled windows", w.n, l.launches, l.launches == MAX_LAUNCHES ? " (the launcher's "
		"limit: later windows had no launch in flight)" : "", t.n);
	gc_assert_f(t.n > 0, "no record in %zu enabled windows of 2 ms", w.n);
	free(t.r);
	free(w.w);
	after = gc_gaps_measure(&b->dev, sh, &gr, TRACE_LAUNCHES, "graph-detached", NULL);
	gc_gap_ratios("detached", sh->name, &after, &before, false);
	hb_graph_free(b, &gr);
}

/* ------------------------------------------------------ profiler sessions */

/* rocprofiler-sdk's kernel-dispatch tracing has one mode (see traced-serialized). */
static const char *const sess_modes[] = { "concurrent" };

struct sess_ctx {
	struct hb *b;
	struct hb_prof *p;
	uint64_t kid;
	bool have_kid;
	bool left_on; /* GPUCONFORM_BUBBLES_REMOVE=detach: a detach left the context started */
	void (*deep)(void *);
	void *deep_ctx;
};

static void sess_attach(void *ctx, unsigned m)
{
	struct sess_ctx *x = ctx;
	struct hb_take t;

	(void)m;
	if (!x->have_kid) /* one traced probe dispatch: part of the first session */
		x->kid = stamp_kernel_id(x->b, x->p);
	x->have_kid = true;
	if (x->left_on)
		ctx_switch(x->p, false);
	x->left_on = false;
	collect(x->p, 0, 0, &t);
	free(t.r);
	ctx_switch(x->p, true);
}

/* The deep queue on raw AQL queues (bubbles.c): its kernels are not gc_stamp's kernel_id. */
static uint64_t sess_workload(void *ctx)
{
	struct sess_ctx *x = ctx;

	x->deep(x->deep_ctx);
	return 0;
}

/*
 * Detach: the context stopped (GPUCONFORM_BUBBLES_REMOVE=detach leaves it
 * started), the session's records taken: one record of gc_stamp's
 * kernel_id per HIP dispatch made while attached, none dropped.
 */
static void sess_detach(void *ctx, unsigned m, uint64_t dispatches)
{
	struct sess_ctx *x = ctx;
	struct hb_take t;
	size_t all;

	(void)m;
	if (gc_bubbles_remove("detach"))
		x->left_on = true;
	else
		ctx_switch(x->p, false);
	collect(x->p, x->kid, dispatches, &t);
	all = t.n;
	keep_kernel(&t, x->kid);
	gc_info("session: %zu records, %zu of gc_stamp for %llu HIP dispatches, %llu dropped",
		all, t.n, (unsigned long long)dispatches, (unsigned long long)t.dropped);
	gc_assert_f(all > 0, "the session recorded nothing: no session took place");
	gc_check_f(t.n == dispatches, "session: %zu gc_stamp records for %llu dispatches", t.n,
		   (unsigned long long)dispatches);
	gc_check_f(t.dropped == 0 && t.short_records == 0, "session: %llu records dropped, %llu "
		   "shorter than the restated layout", (unsigned long long)t.dropped,
		   (unsigned long long)t.short_records);
	free(t.r);
}

static uint64_t sess_stray(void *ctx)
{
	struct sess_ctx *x = ctx;
	struct hb_take t;
	size_t n;

	if (!x->have_kid)
		return 0;
	collect(x->p, 0, 0, &t);
	n = t.n;
	free(t.r);
	return n;
}

/*
 * profiler-sessions, the twin of cuda_bubbles' (its comment states the
 * contract): sessions of kernel-dispatch tracing (rocprofiler_start_context
 * .. _stop_context, context.h) in sequence, each around the traced workload
 * (stream chains, wide and long graphs, graphs instantiated while traced,
 * the AQL deep queue); after each stop no record arrives and every case
 * costs what it cost before the first start. rocprofiler-sdk must register
 * before ROCr initialises, so pristine is measured with the tool registered
 * and its context never started; the fresh process (this binary
 * re-executed, GPUCONFORM_BUBBLES_FRESH=1) never registers, and a residual
 * must exceed both references. One mode, so two sessions.
 */
void hb_test_profiler_sessions(struct hb *b, void (*deep)(void *), void *deep_ctx)
{
	static const struct gc_sess_ops ops = {
		.modes = sess_modes, .nmodes = HB_ARRAY_SIZE(sess_modes),
		.lib = "librocprofiler-sdk",
		.pristine = "rocprofiler-sdk registered before ROCr initialised (it must be), its "
			    "context never started; the fresh process never registered it",
		.attach = sess_attach, .workload = sess_workload, .detach = sess_detach,
		.stray = sess_stray,
	};
	struct sess_ctx x = { .b = b, .deep = deep, .deep_ctx = deep_ctx };

	if (gc_sess_fresh()) {
		hb_require(b);
		gc_sess_fresh_report(&b->dev, ops.lib);
		return;
	}
	x.p = prof_require(b);
	gc_sess_run(&b->dev, &ops, &x, "profiler-sessions");
	if (x.left_on)
		ctx_switch(x.p, false);
}

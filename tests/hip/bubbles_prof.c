// SPDX-License-Identifier: MIT
/*
 * hip_bubbles under a profiler: rocprofiler-sdk kernel-dispatch tracing of
 * HIP graph launches (traced-concurrent, trace-leak, attach-detach), the
 * same beside HIP runtime API and memory-copy tracing (profiler-sessions),
 * and why traced-serialized skips.
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
 * (source/include/rocprofiler-sdk/, tag rocm-6.2.2, rocprofiler-sdk 0.4.0),
 * since Debian ships none of them:
 *  - registration.h [src ROCm/rocprofiler-sdk
 *    source/include/rocprofiler-sdk/registration.h @ rocm-6.2.2]:
 *    rocprofiler_force_configure(configure_func), "This can be invoked
 *    before any ROCm runtimes (lazily) initialize and context(s) can be
 *    started before the runtimes initialize."; it returns
 *    ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED ("@retval
 *    ::ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED Returned if rocprofiler
 *    has already been configured, or is currently being configured [...]").
 *    The configure function fills in the
 *    rocprofiler_client_id_t { name, handle } it is given and returns a
 *    rocprofiler_tool_configure_result_t { size, initialize, finalize,
 *    tool_data }; initialize(finalize_func, tool_data) creates the contexts;
 *    finalize_func is a rocprofiler_client_finalize_t, void (*)(client id).
 *  - context.h: rocprofiler_create_context / _start_context / _stop_context.
 *  - buffer.h: rocprofiler_create_buffer(context, size, watermark, policy,
 *    callback, data, &buffer) and rocprofiler_flush_buffer(buffer); the
 *    callback gets (context, buffer, headers, num_headers, data, drop_count).
 *  - buffer_tracing.h [src ROCm/rocprofiler-sdk
 *    source/include/rocprofiler-sdk/buffer_tracing.h @ rocm-6.2.2]:
 *    rocprofiler_configure_buffer_tracing_service(context,
 *    kind, NULL, 0, buffer), once per kind; the records:
 *    rocprofiler_buffer_tracing_kernel_dispatch_record_t { size, kind,
 *    operation, correlation_id {internal, external}, thread_id,
 *    start_timestamp, end_timestamp (documented in nanoseconds),
 *    dispatch_info } and
 *    rocprofiler_buffer_tracing_memory_copy_record_t { size, kind,
 *    operation, correlation_id, thread_id, start_timestamp, end_timestamp,
 *    dst_agent_id, src_agent_id, bytes (documented as the bytes copied) }:
 *    80 bytes, bytes
 *    at offset 72. HIP runtime API records are counted by their header
 *    alone (their payload is not read).
 *  - fwd.h [src ROCm/rocprofiler-sdk source/include/rocprofiler-sdk/fwd.h @
 *    rocm-6.2.2]: enumerators (ROCPROFILER_BUFFER_CATEGORY_TRACING = 1,
 *    ROCPROFILER_BUFFER_POLICY_LOSSLESS = 2; rocprofiler_buffer_tracing_
 *    kind_t counts up from NONE = 0: HIP_RUNTIME_API = 5, MEMORY_COPY = 10,
 *    KERNEL_DISPATCH = 11), rocprofiler_record_header_t { category, kind;
 *    payload }, rocprofiler_correlation_id_t { internal, external } (16
 *    bytes), rocprofiler_agent_id_t { handle }, rocprofiler_kernel_
 *    dispatch_info_t (128 bytes: size, agent_id, queue_id, kernel_id,
 *    dispatch_id (documented as a unique id for each dispatch), segment
 *    sizes, workgroup and
 *    grid sizes, padding).
 *  - rocprofiler.h [src ROCm/rocprofiler-sdk
 *    source/include/rocprofiler-sdk/rocprofiler.h @ rocm-6.2.2]:
 *    rocprofiler_get_timestamp (documented to get the timestamp value that
 *    rocprofiler uses), rocprofiler_get_status_name.
 * ROCm/rocm-systems' projects/rocprofiler-sdk, read for comparison (fwd.h
 * at commit 0409832, buffer_tracing.h at 00db669), keeps the three kinds'
 * values and both records' offsets; both records grew at their end (the
 * copy record's addresses after bytes), which the size checks below allow.
 * Every kind used is checked at run time: rocprofiler_query_buffer_tracing_
 * kind_name(kind) must name it (KERNEL_DISPATCH, HIP_RUNTIME_API,
 * MEMORY_COPY), else the subtest skips saying the ABI moved. Each record's
 * size field must cover our layout.
 *
 * Registration must come before ROCr initialises, and a registered tool
 * intercepts every HSA queue of the process even while its context is
 * stopped. So the fixture registers only when the process starts with a
 * profiler subtest (the runner runs one subtest per process: `BIN
 * --run-subtest NAME`); the untraced reference of traced-concurrent is then
 * measured with the tool registered and its context stopped, and says so.
 * profiler-sessions registers only in its plans' processes (GC_SESS_PLAN_ENV
 * set, lib/prof_sessions.h): its own process is their fresh reference and
 * never maps librocprofiler-sdk.
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
#include "contract/trace.h"
#include "measure.h"
#include "prof_sessions.h"
#include "soak.h"
#include "usage.h"

#define TRACE_LAUNCHES GC_TRACE_LAUNCHES
/*
 * Bracketing tolerance: ROCr turns the packet processor's tick stamps into
 * its system clock by a calibrated linear map, and s_memrealtime is a second
 * counter; 1 us allows both conversions' error. A stated tolerance for a
 * correctness check, not a performance threshold.
 */
#define BRACKET_SLACK_NS 1000
#define RECORD_WAIT_NS (10ull * 1000000000ull) /* records arrive from a handler thread */

#define RP_CATEGORY_TRACING 1u
#define RP_TRACING_HIP_RUNTIME_API 5u
#define RP_TRACING_MEMORY_COPY 10u
#define RP_TRACING_KERNEL_DISPATCH 11u
#define RP_MAX_KINDS 3 /* the kinds one context is configured with at most */
#define RP_POLICY_LOSSLESS 2
#define RP_BUFFER_BYTES (4u << 20)

typedef struct {
	uint64_t handle;
} rp_id;
typedef struct {
	const char *name;
	uint32_t handle; /* const in registration.h: same layout, but kept by copy here */
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
struct rp_copy_record {
	uint64_t size;
	int32_t kind, operation;
	uint64_t corr_internal, corr_external;
	uint64_t thread_id;
	uint64_t start, end;
	uint64_t dst_agent, src_agent;
	uint64_t bytes;
};
_Static_assert(offsetof(struct rp_copy_record, bytes) == 72 &&
	       sizeof(struct rp_copy_record) == 80, "buffer_tracing.h's memory-copy record");

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
	rp_client_id client;     /* as the configure function was given it (its handle) */
	rp_client_finalize fini; /* initialize's finalize_func */
	unsigned tool_finis;     /* calls of our finalize (cfg.finalize) */
	uint32_t kinds[RP_MAX_KINDS + 1]; /* the context's buffer tracing kinds, 0-ended */
	int config;              /* profiler-sessions: the plan's configuration, else -1 */
	uint64_t copy_tag;       /* memory-copy records of this many bytes are counted apart */
	rp_id ctx, buf;
	bool inited;
	char init_why[256];
	pthread_mutex_t mu;
	struct hb_rec *r;
	size_t n, cap;
	uint64_t dropped, short_records;
	uint64_t api, copies, copies_tagged, other; /* records of the other kinds */
};

/* What a flush delivered: kernel records (r, n) and the other kinds' counts. */
struct hb_take {
	struct hb_rec *r;
	size_t n;
	uint64_t dropped, short_records;
	uint64_t api, copies, copies_tagged, other;
};

static struct hb_prof *pending; /* the API's configure function has no user data */

static const char *rp_err(const struct hb_prof *p, int st)
{
	const char *s = p->status_name ? p->status_name(st) : NULL;

	return s ? s : "unknown rocprofiler_status_t";
}

/* ------------------------------------------------------------ records */

/* One kernel-dispatch record kept (under p->mu). */
static void on_dispatch(struct hb_prof *p, const struct rp_dispatch_record *d)
{
	if (d->size < sizeof(*d)) {
		p->short_records++;
		return;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 1u << 16;
		struct hb_rec *r = realloc(p->r, cap * sizeof(*r));

		if (!r) {
			p->dropped++;
			return;
		}
		p->r = r, p->cap = cap;
	}
	p->r[p->n++] = (struct hb_rec){ d->start, d->end, d->info.kernel_id, d->info.dispatch_id };
}

/* One memory-copy record counted, apart when it copied copy_tag bytes (under p->mu). */
static void on_copy(struct hb_prof *p, const struct rp_copy_record *c)
{
	p->copies++;
	if (c->size < sizeof(*c))
		p->short_records++;
	else
		p->copies_tagged += p->copy_tag && c->bytes == p->copy_tag;
}

static void on_records(rp_id ctx, rp_id buf, rp_header **h, size_t n, void *data, uint64_t drops)
{
	struct hb_prof *p = data;

	(void)ctx, (void)buf;
	pthread_mutex_lock(&p->mu);
	p->dropped += drops;
	for (size_t i = 0; i < n; i++) {
		uint32_t kind = h[i]->category == RP_CATEGORY_TRACING ? h[i]->kind : 0;

		if (kind == RP_TRACING_KERNEL_DISPATCH)
			on_dispatch(p, h[i]->payload);
		else if (kind == RP_TRACING_MEMORY_COPY)
			on_copy(p, h[i]->payload);
		else if (kind == RP_TRACING_HIP_RUNTIME_API)
			p->api++;
		else
			p->other++;
	}
	pthread_mutex_unlock(&p->mu);
}

static void take(struct hb_prof *p, struct hb_take *t)
{
	pthread_mutex_lock(&p->mu);
	*t = (struct hb_take){ p->r, p->n, p->dropped, p->short_records,
			       p->api, p->copies, p->copies_tagged, p->other };
	p->r = NULL, p->n = p->cap = 0, p->dropped = p->short_records = 0;
	p->api = p->copies = p->copies_tagged = p->other = 0;
	pthread_mutex_unlock(&p->mu);
}

/*
 * Flush until `want` records of kernel `kid` (0: any) and `copies` memory-copy
 * records of copy_tag bytes have arrived, or RECORD_WAIT_NS passed.
 */
static void collect_copies(struct hb_prof *p, uint64_t kid, size_t want, uint64_t copies,
			   struct hb_take *t)
{
	uint64_t deadline = gc_now_ns() + RECORD_WAIT_NS;
	size_t have;
	bool copied;

	for (;;) {
		gc_assert_f(p->flush_buffer(p->buf) == 0, "rocprofiler_flush_buffer failed");
		pthread_mutex_lock(&p->mu);
		have = 0;
		for (size_t i = 0; i < p->n; i++)
			have += !kid || p->r[i].kernel_id == kid;
		copied = p->copies_tagged >= copies;
		pthread_mutex_unlock(&p->mu);
		if ((have >= want && copied) || gc_now_ns() > deadline)
			break;
		usleep(1000);
	}
	take(p, t);
}

/* Flush until `want` records of kernel `kid` (0: any) have arrived or RECORD_WAIT_NS passed. */
static void collect(struct hb_prof *p, uint64_t kid, size_t want, struct hb_take *t)
{
	collect_copies(p, kid, want, 0, t);
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

/* ------------------------------------- profiler-sessions' configurations */

/* rocprofiler-sdk's kernel-dispatch tracing has one mode (see traced-serialized). */
static const char *const sess_modes[] = { "concurrent" };

/*
 * What a session enables, per configuration (lib/prof_sessions.h): buffer
 * tracing of kernel dispatches alone, beside HIP runtime API calls, beside
 * memory copies. A plan's process creates its configuration's context alone
 * (see hb_prof_register).
 */
enum { CFG_KERNEL, CFG_HIP_API, CFG_MEMCPY, NCFG };
static const struct gc_sess_config sess_configs[NCFG] = {
	[CFG_KERNEL] = { "kernel", "kernel-dispatch buffer tracing alone", true, GC_LEVEL_QUICK },
	[CFG_HIP_API] = { "kernel-hip-api", "kernel-dispatch and HIP runtime API buffer tracing",
			  true, GC_LEVEL_STANDARD },
	[CFG_MEMCPY] = { "kernel-memcpy", "kernel-dispatch and memory-copy buffer tracing", true,
			 GC_LEVEL_LONG },
};
static const uint32_t sess_cfg_kinds[NCFG][RP_MAX_KINDS + 1] = {
	[CFG_KERNEL] = { RP_TRACING_KERNEL_DISPATCH },
	[CFG_HIP_API] = { RP_TRACING_KERNEL_DISPATCH, RP_TRACING_HIP_RUNTIME_API },
	[CFG_MEMCPY] = { RP_TRACING_KERNEL_DISPATCH, RP_TRACING_MEMORY_COPY },
};

#define SESS_COPIES 64       /* host-to-device copies a session makes */
#define SESS_COPY_BYTES 4093 /* their size: no other copy of the workload has it */

/* The configuration of plan `plan` (GC_SESS_PLAN_ENV), or -1: none, or no such plan. */
static int sess_plan_config(const char *plan)
{
	const struct gc_sess_ops ops = { .modes = sess_modes, .nmodes = HB_ARRAY_SIZE(sess_modes),
					 .configs = sess_configs, .nconfigs = NCFG };
	struct gc_sess_plan p;

	return gc_sess_plan_named(&ops, plan, &p) ? -1 : (int)p.config;
}

/* ------------------------------------------------------- registration */

/* fwd.h's name of each kind used, as rocprofiler_query_buffer_tracing_kind_name gives it. */
static const struct {
	uint32_t kind;
	const char *name;
} rp_kinds[] = {
	{ RP_TRACING_HIP_RUNTIME_API, "HIP_RUNTIME_API" },
	{ RP_TRACING_MEMORY_COPY, "MEMORY_COPY" },
	{ RP_TRACING_KERNEL_DISPATCH, "KERNEL_DISPATCH" },
};

static const char *rp_kind_name(uint32_t kind)
{
	for (size_t i = 0; i < HB_ARRAY_SIZE(rp_kinds); i++)
		if (rp_kinds[i].kind == kind)
			return rp_kinds[i].name;
	return "an unlisted kind";
}

/* Our finalize (cfg.finalize, plans' processes only): counted, for sess_finalize's check. */
static void tool_fini(void *data)
{
	struct hb_prof *p = data;

	__atomic_add_fetch(&p->tool_finis, 1, __ATOMIC_RELAXED);
}

/* One context, its buffer, and each of p->kinds configured into it. */
static int tool_init(rp_client_finalize fini, void *data)
{
	struct hb_prof *p = data;
	const char *what = "rocprofiler_create_context";
	int st;

	p->fini = fini;
	st = p->create_context(&p->ctx);
	if (!st) {
		what = "rocprofiler_create_buffer";
		st = p->create_buffer(p->ctx, RP_BUFFER_BYTES, RP_BUFFER_BYTES / 2,
				      RP_POLICY_LOSSLESS, on_records, p, &p->buf);
	}
	for (size_t k = 0; !st && p->kinds[k]; k++) {
		what = rp_kind_name(p->kinds[k]);
		st = p->configure_buffer_tracing(p->ctx, (int)p->kinds[k], NULL, 0, p->buf);
	}
	if (st) {
		snprintf(p->init_why, sizeof(p->init_why), "tool initialisation: %s: %s", what,
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
	p->client = *id; /* the handle finalize_func is given back */
	p->cfg = (rp_configure_result){ sizeof(p->cfg), tool_init,
					p->config >= 0 ? tool_fini : NULL, p };
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

/*
 * Whether a process that starts with subtest `first` registers, else why
 * not: one that starts with a profiler subtest; for profiler-sessions only a
 * plan's process, since the subtest's own is the plans' fresh reference.
 */
static bool prof_wanted(const char *first, char *why, size_t len)
{
	if (first && !strcmp(first, "profiler-sessions")) {
		snprintf(why, len, "profiler-sessions' own process is its plans' fresh reference: "
			 "rocprofiler-sdk registers only in a plan's process (%s set)",
			 GC_SESS_PLAN_ENV);
		return gc_sess_plan_env() != NULL;
	}
	snprintf(why, len, "rocprofiler-sdk must register before ROCr initialises and then "
		 "intercepts every queue of the process, so it is registered only in a process "
		 "that starts with a profiler subtest; this one started with %s: run `hip_bubbles "
		 "--run-subtest NAME` alone (the runner does)", first ? first : "no subtest");
	return first && (!strcmp(first, "traced-concurrent") || !strcmp(first, "trace-leak") ||
			 !strcmp(first, "attach-detach"));
}

/*
 * A plan's process of profiler-sessions creates its plan's configuration
 * alone. rocprofiler-sdk decides when a runtime registers which of its calls
 * to wrap from every registered context, started or not (should_wrap_functor
 * loops over all the registered contexts and asks whether any of them, at
 * any point in time, might require callback or buffered API tracing [src
 * ROCm/rocprofiler-sdk source/lib/rocprofiler-sdk/hip/hip.cpp @
 * rocm-6.2.2]); async_copy_init
 * (hsa/async_copy.cpp, same tag) wraps ROCr's async copies and switches on
 * its async-copy profiling when any registered context traces memory
 * copies. Another configuration's context, never started, would still
 * change this plan's pristine.
 */
void hb_prof_register(struct hb *b, const char *first_subtest)
{
	struct hb_prof *p;
	int st;

	if (!prof_wanted(first_subtest, b->prof_why, sizeof(b->prof_why)))
		return;
	p = calloc(1, sizeof(*p));
	gc_assert(p);
	pthread_mutex_init(&p->mu, NULL);
	p->config = sess_plan_config(gc_sess_plan_env());
	memcpy(p->kinds, sess_cfg_kinds[p->config >= 0 ? p->config : CFG_KERNEL], sizeof(p->kinds));
	p->copy_tag = p->config >= 0 ? SESS_COPY_BYTES : 0;
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

/* Skip unless rocprofiler-sdk names `kind` as restated (bare or with its enum prefix). */
static void kind_require(const struct hb_prof *p, uint32_t kind)
{
	static const char prefix[] = "ROCPROFILER_BUFFER_TRACING_";
	const char *name = NULL, *want = rp_kind_name(kind);
	const char *bare;

	if (p->kind_name((int)kind, &name, NULL))
		name = NULL;
	bare = name && !strncmp(name, prefix, sizeof(prefix) - 1) ? name + sizeof(prefix) - 1 :
								     name;
	if (!bare || strcmp(bare, want))
		gc_skip("%s: buffer tracing kind %u is %s, not %s: the ABI restated from "
			"rocprofiler-sdk's fwd.h (rocm-6.2.2) no longer holds", p->soname, kind,
			name ? name : "unnamed", want);
}

/* The profiler for this subtest, or skip / fail naming why not. */
static struct hb_prof *prof_require(struct hb *b)
{
	struct hb_prof *p = b->prof;

	if (!p)
		gc_skip("%s", b->prof_why);
	for (size_t k = 0; p->kinds[k]; k++) /* before init: a moved ABI configured wrong kinds */
		kind_require(p, p->kinds[k]);
	gc_assert_f(p->inited, "rocprofiler-sdk (%s) refused to initialise our tool: %s",
		    p->soname, p->init_why[0] ? p->init_why : "initialize was never called");
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
	gc_hip_assert(b->hip, b->hip->hipStreamSynchronize(b->s));
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
	uint64_t kid;
	struct hb_take t;
};

/* rocprofiler-sdk's side of lib/contract/trace.h, over a struct tcase. */
static void trace_drain(void *ctx)
{
	struct tcase *c = ctx;
	struct hb_take t;

	collect(c->p, 0, 0, &t);
	free(t.r);
}

static void trace_enable(void *ctx, bool on)
{
	ctx_switch(((struct tcase *)ctx)->p, on);
}

static void trace_take(void *ctx, const struct gc_shape *sh, size_t want)
{
	struct tcase *c = ctx;

	(void)sh;
	collect(c->p, c->kid, want, &c->t);
	keep_kernel(&c->t, c->kid);
}

static void trace_check(void *ctx, const struct gc_shape *sh, const uint64_t *stamps,
			unsigned launches)
{
	struct tcase *c = ctx;

	check_records(c->b, sh, &c->t, stamps, launches);
}

static void trace_end(void *ctx)
{
	free(((struct tcase *)ctx)->t.r);
}

/* trace-leak's take: gc_stamp's records of `want` dispatches (no record-removal knob here). */
static struct gc_trace_count trace_count(void *ctx, size_t want, bool first)
{
	struct tcase *c = ctx;
	struct hb_take t;

	(void)first;
	collect(c->p, c->kid, want, &t);
	keep_kernel(&t, c->kid);
	free(t.r);
	return (struct gc_trace_count){ t.n, t.dropped };
}

static struct gc_usage trace_usage(void *ctx)
{
	struct hb *b = ((struct tcase *)ctx)->b;
	size_t free_bytes, total;

	gc_hip_assert(b->hip, b->hip->hipMemGetInfo(&free_bytes, &total));
	return gc_usage_now(free_bytes);
}

static const struct gc_trace_ops trace_ops = {
	.drain = trace_drain, .enable = trace_enable, .take = trace_take, .check = trace_check,
	.end = trace_end, .count = trace_count, .usage = trace_usage,
};

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
	const struct gc_trace_run run = {
		.ops = &trace_ops, .ctx = &c, .dev = &b->dev, .mode = "graph-trace", .ratio = "trace",
	};

	c.p = prof_require(b);
	c.kid = stamp_kernel_id(b, c.p);
	gc_info("rocprofiler-sdk %s registered; gc_stamp is kernel_id %llu", c.p->soname,
		(unsigned long long)c.kid);
	gc_trace_shapes(&run);
}

/*
 * traced-serialized: rocprofiler-sdk's kernel-dispatch tracing has no
 * serialized mode (buffer_tracing.h / callback_tracing.h configure a kind
 * and its operations, nothing else). The one service that serializes
 * kernels is dispatch counting: its documentation says "Dispatch profiling
 * is useful for collecting highly detailed counters for a specific kernel
 * execution in isolation (Note: dispatch profiling allows only a single
 * kernel to execute in hardware at a time)." [src ROCm/rocprofiler-sdk
 * source/docs/api-reference/counter_collection_services.md @ rocm-6.2.2],
 * but that is
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

/*
 * trace-leak. Contract (the pooled-signal leak class: a profiler that pooled
 * completion signals ran past KFD's per-process signal-event limit): 400
 * traced launches of chain256 (102,400 dispatches) after a warm-up deliver
 * one record each, none dropped, and host RSS, device free memory and open
 * fds come back within GC_TRACE_LEAK_RSS_KIB (the profiler's buffers and
 * per-thread state), GC_TRACE_LEAK_DEV_BYTES and 0 of the start.
 */
void hb_test_trace_leak(struct hb *b)
{
	struct tcase c = { .b = b };

	c.p = prof_require(b);
	c.kid = stamp_kernel_id(b, c.p);
	gc_trace_leak(&trace_ops, &c, &b->dev);
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
		l->err = l->b->hip->hipGraphLaunch(l->gr->x, l->b->s);
		if (l->err == hipSuccess)
			l->err = l->b->hip->hipStreamSynchronize(l->b->s);
		l->launches++;
	}
	return NULL;
}

/*
 * Enabled windows on rocprofiler's clock (struct gc_trace_windows of width
 * 2: before start, after stop), one per cycle, in time order.
 */
#define WINDOW_STAMPS 2

/* The last window whose start came at or before ts, or -1. */
static long window_at(const struct gc_trace_windows *w, uint64_t ts)
{
	long lo = 0, hi = (long)w->n - 1, hit = -1;

	while (lo <= hi) {
		long mid = (lo + hi) / 2;

		if (gc_trace_window(w, mid)[0] <= ts)
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
 * at enqueue are captured, and "These captured contexts will be considered
 * [...] when the kernel completes even if the context was stopped before the
 * kernel completes [...]" (the elided word is a quoted active) [src
 * ROCm/rocprofiler-sdk source/include/rocprofiler-sdk/fwd.h @ rocm-6.2.2],
 * so a kernel enqueued just before off may run
 * after it: tail is one launch's longest untraced device span, twice.
 */
static void check_windows(const struct hb_take *t, const struct gc_trace_windows *w, uint64_t tail)
{
	for (size_t r = 0; r < t->n; r++) {
		long c = window_at(w, t->r[r].end);

		gc_assert_f(c >= 0 && t->r[r].start <= gc_trace_window(w, c)[1] + tail, "record %zu [%llu, %llu] "
			    "lies in no enabled window", r, (unsigned long long)t->r[r].start,
			    (unsigned long long)t->r[r].end);
	}
}

/* attach-detach's state, for its soak's cycles and its records. */
struct ad {
	struct hb *b;
	struct hb_prof *p;
	struct launcher *l;
	struct gc_trace_windows *w;
};

/* One cycle: the context started for 2 ms, stopped, 1 ms off; its 16 bytes of stamps into w. */
static void switch_cycle(void *ctx, uint64_t *w)
{
	struct hb_prof *p = ((struct ad *)ctx)->p;

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

	if (b->hip->hipSetDevice(0) != hipSuccess ||
	    b->hip->hipMemGetInfo(&free_b, &total_b) != hipSuccess)
		return -EIO;
	return (long long)(total_b - free_b);
}

/* Records so far dropped, before the launcher starts. */
static void ad_start(void *ctx)
{
	struct hb_take t;

	collect(((struct ad *)ctx)->p, 0, 0, &t);
	free(t.r);
}

/* The launcher never failed; the soak's records: some, each in an enabled window. */
static void ad_records(void *ctx, const struct gc_gap_stats *before)
{
	struct ad *a = ctx;
	const struct launcher *l = a->l;
	struct hb_take t;
	char err[160];

	gc_assert_f(l->err == hipSuccess, "launch %u failed while tracing toggled: %s",
		    l->launches, gc_hip_errstr(a->b->hip, l->err, err, sizeof(err)));
	collect(a->p, 0, 1, &t);
	/* tail: the longest untraced device span of one launch, twice */
	check_windows(&t, a->w, (uint64_t)(2 * before->span_max_us * 1e3));
	gc_info("%zu attach/detach cycles over %u launches%s: %zu kernel records, all inside "
		"enabled windows", a->w->n, l->launches, l->launches == MAX_LAUNCHES ?
		" (the launcher's limit: later windows had no launch in flight)" : "", t.n);
	gc_assert_f(t.n > 0, "no record in %zu enabled windows of 2 ms", a->w->n);
	free(t.r);
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
	struct gc_trace_windows w = { .width = WINDOW_STAMPS };
	struct ad ad = { .b = b, .p = p, .l = &l, .w = &w };
	struct hb_graph gr;

	hb_graph_build(b, sh, &gr);
	l.gr = &gr;
	gc_trace_attach_detach(&b->dev, sh, &gr, &(struct gc_trace_attach){
		.launcher = launcher_thread, .arg = &l, .stop = &l.stop,
		.watchdog_s = HB_WATCHDOG_S,
		.soak = { .name = "attach-detach", .cycles = CYCLES, .quick = CYCLES_QUICK,
			  .cycle = "rocprofiler-sdk kernel-dispatch tracing context started for 2 "
				   "ms and stopped for 1 ms while a thread launches chain16",
			  .dev_used = dev_used, .dev_arg = b },
		.w = &w, .cycle = switch_cycle, .ctx = &ad, .start = ad_start,
		.records = ad_records });
	free(w.w);
	hb_graph_free(b, &gr);
}

/* ------------------------------------------------------ profiler sessions */

struct sess_ctx {
	struct hb *b;
	struct hb_prof *p;
	uint64_t kid;
	bool have_kid, finalized;
	bool left_on; /* GPUCONFORM_BUBBLES_REMOVE=detach: a detach left the context started */
	void (*deep)(void *);
	void *deep_ctx;
	void *copy_dst; /* device memory, SESS_COPY_BYTES */
	void *copy_src; /* pageable host memory, the same */
};

static bool cfg_has(unsigned c, uint32_t kind)
{
	for (size_t k = 0; sess_cfg_kinds[c][k]; k++)
		if (sess_cfg_kinds[c][k] == kind)
			return true;
	return false;
}

/* The plan's process created configuration p->config's context alone (hb_prof_register). */
static void sess_attach(void *ctx, unsigned m, unsigned c)
{
	struct sess_ctx *x = ctx;
	struct hb_take t;

	(void)m;
	gc_assert_f((int)c == x->p->config, "attach %s: this plan's process registered %s",
		    sess_configs[c].name,
		    x->p->config >= 0 ? sess_configs[x->p->config].name : "no configuration");
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

/*
 * The deep queue on raw AQL queues (bubbles.c: its kernels are not gc_stamp's
 * kernel_id, so it adds no dispatch to count), then SESS_COPIES host-to-
 * device copies through HIP, synchronised, in every configuration (one that
 * does not trace copies must record none of them).
 */
static uint64_t sess_workload(void *ctx, unsigned c)
{
	struct sess_ctx *x = ctx;
	struct hb *b = x->b;

	(void)c;
	x->deep(x->deep_ctx);
	for (unsigned i = 0; i < SESS_COPIES; i++)
		gc_hip_assert(b->hip, b->hip->hipMemcpyHtoDAsync(x->copy_dst, x->copy_src,
								 SESS_COPY_BYTES, b->s));
	gc_hip_assert(b->hip, b->hip->hipStreamSynchronize(b->s));
	return 0;
}

/*
 * The session's records against what it made. t: gc_stamp's kernel records
 * (all: every kernel record) and the other kinds' counts. rocprofiler-sdk
 * records a memory copy where it wraps ROCr's async copy (hsa/async_copy.cpp,
 * rocm-6.2.2); which path HIP takes for a small pageable copy is HIP's choice,
 * not seen here, so a short count names it.
 */
static void sess_check(const struct hb_take *t, size_t all, unsigned c, uint64_t dispatches)
{
	bool api = cfg_has(c, RP_TRACING_HIP_RUNTIME_API), copy = cfg_has(c, RP_TRACING_MEMORY_COPY);
	const char *name = sess_configs[c].name;

	gc_info("%s session: %zu kernel records (%zu of gc_stamp for %llu HIP dispatches), %llu "
		"HIP runtime API records, %llu memory-copy records (%llu of %d bytes for the %d "
		"copies made), %llu records of other kinds, %llu dropped", name, all, t->n,
		(unsigned long long)dispatches, (unsigned long long)t->api,
		(unsigned long long)t->copies, (unsigned long long)t->copies_tagged,
		SESS_COPY_BYTES, SESS_COPIES, (unsigned long long)t->other,
		(unsigned long long)t->dropped);
	gc_assert_f(all > 0, "the %s session recorded no kernel dispatch: no session took place",
		    name);
	gc_assert_f((t->api > 0) == api && (t->copies > 0) == copy && t->other == 0,
		    "the %s session recorded %llu HIP runtime API, %llu memory-copy and %llu other "
		    "records: not what it enabled (%s)", name, (unsigned long long)t->api,
		    (unsigned long long)t->copies, (unsigned long long)t->other,
		    sess_configs[c].what);
	gc_check_f(t->n == dispatches, "%s session: %zu gc_stamp records for %llu dispatches",
		   name, t->n, (unsigned long long)dispatches);
	gc_check_f(!copy || t->copies_tagged == SESS_COPIES, "%s session: %llu memory-copy records "
		   "of %d bytes for %d hipMemcpyHtoDAsync calls (HIP may have copied them some "
		   "other way than ROCr's async copy)", name,
		   (unsigned long long)t->copies_tagged, SESS_COPY_BYTES, SESS_COPIES);
	gc_check_f(t->dropped == 0 && t->short_records == 0, "%s session: %llu records dropped, "
		   "%llu shorter than the restated layout", name, (unsigned long long)t->dropped,
		   (unsigned long long)t->short_records);
}

/*
 * Detach: the context stopped (GPUCONFORM_BUBBLES_REMOVE=detach leaves it
 * started, so that the after-measurements are seen to fail), the session's
 * records taken and checked (sess_check).
 */
static void sess_detach(void *ctx, unsigned m, unsigned c, uint64_t dispatches)
{
	struct sess_ctx *x = ctx;
	struct hb_take t;
	size_t all;

	(void)m;
	if (gc_bubbles_remove("detach"))
		x->left_on = true;
	else
		ctx_switch(x->p, false);
	collect_copies(x->p, x->kid, dispatches,
		       cfg_has(c, RP_TRACING_MEMORY_COPY) ? SESS_COPIES : 0, &t);
	all = t.n;
	keep_kernel(&t, x->kid);
	sess_check(&t, all, c, dispatches);
	free(t.r);
}

/* Records of any kind that arrived after a detach. */
static uint64_t sess_stray(void *ctx)
{
	struct sess_ctx *x = ctx;
	struct hb_take t;
	uint64_t n;

	if (!x->have_kid)
		return 0;
	collect(x->p, 0, 0, &t);
	n = t.n + t.api + t.copies + t.other;
	if (n)
		gc_info("after the detach: %zu kernel, %llu HIP runtime API, %llu memory-copy, %llu "
			"other records", t.n, (unsigned long long)t.api,
			(unsigned long long)t.copies, (unsigned long long)t.other);
	free(t.r);
	return n;
}

/*
 * registration.h [src ROCm/rocprofiler-sdk
 * source/include/rocprofiler-sdk/registration.h @ rocm-6.2.2],
 * rocprofiler_client_finalize_t: "This function
 * can be used to explicitly invoke the client tools
 * ::rocprofiler_tool_finalize_t finalization function prior to the `atexit`
 * handler which calls it." and, of the client's handle, "The handle member
 * is a unique identifer assigned by rocprofiler for the client and the
 * client can store it and pass it to the @ref rocprofiler_client_finalize_t
 * function to force finalization (i.e. deactivate all of it's contexts) for
 * the client." So
 * this finalize is the client's, not an unload: librocprofiler-sdk stays
 * mapped, which the after-finalize report should be read with. Called after
 * a synchronize and a flush, as cuptiFinalize is in cuda_bubbles; our tool's
 * finalize must have run once.
 */
static void sess_finalize(void *ctx)
{
	struct sess_ctx *x = ctx;
	struct hb_prof *p = x->p;
	struct hb_take t;

	if (x->left_on)
		ctx_switch(p, false);
	x->left_on = false;
	gc_hip_assert(x->b->hip, x->b->hip->hipStreamSynchronize(x->b->s));
	collect(p, 0, 0, &t);
	free(t.r);
	gc_assert_f(p->fini, "rocprofiler-sdk called initialize with no finalize_func");
	p->fini(p->client);
	x->finalized = true;
	gc_info("rocprofiler_client_finalize_t called: the client finalized, its context "
		"deactivated; %s stays mapped", p->soname);
	gc_check_f(__atomic_load_n(&p->tool_finis, __ATOMIC_RELAXED) == 1, "finalize_func ran our "
		   "tool's finalize %u times, not once", __atomic_load_n(&p->tool_finis,
									 __ATOMIC_RELAXED));
}

/* The plan's process's cleanup: a context the knob left started, the copies' memory. */
static void sess_release(void *arg)
{
	struct sess_ctx *x = arg;

	if (x->left_on && !x->finalized) {
		int st = x->p->stop_context(x->p->ctx);

		gc_check_f(st == 0, "rocprofiler_stop_context: %s", rp_err(x->p, st));
	}
	if (x->copy_dst) {
		hipError_t e = x->b->hip->hipFree(x->copy_dst);
		char err[160];

		gc_check_f(e == hipSuccess, "hipFree: %s",
			   gc_hip_errstr(x->b->hip, e, err, sizeof(err)));
	}
	free(x->copy_src);
	free(x);
}

/*
 * profiler-sessions. The bubbles contract (DESIGN.md): the gap between
 * kernels is measured per kernel, with and without a profiler tracing, and
 * every dispatch appears in the trace; and context.h, of a context:
 * "This handle is used to activate/deactivate the services during the
 * application runtime." [src ROCm/rocprofiler-sdk
 * source/include/rocprofiler-sdk/context.h @ rocm-6.2.2]. A context
 * stopped is its services deactivated, so
 * once a session has stopped its context no record arrives and the process
 * costs what it cost before the first start: the same gaps and graph times,
 * on graphs instantiated before, during and after the sessions.
 *
 * A matrix of plans (lib/prof_sessions.h): one per configuration, each two
 * sessions in rocprofiler-sdk's one mode (concurrent): kernel (kernel-
 * dispatch buffer tracing alone; run at quick, standard and long),
 * kernel-hip-api (and HIP runtime API buffer tracing; standard and long),
 * kernel-memcpy (and memory-copy buffer tracing; long). Each session runs
 * the traced workload (stream chains, wide and long graphs, graphs
 * instantiated while traced, the AQL deep queue, SESS_COPIES host-to-device
 * copies of SESS_COPY_BYTES bytes) and must record one kernel-dispatch record
 * of gc_stamp's kernel_id per HIP dispatch, HIP runtime API records where
 * enabled, one memory-copy record of SESS_COPY_BYTES bytes per copy where
 * enabled, no record of a kind it did not enable, none dropped. Each plan
 * runs in a process of its own that registers rocprofiler-sdk before ROCr
 * initialises (it must), so its pristine is measured with the tool
 * registered and its context created, never started; this subtest's
 * process never registers it and is the fresh reference. After the
 * sessions the plan's process calls rocprofiler-sdk's finalize_func (see
 * sess_finalize) and measures again: reported, not judged.
 * GPUCONFORM_BUBBLES_REMOVE=detach leaves the context started at each
 * detach (stopped at the next attach): the subtest must then fail.
 */
void hb_test_profiler_sessions(struct hb *b, void (*deep)(void *), void *deep_ctx)
{
	static const struct gc_sess_ops ops = {
		.modes = sess_modes, .nmodes = HB_ARRAY_SIZE(sess_modes),
		.configs = sess_configs, .nconfigs = NCFG,
		.lib = "librocprofiler-sdk",
		.pristine = "rocprofiler-sdk registered before ROCr initialised (it must be), this "
			    "plan's context created and never started; the subtest's process (fresh) "
			    "never loaded it",
		.attach = sess_attach, .workload = sess_workload, .detach = sess_detach,
		.stray = sess_stray, .finalize = sess_finalize,
		.finalize_what = "rocprofiler_client_finalize_t",
	};
	struct sess_ctx *x;

	if (!gc_sess_plan_env()) { /* the subtest's own process: it spawns and judges the plans */
		hb_require(b);
		gc_sess_run(&b->dev, &ops, NULL, "profiler-sessions");
		return;
	}
	x = calloc(1, sizeof(*x));
	gc_assert(x);
	*x = (struct sess_ctx){ .b = b, .deep = deep, .deep_ctx = deep_ctx };
	gc_defer(sess_release, x);
	x->p = prof_require(b);
	gc_hip_assert(b->hip, b->hip->hipMalloc(&x->copy_dst, SESS_COPY_BYTES));
	x->copy_src = malloc(SESS_COPY_BYTES);
	gc_assert(x->copy_src);
	memset(x->copy_src, 0x5a, SESS_COPY_BYTES);
	gc_sess_run(&b->dev, &ops, x, "profiler-sessions");
}

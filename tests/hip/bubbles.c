// SPDX-License-Identifier: MIT
/*
 * hip_bubbles: dispatch bubbles, traces and deep in-flight queues on AMD;
 * the same subtest names as cuda_bubbles.
 *
 * UNVERIFIED ON HARDWARE: built against Debian 12's ROCm 5.2.3 headers with
 * no AMD GPU; seen only skipping. ROCr is opened at run time (gc_hsa.h), the
 * HIP runtime and rocprofiler-sdk too (bubbles_hip.h).
 *
 * Files: this one holds the fixture and deep-inflight (raw AQL queues);
 * bubbles_gaps.c gaps and launch-gap (HIP streams vs HIP graphs; its top
 * comment says how `graph` is realised on AMD and where the clock rate comes
 * from); bubbles_prof.c traced-concurrent, traced-serialized, trace-leak,
 * attach-detach and profiler-sessions (rocprofiler-sdk kernel-dispatch
 * tracing; profiler-sessions also with HIP runtime API or memory-copy
 * tracing, one configuration per plan's process).
 *
 * Clock: gc_stamp stamps s_memrealtime, a constant-rate counter. Its rate is
 * HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY ("Timestamp value increase rate, in
 * Hz.", hsa_ext_amd.h of ROCm >= 6.1 [src ROCm/ROCR-Runtime
 * src/inc/hsa_ext_amd.h @ rocm-6.2.2]; the HIP runtime reports the same
 * value / 1000 as hipDeviceAttributeWallClockRate). The HIP subtests fail
 * saying so where the runtime does not answer; deep-inflight needs no rate
 * (it compares ticks only).
 *
 * deep-inflight's traced case: hsa_amd_profiling_set_profiler_enabled() on
 * the queue, then hsa_amd_profiling_get_dispatch_time() per completion
 * signal ("This dispatch packet must have been issued to a queue with
 * profiling enabled and have already completed. Also the signal must not
 * have yet been used in any other packet following the completion of the
 * profiled dispatch packet."). Its timestamps are in the HSA system clock
 * domain ("@param[out] time Packet processing timestamps in the HSA system
 * clock domain." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @
 * rocm-5.2.3]), not s_memrealtime's: a record is checked for
 * presence and start <= end, not for bracketing the stamps. HSA profiling has
 * no serialized mode: traced-serialized skips saying so.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bubbles_hip.h"
#include "core.h"
#include "gc_hsa.h"
#include "measure.h"

#define DEEP_N 5000u /* > KFD_SIGNAL_EVENT_LIMIT (4096) dispatches behind the gate */
#define QUEUE_WANT 8192u
#define WATCHDOG_NS (60ull * 1000000000ull)
#define GATE_TIMEOUT_TICKS (1ull << 40) /* safety only: the host opens the gate */

struct bub_fx {
	struct gc_hsa h;
	hsa_queue_t *q;
	uint64_t *stamps;
	uint32_t *counts;
	uint32_t *gate; /* [0] flag, [1] result */
	char *kernargs;
	hsa_signal_t *sig;
	unsigned n_sig;
	struct hb hb; /* the HIP half: bubbles_gaps.c, bubbles_prof.c */
};

static void give_back(struct bub_fx *fx)
{
	if (fx->gate)
		__atomic_store_n(&fx->gate[0], 1, __ATOMIC_RELEASE); /* never leave a gate shut */
	for (unsigned i = 0; i < fx->n_sig; i++)
		fx->h.f.signal_destroy(fx->sig[i]);
	free(fx->sig);
	fx->sig = NULL;
	fx->n_sig = 0;
	if (fx->q)
		fx->h.f.queue_destroy(fx->q);
	fx->q = NULL;
	gc_hsa_free(&fx->h, fx->stamps);
	gc_hsa_free(&fx->h, fx->counts);
	gc_hsa_free(&fx->h, fx->gate);
	gc_hsa_free(&fx->h, fx->kernargs);
	fx->stamps = NULL;
	fx->counts = NULL;
	fx->gate = NULL;
	fx->kernargs = NULL;
}

/* ------------------------------------------------- the HIP subtests */

static void test_gaps(void *fx)
{
	hb_test_gaps(&((struct bub_fx *)fx)->hb);
}

static void test_launch_gap(void *fx)
{
	hb_test_launch_gap(&((struct bub_fx *)fx)->hb);
}

static void test_traced_concurrent(void *fx)
{
	hb_test_traced_concurrent(&((struct bub_fx *)fx)->hb);
}

static void test_traced_serialized(void *fx)
{
	hb_test_traced_serialized(&((struct bub_fx *)fx)->hb);
}

static void test_trace_leak(void *fx)
{
	hb_test_trace_leak(&((struct bub_fx *)fx)->hb);
}

static void test_attach_detach(void *fx)
{
	hb_test_attach_detach(&((struct bub_fx *)fx)->hb);
}

/* ------------------------------------------------------ deep in-flight */

static void deep_setup(struct bub_fx *fx, bool traced)
{
	struct gc_hsa *h = &fx->h;
	hsa_status_t st;

	gc_require_f(h->queue_max >= QUEUE_WANT, "deep-inflight needs an AQL queue of %u "
		     "packets, the GPU allows %u", QUEUE_WANT, h->queue_max);
	st = h->f.queue_create(h->gpu, QUEUE_WANT, HSA_QUEUE_TYPE_SINGLE, NULL, NULL,
			       UINT32_MAX, UINT32_MAX, &fx->q);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_queue_create: %s", gc_hsa_err(h, st));
	if (traced) {
		st = h->f.amd_profiling_set_profiler_enabled(fx->q, 1);
		gc_require_f(st == HSA_STATUS_SUCCESS, "hsa_amd_profiling_set_profiler_enabled:"
			     " %s", gc_hsa_err(h, st));
	}
	fx->stamps = gc_hsa_alloc_fine(h, 2 * sizeof(uint64_t) * DEEP_N);
	fx->counts = gc_hsa_alloc_fine(h, sizeof(uint32_t) * DEEP_N);
	fx->gate = gc_hsa_alloc_fine(h, 2 * sizeof(uint32_t));
	fx->kernargs = gc_hsa_alloc_kernarg(h, gc_hsa_kernarg_stride(h) * (DEEP_N + 1));
	fx->sig = calloc(DEEP_N + 1, sizeof(*fx->sig));
	gc_assert_f(fx->stamps && fx->counts && fx->gate && fx->kernargs && fx->sig,
		    "allocation failed");
}

/* One completion signal per dispatch when traced (profiling needs it), else one for the last. */
static hsa_signal_t deep_signal(struct bub_fx *fx, bool want)
{
	hsa_signal_t s = { 0 };
	hsa_status_t st;

	if (!want)
		return s;
	st = fx->h.f.signal_create(1, 0, NULL, &s);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "signal %u: %s", fx->n_sig,
		    gc_hsa_err(&fx->h, st));
	fx->sig[fx->n_sig++] = s;
	return s;
}

static void deep_dispatch(struct bub_fx *fx, bool traced)
{
	size_t stride = gc_hsa_kernarg_stride(&fx->h);
	uint64_t deadline = gc_now_ns() + WATCHDOG_NS;
	void *ka = fx->kernargs;

	gc_hsa_gate_args(ka, &fx->gate[0], GATE_TIMEOUT_TICKS, &fx->gate[1]);
	gc_assert_ok(gc_hsa_dispatch(&fx->h, fx->q, &fx->h.gate, ka, deep_signal(fx, traced),
				     false, deadline));
	for (unsigned i = 0; i < DEEP_N; i++) {
		hsa_signal_t s = deep_signal(fx, traced || i == DEEP_N - 1);

		ka = fx->kernargs + stride * (i + 1);
		gc_hsa_stamp_args(ka, fx->stamps, fx->counts, i, 0);
		/*
		 * barrier bit: "If the barrier bit is set, the processing of the
		 * current packet only launches when all preceding packets (within
		 * the same queue) are complete." [src ROCm/ROCR-Runtime
		 * src/inc/hsa.h @ rocm-5.2.3]
		 */
		gc_assert_ok(gc_hsa_dispatch(&fx->h, fx->q, &fx->h.stamp, ka, s, true, deadline));
	}
}

static unsigned deep_done(const struct bub_fx *fx)
{
	unsigned n = 0;

	for (unsigned i = 0; i < DEEP_N; i++)
		n += __atomic_load_n(&fx->counts[i], __ATOMIC_ACQUIRE) != 0;
	return n;
}

static void deep_check_stamps(const struct bub_fx *fx)
{
	for (unsigned i = 0; i < DEEP_N; i++) {
		gc_assert_f(fx->counts[i] == 1, "kernel %u ran %u times (lost or replayed)", i,
			    fx->counts[i]);
		gc_assert_f(fx->stamps[2 * i + 1] >= fx->stamps[2 * i],
			    "kernel %u: end before start: device clock went backwards", i);
		gc_assert_f(i == 0 || fx->stamps[2 * i] >= fx->stamps[2 * i - 1],
			    "kernel %u started before kernel %u ended (barrier chain): "
			    "device clock went backwards", i, i - 1);
	}
}

/* Every traced dispatch has a record with start <= end (HSA system clock domain). */
static void deep_check_records(struct bub_fx *fx)
{
	for (unsigned i = 0; i < fx->n_sig; i++) {
		hsa_amd_profiling_dispatch_time_t t = { 0, 0 };
		hsa_status_t st = fx->h.f.amd_profiling_get_dispatch_time(fx->h.gpu, fx->sig[i],
									   &t);

		gc_assert_f(st == HSA_STATUS_SUCCESS, "dispatch %u: no trace record: %s", i,
			    gc_hsa_err(&fx->h, st));
		gc_assert_f(t.start != 0 && t.end >= t.start, "dispatch %u: record start %" PRIu64
			    " end %" PRIu64, i, t.start, t.end);
	}
}

/*
 * Contract: AQL barrier-bit packets behind a running gate do not start
 * (counts all 0 while it is shut); once the host opens the gate, all DEEP_N
 * complete (watchdog: `hang: N of M kernels done`), each stamped once, in
 * order; traced, each has its dispatch-time record.
 */
static void deep(struct bub_fx *fx, bool traced)
{
	hsa_signal_t last;
	unsigned held;

	deep_setup(fx, traced);
	deep_dispatch(fx, traced);
	held = deep_done(fx);
	last = fx->sig[fx->n_sig - 1];
	__atomic_store_n(&fx->gate[0], 1, __ATOMIC_RELEASE);
	if (!gc_hsa_wait_eq(&fx->h, last, 0, gc_now_ns() + WATCHDOG_NS, HSA_WAIT_STATE_BLOCKED))
		gc_fail("hang: %u of %u kernels done", deep_done(fx), DEEP_N);
	gc_assert_f(held == 0, "%u kernels ran while the gate was shut", held);
	gc_assert_f(fx->gate[1] == 1, "the gate %s", fx->gate[1] == 2 ? "timed out" : "never ran");
	deep_check_stamps(fx);
	if (traced)
		deep_check_records(fx);
	give_back(fx);
}

/* How the deep queue is traced; a mode AMD lacks names why it skips. */
struct deep_mode {
	const char *name;
	bool traced;
	const char *skip;
};

GC_VARIANTS(struct deep_mode, deep_modes, deep_case) = {
	{ "plain", false, NULL },
	{ "traced", true, NULL },
	{ "traced-serialized", true, "no serialized tracing mode: HSA dispatch-time profiling "
	  "has none, nor has rocprofiler-sdk's kernel-dispatch tracing (see traced-serialized)" },
};

static void deep_case(void *fx, const struct deep_mode *m)
{
	if (m->skip)
		gc_skip("%s", m->skip);
	deep(fx, m->traced);
}

static void test_deep_inflight(void *fx)
{
	gc_variants(deep_modes, fx);
}

/* ----------------------------------------------------------- fixture */

static void *bub_setup(void)
{
	struct bub_fx *fx = calloc(1, sizeof(*fx));

	gc_assert_f(fx != NULL, "calloc failed");
	/* Before ROCr initialises, or rocprofiler-sdk cannot see its queues (bubbles_prof.c). */
	hb_prof_register(&fx->hb, gc_current_subtest());
	fx->hb.hsa = &fx->h;
	gc_hsa_require(&fx->h);
	gc_info("HSA GPU %s, queue max %u, s_memrealtime %" PRIu64 " Hz%s", fx->h.gpu_name,
		fx->h.queue_max, fx->h.gpu_ts_hz, fx->h.gpu_ts_hz ? "" : " (runtime does not say)");
	return fx;
}

static void bub_teardown(void *data)
{
	struct bub_fx *fx = data;

	hb_close(&fx->hb);
	gc_hsa_close(&fx->h);
	free(fx);
}

static void bub_after_each(void *data)
{
	give_back(data);
}

/* The deep queue inside a profiler session: untraced by HSA, traced by the session. */
static void sess_deep(void *fx)
{
	deep(fx, false);
}

/*
 * profiler-sessions: see bubbles_prof.c. The fixture registered
 * rocprofiler-sdk only where this is a plan's process (gc_sess_plan_env()).
 */
static void test_profiler_sessions(void *fx)
{
	hb_test_profiler_sessions(&((struct bub_fx *)fx)->hb, sess_deep, fx);
}

static const struct gc_fixture fixture = {
	.setup = bub_setup,
	.teardown = bub_teardown,
	.after_each = bub_after_each,
};

static const struct gc_subtest subtests[] = {
	{ "gaps", test_gaps, "gap between dependent kernels per launch mode and shape (metrics)" },
	{ "launch-gap", test_launch_gap, "gap between consecutive launches of one small graph" },
	{ "traced-concurrent", test_traced_concurrent,
	  "kernel trace on: one record per dispatch, overhead ratios" },
	{ "traced-serialized", test_traced_serialized, "the same with serialized tracing" },
	{ "trace-leak", test_trace_leak, "host/device memory and fds after 100,000 traced dispatches" },
	{ "attach-detach", test_attach_detach,
	  "tracing on/off while launching (a soak: 100 times at standard)" },
	{ "deep-inflight", test_deep_inflight,
	  "5000 dispatches behind a gate, then opened: all complete, stamped once, in order" },
	{ "profiler-sessions", test_profiler_sessions,
	  "tracing sessions in sequence: after each stop the cost is back to before the first" },
	{ 0 }
};

static const char *const soaks[] = { "attach-detach", NULL };

GC_MAIN(.name = "hip_bubbles", .description = "Dispatch bubbles, traces, deep queues (AMD)",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks,
	.placement = GC_PLACE_GPU)

// SPDX-License-Identifier: MIT
/*
 * Unit tests of the restart bookkeeping kfd_interrupt and kfd_multigpu use
 * for MAP_MEMORY_TO_GPU / UNMAP_MEMORY_FROM_GPU (tests/kfd/kfd_restart.h,
 * built on gc_progress_report()), against a simulated kernel. No GPU: the
 * simulation only models what the UAPI and kfd_chardev.c (read, not run)
 * say about n_success:
 *  - devices are handled in list order from the n_success passed in;
 *    n_success is advanced past each device as soon as it is done;
 *  - an unknown gpu_id is found only when the loop reaches it: -EINVAL with
 *    n_success = its position;
 *  - a signal inside device k's step: -EINTR with n_success = k; a signal in
 *    the wait after the loop: -EINTR with n_success = n_devices;
 *  - n_success > n_devices: -EINVAL (with a pr_debug that says so).
 * The simulation counts how often each device was mapped, so a restart that
 * redid a device (or skipped one) is seen.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core.h"
#include "interrupt.h"
#include "../kfd/kfd_restart.h"

#define SIM_MAX 16
#define MAX_CALLS 64

struct sim {
	uint32_t n;
	unsigned maps[SIM_MAX]; /* times each device was mapped */
	unsigned syncs;         /* completed waits + TLB flushes */
	unsigned calls;
	const uint32_t *stops;  /* successive interruption points: before device k, n: the wait */
	unsigned n_stops, next_stop;
	int invalid_at;         /* position of a gpu_id the kernel does not know; -1: none */
};

static bool sim_interrupt_at(struct sim *s, uint32_t k)
{
	if (s->next_stop >= s->n_stops || s->stops[s->next_stop] != k)
		return false;
	s->next_stop++;
	return true;
}

static int sim_call(void *ctx, uint32_t *n_success)
{
	struct sim *s = ctx;

	s->calls++;
	if (*n_success > s->n)
		return -EINVAL;
	for (uint32_t i = *n_success; i < s->n; i++) {
		if ((int)i == s->invalid_at)
			return -EINVAL;
		if (sim_interrupt_at(s, i))
			return -EINTR;
		s->maps[i]++;
		*n_success = i + 1;
	}
	if (sim_interrupt_at(s, s->n))
		return -EINTR;
	s->syncs++;
	return 0;
}

static void sim_init(struct sim *s, uint32_t n, const uint32_t *stops, unsigned n_stops,
		     int invalid_at)
{
	gc_assert(n <= SIM_MAX);
	*s = (struct sim){ .n = n, .stops = stops, .n_stops = n_stops, .invalid_at = invalid_at };
}

static void assert_each_mapped_once(const struct sim *s, uint32_t upto)
{
	for (uint32_t d = 0; d < s->n; d++)
		gc_assert_f(s->maps[d] == (d < upto), "device %u of %u mapped %u times, expected %u",
			    d, s->n, s->maps[d], d < upto);
}

/* Every call after the first sent the n_success the one before returned. */
static void assert_trace_chained(const struct kfd_restart *r)
{
	if (r->calls == r->n_trace)
		gc_assert_eq_uint(kfd_restart_trace(r, 0)->sent, 0);
	for (unsigned i = 1; i < r->n_trace; i++)
		gc_assert_eq_uint(kfd_restart_trace(r, i)->sent, kfd_restart_trace(r, i - 1)->got);
}

/*
 * A map of n GPUs interrupted after k of them (k == n: in the wait after the
 * loop), restarted with the returned n_success, converges in two calls and
 * maps each GPU exactly once.
 */
static void test_converges(void *fx)
{
	(void)fx;
	for (uint32_t n = 1; n <= 8; n++) {
		for (uint32_t k = 0; k <= n; k++) {
			struct kfd_restart r;
			struct sim s;

			sim_init(&s, n, &k, 1, -1);
			gc_assert_ok(kfd_restart_run(&r, n, MAX_CALLS, sim_call, &s));
			gc_assert_eq_uint(r.calls, 2);
			gc_assert_eq_uint(s.calls, 2);
			gc_assert_eq_uint(r.p.done, n);
			gc_assert_eq_uint(r.trace[0].got, k);
			gc_assert_eq_int(r.trace[0].ret, -EINTR);
			gc_assert_eq_uint(r.trace[1].sent, k);
			gc_assert_eq_uint(r.eintr, 1);
			gc_assert_eq_uint(r.eintr_after, k == n);
			gc_assert_eq_uint(r.eintr_in_loop, k < n);
			gc_assert_eq_uint(s.syncs, 1);
			assert_each_mapped_once(&s, n);
			assert_trace_chained(&r);
		}
	}
}

/* Interrupted again and again, at the same device too, and twice in the wait. */
static void test_many_interruptions(void *fx)
{
	static const uint32_t stops[] = { 0, 2, 2, 4, 5, 5 };
	struct kfd_restart r;
	struct sim s;

	(void)fx;
	sim_init(&s, 5, stops, 6, -1);
	gc_assert_ok(kfd_restart_run(&r, 5, MAX_CALLS, sim_call, &s));
	gc_assert_eq_uint(r.calls, 7);
	gc_assert_eq_uint(r.eintr, 6);
	gc_assert_eq_uint(r.eintr_after, 2);
	gc_assert_eq_uint(r.eintr_in_loop, 4);
	gc_assert_eq_uint(r.p.done, 5);
	gc_assert_eq_uint(s.syncs, 1);
	assert_each_mapped_once(&s, 5);
	assert_trace_chained(&r);
	gc_assert_eq_uint(r.trace[3].sent, 2);
	gc_assert_eq_uint(r.trace[6].sent, 5);
}

/* A long restart keeps its last KFD_RESTART_TRACE calls, the oldest first. */
static void test_long_trace(void *fx)
{
	uint32_t stops[20];
	struct kfd_restart r;
	struct sim s;

	(void)fx;
	for (unsigned i = 0; i < 20; i++)
		stops[i] = i < 10 ? 0 : 1; /* ten times at device 0, ten at device 1 */
	sim_init(&s, 2, stops, 20, -1);
	gc_assert_ok(kfd_restart_run(&r, 2, MAX_CALLS, sim_call, &s));
	gc_assert_eq_uint(r.calls, 21);
	gc_assert_eq_uint(r.n_trace, KFD_RESTART_TRACE);
	gc_assert_eq_int(kfd_restart_trace(&r, KFD_RESTART_TRACE - 1)->ret, 0);
	gc_assert_eq_uint(kfd_restart_trace(&r, KFD_RESTART_TRACE - 1)->sent, 1);
	/* call 5 (0-based) is the oldest kept: the last interruption at device 0 ... */
	gc_assert_eq_uint(kfd_restart_trace(&r, 0)->got, 0);
	gc_assert_eq_uint(kfd_restart_trace(&r, 4)->got, 0);
	/* ... and call 10 the first that got past it */
	gc_assert_eq_uint(kfd_restart_trace(&r, 5)->got, 1);
	assert_trace_chained(&r);
	assert_each_mapped_once(&s, 2);
}

/*
 * An unknown gpu_id at position p: -EINVAL handed back with n_success p, the
 * devices before it mapped once, none after; also after an interruption.
 */
static void test_error_stops(void *fx)
{
	static const uint32_t stop1 = 1;
	struct kfd_restart r;
	struct sim s;

	(void)fx;
	for (int p = 0; p < 4; p++) {
		sim_init(&s, 4, NULL, 0, p);
		gc_assert_errno(kfd_restart_run(&r, 4, MAX_CALLS, sim_call, &s), EINVAL);
		gc_assert_eq_uint(r.calls, 1);
		gc_assert_eq_uint(r.p.done, (unsigned)p);
		gc_assert_eq_uint(s.syncs, 0);
		assert_each_mapped_once(&s, (uint32_t)p);
	}
	sim_init(&s, 4, &stop1, 1, 3);
	gc_assert_errno(kfd_restart_run(&r, 4, MAX_CALLS, sim_call, &s), EINVAL);
	gc_assert_eq_uint(r.calls, 2);
	gc_assert_eq_uint(r.p.done, 3);
	assert_each_mapped_once(&s, 3);
}

/* A scripted kernel: call i returns script[i] (the last one repeats). */
struct liar {
	const struct kfd_call *script;
	unsigned n, i;
};

static int liar_call(void *ctx, uint32_t *n_success)
{
	struct liar *l = ctx;
	const struct kfd_call *c = &l->script[l->i < l->n ? l->i : l->n - 1];

	l->i++;
	*n_success = c->got;
	return c->ret;
}

static int run_liar(struct kfd_restart *r, uint32_t n, const struct kfd_call *script,
		    unsigned len)
{
	struct liar l = { .script = script, .n = len };

	return kfd_restart_run(r, n, 10, liar_call, &l);
}

/* Reports that cannot be true stop the loop with -EPROTO and the culprit. */
static void test_impossible(void *fx)
{
	static const struct kfd_call backwards[] = { { 0, 2, -EINTR }, { 0, 1, -EINTR } };
	static const struct kfd_call beyond[] = { { 0, 5, -EINTR } };
	static const struct kfd_call short_ok[] = { { 0, 3, 0 } };
	static const struct kfd_call positive[] = { { 0, 4, 1 } };
	struct kfd_restart r;

	(void)fx;
	gc_assert_errno(run_liar(&r, 4, backwards, 2), EPROTO);
	gc_assert_eq_uint(r.calls, 2);
	gc_assert_eq_uint(r.bad.sent, 2);
	gc_assert_eq_uint(r.bad.got, 1);
	gc_assert_eq_uint(r.p.done, 2);
	gc_assert_errno(run_liar(&r, 4, beyond, 1), EPROTO);
	gc_assert_eq_uint(r.p.done, 0);
	gc_assert_errno(run_liar(&r, 4, short_ok, 1), EPROTO);
	gc_assert_errno(run_liar(&r, 4, positive, 1), EPROTO);
	gc_assert_eq_int(r.bad.ret, 1);
}

/* Other ends: ERESTARTSYS leaked, no progress without end, an empty list. */
static void test_other_ends(void *fx)
{
	static const struct kfd_call leaked[] = { { 0, 1, -KFD_ERESTARTSYS } };
	static const struct kfd_call stuck[] = { { 0, 0, -EINTR } };
	static const struct kfd_call in_wait[] = { { 0, 4, -EINTR }, { 0, 4, -EINTR },
						   { 0, 4, 0 } };
	struct kfd_restart r;

	(void)fx;
	gc_assert_errno(run_liar(&r, 4, leaked, 1), KFD_ERESTARTSYS);
	gc_assert_eq_uint(r.calls, 1);
	gc_assert_eq_uint(r.p.done, 1);
	gc_assert_errno(run_liar(&r, 4, stuck, 1), ELOOP);
	gc_assert_eq_uint(r.calls, 10);
	gc_assert_eq_uint(r.eintr, 10);
	gc_assert_errno(run_liar(&r, 0, stuck, 1), EINVAL);
	gc_assert_eq_uint(r.calls, 0);
	/* Every device done but the wait interrupted: reissued until it returns 0. */
	gc_assert_ok(run_liar(&r, 4, in_wait, 3));
	gc_assert_eq_uint(r.calls, 3);
	gc_assert_eq_uint(r.eintr_after, 2);
	gc_assert_eq_uint(r.trace[2].sent, 4);
}

/*
 * The simulation can tell a wrong restart: one that does not pass the
 * returned n_success back maps the first devices twice.
 */
static void test_sim_sees_double_map(void *fx)
{
	static const uint32_t stop2 = 2;
	uint32_t ns = 0;
	struct sim s;

	(void)fx;
	sim_init(&s, 4, &stop2, 1, -1);
	gc_assert_errno(sim_call(&s, &ns), EINTR);
	gc_assert_eq_uint(ns, 2);
	ns = 0; /* the mistake */
	gc_assert_ok(sim_call(&s, &ns));
	gc_assert_eq_uint(s.maps[0], 2);
	gc_assert_eq_uint(s.maps[1], 2);
	gc_assert_eq_uint(s.maps[2], 1);
	ns = 5;
	gc_assert_errno(sim_call(&s, &ns), EINVAL); /* n_success exceeds n_devices */
}

static const struct gc_subtest subtests[] = {
	{ "converges", test_converges,
	  "map of n GPUs interrupted after k, restarted with n_success: 2 calls, each GPU once" },
	{ "many-interruptions", test_many_interruptions,
	  "repeated interruptions, in the loop and in the wait: each GPU once" },
	{ "long-trace", test_long_trace,
	  "21 calls: the last 16 kept in order, each GPU once" },
	{ "error-stops", test_error_stops,
	  "unknown gpu_id at position p: EINVAL with n_success p, p GPUs mapped" },
	{ "impossible", test_impossible,
	  "n_success backwards / beyond n / short success / positive return: EPROTO" },
	{ "other-ends", test_other_ends,
	  "ERESTARTSYS handed back, endless EINTR is ELOOP, empty list, EINTR in the wait" },
	{ "sim-sees-double-map", test_sim_sees_double_map,
	  "control: a restart from 0 is seen mapping GPUs twice" },
	{ 0 }
};

GC_MAIN(.name = "unit_kfd_restart",
	.description = "restart bookkeeping for KFD multi-device map/unmap (n_success)",
	.subtests = subtests)

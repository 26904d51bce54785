// SPDX-License-Identifier: MIT
/*
 * The management-session contract's bodies (contract/session.h): the order
 * of a stack's inits and shutdowns in refcount, handles-across-cycles and
 * cost, the same for NVML and the AMD management libraries.
 */
#include "contract/session.h"

#include <stdio.h>

#include "core.h"
#include "measure.h"
#include "soak.h"

static const char *status(const struct gc_session *s, int r, char *buf)
{
	return s->strerror(s->ctx, r, buf, s->status_len);
}

struct gc_soak *gc_session_soak_start(double budget_s, const char *cycle)
{
	return gc_soak_start(&(struct gc_soak_cfg){
		.name = "concurrent-sessions",
		.cycles = GC_SESSION_THREADS * (unsigned long)GC_SESSION_ROUNDS,
		.quick = GC_SESSION_THREADS * (unsigned long)GC_SESSION_ROUNDS_QUICK,
		.budget_s = budget_s, .cycle = cycle });
}

void gc_session_open(const struct gc_session *s)
{
	char b[GC_SESSION_STATUS_MAX];
	int r = s->init(s->ctx);

	gc_assert_f(r == 0, "%s: %s", s->init_name, status(s, r, b));
}

void gc_session_close(const struct gc_session *s, const char *when)
{
	char b[GC_SESSION_STATUS_MAX];
	int r = s->shutdown(s->ctx);

	if (!(s->drift & GC_SESSION_SHUT_WHEN))
		gc_assert_f(r == 0, "%s: %s", s->shutdown_name, status(s, r, b));
	else if (s->checked)
		gc_assert_f(r == 0, "%s: %s: %s", when, s->shutdown_name, status(s, r, b));
	else if (r != 0)
		gc_info("%s: %s: %s", when, s->shutdown_name, status(s, r, b));
}

void gc_session_within(const struct gc_session *s, void (*step)(void *ctx), void *ctx,
		       const char *when)
{
	gc_session_open(s);
	step(ctx);
	gc_session_close(s, when);
}

/*
 * refcount: k inits, then k shutdowns; what the session must answer in
 * between is the stack's (rc's hooks).
 */
void gc_session_refcount(const struct gc_session *s, const struct gc_session_refcount *rc,
			 unsigned k)
{
	char when[96];

	for (unsigned i = 0; i < k; i++)
		gc_session_open(s);
	rc->opened(rc->ctx, k);
	for (unsigned i = 1; i <= k; i++) {
		snprintf(when, sizeof(when), "shutdown %u of %u", i, k);
		gc_session_close(s, when);
		rc->shut(rc->ctx, i, k, when);
	}
	rc->closed(rc->ctx, k);
}

/* handles-across-cycles: a handle of one session, used after a full shutdown and a new init. */
void gc_session_handles(const struct gc_session *s, const struct gc_session_handles *h)
{
	gc_session_open(s);
	h->take(h->ctx);
	gc_session_close(s, h->closing);
	gc_session_open(s);
	h->stale(h->ctx);
	h->again(h->ctx);
	gc_session_close(s, h->closing_again);
}

static double ns_since(uint64_t t0)
{
	return (double)(gc_now_ns() - t0);
}

void gc_session_cost_warm(const struct gc_session *s, void (*request)(void *ctx, double *ns),
			  double *warm, double *query, unsigned reps)
{
	gc_session_open(s);
	for (unsigned i = 0; i < reps; i++) {
		uint64_t t0 = gc_now_ns();

		gc_session_open(s);
		gc_session_close(s, "a warm session");
		warm[i] = ns_since(t0);
		request(s->ctx, &query[i]);
	}
	gc_session_close(s, "the held session");
}

void gc_session_cost_ratio(const double *lazy, const double *query, unsigned reps)
{
	double ratio = gc_stat_median(lazy, reps) / gc_stat_median(query, reps);

	gc_metric("lazy-over-persistent", "x", GC_LOWER_IS_BETTER, &ratio, 1);
}

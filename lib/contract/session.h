/* SPDX-License-Identifier: MIT */
/*
 * The management-session contract, one body for every stack: nvml_session
 * (tests/nvml/session.c) and the AMD management libraries' rsmi_session and
 * amdsmi_session (tests/smi/smi_session.c) run the steps below through a
 * table of their calls (struct gc_session), so that each subtest opens and
 * closes its sessions in the same order everywhere. The cases and their
 * names: lib/session_cases.h.
 *
 * Shared here: a session opened (an init, asserted) and closed (a
 * shutdown, asserted or recorded), refcount's k inits and k shutdowns,
 * handles-across-cycles' two sessions, and cost's warm loop and its
 * lazy-over-persistent ratio. What each stack checks between those steps
 * (NVML asserts the count, the SMI libraries what their documentation
 * promises) stays the stack's, behind hooks. The threaded subtests
 * (concurrent-sessions, unpaired-init, contention) keep each stack's own
 * harness: their watchdogs and verdicts differ (see each file).
 *
 * Every function here is subtest-level: it fails the subtest as gc_assert
 * does.
 */
#ifndef GPUCONFORM_CONTRACT_SESSION_H
#define GPUCONFORM_CONTRACT_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "session_cases.h"

/*
 * Where the binaries drifted apart in wording, kept as each had it:
 * GC_SESSION_SHUT_WHEN: a shutdown's message names the step first,
 * `<when>: rsmi_shut_down: <status>` (the SMI binaries), where nvml_session
 * says `<call>: <status>`.
 */
#define GC_SESSION_SHUT_WHEN 1u

/* The matrices' counts, every stack's. */
#define GC_SESSION_THREADS 256    /* concurrent-sessions' request threads ... */
#define GC_SESSION_ROUNDS 1000    /* ... and each one's share of its rounds at standard ... */
#define GC_SESSION_ROUNDS_QUICK 20 /* ... and at quick */
#define GC_SESSION_UNPAIRED 64    /* unpaired-init: so many inits, then as many shutdowns */
#define GC_SESSION_STALL_S 30     /* no round finished anywhere for this long: a deadlock */
#define GC_SESSION_COST_REPS 200  /* cost: samples of each metric */

/*
 * A stack's side: its init and shutdown, each returning the stack's own
 * status (0 success), named in messages as the stack names them, and the
 * status in words (status_len: the stack's buffer for it, at most
 * GC_SESSION_STATUS_MAX). checked: a shutdown's status is asserted; else
 * one other than success is recorded (gc_info).
 */
struct gc_session {
	const char *init_name, *shutdown_name;
	int (*init)(void *ctx);
	int (*shutdown)(void *ctx);
	const char *(*strerror)(void *ctx, int r, char *buf, size_t len);
	size_t status_len;
	bool checked;
	unsigned drift; /* GC_SESSION_SHUT_WHEN */
	void *ctx;
};

#define GC_SESSION_STATUS_MAX 192

struct gc_soak;

/*
 * concurrent-sessions' soak: GC_SESSION_THREADS threads sharing
 * GC_SESSION_ROUNDS (quick: GC_SESSION_ROUNDS_QUICK) rounds each; budget_s
 * (0: none) also ends it at quick and standard; cycle says what a round is.
 */
struct gc_soak *gc_session_soak_start(double budget_s, const char *cycle);

/* One init: success, asserted (`<init_name>: <status>`). */
void gc_session_open(const struct gc_session *s);
/* One shutdown, when naming the step (GC_SESSION_SHUT_WHEN's wording only). */
void gc_session_close(const struct gc_session *s, const char *when);
/* One session around step(ctx): opened, step, closed (when: the step's name). */
void gc_session_within(const struct gc_session *s, void (*step)(void *ctx), void *ctx,
		       const char *when);

/*
 * refcount: k inits (each asserted), opened(ctx, k); then for i = 1..k one
 * shutdown (gc_session_close, the step named `shutdown i of k`) and
 * shut(ctx, i, k, that name); then closed(ctx, k). ctx: the hooks' own.
 */
struct gc_session_refcount {
	void (*opened)(void *ctx, unsigned k);
	void (*shut)(void *ctx, unsigned i, unsigned k, const char *when);
	void (*closed)(void *ctx, unsigned k);
	void *ctx;
};

void gc_session_refcount(const struct gc_session *s, const struct gc_session_refcount *rc,
			 unsigned k);

/*
 * handles-across-cycles: a session, take(ctx) a handle in it, closed
 * (closing: the step's name); a new session, stale(ctx) uses the handle,
 * again(ctx) finds the device again; that session closed (closing_again).
 * ctx: the hooks' own.
 */
struct gc_session_handles {
	void (*take)(void *ctx);
	void (*stale)(void *ctx);
	void (*again)(void *ctx);
	const char *closing, *closing_again;
	void *ctx;
};

void gc_session_handles(const struct gc_session *s, const struct gc_session_handles *h);

/*
 * cost's warm loop, in a session held around it: reps times an init and a
 * shutdown (warm[i], ns; the shutdown named `a warm session`), then
 * request(ctx, &query[i]), one timed request as the stack makes it. The
 * held session's shutdown is named `the held session`.
 */
void gc_session_cost_warm(const struct gc_session *s, void (*request)(void *ctx, double *ns),
			  double *warm, double *query, unsigned reps);
/* The per-request session over the persistent request, medians: metric lazy-over-persistent. */
void gc_session_cost_ratio(const double *lazy, const double *query, unsigned reps);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * What a subtest needs from its worker threads: the first problem any of
 * them met (the main thread fails on it), and a watchdog that tells a
 * deadlock from slowness by progress, never by total time.
 *
 *     struct gc_problems pr;  struct gc_progress pg = { 0 };
 *     gc_problems_init(&pr);
 *     ... in each worker: gc_problem(&pr, fmt, ...), gc_progress_round(&pg) per
 *         round, gc_progress_done(&pg) when it returns ...
 *     gc_progress_await(&pg, n, 30, &stop, inside);   // or fails: `deadlock: ...`
 *     gc_problems_assert_none(&pr);                   // or fails: `N problems; ...`
 *
 * (inside: what the workers call, as a string literal such as `NVML`.)
 *
 * A thread that never returns keeps using both: keep them on the heap and
 * leave them to it after a timeout.
 */
#ifndef GPUCONFORM_WORKERS_H
#define GPUCONFORM_WORKERS_H

#include <pthread.h>

struct gc_problems {
	pthread_mutex_t lock;
	unsigned count; /* atomic */
	char first[400];
};

void gc_problems_init(struct gc_problems *p);
void gc_problems_destroy(struct gc_problems *p);
/* Count a problem; the first one's text is kept. Thread-safe. */
void gc_problem(struct gc_problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
unsigned gc_problems_count(struct gc_problems *p);
/* Fail the subtest with `N problems; the first: ...` unless there was none. */
void gc_problems_assert_none(struct gc_problems *p);

struct gc_progress {
	unsigned long rounds; /* atomic: rounds any worker finished */
	unsigned done;        /* atomic: workers that returned */
};

void gc_progress_round(struct gc_progress *p);
void gc_progress_done(struct gc_progress *p);
unsigned long gc_progress_rounds(struct gc_progress *p);
unsigned gc_progress_finished(struct gc_progress *p);

/*
 * Wait until n workers are done: 0. -ETIMEDOUT as soon as no round has
 * finished for stall_ms (checked every 10 ms or stall_ms, the smaller).
 */
int gc_progress_wait(struct gc_progress *p, unsigned n, unsigned stall_ms);

/*
 * gc_progress_wait() for a subtest: on a stall, *stop is set (atomically:
 * the workers' signal to give up) and the subtest fails with `deadlock: K
 * of n threads still inside <inside>, no round finished for S s (R rounds
 * done)`.
 */
void gc_progress_await(struct gc_progress *p, unsigned n, unsigned stall_s, int *stop,
		       const char *inside);

#endif

// SPDX-License-Identifier: MIT
#include "workers.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "core.h"
#include "measure.h"

void gc_problems_init(struct gc_problems *p)
{
	pthread_mutex_init(&p->lock, NULL);
	p->count = 0;
	p->first[0] = '\0';
}

void gc_problems_destroy(struct gc_problems *p)
{
	pthread_mutex_destroy(&p->lock);
}

void gc_problem(struct gc_problems *p, const char *fmt, ...)
{
	pthread_mutex_lock(&p->lock);
	if (__atomic_fetch_add(&p->count, 1, __ATOMIC_RELAXED) == 0)
		GC_VFORMAT(p->first, sizeof(p->first), fmt);
	pthread_mutex_unlock(&p->lock);
}

unsigned gc_problems_count(struct gc_problems *p)
{
	return __atomic_load_n(&p->count, __ATOMIC_RELAXED);
}

void gc_problems_assert_none(struct gc_problems *p)
{
	unsigned n = gc_problems_count(p);

	if (n)
		gc_fail("%u problems; the first: %s", n, p->first);
}

void gc_progress_round(struct gc_progress *p)
{
	__atomic_fetch_add(&p->rounds, 1, __ATOMIC_RELAXED);
}

void gc_progress_done(struct gc_progress *p)
{
	__atomic_fetch_add(&p->done, 1, __ATOMIC_RELEASE);
}

unsigned long gc_progress_rounds(struct gc_progress *p)
{
	return __atomic_load_n(&p->rounds, __ATOMIC_RELAXED);
}

unsigned gc_progress_finished(struct gc_progress *p)
{
	return __atomic_load_n(&p->done, __ATOMIC_ACQUIRE);
}

int gc_progress_wait(struct gc_progress *p, unsigned n, unsigned stall_ms)
{
	unsigned long last = gc_progress_rounds(p), now;
	uint64_t t_last = gc_now_ns(), stall_ns = stall_ms * 1000000ull;
	unsigned poll_us = stall_ms < 10 ? stall_ms * 1000 : 10000;

	while (gc_progress_finished(p) < n) {
		now = gc_progress_rounds(p);
		if (now != last) {
			last = now;
			t_last = gc_now_ns();
		} else if (gc_now_ns() - t_last > stall_ns) {
			return -ETIMEDOUT;
		}
		usleep(poll_us);
	}
	return 0;
}

void gc_progress_await(struct gc_progress *p, unsigned n, unsigned stall_s, int *stop,
		       const char *inside)
{
	if (gc_progress_wait(p, n, stall_s * 1000) == 0)
		return;
	__atomic_store_n(stop, 1, __ATOMIC_RELEASE);
	gc_fail("deadlock: %u of %u threads still inside %s, no round finished for %u s "
		"(%lu rounds done)", n - gc_progress_finished(p), n, inside, stall_s,
		gc_progress_rounds(p));
}

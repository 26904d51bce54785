// SPDX-License-Identifier: MIT
/* The fastpath bodies both vendors run alike: see fastpath_io.h. */
#include "fastpath_io.h"

#include <pthread.h>
#include <string.h>
#include <stdlib.h>

#include "core.h"
#include "fastpath_subtests.h"

/* One transfer of all 16 MiB, else fail naming the cycle; the path it took on cycle 0. */
static void sustained_transfer(const struct gc_fp_sustained_ops *ops, void *ctx, bool write,
			       unsigned long cycle)
{
	const char *call = ops->call[write];
	char fail[1024] = "", info[1024] = "";
	int64_t n = ops->transfer(ctx, write, cycle, fail, sizeof(fail), info, sizeof(info));

	gc_assert_f(n == (int64_t)GC_FP_SUSTAINED_BYTES, "cycle %lu: %s of 16 MiB%s", cycle, call,
		    fail);
	if (!cycle)
		gc_info("%s of 16 MiB: %s", call, info);
}

/*
 * The fastpath contract, DESIGN.md: GPU-direct file I/O reads/writes the
 * right bytes; and of a soak, a long run samples resources per cycle and
 * fails on a leak or latency slope (in our own words). Each cycle's pattern is new, so that a
 * transfer that silently did nothing leaves the last cycle's bytes and is
 * seen.
 */
void gc_fp_sustained_run(const struct gc_fp_sustained_ops *ops, void *ctx)
{
	struct gc_soak_cfg cfg = {
		.name = "sustained", .cycles = GC_FP_SUSTAINED, .quick = GC_FP_SUSTAINED_QUICK,
		.cycle = ops->cycle,
	};
	struct gc_soak *s;
	unsigned long n = 0;

	ops->open(ctx, &cfg);
	s = gc_soak_start(&cfg);
	while (gc_soak_claim(s)) {
		unsigned long cycle = n++;

		ops->fill(ctx, cycle);
		sustained_transfer(ops, ctx, true, cycle);
		sustained_transfer(ops, ctx, false, cycle);
		ops->check(ctx, cycle);
		gc_soak_done(s);
	}
	gc_soak_end(s);
	ops->close(ctx);
}

int gc_fp_race_iterations(const char *env_name)
{
	const char *env = getenv(env_name);
	int iters = env && *env ? atoi(env) : (int)gc_node_share(100);

	gc_assert_f(iters > 0, "%s=%s: not a positive count", env_name, env);
	return iters;
}

void gc_fp_race_run(int iters, void (*child)(void *arg), void *arg)
{
	for (int i = 0; i < iters; i++)
		gc_expect_child_exit(child, arg, 0, GC_FP_RACE_TIMEOUT_MS);
}

/*
 * The threads of the race and of the jobs alike: thread i runs init(c, i)
 * (0 to go on), waits at the barrier where there is one, then act(c, i).
 */
struct crowd {
	int (*init)(struct crowd *c, int i);
	void (*act)(struct crowd *c, int i);
	const void *ops; /* the caller's: gc_fp_race_ops or gc_fp_jobs_ops */
	char *ctx;       /* the race's ctx, or the jobs' array */
	size_t stride;   /* jobs: bytes from one job to the next */
	bool barrier;
	pthread_barrier_t go;
};

struct crowd_arg {
	struct crowd *c;
	int i;
};

static void *crowd_thread(void *p)
{
	const struct crowd_arg *a = p;
	int go = a->c->init(a->c, a->i);

	if (a->c->barrier)
		pthread_barrier_wait(&a->c->go);
	if (go == 0)
		a->c->act(a->c, a->i);
	return NULL;
}

/*
 * n threads into t[n], their arguments in a[n], all joined, the barrier then
 * gone. A thread that cannot start goes to cannot_start where there is one
 * (it does not return), else fails the subtest.
 */
static void crowd_run(struct crowd *c, int n, pthread_t *t, struct crowd_arg *a,
		      void (*cannot_start)(void *ctx, int i))
{
	if (c->barrier)
		pthread_barrier_init(&c->go, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		int r;

		a[i] = (struct crowd_arg){ c, i };
		r = pthread_create(&t[i], NULL, crowd_thread, &a[i]);
		if (r != 0 && cannot_start)
			cannot_start(c->ctx, i);
		gc_assert_f(r == 0, "pthread_create: %s", strerror(r));
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (c->barrier)
		pthread_barrier_destroy(&c->go);
}

static int race_init(struct crowd *c, int i)
{
	const struct gc_fp_race_ops *ops = c->ops;

	if (ops->before)
		ops->before(c->ctx, i);
	return 0;
}

static void race_first(struct crowd *c, int i)
{
	const struct gc_fp_race_ops *ops = c->ops;

	ops->first(c->ctx, i);
}

/*
 * The lazy-initialisation race the AMD fastpath review found (a backend
 * list initialised lazily, read empty or raced by concurrent first users):
 * every thread's first call at once.
 */
void gc_fp_race_threads(const struct gc_fp_race_ops *ops, void *ctx)
{
	struct crowd c = { .init = race_init, .act = race_first, .ops = ops, .ctx = ctx,
			   .barrier = true };
	struct crowd_arg a[GC_FP_RACE_THREADS];
	pthread_t t[GC_FP_RACE_THREADS];

	crowd_run(&c, GC_FP_RACE_THREADS, t, a, ops->cannot_start);
}

static int job_init(struct crowd *c, int i)
{
	const struct gc_fp_jobs_ops *ops = c->ops;

	return ops->thread_init(c->ctx + (size_t)i * c->stride);
}

static void job_io(struct crowd *c, int i)
{
	const struct gc_fp_jobs_ops *ops = c->ops;

	ops->io(c->ctx + (size_t)i * c->stride);
}

void gc_fp_jobs_run(const struct gc_fp_jobs_ops *ops, void *jobs, size_t stride, int n)
{
	struct crowd c = { .init = job_init, .act = job_io, .ops = ops, .ctx = jobs,
			   .stride = stride, .barrier = ops->barrier };
	struct crowd_arg a[16];
	pthread_t t[16];

	gc_assert(n <= 16);
	crowd_run(&c, n, t, a, NULL);
	for (int i = 0; i < n; i++)
		ops->check(jobs, i, n);
}

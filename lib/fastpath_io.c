// SPDX-License-Identifier: MIT
/* The fastpath bodies both vendors run alike: see fastpath_io.h. */
#include "fastpath_io.h"

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
 * The fastpath contract, DESIGN.md: GPU-direct file I/O "reads/writes the
 * right bytes"; and of a soak, "a long run samples resources per cycle and
 * fails on a leak or latency slope". Each cycle's pattern is new, so that a
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

struct race_run {
	const struct gc_fp_race_ops *ops;
	void *ctx;
	pthread_barrier_t go;
};

struct race_arg {
	struct race_run *r;
	int i;
};

static void *race_thread(void *p)
{
	const struct race_arg *a = p;
	const struct gc_fp_race_ops *ops = a->r->ops;

	if (ops->before)
		ops->before(a->r->ctx, a->i);
	pthread_barrier_wait(&a->r->go);
	ops->first(a->r->ctx, a->i);
	return NULL;
}

/*
 * The lazy-initialisation race the AMD fastpath review found (a backend
 * list initialised lazily, read empty or raced by concurrent first users):
 * every thread's first call at once.
 */
void gc_fp_race_threads(const struct gc_fp_race_ops *ops, void *ctx)
{
	struct race_run r = { .ops = ops, .ctx = ctx };
	struct race_arg a[GC_FP_RACE_THREADS];
	pthread_t t[GC_FP_RACE_THREADS];

	pthread_barrier_init(&r.go, NULL, GC_FP_RACE_THREADS);
	for (int i = 0; i < GC_FP_RACE_THREADS; i++)
		a[i] = (struct race_arg){ &r, i };
	if (!ops->cannot_start) {
		gc_fp_threads_run(t, GC_FP_RACE_THREADS, race_thread, a, sizeof(a[0]));
		return;
	}
	for (int i = 0; i < GC_FP_RACE_THREADS; i++)
		if (pthread_create(&t[i], NULL, race_thread, &a[i]) != 0)
			ops->cannot_start(ctx, i);
	for (int i = 0; i < GC_FP_RACE_THREADS; i++)
		pthread_join(t[i], NULL);
}

void gc_fp_threads_run(pthread_t *t, int n, void *(*fn)(void *), void *args, size_t stride)
{
	for (int i = 0; i < n; i++)
		gc_assert(pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * stride) == 0);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

struct jobs_run {
	const struct gc_fp_jobs_ops *ops;
	char *jobs;
	size_t stride;
	pthread_barrier_t go;
};

struct job_arg {
	struct jobs_run *r;
	int i;
};

static void *job_thread(void *p)
{
	const struct job_arg *a = p;
	const struct gc_fp_jobs_ops *ops = a->r->ops;
	void *job = a->r->jobs + (size_t)a->i * a->r->stride;
	int go = ops->thread_init(job);

	if (ops->barrier)
		pthread_barrier_wait(&a->r->go);
	if (go == 0)
		ops->io(job);
	return NULL;
}

void gc_fp_jobs_run(const struct gc_fp_jobs_ops *ops, void *jobs, size_t stride, int n)
{
	struct jobs_run r = { .ops = ops, .jobs = jobs, .stride = stride };
	struct job_arg a[16];
	pthread_t t[16];

	gc_assert(n <= 16);
	if (ops->barrier)
		pthread_barrier_init(&r.go, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		a[i] = (struct job_arg){ &r, i };
	gc_fp_threads_run(t, n, job_thread, a, sizeof(a[0]));
	if (ops->barrier)
		pthread_barrier_destroy(&r.go);
	for (int i = 0; i < n; i++)
		ops->check(jobs, i, n);
}

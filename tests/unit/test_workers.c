// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/workers: the first problem is kept whatever the
 * threads, and the progress watchdog returns 0 once every worker is done,
 * -ETIMEDOUT once progress stops, and never while progress continues.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "workers.h"

#define THREADS 16

static void *one_problem(void *p)
{
	gc_problem(p, "problem of thread %d", 1);
	return NULL;
}

static void test_problems(void *fx)
{
	struct gc_problems pr;
	pthread_t th[THREADS];

	(void)fx;
	gc_problems_init(&pr);
	gc_assert_cmpuint(gc_problems_count(&pr), ==, 0);
	gc_assert_eq_str(pr.first, "");
	gc_problem(&pr, "first: %s %d", "thing", 42);
	for (int i = 0; i < THREADS; i++)
		gc_assert(pthread_create(&th[i], NULL, one_problem, &pr) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	gc_assert_cmpuint(gc_problems_count(&pr), ==, THREADS + 1);
	gc_assert_eq_str(pr.first, "first: thing 42");
	gc_problems_destroy(&pr);
}

struct job {
	struct gc_progress *pg;
	unsigned rounds;
	unsigned gap_us; /* between rounds */
};

static void *rounds_then_done(void *p)
{
	struct job *j = p;

	for (unsigned i = 0; i < j->rounds; i++) {
		usleep(j->gap_us);
		gc_progress_round(j->pg);
	}
	gc_progress_done(j->pg);
	return NULL;
}

/* Workers that finish: 0, with every round counted. */
static void test_all_done(void *fx)
{
	struct gc_progress pg = { 0 };
	struct job j = { &pg, 20, 100 };
	pthread_t th[THREADS];

	(void)fx;
	for (int i = 0; i < THREADS; i++)
		gc_assert(pthread_create(&th[i], NULL, rounds_then_done, &j) == 0);
	gc_assert_cmpint(gc_progress_wait(&pg, THREADS, 60000), ==, 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	gc_assert_cmpuint(gc_progress_rounds(&pg), ==, THREADS * 20);
	gc_assert_cmpuint(gc_progress_finished(&pg), ==, THREADS);
}

/* One worker never returns and nothing progresses: -ETIMEDOUT, the others counted done. */
static void test_stalled(void *fx)
{
	struct gc_progress pg = { 0 };

	(void)fx;
	gc_progress_round(&pg);
	gc_progress_done(&pg);
	gc_assert_cmpint(gc_progress_wait(&pg, 2, 50), ==, -ETIMEDOUT);
	gc_assert_cmpuint(gc_progress_finished(&pg), ==, 1);
}

/*
 * Slow is not stuck: rounds 60 ms apart for 1.2 s against a 1 s stall
 * limit end in 0, though the total is longer than the limit (each gap
 * stays 16 times under it, for a loaded CI machine).
 */
static void test_slow_not_stuck(void *fx)
{
	struct gc_progress pg = { 0 };
	struct job j = { &pg, 20, 60000 };
	pthread_t th;

	(void)fx;
	gc_assert(pthread_create(&th, NULL, rounds_then_done, &j) == 0);
	gc_assert_cmpint(gc_progress_wait(&pg, 1, 1000), ==, 0);
	pthread_join(th, NULL);
}

static const struct gc_subtest subtests[] = {
	{ "problems", test_problems, "the count of problems, the first one's text" },
	{ "all-done", test_all_done, "workers that finish: 0" },
	{ "stalled", test_stalled, "no progress and a worker not done: -ETIMEDOUT" },
	{ "slow-not-stuck", test_slow_not_stuck, "progress slower than the stall limit in total" },
	{ 0 }
};

GC_MAIN(.name = "unit_workers", .description = "lib/workers: problems and the progress watchdog",
	.subtests = subtests)

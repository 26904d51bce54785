// SPDX-License-Identifier: MIT
/*
 * Soaks that keep their resources and soaks that leak or slow down on
 * purpose: the subjects that prove lib/soak's verdicts can fail, for the
 * framework's tests and the runner's (levels, series in results.json).
 */
#include "core.h"
#include "measure.h"
#include "soak.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* About us microseconds of CPU work. */
static void spin_us(double us)
{
	uint64_t end = gc_now_ns() + (uint64_t)(us * 1000);

	while (gc_now_ns() < end)
		;
}

static struct gc_soak *start(const char *name, const char *cycle, unsigned long cycles)
{
	return gc_soak_start(&(struct gc_soak_cfg){ .name = name, .cycle = cycle,
						    .cycles = cycles });
}

static void steady(void *fx)
{
	struct gc_soak *s = start("steady", "malloc, touch and free 64 KiB, 100 us of work", 2000);

	(void)fx;
	while (gc_soak_claim(s)) {
		char *p = malloc(64 * 1024);

		gc_assert(p);
		memset(p, 1, 64 * 1024);
		free(p);
		spin_us(100);
		gc_soak_done(s);
	}
	gc_soak_end(s);
}

static void rss_leak(void *fx)
{
	struct gc_soak *s = start("rss-leak", "malloc and touch 4 KiB, never freed", 2000);

	(void)fx;
	while (gc_soak_claim(s)) {
		char *p = malloc(4 * 1024);

		gc_assert(p);
		memset(p, 1, 4 * 1024);
		spin_us(500);
		gc_soak_done(s);
	}
	gc_soak_end(s);
}

struct kept {
	char *p[20000];
	size_t n;
};

static size_t kept_bytes(void *arg)
{
	return ((const struct kept *)arg)->n * 4096;
}

/* rss-leak's 4 KiB a cycle, kept on purpose and declared: no leak. */
static void held(void *fx)
{
	struct kept *k = calloc(1, sizeof(*k));
	struct gc_soak *s;

	(void)fx;
	gc_assert(k);
	s = gc_soak_start(&(struct gc_soak_cfg){ .name = "held", .cycles = 2000,
						 .cycle = "malloc and touch 4 KiB, kept till the end",
						 .held_bytes = kept_bytes, .held_arg = k });
	while (gc_soak_claim(s)) {
		char *p = k->n < ARRAY_SIZE(k->p) ? malloc(4096) : NULL;

		if (p) {
			memset(p, 1, 4096);
			k->p[k->n++] = p;
		}
		spin_us(500);
		gc_soak_done(s);
	}
	gc_soak_end(s);
	while (k->n)
		free(k->p[--k->n]);
	free(k);
}

static void fd_leak(void *fx)
{
	struct gc_soak *s = start("fd-leak", "open /dev/null, never closed", 500);

	(void)fx;
	while (gc_soak_claim(s)) {
		gc_assert_syscall(open("/dev/null", O_RDONLY | O_CLOEXEC));
		spin_us(2000);
		gc_soak_done(s);
	}
	gc_soak_end(s);
}

static void slowdown(void *fx)
{
	struct gc_soak *s = start("slowdown", "CPU work growing by 1 us a cycle, from 20 us", 1000);

	/*
	 * 20 to 1020 us: growth of about twice the median over the window,
	 * so that a loaded machine's preemptions, which can flatten one half of
	 * a gentler slope (1% a cycle was seen at +49.9% against the 50% bound
	 * with 3 runner shards on 2 CPUs), never hide it.
	 */
	(void)fx;
	while (gc_soak_claim(s)) {
		spin_us(20 + (double)gc_soak_count(s));
		gc_soak_done(s);
	}
	gc_soak_end(s);
}

static void *worker(void *arg)
{
	struct gc_soak *s = arg;

	while (gc_soak_claim(s)) {
		spin_us(100);
		gc_soak_done(s);
	}
	return NULL;
}

static void threads(void *fx)
{
	struct gc_soak *s = start("threads", "100 us of work, by 4 threads", 2000);
	pthread_t t[4];

	(void)fx;
	for (int i = 0; i < 4; i++)
		gc_assert_eq_int(pthread_create(&t[i], NULL, worker, s), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	gc_info("threads: %lu cycles", gc_soak_count(s));
	gc_soak_end(s);
}

static void undeclared(void *fx)
{
	(void)fx;
	gc_soak_end(start("undeclared", "nothing", 10));
}

static const struct gc_subtest subtests[] = {
	{ "steady", steady, "keeps its memory, fds and pace: passes" },
	{ "rss-leak", rss_leak, "4 KiB a cycle never freed: fails at standard and long" },
	{ "held", held, "4 KiB a cycle kept on purpose and declared (held_bytes): passes" },
	{ "fd-leak", fd_leak, "an fd a cycle never closed: fails at standard and long" },
	{ "slowdown", slowdown, "each cycle 1 us slower: fails at standard and long" },
	{ "threads", threads, "4 workers share one soak: passes" },
	{ "undeclared", undeclared, "soaks without being in .soaks: fails" },
	{ 0 }
};

static const char *const soaks[] = { "steady", "rss-leak", "held", "fd-leak", "slowdown", "threads", NULL };

GC_MAIN(.name = "selftest_soak", .subtests = subtests, .soaks = soaks)

// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/leakcheck: a made-up stack whose probes read counters
 * the test sets, so a leak, the slack, the two rules and settling are
 * checked without a device.
 */
#include <errno.h>
#include <string.h>

#include "core.h"
#include "leakcheck.h"

/* The fake stack: two probes whose values the test scripts per reading. */
struct fake {
	uint64_t mem[8], fds[8]; /* reading k returns mem[k], fds[k] (the last one repeats) */
	unsigned n_script, reads;
};

static void fake_read(const struct gc_leak_set *s, struct gc_leak_reading *r, const char *when)
{
	struct fake *f = (struct fake *)s->ctx; /* the test's own, counting its readings */
	unsigned k = f->reads < f->n_script ? f->reads : f->n_script - 1;

	(void)when;
	f->reads++; /* r is empty: gc_leak_snapshot and gc_leak_settle empty it before each read */
	gc_leak_add(r, &(struct gc_leak_probe){ .slack = 4096 }, f->mem[k], "gpu%d", 0);
	gc_leak_add(r, &(struct gc_leak_probe){ .rule = GC_LEAK_GROWTH }, f->fds[k], "fds");
}

static struct gc_leak_set fake_set(struct fake *f, unsigned settle_ms, bool every)
{
	struct gc_leak_set s = { .read = fake_read, .ctx = f, .settle_ms = settle_ms,
				 .poll_us = 1000, .every_leak = every };

	return s;
}

/* A leak is found and named; a change within slack is not one. */
static void test_named(void *fx)
{
	struct fake f = { .mem = { 100000, 100000 + 4096, 100000 + 4097 }, .fds = { 3, 3, 4 },
			  .n_script = 1 };
	struct gc_leak_set s = fake_set(&f, 0, true);
	struct gc_leak_reading now;
	char msg[256];

	(void)fx;
	gc_leak_snapshot(&s);
	f.reads = 1; /* reading 1: gpu0 moved by exactly its slack */
	f.n_script = 2;
	gc_assert_cmpint(gc_leak_settle(&s, &now, msg, sizeof(msg)), ==, 0);
	gc_assert_eq_str(msg, "");
	f.reads = 2; /* reading 2: one byte past the slack, and one more fd */
	f.n_script = 3;
	gc_assert_cmpint(gc_leak_settle(&s, &now, msg, sizeof(msg)), ==, -EAGAIN);
	gc_assert_eq_str(msg, "gpu0 100000 -> 104097; fds 3 -> 4");
	gc_assert_cmpuint(gc_leak_diff(&s.before, &now, false, msg, sizeof(msg)), ==, 2);
	gc_assert_eq_str(msg, "gpu0 100000 -> 104097"); /* only the first one named */
	gc_assert_cmpuint(gc_leak_diff(&s.before, &now, true, msg, 12), ==, 2);
	gc_assert_eq_str(msg, "gpu0 100000"); /* the text's first len - 1 bytes */
}

/* Either way counts both directions; growth only never counts a fall. */
static void test_rules(void *fx)
{
	struct gc_leak_probe either = { .name = "a", .slack = 10 };
	struct gc_leak_probe growth = { .name = "b", .slack = 10, .rule = GC_LEAK_GROWTH };

	(void)fx;
	gc_assert(!gc_leak_probe_leaked(&either, 100, 90));
	gc_assert(gc_leak_probe_leaked(&either, 100, 89));
	gc_assert(gc_leak_probe_leaked(&either, 100, 111));
	gc_assert(!gc_leak_probe_leaked(&growth, 100, 0));
	gc_assert(!gc_leak_probe_leaked(&growth, 100, 110));
	gc_assert(gc_leak_probe_leaked(&growth, 100, 111));
}

/*
 * The snapshot reads script step 0, then the check reads steps 1.. (the
 * last repeating) for up to settle_ms: gc_leak_settle()'s result.
 */
static int settle(struct fake *f, unsigned steps, unsigned settle_ms, char *msg, size_t len)
{
	struct gc_leak_set s = fake_set(f, settle_ms, false);
	struct gc_leak_reading now;

	f->n_script = 1;
	f->reads = 0;
	gc_leak_snapshot(&s);
	f->n_script = steps;
	return gc_leak_settle(&s, &now, msg, len);
}

/* Settling re-reads until the counts come back, and passes. */
static void test_settles(void *fx)
{
	struct fake f = { .mem = { 100000, 0, 0, 100000 }, .fds = { 3, 3, 3, 3 } };
	char msg[256];

	(void)fx;
	gc_assert_cmpint(settle(&f, 4, 5000, msg, sizeof(msg)), ==, 0);
	gc_assert_cmpuint(f.reads, ==, 4); /* the snapshot, two leaking readings, the good one */
}

/* A count that never comes back fails once the settle time is over, naming the last reading. */
static void test_never_settles(void *fx)
{
	struct fake f = { .mem = { 100000, 0 }, .fds = { 3, 3 } };
	char msg[256];

	(void)fx;
	gc_assert_cmpint(settle(&f, 2, 20, msg, sizeof(msg)), ==, -EAGAIN);
	gc_assert_cmpuint(f.reads, >, 2); /* it did wait */
	gc_assert_eq_str(msg, "gpu0 100000 -> 0");
	gc_assert_cmpint(settle(&f, 2, 0, msg, sizeof(msg)), ==, -EAGAIN);
	gc_assert_cmpuint(f.reads, ==, 2); /* no settle time: one reading after the snapshot */
}

/* The two stacks' words, as CUDA and HIP printed them. */
static void test_words(void *fx)
{
	struct gc_leak_probe p = { .name = "gpu1", .slack = 0 };
	char msg[256];

	(void)fx;
	gc_leak_say_free_mem(&p, 1000, 900, msg, sizeof(msg));
	gc_assert_eq_str(msg, "gpu1 has 100 bytes less free memory than before the subtest "
			 "(1000 -> 900; slack 0)");
	strcpy(p.name, "/dev/nonexistent-gc");
	gc_leak_say_devfds(&p, 2, 3, msg, sizeof(msg));
	gc_assert(strncmp(msg, "3 /dev/nonexistent-gc* fds open, 2 before the subtest (now: ",
			  60) == 0);
}

static const struct gc_subtest subtests[] = {
	{ "named", test_named, "a leak past the slack is found and named" },
	{ "rules", test_rules, "either way and growth only" },
	{ "settles", test_settles, "settling waits for the counts to come back, then passes" },
	{ "never-settles", test_never_settles, "a count that never comes back fails" },
	{ "words", test_words, "the free-memory and fd leak texts" },
	{ 0 }
};

GC_MAIN(.name = "unit_leakcheck", .subtests = subtests)

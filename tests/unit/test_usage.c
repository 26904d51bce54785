// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/usage: the snapshot (host RSS, open fds, the caller's
 * device free memory) and the leak check between two snapshots.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "usage.h"

/* An fd opened is one more fd; memory touched is more RSS; dev_free is the caller's. */
static void test_now(void *fx)
{
	struct gc_usage u0 = gc_usage_now(12345), u1, u2;
	size_t len = 64 * 1024 * 1024;
	char *p = malloc(len);
	int fd = open("/dev/null", O_RDONLY);

	(void)fx;
	gc_assert(p);
	gc_assert_syscall(fd);
	memset(p, 1, len);
	u1 = gc_usage_now(0);
	gc_assert_cmpint(u0.rss_kib, >, 0);
	gc_assert_cmpint(u0.fds, >=, 0);
	gc_assert_cmpuint(u0.dev_free, ==, 12345);
	gc_assert_cmpint(u1.fds, ==, u0.fds + 1);
	gc_assert_cmpint(u1.rss_kib - u0.rss_kib, >=, 60 * 1024);
	close(fd);
	free(p);
	u2 = gc_usage_now(0);
	gc_assert_cmpint(u2.fds, ==, u0.fds);
}

struct pair {
	struct gc_usage before, after;
};

static void expect_back(void *arg)
{
	struct pair *p = arg;

	gc_usage_expect_back(&p->before, &p->after, 16 * 1024, 8u << 20);
}

/* Within the limits passes; RSS over, device memory under or one fd more fails. */
static void test_expect_back(void *fx)
{
	struct gc_usage u = { .rss_kib = 100000, .dev_free = 1u << 30, .fds = 10 };
	struct pair p = { u, u };

	(void)fx;
	p.after.rss_kib += 16 * 1024;
	p.after.dev_free -= 8u << 20;
	gc_expect_child_exit(expect_back, &p, GC_EXIT_SUCCESS, 10000);
	p.after.rss_kib++;
	gc_expect_child_exit(expect_back, &p, GC_EXIT_FAILURE, 10000);
	p.after = u;
	p.after.dev_free -= (8u << 20) + 1;
	gc_expect_child_exit(expect_back, &p, GC_EXIT_FAILURE, 10000);
	p.after = u;
	p.after.fds++;
	gc_expect_child_exit(expect_back, &p, GC_EXIT_FAILURE, 10000);
	p.after.fds -= 2;
	gc_expect_child_exit(expect_back, &p, GC_EXIT_FAILURE, 10000);
}

/*
 * Blocks freed below the mmap threshold stay resident in malloc; the trimmed
 * RSS is without them (glibc: whole free pages inside free chunks given back).
 */
static void test_trimmed(void *fx)
{
	enum { N = 512, SIZE = 64 * 1024 };
	long freed_kib = N / 2 * SIZE / 1024, before, kept, trimmed;
	char *p[N];

	(void)fx;
	for (int i = 0; i < N; i++) {
		p[i] = malloc(SIZE);
		gc_assert(p[i]);
		memset(p[i], 1, SIZE);
	}
	before = gc_usage_now(0).rss_kib;
	for (int i = 0; i < N - 1; i += 2) /* every other block: nothing coalesces to the top */
		free(p[i]);
	kept = gc_usage_now(0).rss_kib;
	trimmed = gc_rss_trimmed_kib();
	gc_info("freed %ld KiB: RSS %ld -> %ld KiB, %ld KiB trimmed", freed_kib, before, kept,
		trimmed);
	gc_assert_cmpint(kept, >, before - freed_kib / 4);
#ifdef __GLIBC__
	gc_assert_cmpint(trimmed, <, kept - freed_kib * 3 / 4);
#endif
	for (int i = 1; i < N; i += 2)
		free(p[i]);
}

static const struct gc_subtest subtests[] = {
	{ "now", test_now, "RSS and fds follow what the process holds" },
	{ "trimmed", test_trimmed, "freed blocks stay resident until malloc gives them back" },
	{ "expect-back", test_expect_back, "the leak check's three limits" },
	{ 0 }
};

GC_MAIN(.name = "unit_usage", .subtests = subtests)

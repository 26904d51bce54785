// SPDX-License-Identifier: MIT
#include "usage.h"

#include <stdio.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "core.h"
#include "devfd.h"

/*
 * proc(5), /proc/pid/statm: `resident   (2) resident set size`, in pages
 * [src mkerrisk/man-pages man5/proc.5 @ 091fbf1fef48].
 */
static long rss_kib(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = 0;
	fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

struct gc_usage gc_usage_now(size_t dev_free)
{
	struct gc_usage u = { .rss_kib = rss_kib(), .dev_free = dev_free };

	u.fds = gc_devfd_count(""); /* every open fd */
	return u;
}

long gc_rss_trimmed_kib(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	return rss_kib();
}

void gc_usage_expect_back(const struct gc_usage *before, const struct gc_usage *after,
			  long rss_kib, size_t dev_bytes)
{
	gc_assert_f(after->rss_kib - before->rss_kib <= rss_kib, "host RSS grew %ld KiB (limit %ld)",
		    after->rss_kib - before->rss_kib, rss_kib);
	gc_assert_f(before->dev_free <= after->dev_free + dev_bytes, "device free memory fell %zu "
		    "bytes", before->dev_free - after->dev_free);
	gc_assert_cmpint(after->fds, ==, before->fds);
}

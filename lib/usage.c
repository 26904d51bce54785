// SPDX-License-Identifier: MIT
#include "usage.h"

#include <stdio.h>
#include <unistd.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define HAVE_MALLINFO2 1
#endif

#include "core.h"
#include "devfd.h"

/* proc(5), /proc/pid/statm: "resident  (2) resident set size", in pages. */
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

/* mallinfo(3): "fordblks: the total number of bytes in free blocks", every arena. */
static long malloc_free_kib(void)
{
#ifdef HAVE_MALLINFO2
	return (long)(mallinfo2().fordblks / 1024);
#else
	return 0;
#endif
}

struct gc_usage gc_usage_now(size_t dev_free)
{
	struct gc_usage u = { .rss_kib = rss_kib(), .malloc_free_kib = malloc_free_kib(),
			      .dev_free = dev_free };

	u.fds = gc_devfd_count(""); /* every open fd */
	return u;
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

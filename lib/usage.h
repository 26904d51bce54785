/* SPDX-License-Identifier: MIT */
/*
 * What the process holds, for leak checks across many operations (the
 * bubbles binaries' trace-leak): host RSS, open fds, and the device's free
 * memory, which the caller reads with its own vendor's call.
 */
#ifndef GPUCONFORM_USAGE_H
#define GPUCONFORM_USAGE_H

#include <stddef.h>

struct gc_usage {
	long rss_kib;    /* resident set, KiB (/proc/self/statm); 0 where unreadable */
	/*
	 * Free memory malloc keeps in its arenas, KiB (glibc's mallinfo2
	 * fordblks; 0 elsewhere): resident, but no longer anybody's. glibc gives
	 * each thread of a busy process an arena of its own and returns little of
	 * a freed block to the system, so what one thread allocated and another
	 * freed stays in RSS: RSS less this is what the process still holds.
	 */
	long malloc_free_kib;
	size_t dev_free; /* device free memory, bytes: the caller's */
	int fds;         /* every open fd (gc_devfd_count("")), or -errno */
};

/* Now: host RSS and open fds, with the device free memory the caller just read. */
struct gc_usage gc_usage_now(size_t dev_free);

/*
 * Subtest-level (fails the subtest, as gc_assert does): after came back to
 * before: host RSS grew at most rss_kib KiB, device free memory fell at most
 * dev_bytes, and as many fds are open.
 */
void gc_usage_expect_back(const struct gc_usage *before, const struct gc_usage *after,
			  long rss_kib, size_t dev_bytes);

#endif

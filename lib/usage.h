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
	size_t dev_free; /* device free memory, bytes: the caller's */
	int fds;         /* every open fd (gc_devfd_count() of the empty prefix), or -errno */
};

/* Now: host RSS and open fds, with the device free memory the caller just read. */
struct gc_usage gc_usage_now(size_t dev_free);

/*
 * Host RSS, KiB, once malloc has given back the free memory it keeps
 * (malloc_trim(0); malloc_trim(3): "Since glibc 2.8 this function frees
 * memory in all arenas and in all chunks with whole free pages." [src
 * mkerrisk/man-pages man3/malloc_trim.3 @ 091fbf1fef48]): what the process
 * holds.
 * glibc gives the threads of a busy process arenas of their own and keeps
 * what is freed in them, so memory a library allocated on a thread and freed
 * stays in RSS, more of it with every thread that did so (a CUDA context
 * created and reset on a new thread left about 11 MB on an H200): RSS alone
 * would grow with the threads, not with a leak.
 */
long gc_rss_trimmed_kib(void);

/*
 * Subtest-level (fails the subtest, as gc_assert does): after came back to
 * before: host RSS grew at most rss_kib KiB, device free memory fell at most
 * dev_bytes, and as many fds are open.
 */
void gc_usage_expect_back(const struct gc_usage *before, const struct gc_usage *after,
			  long rss_kib, size_t dev_bytes);

#endif

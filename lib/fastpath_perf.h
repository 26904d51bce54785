/* SPDX-License-Identifier: MIT */
/*
 * The fastpath throughput loop, vendor-neutral: perf-read and perf-write of
 * cufile_io and hipfile_io. The vendor names its paths and moves the bytes
 * of one transfer (a callback); the loop owns the threads, the barrier, the
 * clock and the metrics, so both binaries time and name alike.
 *
 * Paths: the fastpaths first (cuFile; hipFile, hipAmdFile...), then always
 * the reference (O_DIRECT + a copy to or from the device) and the host
 * (O_DIRECT alone), in that order, as the last two.
 *
 * What gc_fp_perf_run() measures and records, in this order:
 *  - each path's first call (1 MiB, one thread), recorded on its own as
 *    DIR.first-call.PATH.1MiB (ms, one sample), then the path warmed with
 *    GC_FP_PERF_MAX_THREADS threads;
 *  - at 1, 16 and 256 MiB, with one thread and with GC_FP_PERF_MAX_THREADS
 *    (each a contiguous share of the range), this copy's share of
 *    GC_FP_PERF_REPS repetitions (gc_node_share: all of them on one GPU, 2
 *    each on four; the copies run one GPU at a time, and the runner joins
 *    their samples under one metric), the paths interleaved so drift hits
 *    every path alike:
 *    DIR.PATH.<N>MiB.t<T> (GiB/s) per path, then per fastpath
 *    DIR.ratio.PATH-over-reference.<N>MiB.t<T> and ...-over-host... (x,
 *    one ratio per repetition, from the same repetition).
 * DIR is `read` or `write`. One transfer is timed from the moment every
 * thread is released to the moment the last one is done (and, for writes
 * with sync_fd >= 0, fdatasync(sync_fd) has returned); before every read
 * the page cache is dropped when permitted.
 *
 * Subtest-level: gc_fp_perf_run() fails the subtest when a thread cannot
 * be started, a transfer fails (`PATH DIR of N bytes, thread I: <err_str>`)
 * or fdatasync does, and records the metrics with gc_metric().
 */
#ifndef GPUCONFORM_FASTPATH_PERF_H
#define GPUCONFORM_FASTPATH_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_FP_PERF_MAX_PATHS 8
#define GC_FP_PERF_MAX_THREADS 4
#define GC_FP_PERF_REPS 5

struct gc_fp_perf_ops {
	/* In each transfer thread, before the start (make the device current): 0 or -errno. */
	int (*thread_init)(void *ctx);
	/*
	 * Move [off, off + len) of the range by path, in a transfer thread (no
	 * assertion there: a helper thread cannot leave the subtest). 0, or what
	 * failed (-errno or a vendor status), what[] saying more if it likes.
	 */
	int64_t (*transfer)(void *ctx, int path, uint64_t off, uint64_t len, char *what,
			    size_t what_len);
	/* A failed transfer (or thread_init) in the subtest's failure message. */
	const char *(*err_str)(void *ctx, int64_t err, const char *what, char *buf, size_t len);
	/* Optional, around each path's first call: set up and check the 1 MiB it moves. */
	void (*first_before)(void *ctx, int path);
	void (*first_after)(void *ctx, int path);
};

struct gc_fp_perf {
	bool write;
	int n_paths;              /* the fastpaths, then the reference and the host */
	const char *const *names; /* [n_paths], as they appear in metric names */
	const bool *have;         /* [n_paths]: paths to run; NULL: every one */
	int sync_fd;              /* >= 0: writes are timed up to fdatasync(sync_fd) */
	const struct gc_fp_perf_ops *ops;
	void *ctx;                /* handed to every op */
	bool dropped;             /* out: every read started from a dropped page cache */
};

/* Run the whole measurement above (subtest-level). */
void gc_fp_perf_run(struct gc_fp_perf *p);

/*
 * The host path's transfer (and the file side of the reference path):
 * pread or pwrite of [off, off + len) of fd into or from host + off, all of
 * it. 0, -errno, or -EIO for a short count. Safe in a transfer thread.
 */
int64_t gc_fp_perf_host_io(int fd, bool write, void *host, uint64_t off, uint64_t len);

#endif

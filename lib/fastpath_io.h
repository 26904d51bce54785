/* SPDX-License-Identifier: MIT */
/*
 * The fastpath contract's bodies that cufile_io and hipfile_io run alike,
 * written once over each stack's operations (the pattern of
 * lib/fastpath_perf.h's gc_fp_perf_ops): the sustained soak's cycle, the
 * first-use race's iterations and the threads of the concurrency cases.
 * The stack keeps its calls, its buffers and its checks; the order of the
 * calls, the counts and the messages are here.
 *
 * Subtest-level: every function here may fail (or skip) the running
 * subtest, as the operations it calls may; none is for a helper thread.
 */
#ifndef GPUCONFORM_FASTPATH_IO_H
#define GPUCONFORM_FASTPATH_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "soak.h"

/*
 * sustained (lib/fastpath_subtests.h): what the stack does in each step of
 * gc_fp_sustained_run(). ctx is the stack's own state.
 */
struct gc_fp_sustained_ops {
	const char *cycle;       /* the soak's words for one cycle */
	const char *call[2];     /* [write]: the calls' names, `cuFileRead` / `cuFileWrite` */
	/* The file, its handle, both buffers; cfg's dev_used and dev_arg where it has them. */
	void (*open)(void *ctx, struct gc_soak_cfg *cfg);
	/* The cycle's pattern into the source buffer. */
	void (*fill)(void *ctx, unsigned long cycle);
	/*
	 * All GC_FP_SUSTAINED_BYTES from the source buffer to the file (write)
	 * or from the file to the other buffer: the count moved. When it is
	 * not all of them, fail[] follows `cycle N: CALL of 16 MiB` in the
	 * failure message (its separator included: `: ...`, ` returned ...`);
	 * on cycle 0, info[] follows `CALL of 16 MiB: ` in the output.
	 */
	int64_t (*transfer)(void *ctx, bool write, unsigned long cycle, char *fail,
			    size_t fail_len, char *info, size_t info_len);
	/* The other buffer holds the cycle's pattern, else fail naming the cycle. */
	void (*check)(void *ctx, unsigned long cycle);
	/* Give back what open took. */
	void (*close)(void *ctx);
};

/*
 * The sustained soak: open, then per cycle fill, write, read, check (the
 * level's count of cycles, lib/soak.h), then close.
 */
void gc_fp_sustained_run(const struct gc_fp_sustained_ops *ops, void *ctx);

/*
 * first-use-race (lib/fastpath_subtests.h): each of the fresh processes
 * starts GC_FP_RACE_THREADS threads that make the stack's first call at
 * once, each for its own GC_FP_RACE_SLICE of one file.
 */
#define GC_FP_RACE_THREADS 64
#define GC_FP_RACE_SLICE (64 * KiB)
#define GC_FP_RACE_TIMEOUT_MS 120000

/*
 * How many fresh processes: $env_name where set (a positive count, else
 * the subtest fails), else this copy's share of 100 a node (gc_node_share).
 */
int gc_fp_race_iterations(const char *env_name);

/* iters times: child(arg) in a fresh process that must exit 0 within the timeout. */
void gc_fp_race_run(int iters, void (*child)(void *arg), void *arg);

/*
 * One fresh process's race: GC_FP_RACE_THREADS threads; thread i runs
 * before(ctx, i) where there is one, waits at one barrier for every other,
 * then makes its first call, first(ctx, i); all are joined. A thread that
 * cannot be started fails the subtest, or where cannot_start is given, it is
 * called at once (with errno as pthread_create left it) and must not return:
 * the threads already started wait at the barrier for ever.
 */
struct gc_fp_race_ops {
	void (*before)(void *ctx, int i);
	void (*first)(void *ctx, int i);
	void (*cannot_start)(void *ctx, int i);
};
void gc_fp_race_threads(const struct gc_fp_race_ops *ops, void *ctx);

/*
 * concurrent-slices and concurrent-readers-writers: jobs, one thread each,
 * moving their bytes at once. jobs is the stack's array of n (at most 16)
 * jobs of stride bytes; the ops are the stack's.
 */
struct gc_fp_jobs_ops {
	/* The threads start their I/O together, once every thread_init has run. */
	bool barrier;
	/* First in the job's thread (make the device current): 0 to go on to io. */
	int (*thread_init)(void *job);
	/* The job's transfer, in its thread (no assertion there: record the outcome). */
	void (*io)(void *job);
	/* After every thread has joined: job i of n (jobs is the whole array) did its part. */
	void (*check)(void *jobs, int i, int n);
};

/* Run the jobs, then check each in order (subtest-level). */
void gc_fp_jobs_run(const struct gc_fp_jobs_ops *ops, void *jobs, size_t stride, int n);

#endif

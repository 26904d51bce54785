/* SPDX-License-Identifier: MIT */
/*
 * The tracing contract of the bubbles binaries, one body for both vendors:
 * cuda_bubbles (tests/cuda/bubbles_trace.c, CUPTI) and hip_bubbles
 * (tests/hip/bubbles_prof.c, rocprofiler-sdk) run traced-concurrent /
 * traced-serialized's per-shape case, trace-leak and attach-detach's soak of
 * enabled windows through a table of their profiler's calls (struct
 * gc_trace_ops), so that both do the same steps in the same order. Each
 * binary keeps how it matches records to dispatches and how it checks an
 * attach-detach's records (its profiler's records say different things),
 * its setup and its stack-only subtests; profiler-sessions is
 * lib/prof_sessions.h's.
 *
 * Every function here is subtest-level: it fails the subtest as gc_assert
 * does. Graphs are built, run and destroyed through the vendor's
 * gc_gap_dev (GC_GAP_OPS), the same calls its own bx_ / hb_ functions make.
 */
#ifndef GPUCONFORM_CONTRACT_TRACE_H
#define GPUCONFORM_CONTRACT_TRACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaps.h"
#include "soak.h"
#include "usage.h"

#define GC_TRACE_LAUNCHES 100 /* launches per shape under a profiler */

/*
 * trace-leak's tolerances: the profiler keeps buffers and per-thread state;
 * one device allocation granule and some.
 */
#define GC_TRACE_LEAK_RSS_KIB (16 * 1024)
#define GC_TRACE_LEAK_DEV_BYTES (8u << 20)

/* What a take of trace-leak gave: kernel records, and how many the profiler dropped. */
struct gc_trace_count {
	size_t n;
	uint64_t dropped;
};

/*
 * A vendor's profiler, for the bodies below. ctx is the vendor's: it knows
 * which kind a subtest traces and keeps the records taken.
 */
struct gc_trace_ops {
	/* NULL, or what a traced case notes before its graph is built. */
	void (*begin)(void *ctx, const struct gc_shape *sh);
	/* NULL, or what a traced case learns from its graph once built. */
	void (*built)(void *ctx, const struct gc_shape *sh, void *graph);
	/* Take and drop whatever the profiler holds now. */
	void (*drain)(void *ctx);
	/* The subtest's kind of kernel tracing on or off. */
	void (*enable)(void *ctx, bool on);
	/* Flush and take the records of `want` traced dispatches of sh into ctx. */
	void (*take)(void *ctx, const struct gc_shape *sh, size_t want);
	/* The records taken against `launches` launches' stamps (2 per kernel each). */
	void (*check)(void *ctx, const struct gc_shape *sh, const uint64_t *stamps,
		      unsigned launches);
	/* Free what begin, built and take kept. */
	void (*end)(void *ctx);
	/*
	 * trace-leak: flush, take and count the kernel records of `want`
	 * dispatches, freed. first: the first take of the measured launches,
	 * where a stack that supports GPUCONFORM_BUBBLES_REMOVE=record there
	 * drops one.
	 */
	struct gc_trace_count (*count)(void *ctx, size_t want, bool first);
	/* Host RSS, device free memory and open fds now. */
	struct gc_usage (*usage)(void *ctx);
	/* trace-leak also prints the RSS growth after each 12,800 dispatches (a usage call each). */
	bool leak_series;
	/*
	 * traced-*: the gap ratios are reported before the records are checked
	 * (cuda_bubbles), else after (hip_bubbles): kept as each binary had it.
	 */
	bool ratios_first;
};

/* One traced-* subtest: the vendor's profiler, the gaps' MODE and the ratios' name. */
struct gc_trace_run {
	const struct gc_trace_ops *ops;
	void *ctx;
	const struct gc_gap_dev *dev;
	const char *mode;  /* `graph-trace`, `graph-trace-serial` */
	const char *ratio; /* `trace`, `serial` */
};

/*
 * traced-concurrent / traced-serialized, every shape as the dynamic subtest
 * SHAPE: GC_TRACE_LAUNCHES untraced launches (`graph`), the same traced
 * (run->mode, their stamps kept), the records of every traced dispatch
 * checked against the stamps (ops->check), the gaps traced over untraced as
 * ratios (gc_gap_ratios(run->ratio, ...)).
 */
void gc_trace_shapes(const struct gc_trace_run *run);

/*
 * trace-leak: the pooled-signal leak class. 400 traced launches of chain256
 * (102,400 dispatches) after a warm-up of 4: every record arrives (taken
 * every 50 launches), none dropped, and host RSS, device free memory and open
 * fds come back within GC_TRACE_LEAK_RSS_KIB, GC_TRACE_LEAK_DEV_BYTES and 0.
 */
void gc_trace_leak(const struct gc_trace_ops *ops, void *ctx, const struct gc_gap_dev *dev);

/*
 * attach-detach's enabled windows: `width` stamps a cycle on the profiler's
 * clock, one window per cycle, in time order.
 */
struct gc_trace_windows {
	uint64_t *w;
	size_t n, cap;
	unsigned width;
};

/* Window i's stamps. */
static inline uint64_t *gc_trace_window(const struct gc_trace_windows *w, size_t i)
{
	return &w->w[i * w->width];
}

/*
 * The soak of cfg (its level's cycles), each cycle(ctx, stamps) given the
 * next window of w to fill (the only thing a cycle keeps).
 */
void gc_trace_cycles(const struct gc_soak_cfg *cfg, struct gc_trace_windows *w,
		     void (*cycle)(void *ctx, uint64_t *stamps), void *ctx);

/*
 * Stop the launcher thread th (*stop set) and join it: fail as a hang unless
 * it stops within watchdog_s seconds.
 */
void gc_trace_join(pthread_t th, int *stop, int watchdog_s);

/*
 * attach-detach, the vendor's side: a thread that keeps launching the
 * graph (launcher(arg), stopping once *stop is set), the soak of enabled
 * windows (soak, cycle(ctx, stamps) into w) and the checks. ctx is the
 * vendor's.
 */
struct gc_trace_attach {
	void *(*launcher)(void *arg);
	void *arg;
	int *stop;
	int watchdog_s;
	struct gc_soak_cfg soak;
	struct gc_trace_windows *w;
	void (*cycle)(void *ctx, uint64_t *stamps);
	void *ctx;
	/* NULL, or what comes before the launcher starts (records so far dropped). */
	void (*start)(void *ctx);
	/* Take the soak's records and check them (before: the untraced gaps). */
	void (*records)(void *ctx, const struct gc_gap_stats *before);
	/* NULL, or the checks that come after the detached gaps are reported. */
	void (*verdict)(void *ctx);
};

/*
 * attach-detach: GC_TRACE_LAUNCHES untraced launches of graph (`graph`),
 * the soak while the launcher launches, the launcher stopped (a hang fails),
 * the records checked, GC_TRACE_LAUNCHES launches after the last detach
 * (`graph-detached`) and their gaps over the untraced ones as ratios
 * (`detached`), then the verdict.
 */
void gc_trace_attach_detach(const struct gc_gap_dev *d, const struct gc_shape *sh, void *graph,
			    const struct gc_trace_attach *a);

#endif

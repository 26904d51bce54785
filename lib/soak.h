/* SPDX-License-Identifier: MIT */
/*
 * Soaks: a contract loop whose length comes from the run's level, sampled
 * as it goes, with a leak and drift verdict at its end.
 *
 * The level is one knob for every binary: $GPUCONFORM_LEVEL (quick,
 * standard, long; unset: standard), and at long the seconds this subtest
 * may take, $GPUCONFORM_SOAK_SECONDS (the runner's share of --duration).
 *   quick     cfg.quick cycles (does it work at all)
 *   standard  cfg.cycles cycles (the nightly's fixed length)
 *   long      as many cycles as fit in the seconds given
 * At quick and standard, cfg.budget_s (when not 0) also ends the soak: no
 * cycle starts once that many seconds have passed since gc_soak_start(), so
 * a count that a slow node (more GPUs, a slower library) cannot run in
 * reasonable time is cut there; gc_soak_end() says so. At long it is unused.
 * A subtest that soaks is named in its test's .soaks (lib/core.h; --list-soak
 * lists it, so the runner knows to give it time); gc_soak_start() in any
 * other fails.
 *
 *     struct gc_soak *s = gc_soak_start(&(struct gc_soak_cfg){
 *             .name = alloc_map, .cycle = what_a_cycle_does,
 *             .cycles = 10000, .dev_used = my_dev_used, .dev_arg = dev });
 *     while (gc_soak_claim(s)) {
 *             one_cycle();
 *             gc_soak_done(s);
 *     }
 *     gc_soak_end(s);
 *
 * (alloc_map and what_a_cycle_does stand for string literals such as
 * `alloc-map` and `alloc, map, unmap, free 2 MiB`.)
 *
 * claim / done are thread-safe: many workers may share one soak. Whoever
 * finishes a cycle once the sampling interval has passed samples the
 * process: RSS (less what cfg.held_bytes says the test keeps on purpose; the
 * threads started after gc_soak_start share two malloc arenas, so that RSS
 * does not grow with how many of them freed memory), open fds, device memory in use (cfg.dev_used, called from
 * that worker) and, between samples, the wall time per cycle. At most
 * GC_SOAK_MAX_SAMPLES are kept (every other one is dropped and the interval
 * doubled when full). gc_soak_end() fits each series against cycles after
 * a warm-up (the first quarter of the cycles) with the Theil-Sen estimator
 * (the median of the slopes of every pair of samples, which one outlier
 * cannot move), and each half of that window alone, prints it, appends it to the metrics file as one JSON line
 * (an object whose member soak is NAME and series the array of fits: the
 * runner's report plots it) and fails
 * the subtest (a failed check) for each series that grows beyond its bound.
 * The fit is of the cycles that ran, however the soak ended; the line says
 * how it ended: `stopped` is `cycles` (the level's count done), `budget`
 * (cfg.budget_s ran out first), `seconds` (long's seconds ran out) or
 * `caller` (the loop left before a claim was refused: a failure), with
 * `cycles_asked` (the level's count; null at long) and `budget_s` (null:
 * none) beside `cycles` (done).
 */
#ifndef GPUCONFORM_SOAK_H
#define GPUCONFORM_SOAK_H

#include <stdbool.h>
#include <stddef.h>

#define GC_LEVEL_ENV "GPUCONFORM_LEVEL"
#define GC_SOAK_SECONDS_ENV "GPUCONFORM_SOAK_SECONDS"
#define GC_SOAK_MAX_SAMPLES 512

enum gc_level { GC_LEVEL_QUICK, GC_LEVEL_STANDARD, GC_LEVEL_LONG };

/* `quick` / `standard` / `long` (NULL or empty: standard) -> 0, else -EINVAL. */
int gc_level_parse(const char *text, enum gc_level *level);
const char *gc_level_name(enum gc_level level);

struct gc_soak_cfg {
	const char *name;     /* [A-Za-z0-9._-]+, unique in the subtest */
	const char *cycle;    /* what one cycle does, in words */
	unsigned long cycles; /* at level standard */
	unsigned long quick;  /* at level quick; 0: cycles / 10 (at least 1) */
	/*
	 * At quick and standard: no cycle starts after this many seconds (the
	 * one in flight finishes); 0: the count alone. A test that wants a
	 * budget per level reads the level (gc_level_parse of GC_LEVEL_ENV).
	 */
	double budget_s;
	/* Device memory in use, bytes, or -errno; NULL where there is no device. */
	long long (*dev_used)(void *arg);
	void *dev_arg;
	/*
	 * Host memory the test keeps on purpose until its end (records it checks
	 * then), bytes: left out of the RSS series. NULL: none.
	 */
	size_t (*held_bytes)(void *arg);
	void *held_arg;
};

/*
 * A series grows when its fitted slope and its growth across the window
 * (slope x cycles) both exceed the per-cycle and total limits, or, for the
 * latency, when the growth is more than `relative` of its median; and each
 * half of the window, fitted alone, exceeds the per-cycle limit and half of
 * the others: a leak grows with the cycles, where a pool that grew once is
 * one step (in one half only).
 */
struct gc_soak_limit {
	double per_cycle; /* unit a cycle */
	double total;     /* unit across the window */
	double relative;  /* growth / median */
};

enum gc_soak_verdict { GC_SOAK_OK, GC_SOAK_GROWS, GC_SOAK_FEW_SAMPLES };

struct gc_soak_fit {
	double from, to;   /* the window, in cycles */
	double slope;      /* unit a cycle (NaN: too few samples) */
	double growth;     /* slope * (to - from) */
	double relative;   /* growth / median of the window (NaN where the median is 0) */
	size_t n;          /* samples in the window */
	double half_slope[2]; /* the slopes of its first and second half */
	enum gc_soak_verdict verdict;
};

/* Least samples in a window for a verdict. */
#define GC_SOAK_MIN_FIT 6

/* Theil-Sen slope of (x, y): the median of every pair's slope with x_i < x_j; NaN if none. */
double gc_theil_sen(const double *x, const double *y, size_t n);

/*
 * The fit of the samples with x >= warmup * x[n-1] (x ascending), and its
 * verdict against lim. NaN samples are left out.
 */
struct gc_soak_fit gc_soak_fit(const double *x, const double *y, size_t n, double warmup,
			       const struct gc_soak_limit *lim);

struct gc_soak;
struct gc_soak *gc_soak_start(const struct gc_soak_cfg *cfg);
/* One more cycle may start: false once the level's cycles or seconds, or the budget, run out. */
bool gc_soak_claim(struct gc_soak *s);
/* A claimed cycle finished. */
void gc_soak_done(struct gc_soak *s);
/* Cycles finished so far. */
unsigned long gc_soak_count(const struct gc_soak *s);
/* Fit, print, record, judge; frees s. */
void gc_soak_end(struct gc_soak *s);

#endif

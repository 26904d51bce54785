/* SPDX-License-Identifier: MIT */
/*
 * Profiler sessions (cuda_bubbles and hip_bubbles, profiler-sessions): one
 * process profiled several times over its life, and what each kind of
 * session leaves behind once it has detached.
 *
 * The subtest is a matrix of plans. A plan is one tracing configuration (what
 * a session enables: the kernel kind alone, with API records, with a
 * callback, memory copies; the vendor's table) and one order of the
 * profiler's modes (concurrent then serialized: `-cs`; serialized then
 * concurrent: `-sc`), as the dynamic subtest CONFIG-ORDER. A configuration
 * that takes no mode, or a profiler of one mode, gives one plan of two
 * sessions of that configuration, named CONFIG.
 *
 * Each plan runs in a process of its own, so that it starts with the
 * profiler unloaded: the subtest's process re-executes its binary with
 * GC_SESS_PLAN_ENV naming the plan. That process measures the judged cases
 * before the profiler is loaded (`pristine`), attaches and detaches one
 * session per mode of the order, each around the suite's traced workload
 * (stream chains, the judged graphs, graphs instantiated while traced, the
 * vendor's deep queue; GC_SESS_PARTS_ENV narrows it down), measures every
 * case again after each detach on three sets of graphs: `old`
 * (instantiated before the first session), `mid` (during the session, while
 * traced) and `new` (after its detach), the stream case with the old set;
 * then, where the profiler can be finalized (ops->finalize: detached from
 * the process whole, all its state released), finalizes it and measures
 * once more (`finalized`). It prints every round of every
 * measurement (gc_sess_print) and ends. The subtest's process, which never
 * loads the profiler, measures the same cases itself (`fresh`), reads the
 * report back and judges: a residual is an after-measurement over both
 * pristine and fresh by more than the clock's quantum + GC_SESS_K x the
 * spread of the rounds. The finalized measurement is reported the same way
 * but not judged: it tells whether a detach leaves a cost or only
 * finalizing the profiler restores.
 *
 * The judged statistics of one round of a case (GC_SESS_LAUNCHES launches,
 * GC_SESS_LAUNCHES_LONG for a shape of 4096 dispatches or more): the median
 * gap and the median graph time (one launch's last end - first start), both
 * ns. Medians, so that a launch the host interrupted cannot sway them; both
 * are differences of device-clock readings, so they move in steps of its
 * quantum (32 ns of %globaltimer on an H100), which gc_gap_quantum() measures.
 */
#ifndef GPUCONFORM_PROF_SESSIONS_H
#define GPUCONFORM_PROF_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gaps.h"

/*
 * Every measurement is GC_SESS_ROUNDS rounds; its spread is the largest range
 * (max - min) of the rounds of the after and of both references. The range
 * of three draws is 1.7 sigma on average and the largest of three such
 * ranges rarely under 1 sigma, so K = 3 allows 3 to 5 sigma of one round's
 * noise: a residual beyond that is not the rounds' scatter. The quantum is
 * added for statistics that never moved in any round (range 0), where one
 * tick of the clock is still noise.
 */
#define GC_SESS_ROUNDS 3
#define GC_SESS_K 3.0             /* a residual beyond quantum + K x spread fails */
#define GC_SESS_LAUNCHES 100u
#define GC_SESS_LAUNCHES_LONG 20u /* chain8192 runs 15 ms a launch */
#define GC_SESS_MAX 4             /* sessions of one plan at most: one per mode */
#define GC_SESS_MAX_PLANS 32
#define GC_SESS_PLAN_ENV "GPUCONFORM_BUBBLES_SESSION_PLAN"
/*
 * The finalize step runs only where this is set (to anything but empty):
 * on an H100 (driver 580.159.04, CUDA 13.0) cuptiFinalize, called as its
 * header recommends, is followed by an MMU fault (Xid 31, a write by the
 * front end to an unmapped page) at the next launch, which ends the run.
 */
#define GC_SESS_FINALIZE_ENV "GPUCONFORM_BUBBLES_FINALIZE"

enum { GC_SESS_P50, GC_SESS_TIME, GC_SESS_NSTAT };
extern const char *const gc_sess_stats[GC_SESS_NSTAT]; /* `gap-p50`, `graph-time` */

/* graph chain16, chain256, chain8192, wide16, wide256, mixed; stream chain16 */
#define GC_SESS_NCASES 7
struct gc_sess_case {
	const char *name;  /* the shape's, or stream-SHAPE */
	const char *shape;
	bool stream;
};
extern const struct gc_sess_case gc_sess_cases[GC_SESS_NCASES];

/* The sets of graphs measured after a detach; the stream case goes with the old one. */
enum { GC_SESS_OLD, GC_SESS_MID, GC_SESS_NEW, GC_SESS_NSETS };
extern const char *const gc_sess_sets[GC_SESS_NSETS]; /* `old`, `mid`, `new` */

/* What one measurement gives: every case's statistics per round, ns. */
struct gc_sess_point {
	double v[GC_SESS_NCASES][GC_SESS_NSTAT][GC_SESS_ROUNDS];
	bool have[GC_SESS_NCASES];
};

/* Launches of sh per round. */
unsigned gc_sess_launches(const struct gc_shape *sh);

/*
 * A comma-separated list of names (`mid,deep`), each one of names[0..n),
 * into their indices out[0..max): how many, or -EINVAL for an empty list or
 * item, an unknown name or more than max. Pure: unit-tested.
 */
int gc_sess_pick(const char *list, const char *const *names, unsigned n, unsigned *out,
		 size_t max);

/*
 * What a session runs while attached, every part unless
 * GC_SESS_PARTS_ENV names some (to narrow a residual down without a
 * rebuild): stream launches of the chains and mixed; the old graphs; graphs
 * instantiated while traced (`mid`, then also measured after the detach);
 * the vendor's deep queue.
 */
enum { GC_SESS_STREAM, GC_SESS_GRAPHS, GC_SESS_MIDGRAPHS, GC_SESS_DEEP, GC_SESS_NPARTS };
extern const char *const gc_sess_parts[GC_SESS_NPARTS]; /* `stream`, `graphs`, `mid`, `deep` */
#define GC_SESS_PARTS_ENV "GPUCONFORM_BUBBLES_SESSION_PARTS"

/*
 * One statistic of one case after a detach against its two references,
 * each over `rounds` rounds. over_*: the median of the after's rounds - the
 * reference's. spread: the largest range (max - min) of the three sets of
 * rounds. allowed: quantum + k x spread. A residual is over both references
 * by more than allowed: the pristine one alone also moves with the machine's
 * drift over the subtest, the fresh one alone with what differs from one
 * process to the next (a step of the clock, 768 vs 800 ns p50 across H100
 * runs). Pure: unit-tested.
 */
struct gc_sess_verdict {
	double over_pristine, over_fresh;
	double spread, allowed;
	bool residual;
};
void gc_sess_judge(const double *pristine, const double *fresh, const double *after,
		   unsigned rounds, double quantum, double k, struct gc_sess_verdict *v);

/* One tracing configuration of the vendor's profiler: what a session enables. */
struct gc_sess_config {
	const char *name; /* [a-z0-9-]; the plans' names begin with it */
	const char *what; /* what a session of it enables, in words */
	bool modal;       /* takes the profiler's modes: a plan per order of them */
	unsigned level;   /* enum gc_level: the lowest level whose runs include it */
};

/* One plan: a configuration and the mode of each of its sessions. */
struct gc_sess_plan {
	char name[48];
	unsigned config;
	unsigned seq[GC_SESS_MAX];
	size_t n;
};

/*
 * A plan's process's report: the clock quantum it saw, pristine, the sets
 * after each of its n sessions and, when finalized, after the finalize.
 * gc_sess_print() writes it as lines `gc-sess ...` ending with `gc-sess
 * end`, then, when finalized, gc_sess_print_fin()'s: the sets after the
 * finalize and `gc-sess finalized` (printed apart, after the rest is out: a
 * process the finalize breaks has reported its sessions). gc_sess_parse()
 * reads both back from text that may hold other lines: 0, or -EINVAL unless
 * the quantum, the count, the end line and every round of every case of
 * every point were there (the mid set may be absent: it is not measured
 * when GC_SESS_PARTS_ENV leaves mid out); finalized only when its part is
 * whole and ended. Pure: unit-tested.
 */
struct gc_sess_report {
	double quantum;
	size_t n;
	bool finalized;
	struct gc_sess_point pristine;
	struct gc_sess_point after[GC_SESS_MAX][GC_SESS_NSETS];
	struct gc_sess_point fin[GC_SESS_NSETS];
};
void gc_sess_print(FILE *f, const struct gc_sess_report *r);
void gc_sess_print_fin(FILE *f, const struct gc_sess_report *r);
int gc_sess_parse(const char *text, struct gc_sess_report *r);

/* Whether a file whose path contains name is mapped into this process. */
bool gc_sess_mapped(const char *name);

/*
 * A vendor's profiler, for gc_sess_run(): its modes, its configurations, the
 * library it loads, and calls that fail the subtest as gc_assert does. ctx
 * is the vendor's; `config` indexes configs.
 */
struct gc_sess_ops {
	const char *const *modes; /* `concurrent`, `serialized` */
	unsigned nmodes;
	const struct gc_sess_config *configs;
	unsigned nconfigs;
	const char *lib;          /* the library as /proc/self/maps names it (`libcupti`) */
	/*
	 * NULL: pristine is measured before the library is loaded (checked);
	 * else what pristine is instead, said in its output (rocprofiler-sdk
	 * registers before the runtime initialises, so it is loaded from the start).
	 */
	const char *pristine;
	/* NULL, or what the plan's process needs before pristine (a runtime the configuration traces). */
	void (*prepare)(void *ctx, unsigned config);
	/* Attach in mode m with configuration config (bringing the profiler up the first time). */
	void (*attach)(void *ctx, unsigned m, unsigned config);
	/* The vendor's part of the traced workload: the kernel dispatches it made, for the detach. */
	uint64_t (*workload)(void *ctx, unsigned config);
	/*
	 * Detach: switch off what attach switched on, flush, take the session's
	 * records, check them against the `dispatches` made while attached.
	 */
	void (*detach)(void *ctx, unsigned m, unsigned config, uint64_t dispatches);
	/* Records taken since the last detach (flushed, counted, freed): there must be none. */
	uint64_t (*stray)(void *ctx);
	/* NULL where the profiler has no finalize; else detach it whole (cuptiFinalize). */
	void (*finalize)(void *ctx);
	const char *finalize_what;    /* the call, for the output (`cuptiFinalize`) */
	const char *finalize_promise; /* what its documentation promises after it, quoted */
};

/*
 * Every plan of ops, in its configurations' order into v[0..max): a
 * modal configuration with nmodes >= 2 gives one plan per rotation of the
 * modes (modes[r], modes[r + 1], ...), named CONFIG-INITIALS (`kernel-cs`,
 * `kernel-sc`); any other gives one plan of two sessions of mode 0, named
 * CONFIG. Returns how many plans there are. Pure: unit-tested.
 */
size_t gc_sess_plans(const struct gc_sess_ops *ops, struct gc_sess_plan *v, size_t max);
/* The plan of ops named name into *out: 0, or -ENOENT (name NULL, or no such plan). Pure: unit-tested. */
int gc_sess_plan_named(const struct gc_sess_ops *ops, const char *name, struct gc_sess_plan *out);

/*
 * The plan this process must run (GC_SESS_PLAN_ENV), or NULL in the
 * subtest's own process. A vendor whose profiler registers at start-up
 * registers only where this is set.
 */
const char *gc_sess_plan_env(void);

/*
 * The subtest. In its own process: the plans of the run's level
 * (GPUCONFORM_LEVEL; every plan at long) as dynamic subtests, each run in a
 * process of its own (this binary's `subtest`, re-executed) and judged here:
 * a gc_check per residual naming the session after which it appeared and
 * the case that carries it; per session, and after the finalize, the metrics
 * residual.WHEN.STAT.graphs (the largest after / pristine of the graph cases
 * over the three sets; x, 1 is none) and residual.WHEN.STAT.stream-chain16;
 * residual.fresh.STAT.graphs and .stream-chain16 (fresh over pristine). In
 * a plan's process: that plan, reported on stdout.
 */
void gc_sess_run(const struct gc_gap_dev *d, const struct gc_sess_ops *ops, void *ctx,
		 const char *subtest);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Dispatch gaps, vendor-neutral (cuda_bubbles and hip_bubbles): the shapes
 * of dependent dispatches, gap sample sets, their statistics, the bubble
 * rule and the metrics the runner baselines and the report plots
 * (gap.MODE.SHAPE, gap-p50/p99/max.MODE.SHAPE, bubbles.MODE.SHAPE,
 * graph-time.MODE.SHAPE, overhead.WHAT.SHAPE). A gap is the start of a
 * dispatch minus the end of the one it depends on, in ns, measured by the
 * dispatches themselves. Also what both binaries do with the stamps of a
 * run (the walk over a shape's dependencies, the counts, the launch gaps)
 * and the gaps matrix they share, the vendor supplying only its launches
 * (GC_GAP_OPS).
 */
#ifndef GPUCONFORM_GAPS_H
#define GPUCONFORM_GAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum gc_shape_kind {
	GC_SHAPE_CHAIN, /* n dispatches, each depending on the previous */
	GC_SHAPE_WIDE,  /* a root, n branches depending on it, a join depending on all */
	GC_SHAPE_MIXED, /* a chain of n with a memset or memcpy node between each pair */
};

struct gc_shape {
	const char *name;
	enum gc_shape_kind kind;
	unsigned n;       /* chain: length; wide: branches; mixed: kernels */
	unsigned kernels; /* stamp dispatches it makes */
};

#define GC_N_SHAPES 7
/* chain2, chain16, chain256, chain8192, wide16, wide256, mixed */
extern const struct gc_shape gc_shapes[GC_N_SHAPES];
/* The shape of that name, or NULL. */
const struct gc_shape *gc_shape_find(const char *name);
/* The shape of that name, or fail the subtest naming it (subtest-level). */
const struct gc_shape *gc_shape_get(const char *name);

/*
 * A bubble is a gap over GC_GAP_BUBBLE_FACTOR x the median gap of the same
 * shape and mode. The median is what the launch mechanism costs between two
 * dependent dispatches of that shape (about 1 us for a CUDA graph chain);
 * 4x that is idle time the mechanism does not explain (a host round trip, a
 * doorbell missed, a profiler's callback), while a device-clock step (32 ns
 * %globaltimer, 10 ns s_memrealtime at 100 MHz) or a kernel's jitter stays
 * far below it.
 */
#define GC_GAP_BUBBLE_FACTOR 4.0

struct gc_gaps {
	double *v;        /* gaps, ns */
	size_t n, cap;
	double *span_us;  /* device span of each run (last end - first start), us */
	size_t runs, runs_cap;
	unsigned long_gaps; /* gaps over GC_GAP_LONG_NS seen so far (the first 5 are logged) */
};

/* Append a gap / a run's span. 0 or -ENOMEM (g unchanged). */
int gc_gaps_add(struct gc_gaps *g, double gap_ns);
int gc_gaps_add_span(struct gc_gaps *g, double span_us);
void gc_gaps_free(struct gc_gaps *g);

struct gc_gap_stats {
	double p50, p99, max; /* over every gap, ns */
	uint64_t bubbles;     /* gaps over GC_GAP_BUBBLE_FACTOR x p50 */
	size_t n;
	double span_us;       /* mean span of a run; 0 without runs */
	double span_max_us;   /* the longest span of a run; 0 without runs */
};

/* Statistics of g: 0, -EINVAL when g holds no gap, -ENOMEM. Pure: unit-tested. */
int gc_gap_stats(const struct gc_gaps *g, struct gc_gap_stats *st);

/*
 * Every gap of a set once per distinct value: values ascending, counts[i]
 * the gaps of values[i]. One sort of the gaps gives both the statistics and
 * the metric (gc_gaps_report).
 */
struct gc_gap_hist {
	double *values;
	uint64_t *counts;
	size_t n;
};

/* h, g's histogram: 0, -EINVAL when g holds no gap, -ENOMEM (h then empty). */
int gc_gap_hist_of(const struct gc_gaps *g, struct gc_gap_hist *h);
void gc_gap_hist_free(struct gc_gap_hist *h);

/*
 * The histogram of v[0..n), NaN-free, in any order: its distinct values
 * ascending into values, the times each occurs into counts; returns how
 * many distinct values there are (0 when n == 0). values and counts have
 * room for n each; values, which must not overlap v, is the scratch space
 * v is copied to and sorted in, so nothing is allocated and v is left as it
 * was. Pure: unit-tested.
 */
size_t gc_gap_histogram(const double *v, size_t n, double *values, uint64_t *counts);

/*
 * The statistics, as metrics gap.MODE.SHAPE (every gap, as a histogram:
 * gc_metric_hist), gap-p50/p99/max, bubbles and graph-time, and one info
 * line. Fails the subtest when g holds no gap or memory runs out.
 */
struct gc_gap_stats gc_gaps_report(const struct gc_gaps *g, const char *mode, const char *shape);

/* The metric overhead.WHAT.SHAPE (unit x, lower is better), one sample. */
void gc_gap_ratio(const char *what, const char *shape, double x);
/*
 * x against base (the untraced gaps of the same process) as overhead metrics:
 * overhead.gap-p50-WHAT-over-graph.SHAPE and gap-p99, and with time also
 * graph-time-WHAT-over-graph (the mean span); a 0 in base is taken as 1.
 */
void gc_gap_ratios(const char *what, const char *shape, const struct gc_gap_stats *x,
		   const struct gc_gap_stats *base, bool time);

/* ------------------------------------------------------------ one run's stamps */

/*
 * The host copy of a launch's stamps and counts: dispatch idx stamped the
 * device clock at its start into stamps[2 * idx] and at its end into
 * stamps[2 * idx + 1], and counted itself in counts[idx]. The clock ticks hz
 * times a second: GC_GAP_NS_HZ for CUDA's %globaltimer (ns), s_memrealtime's
 * rate on AMD. The vendor owns the arrays; lib/gaps reads them (and
 * gc_gap_expect_launch() clears a count on purpose, see there).
 */
#define GC_GAP_NS_HZ 1000000000ull
struct gc_gap_run {
	uint64_t *stamps;
	uint32_t *counts;
	uint64_t hz;
};

/* Gaps over this are logged (the first 5 of a gap set) with where they lie on the device clock. */
#define GC_GAP_LONG_NS 100000.0

/* ticks of r's clock in ns (exact for GC_GAP_NS_HZ). Pure: unit-tested. */
double gc_gap_ns(const struct gc_gap_run *r, uint64_t ticks);

/*
 * From here on, functions that check are subtest-level: they fail the
 * subtest as gc_assert does. Every one of the first n dispatches ran exactly
 * once, else fail naming the first that did not: `WHAT: dispatch I of N ran
 * K times (replayed | lost: it never ran)`.
 */
void gc_gap_expect_counts(const struct gc_gap_run *r, unsigned n, const char *what);

/*
 * GPUCONFORM_BUBBLES_REMOVE names what the bubbles binaries remove on purpose
 * (stamp: a dispatch's count, record: a profiler record, detach: the
 * switching off of a session's kernel tracing in profiler-sessions), so that
 * the checks are seen to fail; never set in a real run.
 */
bool gc_bubbles_remove(const char *what);

/*
 * After one launch of sh: gc_gap_expect_counts() over its dispatches, named
 * by the shape. For a graph launch, GPUCONFORM_BUBBLES_REMOVE=stamp first
 * forgets the last dispatch's count.
 */
void gc_gap_expect_launch(struct gc_gap_run *r, const struct gc_shape *sh, bool graph);

/*
 * The gap of c depending on a, ns: c's start - a's end. Fails when a ended
 * before it started (the device clock went backwards) or c started before a
 * ended (that, or the dependency was not honoured).
 */
double gc_gap_of(const struct gc_gap_run *r, unsigned a, unsigned c);

/*
 * The gaps of one run of sh, appended to g: a chain's (and mixed's) from each
 * dispatch to the next; wide's from the root to every branch, and from the
 * branch that ended last to the join. Then the run's span (the last end -
 * the first start). Fails as gc_gap_of() does, or when memory runs out.
 */
void gc_gap_add_run(const struct gc_gap_run *r, const struct gc_shape *sh, struct gc_gaps *g);

/*
 * n >= 1 launches of per dispatches each, stamped in launch order: the gap from
 * the last dispatch of each launch to the first of the next, appended to g,
 * and the span of all n (the last launch's end - the first's start, which
 * must not be negative). Fails as gc_gap_add_run() does.
 */
void gc_gap_add_launches(const struct gc_gap_run *r, unsigned n, unsigned per,
			 struct gc_gaps *g);

/*
 * launch-gap, after n >= 1 launches of chain2 stamped in launch order: every
 * dispatch ran once, and their launch gaps are the metrics of graph.launch.
 */
void gc_gaps_launch_gap(const struct gc_gap_run *r, unsigned n);

/* ------------------------------------------------------------ a vendor's launches */

/*
 * How a vendor launches a shape, declared with GC_GAP_OPS: build and destroy
 * a graph of sh; run it once; run sh's dispatches once, one by one, on a
 * stream (chains and mixed: a stream has no fan-out). Each run zeroes the
 * counts, launches, waits, fetches the stamps and counts into the run the
 * vendor's gc_gap_dev names and checks them (gc_gap_expect_launch()).
 */
struct gc_gap_ops {
	void (*build)(void *ctx, const struct gc_shape *sh, void *graph);
	void (*destroy)(void *ctx, void *graph);
	void (*run_graph)(void *ctx, const struct gc_shape *sh, void *graph);
	void (*run_stream)(void *ctx, const struct gc_shape *sh);
};

/* The most a vendor's graph type may take: the gaps matrix keeps one on its stack. */
#define GC_GAP_GRAPH_BYTES 128

/*
 * Declares `static const struct gc_gap_ops name` over typed vendor functions:
 *     void build(CTX *, const struct gc_shape *, GRAPH *);
 *     void destroy(CTX *, GRAPH *);
 *     void run_graph(CTX *, const struct gc_shape *, GRAPH *);
 *     void run_stream(CTX *, const struct gc_shape *);
 * A function of other types does not compile.
 */
#define GC_GAP_OPS(name, ctx_type, graph_type, build, destroy, run_graph, run_stream)      \
	_Static_assert(sizeof(graph_type) <= GC_GAP_GRAPH_BYTES,                           \
		       #graph_type " is larger than GC_GAP_GRAPH_BYTES");                  \
	static void gc__build_##name(void *ctx, const struct gc_shape *sh, void *g)        \
	{                                                                                  \
		build((ctx_type *)ctx, sh, (graph_type *)g);                               \
	}                                                                                  \
	static void gc__destroy_##name(void *ctx, void *g)                                 \
	{                                                                                  \
		destroy((ctx_type *)ctx, (graph_type *)g);                                 \
	}                                                                                  \
	static void gc__graph_##name(void *ctx, const struct gc_shape *sh, void *g)        \
	{                                                                                  \
		run_graph((ctx_type *)ctx, sh, (graph_type *)g);                           \
	}                                                                                  \
	static void gc__stream_##name(void *ctx, const struct gc_shape *sh)                \
	{                                                                                  \
		run_stream((ctx_type *)ctx, sh);                                           \
	}                                                                                  \
	static const struct gc_gap_ops name = { gc__build_##name, gc__destroy_##name,      \
						gc__graph_##name, gc__stream_##name }

/* A vendor's launches: its ops, its context (handed to every op), where runs land. */
struct gc_gap_dev {
	const struct gc_gap_ops *ops;
	void *ctx;
	struct gc_gap_run *run;
};

/*
 * launches runs of sh (of graph, a graph d built; stream launches when graph
 * is NULL), each run's gaps into one set reported as MODE.SHAPE
 * (gc_gaps_report(), whose statistics it returns). keep: every run's stamps
 * in turn (2 * sh->kernels each), or NULL.
 */
struct gc_gap_stats gc_gaps_measure(const struct gc_gap_dev *d, const struct gc_shape *sh,
				    void *graph, unsigned launches, const char *mode,
				    uint64_t *keep);
/* The same runs, their gaps and spans appended to g, reported nowhere. */
void gc_gaps_collect(const struct gc_gap_dev *d, const struct gc_shape *sh, void *graph,
		     unsigned launches, struct gc_gaps *g, uint64_t *keep);

/*
 * The gaps matrix: stream-SHAPE for every shape but the wide ones, then
 * graph-SHAPE for every shape, in gc_shapes order.
 */
struct gc_gap_case {
	const char *mode; /* `stream` or `graph`: the metrics' MODE */
	bool stream;
	const struct gc_shape *sh;
};
#define GC_GAP_MAX_CASES (2 * GC_N_SHAPES)
/* The cases in order into v (at most max of them); returns how many there are. Pure. */
size_t gc_gap_cases(struct gc_gap_case *v, size_t max);
/* Each case as the dynamic subtest MODE-SHAPE: launches runs, reported as MODE.SHAPE. */
void gc_gaps_cases(const struct gc_gap_dev *d, unsigned launches);

/* body(ctx, sh) for every shape of gc_shapes, in order, as the dynamic subtest SHAPE. */
void gc_each_shape(void (*body)(void *ctx, const struct gc_shape *sh), void *ctx);

/*
 * The clock's quantum seen in v: the smallest positive difference between
 * two of its values; 0 when all are equal. Sorts v. Pure: unit-tested.
 */
double gc_gap_quantum(double *v, size_t n);

/*
 * Profiler records against the dispatches' own stamps. With D = device
 * clock - profiler clock, a record brackets its stamps when rec_start <=
 * stamp_start - D and stamp_end - D <= rec_end: D in [stamp_end - rec_end,
 * stamp_start - rec_start]. Walking the records in the order their
 * dispatches started, a segment is a run of records whose intervals share
 * one D within slack_ns (plus ppm of the walk's span: the clocks drift).
 * The clock relation may step now and then, which starts a new segment; a
 * step is accepted only between two segments of min_seg records or more,
 * at most max_steps times, so that a lone mistimed record still fails.
 */
struct gc_bracket_rec {
	uint64_t stamp_start, stamp_end; /* device clock, ns */
	uint64_t rec_start, rec_end;     /* profiler clock, ns; both non-zero */
	unsigned tag;                    /* the caller's: which dispatch */
};

struct gc_bracket_rule {
	int64_t slack_ns;
	unsigned ppm, min_seg, max_steps;
};

struct gc_bracket {
	unsigned steps;
	int64_t max_step;  /* the largest step, ns */
	int64_t tight;     /* the narrowest segment's interval width, ns */
	int64_t mid0;      /* the middle of the first segment's interval: D then */
	size_t bad;        /* on failure: the index (after sorting) of the record that failed */
	const char *why;   /* on failure: what is wrong with it */
};

/*
 * Sorts v by stamp_start and checks it. 0, or -EINVAL with out->bad and
 * out->why (a record shorter than its own stamps, or one no offset nor an
 * acceptable step explains); n == 0 is 0 with nothing measured. Pure:
 * unit-tested.
 */
int gc_bracket_check(struct gc_bracket_rec *v, size_t n, const struct gc_bracket_rule *rule,
		     struct gc_bracket *out);

#endif

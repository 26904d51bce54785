/* SPDX-License-Identifier: MIT */
/*
 * Dispatch gaps, vendor-neutral (cuda_bubbles and hip_bubbles): the shapes
 * of dependent dispatches, gap sample sets, their statistics, the bubble
 * rule and the metrics the runner baselines and the report plots
 * (gap.MODE.SHAPE, gap-p50/p99/max.MODE.SHAPE, bubbles.MODE.SHAPE,
 * graph-time.MODE.SHAPE, overhead.WHAT.SHAPE). A gap is the start of a
 * dispatch minus the end of the one it depends on, in ns, measured by the
 * dispatches themselves.
 */
#ifndef GPUCONFORM_GAPS_H
#define GPUCONFORM_GAPS_H

#include <stddef.h>
#include <stdint.h>

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
/* Gaps written as a metric's samples: an even subsample of at most this many. */
#define GC_GAP_METRIC_SAMPLES 10000u

struct gc_gaps {
	double *v;        /* gaps, ns */
	size_t n, cap;
	double *span_us;  /* device span of each run (last end - first start), us */
	size_t runs, runs_cap;
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
};

/* Statistics of g. 0, or -EINVAL when g holds no gap. Pure: unit-tested. */
int gc_gap_stats(const struct gc_gaps *g, struct gc_gap_stats *st);

/*
 * Every index of an even subsample of n values, at most max of them: step
 * max(1, n / max); the count into *count. Pure: unit-tested.
 */
size_t gc_gap_subsample_step(size_t n, size_t max, size_t *count);

/*
 * The statistics, as metrics gap.MODE.SHAPE (the subsample), gap-p50/p99/max,
 * bubbles and graph-time, and one info line. Fails the subtest when g holds
 * no gap or memory runs out.
 */
struct gc_gap_stats gc_gaps_report(const struct gc_gaps *g, const char *mode, const char *shape);

/* The metric overhead.WHAT.SHAPE (unit x, lower is better), one sample. */
void gc_gap_ratio(const char *what, const char *shape, double x);

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

/* SPDX-License-Identifier: MIT */
#include "gaps.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"
#include "core_private.h"
#include "measure.h"

const struct gc_shape gc_shapes[GC_N_SHAPES] = {
	{ "chain2", GC_SHAPE_CHAIN, 2, 2 },       { "chain16", GC_SHAPE_CHAIN, 16, 16 },
	{ "chain256", GC_SHAPE_CHAIN, 256, 256 }, { "chain8192", GC_SHAPE_CHAIN, 8192, 8192 },
	{ "wide16", GC_SHAPE_WIDE, 16, 18 },      { "wide256", GC_SHAPE_WIDE, 256, 258 },
	{ "mixed", GC_SHAPE_MIXED, 16, 16 },
};

const struct gc_shape *gc_shape_find(const char *name)
{
	for (unsigned i = 0; i < GC_N_SHAPES; i++)
		if (strcmp(gc_shapes[i].name, name) == 0)
			return &gc_shapes[i];
	return NULL;
}

const struct gc_shape *gc_shape_get(const char *name)
{
	const struct gc_shape *sh = gc_shape_find(name);

	gc_assert_f(sh, "no shape %s", name);
	return sh;
}

static int push(double **v, size_t *n, size_t *cap, double x)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1u << 16;
		double *p = realloc(*v, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = ncap;
	}
	(*v)[(*n)++] = x;
	return 0;
}

int gc_gaps_add(struct gc_gaps *g, double gap_ns)
{
	return push(&g->v, &g->n, &g->cap, gap_ns);
}

int gc_gaps_add_span(struct gc_gaps *g, double span_us)
{
	return push(&g->span_us, &g->runs, &g->runs_cap, span_us);
}

void gc_gaps_free(struct gc_gaps *g)
{
	free(g->v);
	free(g->span_us);
	memset(g, 0, sizeof(*g));
}

/* The statistics of g from h, its histogram (one sort of every gap serves both). */
static void stats_of(const struct gc_gaps *g, const struct gc_gap_hist *h, struct gc_gap_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->n = g->n;
	st->p50 = gc_stat_hist_percentile(h->values, h->counts, h->n, 50);
	st->p99 = gc_stat_hist_percentile(h->values, h->counts, h->n, 99);
	st->max = h->values[h->n - 1];
	for (size_t i = 0; i < h->n; i++)
		if (h->values[i] > GC_GAP_BUBBLE_FACTOR * st->p50)
			st->bubbles += h->counts[i];
	st->span_us = g->runs ? gc_stat_mean(g->span_us, g->runs) : 0;
	st->span_max_us = g->runs ? gc_stat_max(g->span_us, g->runs) : 0;
}

int gc_gap_hist_of(const struct gc_gaps *g, struct gc_gap_hist *h)
{
	memset(h, 0, sizeof(*h));
	if (g->n == 0)
		return -EINVAL;
	h->values = malloc(g->n * sizeof(*h->values));
	h->counts = malloc(g->n * sizeof(*h->counts));
	if (!h->values || !h->counts) {
		gc_gap_hist_free(h);
		return -ENOMEM;
	}
	h->n = gc_gap_histogram(g->v, g->n, h->values, h->counts);
	return 0;
}

void gc_gap_hist_free(struct gc_gap_hist *h)
{
	free(h->values);
	free(h->counts);
	memset(h, 0, sizeof(*h));
}

int gc_gap_stats(const struct gc_gaps *g, struct gc_gap_stats *st)
{
	struct gc_gap_hist h;
	int r = gc_gap_hist_of(g, &h);

	memset(st, 0, sizeof(*st));
	if (r)
		return r;
	stats_of(g, &h, st);
	gc_gap_hist_free(&h);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

size_t gc_gap_histogram(const double *v, size_t n, double *values, uint64_t *counts)
{
	size_t k = 0;

	if (!n)
		return 0;
	memcpy(values, v, n * sizeof(*values));
	qsort(values, n, sizeof(*values), cmp_double);
	for (size_t i = 0; i < n; i++) {
		if (k && values[i] == values[k - 1]) {
			counts[k - 1]++;
			continue;
		}
		values[k] = values[i]; /* k <= i: the sorted values not yet read stay */
		counts[k++] = 1;
	}
	return k;
}

static void metric1(const char *what, const char *mode, const char *shape, const char *unit,
		    double x)
{
	char name[160];

	snprintf(name, sizeof(name), "%s.%s.%s", what, mode, shape);
	gc_metric(name, unit, GC_LOWER_IS_BETTER, &x, 1);
}

void gc_gap_ratio(const char *what, const char *shape, double x)
{
	metric1("overhead", what, shape, "x", x);
}

static double ratio_of(double x, double base)
{
	return x / (base > 0 ? base : 1); /* against 1 (ns, us) where the reference is 0 */
}

void gc_gap_ratios(const char *what, const char *shape, const struct gc_gap_stats *x,
		   const struct gc_gap_stats *base, bool time)
{
	char name[64];

	snprintf(name, sizeof(name), "gap-p50-%s-over-graph", what);
	gc_gap_ratio(name, shape, ratio_of(x->p50, base->p50));
	snprintf(name, sizeof(name), "gap-p99-%s-over-graph", what);
	gc_gap_ratio(name, shape, ratio_of(x->p99, base->p99));
	if (!time)
		return;
	snprintf(name, sizeof(name), "graph-time-%s-over-graph", what);
	gc_gap_ratio(name, shape, ratio_of(x->span_us, base->span_us));
}

struct gc_gap_stats gc_gaps_report(const struct gc_gaps *g, const char *mode, const char *shape)
{
	struct gc_gap_stats st;
	struct gc_gap_hist h;
	char name[160];
	int r = gc_gap_hist_of(g, &h);

	gc_assert_f(r != -EINVAL, "%s.%s: no gaps recorded", mode, shape);
	gc_assert_f(r == 0, "%s.%s: out of memory for the histogram of %zu gaps", mode, shape, g->n);
	stats_of(g, &h, &st);
	snprintf(name, sizeof(name), "gap.%s.%s", mode, shape);
	gc_metric_hist(name, "ns", GC_LOWER_IS_BETTER, h.values, h.counts, h.n);
	gc_gap_hist_free(&h);
	metric1("gap-p50", mode, shape, "ns", st.p50);
	metric1("gap-p99", mode, shape, "ns", st.p99);
	metric1("gap-max", mode, shape, "ns", st.max);
	metric1("bubbles", mode, shape, "count", (double)st.bubbles);
	if (g->runs) {
		snprintf(name, sizeof(name), "graph-time.%s.%s", mode, shape);
		gc_metric(name, "us", GC_LOWER_IS_BETTER, g->span_us, g->runs);
	}
	gc_info("%-20s %-10s gaps %zu: p50 %.0f ns, p99 %.0f ns, max %.0f ns, bubbles %llu", mode,
		shape, g->n, st.p50, st.p99, st.max, (unsigned long long)st.bubbles);
	return st;
}

/* ------------------------------------------------------------ one run's stamps */

double gc_gap_ns(const struct gc_gap_run *r, uint64_t ticks)
{
	if (r->hz == GC_GAP_NS_HZ)
		return (double)ticks;
	return (double)ticks * 1e9 / (double)r->hz;
}

static const char *clock_unit(const struct gc_gap_run *r)
{
	return r->hz == GC_GAP_NS_HZ ? "ns" : "ticks";
}

void gc_gap_expect_counts(const struct gc_gap_run *r, unsigned n, const char *what)
{
	for (unsigned i = 0; i < n; i++)
		gc_assert_f(r->counts[i] == 1, "%s: dispatch %u of %u ran %u times (%s)", what, i,
			    n, r->counts[i], r->counts[i] ? "replayed" : "lost: it never ran");
}

bool gc_bubbles_remove(const char *what)
{
	const char *v = getenv("GPUCONFORM_BUBBLES_REMOVE");

	return v && strcmp(v, what) == 0;
}

void gc_gap_expect_launch(struct gc_gap_run *r, const struct gc_shape *sh, bool graph)
{
	if (graph && gc_bubbles_remove("stamp"))
		r->counts[sh->kernels - 1] = 0;
	gc_gap_expect_counts(r, sh->kernels, sh->name);
}

/*
 * DESIGN.md, bubbles: the gap between them is measured per kernel. A
 * dispatch starts after the one it depends on ended, both stamped on one
 * device clock: a negative gap means that clock went backwards or the
 * dependency was not honoured.
 */
double gc_gap_of(const struct gc_gap_run *r, unsigned a, unsigned c)
{
	uint64_t a_start = r->stamps[2 * a], end = r->stamps[2 * a + 1], start = r->stamps[2 * c];
	const char *u = clock_unit(r);

	gc_assert_f(a_start <= end, "dispatch %u ended (%llu %s) before it started (%llu %s): "
		    "the device clock went backwards", a, (unsigned long long)end, u,
		    (unsigned long long)a_start, u);
	gc_assert_f(start >= end, "dispatch %u started at %llu %s, before dispatch %u it depends "
		    "on ended at %llu %s: the device clock went backwards or the dependency was "
		    "not honoured", c, (unsigned long long)start, u, a, (unsigned long long)end, u);
	return gc_gap_ns(r, start - end);
}

static void gap_add(struct gc_gaps *g, double gap_ns)
{
	gc_assert_f(gc_gaps_add(g, gap_ns) == 0, "out of memory for %zu gap samples", g->n + 1);
}

static void span_add(struct gc_gaps *g, double span_us)
{
	gc_assert_f(gc_gaps_add_span(g, span_us) == 0, "out of memory for %zu runs", g->runs + 1);
}

static void add_gap(const struct gc_gap_run *r, struct gc_gaps *g, unsigned a, unsigned c)
{
	double gap = gc_gap_of(r, a, c);

	if (gap > GC_GAP_LONG_NS && g->long_gaps++ < 5)
		gc_info("long gap: %.0f ns from dispatch %u to %u of run %zu (device clock %llu %s)",
			gap, a, c, g->runs, (unsigned long long)r->stamps[2 * c], clock_unit(r));
	gap_add(g, gap);
}

/* The last end - the first start of dispatches [0, n), us. */
static double span_of(const struct gc_gap_run *r, unsigned n)
{
	uint64_t first = UINT64_MAX, last = 0;

	for (unsigned i = 0; i < n; i++) {
		first = r->stamps[2 * i] < first ? r->stamps[2 * i] : first;
		last = r->stamps[2 * i + 1] > last ? r->stamps[2 * i + 1] : last;
	}
	return gc_gap_ns(r, last - first) / 1e3;
}

void gc_gap_add_run(const struct gc_gap_run *r, const struct gc_shape *sh, struct gc_gaps *g)
{
	unsigned join = sh->n + 1, late = 1;

	if (sh->kind == GC_SHAPE_WIDE) {
		for (unsigned i = 1; i <= sh->n; i++) {
			add_gap(r, g, 0, i);
			if (r->stamps[2 * i + 1] > r->stamps[2 * late + 1])
				late = i;
		}
		add_gap(r, g, late, join);
	} else {
		for (unsigned i = 1; i < sh->n; i++)
			add_gap(r, g, i - 1, i);
	}
	/* >= 0: dispatch 0's start <= its end (gc_gap_of) bounds the first and the last */
	span_add(g, span_of(r, sh->kernels));
}

void gc_gap_add_launches(const struct gc_gap_run *r, unsigned n, unsigned per,
			 struct gc_gaps *g)
{
	uint64_t first = r->stamps[0], last = r->stamps[2 * (size_t)n * per - 1];

	for (unsigned l = 1; l < n; l++)
		add_gap(r, g, per * l - 1, per * l);
	gc_assert_f(last >= first, "the last launch ended before the first started: the device "
		    "clock went backwards");
	span_add(g, gc_gap_ns(r, last - first) / 1e3);
}

void gc_gaps_launch_gap(const struct gc_gap_run *r, unsigned n)
{
	struct gc_gaps g = { 0 };

	gc_gap_expect_counts(r, 2 * n, "launch-gap");
	gc_gap_add_launches(r, n, 2, &g);
	gc_gaps_report(&g, "graph", "launch");
	gc_gaps_free(&g);
}

/* ------------------------------------------------------------ a vendor's launches */

void gc_gaps_collect(const struct gc_gap_dev *d, const struct gc_shape *sh, void *graph,
		     unsigned launches, struct gc_gaps *g, uint64_t *keep)
{
	size_t per = 2 * (size_t)sh->kernels;

	for (unsigned l = 0; l < launches; l++) {
		if (graph)
			d->ops->run_graph(d->ctx, sh, graph);
		else
			d->ops->run_stream(d->ctx, sh);
		gc_gap_add_run(d->run, sh, g);
		if (keep)
			memcpy(&keep[l * per], d->run->stamps, per * sizeof(*keep));
	}
}

struct gc_gap_stats gc_gaps_measure(const struct gc_gap_dev *d, const struct gc_shape *sh,
				    void *graph, unsigned launches, const char *mode,
				    uint64_t *keep)
{
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	gc_gaps_collect(d, sh, graph, launches, &g, keep);
	st = gc_gaps_report(&g, mode, sh->name);
	gc_gaps_free(&g);
	return st;
}

static const struct {
	const char *name;
	bool stream;
} gap_modes[] = { { "stream", true }, { "graph", false } };

size_t gc_gap_cases(struct gc_gap_case *v, size_t max)
{
	size_t n = 0;

	for (size_t m = 0; m < ARRAY_SIZE(gap_modes); m++)
		for (unsigned i = 0; i < GC_N_SHAPES; i++) {
			if (gap_modes[m].stream && gc_shapes[i].kind == GC_SHAPE_WIDE)
				continue; /* a stream has no fan-out */
			if (n < max)
				v[n] = (struct gc_gap_case){ gap_modes[m].name, gap_modes[m].stream,
							     &gc_shapes[i] };
			n++;
		}
	return n;
}

struct gap_matrix {
	const struct gc_gap_dev *d;
	unsigned launches;
};

static const char *gap_case_name(const void *vc, char *buf, size_t len)
{
	const struct gc_gap_case *c = vc;

	snprintf(buf, len, "%s-%s", c->mode, c->sh->name);
	return buf;
}

static void gap_case(void *ctx, const void *vc)
{
	const struct gap_matrix *m = ctx;
	const struct gc_gap_case *c = vc;
	const struct gc_gap_ops *ops = m->d->ops;
	union {
		max_align_t align;
		unsigned char bytes[GC_GAP_GRAPH_BYTES];
	} graph;

	memset(&graph, 0, sizeof(graph));
	if (!c->stream)
		ops->build(m->d->ctx, c->sh, &graph);
	gc_gaps_measure(m->d, c->sh, c->stream ? NULL : &graph, m->launches, c->mode, NULL);
	if (!c->stream)
		ops->destroy(m->d->ctx, &graph);
}

void gc_gaps_cases(const struct gc_gap_dev *d, unsigned launches)
{
	struct gc_gap_case v[GC_GAP_MAX_CASES];
	struct gap_matrix m = { d, launches };
	struct gc_cases cases = { .first = v, .n = gc_gap_cases(v, ARRAY_SIZE(v)),
				  .size = sizeof(*v), .name = gap_case_name, .run = gap_case };

	gc_each_case(&cases, &m);
}

struct shape_body {
	void (*body)(void *ctx, const struct gc_shape *sh);
	void *ctx;
};

static const char *shape_name(const void *c, char *buf, size_t len)
{
	(void)buf, (void)len;
	return ((const struct gc_shape *)c)->name;
}

static void shape_case(void *ctx, const void *c)
{
	const struct shape_body *b = ctx;

	b->body(b->ctx, c);
}

void gc_each_shape(void (*body)(void *ctx, const struct gc_shape *sh), void *ctx)
{
	struct shape_body b = { body, ctx };
	struct gc_cases cases = { .first = gc_shapes, .n = GC_N_SHAPES,
				  .size = sizeof(gc_shapes[0]), .name = shape_name, .run = shape_case };

	gc_each_case(&cases, &b);
}

double gc_gap_quantum(double *v, size_t n)
{
	double q = 0;

	qsort(v, n, sizeof(*v), cmp_double);
	for (size_t i = 1; i < n; i++) {
		double d = v[i] - v[i - 1];

		if (d > 0 && (q == 0 || d < q))
			q = d;
	}
	return q;
}

/* ------------------------------------------------------------ bracketing */

static int cmp_bracket(const void *a, const void *b)
{
	const struct gc_bracket_rec *x = a, *y = b;

	return x->stamp_start < y->stamp_start ? -1 : x->stamp_start > y->stamp_start;
}

static int64_t rec_lo(const struct gc_bracket_rec *r)
{
	return (int64_t)r->stamp_end - (int64_t)r->rec_end;
}

static int64_t rec_hi(const struct gc_bracket_rec *r)
{
	return (int64_t)r->stamp_start - (int64_t)r->rec_start;
}

static int bracket_bad(struct gc_bracket *out, size_t k, const char *why)
{
	out->bad = k;
	out->why = why;
	return -EINVAL;
}

int gc_bracket_check(struct gc_bracket_rec *v, size_t n, const struct gc_bracket_rule *rule,
		     struct gc_bracket *out)
{
	int64_t lo = INT64_MIN, hi = INT64_MAX, slack, step;
	size_t len = 0;

	memset(out, 0, sizeof(*out));
	out->tight = INT64_MAX;
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_bracket);
	slack = rule->slack_ns + (int64_t)((v[n - 1].stamp_start - v[0].stamp_start) / 1000000 *
					   rule->ppm);
	for (size_t k = 0; k < n; k++) {
		int64_t l = rec_lo(&v[k]), h = rec_hi(&v[k]);
		int64_t nlo = l > lo ? l : lo, nhi = h < hi ? h : hi;

		if (h - l < -rule->slack_ns)
			return bracket_bad(out, k, "the record is shorter than its dispatch's stamps");
		if (nhi - nlo >= -slack) {
			lo = nlo, hi = nhi, len++;
			continue;
		}
		if (len < rule->min_seg || n - k < rule->min_seg || ++out->steps > rule->max_steps)
			return bracket_bad(out, k, "no clock offset, nor an accepted clock step, "
					   "makes it bracket its stamps like its neighbours");
		step = l > hi ? l - hi : lo - h; /* the distance between the two intervals */
		out->max_step = step > out->max_step ? step : out->max_step;
		out->tight = hi - lo < out->tight ? hi - lo : out->tight;
		out->mid0 = out->steps == 1 ? lo / 2 + hi / 2 : out->mid0;
		lo = l, hi = h, len = 1;
	}
	out->tight = hi - lo < out->tight ? hi - lo : out->tight;
	out->mid0 = out->steps == 0 ? lo / 2 + hi / 2 : out->mid0;
	return 0;
}

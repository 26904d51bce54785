/* SPDX-License-Identifier: MIT */
#include "gaps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
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

int gc_gap_stats(const struct gc_gaps *g, struct gc_gap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (g->n == 0)
		return -EINVAL;
	st->n = g->n;
	st->p50 = gc_stat_median(g->v, g->n);
	st->p99 = gc_stat_percentile(g->v, g->n, 99);
	st->max = gc_stat_max(g->v, g->n);
	for (size_t i = 0; i < g->n; i++)
		st->bubbles += g->v[i] > GC_GAP_BUBBLE_FACTOR * st->p50;
	st->span_us = g->runs ? gc_stat_mean(g->span_us, g->runs) : 0;
	return 0;
}

size_t gc_gap_subsample_step(size_t n, size_t max, size_t *count)
{
	size_t step = max && n > max ? (n + max - 1) / max : 1;

	*count = n ? (n - 1) / step + 1 : 0;
	return step;
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

struct gc_gap_stats gc_gaps_report(const struct gc_gaps *g, const char *mode, const char *shape)
{
	struct gc_gap_stats st;
	size_t nsub, step = gc_gap_subsample_step(g->n, GC_GAP_METRIC_SAMPLES, &nsub);
	double *sub = malloc((nsub ? nsub : 1) * sizeof(*sub));
	char name[160];

	gc_assert_f(gc_gap_stats(g, &st) == 0, "%s.%s: no gaps recorded", mode, shape);
	gc_assert_f(sub, "out of memory for %zu gap samples", nsub);
	for (size_t i = 0, k = 0; k < nsub; i += step)
		sub[k++] = g->v[i];
	snprintf(name, sizeof(name), "gap.%s.%s", mode, shape);
	gc_metric(name, "ns", GC_LOWER_IS_BETTER, sub, nsub);
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
	free(sub);
	return st;
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

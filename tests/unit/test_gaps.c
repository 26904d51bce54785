// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/gaps: the shapes table, gap statistics and the bubble
 * rule (percentiles as NumPy's default "linear" method), the metric
 * subsample.
 */
#include <errno.h>
#include <math.h>

#include "core.h"
#include "gaps.h"

#define assert_near(a, b) gc_assert_f(fabs((a) - (b)) < 1e-9, "%s = %.12g, want %.12g", #a, \
				      (double)(a), (double)(b))

/* The shapes the issue names, with the dispatches each makes (wide: root + branches + join). */
static void test_shapes(void *fx)
{
	(void)fx;
	gc_assert_cmpuint(gc_shape_find("chain8192")->kernels, ==, 8192);
	gc_assert_cmpuint(gc_shape_find("wide16")->kernels, ==, 18);
	gc_assert_cmpuint(gc_shape_find("wide256")->kind, ==, GC_SHAPE_WIDE);
	gc_assert_cmpuint(gc_shape_find("mixed")->kind, ==, GC_SHAPE_MIXED);
	gc_assert(gc_shape_find("chain3") == NULL);
	gc_assert(gc_shape_find("") == NULL);
}

static void fill(struct gc_gaps *g, const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gc_assert_ok(gc_gaps_add(g, v[i]));
}

/* 99 gaps of 1 us and one of 5 us: p50 1000, p99 1040 (linear), max 5000, one bubble. */
static void test_stats(void *fx)
{
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	(void)fx;
	for (int i = 0; i < 99; i++)
		gc_assert_ok(gc_gaps_add(&g, 1000));
	gc_assert_ok(gc_gaps_add(&g, 5000));
	gc_assert_ok(gc_gaps_add_span(&g, 10));
	gc_assert_ok(gc_gaps_add_span(&g, 20));
	gc_assert_ok(gc_gap_stats(&g, &st));
	assert_near(st.p50, 1000);
	assert_near(st.p99, 1040);
	assert_near(st.max, 5000);
	assert_near(st.span_us, 15);
	gc_assert_cmpuint(st.bubbles, ==, 1);
	gc_assert_cmpuint(st.n, ==, 100);
	gc_gaps_free(&g);
	gc_assert(g.v == NULL && g.n == 0 && g.runs == 0);
}

/* A gap of exactly 4 x p50 is not a bubble; one above it is. */
static void test_bubble_edge(void *fx)
{
	const double v[] = { 100, 100, 100, 400, 401 };
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	(void)fx;
	fill(&g, v, 5);
	gc_assert_ok(gc_gap_stats(&g, &st));
	assert_near(st.p50, 100);
	gc_assert_cmpuint(st.bubbles, ==, 1);
	assert_near(st.span_us, 0); /* no runs */
	gc_gaps_free(&g);
}

static void test_empty(void *fx)
{
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	(void)fx;
	gc_assert_errno(gc_gap_stats(&g, &st), EINVAL);
}

/* The subsample never exceeds its maximum and covers the whole range evenly. */
static void test_subsample(void *fx)
{
	size_t count, step;

	(void)fx;
	step = gc_gap_subsample_step(0, 10000, &count);
	gc_assert_cmpuint(count, ==, 0);
	step = gc_gap_subsample_step(5, 10000, &count);
	gc_assert_cmpuint(step, ==, 1);
	gc_assert_cmpuint(count, ==, 5);
	step = gc_gap_subsample_step(25000, 10000, &count);
	gc_assert_cmpuint(step, ==, 3);
	gc_assert_cmpuint(count, ==, 8334);
	step = gc_gap_subsample_step(8191000, 10000, &count);
	gc_assert_cmpuint(count, <=, 10000);
	gc_assert_cmpuint((count - 1) * step, <, 8191000);
	step = gc_gap_subsample_step(20000, 10000, &count);
	gc_assert_cmpuint(step, ==, 2);
	gc_assert_cmpuint(count, ==, 10000);
}

static const struct gc_subtest subtests[] = {
	{ "shapes", test_shapes, "the shapes table" },
	{ "stats", test_stats, "p50, p99, max, bubbles, mean span" },
	{ "bubble-edge", test_bubble_edge, "the bubble rule is strictly above 4 x p50" },
	{ "empty", test_empty, "no gap: -EINVAL" },
	{ "subsample", test_subsample, "the metric subsample: at most the maximum, even" },
	{ 0 }
};

GC_MAIN(.name = "unit_gaps", .subtests = subtests)

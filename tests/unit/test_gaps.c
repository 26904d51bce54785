// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/gaps: the shapes table, gap statistics and the bubble
 * rule (percentiles as NumPy's default "linear" method), the metric
 * subsample, the bracketing of profiler records against stamps.
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

/* ------------------------------------------------------------ bracketing */

static const struct gc_bracket_rule rule = { .slack_ns = 100, .ppm = 50, .min_seg = 16,
					     .max_steps = 2 };

/*
 * n dispatches of 1 us, 2 us apart on the device clock from 1e9 ns; each
 * record is the kernel widened by 400 ns on both sides, on a profiler clock
 * 1 ms ahead (D = -1,000,000), plus step_ns from dispatch step_at on.
 * Stored in reverse order: the check sorts them.
 */
static void make(struct gc_bracket_rec *v, size_t n, size_t step_at, int64_t step_ns)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t s = 1000000000ull + 2000 * i;
		int64_t d = 1000000 + (i >= step_at ? step_ns : 0);

		v[n - 1 - i] = (struct gc_bracket_rec){ s, s + 1000, s + d - 400, s + 1000 + d + 400,
							(unsigned)i };
	}
}

/* One offset fits all: no step, D = -1 ms in the middle of an 800 ns wide interval. */
static void test_bracket_steady(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 64, 0);
	gc_assert_ok(gc_bracket_check(v, 64, &rule, &b));
	gc_assert_cmpuint(b.steps, ==, 0);
	gc_assert_cmpint(b.tight, ==, 800);
	gc_assert_cmpint(b.mid0, ==, -1000000);
	gc_assert_cmpuint(v[0].tag, ==, 0); /* sorted by stamp start */
	gc_assert_ok(gc_bracket_check(v, 0, &rule, &b));
}

/* A 2.2 us step after 32 of 64 records: accepted, measured. */
static void test_bracket_step(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 32, 2200);
	gc_assert_ok(gc_bracket_check(v, 64, &rule, &b));
	gc_assert_cmpuint(b.steps, ==, 1);
	gc_assert_cmpint(b.max_step, ==, 2200 - 800);
	gc_assert_cmpint(b.mid0, ==, -1000000);
}

/* One record mistimed by 2.2 us in the middle: a segment of one, fails naming it. */
static void test_bracket_outlier(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 64, 0);
	for (size_t i = 0; i < 64; i++)
		if (v[i].tag == 40)
			v[i].rec_start += 2200, v[i].rec_end += 2200;
	gc_assert_cmpint(gc_bracket_check(v, 64, &rule, &b), ==, -EINVAL);
	gc_assert_cmpuint(v[b.bad].tag, ==, 41); /* 40 starts a segment, 41 cannot join it */
}

/* A step 4 records before the end cannot be told from mistimed records: fails. */
static void test_bracket_late_step(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 60, 2200);
	gc_assert_cmpint(gc_bracket_check(v, 64, &rule, &b), ==, -EINVAL);
	gc_assert_cmpuint(v[b.bad].tag, ==, 60);
}

/* A record shorter than its kernel's stamps brackets nothing, whatever the offset. */
static void test_bracket_short(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 64, 0);
	for (size_t i = 0; i < 64; i++)
		if (v[i].tag == 7)
			v[i].rec_end = v[i].rec_start + 500;
	gc_assert_cmpint(gc_bracket_check(v, 64, &rule, &b), ==, -EINVAL);
	gc_assert_cmpuint(v[b.bad].tag, ==, 7);
}

/* Three steps in one walk exceed max_steps. */
static void test_bracket_many_steps(void *fx)
{
	struct gc_bracket_rec v[128];
	struct gc_bracket b;

	(void)fx;
	make(v, 128, 128, 0);
	for (size_t i = 0; i < 128; i++) /* +2.2 us per 32 records: steps at 32, 64, 96 */
		v[i].rec_start += 2200 * (v[i].tag / 32), v[i].rec_end += 2200 * (v[i].tag / 32);
	gc_assert_cmpint(gc_bracket_check(v, 128, &rule, &b), ==, -EINVAL);
	gc_assert_cmpuint(v[b.bad].tag, ==, 96);
	gc_assert_cmpuint(b.steps, ==, 3);
}

static const struct gc_subtest subtests[] = {
	{ "shapes", test_shapes, "the shapes table" },
	{ "stats", test_stats, "p50, p99, max, bubbles, mean span" },
	{ "bubble-edge", test_bubble_edge, "the bubble rule is strictly above 4 x p50" },
	{ "empty", test_empty, "no gap: -EINVAL" },
	{ "subsample", test_subsample, "the metric subsample: at most the maximum, even" },
	{ "bracket-steady", test_bracket_steady, "records bracket their stamps under one offset" },
	{ "bracket-step", test_bracket_step, "a clock step between two long runs is accepted" },
	{ "bracket-outlier", test_bracket_outlier, "one mistimed record fails" },
	{ "bracket-late-step", test_bracket_late_step, "a step too near the end fails" },
	{ "bracket-short", test_bracket_short, "a record shorter than its stamps fails" },
	{ "bracket-many-steps", test_bracket_many_steps, "more than max_steps steps fail" },
	{ 0 }
};

GC_MAIN(.name = "unit_gaps", .subtests = subtests)

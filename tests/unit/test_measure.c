// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/measure: statistics on known vectors (expected values
 * are NumPy's: np.percentile(v, p) with the default `linear` method), the
 * same percentiles over a histogram, sample sets and clocks.
 */
#include <math.h>
#include <string.h>

#include "core.h"
#include "measure.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Exact for every expected value below: all are sums of powers of two. */
#define assert_stat(expr, want) gc_assert_cmpdouble(expr, ==, want)
#define assert_nan(expr) gc_assert_f(isnan(expr), "%s = %g, want NAN", #expr, (double)(expr))

static void test_median(void *fx)
{
	const double odd[] = { 5, 3, 9, 1, 7 };
	const double even[] = { 4, 1, 3, 2 };
	const double one[] = { 7.5 };
	const double dup[] = { 2, 2, 2, 1 };

	(void)fx;
	assert_stat(gc_stat_median(odd, N(odd)), 5);
	assert_stat(gc_stat_median(even, N(even)), 2.5);
	assert_stat(gc_stat_median(one, 1), 7.5);
	assert_stat(gc_stat_median(dup, N(dup)), 2);
	assert_nan(gc_stat_median(odd, 0));
}

static void test_percentile(void *fx)
{
	const double v[] = { 40, 10, 30, 20 };
	const double one[] = { -3 };

	(void)fx;
	assert_stat(gc_stat_percentile(v, N(v), 0), 10);
	assert_stat(gc_stat_percentile(v, N(v), 100), 40);
	assert_stat(gc_stat_percentile(v, N(v), 25), 17.5);  /* rank 0.75 */
	assert_stat(gc_stat_percentile(v, N(v), 50), 25);    /* rank 1.5 */
	assert_stat(gc_stat_percentile(v, N(v), 75), 32.5);  /* rank 2.25 */
	assert_stat(gc_stat_percentile(one, 1, 0), -3);
	assert_stat(gc_stat_percentile(one, 1, 37), -3);
	assert_stat(gc_stat_percentile(one, 1, 100), -3);
}

static void test_percentile_invalid(void *fx)
{
	const double v[] = { 1, 2, 3 };
	const double with_nan[] = { 1, NAN, 3 };

	(void)fx;
	assert_nan(gc_stat_percentile(v, 0, 50));
	assert_nan(gc_stat_percentile(NULL, 0, 50));
	assert_nan(gc_stat_percentile(v, N(v), -0.5));
	assert_nan(gc_stat_percentile(v, N(v), 100.5));
	assert_nan(gc_stat_percentile(v, N(v), NAN));
	assert_nan(gc_stat_percentile(with_nan, N(with_nan), 50));
	assert_nan(gc_stat_mad(with_nan, N(with_nan)));
}

static void test_mad(void *fx)
{
	/* median 2, |deviations| {1, 1, 0, 0, 2, 4, 7} -> median 1 */
	const double odd[] = { 1, 1, 2, 2, 4, 6, 9 };
	/* median 2.5, |deviations| {1.5, 0.5, 0.5, 1.5} -> 1 */
	const double even[] = { 4, 1, 3, 2 };
	const double one[] = { 42 };
	const double same[] = { 3, 3, 3 };

	(void)fx;
	assert_stat(gc_stat_mad(odd, N(odd)), 1);
	assert_stat(gc_stat_mad(even, N(even)), 1);
	assert_stat(gc_stat_mad(one, 1), 0);
	assert_stat(gc_stat_mad(same, N(same)), 0);
	assert_nan(gc_stat_mad(odd, 0));
}

static void test_mean_min_max(void *fx)
{
	const double v[] = { 2, -1.5, 8, 0.5 };

	(void)fx;
	assert_stat(gc_stat_mean(v, N(v)), 2.25);
	assert_stat(gc_stat_min(v, N(v)), -1.5);
	assert_stat(gc_stat_max(v, N(v)), 8);
	assert_stat(gc_stat_min(v, 1), 2);
	assert_stat(gc_stat_max(v, 1), 2);
	assert_nan(gc_stat_mean(v, 0));
	assert_nan(gc_stat_min(v, 0));
	assert_nan(gc_stat_max(v, 0));
}

static void test_input_untouched(void *fx)
{
	const double orig[] = { 9, -2, 7, 7, 0.25, 100, 3 };
	double v[N(orig)];

	(void)fx;
	memcpy(v, orig, sizeof(v));
	gc_stat_median(v, N(v));
	gc_stat_percentile(v, N(v), 90);
	gc_stat_mad(v, N(v));
	gc_stat_mean(v, N(v));
	gc_stat_min(v, N(v));
	gc_stat_max(v, N(v));
	gc_assert_f(memcmp(v, orig, sizeof(v)) == 0, "a statistic reordered its input");
}

/*
 * A histogram's percentile is the expanded array's to the bit: every p in
 * steps of 0.125 over a lopsided histogram (a heavy head, a thin tail of
 * non-integers), and over a single value.
 */
static void test_hist_percentile(void *fx)
{
	const double values[] = { 768, 800, 832, 864.25, 1000.125, 5000.5 };
	const uint64_t counts[] = { 1, 37, 5, 2, 1, 3 };
	const double one[] = { 42 };
	const uint64_t seven[] = { 7 };
	double expanded[49];
	size_t n = 0;

	(void)fx;
	for (size_t i = N(values); i-- > 0;) /* descending: the sort matters */
		for (uint64_t c = 0; c < counts[i]; c++)
			expanded[n++] = values[i];
	gc_assert_eq_uint(n, N(expanded));
	for (double p = 0; p <= 100; p += 0.125)
		gc_assert_f(gc_stat_hist_percentile(values, counts, N(values), p) ==
			    gc_stat_percentile(expanded, n, p), "p%g: %.17g, expanded %.17g", p,
			    gc_stat_hist_percentile(values, counts, N(values), p),
			    gc_stat_percentile(expanded, n, p));
	assert_stat(gc_stat_hist_percentile(values, counts, N(values), 50), 800);
	assert_stat(gc_stat_hist_percentile(one, seven, 1, 99), 42);
}

/* No value, p outside [0, 100], a count of 0, values not strictly ascending or NaN: NAN. */
static void test_hist_percentile_invalid(void *fx)
{
	const double v[] = { 1, 2, 3 }, down[] = { 1, 3, 2 }, twice[] = { 1, 2, 2 };
	const double with_nan[] = { 1, NAN, 3 };
	const uint64_t c[] = { 1, 2, 3 }, zero[] = { 1, 0, 3 };
	const uint64_t huge[] = { UINT64_MAX, 1, 1 };

	(void)fx;
	assert_nan(gc_stat_hist_percentile(v, c, 0, 50));
	assert_nan(gc_stat_hist_percentile(v, c, N(v), -0.5));
	assert_nan(gc_stat_hist_percentile(v, c, N(v), NAN));
	assert_nan(gc_stat_hist_percentile(v, zero, N(v), 50));
	assert_nan(gc_stat_hist_percentile(down, c, N(v), 50));
	assert_nan(gc_stat_hist_percentile(twice, c, N(v), 50));
	assert_nan(gc_stat_hist_percentile(with_nan, c, N(v), 50));
	assert_nan(gc_stat_hist_percentile(v, huge, N(v), 50));
}

static void test_samples(void *fx)
{
	struct gc_samples s;

	(void)fx;
	gc_samples_init(&s);
	gc_assert_eq_uint(s.n, 0);
	for (int i = 0; i < 1000; i++)
		gc_assert_ok(gc_samples_add(&s, i * 0.5));
	gc_assert_eq_uint(s.n, 1000);
	gc_assert_cmpuint(s.cap, >=, 1000);
	for (int i = 0; i < 1000; i++)
		assert_stat(s.v[i], i * 0.5);
	assert_stat(gc_stat_median(s.v, s.n), 249.75);
	gc_samples_free(&s);
	gc_assert(s.v == NULL);
	gc_assert_eq_uint(s.n, 0);
	gc_assert_eq_uint(s.cap, 0);
	gc_samples_free(&s); /* freeing twice is harmless */
}

static void test_clocks(void *fx)
{
	uint64_t a = gc_now_ns(), b = gc_now_ns();
	uint64_t ra = gc_now_raw_ns(), rb = gc_now_raw_ns();

	(void)fx;
	gc_assert_cmpuint(a, >, 0);
	gc_assert_cmpuint(b, >=, a);
	gc_assert_cmpuint(ra, >, 0);
	gc_assert_cmpuint(rb, >=, ra);
}

static const struct gc_subtest subtests[] = {
	{ "median", test_median, "median of odd, even, single and duplicate vectors; n=0 is NAN" },
	{ "percentile", test_percentile, "linear interpolation between closest ranks, p=0/100" },
	{ "percentile-invalid", test_percentile_invalid, "n=0, p outside [0,100], NaN -> NAN" },
	{ "mad", test_mad, "raw median absolute deviation" },
	{ "mean-min-max", test_mean_min_max, "mean, min, max; n=0 is NAN" },
	{ "input-untouched", test_input_untouched, "statistics work on a copy" },
	{ "hist-percentile", test_hist_percentile, "over a histogram: the expanded array's, exactly" },
	{ "hist-percentile-invalid", test_hist_percentile_invalid,
	  "no value, bad p, a zero count, values not ascending, NaN, overflow -> NAN" },
	{ "samples", test_samples, "sample set growth and free" },
	{ "clocks", test_clocks, "monotonic clocks do not go back" },
	{ 0 }
};

GC_MAIN(.name = "unit_measure", .description = "lib/measure statistics", .subtests = subtests)

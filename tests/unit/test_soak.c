// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/soak's pure parts: the level's names, the Theil-Sen
 * slope and the fit's window and verdicts. The soak loop itself is checked
 * through tests/selftest/soak.c's subjects (unit_core and the runner's tests).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "soak.h"

static void test_levels(void *fx)
{
	enum gc_level l = GC_LEVEL_LONG;

	(void)fx;
	gc_assert_ok(gc_level_parse(NULL, &l));
	gc_assert_eq_int(l, GC_LEVEL_STANDARD);
	gc_assert_ok(gc_level_parse("quick", &l));
	gc_assert_eq_int(l, GC_LEVEL_QUICK);
	gc_assert_ok(gc_level_parse("long", &l));
	gc_assert_eq_int(l, GC_LEVEL_LONG);
	gc_assert_errno(gc_level_parse("Long", &l), EINVAL);
	gc_assert_errno(gc_level_parse("extended", &l), EINVAL);
	gc_assert_eq_str(gc_level_name(GC_LEVEL_QUICK), "quick");
	gc_assert_eq_str(gc_level_name(GC_LEVEL_STANDARD), "standard");
}

/* A line's slope exactly; one wild point does not move it (a least-squares fit would). */
static void test_theil_sen(void *fx)
{
	double x[20], y[20];

	(void)fx;
	for (int i = 0; i < 20; i++)
		x[i] = i * 10, y[i] = 3 + 0.5 * x[i];
	gc_assert_cmpdouble(fabs(gc_theil_sen(x, y, 20) - 0.5), <, 1e-12);
	y[7] = 1e6;
	gc_assert_cmpdouble(fabs(gc_theil_sen(x, y, 20) - 0.5), <, 0.05);
	gc_assert(isnan(gc_theil_sen(x, y, 1)));
	x[1] = x[0];
	gc_assert(isnan(gc_theil_sen(x, y, 2))); /* no pair with x_i < x_j */
}

static const struct gc_soak_limit rss_like = { 0.25, 4096, NAN };
static const struct gc_soak_limit latency_like = { NAN, NAN, 0.5 };

/*
 * 1 KiB a cycle over 10000 cycles grows; flat with noise does not; a step in
 * the warm-up is left out; growth that stopped in the window's first half is
 * not growth with the cycles.
 */
static void test_fit_verdicts(void *fx)
{
	double x[100], y[100];
	struct gc_soak_fit f;

	(void)fx;
	for (int i = 0; i < 100; i++)
		x[i] = i * 100, y[i] = 50000 + x[i] * 1.0 + (i % 3) * 8;
	f = gc_soak_fit(x, y, 100, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_GROWS);
	gc_assert_cmpdouble(fabs(f.slope - 1.0), <, 0.01);
	gc_assert_cmpdouble(f.from, ==, 2500);
	gc_assert_cmpdouble(f.to, ==, 9900);
	gc_assert_eq_uint(f.n, 75);

	for (int i = 0; i < 100; i++) /* a 100 MiB step during the warm-up, flat after */
		y[i] = (i < 20 ? 50000 : 150000) + (i % 5) * 4;
	f = gc_soak_fit(x, y, 100, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
	gc_assert_cmpdouble(fabs(f.slope), <, 0.01);

	for (int i = 0; i < 100; i++) /* 1 KiB a cycle until cycle 7000, flat after: a pool filled */
		y[i] = 50000 + (i < 70 ? i : 70) * 100.0 + (i % 5) * 4;
	f = gc_soak_fit(x, y, 100, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
	gc_assert_cmpdouble(f.growth, >, 4096); /* over the limits across the window... */
	gc_assert_cmpdouble(f.slope, >, 0.25);
	gc_assert_cmpdouble(fabs(f.half_slope[1]), <, 0.05); /* ...but flat in its second half */

	for (int i = 0; i < 100; i++) /* 0.3 KiB a cycle but 22 KiB in all: under the total */
		x[i] = i, y[i] = 50000 + i * 0.3;
	f = gc_soak_fit(x, y, 100, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
}

static void test_fit_latency(void *fx)
{
	double x[40], y[40];
	struct gc_soak_fit f;

	(void)fx;
	for (int i = 0; i < 40; i++) /* 10 us to 30 us: grows by far more than half */
		x[i] = i * 50, y[i] = 10 + i * 0.5;
	f = gc_soak_fit(x, y, 40, 0.25, &latency_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_GROWS);
	gc_assert_cmpdouble(f.relative, >, 0.5);
	for (int i = 0; i < 40; i++) /* noisy but flat */
		y[i] = 10 + ((i * 7) % 5) * 0.4;
	f = gc_soak_fit(x, y, 40, 0.25, &latency_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
	for (int i = 0; i < 40; i++) /* getting faster is no drift */
		y[i] = 30 - i * 0.5;
	f = gc_soak_fit(x, y, 40, 0.25, &latency_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
}

/* Fewer than GC_SOAK_MIN_FIT samples in the window, or NaN ones: no verdict. */
static void test_fit_few(void *fx)
{
	double x[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, y[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct gc_soak_fit f;

	(void)fx;
	f = gc_soak_fit(x, y, 8, 0.25, &rss_like); /* window 2..7: 6 samples */
	gc_assert_eq_uint(f.n, 6);
	gc_assert(f.verdict != GC_SOAK_FEW_SAMPLES);
	y[5] = NAN;
	f = gc_soak_fit(x, y, 8, 0.25, &rss_like);
	gc_assert_eq_uint(f.n, 5);
	gc_assert_eq_int(f.verdict, GC_SOAK_FEW_SAMPLES);
	gc_assert(isnan(f.slope));
	f = gc_soak_fit(x, y, 0, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_FEW_SAMPLES);
}

static const struct gc_subtest subtests[] = {
	{ "levels", test_levels, "quick, standard (also unset), long; nothing else" },
	{ "theil-sen", test_theil_sen, "a line's slope, robust to an outlier" },
	{ "fit-verdicts", test_fit_verdicts, "a leak grows; a warm-up step and a small total do not" },
	{ "fit-latency", test_fit_latency, "per-cycle time growing by more than half its median" },
	{ "fit-few", test_fit_few, "too few samples give no verdict" },
	{ 0 }
};

GC_MAIN(.name = "unit_soak", .subtests = subtests)

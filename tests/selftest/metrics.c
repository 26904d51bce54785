// SPDX-License-Identifier: MIT
/* Subtests that record metrics, well-formed and not. */
#include "core.h"

#include <math.h>

static void metrics(void *fx)
{
	static const double latency[] = { 1200, 1100, 1150, 1300, 1125 };
	static const double bandwidth[] = { 810.5, 799.25, 805 };

	(void)fx;
	gc_metric("latency", "ns", GC_LOWER_IS_BETTER, latency, 5);
	gc_metric("bandwidth", "MB/s", GC_HIGHER_IS_BETTER, bandwidth, 3);
}

static void bad_name(void *fx)
{
	static const double v[] = { 1 };

	(void)fx;
	gc_metric("no spaces allowed", "ns", GC_LOWER_IS_BETTER, v, 1);
}

static void not_finite(void *fx)
{
	double v[] = { 1, NAN };

	(void)fx;
	gc_metric("nan", "ns", GC_LOWER_IS_BETTER, v, 2);
}

static const struct gc_subtest subtests[] = {
	{ "metrics", metrics, "two sample sets: latency (lower) and bandwidth (higher)" },
	{ "bad-name", bad_name, "a metric name with spaces: fails" },
	{ "not-finite", not_finite, "a NaN sample: fails" },
	{ 0 }
};

GC_MAIN(.name = "selftest_metrics", .subtests = subtests)

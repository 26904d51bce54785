// SPDX-License-Identifier: MIT
/* Subtests that record metrics, well-formed and not. */
#include "core.h"
#include "measure.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

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

/*
 * spin: a fixed CPU workload (a dependent 64-bit LCG chain: one multiply-add
 * per iteration, nothing to vectorise or fold) timed SPIN_SAMPLES times, the
 * work multiplied by $GPUCONFORM_SELFTEST_SLOWDOWN (default 1): the runner's
 * baseline comparison gets a slowdown it can be asked to detect
 * (bench/detection_power.py). About 20 ms a sample, 1 s a run, on a 3 GHz x86.
 */
#define SPIN_SAMPLES 50
#define SPIN_ITERATIONS 18000000.0
#define SLOWDOWN_ENV "GPUCONFORM_SELFTEST_SLOWDOWN"

static uint64_t spin_work(uint64_t iterations, uint64_t x)
{
	for (uint64_t i = 0; i < iterations; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x)); /* keep every iteration */
	}
	return x;
}

static void spin(void *fx)
{
	static volatile uint64_t sink;
	const char *env = getenv(SLOWDOWN_ENV);
	double slowdown = 1.0, samples[SPIN_SAMPLES];
	uint64_t iterations;

	(void)fx;
	if (env && *env) {
		char *end;

		slowdown = strtod(env, &end);
		if (*end || !isfinite(slowdown) || slowdown <= 0 || slowdown > 1000)
			gc_fail("$%s=\"%s\": not a factor in (0, 1000]", SLOWDOWN_ENV, env);
	}
	iterations = (uint64_t)llround(SPIN_ITERATIONS * slowdown);
	sink = spin_work(iterations, sink); /* warm-up: caches, clocks, page faults */
	for (int i = 0; i < SPIN_SAMPLES; i++) {
		uint64_t t0 = gc_now_raw_ns();

		sink = spin_work(iterations, sink);
		samples[i] = (double)(gc_now_raw_ns() - t0);
	}
	gc_info("spin: %d samples of %llu iterations (slowdown %g)", SPIN_SAMPLES,
		(unsigned long long)iterations, slowdown);
	gc_metric("spin", "ns", GC_LOWER_IS_BETTER, samples, SPIN_SAMPLES);
}

static const struct gc_subtest subtests[] = {
	{ "metrics", metrics, "two sample sets: latency (lower) and bandwidth (higher)" },
	{ "bad-name", bad_name, "a metric name with spaces: fails" },
	{ "not-finite", not_finite, "a NaN sample: fails" },
	{ "spin", spin, "a fixed CPU workload timed 50 times; $GPUCONFORM_SELFTEST_SLOWDOWN scales it" },
	{ 0 }
};

GC_MAIN(.name = "selftest_metrics", .subtests = subtests)

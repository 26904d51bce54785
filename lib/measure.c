// SPDX-License-Identifier: MIT
/* Clocks and sample sets: see measure.h. */
#include "measure.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	/* Cannot fail for a valid clock id on Linux >= 2.6.28. */
	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t gc_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t gc_now_raw_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC_RAW);
}

void gc_samples_init(struct gc_samples *s)
{
	s->v = NULL;
	s->n = 0;
	s->cap = 0;
}

int gc_samples_add(struct gc_samples *s, double x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		double *v;

		if (cap < s->cap || cap > SIZE_MAX / sizeof(*v))
			return -ENOMEM;
		v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

void gc_samples_free(struct gc_samples *s)
{
	free(s->v);
	gc_samples_init(s);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static bool any_nan(const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (isnan(v[i]))
			return true;
	return false;
}

/* A sorted copy of v, or NULL (n == 0, a NaN in v, or no memory). */
static double *sorted_copy(const double *v, size_t n)
{
	double *s;

	if (n == 0 || n > SIZE_MAX / sizeof(*s) || any_nan(v, n))
		return NULL;
	s = malloc(n * sizeof(*s));
	if (!s)
		return NULL;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return s;
}

/* NumPy `linear`: rank h = (n - 1) * p / 100, interpolate s[floor h] .. s[floor h + 1]. */
static double sorted_percentile(const double *s, size_t n, double p)
{
	double h = (double)(n - 1) * p / 100.0;
	size_t lo = (size_t)floor(h);
	double frac = h - (double)lo;

	if (lo >= n - 1)
		return s[n - 1];
	if (frac == 0.0)
		return s[lo];
	return s[lo] + frac * (s[lo + 1] - s[lo]);
}

/*
 * NAN when n == 0, p is outside [0, 100] or NaN, a value is NaN, or the
 * sorted copy cannot be allocated.
 */
double gc_stat_percentile(const double *v, size_t n, double p)
{
	double *s, r;

	if (!(p >= 0.0 && p <= 100.0))
		return NAN;
	s = sorted_copy(v, n);
	if (!s)
		return NAN;
	r = sorted_percentile(s, n, p);
	free(s);
	return r;
}

double gc_stat_median(const double *v, size_t n)
{
	return gc_stat_percentile(v, n, 50.0);
}

double gc_stat_mad(const double *v, size_t n)
{
	double med = gc_stat_median(v, n), r;
	double *dev;

	if (isnan(med))
		return NAN;
	dev = malloc(n * sizeof(*dev));
	if (!dev)
		return NAN;
	for (size_t i = 0; i < n; i++)
		dev[i] = fabs(v[i] - med);
	r = gc_stat_median(dev, n);
	free(dev);
	return r;
}

double gc_stat_mean(const double *v, size_t n)
{
	double sum = 0.0;

	if (n == 0)
		return NAN;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	return sum / (double)n;
}

/* The smallest (or with max, the largest) of v[0..n); a NaN wins; NaN when n == 0. */
static double extreme(const double *v, size_t n, bool max)
{
	double m;

	if (n == 0)
		return NAN;
	m = v[0];
	for (size_t i = 1; i < n; i++)
		if ((max ? v[i] > m : v[i] < m) || isnan(v[i]))
			m = v[i];
	return m;
}

double gc_stat_min(const double *v, size_t n)
{
	return extreme(v, n, false);
}

double gc_stat_max(const double *v, size_t n)
{
	return extreme(v, n, true);
}

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

/* NumPy `linear` over n sorted values: rank h = (n - 1) * p / 100; floor h into *lo. */
static double rank_of(uint64_t n, double p, uint64_t *lo)
{
	double h = (double)(n - 1) * p / 100.0;

	*lo = (uint64_t)floor(h);
	return h - (double)*lo;
}

/* The value frac of the way from a (the one at rank floor h) to b (the next). */
static double interpolate(double a, double b, double frac)
{
	if (frac == 0.0)
		return a;
	return a + frac * (b - a);
}

/* s sorted: interpolate s[floor h] .. s[floor h + 1]. */
static double sorted_percentile(const double *s, size_t n, double p)
{
	uint64_t lo;
	double frac = rank_of(n, p, &lo);

	if (lo >= n - 1)
		return s[n - 1];
	return interpolate(s[lo], s[lo + 1], frac);
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

/*
 * The sum of the counts, or 0 when one is 0, a value is NaN or not above the
 * one before, or the sum overflows.
 */
static uint64_t hist_total(const double *values, const uint64_t *counts, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		if (!counts[i] || counts[i] > UINT64_MAX - total || isnan(values[i]) ||
		    (i && !(values[i] > values[i - 1])))
			return 0;
		total += counts[i];
	}
	return total;
}

/* The value at index k of the histogram's expanded (sorted) array; k < its total. */
static double hist_at(const double *values, const uint64_t *counts, uint64_t k)
{
	size_t i = 0;

	for (; k >= counts[i]; i++)
		k -= counts[i];
	return values[i];
}

double gc_stat_hist_percentile(const double *values, const uint64_t *counts, size_t n, double p)
{
	uint64_t total, lo;
	double frac;

	if (!(p >= 0.0 && p <= 100.0))
		return NAN;
	total = hist_total(values, counts, n);
	if (!total)
		return NAN;
	frac = rank_of(total, p, &lo);
	if (lo >= total - 1)
		return values[n - 1];
	return interpolate(hist_at(values, counts, lo), hist_at(values, counts, lo + 1), frac);
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

/* SPDX-License-Identifier: MIT */
/* Clocks and sample sets: the statistics every timing metric goes through. */
#ifndef GPUCONFORM_MEASURE_H
#define GPUCONFORM_MEASURE_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t gc_now_ns(void);
/* CLOCK_MONOTONIC_RAW in nanoseconds (no NTP slewing; for short intervals). */
uint64_t gc_now_raw_ns(void);

struct gc_samples {
	double *v;
	size_t n;
	size_t cap;
};

void gc_samples_init(struct gc_samples *s);
/* Appends x; 0 or -ENOMEM. */
int gc_samples_add(struct gc_samples *s, double x);
void gc_samples_free(struct gc_samples *s);

/*
 * Statistics over n values (the input is not modified; n == 0 gives NAN).
 * Percentiles interpolate linearly between closest ranks (NumPy's default,
 * `linear`): p in [0, 100]. MAD is the raw median absolute deviation
 * (not scaled by 1.4826).
 */
double gc_stat_median(const double *v, size_t n);
double gc_stat_percentile(const double *v, size_t n, double p);
double gc_stat_mad(const double *v, size_t n);
double gc_stat_mean(const double *v, size_t n);
double gc_stat_min(const double *v, size_t n);
double gc_stat_max(const double *v, size_t n);

/*
 * gc_stat_percentile() over a histogram: values[0..n) strictly ascending,
 * values[i] seen counts[i] >= 1 times. The very number the expanded array
 * (each value repeated its count of times) gives, without expanding it. NAN
 * when n == 0, p is outside [0, 100] or NaN, a value is NaN or not above the
 * one before, a count is 0, or the counts sum past UINT64_MAX.
 */
double gc_stat_hist_percentile(const double *values, const uint64_t *counts, size_t n, double p);

#endif

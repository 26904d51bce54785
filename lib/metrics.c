// SPDX-License-Identifier: MIT
/*
 * Metrics: named sample sets, printed for humans and appended as one JSON
 * line each to $GPUCONFORM_METRICS_FILE, an object of these members in this
 * order: test (the binary, such as `host_io`), subtest (`throughput`),
 * dynamic (the dynamic subtest, or null), name (`direct-read-16MiB`), unit
 * (`MB/s`) and better (`higher` or `lower`), each a JSON string, then
 * samples (an array of numbers: [812.5, ...]). A histogram (gc_metric_hist)
 * adds one member after samples: counts, an array of as many positive
 * integers, counts[i] the times samples[i] occurred; its samples are then
 * the distinct values, strictly ascending. A plain metric has no counts.
 * Numbers are written with %.17g, counts as integers (no decimal point).
 */
#include "core.h"
#include "core_private.h"
#include "measure.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool metric_name_ok(const char *name)
{
	if (!name || !*name)
		return false;
	for (const char *p = name; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && !strchr("._-", *p))
			return false;
	return true;
}

static const char *better_word(enum gc_better better)
{
	return better == GC_HIGHER_IS_BETTER ? "higher" : "lower";
}

void gc__json_string(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_where(FILE *f)
{
	fputs("{\"test\":", f);
	gc__json_string(f, gc__test_name());
	fputs(",\"subtest\":", f);
	gc__json_string(f, gc_current_subtest());
	fputs(",\"dynamic\":", f);
	gc__json_string(f, gc_current_dynamic());
}

struct metric_line {
	const char *name, *unit;
	enum gc_better better;
	const double *samples;
	const uint64_t *counts; /* a histogram's, one per sample; NULL for a plain metric */
	size_t n;
};

static void json_counts(FILE *f, const uint64_t *counts, size_t n)
{
	fputs(",\"counts\":[", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", counts[i]);
	fputc(']', f);
}

static void json_line(FILE *f, const void *arg)
{
	const struct metric_line *m = arg;

	fputs(",\"name\":", f);
	gc__json_string(f, m->name);
	fputs(",\"unit\":", f);
	gc__json_string(f, m->unit);
	fprintf(f, ",\"better\":\"%s\",\"samples\":[", better_word(m->better));
	for (size_t i = 0; i < m->n; i++)
		fprintf(f, "%s%.17g", i ? "," : "", m->samples[i]);
	fputc(']', f);
	if (m->counts)
		json_counts(f, m->counts, m->n);
	fputs("}\n", f);
}

/* One write(2) with O_APPEND, so concurrent writers never interleave lines. */
static int append_all(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	int r = 0;

	if (fd < 0)
		return -errno;
	while (len && !r) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno != EINTR)
			r = -errno;
		else if (w > 0)
			buf += w, len -= (size_t)w;
	}
	if (close(fd) && !r)
		r = -errno;
	return r;
}

int gc__metrics_line(const char *path, void (*body)(FILE *f, const void *arg), const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return -errno;
	json_where(f);
	body(f, arg);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	r = append_all(path, buf, len);
	free(buf);
	return r;
}

static void print_metric(const char *name, const char *unit, enum gc_better better,
			 const double *v, size_t n)
{
	gc_info("Metric %s: n=%zu median=%.6g p99=%.6g min=%.6g max=%.6g MAD=%.3g %s "
		"(%s is better)", name, n, gc_stat_median(v, n), gc_stat_percentile(v, n, 99),
		gc_stat_min(v, n), gc_stat_max(v, n), gc_stat_mad(v, n), unit,
		better_word(better));
}

/* As print_metric, over the histogram's expanded array, without its MAD. */
static void print_hist(const struct metric_line *m, uint64_t total)
{
	const double *v = m->samples;
	const uint64_t *c = m->counts;

	gc_info("Metric %s: n=%" PRIu64 " median=%.6g p99=%.6g min=%.6g max=%.6g %s "
		"(%s is better), %zu distinct values", m->name, total,
		gc_stat_hist_percentile(v, c, m->n, 50), gc_stat_hist_percentile(v, c, m->n, 99),
		v[0], v[m->n - 1], m->unit, better_word(m->better), m->n);
}

/* The checks every metric passes: a name of [A-Za-z0-9._-]+, a unit, samples. */
static void check_metric(const char *name, const char *unit, size_t n)
{
	if (!metric_name_ok(name))
		gc_fail("metric name \"%s\" is not [A-Za-z0-9._-]+", name ? name : "(null)");
	if (!unit || !*unit)
		gc_fail("metric %s has no unit", name);
	if (!n)
		gc_fail("metric %s has no samples", name);
}

/* Appends m's line to $GPUCONFORM_METRICS_FILE when it is set. */
static void append_metric(const struct metric_line *m)
{
	const char *path = getenv(GC_METRICS_ENV);
	int r;

	if (!path || !*path)
		return;
	r = gc__metrics_line(path, json_line, m);
	if (r)
		gc_fail("metric %s: cannot append to %s=%s: %s", m->name, GC_METRICS_ENV, path,
			strerror(-r));
}

void gc_metric(const char *name, const char *unit, enum gc_better better,
	       const double *samples, size_t n)
{
	check_metric(name, unit, n);
	for (size_t i = 0; i < n; i++)
		if (!isfinite(samples[i]))
			gc_fail("metric %s: sample %zu is not finite (%g)", name, i, samples[i]);
	print_metric(name, unit, better, samples, n);
	append_metric(&(struct metric_line){ name, unit, better, samples, NULL, n });
}

/* The histogram's total count; fails the subtest on a value or count it refuses. */
static uint64_t check_hist(const char *name, const double *v, const uint64_t *c, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		if (!isfinite(v[i]))
			gc_fail("metric %s: value %zu is not finite (%g)", name, i, v[i]);
		if (i && !(v[i] > v[i - 1]))
			gc_fail("metric %s: value %zu (%.17g) is not above value %zu (%.17g): the "
				"values must be strictly ascending", name, i, v[i], i - 1, v[i - 1]);
		if (!c[i])
			gc_fail("metric %s: value %zu (%.17g) has a count of 0", name, i, v[i]);
		if (c[i] > UINT64_MAX - total)
			gc_fail("metric %s: the counts sum past UINT64_MAX", name);
		total += c[i];
	}
	return total;
}

void gc_metric_hist(const char *name, const char *unit, enum gc_better better,
		    const double *values, const uint64_t *counts, size_t n)
{
	struct metric_line m = { name, unit, better, values, counts, n };
	uint64_t total;

	check_metric(name, unit, n);
	total = check_hist(name, values, counts, n);
	print_hist(&m, total);
	append_metric(&m);
}

// SPDX-License-Identifier: MIT
/*
 * Metrics: named sample sets, printed for humans and appended as one JSON
 * line each to $GPUCONFORM_METRICS_FILE, an object of these members in this
 * order: test (the binary, such as `host_io`), subtest (`throughput`),
 * dynamic (the dynamic subtest, or null), name (`direct-read-16MiB`), unit
 * (`MB/s`) and better (`higher` or `lower`), each a JSON string, then
 * samples (an array of numbers: [812.5, ...]).
 */
#include "core.h"
#include "core_private.h"
#include "measure.h"

#include <errno.h>
#include <fcntl.h>
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
	size_t n;
};

static void json_line(FILE *f, const void *arg)
{
	const struct metric_line *m = arg;

	fputs(",\"name\":", f);
	gc__json_string(f, m->name);
	fputs(",\"unit\":", f);
	gc__json_string(f, m->unit);
	fprintf(f, ",\"better\":\"%s\",\"samples\":[",
		m->better == GC_HIGHER_IS_BETTER ? "higher" : "lower");
	for (size_t i = 0; i < m->n; i++)
		fprintf(f, "%s%.17g", i ? "," : "", m->samples[i]);
	fputs("]}\n", f);
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
		better == GC_HIGHER_IS_BETTER ? "higher" : "lower");
}

void gc_metric(const char *name, const char *unit, enum gc_better better,
	       const double *samples, size_t n)
{
	const char *path = getenv(GC_METRICS_ENV);
	int r;

	if (!metric_name_ok(name))
		gc_fail("metric name \"%s\" is not [A-Za-z0-9._-]+", name ? name : "(null)");
	if (!unit || !*unit)
		gc_fail("metric %s has no unit", name);
	if (!n)
		gc_fail("metric %s has no samples", name);
	for (size_t i = 0; i < n; i++)
		if (!isfinite(samples[i]))
			gc_fail("metric %s: sample %zu is not finite (%g)", name, i, samples[i]);
	print_metric(name, unit, better, samples, n);
	if (!path || !*path)
		return;
	r = gc__metrics_line(path, json_line,
			     &(struct metric_line){ name, unit, better, samples, n });
	if (r)
		gc_fail("metric %s: cannot append to %s=%s: %s", name, GC_METRICS_ENV, path,
			strerror(-r));
}
